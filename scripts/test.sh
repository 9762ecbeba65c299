#!/usr/bin/env bash
# `npm test [-- FILE.test.js ...]`: builds, lints, finds the Python tools and Prometheus, starts a Kafka broker and a
# registry when the selected tests need them and none is given (CRAWLSTREAM_BROKERS/REGISTRY), runs
# the tests in two lanes (scripts/run-tests.mjs), and stops whatever it started,
# also on failure and Ctrl-C.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# the build type-checks (a type error fails it), so only the rest of `npm run lint` follows it
npm run --silent build
npm run --silent lint:style

# the three-broker runs only when named: the chaos run (test/kafka/cluster-chaos.test.ts, 4-7 min),
# `npm run test:chaos` (docs/KAFKA.md, "Chaos on a replicated cluster"; its history in docs/INCIDENTS.md),
# the failover of a 1 GiB partition (test/kafka/cluster-failover.test.ts), `npm run test:failover`,
# and the rolling restart at 64 partitions (test/kafka/cluster-rolling.test.ts), `npm run test:rolling`
if [ $# -gt 0 ]; then files=("$@"); else mapfile -t files < <(find dist/test -name '*.test.js' ! -name 'cluster-chaos.test.js' ! -name 'cluster-failover.test.js' ! -name 'cluster-rolling.test.js' | sort); fi

# whether a selected file's path matches the pattern. grep reads every line (no -q): with pipefail, a
# grep -q that exits at its first match can SIGPIPE printf and turn a match into "no" (a CI ran the
# S3 tests without their server so)
selected() { printf '%s\n' "${files[@]}" | grep -- "$1" > /dev/null; }

eval "$(bash scripts/python-tools.sh)"
export CRAWLSTREAM_PYTHON
# a real Prometheus for test/deploy/prometheus.test.ts: found on the PATH or installed from Debian's package
if selected '/prometheus\.test\.js$'; then
  prometheus_env="$(bash scripts/prometheus.sh)" # fails the run when none can be had
  eval "$prometheus_env"
  export CRAWLSTREAM_PROMETHEUS
fi

started=0
s3_started=0
stop() {
  if [ $started = 1 ]; then bash scripts/kafka/stop.sh >&2 || true; fi
  if [ $s3_started = 1 ]; then bash scripts/s3/stop.sh >&2 || true; fi
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if selected '/kafka/' && [ -z "${CRAWLSTREAM_BROKERS:-}" ]; then
  started=1
  # a failed start is retried once: the Kafka tests must not run without a broker
  kafka_env="$(bash scripts/kafka/start.sh)" || kafka_env="$(bash scripts/kafka/start.sh)" || {
    echo 'could not start the Kafka broker and registry (scripts/kafka/start.sh; needs Java 17 and Maven)' >&2
    exit 1
  }
  eval "$kafka_env"
  export CRAWLSTREAM_BROKERS CRAWLSTREAM_REGISTRY
  export CRAWLSTREAM_SECURE_BROKERS CRAWLSTREAM_SECURE_CA CRAWLSTREAM_SECURE_USERNAME CRAWLSTREAM_SECURE_PASSWORD CRAWLSTREAM_SECURE_OAUTH_KEY
fi

# a SeaweedFS S3 server for the tests of --warc-store (files named *warc-store*), unless one is given
# (CRAWLSTREAM_S3_SERVER: not CRAWLSTREAM_S3_ENDPOINT, which every crawl would read as --s3-endpoint);
# `weed` is built from its Go module on first use and cached (scripts/s3/fetch.sh)
if selected 'warc-store[^/]*\.test\.js$' && [ -z "${CRAWLSTREAM_S3_SERVER:-}" ]; then
  s3_started=1
  s3_env="$(bash scripts/s3/start.sh)" || {
    rc=$?
    # another run's server holds S3_RUN_DIR (set CRAWLSTREAM_S3_RUN and S3_PORT, or CRAWLSTREAM_S3_SERVER): not ours to stop
    if [ $rc = 3 ]; then s3_started=0; fi
    echo 'could not start SeaweedFS (scripts/s3/start.sh; needs Go to build it once)' >&2
    exit 1
  }
  eval "$s3_env"
  export CRAWLSTREAM_S3_SERVER CRAWLSTREAM_S3_RUN AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_REGION
fi

# Two lanes (scripts/run-tests.mjs): the Kafka tests (one shared broker, the default topics) one at a
# time in lane 1, every other file taken by whichever lane is free, slowest first; most tests wait
# on politeness gaps, not on the CPU. CRAWLSTREAM_TEST_LANES=1 runs everything in one lane, in file
# order.
node scripts/run-tests.mjs "${files[@]}"
