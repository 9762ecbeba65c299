#!/usr/bin/env bash
# Finds a Prometheus server for test/deploy/prometheus.test.ts and prints
# `CRAWLSTREAM_PROMETHEUS=<path>`: $CRAWLSTREAM_PROMETHEUS when it is set, else `prometheus` on the
# PATH, else Debian's `prometheus` package is installed (apt-get update once, then apt-get install;
# needs root, as CI has, and Debian's registry). The package's maintainer scripts would start a
# service: a policy-rc.d that refuses every start is put in place for the install when the machine
# has none, so nothing is left running. Exits 1, saying why, when none can be had.
set -euo pipefail

found() { echo "CRAWLSTREAM_PROMETHEUS=$1"; exit 0; }
if [ -n "${CRAWLSTREAM_PROMETHEUS:-}" ] && [ -x "$CRAWLSTREAM_PROMETHEUS" ]; then found "$CRAWLSTREAM_PROMETHEUS"; fi
if command -v prometheus >/dev/null 2>&1; then found "$(command -v prometheus)"; fi

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "no prometheus on the PATH, and Debian's package cannot be installed here (needs root and apt-get): install it, or set CRAWLSTREAM_PROMETHEUS" >&2
  exit 1
fi

echo "installing Debian's prometheus package (apt-get)" >&2
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
  # 101: "action forbidden by policy" (invoke-rc.d and deb-systemd-invoke then start nothing)
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  own_policy=1
fi
cleanup() { if [ $own_policy = 1 ]; then rm -f "$policy"; fi; }
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
if ! apt-get update -qq >&2 ||
  ! apt-get install -y -qq --no-install-recommends prometheus >&2; then
  echo "could not install Debian's prometheus package (apt-get install prometheus)" >&2
  exit 1
fi
# the service was refused a start; should an init system have started it anyway, stop it by its
# pid file (the package's own) rather than by name
if [ -f /run/prometheus/prometheus.pid ]; then
  kill "$(cat /run/prometheus/prometheus.pid)" 2>/dev/null || true
fi
if command -v prometheus >/dev/null 2>&1; then found "$(command -v prometheus)"; fi
echo "Debian's prometheus package installed no prometheus binary on the PATH" >&2
exit 1
