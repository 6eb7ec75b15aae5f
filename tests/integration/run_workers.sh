#!/usr/bin/env bash
# Scenario: `pinhole run --workers 2`, the sandbox's proxy on two event
# loops.  The engine (the child of `pinhole run` that is not
# pinhole-init) has two threads, as -v says, each without a capability
# and with no_new_privs (made after the shedding); the default is the
# CPUs the process may use, at most 8 (one under taskset -c N).  Inside, 16 curl processes at once each make 20
# requests on one keep-alive HTTPS connection, intercepted with a bearer
# token injected (nginx answers only with the token): all 320 get their
# own body; both loops served some (each thread woke many times).  Denied
# targets from parallel clients are counted exactly once each in the
# run's last line.  Four slow downloads are still open when the command
# ends: their sessions, on whichever loop, are closed and logged.  The
# audit log has every request and end record.
# --workers 0, 999 and x are refused (125), so is --workers with --broker.
# usage: run_workers.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tls_lib.sh"
ph_begin run_workers nginx curl openssl jq pgrep mkfifo
gen_certs >/dev/null || exit 1
TOKEN=TOKEN$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$TOKEN" >"$T/tok"
chmod 600 "$T/tok"
# /k/...: the request's path with the token, 401 without.  The token
# never comes back (the proxy would cut a response that echoes it).
workers_conf() {
	cat <<-EOF
		default_type text/plain;
		keepalive_requests 100000;
		server {
			listen 127.0.0.1:$S_PORT ssl;
			ssl_certificate $T/server.pem;
			ssl_certificate_key $T/server.key;
			root $T/www;
			location /k/ {
				if (\$http_authorization != "Bearer $TOKEN") {
					return 401 "no token";
				}
				return 200 "ok \$request_uri";
			}
		}
	EOF
}
mkdir -p "$T/www"
head -c $((8 << 20)) /dev/urandom >"$T/www/big"
nginx_serve nginx NGINX_PID S_PORT workers_conf || exit 1
cat >"$T/p.conf" <<EOF
secret tok file $T/tok
resolve web.test 127.0.0.1
allow web.test:$S_PORT { private upstream-ca $T/ca.pem inject bearer tok }
EOF
W=$T/work
mkdir -p "$W"
LOG=$T/audit.jsonl

# The sandbox's work, between two lines read from the fifo "go" (the
# test's marks): 16 keep-alive connections at once, 20 requests each;
# then 6 denied CONNECTs at once, then 6 denied plain requests at once;
# then four downloads at 1 KB/s, left running once their heads came.
cat >"$W/traffic.sh" <<'EOF'
#!/bin/sh
port=$1
read -r x <go
c=1
while [ "$c" -le 16 ]; do
	set --
	i=1
	while [ "$i" -le 20 ]; do
		set -- "$@" "https://web.test:$port/k/c$c/r$i"
		i=$((i + 1))
	done
	curl -sS -w ' %{http_code} %{num_connects}\n' "$@" >"ka.$c" 2>&1 &
	c=$((c + 1))
done
wait
cat ka.[0-9]* >ka.out
for i in 1 2 3 4 5 6; do
	curl -sS -o /dev/null -w 'deny-tls %{http_connect}\n' https://deny.test/ 2>/dev/null &
done >deny.out
wait
for i in 1 2 3 4 5 6; do
	curl -sS -o /dev/null -w 'deny-plain %{http_code}\n' http://deny.test/x 2>/dev/null &
done >>deny.out
wait
for i in 1 2 3 4; do
	curl -sS --limit-rate 1k -D "held.$i" -o /dev/null \
		"https://web.test:$port/big" 2>/dev/null &
done
n=0
# The origin's head (after the proxy's to the CONNECT) came to each.
while [ "$n" -lt 400 ] && [ "$(cat held.* 2>/dev/null | grep -ci '^content-length: 8388608')" -lt 4 ]; do
	sleep 0.05
	n=$((n + 1))
done
cat held.* >held.out
echo done >traffic.done
read -r x <go
EOF
chmod 755 "$W/traffic.sh"

# mark: one line into the fifo, read by the sandbox (bounded: a sandbox
# that is gone leaves the writer waiting).
mark() { timeout 20 sh -c 'echo go >"$1"' sh "$W/go"; }
# engine_of PID: the child of `pinhole run` PID that is not
# pinhole-init (as bench/bench_intercept.sh's engine_cpu finds it).
ENG=
engine_of() {
	local c
	for c in $(pgrep -P "$1"); do
		[ "$(cat "/proc/$c/comm" 2>/dev/null)" = pinhole-init ] ||
			{ ENG=$c && return 0; }
	done
	return 1
}
threads() { sed -n 's/^Threads:[[:space:]]*//p' "/proc/$1/status"; }
# switches PID: "TID N" for each thread, N its voluntary context
# switches (each time its loop waited, and woke).
switches() {
	local t
	for t in /proc/"$1"/task/*; do
		echo "${t##*/} $(sed -n 's/^voluntary_ctxt_switches:[[:space:]]*//p' "$t/status")"
	done
}
# started RUN-PID ERRFILE LOOPS: -v said the loops, or the run ended.
started() { file_has "$2" "^pinhole: proxy: $3 event loop" || pid_done "$1"; }

# --- the default: the CPUs (at most 8); one CPU, one loop --------------------
# loops_by_default NAME N [PREFIX...]: a run without --workers (started
# under PREFIX, e.g. taskset) says N loops with -v, and its engine has N
# threads.
loops_by_default() {
	local name=$1 n=$2 line='^pinhole: proxy: 1 event loop$'
	shift 2
	[ "$n" -eq 1 ] || line="^pinhole: proxy: $n event loops, one thread each\$"
	rm -f "$W/go"
	mkfifo "$W/go"
	cd "$W" || exit 1
	spawn "$name" "$@" "$PINHOLE" run --log "$LOG" -v -p "$T/p.conf" -- \
		sh -c 'read -r x <go'
	RUN=$SPAWNED
	cd "$T" || exit 1
	wait_for 20 started "$RUN" "$T/$name.err" "$n"
	check "$name: -v says $n loops" file_has "$T/$name.err" "$line"
	ENG=
	wait_for 10 engine_of "$RUN"
	check "$name: the engine found" test -n "$ENG"
	equal "$name: the engine has $n threads" "$(threads "${ENG:-0}")" "$n"
	mark
	wait_exit "$RUN" 30
	equal "$name: status" "$EXIT_STATUS" 0
}
# The CPUs this script may use (nproc follows the affinity), at most 8.
NCPU=$(nproc)
[ "$NCPU" -le 8 ] || NCPU=8
loops_by_default default "$NCPU"
# Under an affinity of one CPU (the first this script may use): one.
loops_by_default one-cpu 1 taskset -c "$(taskset -pc $$ | sed 's/.*: //; s/[,-].*//')"

# --- two loops ---------------------------------------------------------------
rm -f "$W/go" "$LOG"
mkfifo "$W/go"
cd "$W" || exit 1
spawn two "$PINHOLE" run --log "$LOG" -v --workers 2 -p "$T/p.conf" -- \
	./traffic.sh "$S_PORT"
RUN=$SPAWNED
cd "$T" || exit 1
wait_for 20 started "$RUN" "$T/two.err" 2
check "workers 2: -v says two loops" file_has "$T/two.err" \
	'^pinhole: proxy: 2 event loops, one thread each$'
ENG=
wait_for 10 engine_of "$RUN"
check "workers 2: the engine found" test -n "$ENG"
equal "workers 2: the engine has two threads" "$(threads "${ENG:-0}")" 2
# Every thread shed what the engine's main thread shed (made after it).
caps=$(grep -h -E '^(CapPrm|CapEff|NoNewPrivs):' /proc/"${ENG:-0}"/task/*/status | sort | uniq -c)
expect "workers 2: no thread has a capability" "$caps" '^ +2 CapEff:[[:space:]]+0000000000000000$'
expect "workers 2: nor may get one" "$caps" '^ +2 CapPrm:[[:space:]]+0000000000000000$'
expect "workers 2: every thread no_new_privs" "$caps" '^ +2 NoNewPrivs:[[:space:]]+1$'
equal "workers 2: the same bounding set in each" \
	"$(grep -h '^CapBnd:' /proc/"${ENG:-0}"/task/*/status | sort -u | wc -l)" 1
switches "${ENG:-0}" >"$T/before"
mark
wait_for 120 test -e "$W/traffic.done"
check "workers 2: the traffic ran" test -e "$W/traffic.done"
switches "${ENG:-0}" >"$T/after"
mark
wait_exit "$RUN" 30
equal "workers 2: status" "$EXIT_STATUS" 0
ERR=$(cat "$T/two.err")
sanitizer_clean "workers 2" "$T/two.err"

# Both loops served: each thread woke for connections of its own (a
# thread that got none sleeps in epoll_wait throughout).
while read -r tid n; do
	m=$(awk -v t="$tid" '$1 == t { print $2 }' "$T/after")
	check "workers 2: thread $tid served (woke $n -> $m)" test "${m:-0}" -ge $((n + 16))
done <"$T/before"
equal "workers 2: two threads measured" "$(wc -l <"$T/before")" 2

# --- what the clients got ------------------------------------------------------
for ((c = 1; c <= 16; c++)); do
	for ((i = 1; i <= 20; i++)); do
		echo "ok /k/c$c/r$i 200"
	done
done | sort >"$T/want"
sed 's/ [01]$//' "$W/ka.out" | sort >"$T/got"
equal "keep-alive: 320 answers" "$(wc -l <"$W/ka.out")" 320
if cmp -s "$T/want" "$T/got"; then ok; else
	bad "keep-alive: answers differ from the requests:"
	diff "$T/want" "$T/got" | head -10 | sed 's/^/  | /'
fi
equal "keep-alive: one connection per client" \
	"$(awk '{ n += $NF } END { print n }' "$W/ka.out")" 16
equal "denied CONNECTs: 403 each" "$(grep -c '^deny-tls 403$' "$W/deny.out")" 6
equal "denied requests: 403 each" "$(grep -c '^deny-plain 403$' "$W/deny.out")" 6
equal "held downloads: all four started" \
	"$(grep -ci '^content-length: 8388608' "$W/held.out")" 4
# Each target once, with its count, in the order first denied.
equal "denied: the run's last line" "$(last_line "$ERR")" \
	"pinhole: 12 denied: deny.test:443 (x6), deny.test:80 (x6); see $LOG"
refuse "the token is not in the log" "$(cat "$LOG")" "$TOKEN"

# --- the audit log ---------------------------------------------------------------
audit_wellformed "workers 2" "$LOG"
# count FILTER: records matching, identical denials folded counted whole.
count() { jq -s "[.[] | select($1) | (.count // 1)] | add // 0" "$LOG"; }
K='.host == "web.test"'
# Each connection: its CONNECT's request and end records (the end when
# the tunnel became TLS inside), then a request and an end record per
# request inside.
equal "audit: 20 CONNECTs allowed (16 keep-alive, 4 held)" \
	"$(count "$K and .event == \"request\" and .method == \"CONNECT\" and .decision == \"allow\"")" 20
equal "audit: 20 CONNECTs ended" \
	"$(count "$K and .event == \"end\" and .method == \"CONNECT\" and .status == 200")" 20
equal "audit: 320 requests inside, allowed" \
	"$(count "$K and .event == \"request\" and .method == \"GET\" and .decision == \"allow\" and (.path | startswith(\"/k/c\"))")" 320
equal "audit: 320 requests inside ended with 200" \
	"$(count "$K and .event == \"end\" and .method == \"GET\" and .status == 200 and (.path | startswith(\"/k/c\")) and .error == null")" 320
# The four held: their request, and their end, cut by the run's end:
# the command's processes are killed first, so each download's end says
# the client's reset (proxy_reset.sh), or, when the engine stopped
# before its loop met that reset, the proxy's shutdown.
equal "audit: 4 held downloads allowed" \
	"$(count "$K and .event == \"request\" and .path == \"/big\" and .decision == \"allow\"")" 4
equal "audit: 4 held downloads closed and logged at the end" \
	"$(count "$K and .event == \"end\" and .path == \"/big\" and (.error | test(\"^(client( connection failed|: Connection reset by peer|: Broken pipe)|the proxy is shutting down)\$\"))")" 4
equal "audit: each request inside names the secret" \
	"$(count "$K and .method == \"GET\" and .secret == \"tok\"")" $((2 * 324))
equal "audit: nothing else of web.test" "$(count "$K")" $((2 * 20 + 2 * 324))
equal "audit: 12 denials of deny.test" \
	"$(count '.host == "deny.test" and .event == "request" and .decision == "deny"')" 12

# --- refused options ------------------------------------------------------------
for v in 0 999 x; do
	prun --workers "$v" -- true
	equal "--workers $v: status" "$RC" 125
	equal "--workers $v: says why" "$ERR" \
		"pinhole: run: --workers: bad value '$v' (the proxy's event loops: 1 to 256)"
done
prun --workers -- true
equal "--workers without a value: status" "$RC" 125
expect "--workers without a value: says why" "$ERR" '^pinhole: run: --workers needs an argument$'
prun --workers 2 --broker "$T/no-broker.sock" -- true
equal "--workers with --broker: status" "$RC" 125
expect "--workers with --broker: says why" "$ERR" \
	'^pinhole: run: --workers cannot be used with --broker: '

ph_end
