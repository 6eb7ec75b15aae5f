#!/usr/bin/env bash
# Scenario: limits.  10,000 sessions (forwarded, tunnelled, denied) leave
# the proxy with the descriptors it had before; with --max-sessions 2 and
# two idle connections a third is not served until one closes; with the
# descriptor limit reached, accepting pauses (no spinning) and resumes;
# unfinished request heads share one memory budget (--head-memory): over
# it, those that waited longest get 503; relay buffers share one too
# (--buffer-memory); at --max-sessions 100, 100 slow heads from 127.0.0.1
# get 25 sessions (the default --max-per-client, a quarter) and 75 503s,
# folded in the log and said once on stderr, while 127.0.0.2 is served at
# once; under a descriptor limit of 400, 156 idle tunnels are held (two
# descriptors each, and a pipe per 16 while bytes move; 4 fewer per event
# loop past the first).  The budgets and limits are the process's: the
# scenarios hold with the default of one loop per CPU.  The other parts, about one client's many connections, turn the
# per-client limit off (--max-per-client 0).
# usage: proxy_limits.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin proxy_limits nginx openssl curl jq prlimit

gen_certs || exit 1
start_nginx || exit 1
pol=$T/policy.conf
cat >"$pol" <<EOF
resolve web.test 127.0.0.1
allow web.test:$H_PORT,$S_PORT { private }
EOF

# An unreadable /proc/PID/fd (an undumpable proxy) fails the test: a count
# of 0 would pass the leak check without checking anything.
fd_count() {
	local n
	n=$(ls "/proc/$1/fd" 2>/dev/null | wc -l)
	[ "$n" -gt 0 ] || bad "cannot count the descriptors of process $1"
	echo "$n"
}
# cpu_ticks PID: user + system time so far, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# --- 10,000 sessions, no descriptor leak ---------------------------------------
start_proxy leak "$pol" || exit 1
H="Connection: close"
for u in "http://web.test:$H_PORT/index.html" "https://web.test:$S_PORT/index.html" \
	"http://evil.test:$H_PORT/"; do
	px_curl -o /dev/null -H "$H" --cacert "$T/ca.pem" "$u" 2>/dev/null
done
# Warmed up: the audit log, the loop's own descriptors and the listener are
# open, nothing else (no DNS: names come from `resolve`).  So no slack.
wait_for 5 test "$(count_in "$PX_LOG" '"event":"end"')" -ge 3
# The plain GET's upstream connection was kept for reuse (uppool.c): it
# closes after the pool's 4 s idle, then the count has no slack.
parked=$(fd_count "$PX_PID")
wait_for 10 test "$(fd_count "$PX_PID")" -lt "$parked"
before=$(fd_count "$PX_PID")

{
	for ((i = 0; i < 5000; i++)); do
		printf 'url = "http://web.test:%s/index.html?n=%d"\noutput = "/dev/null"\n' "$H_PORT" "$i"
	done
	for ((i = 0; i < 2500; i++)); do
		printf 'url = "https://web.test:%s/index.html?n=%d"\noutput = "/dev/null"\n' "$S_PORT" "$i"
		printf 'url = "http://evil.test:%s/?n=%d"\noutput = "/dev/null"\n' "$H_PORT" "$i"
	done
} >"$T/urls.cfg"
start=$(date +%s)
timeout 120 curl -q -s -Z --parallel-max 8 -x "http://127.0.0.1:$PX_PORT" \
	-H "$H" --cacert "$T/ca.pem" -w '%{http_code}\n' -K "$T/urls.cfg" \
	>"$T/codes" 2>"$T/curl.err"
secs=$(($(date +%s) - start))
echo "$PH_NAME: 10000 sessions in ${secs}s"
equal "10000 sessions: 200 answers" "$(grep -c '^200$' "$T/codes")" 7500
equal "10000 sessions: 403 answers" "$(grep -c '^403$' "$T/codes")" 2500
[ "$secs" -le 90 ] && ok || bad "10000 sessions took ${secs}s"

# Identical denials (the query is not logged) fold into one record with
# a count and no end record (written within a second): every session is
# either.
logged_sessions() {
	local n folded
	n=$(log_query "$PX_LOG" 'select(.event == "end") | .conn' | sort -u | wc -l)
	folded=$(log_query "$PX_LOG" 'select(.count) | .count' | jq -s 'add // 0')
	echo $((n + folded))
}
wait_for 10 test "$(logged_sessions)" -ge 10003
equal "log: one end record per session, or a count" "$(logged_sessions)" 10003
wait_for 10 test "$(fd_count "$PX_PID")" -le "$before"
after=$(fd_count "$PX_PID")
if [ "$after" -eq "$before" ]; then ok; else
	bad "descriptors: $before before, $after after 10000 sessions"
	ls -l "/proc/$PX_PID/fd" | sed 's/^/  | /'
fi
stop_proxy leak
audit_wellformed leak "$PX_LOG"

# --- --max-sessions 2: the third connection waits --------------------------------
start_proxy max "$pol" --max-sessions 2 --max-per-client 0 || exit 1
W=web.test:$H_PORT
GET="GET http://$W/whoami/%s HTTP/1.1\r\nHost: $W\r\n\r\n"
open_conn
c1=$CONN
send "$c1" "$GET" one
read_response "$c1" 10
equal "max-sessions: first connection served" "$RESP_STATUS" 200
open_conn
c2=$CONN
send "$c2" "$GET" two
read_response "$c2" 10
equal "max-sessions: second connection served" "$RESP_STATUS" 200
# Both sessions now idle, kept open.  The third connects (the kernel's
# backlog) but is not accepted: no answer while the two stay.
open_conn
c3=$CONN
send "$c3" "$GET" three
if read_response "$c3" 2; then
	bad "max-sessions: a third session was served ($RESP_STATUS)"
else ok; fi
equal "max-sessions: nothing of the third in the log" \
	"$(count_in "$PX_LOG" '/whoami/three')" 0
exec {c1}>&-
read_response "$c3" 10
equal "max-sessions: the third is served once one closes" "$RESP_STATUS" 200
equal "max-sessions: third body" "$RESP_BODY" $'host=web.test uri=/whoami/three\n'
send "$c2" "$GET" two-again
read_response "$c2" 10
equal "max-sessions: the second connection still works" "$RESP_STATUS" 200
exec {c2}>&- {c3}>&-
stop_proxy max

# --- out of descriptors: accept pauses, then resumes -------------------------------
# The proxy gets its current count plus 8 descriptors; 30 idle clients use
# them up.  A paused listener costs no CPU; a spinning one would.
start_proxy probe "$pol" || exit 1
base=$(fd_count "$PX_PID")
stop_proxy probe
PX_PREFIX=(prlimit "--nofile=$((base + 8))")
start_proxy emfile "$pol" --max-per-client 0 || exit 1
PX_PREFIX=()
conns=()
for ((i = 0; i < 30; i++)); do
	open_conn
	conns+=("$CONN")
done
wait_for 10 file_has "$PX_ERR" 'accept: .*(Too many open files|pausing)'
expect "out of descriptors: the pause is logged" "$(cat "$PX_ERR")" 'accept: .*pausing'
t0=$(cpu_ticks "$PX_PID")
# A request on a connection that has not been accepted: no answer in 2 s.
send "${conns[29]}" "$GET" late
read_response "${conns[29]}" 2 && bad "out of descriptors: answered at once?" || ok
t1=$(cpu_ticks "$PX_PID")
if [ $((t1 - t0)) -le 50 ]; then ok; else
	bad "out of descriptors: $((t1 - t0)) CPU ticks in 2 s while paused (spinning?)"
fi
for ((i = 0; i < 29; i++)); do
	fd=${conns[i]}
	exec {fd}>&-
done
read_response "${conns[29]}" 10
equal "out of descriptors: served once descriptors are free" "$RESP_STATUS" 200
fd=${conns[29]}
exec {fd}>&-
code=$(px_curl -o /dev/null -w '%{http_code}' "http://$W/index.html" 2>/dev/null)
equal "out of descriptors: a new connection is served" "$code" 200
stop_proxy emfile

# --- unfinished heads: one memory budget for all connections ----------------------
# 200 connections each send 59 KiB of a head and stop.  With --head-memory
# 1M the heads that waited longest are refused with 503 until the rest
# fits; the newest are still served once they finish their heads.
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# Under ASan freed memory stays in quarantine: RSS says nothing there.
asan=$(ldd "$PINHOLE" 2>/dev/null | grep libasan)
start_proxy heads "$pol" --head-memory 1M --max-per-client 0 || exit 1
code=$(px_curl -o /dev/null -w '%{http_code}' "http://$W/index.html" 2>/dev/null)
equal "heads: served before" "$code" 200
rss0=$(rss_kb "$PX_PID")
pad=$(for ((j = 0; j < 59; j++)); do printf 'X-Pad-%d: %01000d\r\n' "$j" 0; done)
conns=()
for ((i = 0; i < 200; i++)); do
	open_conn
	conns+=("$CONN")
	send "$CONN" "GET http://$W/whoami/h$i HTTP/1.1\r\nHost: $W\r\n%s" "$pad"
done
# One end record per refused head (the request records fold, so their
# lines depend on how fast the heads came).
refused_heads() {
	log_query "$PX_LOG" 'select(.event == "end" and
		((.error // "") | contains("unfinished request heads is full")))' | wc -l
}
wait_for 20 test "$(refused_heads)" -ge 170
rss1=$(rss_kb "$PX_PID")
n=$(refused_heads)
echo "$PH_NAME: 200 unfinished 59 KiB heads, --head-memory 1M: $n refused (503), RSS ${rss0} kB -> ${rss1} kB"
[ "$n" -ge 170 ] && [ "$n" -le 190 ] && ok || bad "heads: $n refused, want 170-190"
if [ -n "$asan" ]; then
	echo "$PH_NAME: heads: ASan build, the RSS figure is not checked"
elif [ $((rss1 - rss0)) -lt 6144 ]; then ok; else
	bad "heads: RSS grew by $((rss1 - rss0)) kB for 1 MiB of heads"
fi
expect "heads: said on stderr" "$(cat "$PX_ERR")" 'unfinished request heads hold over 1048576 bytes'
read_response "${conns[0]}" 10
equal "heads: the oldest gets 503" "$RESP_STATUS" 503
expect "heads: the reason" "$RESP_HEAD" 'X-Pinhole-Reason: the proxy.s memory for unfinished request heads is full'
fd=${conns[199]}
send "$fd" '\n\r\n' # $pad lost its last \n to $(...)
read_response "$fd" 10
equal "heads: the newest is served when its head is complete" "$RESP_STATUS" 200
for fd in "${conns[@]}"; do exec {fd}>&-; done
code=$(px_curl -o /dev/null -w '%{http_code}' "http://$W/index.html" 2>/dev/null)
equal "heads: a new connection is served after" "$code" 200
stop_proxy heads
audit_wellformed heads "$PX_LOG"

# --- relay buffers: one budget for all connections ------------------------------
# 80 clients ask for 16 MiB each and read nothing.  Each session may queue
# 256 KiB toward its client (20 MiB in all) unless many are open; with
# --buffer-memory 2M each gets 16 KiB and the proxy stays small.  (The
# kernel's socket buffers fill first: they are not the proxy's memory.)
head -c $((16 * 1024 * 1024)) /dev/zero >"$T/www/big16.bin"
start_proxy bufs "$pol" --buffer-memory 2M --max-per-client 0 || exit 1
code=$(px_curl -o /dev/null -w '%{http_code}' "http://$W/index.html" 2>/dev/null)
equal "buffers: served before" "$code" 200
rss0=$(rss_kb "$PX_PID")
conns=()
for ((i = 0; i < 80; i++)); do
	open_conn
	conns+=("$CONN")
	send "$CONN" "GET http://$W/big16.bin HTTP/1.1\r\nHost: $W\r\n\r\n"
done
grown() { [ $(($(rss_kb "$PX_PID") - rss0)) -ge 12288 ]; }
# Bounded wait for what must not happen: the buffers growing past 12 MiB.
if [ -n "$asan" ]; then
	echo "$PH_NAME: buffers: ASan build, the RSS figure is not checked"
elif wait_for 5 grown; then
	bad "buffers: RSS grew by $(($(rss_kb "$PX_PID") - rss0)) kB with --buffer-memory 2M"
else ok; fi
echo "$PH_NAME: 80 clients not reading 16 MiB each, --buffer-memory 2M: RSS ${rss0} kB -> $(rss_kb "$PX_PID") kB"
n=$(log_query "$PX_LOG" 'select(.event == "request" and .path == "/big16.bin")' | wc -l)
equal "buffers: every request reached the proxy" "$n" 80
for fd in "${conns[@]}"; do exec {fd}>&-; done
code=$(px_curl -o /dev/null -w '%{http_code}' "http://$W/index.html" 2>/dev/null)
equal "buffers: a new connection is served after" "$code" 200
stop_proxy bufs

# --- one client cannot hold every slot: the per-client limit ------------------------
# 100 slow heads from 127.0.0.1 at --max-sessions 100: 25 become sessions
# (waiting for the rest of their heads until the head timeout), 75 are
# answered 503 at once.  127.0.0.2 (loopback holds all of 127/8) is still
# served at once.
# The slow heads must outlast the test on a busy machine: the head
# timeout is raised from 30 s, or the oldest would be answered 408.
{
	cat "$pol"
	echo "timeout head 300s"
} >"$pol.slow"
start_proxy perclient "$pol.slow" --max-sessions 100 || exit 1
conns=()
for ((i = 0; i < 100; i++)); do
	open_conn
	conns+=("$CONN")
	send "$CONN" "GET http://$W/whoami/slow$i HTTP/1.1\r\nHost: $W\r\n"
done
refusals() {
	log_query "$PX_LOG" 'select(.event == "request" and .status == 503 and
		(.reason | startswith("per-client limit: client 127.0.0.1 "))) |
		(.count // 1)' | jq -s 'add // 0'
}
wait_for 10 test "$(refusals)" -ge 75
equal "per-client: 75 of 100 refused, logged" "$(refusals)" 75
t0=$(date +%s%N)
code=$(px_curl --interface 127.0.0.2 --max-time 10 -o /dev/null -w '%{http_code}' \
	"http://$W/index.html" 2>"$T/perclient.curl")
ms=$((($(date +%s%N) - t0) / 1000000))
echo "$PH_NAME: 127.0.0.2 served in ${ms} ms while 127.0.0.1 holds 25 slow heads"
equal "per-client: another address is served" "$code" 200
[ "$ms" -lt 5000 ] && ok || bad "per-client: 127.0.0.2 waited ${ms} ms"
# Which 25 are served is the order the loops accept them in (one per
# CPU: not the order of connecting); the rest are answered.
n=0
kept=()
for ((i = 0; i < 100; i++)); do
	if read_response "${conns[i]}" 0.1 && [ "$RESP_STATUS" = 503 ]; then
		n=$((n + 1))
		last_head=$RESP_HEAD
	else
		kept+=("${conns[i]}")
	fi
done
equal "per-client: 75 answered 503" "$n" 75
expect "per-client: the reason" "$last_head" \
	'X-Pinhole-Reason: per-client limit: client 127.0.0.1 has 25 connections open'
read_response "${kept[0]}" 0.1 && bad "per-client: a kept connection was answered: $RESP_HEAD" || ok
equal "per-client: said once on stderr" \
	"$(count_in "$PX_ERR" 'client 127\.0\.0\.1 reached its limit of 25 connections')" 1
n=$(count_in "$PX_ERR" 'proxy: client 127\.0\.0\.1')
[ "$n" -le 3 ] && ok || bad "per-client: $n lines on stderr for 75 refusals"
# A slot freed by a connection that closes is taken by the next one.
fd=${kept[0]}
exec {fd}>&-
served_again() {
	local c
	c=$(px_curl -o /dev/null -w '%{http_code}' "http://$W/index.html" 2>/dev/null)
	[ "$c" = 200 ]
}
wait_for 5 served_again && ok || bad "per-client: 127.0.0.1 not served after a slot was freed"
for fd in "${conns[@]}"; do [ "$fd" = "${kept[0]}" ] || exec {fd}>&-; done
stop_proxy perclient
audit_wellformed perclient "$PX_LOG"
"$PINHOLE" log "$PX_LOG" >"$T/perclient.review" 2>&1
equal "per-client: pinhole log reads the refusals" "$?" 0

# --- a low descriptor limit: two descriptors per idle tunnel -----------------------
# Under a limit of 400 the default session limit is (336 - 2 * 9 pipes
# - 5 kept upstream connections) / 2 = 156 (proxy.c, fd_share): splice
# pipes are taken only while bytes move.  At six descriptors per tunnel
# it was (400 - 64) / 6 = 56.  Each event loop past the first (one per
# CPU by default: its threads) takes 4 sessions for its own descriptors
# (engine.c).  That many idle CONNECT tunnels are all answered; the next
# waits in the backlog.
PX_PREFIX=(prlimit "--nofile=400:400")
start_proxy fdlimit "$pol" --max-per-client 0 || exit 1
PX_PREFIX=()
loops=$(ls "/proc/$PX_PID/task" | wc -l)
held=$((156 - 4 * (loops - 1)))
echo "$PH_NAME: low descriptor limit: $loops loops, $held sessions"
conns=()
n=0
for ((i = 0; i < held; i++)); do
	open_conn
	conns+=("$CONN")
	send "$CONN" 'CONNECT web.test:%s HTTP/1.1\r\nHost: web.test\r\n\r\n' "$H_PORT"
	read_response "$CONN" 10 nobody && [ "$RESP_STATUS" = 200 ] || break
	n=$((n + 1))
done
equal "low descriptor limit: idle tunnels held (56 at six descriptors each)" "$n" "$held"
open_conn
send "$CONN" 'CONNECT web.test:%s HTTP/1.1\r\nHost: web.test\r\n\r\n' "$H_PORT"
if read_response "$CONN" 1 nobody; then
	bad "low descriptor limit: tunnel $((held + 1)) was answered ($RESP_STATUS)"
else ok; fi
conns+=("$CONN")
# Bytes still move through the held tunnels.
send "${conns[0]}" 'GET /whoami/held HTTP/1.1\r\nHost: web.test\r\n\r\n'
read_response "${conns[0]}" 10
equal "low descriptor limit: a held tunnel carries a request" "$RESP_STATUS" 200
[ "$(fd_count "$PX_PID")" -le 400 ] && ok || bad "low descriptor limit: over 400 descriptors"
for fd in "${conns[@]}"; do exec {fd}>&-; done
stop_proxy fdlimit
ph_end
