# Shared settings of the local S3 server scripts (SeaweedFS); sourced, never run.
# Everything listens on 127.0.0.1 only. Override any variable from the environment.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SEAWEEDFS_MODULE="github.com/seaweedfs/seaweedfs"
SEAWEEDFS_VERSION="${SEAWEEDFS_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}"
CACHE_DIR="${CRAWLSTREAM_CACHE:-$ROOT/.cache}"
WEED_HOME="$CACHE_DIR/seaweedfs-$SEAWEEDFS_VERSION"
WEED="$WEED_HOME/weed"
# where a running server keeps its data, logs, pid file and credentials
S3_RUN_DIR="${CRAWLSTREAM_S3_RUN:-$CACHE_DIR/s3-run}"
# the S3 gateway; the master, volume and filer take the next ports
S3_PORT="${S3_PORT:-18333}"
S3_MASTER_PORT="${S3_MASTER_PORT:-$((S3_PORT + 1))}"
S3_VOLUME_PORT="${S3_VOLUME_PORT:-$((S3_PORT + 2))}"
S3_FILER_PORT="${S3_FILER_PORT:-$((S3_PORT + 3))}"
S3_ACCESS_KEY="${S3_ACCESS_KEY:-crawlstream}"
S3_SECRET_KEY="${S3_SECRET_KEY:-crawlstream-s3-secret}"
S3_ENDPOINT="http://127.0.0.1:$S3_PORT"
