#!/usr/bin/env bash
# bench_sock.sh: the socket supervisor's cost, bare and inside `pinhole
# run`: N (10000) connect()s to a Unix listener bound in the work
# directory, and MIB (512) MiB through a socketpair by sendmsg() (every
# call emulated) and by send() (never trapped).
#
#   bench/bench_sock.sh [PINHOLE] [BENCH_SOCK]
#       defaults: build/pinhole, build/bench_sock (make bench_sock)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PINHOLE=${1:-$ROOT/build/pinhole}
B=${2:-$ROOT/build/bench_sock}
N=${N:-10000}
MIB=${MIB:-512}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir "$W/work"
cp "$B" "$W/work/bench_sock"
cd "$W/work"
echo "bench_sock $(date -u +%F) $(uname -sr), uid $(id -u), $($PINHOLE --version)"
for how in bare pinhole; do
	run=()
	[ "$how" = pinhole ] && run=("$PINHOLE" run --log "$W/a.jsonl" --)
	for t in "connect $N" "sendmsg $MIB" "send $MIB"; do
		# shellcheck disable=SC2086
		echo "$how: $("${run[@]}" ./bench_sock $t)"
	done
done
