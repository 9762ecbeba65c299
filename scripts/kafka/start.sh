#!/usr/bin/env bash
# Starts a single-node KRaft Kafka broker and an Apicurio Registry on 127.0.0.1, fetching them
# first if the cache lacks them, and waits until both answer. Each start begins with empty data.
# Prints `CRAWLSTREAM_BROKERS=...` and `CRAWLSTREAM_REGISTRY=...` lines (eval-able) on stdout.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

bash "$ROOT/scripts/kafka/fetch.sh" >&2
"$ROOT/scripts/kafka/stop.sh" >/dev/null 2>&1 || true
started=$(date +%s%N)
rm -rf "$RUN_DIR"
mkdir -p "$RUN_DIR/kafka-data"

cat > "$RUN_DIR/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$RUN_DIR/kafka-data
auto.create.topics.enable=false
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
group.initial.rebalance.delay.ms=0
group.min.session.timeout.ms=2000
num.network.threads=2
num.io.threads=2
background.threads=2
log.cleaner.threads=1
log.cleaner.backoff.ms=5000
PROPS

cat > "$RUN_DIR/log4j2.properties" <<PROPS
appender.file.type=File
appender.file.name=file
appender.file.fileName=$RUN_DIR/kafka.log
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
logger.state.name=state.change.logger
logger.state.level=WARN
PROPS

KAFKA_JVM=(-Xms128m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true
  "-Dlog4j2.configurationFile=$RUN_DIR/log4j2.properties" -cp "$KAFKA_LIBS/*")
# a KRaft cluster id is 16 random bytes, URL-safe base64 without padding
cluster_id="$(head -c 16 /dev/urandom | base64 | tr "+/" "-_" | tr -d "=")"
# a leading '-' would be read as an option by the tool's argument parser
while [ "${cluster_id:0:1}" = "-" ]; do cluster_id="$(head -c 16 /dev/urandom | base64 | tr "+/" "-_" | tr -d "=")"; done
"$JAVA" "${KAFKA_JVM[@]}" kafka.tools.StorageTool format --cluster-id="$cluster_id" -c "$RUN_DIR/server.properties" --ignore-formatted >"$RUN_DIR/format.log" 2>&1 \
  || { cat "$RUN_DIR/format.log" >&2; exit 1; }
setsid nohup "$JAVA" "${KAFKA_JVM[@]}" kafka.Kafka "$RUN_DIR/server.properties" >"$RUN_DIR/kafka.out" 2>&1 </dev/null &
echo $! >"$RUN_DIR/kafka.pid"

runner="$(find "$APICURIO_HOME" -maxdepth 2 \( -name quarkus-run.jar -o -name '*-runner.jar' \) | head -1)"
setsid nohup "$JAVA" -Xms64m -Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
  -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$REGISTRY_PORT" \
  -Dquarkus.management.host=127.0.0.1 -Dquarkus.management.port=$((REGISTRY_PORT + 1)) \
  -Dquarkus.log.level=WARN -Dquarkus.log.category.\"io.quarkus\".level=INFO \
  -jar "$runner" >"$RUN_DIR/registry.log" 2>&1 </dev/null &
echo $! >"$RUN_DIR/registry.pid"

deadline=$((SECONDS + ${CRAWLSTREAM_START_TIMEOUT:-120}))
kafka_ready=0
registry_ready=0
while [ $kafka_ready = 0 ] || [ $registry_ready = 0 ]; do
  if [ $SECONDS -ge $deadline ]; then
    echo "timed out: kafka ready=$kafka_ready registry ready=$registry_ready; logs in $RUN_DIR" >&2
    tail -n 20 "$RUN_DIR/kafka.log" "$RUN_DIR/kafka.out" "$RUN_DIR/registry.log" >&2 || true
    exit 1
  fi
  kill -0 "$(cat "$RUN_DIR/kafka.pid")" 2>/dev/null || { echo "kafka exited; see $RUN_DIR" >&2; tail -n 30 "$RUN_DIR/kafka.out" "$RUN_DIR/kafka.log" >&2; exit 1; }
  kill -0 "$(cat "$RUN_DIR/registry.pid")" 2>/dev/null || { echo "registry exited; see $RUN_DIR/registry.log" >&2; tail -n 30 "$RUN_DIR/registry.log" >&2; exit 1; }
  if [ $kafka_ready = 0 ] && grep -q 'Kafka Server started' "$RUN_DIR/kafka.log" 2>/dev/null; then
    kafka_ready=1
    echo "kafka ready on $BROKERS after $(( ($(date +%s%N) - started) / 1000000 )) ms" >&2
  fi
  if [ $registry_ready = 0 ] && curl -sf -o /dev/null "$REGISTRY_URL/subjects"; then
    registry_ready=1
    echo "registry ready on $REGISTRY_URL after $(( ($(date +%s%N) - started) / 1000000 )) ms" >&2
  fi
  sleep 0.2
done
echo "CRAWLSTREAM_BROKERS=$BROKERS"
echo "CRAWLSTREAM_REGISTRY=$REGISTRY_URL"
