# Shared settings of the local Kafka + registry scripts; sourced, never run.
# Everything listens on 127.0.0.1 only. Override any variable from the environment.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
KAFKA_VERSION="${KAFKA_VERSION:-4.1.1}"
LOG4J_VERSION="${LOG4J_VERSION:-2.24.3}"
SLF4J_VERSION="${SLF4J_VERSION:-2.0.16}"
APICURIO_VERSION="${APICURIO_VERSION:-3.0.9}"
CACHE_DIR="${CRAWLSTREAM_CACHE:-$ROOT/.cache}"
KAFKA_LIBS="$CACHE_DIR/kafka-$KAFKA_VERSION/libs"
APICURIO_HOME="$CACHE_DIR/apicurio-registry-$APICURIO_VERSION"
# where a running broker and registry keep their data, logs and pid files
RUN_DIR="${CRAWLSTREAM_KAFKA_RUN:-$CACHE_DIR/run}"
KAFKA_PORT="${KAFKA_PORT:-19092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-19093}"
REGISTRY_PORT="${REGISTRY_PORT:-18081}"
# a second broker listener, SASL_SSL (SCRAM-SHA-256/512 over TLS with a CA made at each start)
KAFKA_SECURE_PORT="${KAFKA_SECURE_PORT:-19094}"
KAFKA_SCRAM_USER="${KAFKA_SCRAM_USER:-crawlstream}"
KAFKA_SCRAM_PASSWORD="${KAFKA_SCRAM_PASSWORD:-crawlstream-secret}"
BROKERS="127.0.0.1:$KAFKA_PORT"
SECURE_BROKERS="127.0.0.1:$KAFKA_SECURE_PORT"
REGISTRY_URL="http://127.0.0.1:$REGISTRY_PORT/apis/ccompat/v7"
JAVA="${JAVA:-java}"
