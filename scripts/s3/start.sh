#!/usr/bin/env bash
# Starts a SeaweedFS server (master, volume, filer and the S3 gateway in one process) on
# 127.0.0.1 with the credentials of env.sh, building `weed` first when it is not cached
# (fetch.sh). Prints env lines for `eval` on stdout, progress on stderr; stop.sh stops it.
# Data lives in S3_RUN_DIR, wiped at each start (every start serves empty buckets) unless
# S3_KEEP_DATA=1: a restart after stop.sh then serves what was stored before (outage tests).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
bash "$(dirname "${BASH_SOURCE[0]}")/fetch.sh" >&2

if [ -f "$S3_RUN_DIR/weed.pid" ] && kill -0 "$(cat "$S3_RUN_DIR/weed.pid")" 2>/dev/null; then
  echo "a SeaweedFS server already runs from $S3_RUN_DIR (pid $(cat "$S3_RUN_DIR/weed.pid")); stop.sh first" >&2
  # 3, not 1: the caller did not start that server and must not stop it (scripts/test.sh)
  exit 3
fi
[ "${S3_KEEP_DATA:-0}" = 1 ] || rm -rf "$S3_RUN_DIR"
mkdir -p "$S3_RUN_DIR/data"
cat >"$S3_RUN_DIR/s3.json" <<JSON
{
  "identities": [
    {
      "name": "crawlstream",
      "credentials": [{ "accessKey": "$S3_ACCESS_KEY", "secretKey": "$S3_SECRET_KEY" }],
      "actions": ["Admin", "Read", "List", "Tagging", "Write"]
    }
  ]
}
JSON
started=$(date +%s%N)
# -volume.max=0: as many volumes as the disk holds; every bucket (a collection) takes several,
# and a fixed 16 ran out after a few test buckets ("no free volumes left")
"$WEED" server -dir="$S3_RUN_DIR/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
  -master.port="$S3_MASTER_PORT" -master.volumeSizeLimitMB=256 \
  -volume.port="$S3_VOLUME_PORT" -volume.max=0 \
  -filer -filer.port="$S3_FILER_PORT" \
  -s3 -s3.port="$S3_PORT" -s3.config="$S3_RUN_DIR/s3.json" \
  >"$S3_RUN_DIR/weed.log" 2>&1 &
echo $! >"$S3_RUN_DIR/weed.pid"
# ready once the gateway answers a signed-or-not request with any HTTP status
for _ in $(seq 1 600); do
  if curl -s -o /dev/null -m 1 "$S3_ENDPOINT/"; then break; fi
  kill -0 "$(cat "$S3_RUN_DIR/weed.pid")" 2>/dev/null || { echo "weed exited; see $S3_RUN_DIR/weed.log" >&2; tail -n 30 "$S3_RUN_DIR/weed.log" >&2; exit 1; }
  sleep 0.1
done
curl -s -o /dev/null -m 1 "$S3_ENDPOINT/" || { echo "timed out waiting for the S3 gateway on $S3_ENDPOINT; logs in $S3_RUN_DIR" >&2; exit 1; }
echo "SeaweedFS S3 ready on $S3_ENDPOINT after $(( ($(date +%s%N) - started) / 1000000 )) ms" >&2
echo "CRAWLSTREAM_S3_SERVER=$S3_ENDPOINT"
echo "CRAWLSTREAM_S3_RUN=$S3_RUN_DIR"
echo "AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY"
echo "AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY"
echo "AWS_REGION=us-east-1"
