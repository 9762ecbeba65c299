#!/usr/bin/env bash
# bench/crawl with and without --warc-store, paired in one sitting: ROUNDS × (off, on) crawls of the
# same synthetic web (CRAWL_BENCH_* as bench/crawl.ts; defaults here: 600 sites × 9 pages of ~16 KiB),
# both with --warc-max-file 1 MiB so files close, and so upload, during the crawl. The store is
# SeaweedFS on 127.0.0.1 (scripts/s3/start.sh; S3_PORT, CRAWLSTREAM_S3_RUN as there), stopped at the
# end. Prints bench/crawl's figures per run and the pages/s ratio of each pair. Run after `npm run build`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROUNDS="${ROUNDS:-2}"
export CRAWL_BENCH_SITES="${CRAWL_BENCH_SITES:-600}" CRAWL_BENCH_PAGE_KB="${CRAWL_BENCH_PAGE_KB:-16}"
trap 'bash scripts/s3/stop.sh || true; rm -rf "${out:-}"' EXIT
eval "$(bash scripts/s3/start.sh)"
export AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
python3 - "$CRAWLSTREAM_S3_SERVER" <<'PY'
import sys, boto3
from botocore.config import Config
boto3.client('s3', endpoint_url=sys.argv[1], region_name='us-east-1', config=Config(s3={'addressing_style': 'path'})).create_bucket(Bucket='bench')
PY
common="--warc-max-file 1048576"
out="$(mktemp -d)"
pps() { grep '^pages/s:' "$1" | awk '{print $2}' | tr -d ,; }
for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round: upload off"
  CRAWL_BENCH_ARGS="$common" node dist/bench/crawl.js 2>/dev/null | tee "$out/off-$round"
  off="$(pps "$out/off-$round")"
  echo "== round $round: upload on"
  CRAWL_BENCH_ARGS="$common --warc-store s3://bench/round-$round --s3-endpoint $CRAWLSTREAM_S3_SERVER --s3-path-style" \
    node dist/bench/crawl.js 2>/dev/null | tee "$out/on-$round"
  on="$(pps "$out/on-$round")"
  echo "round $round: pages/s off $off, on $on, on/off $(python3 -c "print(f'{$on/$off:.3f}')")"
done
python3 - "$CRAWLSTREAM_S3_SERVER" <<'PY'
import sys, boto3
from botocore.config import Config
s3 = boto3.client('s3', endpoint_url=sys.argv[1], region_name='us-east-1', config=Config(s3={'addressing_style': 'path'}))
n = sum(len(p.get('Contents', [])) for p in s3.get_paginator('list_objects_v2').paginate(Bucket='bench'))
print(f'objects uploaded in the bucket: {n}')
PY
