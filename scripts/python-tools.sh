#!/usr/bin/env bash
# Finds a Python with the tests' independent tools (test/python/requirements.txt: warcio, confluent-kafka, prometheus-client,
# fastavro, cdxj-indexer, pywb) and prints `CRAWLSTREAM_PYTHON=<path>`. The machine's python3 is used when it has them;
# otherwise a virtualenv is made (once) under $CRAWLSTREAM_CACHE (.ci/run: ~/.cache/crawlstream, kept across
# clones, like the Kafka jars), else under .cache/, and they are installed there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REQS="$ROOT/test/python/requirements.txt"
VENV="${CRAWLSTREAM_CACHE:-$ROOT/.cache}/venv"
has_tools() { "$1" -c 'import warcio.cli, confluent_kafka, fastavro, prometheus_client, cdxj_indexer.main, pywb.apps.cli, boto3' >/dev/null 2>&1; }

if has_tools python3; then echo "CRAWLSTREAM_PYTHON=$(command -v python3)"; exit 0; fi
# the venv is brought up to date when the requirements change (pip installs only what is missing)
stamp="$VENV/.requirements"
if ! { [ -x "$VENV/bin/python" ] && cmp -s "$REQS" "$stamp" && has_tools "$VENV/bin/python"; }; then
  echo "installing the tests' Python tools into $VENV ($(grep -v '^#' "$REQS" | tr '\n' ' '))" >&2
  if ! { [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV" >&2; } ||
    ! "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQS" >&2; then
    echo "could not install the tests' Python tools; run: python3 -m pip install -r test/python/requirements.txt" >&2
    exit 1
  fi
  cp "$REQS" "$stamp"
fi
echo "CRAWLSTREAM_PYTHON=$VENV/bin/python"
