#!/usr/bin/env bash
# Fetches the Kafka broker jars (with their runtime dependencies and log4j2) and the Apicurio
# Registry distribution from Maven Central into the cache dir. Idempotent: a complete cache is
# left alone. Maven's own repository (~/.m2) is the download cache behind it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

MVN=(mvn -B -q -ntp)

if [ ! -f "$KAFKA_LIBS/.complete" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  cat > "$work/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>crawlstream.local</groupId>
  <artifactId>kafka-broker-libs</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <!-- the broker pulls slf4j-api 1.7; log4j-slf4j2-impl binds only to 2.x -->
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>$SLF4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j2-impl</artifactId><version>$LOG4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>$LOG4J_VERSION</version></dependency>
  </dependencies>
</project>
POM
  rm -rf "$KAFKA_LIBS"
  mkdir -p "$KAFKA_LIBS"
  "${MVN[@]}" -f "$work/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$KAFKA_LIBS"
  touch "$KAFKA_LIBS/.complete"
  echo "kafka $KAFKA_VERSION: $(ls "$KAFKA_LIBS" | wc -l) jars in $KAFKA_LIBS"
fi

if [ ! -f "$APICURIO_HOME/.complete" ]; then
  dl="$(mktemp -d)"
  "${MVN[@]}" dependency:copy -Dartifact="io.apicurio:apicurio-registry-app:$APICURIO_VERSION:tar.gz:all" -DoutputDirectory="$dl"
  rm -rf "$APICURIO_HOME"
  mkdir -p "$APICURIO_HOME"
  tar -xzf "$dl"/apicurio-registry-app-*.tar.gz -C "$APICURIO_HOME"
  rm -rf "$dl"
  # fast-jar layout (quarkus-run.jar) or legacy layout (*-runner.jar), depending on the release
  run="$(find "$APICURIO_HOME" -maxdepth 2 \( -name quarkus-run.jar -o -name '*-runner.jar' \) | head -1)"
  [ -n "$run" ] || { echo "no quarkus-run.jar or *-runner.jar in the Apicurio $APICURIO_VERSION distribution" >&2; exit 1; }
  touch "$APICURIO_HOME/.complete"
  echo "apicurio $APICURIO_VERSION: $run"
fi
