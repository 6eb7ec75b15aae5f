#!/usr/bin/env bash
# Scenario: `pinhole proxy --metrics` on a loopback port and on a Unix
# socket.  curl through the proxy to nginx on 127.0.0.1 (allowed) and to a
# denied host, then GET /metrics shows both requests by decision, host,
# port and rule, the denial, bytes, no connection left open and the
# histograms; other paths get 404, other methods 405, garbage 400, a head
# that never ends is cut off; a non-loopback --metrics is refused.
# usage: proxy_metrics.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin proxy_metrics nginx openssl curl

gen_certs || exit 1
start_nginx || exit 1

pol=$T/main.conf
cat >"$pol" <<EOF
resolve web.test 127.0.0.1
allow web.test:$H_PORT { private }
EOF
start_proxy main "$pol" --metrics 127.0.0.1:0 || exit 1
metrics_up() { file_has "$PX_ERR" '^pinhole: metrics on ' || pid_done "$PX_PID"; }
wait_for 10 metrics_up
M_PORT=$(sed -n 's/^pinhole: metrics on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$PX_ERR" | head -1)
if [ -z "$M_PORT" ]; then
	bad "no 'metrics on' line:"
	sed 's/^/  | /' "$PX_ERR"
	ph_end
fi

# scrape [CURL-ARGS...]: GET /metrics; sets MCODE, MBODY, MHEAD.
scrape() {
	MCODE=$(curl -q -sS --max-time 10 -o "$T/m.body" -D "$T/m.head" \
		-w '%{http_code}' "$@" 2>"$T/m.err")
	MBODY=$(cat "$T/m.body" 2>/dev/null)
	MHEAD=$(tr -d '\r' <"$T/m.head" 2>/dev/null)
}
murl=http://127.0.0.1:$M_PORT/metrics

# --- before any request ------------------------------------------------------
scrape "$murl"
equal "scrape status" "$MCODE" 200
expect "content type" "$MHEAD" '^Content-Type: text/plain; version=0\.0\.4'
expect "no requests yet" "$MBODY" '^pinhole_denials_total 0$'
expect "start time" "$MBODY" '^process_start_time_seconds [0-9]+$'

# --- traffic -----------------------------------------------------------------
fetch "http://web.test:$H_PORT/index.html"
equal "allowed GET" "$CODE" 200
fetch "http://web.test:$H_PORT/index.html"
equal "allowed GET again" "$CODE" 200
fetch "http://denied.test/x"
equal "denied GET" "$CODE" 403

# Sessions end when the proxy sees curl's close: poll for it.
closed() {
	scrape "$murl"
	grep -q '^pinhole_connections_active 0$' <<<"$MBODY"
}
wait_for 10 closed
expect "no connection open" "$MBODY" '^pinhole_connections_active 0$'
expect "connections counted" "$MBODY" '^pinhole_connections_total 3$'
expect "allowed counted" "$MBODY" \
	"^pinhole_requests_total\\{decision=\"allow\",host=\"web.test\",port=\"$H_PORT\",rule=\"$pol:2\",via=\"proxy\"\\} 2$"
expect "denied counted" "$MBODY" \
	'^pinhole_requests_total\{decision="deny",host="denied.test",port="80",rule="default",via="proxy"\} 1$'
expect "denials" "$MBODY" '^pinhole_denials_total 1$'
expect "no leak" "$MBODY" '^pinhole_leaks_total 0$'
refuse "bytes down" "$MBODY" '^pinhole_bytes_total\{direction="down"\} 0$'
expect "decision histogram" "$MBODY" '^pinhole_decision_seconds_count 3$'
expect "decision +Inf" "$MBODY" '^pinhole_decision_seconds_bucket\{le="\+Inf"\} 3$'
# The second GET took the upstream connection the first one's session
# left in the pool when curl closed (uppool.c): a reuse is no connect.
# The pool is each event loop's, and the kernel picks the loop of each
# connection: with one loop one connect, with more one or two.
loops=$(ls "/proc/$PX_PID/task" | wc -l)
connects=$(sed -n 's/^pinhole_connect_seconds_count //p' <<<"$MBODY")
most=$((loops > 1 ? 2 : 1))
if [ "${connects:-0}" -ge 1 ] && [ "$connects" -le "$most" ]; then ok; else
	bad "connect histogram: $connects connects for 2 GETs in $loops loops, want 1 to $most"
fi
expect "no audit failure" "$MBODY" '^pinhole_audit_write_failures_total 0$'

# --- what the responder refuses ---------------------------------------------
scrape "http://127.0.0.1:$M_PORT/other"
equal "other path" "$MCODE" 404
scrape -X POST "$murl"
equal "POST" "$MCODE" 405
expect "405 says what is allowed" "$MHEAD" '^Allow: GET$'
rawreq_m() {
	# shellcheck disable=SC2059
	printf "$@" | raw "$T/raw.out" 10 "$M_PORT"
	RAW_RC=$?
	RAW=$(tr -d '\r' <"$T/raw.out")
}
rawreq_m 'GARBAGE\r\n\r\n'
expect "garbage gets 400" "$RAW" '^HTTP/1\.1 400 '
rawreq_m 'GET /metrics HTTP/1.1\r\nX: \001\r\n\r\n'
expect "control byte in a field gets 400" "$RAW" '^HTTP/1\.1 400 '
rawreq_m '%s' "$(head -c 5000 /dev/zero | tr '\0' a)"
expect "endless head gets 400" "$RAW" '^HTTP/1\.1 400 '
rawreq_m 'GET /metrics HTTP/1.0\r\n\r\n'
expect "HTTP/1.0 is served" "$RAW" '^HTTP/1\.1 200 OK'
expect "one response, then close" "$RAW" '^Connection: close$'
scrape "$murl"
equal "still serving" "$MCODE" 200
stop_proxy main

# --- a Unix socket -----------------------------------------------------------
start_proxy unix "$pol" --metrics "unix:$T/metrics.sock" || exit 1
sock_up() { [ -S "$T/metrics.sock" ]; }
wait_for 10 sock_up
scrape --unix-socket "$T/metrics.sock" http://localhost/metrics
equal "unix scrape" "$MCODE" 200
expect "unix body" "$MBODY" '^pinhole_connections_active 0$'
stop_proxy unix

# --- refused before the policy: the per-client limit ------------------------
start_proxy limit "$pol" --max-per-client 1 --metrics 127.0.0.1:0 || exit 1
wait_for 10 metrics_up
M_PORT=$(sed -n 's/^pinhole: metrics on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$PX_ERR" | head -1)
exec {held}<>"/dev/tcp/127.0.0.1/$PX_PORT"
one_open() {
	scrape "http://127.0.0.1:$M_PORT/metrics"
	grep -q '^pinhole_connections_active 1$' <<<"$MBODY"
}
wait_for 10 one_open
fetch "http://web.test:$H_PORT/index.html"
equal "over the per-client limit" "$CODE" 503
exec {held}>&-
scrape "http://127.0.0.1:$M_PORT/metrics"
expect "per-client refusal counted" "$MBODY" \
	'^pinhole_requests_total\{decision="deny",host="",port="",rule="none",via="proxy"\} 1$'
expect "as a denial" "$MBODY" '^pinhole_denials_total 1$'
stop_proxy limit

# --- refused addresses -------------------------------------------------------
for addr in 192.0.2.1:9100 0.0.0.0:9100 '[::]:9100' 9100 'localhost:9100'; do
	out=$(timeout 20 "$PINHOLE" proxy -p "$pol" --listen 127.0.0.1:0 \
		--metrics "$addr" --log "$T/refused.log" 2>&1)
	rc=$?
	equal "--metrics $addr refused" "$rc" 1
	expect "--metrics $addr says why" "$out" 'metrics: (bad --metrics|.*not a loopback address)'
done

ph_end
