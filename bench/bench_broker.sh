#!/usr/bin/env bash
# bench_broker.sh: what the broker costs against a plain `pinhole run`
# (issue 13), in one sitting, as the calling user.
#
#   bench/bench_broker.sh [PINHOLE]        # default: build/pinhole
#
# A local nginx (127.0.0.1 only) serves a tiny file and a BIG_MB (256)
# MiB file over plain HTTP; one policy allows that port, used two ways:
#   plain   pinhole run -p bench.conf -- ...       (the run's own engine)
#   broker  pinhole run --broker SOCK -p bench -- ...  (a `pinhole proxy
#           --broker SOCK` started here, as the same user, granting the
#           same file as policy "bench"; its engine per sandbox)
# Rows:
#   start     `pinhole run ... -- true`, wall time of RUNS (20) runs,
#             the two modes in turn: median and p90, ms
#   N=1,4,16  N sandboxes started at once, each running bench/loadgen
#             (CONNECT through the sandbox's 127.0.0.1:3128, GET the tiny
#             file, close; CONC (4) in flight for SECS (3) s): conn/s
#             summed over the N; then N sandboxes at once, each running
#             curl for the big file through its proxy: MB/s (10^6 bytes)
#             summed over the N (each curl's own average); median of
#             LOADRUNS (3) rounds, the two modes in turn
# The broker serves every sandbox from one process per sandbox, as a run
# does, so the difference is the broker's accept, fork and REQUEST, and
# the central log's extra fields; not an assertion anywhere.  Needs a
# pinhole with the broker (issue 13): without it the broker does not
# start and the script says so (exit 1).  Nothing leaves loopback.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PH=${1:-$ROOT/build/pinhole}
PH=$(cd "$(dirname "$PH")" && pwd)/$(basename "$PH")
RUNS=${RUNS:-20}
LOADRUNS=${LOADRUNS:-3}
SECS=${SECS:-3}
CONC=${CONC:-4}
BIG_MB=${BIG_MB:-256}
SANDBOXES=${SANDBOXES:-1 4 16}
# shellcheck source=../tests/integration/lib.sh
. "$ROOT/tests/integration/lib.sh" "$PH"
ph_begin bench_broker nginx curl cc
mkdir -p "$T/www" "$T/work" "$T/b"
cc -O2 -Wall -Wextra -o "$T/work/loadgen" "$ROOT/bench/loadgen.c" || exit 1
head -c $((BIG_MB << 20)) /dev/zero >"$T/www/big"
echo small >"$T/www/small"
gen_certs >/dev/null || exit 1
start_nginx >/dev/null || exit 1
# The broker trusts files owned by its user (or root) and writable by no
# one else, up the whole path ($T is ours, 0700, under a sticky /tmp).
cat >"$T/b/bench.conf" <<EOF
allow 127.0.0.1:$H_PORT
EOF
cat >"$T/b/broker.conf" <<EOF
broker {
    policy bench $T/b/bench.conf
    users $(id -u)
}
EOF
chmod 600 "$T/b/bench.conf" "$T/b/broker.conf"
SOCK=$T/b/broker.sock
spawn broker "$PH" proxy -p "$T/b/broker.conf" --broker "$SOCK" \
	--log "$T/broker.jsonl" --max-per-user 64
BROKER_PID=$SPAWNED
broker_up() { [ -S "$SOCK" ] || pid_done "$BROKER_PID"; }
wait_for 10 broker_up
if [ ! -S "$SOCK" ] || pid_done "$BROKER_PID"; then
	echo "bench_broker: the broker did not start (does this pinhole have" \
		"pinhole proxy --broker?):" >&2
	sed 's/^/  | /' "$T/broker.err" >&2
	exit 1
fi

# run MODE ARGS...: `pinhole run` of MODE in the work directory, bounded.
run() {
	local mode=$1
	shift
	if [ "$mode" = broker ]; then
		(cd "$T/work" && timeout 120 "$PH" run --broker "$SOCK" -p bench \
			--log "$T/copy.jsonl" -- "$@") </dev/null 2>>"$T/run.err"
	else
		(cd "$T/work" && timeout 120 "$PH" run -p "$T/b/bench.conf" \
			--log "$T/plain.jsonl" -- "$@") </dev/null 2>>"$T/run.err"
	fi
}
# pct P: the P-th percentile (nearest rank) of the numbers on stdin.
pct() {
	sort -n | awk -v p="$1" '{ v[NR] = $1 }
		END { r = int((p * NR + 99) / 100); if (r < 1) r = 1; print v[r] }'
}
now_us() { echo $(($(date +%s%N) / 1000)); }
failed() {
	echo "bench_broker: $1 failed: ${2:-no output}" >&2
	tail -3 "$T/run.err" | sed 's/^/  | /' >&2
	exit 1
}

echo "bench_broker $(date -u +%F) $(uname -sr), uid $(id -u), $("$PH" --version)," \
	"$RUNS start-ups, $LOADRUNS rounds of ${SECS} s x $CONC in flight, $BIG_MB MiB"

# --- start-up ----------------------------------------------------------------
declare -A got
run plain true || failed "plain run -- true"
run broker true || failed "broker run -- true"
for ((r = 0; r < RUNS; r++)); do
	for mode in plain broker; do
		t0=$(now_us)
		run "$mode" true || failed "$mode run -- true"
		got["$mode start"]+="$((($(now_us) - t0) / 1000)) "
	done
done

# --- N sandboxes at once -------------------------------------------------------
# many MODE N WHAT: N sandboxes of MODE at once, each running WHAT (rate
# or bulk); the sum of their figures.
many() {
	local mode=$1 n=$2 what=$3 i pids=() sum=0 v
	for ((i = 0; i < n; i++)); do
		if [ "$what" = rate ]; then
			run "$mode" ./loadgen rate -x 127.0.0.1:3128 \
				-t "127.0.0.1:$H_PORT" -g /small -c "$CONC" \
				-d "$SECS" >"$T/out.$i" &
		else
			run "$mode" curl -q -sS --max-time 300 -o /dev/null \
				-w '%{speed_download}\n' \
				"http://127.0.0.1:$H_PORT/big" >"$T/out.$i" &
		fi
		pids+=("$!")
	done
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}" || failed "$mode x$n $what (sandbox $i)" "$(cat "$T/out.$i")"
		if [ "$what" = rate ]; then
			v=$(sed -n 's/.* errors=0 .* rate=\([0-9]*\) .*/\1/p' "$T/out.$i")
		else
			v=$(awk '{ printf "%.0f", $1 / 1e6 }' "$T/out.$i")
		fi
		[ -n "$v" ] || failed "$mode x$n $what (sandbox $i)" "$(cat "$T/out.$i")"
		sum=$((sum + v))
	done
	echo "$sum"
}
for n in $SANDBOXES; do
	for ((r = 0; r < LOADRUNS; r++)); do
		for mode in plain broker; do
			got["$mode $n rate"]+="$(many "$mode" "$n" rate) " || exit 1
			got["$mode $n bulk"]+="$(many "$mode" "$n" bulk) " || exit 1
		done
	done
done

printf '\n%-8s %12s %12s\n' 'start' 'median ms' 'p90 ms'
for mode in plain broker; do
	printf '%-8s %12s %12s\n' "$mode" \
		"$(tr ' ' '\n' <<<"${got["$mode start"]}" | grep . | pct 50)" \
		"$(tr ' ' '\n' <<<"${got["$mode start"]}" | grep . | pct 90)"
done
printf '\n%-8s %4s %12s %10s\n' 'load' 'N' 'conn/s sum' 'MB/s sum'
for n in $SANDBOXES; do
	for mode in plain broker; do
		printf '%-8s %4s %12s %10s\n' "$mode" "$n" \
			"$(tr ' ' '\n' <<<"${got["$mode $n rate"]}" | grep . | pct 50)" \
			"$(tr ' ' '\n' <<<"${got["$mode $n bulk"]}" | grep . | pct 50)"
	done
done
kill -TERM "$BROKER_PID" 2>/dev/null
wait_exit "$BROKER_PID" 15
[ "$EXIT_STATUS" -eq 0 ] || echo "bench_broker: the broker exited $EXIT_STATUS" >&2
