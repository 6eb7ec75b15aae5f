#!/usr/bin/env bash
# bench_intercept.sh: what the sandbox and an intercepted tunnel cost on
# bulk transfers and on many small requests, for one or more pinhole
# binaries measured in one sitting (to compare a change with its base).
#
#   bench/bench_intercept.sh [PINHOLE...]    # default: build/pinhole
#
# A local nginx serves a 256 MiB file over HTTPS (test CA made on the
# spot, 127.0.0.1 only).  Rows, each the median of RUNS (5) runs:
#   direct        curl on the host, no proxy, no sandbox
#   opaque        pinhole run, the host allowed as a plain CONNECT tunnel
#   intercepted   pinhole run, the host intercepted with `inject bearer`
#                 (TLS terminated and re-made, the token added, and
#                 responses scanned for it)
# for the 256 MiB download (MB/s) and for 200 small requests on one
# connection (requests/s, curl's --parallel-max 1 over a URL list).
# Nothing leaves the machine.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || set -- "$ROOT/build/pinhole"
RUNS=${RUNS:-5}
bins=()
for b in "$@"; do bins+=("$(cd "$(dirname "$b")" && pwd)/$(basename "$b")"); done
set -- "${bins[@]}"
PINHOLE=$1
# shellcheck source=../tests/integration/lib.sh
. "$ROOT/tests/integration/lib.sh" "$PINHOLE"
# shellcheck source=../tests/integration/tls_lib.sh
. "$ROOT/tests/integration/tls_lib.sh"
ph_begin bench_intercept nginx curl openssl
gen_certs >/dev/null
head -c $((256 << 20)) /dev/zero >"$T/www_big"
mkdir -p "$T/www"
mv "$T/www_big" "$T/www/big"
echo small >"$T/www/small"
start_nginx >/dev/null
printf 'TOKEN%s\n' "$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" \
	>"$T/tok"
chmod 600 "$T/tok"
cat >"$T/opaque.conf" <<EOF
resolve web.test 127.0.0.1
allow web.test:$S_PORT { private }
EOF
cat >"$T/icpt.conf" <<EOF
secret tok file $T/tok
resolve web.test 127.0.0.1
allow web.test:$S_PORT { private upstream-ca $T/ca.pem inject bearer tok }
EOF
# The sandbox has a fresh /tmp: what curl reads inside is in its work
# directory.
mkdir -p "$T/work"
cp "$T/ca.pem" "$T/work/ca.pem"
urls=$T/work/urls
for ((i = 0; i < 200; i++)); do
	echo "url = \"https://web.test:$S_PORT/small\""
	echo "output = /dev/null"
done >"$urls"

# median of the numbers on standard input
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# one KIND PINHOLE: prints "MB/s req/s" of one run
one() {
	local kind=$1 ph=$2 pre=() ca=(--cacert "$T/work/ca.pem") big t0 t1
	case $kind in
	direct) pre=(env) ;;
	*) pre=("$ph" run --log "$T/a.jsonl" -p "$T/$kind.conf" --) ;;
	esac
	# Intercepted, the client trusts the run CA (pinhole's bundle).
	[ "$kind" != icpt ] || ca=()
	big=$(cd "$T/work" && "${pre[@]}" curl -q -sS "${ca[@]}" \
		--resolve "web.test:$S_PORT:127.0.0.1" -o /dev/null \
		-w '%{speed_download}' "https://web.test:$S_PORT/big" </dev/null)
	t0=$(date +%s%N)
	(cd "$T/work" && "${pre[@]}" curl -q -sS "${ca[@]}" \
		--resolve "web.test:$S_PORT:127.0.0.1" -K "$urls" </dev/null)
	t1=$(date +%s%N)
	awk -v b="$big" -v ns=$((t1 - t0)) \
		'BEGIN { printf "%.0f %.0f\n", b / 1e6, 200 / (ns / 1e9) }'
}

echo "bench_intercept $(date -u +%F) $(uname -sr), uid $(id -u), $RUNS runs each"
printf '%-44s %-12s %10s %10s\n' binary row 'MB/s' 'req/s'
for ph in "$@"; do
	for kind in direct opaque icpt; do
		[ "$kind" != direct ] || [ "$ph" = "$1" ] || continue
		res=$(for ((r = 0; r < RUNS; r++)); do one "$kind" "$ph"; done)
		printf '%-44s %-12s %10s %10s\n' "$ph" \
			"${kind/icpt/intercepted}" \
			"$(cut -d' ' -f1 <<<"$res" | median)" \
			"$(cut -d' ' -f2 <<<"$res" | median)"
	done
done
