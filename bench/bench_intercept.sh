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
# Then the issue-15 rows, with bench/tlsload.c (one thread per
# connection, OpenSSL, certificates not verified) inside the same
# sandbox, through the proxy's CONNECT (127.0.0.1:3128):
#   ka/s     KA_CONC (16) connections x KA_N (200) keep-alive GETs of
#            the small file: requests/s
#   new/s    KA_CONC threads for NEW_SECS (3) s, each a new connection,
#            full handshake, one GET, close: connections/s
#   bulk     one GET of the 256 MiB file: MB/s
# Nothing leaves the machine.  LOAD_ONLY=1 runs only the tlsload rows.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || set -- "$ROOT/build/pinhole"
RUNS=${RUNS:-5}
KA_CONC=${KA_CONC:-16}
KA_N=${KA_N:-200}
NEW_SECS=${NEW_SECS:-3}
LOAD_ONLY=${LOAD_ONLY:-0}
# PERF=DIR: only the intercepted tlsload rows of the first binary, each
# under `perf record -a` (DIR/ka.data, new.data, bulk.data); read them
# with perf report --comm pinhole.
PERF=${PERF:-}
PERF_ARGS=${PERF_ARGS:---call-graph dwarf,16384 -F 997}
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
cc -O2 -o "$T/work/tlsload" "$ROOT/bench/tlsload.c" -lssl -lcrypto -lpthread
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

# engine_cpu CMD...: runs CMD (a `pinhole run`) in the background, prints
# its standard output, and then the CPU time (utime + stime, clock
# ticks) the run's engine (the child of `run` that is not pinhole-init)
# had used when last seen, sampled every 20 ms while it lives.
engine_cpu() {
	local pid eng='' ticks=0 i c
	"$@" >"$T/load.out" &
	pid=$!
	for ((i = 0; i < 500; i++)); do
		[ -z "$eng" ] || break
		for c in $(pgrep -P "$pid"); do
			[ "$(cat "/proc/$c/comm" 2>/dev/null)" = pinhole-init ] ||
				eng=$c
		done
		[ -n "$eng" ] || sleep 0.01
	done
	while [ -n "$eng" ] && c=$(cut -d' ' -f14,15 "/proc/$eng/stat" \
		2>/dev/null); do
		ticks=$((${c% *} + ${c#* }))
		sleep 0.02
	done
	wait "$pid"
	echo "$(cat "$T/load.out") $ticks"
}

# load KIND PINHOLE: prints "ka/s new/s MB/s ka-us new-us
# MB-us" of one run (tlsload); the last three are the engine's CPU per
# request (ka), per connection (new) and per MB of bulk, in microseconds
# (0 for direct).
load() {
	local kind=$1 ph=$2 pre=(env) tl=(./tlsload) r=() p=()
	[ "$kind" = direct ] ||
		pre=("$ph" run --log "$T/a.jsonl" -p "$T/$kind.conf" -- env
			TLSLOAD_PROXY=127.0.0.1:3128)
	# shellcheck disable=SC2206 # PERF_ARGS is a list of words
	[ -z "$PERF" ] || p=(perf record -q -a $PERF_ARGS -o "$PERF/ka.data" --)
	[ "$kind" = direct ] || [ -n "$PERF" ] || p=(engine_cpu)
	ka=$(cd "$T/work" && "${p[@]}" "${pre[@]}" "${tl[@]}" ka web.test \
		"$S_PORT" "$KA_CONC" "$KA_N" /small)
	[ -z "$PERF" ] || p[-2]=$PERF/new.data
	new=$(cd "$T/work" && "${p[@]}" "${pre[@]}" "${tl[@]}" new web.test \
		"$S_PORT" "$KA_CONC" "$NEW_SECS" /small)
	r+=("${ka%% *}" "${new%% *}")
	[ -z "$PERF" ] || p[-2]=$PERF/bulk.data
	bulk=$(cd "$T/work" && "${p[@]}" "${pre[@]}" "${tl[@]}" bulk web.test \
		"$S_PORT" 1 1 /big)
	r+=("${bulk%% *}")
	# requests=N ... TICKS: microseconds of engine CPU per request
	for x in "$ka" "$new"; do
		r+=("$(awk -v hz="$(getconf CLK_TCK)" '{ n = $3; sub(/.*=/, "", n)
			printf "%.0f", (NF == 6 ? $6 : 0) * 1e6 / hz / (n ? n : 1) }' \
			<<<"$x")")
	done
	# MB/s errors=N TICKS: engine CPU per MB (256 MiB = 268.4 MB)
	r+=("$(awk -v hz="$(getconf CLK_TCK)" '{
		printf "%.0f", (NF == 4 ? $4 : 0) * 1e6 / hz / 268.435456 }' \
		<<<"$bulk")")
	echo "${r[*]}"
}

echo "bench_intercept $(date -u +%F) $(uname -sr), uid $(id -u), $RUNS runs each"
if [ "$LOAD_ONLY" != 1 ]; then
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
fi

echo "tlsload: $KA_CONC connections; ka: $KA_N requests each; new: $NEW_SECS s; $(uptime)"
printf '%-44s %-12s %10s %10s %10s %8s %8s %8s\n' binary row 'ka/s' 'new/s' \
	'MB/s' 'ka-us' 'new-us' 'MB-us'
[ -z "$PERF" ] || { set -- "$1"; mkdir -p "$PERF"; }
for ph in "$@"; do
	for kind in direct opaque icpt; do
		[ "$kind" != direct ] || [ "$ph" = "$1" ] || continue
		[ -z "$PERF" ] || [ "$kind" = icpt ] || continue
		res=$(for ((r = 0; r < RUNS; r++)); do load "$kind" "$ph"; done)
		printf '%-44s %-12s %10s %10s %10s %8s %8s %8s\n' "$ph" \
			"${kind/icpt/intercepted}" \
			"$(cut -d' ' -f1 <<<"$res" | median)" \
			"$(cut -d' ' -f2 <<<"$res" | median)" \
			"$(cut -d' ' -f3 <<<"$res" | median)" \
			"$(cut -d' ' -f4 <<<"$res" | median)" \
			"$(cut -d' ' -f5 <<<"$res" | median)" \
			"$(cut -d' ' -f6 <<<"$res" | median)"
	done
done
