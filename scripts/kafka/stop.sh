#!/usr/bin/env bash
# Stops the broker and registry that start.sh started (by their pid files only); idempotent.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
for name in registry kafka; do
  pidfile="$RUN_DIR/$name.pid"
  [ -f "$pidfile" ] || continue
  pid="$(cat "$pidfile")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    echo "stopped $name ($pid)"
  fi
  rm -f "$pidfile"
done
