#!/usr/bin/env bash
# Scenario: `pinhole proxy --workers 2` (and 4): event loops in threads.
# Many parallel requests (plain HTTP, CONNECT tunnels, intercepted HTTPS
# with a pinned CA, denials) all get their exact answers; every audit
# line parses and the records count exactly; the metrics' sums equal the
# audit counts; --max-sessions holds across the loops (K tunnels held, the
# K+1th waits, and is served once one closes); the per-client limit is
# exact across them; SIGHUP reaches every loop ("reloaded" is said once
# all have it, and 60 new connections, spread by the kernel, are all
# decided by the new policy); connections on a Unix socket are handed
# round the loops; SIGTERM ends it cleanly (exit 0, no sanitizer report).
# Without --workers there is one loop per CPU the process may use (nproc;
# one under taskset -c 0), as -v says.  --workers is refused with --broker.
# usage: proxy_workers.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin proxy_workers nginx openssl socat curl jq

gen_certs || exit 1
start_nginx || exit 1
chmod 600 "$T/pki/ca.key"
pol=$T/policy.conf
# write_policy HOST: HOST is allowed (plain and tunnelled), a.test is
# intercepted with the pinned CA (the test CA, which the clients trust).
write_policy() {
	cat >"$pol.new" <<-EOF
		ca cert $T/ca.pem key $T/pki/ca.key
		resolve web.test 127.0.0.1
		resolve other.test 127.0.0.1
		resolve a.test 127.0.0.1
		allow $1:$H_PORT,$S_PORT { private }
		allow a.test:$S_PORT { private upstream-ca $T/ca.pem paths /* }
	EOF
	mv "$pol.new" "$pol"
}
write_policy web.test
threads() { ls "/proc/$1/task" | wc -l; }
reloads() { test "$(count_in "$PX_ERR" 'reload: policy reloaded')" -ge "$1"; }

for n in 2 4; do
	# --- many parallel requests ---------------------------------------------
	start_proxy w$n "$pol" --workers "$n" --max-per-client 0 \
		--metrics 127.0.0.1:0 || exit 1
	equal "workers $n: threads" "$(threads "$PX_PID")" "$n"
	M_PORT=$(sed -n 's/^pinhole: metrics on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$PX_ERR" | head -1)
	{
		for ((i = 0; i < 200; i++)); do
			printf 'url = "http://web.test:%s/whoami/h%d"\noutput = "/dev/null"\n' "$H_PORT" "$i"
		done
		for ((i = 0; i < 100; i++)); do
			printf 'url = "https://web.test:%s/whoami/t%d"\noutput = "/dev/null"\n' "$S_PORT" "$i"
			printf 'url = "https://a.test:%s/whoami/s%d"\noutput = "/dev/null"\n' "$S_PORT" "$i"
			printf 'url = "http://evil.test:%s/d%d"\noutput = "/dev/null"\n' "$H_PORT" "$i"
		done
	} >"$T/urls.cfg"
	timeout 120 curl -q -s -Z --parallel-max 16 -x "http://127.0.0.1:$PX_PORT" \
		-H "Connection: close" --cacert "$T/ca.pem" \
		-w '%{http_code} %{url}\n' -K "$T/urls.cfg" >"$T/codes" 2>"$T/curl.err"
	n200=$(grep -c '^200 ' "$T/codes")
	equal "workers $n: 400 answered 200" "$n200" 400
	[ "$n200" = 400 ] || {
		grep -v '^200 \|^403 ' "$T/codes" | head -3
		log_query "$PX_LOG" 'select(.status == 502)' | head -2
	}
	equal "workers $n: 100 answered 403" "$(grep -c '^403 ' "$T/codes")" 100
	# Records: one per request (identical denials fold into one, with a
	# count), one end per session; the folded count within a second.
	requests() {
		log_query "$PX_LOG" "select(.event == \"request\" and .decision == \"$1\") | (.count // 1)" |
			jq -s 'add // 0'
	}
	wait_for 10 test "$(requests deny)" -ge 100
	# The intercepted: a CONNECT record and one of the request inside.
	equal "workers $n: allowed requests logged" "$(requests allow)" 500
	equal "workers $n: denied requests logged" "$(requests deny)" 100
	equal "workers $n: intercepted requests logged" \
		"$(log_query "$PX_LOG" 'select(.event == "request" and .host == "a.test" and (.path | startswith("/whoami/s")))' | wc -l)" 100
	audit_wellformed w$n "$PX_LOG"
	# 500 connections, each with an end record: as many numbers,
	# whichever loop numbered them.
	conns=$(log_query "$PX_LOG" 'select(.event == "end") | .conn' | sort -u | wc -l)
	equal "workers $n: connection numbers unique across loops" "$conns" 500
	curl -q -s "http://127.0.0.1:$M_PORT/metrics" >"$T/metrics"
	msum() {
		awk -v d="$1" '/^pinhole_requests_total\{/ && index($0, "decision=\"" d "\"") { s += $NF } END { print s + 0 }' "$T/metrics"
	}
	equal "workers $n: metrics sum of allowed = audit" "$(msum allow)" 500
	equal "workers $n: metrics sum of denied = audit" "$(msum deny)" 100

	# --- SIGHUP reaches every loop --------------------------------------------
	write_policy other.test
	kill -HUP "$PX_PID"
	wait_for 10 reloads 1
	expect "workers $n: reload said for every loop" "$(cat "$PX_ERR")" \
		"reload: policy reloaded \(2 rules\) in $n workers"
	{
		for ((i = 0; i < 30; i++)); do
			printf 'url = "http://web.test:%s/whoami/r%d"\noutput = "/dev/null"\n' "$H_PORT" "$i"
			printf 'url = "http://other.test:%s/whoami/r%d"\noutput = "/dev/null"\n' "$H_PORT" "$i"
		done
	} >"$T/urls2.cfg"
	timeout 60 curl -q -s -Z --parallel-max 8 -x "http://127.0.0.1:$PX_PORT" \
		-H "Connection: close" -w '%{http_code}\n' -K "$T/urls2.cfg" >"$T/codes2" 2>&1
	equal "workers $n: after the reload, web.test denied everywhere" "$(grep -c '^403$' "$T/codes2")" 30
	equal "workers $n: after the reload, other.test allowed everywhere" "$(grep -c '^200$' "$T/codes2")" 30
	write_policy web.test
	stop_proxy w$n
done

# --- --max-sessions across two loops ------------------------------------------------
start_proxy max "$pol" --workers 2 --max-sessions 4 --max-per-client 0 || exit 1
held=()
for ((i = 0; i < 4; i++)); do
	open_conn
	send "$CONN" 'CONNECT web.test:%s HTTP/1.1\r\nHost: web.test\r\n\r\n' "$H_PORT"
	read_response "$CONN" 10 nobody
	equal "max-sessions: tunnel $i held" "$RESP_STATUS" 200
	held+=("$CONN")
done
# Each loop may park one connection it accepted: several wait, none is served.
waiting=()
for ((i = 0; i < 3; i++)); do
	open_conn
	send "$CONN" 'CONNECT web.test:%s HTTP/1.1\r\nHost: web.test\r\n\r\n' "$H_PORT"
	waiting+=("$CONN")
done
for fd in "${waiting[@]}"; do
	if read_response "$fd" 1 nobody; then
		bad "max-sessions: a 5th session was served ($RESP_STATUS)"
	else ok; fi
done
# One tunnel closes: exactly one waiting connection is served.
fd=${held[0]}
exec {fd}>&-
served=0
for fd in "${waiting[@]}"; do
	read_response "$fd" 3 nobody && [ "$RESP_STATUS" = 200 ] && served=$((served + 1))
done
equal "max-sessions: one served when one closes" "$served" 1
for fd in "${held[@]:1}" "${waiting[@]}"; do exec {fd}>&-; done
stop_proxy max

# --- the per-client limit across two loops ------------------------------------------
# --max-sessions 40: 10 per client.  40 slow heads from 127.0.0.1, spread
# over both loops: exactly 30 refused.
start_proxy perclient "$pol" --workers 2 --max-sessions 40 || exit 1
conns=()
W=web.test:$H_PORT
for ((i = 0; i < 40; i++)); do
	open_conn
	conns+=("$CONN")
	send "$CONN" "GET http://$W/whoami/slow$i HTTP/1.1\r\nHost: $W\r\n"
done
refusals() {
	log_query "$PX_LOG" 'select(.event == "request" and .status == 503) | (.count // 1)' |
		jq -s 'add // 0'
}
wait_for 10 test "$(refusals)" -ge 30
equal "per-client: 30 of 40 refused across the loops" "$(refusals)" 30
code=$(px_curl --interface 127.0.0.2 -o /dev/null -w '%{http_code}' "http://$W/index.html" 2>/dev/null)
equal "per-client: another address is served" "$code" 200
for fd in "${conns[@]}"; do exec {fd}>&-; done
stop_proxy perclient

# --- a Unix socket: its connections handed round the loops ---------------------------
sock=$T/px.sock
spawn unix "$PINHOLE" proxy -p "$pol" --listen "unix:$sock" --workers 2 --log "$T/unix.log"
UPID=$SPAWNED
wait_for 10 test -S "$sock"
ok200=0
for ((i = 0; i < 20; i++)); do
	r=$(printf 'GET http://%s/whoami/u%d HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$W" "$i" "$W" |
		timeout 10 socat - "UNIX-CONNECT:$sock" 2>/dev/null | head -1 | tr -d '\r')
	[ "$r" = "HTTP/1.1 200 OK" ] && ok200=$((ok200 + 1))
done
equal "unix: 20 handed-off connections served" "$ok200" 20
stop_proxy unix "$UPID" "$T/unix.err"

# --- without --workers: one loop per CPU the process may use ------------------------
# nproc counts the CPUs of the affinity mask, as the proxy does
# (sched_getaffinity); OMP_* would make it say otherwise.
cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
workers_said() { file_has "$PX_ERR" '^pinhole: proxy: [0-9]+ workers?$'; }
start_proxy dflt "$pol" -v || exit 1
wait_for 5 workers_said
if [ "$cpus" = 1 ]; then plural=; else plural=s; fi
expect "default: one worker per CPU" "$(cat "$PX_ERR")" "^pinhole: proxy: $cpus worker$plural\$"
equal "default: threads" "$(threads "$PX_PID")" "$cpus"
code=$(px_curl -o /dev/null -w '%{http_code}' "http://$W/index.html" 2>/dev/null)
equal "default: served" "$code" 200
stop_proxy dflt
# Pinned to one CPU (taskset): one loop, no thread.
PX_PREFIX=(taskset -c 0)
start_proxy pinned "$pol" -v || exit 1
PX_PREFIX=()
wait_for 5 workers_said
expect "taskset -c 0: one worker" "$(cat "$PX_ERR")" '^pinhole: proxy: 1 worker$'
equal "taskset -c 0: threads" "$(threads "$PX_PID")" 1
code=$(px_curl -o /dev/null -w '%{http_code}' "http://$W/index.html" 2>/dev/null)
equal "taskset -c 0: served" "$code" 200
stop_proxy pinned

# --- where --workers does not apply -------------------------------------------------
out=$("$PINHOLE" proxy -p "$pol" --broker "$T/b.sock" --workers 2 2>&1)
equal "broker: --workers refused" "$?" 2
expect "broker: says why" "$out" 'do not go with --broker'
out=$("$PINHOLE" proxy -p "$pol" --listen 127.0.0.1:0 --workers 0 2>&1)
equal "--workers 0 refused" "$?" 2
out=$("$PINHOLE" proxy -p "$pol" --listen 127.0.0.1:0 --workers 257 2>&1)
equal "--workers 257 refused" "$?" 2
ph_end
