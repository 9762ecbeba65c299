#!/usr/bin/env bash
# Stops the SeaweedFS server that start.sh started (by its pid file only); idempotent.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
pidfile="$S3_RUN_DIR/weed.pid"
[ -f "$pidfile" ] || exit 0
pid="$(cat "$pidfile")"
if kill -0 "$pid" 2>/dev/null; then
  kill -TERM "$pid"
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  echo "stopped seaweedfs ($pid)" >&2
fi
rm -f "$pidfile"
