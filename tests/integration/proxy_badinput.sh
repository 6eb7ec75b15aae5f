#!/usr/bin/env bash
# Scenario: bad input from either side never takes the proxy down.
# Malformed request heads get 400 (or their own 4xx/5xx), a 200 KiB head
# 431, a head that never ends 408, a client leaving mid-head an audit
# record; an upstream that closes or resets mid-body leaves the client an
# incomplete response and the log an error, a silent one gets 504 (and an
# idle tunnel to it is closed), a garbled one 502; a refused connection
# 502, a connect timeout 504.  After each, a good request on a new connection works.
# usage: proxy_badinput.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin proxy_badinput nginx openssl socat curl jq

gen_certs || exit 1
start_nginx || exit 1

# Upstreams misbehaving (socat parses quotes in addresses: code in files).
# Reads the head, answers 1000 of 100000 body bytes, exits.
cat >"$T/short.sh" <<'EOF'
while IFS= read -r l; do [ "$l" = "$(printf '\r')" ] && break; done
printf 'HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n'
head -c 1000 /dev/zero
EOF
cat >"$T/silent.sh" <<'EOF'
exec cat >/dev/null
EOF
cat >"$T/garbage.sh" <<'EOF'
while IFS= read -r l; do [ "$l" = "$(printf '\r')" ] && break; done
printf 'HTTP/1.1 200 OK\nContent-Length: 2\n\nok'
EOF
# Switches protocols although the request asked for no upgrade.
cat >"$T/switch.sh" <<'EOF'
while IFS= read -r l; do [ "$l" = "$(printf '\r')" ] && break; done
printf 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n'
printf 'Connection: upgrade\r\n\r\nraw bytes'
EOF
L="TCP-LISTEN:@PORT@,bind=127.0.0.1,reuseaddr,fork"
start_socat close "$L" "EXEC:sh $T/short.sh" || exit 1
CLOSE_PORT=$SOCAT_PORT
# close(2) with SO_LINGER 0 (no shutdown first) sends a RST.
start_socat reset "$L,linger=0,shut-close" "EXEC:sh $T/short.sh" || exit 1
RESET_PORT=$SOCAT_PORT
start_socat silent "$L" "EXEC:sh $T/silent.sh" || exit 1
SILENT_PORT=$SOCAT_PORT
start_socat garbage "$L" "EXEC:sh $T/garbage.sh" || exit 1
GARBAGE_PORT=$SOCAT_PORT
start_socat switch "$L" "EXEC:sh $T/switch.sh" || exit 1
SWITCH_PORT=$SOCAT_PORT
# One child at a time and a backlog of one: once two clients hold it, a
# third one's SYN is dropped and its connect times out.
start_socat full "$L,max-children=1,backlog=0" "EXEC:sh $T/silent.sh" || exit 1
FULL_PORT=$SOCAT_PORT
CLOSED_PORT=$(rand_port) || exit 1

pol=$T/policy.conf
cat >"$pol" <<EOF
timeout head 1s
timeout idle 2s
timeout connect 1s
resolve web.test 127.0.0.1
allow web.test:$H_PORT { private }
allow 127.0.0.1:$CLOSE_PORT,$RESET_PORT,$SILENT_PORT,$GARBAGE_PORT,$SWITCH_PORT,$FULL_PORT,$CLOSED_PORT
EOF
start_proxy badinput "$pol" || exit 1
W=web.test:$H_PORT

# healthy AFTER: a good request on a new connection is served.
healthy() {
	local code
	code=$(px_curl -o /dev/null -w '%{http_code}' "http://$W/index.html" 2>/dev/null)
	equal "healthy after $1" "$code" 200
}

# --- malformed heads ----------------------------------------------------------
# NAME|STATUS|printf format of the bytes sent (%s: web.test:PORT)
while IFS='|' read -r name want fmt; do
	[ -n "$name" ] || continue
	rawreq "$fmt" "$W" "$W" "$W"
	equal "$name: status" "${RAW_STATUS:-none}" "$want"
	expect "$name: reason" "$RAW" '^X-Pinhole-Reason: .+'
	equal "$name: closed after the reply (raw status)" "$RAW_RC" 0
	healthy "$name"
done <<'EOF'
bad method character|400|G@T http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n
control byte in method|400|G\001T http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n
missing version|400|GET http://%s/\r\nHost: %s\r\n\r\n
lower-case version|400|GET http://%s/ http/1.1\r\nHost: %s\r\n\r\n
two blanks in request line|400|GET  http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n
obs-fold|400|GET http://%s/ HTTP/1.1\r\nHost: %s\r\nX-Fold: a\r\n b\r\n\r\n
bare LF|400|GET http://%s/ HTTP/1.1\nHost: %s\n\n
bare CR in a field|400|GET http://%s/ HTTP/1.1\r\nHost: %s\r\nX-A: a\rb\r\n\r\n
NUL in a field|400|GET http://%s/ HTTP/1.1\r\nHost: %s\r\nX-Nul: a\000b\r\n\r\n
NUL in the target|400|GET http://%s/a\000b HTTP/1.1\r\nHost: %s\r\n\r\n
blank before colon|400|GET http://%s/ HTTP/1.1\r\nHost : %s\r\n\r\n
no Host in HTTP/1.1|400|GET http://%s/ HTTP/1.1\r\n\r\n
two Host fields|400|GET http://%s/ HTTP/1.1\r\nHost: %s\r\nHost: %s\r\n\r\n
length and chunked|400|POST http://%s/ HTTP/1.1\r\nHost: %s\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n
bad Content-Length|400|POST http://%s/ HTTP/1.1\r\nHost: %s\r\nContent-Length: 1x\r\n\r\n
two Content-Lengths|400|POST http://%s/ HTTP/1.1\r\nHost: %s\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab
unknown coding|501|POST http://%s/ HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: gzip\r\n\r\n
HTTP/2.0|505|GET http://%s/ HTTP/2.0\r\nHost: %s\r\n\r\n
EOF

# --- sizes ----------------------------------------------------------------------
pad=$(head -c 3400 /dev/zero | tr '\0' a)
{
	printf 'GET http://%s/ HTTP/1.1\r\nHost: %s\r\n' "$W" "$W"
	for i in $(seq 60); do printf 'X-Pad-%d: %s\r\n' "$i" "$pad"; done
	printf '\r\n'
} >"$T/big.head"
raw "$T/big.out" 10 <"$T/big.head"
equal "200 KiB head: status" "$(raw_status "$T/big.out")" 431
expect "200 KiB head: reason" "$(tr -d '\r' <"$T/big.out")" '^X-Pinhole-Reason: .+'
healthy "a 200 KiB head"

{
	printf 'GET http://%s/ HTTP/1.1\r\nHost: %s\r\n' "$W" "$W"
	for i in $(seq 101); do printf 'X-F-%d: x\r\n' "$i"; done
	printf '\r\n'
} >"$T/many.head"
raw "$T/many.out" 10 <"$T/many.head"
equal "101 fields: status" "$(raw_status "$T/many.out")" 431
healthy "101 fields"

pad=$(head -c 1900 /dev/zero | tr '\0' b)
{
	printf 'GET http://%s/index.html HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n' "$W" "$W"
	for i in $(seq 30); do printf 'X-Pad-%d: %s\r\n' "$i" "$pad"; done
	printf '\r\n'
} >"$T/fits.head"
raw "$T/fits.out" 10 <"$T/fits.head"
equal "a 57 KiB head fits: status" "$(raw_status "$T/fits.out")" 200

# --- slow and vanishing clients -------------------------------------------------
start=$(date +%s%N)
rawreq 'GET http://%s/ HTTP/1.1\r\nHost: %s\r\n' "$W" "$W"
ms=$((($(date +%s%N) - start) / 1000000))
equal "unfinished head: status" "$RAW_STATUS" 408
expect "unfinished head: reason" "$RAW" '^X-Pinhole-Reason: .+'
if [ "$ms" -ge 800 ] && [ "$ms" -lt 5000 ]; then ok; else
	bad "unfinished head: answered after $ms ms, want about 1000"
fi
healthy "an unfinished head"

open_conn
send "$CONN" 'GET http://%s/index.html HTTP/1.1\r\nHost: %s\r\n\r\n' "$W" "$W"
read_response "$CONN" 10
equal "keep-alive, then an unfinished head: first status" "$RESP_STATUS" 200
send "$CONN" 'GET http://%s/ HTTP/1.1\r\nHo' "$W"
read_response "$CONN" 5
equal "keep-alive, then an unfinished head: 408" "$RESP_STATUS" 408
exec {CONN}>&-
healthy "a keep-alive connection timing out"

open_conn
send "$CONN" 'GET http://%s/mid-head HTTP/1.1\r\nHost: ' "$W"
wait_for 5 file_has "$PX_LOG" '"conn":[0-9]+,"event":"request"' # accepted
exec {CONN}>&-
wait_for 5 file_has "$PX_LOG" 'closed mid-head'
n=$(log_query "$PX_LOG" 'select(.event == "request" and .decision == "deny" and
	(.reason | test("closed mid-head")))' | wc -l)
equal "client leaves mid-head: audit record" "$n" 1
healthy "a client leaving mid-head"

# A body shorter than its Content-Length, then EOF from the client.
printf 'PUT http://%s/upload/short.bin HTTP/1.1\r\nHost: %s\r\nContent-Length: 100\r\n\r\n0123456789' \
	"$W" "$W" | timeout 10 socat -t 5 - "TCP:127.0.0.1:$PX_PORT" >/dev/null 2>&1
wait_for 5 file_has "$PX_LOG" 'mid-request'
n=$(log_query "$PX_LOG" 'select(.event == "end" and .path == "/upload/short.bin" and
	(.error | type == "string"))' | wc -l)
equal "client leaves mid-body: end record with an error" "$n" 1
healthy "a client leaving mid-body"

# --- upstreams misbehaving --------------------------------------------------------
for kind in close reset; do
	port=$CLOSE_PORT
	[ "$kind" = reset ] && port=$RESET_PORT
	out=$(px_curl -o "$T/short.body" -w '%{http_code}' "http://127.0.0.1:$port/$kind" 2>/dev/null)
	rc=$?
	got=$(stat -c %s "$T/short.body" 2>/dev/null || echo 0)
	# The head may or may not have gone out before a RST arrived.
	if [ "$rc" -ne 0 ] && { [ "$out" = 200 ] || [ "$out" = 502 ]; } &&
		[ "$got" -lt 100000 ]; then ok; else
		bad "upstream $kind mid-body: curl exit $rc, status $out, $got bytes; want an incomplete response"
	fi
	wait_for 5 file_has "$PX_LOG" "\"path\":\"/$kind\".*\"error\""
	n=$(log_query "$PX_LOG" 'select(.event == "end" and .path == "/'"$kind"'" and
		(.error | type == "string"))' | wc -l)
	equal "upstream $kind mid-body: end record with an error" "$n" 1
	healthy "an upstream $kind mid-body"
done

start=$(date +%s%N)
fetch "http://127.0.0.1:$SILENT_PORT/silent"
ms=$((($(date +%s%N) - start) / 1000000))
equal "silent upstream: status" "$CODE" 504
expect "silent upstream: reason" "$HEADERS" '^X-Pinhole-Reason: .*idle timeout'
if [ "$ms" -ge 1500 ] && [ "$ms" -lt 8000 ]; then ok; else
	bad "silent upstream: answered after $ms ms, want about 2000"
fi
healthy "a silent upstream"

# An idle tunnel ends after `timeout idle`.
open_conn
send "$CONN" 'CONNECT 127.0.0.1:%s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n' "$SILENT_PORT" "$SILENT_PORT"
read_response "$CONN" 10
equal "idle tunnel: open" "$RESP_STATUS" 200
start=$(date +%s%N)
IFS= read -r -t 10 -u "$CONN" line
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
equal "idle tunnel: closed by the proxy (read status)" "$rc" 1
if [ "$ms" -ge 1500 ] && [ "$ms" -lt 8000 ]; then ok; else
	bad "idle tunnel: closed after $ms ms, want about 2000"
fi
exec {CONN}>&-
wait_for 5 file_has "$PX_LOG" '"error":"idle timeout"'
n=$(log_query "$PX_LOG" 'select(.event == "end" and .method == "CONNECT" and
	.error == "idle timeout")' | wc -l)
equal "idle tunnel: end record" "$n" 1
healthy "an idle tunnel"

fetch "http://127.0.0.1:$GARBAGE_PORT/garbage"
equal "garbled upstream response: status" "$CODE" 502
expect "garbled upstream response: reason" "$HEADERS" '^X-Pinhole-Reason: .+'
healthy "a garbled upstream response"

# A 101 nobody asked for must not reach the client: 502, nothing before it.
fetch "http://127.0.0.1:$SWITCH_PORT/switch"
equal "unasked 101: status" "$CODE" 502
refuse "unasked 101: no 101 forwarded" "$HEADERS" '^HTTP/1\.1 101'
healthy "an unasked protocol switch"

fetch "http://127.0.0.1:$CLOSED_PORT/refused"
equal "connection refused: status" "$CODE" 502
expect "connection refused: reason" "$HEADERS" "^X-Pinhole-Reason: connect to 127.0.0.1:$CLOSED_PORT: Connection refused"
CONNECT_CODE=$(px_curl -o /dev/null -w '%{http_connect}' \
	"https://127.0.0.1:$CLOSED_PORT/" 2>/dev/null)
equal "connection refused through CONNECT: status" "$CONNECT_CODE" 502
healthy "a refused connection"

exec {f1}<>"/dev/tcp/127.0.0.1/$FULL_PORT" {f2}<>"/dev/tcp/127.0.0.1/$FULL_PORT"
start=$(date +%s%N)
fetch "http://127.0.0.1:$FULL_PORT/full"
ms=$((($(date +%s%N) - start) / 1000000))
equal "connect timeout: status" "$CODE" 504
expect "connect timeout: reason" "$HEADERS" "^X-Pinhole-Reason: connect to 127.0.0.1:$FULL_PORT timed out after 1000 ms"
if [ "$ms" -ge 800 ] && [ "$ms" -lt 5000 ]; then ok; else
	bad "connect timeout: answered after $ms ms, want about 1000"
fi
exec {f1}>&- {f2}>&-
healthy "a connect timeout"

stop_proxy badinput
audit_wellformed badinput "$PX_LOG"
n=$(log_query "$PX_LOG" 'select(.event == "request" and .status == 400)' | wc -l)
[ "$n" -ge 15 ] && ok || bad "log: $n records of 400 answers, want one per malformed head"
ph_end
