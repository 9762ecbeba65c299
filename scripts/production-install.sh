#!/usr/bin/env bash
# `bash scripts/production-install.sh [--built] DEST`: installs crawlstream into DEST the way it
# ships. deploy/Dockerfile runs this script to make the image's /app, and
# test/deploy/production-install.test.ts runs it into a temporary directory and drives the CLI
# from there, so what the test passes is what the image holds.
#
#   1. builds dist/ (`npm run build`; needs the dev dependencies installed). `--built` skips this
#      when dist/ was just built from the same tree: `npm test` builds before any test runs, and
#      rebuilding (`rm -rf dist`) under the other running test files would break them;
#   2. `npm pack`: the tarball holds exactly package.json's `files` (the shipped code's dist/, the
#      Avro schemas it reads at run time) plus package.json and README.md;
#   3. unpacks it into DEST with the project's package-lock.json beside it (npm pack leaves the
#      lockfile out) and runs `npm ci --omit=dev` there: every version pinned by the lockfile, no
#      dev dependency, install scripts run only where package.json's `allowScripts` approves them
#      (RocksDB's binding): `--strict-allow-scripts` fails the install on a dependency whose install
#      script nobody reviewed there, instead of running it with a warning.
#
# DEST must not exist or be empty. Run it as `node DEST/dist/cli/main.js` (the image's ENTRYPOINT,
# WORKDIR DEST).
set -euo pipefail

usage='usage: bash scripts/production-install.sh [--built] DEST'
built=0
if [ "${1:-}" = --built ]; then
  built=1
  shift
fi
if [ $# -ne 1 ] || [ -z "$1" ] || [ "${1#-}" != "$1" ]; then
  echo "$usage" >&2
  exit 2
fi
dest=$1
if [ -e "$dest" ] && [ -n "$(ls -A "$dest")" ]; then
  echo "production-install: $dest is not empty" >&2
  exit 2
fi
# npm reads package.json's allowScripts from 11.16 on; an older npm would run every install script,
# the denied ones too, and the install would not be the one that ships
npm_version=$(npm --version)
if ! node -e 'const [a, b] = process.argv[1].split(".").map(Number); process.exit(a > 11 || (a === 11 && b >= 16) ? 0 : 1)' "$npm_version"; then
  echo "production-install: npm $npm_version does not read package.json's allowScripts; npm 11.16 or later is needed (npm install -g npm@11.19.1)" >&2
  exit 1
fi
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [ $built = 0 ]; then
  npm run --silent build
elif [ ! -f dist/cli/main.js ]; then
  echo 'production-install: --built, but dist/cli/main.js is missing (npm run build)' >&2
  exit 1
fi

pack=$(mktemp -d)
trap 'rm -rf "$pack"' EXIT
# --json names the tarball; the notices npm prints go to stderr
npm pack --pack-destination "$pack" --json --silent >"$pack/pack.json"
tarball=$(node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[0].filename)' "$pack/pack.json")
tar -xzf "$pack/$tarball" -C "$dest" --strip-components=1 --no-same-owner
cp package-lock.json "$dest/"

cd "$dest"
npm ci --omit=dev --strict-allow-scripts --no-audit --no-fund
