#!/usr/bin/env bash
# A three-node KRaft Kafka cluster on 127.0.0.1 (each node broker and controller, a quorum of 3),
# for the tests that need replication: topics default to replication factor 3 and
# min.insync.replicas 2, and so do the offsets and transaction-state topics.
#
#   cluster.sh start         fresh data, start all three, wait until each is up; prints
#                            CRAWLSTREAM_CLUSTER_BROKERS=host:port,host:port,host:port
#   cluster.sh stop-node N   SIGTERM node N (1-3; a controlled shutdown) and wait until it is gone
#   cluster.sh kill-node N   SIGKILL node N
#   cluster.sh start-node N  start node N again on its data and wait until it is up
#   cluster.sh stop          SIGTERM every node at once, SIGKILL what is left after 15 s (the data
#                            stays until the next start)
#
# Ports: node N listens on CLUSTER_PORT_BASE + 100 N + 92 (clients) and + 93 (controller);
# base 39000 by default. Data, logs and pid files in $CRAWLSTREAM_CLUSTER_RUN (.cache/cluster).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

CLUSTER_RUN="${CRAWLSTREAM_CLUSTER_RUN:-$CACHE_DIR/cluster}"
BASE="${CLUSTER_PORT_BASE:-39000}"
NODES=(1 2 3)
client_port() { echo $((BASE + 100 * $1 + 92)); }
controller_port() { echo $((BASE + 100 * $1 + 93)); }
KAFKA_JVM=(-Xms96m -Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true -cp "$KAFKA_LIBS/*")

node_dir() { echo "$CLUSTER_RUN/node$1"; }
pid_of() { cat "$(node_dir "$1")/kafka.pid" 2>/dev/null || true; }
alive() { local pid; pid="$(pid_of "$1")"; [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; }

write_config() {
  local n=$1 dir voters=""
  dir="$(node_dir "$n")"
  for m in "${NODES[@]}"; do voters="${voters:+$voters,}$m@127.0.0.1:$(controller_port "$m")"; done
  mkdir -p "$dir/data"
  cat >"$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=$n
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$(client_port "$n"),CONTROLLER://127.0.0.1:$(controller_port "$n")
advertised.listeners=PLAINTEXT://127.0.0.1:$(client_port "$n")
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/data
auto.create.topics.enable=false
num.partitions=1
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
transaction.state.log.num.partitions=4
group.initial.rebalance.delay.ms=0
group.min.session.timeout.ms=2000
num.network.threads=2
num.io.threads=2
background.threads=2
num.replica.fetchers=1
log.cleaner.threads=1
log.cleaner.backoff.ms=5000
PROPS
  cat >"$dir/log4j2.properties" <<PROPS
appender.file.type=File
appender.file.name=file
appender.file.fileName=$dir/kafka.log
appender.file.append=true
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
logger.state.name=state.change.logger
logger.state.level=WARN
PROPS
}

launch() {
  local n=$1 dir
  dir="$(node_dir "$n")"
  # each start marks the log, so "started" is looked for after the mark only
  echo "=== start $(date -u +%FT%TZ)" >>"$dir/kafka.log"
  setsid nohup "$JAVA" "${KAFKA_JVM[@]}" "-Dlog4j2.configurationFile=$dir/log4j2.properties" \
    kafka.Kafka "$dir/server.properties" >>"$dir/kafka.out" 2>&1 </dev/null &
  echo $! >"$dir/kafka.pid"
}

started_since_mark() { awk '/^=== start/{s=0} /Kafka Server started/{s=1} END{exit !s}' "$(node_dir "$1")/kafka.log" 2>/dev/null; }

wait_up() {
  local deadline=$((SECONDS + ${CRAWLSTREAM_START_TIMEOUT:-180})) n
  for n in "$@"; do
    until started_since_mark "$n"; do
      if [ $SECONDS -ge $deadline ]; then
        echo "cluster node $n did not start; logs in $(node_dir "$n")" >&2
        tail -n 20 "$(node_dir "$n")/kafka.log" "$(node_dir "$n")/kafka.out" >&2 || true
        exit 1
      fi
      alive "$n" || { echo "cluster node $n exited; see $(node_dir "$n")" >&2; tail -n 30 "$(node_dir "$n")/kafka.out" >&2; exit 1; }
      sleep 0.2
    done
  done
}

# signal every node named, wait until each is gone (SIGKILL past $STOP_WAIT tenths of a second)
stop_nodes() {
  local signal=$1 n pid pids=()
  shift
  for n in "$@"; do
    pid="$(pid_of "$n")"
    [ -n "$pid" ] || continue
    kill "-$signal" "$pid" 2>/dev/null || true
    pids+=("$pid")
  done
  for _ in $(seq 1 "${STOP_WAIT:-600}"); do
    local left=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && left=1; done
    [ $left = 0 ] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  for n in "$@"; do rm -f "$(node_dir "$n")/kafka.pid"; done
}

brokers_line() {
  local list="" n
  for n in "${NODES[@]}"; do list="${list:+$list,}127.0.0.1:$(client_port "$n")"; done
  echo "CRAWLSTREAM_CLUSTER_BROKERS=$list"
}

node_arg() {
  case "${1:-}" in 1 | 2 | 3) ;; *) echo "usage: cluster.sh $2 1|2|3" >&2; exit 2 ;; esac
}

case "${1:-}" in
  start)
    bash "$ROOT/scripts/kafka/fetch.sh" >&2
    stop_nodes KILL "${NODES[@]}"
    began=$(date +%s%N)
    rm -rf "$CLUSTER_RUN"
    cluster_id="$(head -c 16 /dev/urandom | base64 | tr "+/" "-_" | tr -d "=")"
    while [ "${cluster_id:0:1}" = "-" ]; do cluster_id="$(head -c 16 /dev/urandom | base64 | tr "+/" "-_" | tr -d "=")"; done
    formats=()
    for n in "${NODES[@]}"; do
      write_config "$n"
      "$JAVA" "${KAFKA_JVM[@]}" kafka.tools.StorageTool format --cluster-id="$cluster_id" \
        -c "$(node_dir "$n")/server.properties" --ignore-formatted >"$(node_dir "$n")/format.log" 2>&1 &
      formats+=($!)
    done
    for pid in "${formats[@]}"; do wait "$pid" || { cat "$CLUSTER_RUN"/node*/format.log >&2; exit 1; }; done
    for n in "${NODES[@]}"; do launch "$n"; done
    wait_up "${NODES[@]}"
    echo "kafka cluster of ${#NODES[@]} nodes ready after $((($(date +%s%N) - began) / 1000000)) ms" >&2
    brokers_line
    ;;
  stop-node) node_arg "${2:-}" stop-node; stop_nodes TERM "$2" ;;
  kill-node) node_arg "${2:-}" kill-node; stop_nodes KILL "$2" ;;
  start-node)
    node_arg "${2:-}" start-node
    alive "$2" && { echo "cluster node $2 is already running" >&2; exit 1; }
    launch "$2"
    wait_up "$2"
    ;;
  # all at once and briefly: one by one, the last nodes wait out their controlled shutdown without a
  # quorum (a minute); the data is thrown away by the next start anyway
  stop) STOP_WAIT=150 stop_nodes TERM "${NODES[@]}" ;;
  *) echo "usage: cluster.sh start | stop | stop-node N | kill-node N | start-node N" >&2; exit 2 ;;
esac
