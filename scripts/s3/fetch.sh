#!/usr/bin/env bash
# Builds SeaweedFS's `weed` binary from its Go module into the cache dir. Idempotent: a cached
# binary is left alone. `go install MODULE/weed@VERSION` is refused (the module's go.mod has
# replace directives), so the module source is downloaded and built in place. Go's module and
# build caches (GOMODCACHE, GOCACHE) are the download and compile caches behind it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

if [ ! -x "$WEED" ]; then
  command -v go >/dev/null || { echo "go is needed to build SeaweedFS ($SEAWEEDFS_MODULE@$SEAWEEDFS_VERSION)" >&2; exit 1; }
  start=$(date +%s)
  dir="$(go mod download -json "$SEAWEEDFS_MODULE@$SEAWEEDFS_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')"
  mkdir -p "$WEED_HOME"
  tmp="$WEED_HOME/weed.$$"
  # the module cache is read-only; build from it without writing there
  (cd "$dir" && GOFLAGS=-mod=mod go build -trimpath -ldflags='-s -w' -o "$tmp" ./weed)
  mv -f "$tmp" "$WEED"
  echo "seaweedfs $SEAWEEDFS_VERSION: built $WEED in $(( $(date +%s) - start ))s ($(du -h "$WEED" | cut -f1))"
fi
