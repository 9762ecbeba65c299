#!/usr/bin/env bash
# Fetches Kafka Connect (connect-runtime with FileStreamSink's connect-file, the Kafka version the
# broker runs) and Apicurio's registry Avro converter from Maven Central into the cache dir, for
# test/kafka/connect.test.ts and docs/CONSUMERS.md. Idempotent: a complete cache is left alone.
# Prints the directory (libs/ = the worker's class path, plugins/ = its plugin.path).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

CONNECT_HOME="$CACHE_DIR/kafka-connect-$KAFKA_VERSION"
# the converter of the registry's own 3.0.9 is on Maven Central but its parent POM is not, and no
# 3.x converter resolves with its dependencies (3.0.7: no jar, 3.1.7: missing ones); 2.6.13.Final does,
# and reads Confluent-framed records through the registry's v2 API, which 3.0.9 still serves
CONVERTER_VERSION="${CONVERTER_VERSION:-2.6.13.Final}"
# Maven's output goes to stderr: stdout is the one line callers read (even with -q, mvn prints
# colour resets there on a first, downloading run)
MVN=(mvn -B -q -ntp -Dstyle.color=never)

if [ ! -f "$CONNECT_HOME/.complete" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  cat > "$work/runtime.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>crawlstream.local</groupId>
  <artifactId>kafka-connect-libs</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>connect-runtime</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>connect-file</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>$SLF4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j2-impl</artifactId><version>$LOG4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>$LOG4J_VERSION</version></dependency>
  </dependencies>
</project>
POM
  # the converter is a Connect plugin: its own folder on plugin.path, without Kafka's own jars
  # (the worker's API classes must be the ones it sees)
  cat > "$work/converter.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>crawlstream.local</groupId>
  <artifactId>kafka-connect-converter</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>io.apicurio</groupId><artifactId>apicurio-registry-utils-converter</artifactId><version>$CONVERTER_VERSION</version></dependency>
  </dependencies>
</project>
POM
  rm -rf "$CONNECT_HOME"
  mkdir -p "$CONNECT_HOME/libs" "$CONNECT_HOME/plugins/apicurio-converter"
  "${MVN[@]}" -f "$work/runtime.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$CONNECT_HOME/libs" >&2
  "${MVN[@]}" -f "$work/converter.xml" dependency:copy-dependencies -DincludeScope=runtime \
    -DexcludeGroupIds=org.apache.kafka,org.slf4j,org.apache.logging.log4j -DoutputDirectory="$CONNECT_HOME/plugins/apicurio-converter" >&2
  touch "$CONNECT_HOME/.complete"
  echo "kafka connect $KAFKA_VERSION: $(ls "$CONNECT_HOME/libs" | wc -l) jars; converter: $(ls "$CONNECT_HOME/plugins/apicurio-converter" | wc -l) jars" >&2
fi
echo "$CONNECT_HOME"
