#!/usr/bin/env bash
# Scenario: signals.  SIGHUP with a valid policy changes every decision
# after it: on new connections, on a kept-alive connection (its next
# request), and an open CONNECT tunnel the new policy no longer allows is
# closed (one it still allows goes on); with a broken or missing policy it
# prints the errors and the old policy stays.  SIGTERM stops accepting at once, lets an open tunnel
# finish within --grace and exits 0 when it ends; after the grace period
# the proxy closes what remains and exits 0.
# usage: proxy_signals.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin proxy_signals nginx openssl socat curl jq

gen_certs || exit 1
start_nginx || exit 1
start_socat echo "TCP-LISTEN:@PORT@,bind=127.0.0.1,reuseaddr,fork" EXEC:cat || exit 1
ECHO_PORT=$SOCAT_PORT

pol=$T/policy.conf
# write_policy ALLOWED-HOST [noecho]: the policy allows only that name
# (and the echo server, unless "noecho").
write_policy() {
	cat >"$pol.new" <<-EOF
		resolve web.test 127.0.0.1
		resolve other.test 127.0.0.1
		allow $1:$H_PORT { private }
	EOF
	[ "${2:-}" = noecho ] || echo "allow 127.0.0.1:$ECHO_PORT" >>"$pol.new"
	mv "$pol.new" "$pol"
}
code_for() {
	px_curl -o /dev/null -w '%{http_code}' "http://$1:$H_PORT/index.html" 2>/dev/null
}
# reloads N: wait until stderr has N lines matching PATTERN.
reloads() { test "$(count_in "$PX_ERR" "$2")" -ge "$1"; }

write_policy web.test
start_proxy hup "$pol" || exit 1
# Once listening, the daemon holds no capability (as root too), cannot
# gain any, and cannot be dumped; the reloads below still read the policy.
st=$(cat "/proc/$PX_PID/status")
expect "shed: no effective capability" "$st" '^CapEff:[[:space:]]+0000000000000000$'
expect "shed: empty bounding set" "$st" '^CapBnd:[[:space:]]+0000000000000000$|^CapPrm:[[:space:]]+0000000000000000$'
expect "shed: no_new_privs" "$st" '^NoNewPrivs:[[:space:]]+1$'
equal "before reload: web.test" "$(code_for web.test)" 200
equal "before reload: other.test" "$(code_for other.test)" 403
# A keep-alive connection from before the reload: its next request is
# decided by the new policy (proxy.h, proxy_set_policy).
open_conn
old=$CONN
W=web.test:$H_PORT
send "$old" "GET http://$W/whoami/old HTTP/1.1\r\nHost: $W\r\n\r\n"
read_response "$old" 10
equal "before reload: kept connection" "$RESP_STATUS" 200

write_policy other.test
kill -HUP "$PX_PID"
wait_for 10 reloads 1 'reload: policy reloaded'
expect "valid reload: logged" "$(cat "$PX_ERR")" 'reload: policy reloaded \(2 rules\)'
equal "valid reload: web.test now" "$(code_for web.test)" 403
equal "valid reload: other.test now" "$(code_for other.test)" 200
send "$old" "GET http://$W/whoami/old2 HTTP/1.1\r\nHost: $W\r\n\r\n"
read_response "$old" 10
equal "valid reload: the kept-alive connection follows the new policy" "$RESP_STATUS" 403
exec {old}>&-
n=$(log_query "$PX_LOG" 'select(.event == "request" and .path == "/whoami/old2" and .decision == "deny")' | wc -l)
equal "valid reload: the kept-alive request's denial is logged" "$n" 1
# The other way round: a connection kept alive while web.test was denied
# is allowed after a reload that allows it.
open_conn
old=$CONN
send "$old" "GET http://other.test:$H_PORT/whoami/o1 HTTP/1.1\r\nHost: other.test:$H_PORT\r\n\r\n"
read_response "$old" 10
equal "valid reload: kept connection, other.test allowed" "$RESP_STATUS" 200
write_policy web.test
kill -HUP "$PX_PID"
wait_for 10 reloads 2 'reload: policy reloaded'
send "$old" "GET http://$W/whoami/new HTTP/1.1\r\nHost: $W\r\n\r\n"
read_response "$old" 10
equal "second reload: the kept connection may now reach web.test" "$RESP_STATUS" 200
send "$old" "GET http://other.test:$H_PORT/whoami/o2 HTTP/1.1\r\nHost: other.test:$H_PORT\r\n\r\n"
read_response "$old" 10
equal "second reload: ...and no longer other.test" "$RESP_STATUS" 403
exec {old}>&-
# Open CONNECT tunnels: one the new policy still allows goes on, one it
# no longer allows is closed, with an end record that says why.
open_tunnel_raw() {
	open_conn
	TUN=$CONN
	send "$TUN" 'CONNECT 127.0.0.1:%s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n' \
		"$ECHO_PORT" "$ECHO_PORT"
	read_response "$TUN" 10
	equal "$1: tunnel open" "$RESP_STATUS" 200
}
open_tunnel_raw "reload, tunnel kept"
keep=$TUN
write_policy other.test
kill -HUP "$PX_PID"
wait_for 10 reloads 3 'reload: policy reloaded'
send "$keep" 'kept\n'
IFS= read -r -t 10 -u "$keep" line
equal "reload: a tunnel the new policy allows goes on" "$line" kept
open_tunnel_raw "reload, tunnel cut"
cut=$TUN
write_policy other.test noecho
kill -HUP "$PX_PID"
wait_for 10 reloads 4 'reload: policy reloaded'
IFS= read -r -t 10 -u "$cut" line
equal "reload: a tunnel the new policy denies is closed (read status)" "$?" 1
exec {cut}>&- {keep}>&-
n=$(log_query "$PX_LOG" 'select(.event == "end" and .method == "CONNECT" and
	(.error // "" | test("policy reload")))' | wc -l)
equal "reload: the closed tunnels' end records say why" "$n" 2
write_policy other.test
kill -HUP "$PX_PID"
wait_for 10 reloads 5 'reload: policy reloaded'

cat >"$pol" <<EOF
resolve web.test 127.0.0.1
alow web.test:$H_PORT
allow web.test:99999
EOF
kill -HUP "$PX_PID"
wait_for 10 reloads 1 'the old one stays'
err=$(cat "$PX_ERR")
expect "broken reload: the error is printed" "$err" "$pol:2:1: unknown keyword 'alow'"
expect "broken reload: every error is printed" "$err" "$pol:3:[0-9]+: bad port '99999'"
expect "broken reload: old policy stays (message)" "$err" 'reload: the policy has errors; the old one stays'
equal "broken reload: web.test still" "$(code_for web.test)" 403
equal "broken reload: other.test still" "$(code_for other.test)" 200

rm -f "$pol"
kill -HUP "$PX_PID"
wait_for 10 reloads 2 'the old one stays'
expect "missing policy: the error is printed" "$(cat "$PX_ERR")" "$pol: cannot open"
equal "missing policy: other.test still" "$(code_for other.test)" 200
write_policy web.test
kill -HUP "$PX_PID"
wait_for 10 reloads 6 'reload: policy reloaded'
equal "restored policy: web.test" "$(code_for web.test)" 200
stop_proxy hup

# open_tunnel: a CONNECT tunnel to the echo server on fd $TUN, checked.
open_tunnel() {
	open_conn
	TUN=$CONN
	send "$TUN" 'CONNECT 127.0.0.1:%s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n' \
		"$ECHO_PORT" "$ECHO_PORT"
	read_response "$TUN" 10
	equal "$1: tunnel open" "$RESP_STATUS" 200
	send "$TUN" 'ping\n'
	IFS= read -r -t 10 -u "$TUN" line
	equal "$1: tunnel echoes" "$line" ping
}
# refused: may a new connection to the proxy still be made?
refused() {
	if (exec 9<>"/dev/tcp/127.0.0.1/$PX_PORT") 2>/dev/null; then
		bad "$1: a new connection was accepted"
	else ok; fi
}
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

# --- SIGTERM: the tunnel finishes within the grace period ---------------------
start_proxy term "$pol" --grace 30 || exit 1
open_tunnel "grace 30"
kill -TERM "$PX_PID"
wait_for 10 file_has "$PX_ERR" 'stopping; 1 session may finish'
expect "grace 30: stopping logged" "$(cat "$PX_ERR")" 'signal 15: stopping; 1 session may finish'
refused "grace 30"
send "$TUN" 'still there\n'
IFS= read -r -t 10 -u "$TUN" line
equal "grace 30: the tunnel still works" "$line" "still there"
pid_done "$PX_PID" && bad "grace 30: the proxy left before the tunnel ended" || ok
start=$(date +%s%N)
exec {TUN}>&-
wait_exit "$PX_PID" 10
ms=$(ms_since "$start")
equal "grace 30: exit status once the tunnel ended" "$EXIT_STATUS" 0
[ "$ms" -lt 5000 ] && ok || bad "grace 30: exit took $ms ms after the tunnel ended"
sanitizer_clean "grace 30" "$PX_ERR"
n=$(log_query "$PX_LOG" 'select(.event == "end" and .method == "CONNECT" and
	.bytes_up == 17 and .bytes_down == 17 and (has("error") | not))' | wc -l)
equal "grace 30: the tunnel's end record" "$n" 1

# --- SIGTERM: the grace period ends what remains -------------------------------
start_proxy term2 "$pol" --grace 1 || exit 1
open_tunnel "grace 1"
start=$(date +%s%N)
kill -TERM "$PX_PID"
IFS= read -r -t 10 -u "$TUN" line
rc=$?
ms=$(ms_since "$start")
equal "grace 1: the tunnel is closed (read status)" "$rc" 1
if [ "$ms" -ge 800 ] && [ "$ms" -lt 5000 ]; then ok; else
	bad "grace 1: the tunnel was closed after $ms ms, want about 1000"
fi
wait_exit "$PX_PID" 10
equal "grace 1: exit status" "$EXIT_STATUS" 0
sanitizer_clean "grace 1" "$PX_ERR"
exec {TUN}>&-
n=$(log_query "$PX_LOG" 'select(.event == "end" and .method == "CONNECT" and
	(.error // "" | test("shutting down")))' | wc -l)
equal "grace 1: the end record says why" "$n" 1
audit_wellformed term2 "$PX_LOG"
ph_end
