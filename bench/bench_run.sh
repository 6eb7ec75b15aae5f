#!/usr/bin/env bash
# bench_run.sh: what `pinhole run` costs at start, with hyperfine (Debian
# package hyperfine; installed when missing).
#
#   bench/bench_run.sh [PINHOLE]      # default: build/pinhole
#
# Rows: the bare command (/bin/true), `pinhole run -- /bin/true` (all the
# namespaces, the mount view, seccomp, Landlock, the proxy's start and
# shutdown, capture's routes and listeners), the same with --no-capture,
# and the same with a policy that intercepts one host (the run CA and its
# trust bundle are made too).  Wall time, mean of RUNS (100)
# after 10 warm-ups; as the calling user (run it as root and as another
# user to compare).  Nothing touches the network: the command makes no
# request.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PINHOLE=${1:-$ROOT/build/pinhole}
RUNS=${RUNS:-100}
command -v hyperfine >/dev/null ||
	{ sudo=; [ "$(id -u)" -eq 0 ] || sudo=sudo; $sudo apt-get install -y -q hyperfine </dev/null; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir "$W/work"
printf 'allow example.test:443 { paths /x/* }\n' >"$W/icpt.conf"
cd "$W/work"
hyperfine -N -w 10 -r "$RUNS" --export-markdown "$W/table.md" \
	-n 'bare /bin/true' '/bin/true' \
	-n 'pinhole run' "$PINHOLE run --log $W/a.jsonl -- /bin/true" \
	-n 'pinhole run --no-capture' \
	"$PINHOLE run --no-capture --log $W/a.jsonl -- /bin/true" \
	-n 'pinhole run, interception' \
	"$PINHOLE run -p $W/icpt.conf --log $W/a.jsonl -- /bin/true" >/dev/null
echo "bench_run $(date -u +%F) $(uname -sr), uid $(id -u), $($PINHOLE --version)"
cat "$W/table.md"
