#!/usr/bin/env bash
# Starts a single-node KRaft Kafka broker and an Apicurio Registry on 127.0.0.1, fetching them
# first if the cache lacks them, and waits until both answer. Each start begins with empty data.
# The broker has a PLAINTEXT listener and a SASL_SSL one (SCRAM-SHA-256/512, user $KAFKA_SCRAM_USER;
# OAUTHBEARER, JWTs signed with an RSA key made at each start, in $RUN_DIR/oauth) whose CA and
# certificate are made afresh at each start, in $RUN_DIR/tls.
# Prints `CRAWLSTREAM_BROKERS=...`, `CRAWLSTREAM_REGISTRY=...` and `CRAWLSTREAM_SECURE_*=...` lines
# (eval-able) on stdout.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

bash "$ROOT/scripts/kafka/fetch.sh" >&2
"$ROOT/scripts/kafka/stop.sh" >/dev/null 2>&1 || true
started=$(date +%s%N)
rm -rf "$RUN_DIR"
mkdir -p "$RUN_DIR/kafka-data" "$RUN_DIR/tls" "$RUN_DIR/oauth"
TLS_DIR="$RUN_DIR/tls"
# OAUTHBEARER: the broker trusts JWTs (RS256, issuer crawlstream-test-idp, audience crawlstream-kafka)
# signed by signer.pem, whose public half it reads from jwks.json; tests sign tokens with signer.pem
OAUTH_DIR="$RUN_DIR/oauth"
JWKS_URL="file://$OAUTH_DIR/jwks.json"
node -e '
const { generateKeyPairSync } = require("node:crypto");
const { writeFileSync } = require("node:fs");
const dir = process.argv[1];
const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
writeFileSync(`${dir}/signer.pem`, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
const jwk = { ...publicKey.export({ format: "jwk" }), kid: "crawlstream-test", use: "sig", alg: "RS256" };
writeFileSync(`${dir}/jwks.json`, JSON.stringify({ keys: [jwk] }));
' "$OAUTH_DIR"
# a throwaway store password: the keystore lives only as long as this run dir
TLS_PASS="$(head -c 12 /dev/urandom | base64 | tr -d '/+=')"

cat > "$RUN_DIR/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT,SASL_SSL://127.0.0.1:$KAFKA_SECURE_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,SASL_SSL://127.0.0.1:$KAFKA_SECURE_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL
listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;
listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler
listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.jwks.endpoint.url=$JWKS_URL
# named, not left to the default: Kafka 4.1's DefaultJwtValidator, built by the callback handler,
# falls back to its client-side validator, which checks no signature (test/kafka/secure.test.ts)
sasl.oauthbearer.jwt.validator.class=org.apache.kafka.common.security.oauthbearer.BrokerJwtValidator
listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.expected.issuer=crawlstream-test-idp
listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.expected.audience=crawlstream-kafka
listener.name.sasl_ssl.ssl.keystore.type=PKCS12
listener.name.sasl_ssl.ssl.keystore.location=$TLS_DIR/broker.p12
listener.name.sasl_ssl.ssl.keystore.password=$TLS_PASS
listener.name.sasl_ssl.ssl.key.password=$TLS_PASS
listener.name.sasl_ssl.ssl.client.auth=none
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

# the registry needs nothing of the broker to start, so it starts first
runner="$(find "$APICURIO_HOME" -maxdepth 2 \( -name quarkus-run.jar -o -name '*-runner.jar' \) | head -1)"
setsid nohup "$JAVA" -Xms64m -Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
  -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$REGISTRY_PORT" \
  -Dquarkus.management.host=127.0.0.1 -Dquarkus.management.port=$((REGISTRY_PORT + 1)) \
  -Dquarkus.log.level=WARN -Dquarkus.log.category.\"io.quarkus\".level=INFO \
  -jar "$runner" >"$RUN_DIR/registry.log" 2>&1 </dev/null &
echo $! >"$RUN_DIR/registry.pid"

KAFKA_JVM=(-Xms128m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true
  "-Dlog4j2.configurationFile=$RUN_DIR/log4j2.properties" -cp "$KAFKA_LIBS/*"
  "-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=$JWKS_URL")
# a KRaft cluster id is 16 random bytes, URL-safe base64 without padding
cluster_id="$(head -c 16 /dev/urandom | base64 | tr "+/" "-_" | tr -d "=")"
# a leading '-' would be read as an option by the tool's argument parser
while [ "${cluster_id:0:1}" = "-" ]; do cluster_id="$(head -c 16 /dev/urandom | base64 | tr "+/" "-_" | tr -d "=")"; done
# formatting (which also stores the SCRAM credentials) runs while keytool makes the certificates
"$JAVA" "${KAFKA_JVM[@]}" kafka.tools.StorageTool format --cluster-id="$cluster_id" -c "$RUN_DIR/server.properties" --ignore-formatted \
  --add-scram "SCRAM-SHA-256=[name=$KAFKA_SCRAM_USER,password=$KAFKA_SCRAM_PASSWORD]" \
  --add-scram "SCRAM-SHA-512=[name=$KAFKA_SCRAM_USER,password=$KAFKA_SCRAM_PASSWORD]" \
  >"$RUN_DIR/format.log" 2>&1 &
format_pid=$!
# a CA (ca.pem, for clients) and the broker's key in broker.p12 with a certificate for 127.0.0.1
# signed by it: with openssl (~0.1 s) if there is one, else with the JDK's keytool (7 JVM starts)
make_certs_openssl() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=crawlstream-test-ca \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
    -keyout "$TLS_DIR/ca.key" -out "$TLS_DIR/ca.pem"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=127.0.0.1 \
    -keyout "$TLS_DIR/broker.key" -out "$TLS_DIR/broker.csr"
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyAgreement\n' \
    >"$TLS_DIR/broker.ext"
  openssl x509 -req -days 2 -in "$TLS_DIR/broker.csr" -CA "$TLS_DIR/ca.pem" -CAkey "$TLS_DIR/ca.key" -CAcreateserial \
    -extfile "$TLS_DIR/broker.ext" -out "$TLS_DIR/broker.pem"
  openssl pkcs12 -export -name broker -in "$TLS_DIR/broker.pem" -inkey "$TLS_DIR/broker.key" -certfile "$TLS_DIR/ca.pem" \
    -out "$TLS_DIR/broker.p12" -passout "pass:$TLS_PASS"
}
make_certs_keytool() {
  # keytool comes with the JDK that $JAVA belongs to (a bare `java` means the one on PATH)
  local keytool
  keytool="$(dirname "$(readlink -f "$(command -v "$JAVA")")")/keytool"
  kt() { "$keytool" -J-XX:TieredStopAtLevel=1 -J-XX:+UseSerialGC "$@"; }
  kt -genkeypair -alias ca -keyalg EC -groupname secp256r1 -validity 2 -dname CN=crawlstream-test-ca \
    -ext bc:c -keystore "$TLS_DIR/ca.p12" -storetype PKCS12 -storepass "$TLS_PASS"
  kt -exportcert -rfc -alias ca -keystore "$TLS_DIR/ca.p12" -storepass "$TLS_PASS" -file "$TLS_DIR/ca.pem"
  kt -genkeypair -alias broker -keyalg EC -groupname secp256r1 -validity 2 -dname CN=127.0.0.1 \
    -keystore "$TLS_DIR/broker.p12" -storetype PKCS12 -storepass "$TLS_PASS"
  kt -certreq -alias broker -keystore "$TLS_DIR/broker.p12" -storepass "$TLS_PASS" -file "$TLS_DIR/broker.csr"
  kt -gencert -alias ca -keystore "$TLS_DIR/ca.p12" -storepass "$TLS_PASS" -validity 2 -rfc \
    -ext SAN=ip:127.0.0.1,dns:localhost -ext ku:c=digitalSignature,keyAgreement -ext eku=serverAuth \
    -infile "$TLS_DIR/broker.csr" -outfile "$TLS_DIR/broker.pem"
  kt -importcert -noprompt -alias ca -file "$TLS_DIR/ca.pem" -keystore "$TLS_DIR/broker.p12" -storepass "$TLS_PASS"
  kt -importcert -noprompt -alias broker -file "$TLS_DIR/broker.pem" -keystore "$TLS_DIR/broker.p12" -storepass "$TLS_PASS"
}
tls_log="$RUN_DIR/tls.log"
tls_started=$(date +%s%N)
tls_tool="${CRAWLSTREAM_TLS_TOOL:-$(command -v openssl >/dev/null && echo openssl || echo keytool)}"
"make_certs_$tls_tool" >"$tls_log" 2>&1 || { cat "$tls_log" >&2; exit 1; }
echo "TLS certificates made with $tls_tool in $(( ($(date +%s%N) - tls_started) / 1000000 )) ms" >&2
wait "$format_pid" || { cat "$RUN_DIR/format.log" >&2; exit 1; }
setsid nohup "$JAVA" "${KAFKA_JVM[@]}" kafka.Kafka "$RUN_DIR/server.properties" >"$RUN_DIR/kafka.out" 2>&1 </dev/null &
echo $! >"$RUN_DIR/kafka.pid"

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
    echo "kafka ready on $BROKERS (SASL_SSL on $SECURE_BROKERS) after $(( ($(date +%s%N) - started) / 1000000 )) ms" >&2
  fi
  if [ $registry_ready = 0 ] && curl -sf -o /dev/null "$REGISTRY_URL/subjects"; then
    registry_ready=1
    echo "registry ready on $REGISTRY_URL after $(( ($(date +%s%N) - started) / 1000000 )) ms" >&2
  fi
  sleep 0.2
done
echo "CRAWLSTREAM_BROKERS=$BROKERS"
echo "CRAWLSTREAM_REGISTRY=$REGISTRY_URL"
echo "CRAWLSTREAM_SECURE_BROKERS=$SECURE_BROKERS"
echo "CRAWLSTREAM_SECURE_CA=$TLS_DIR/ca.pem"
echo "CRAWLSTREAM_SECURE_USERNAME=$KAFKA_SCRAM_USER"
echo "CRAWLSTREAM_SECURE_PASSWORD=$KAFKA_SCRAM_PASSWORD"
echo "CRAWLSTREAM_SECURE_OAUTH_KEY=$OAUTH_DIR/signer.pem"
