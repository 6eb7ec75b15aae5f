#!/usr/bin/env bash
# bench_scan.sh: what the response search costs end to end (issue 9,
# item 4).  Bulk download through an intercepted tunnel of `pinhole run`:
# curl inside fetches a file of BULK_MIB MiB from nginx over HTTPS (on
# /dev/shm-backed tmp when TMPDIR says so), MB/s (10^6 bytes) as curl
# reports it, and the CPU seconds of pinhole and curl together, median of
# RUNS runs, configurations interleaved:
#
#   intercept  a rule with `methods GET`: intercepted, no credential sent,
#              nothing searched
#   search     a rule with `inject bearer`: the value goes out, so the
#              response is searched for it (3 secrets in the policy)
#   before     (with BEFORE=path to a pinhole built from an older commit)
#              the injecting rule, which that build does not search
#
#   bench/bench_scan.sh build/pinhole [BEFORE-PINHOLE]
# Environment: RUNS (5), BULK_MIB (256).  Uses the integration helpers
# (tests/integration/lib.sh) for nginx and the test CA; traffic stays on
# 127.0.0.1.
RUNS=${RUNS:-5}
BULK_MIB=${BULK_MIB:-256}
BEFORE=${2:-}
. "$(dirname "$0")/../tests/integration/lib.sh"
ph_begin bench_scan nginx curl openssl
gen_certs >/dev/null || exit 1
start_nginx || exit 1
head -c $((BULK_MIB << 20)) /dev/urandom >"$T/www/bulk.bin"
for s in a b c; do
	(umask 077 && od -An -tx1 -N20 /dev/urandom | tr -d ' \n' >"$T/tok-$s")
done
pol() {
	printf 'secret a file %s\nsecret b file %s\nsecret c file %s\n' \
		"$T/tok-a" "$T/tok-b" "$T/tok-c"
	printf 'resolve web.test 127.0.0.1\n'
	printf 'allow web.test:%s { private upstream-ca %s %s }\n' \
		"$S_PORT" "$T/ca.pem" "$1"
}
pol "methods GET" >"$T/intercept.conf"
pol "inject bearer a" >"$T/search.conf"
cp "$T/search.conf" "$T/before.conf"

# one BIN CONF NAME: MB/s of one download to $T/NAME.mbs, and the CPU
# seconds of pinhole and curl together (user + system) to $T/NAME.cpu:
# on a shared machine the CPU time is the steadier figure, and curl's
# share is the same in every configuration.
one() {
	local TIMEFORMAT='%U %S'
	mkdir -p "$T/work"
	{ time (cd "$T/work" && "$1" run --log "$T/audit.jsonl" -p "$2" -- \
		curl -sS -o /dev/null -w '%{speed_download}\n' \
		"https://web.test:$S_PORT/bulk.bin" 2>>"$T/err" |
		awk '{ printf "%.0f\n", $1 / 1e6 }' >>"$T/$3.mbs"); } \
		2>&1 | awk '{ printf "%.2f\n", $1 + $2 }' >>"$T/$3.cpu"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

configs="intercept search"
[ -n "$BEFORE" ] && configs+=" before"
for ((r = 0; r < RUNS; r++)); do
	for c in $configs; do
		bin=$PINHOLE
		[ "$c" = before ] && bin=$BEFORE
		one "$bin" "$T/$c.conf" "$c"
	done
done
printf '%d MiB through an intercepted tunnel, median of %d runs\n' \
	"$BULK_MIB" "$RUNS"
for c in $configs; do
	printf '%-10s %6s MB/s  %6s CPU s   (runs: %s; CPU: %s)\n' "$c" \
		"$(median <"$T/$c.mbs")" "$(median <"$T/$c.cpu")" \
		"$(tr '\n' ' ' <"$T/$c.mbs")" "$(tr '\n' ' ' <"$T/$c.cpu")"
done
grep -c '"secret":"a"' "$T/audit.jsonl" >/dev/null ||
	echo "warning: no request carried the secret" >&2
[ -s "$T/err" ] && tail -5 "$T/err" >&2
ph_end
