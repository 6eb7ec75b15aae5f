#!/usr/bin/env bash
# Scenario: plain-HTTP forwarding keeps the client connection: several
# requests for two hosts on one connection, each decided afresh; a denied
# request in the middle ends the connection (and a new one works);
# pipelined requests, one with a body, are answered in order; answers
# framed by HEAD, 304, chunked with trailers, or the upstream's close.
# usage: proxy_keepalive.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin proxy_keepalive nginx openssl socat curl jq

gen_certs || exit 1
start_nginx || exit 1
head -c 100000 /dev/zero >"$T/www/zeros.bin"

# Upstreams with other framings (socat parses quotes in addresses: the
# shell code lives in files).  A chunked one, with an extension and a
# trailer, that serves requests until its client leaves:
cat >"$T/chunked.sh" <<'EOF'
cr=$(printf '\r')
while :; do
	got=
	while IFS= read -r l; do got=1; [ "$l" = "$cr" ] && break; done
	[ -n "$got" ] || exit 0
	printf 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'
	printf '5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n'
done
EOF
# An HTTP/1.0 one whose body ends when it closes:
cat >"$T/eof.sh" <<'EOF'
cr=$(printf '\r')
while IFS= read -r l; do [ "$l" = "$cr" ] && break; done
printf 'HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nbody until close\n'
EOF
L="TCP-LISTEN:@PORT@,bind=127.0.0.1,reuseaddr,fork"
start_socat chunked "$L" "EXEC:sh $T/chunked.sh" || exit 1
CHUNKED_PORT=$SOCAT_PORT
start_socat eof "$L" "EXEC:sh $T/eof.sh" || exit 1
EOF_PORT=$SOCAT_PORT

pol=$T/policy.conf
cat >"$pol" <<EOF
resolve a.test 127.0.0.1
resolve b.test 127.0.0.1
allow a.test:$H_PORT { private }
allow b.test:$H_PORT { private }
allow 127.0.0.1:$CHUNKED_PORT,$EOF_PORT
EOF
start_proxy keepalive "$pol" || exit 1
A=a.test:$H_PORT
B=b.test:$H_PORT

# --- curl: one connection for four requests to two hosts ---------------------
out=$(px_curl -v "http://$A/whoami/1" "http://$B/whoami/2" \
	"http://$A/whoami/3" "http://$B/whoami/4" 2>"$T/curl.err")
equal "curl: four answers in order" "$(tr '\n' ' ' <<<"$out")" \
	"host=a.test uri=/whoami/1 host=b.test uri=/whoami/2 host=a.test uri=/whoami/3 host=b.test uri=/whoami/4 "
n=$(grep -c 'Re-using existing connection' "$T/curl.err")
equal "curl: the proxy connection is reused" "$n" 3
n=$(log_query "$PX_LOG" 'select(.event == "request" and (.path | startswith("/whoami/"))) | .conn' |
	sort -u | wc -l)
equal "log: the four requests share one conn" "$n" 1
n=$(log_query "$PX_LOG" 'select(.event == "request" and (.path | startswith("/whoami/")) and
	.decision == "allow")' | wc -l)
equal "log: each request decided" "$n" 4

# --- raw: a denied host in the middle ends the connection ---------------------
open_conn
send "$CONN" 'GET http://%s/whoami/r1 HTTP/1.1\r\nHost: %s\r\n\r\n' "$A" "$A"
read_response "$CONN" 10
equal "raw: first status" "$RESP_STATUS" 200
equal "raw: first body" "$RESP_BODY" $'host=a.test uri=/whoami/r1\n'
send "$CONN" 'GET http://%s/whoami/r2 HTTP/1.1\r\nHost: %s\r\n\r\n' "$B" "$B"
read_response "$CONN" 10
equal "raw: second status (other host)" "$RESP_STATUS" 200
equal "raw: second body" "$RESP_BODY" $'host=b.test uri=/whoami/r2\n'
send "$CONN" 'GET http://c.test:%s/whoami/r3 HTTP/1.1\r\nHost: c.test:%s\r\n\r\n' "$H_PORT" "$H_PORT"
read_response "$CONN" 10
equal "raw: denied host status" "$RESP_STATUS" 403
expect "raw: denied host reason" "$RESP_HEAD" "^X-Pinhole-Reason: no rule allows c.test:$H_PORT"
expect "raw: denied host closes" "$RESP_HEAD" '^Connection: close'
send "$CONN" 'GET http://%s/whoami/r4 HTTP/1.1\r\nHost: %s\r\n\r\n' "$A" "$A"
IFS= read -r -t 10 -u "$CONN" line
rc=$?
equal "raw: the connection is closed after the denial (read status)" "$rc" 1
exec {CONN}>&-
open_conn
send "$CONN" 'GET http://%s/whoami/r5 HTTP/1.1\r\nHost: %s\r\n\r\n' "$B" "$B"
read_response "$CONN" 10
equal "raw: a new connection works" "$RESP_STATUS" 200
equal "raw: new connection body" "$RESP_BODY" $'host=b.test uri=/whoami/r5\n'
exec {CONN}>&-
conns=$(log_query "$PX_LOG" 'select(.event == "request" and (.path | test("^/whoami/r[1-3]$"))) | .conn' | sort -u | wc -l)
equal "log: r1-r3 on one connection" "$conns" 1
n=$(log_query "$PX_LOG" 'select(.path == "/whoami/r4")' | wc -l)
equal "log: nothing after the denial was read" "$n" 0

# --- pipelined, with a body in the middle --------------------------------------
body="pipelined body $$"
{
	printf 'GET http://%s/whoami/p1 HTTP/1.1\r\nHost: %s\r\n\r\n' "$A" "$A"
	printf 'PUT http://%s/upload/p.txt HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n%s\n' \
		"$B" "$B" "$((${#body} + 1))" "$body"
	printf 'GET http://%s/upload/p.txt HTTP/1.1\r\nHost: %s\r\n\r\n' "$A" "$A"
	printf 'GET http://%s/whoami/p4 HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$B" "$B"
} | raw "$T/pipe.out" 15
equal "pipelined: all answered before close (raw status)" "$?" 0
statuses=$(grep -a '^HTTP/1\.1 ' "$T/pipe.out" | cut -d' ' -f2 | tr '\n' ' ')
equal "pipelined: statuses in order" "$statuses" "200 201 200 200 "
text=$(tr -d '\r' <"$T/pipe.out")
expect "pipelined: first body" "$text" '^host=a\.test uri=/whoami/p1$'
expect "pipelined: the PUT body came back" "$text" "^$body\$"
expect "pipelined: last body" "$text" '^host=b\.test uri=/whoami/p4$'
first=$(grep -n 'uri=/whoami/p1' <<<"$text" | cut -d: -f1)
mid=$(grep -n "^$body\$" <<<"$text" | cut -d: -f1)
last=$(grep -n 'uri=/whoami/p4' <<<"$text" | cut -d: -f1)
if [ -n "$first" ] && [ -n "$mid" ] && [ -n "$last" ] &&
	[ "$first" -lt "$mid" ] && [ "$mid" -lt "$last" ]; then ok; else
	bad "pipelined: answers out of order ($first, $mid, $last)"
fi
n=$(log_query "$PX_LOG" 'select(.event == "end" and .method == "PUT" and
	.bytes_up == '"$((${#body} + 1))"' and .status == 201)' | wc -l)
equal "log: the pipelined PUT has its body bytes" "$n" 1

# --- HTTP/1.0 without keep-alive: closed after the answer -----------------------
rawreq 'GET http://%s/whoami/h10 HTTP/1.0\r\n\r\n' "$A"
equal "HTTP/1.0: status" "$RAW_STATUS" 200
equal "HTTP/1.0: closed after one answer (raw status)" "$RAW_RC" 0
expect "HTTP/1.0: body" "$RAW" '^host=a\.test uri=/whoami/h10$'

# --- framings on one kept connection --------------------------------------------
# HEAD (a length, no body), 304 (no body), chunked with trailer, then a
# plain GET: each answer ends where it should, so the next one can follow.
open_conn
send "$CONN" 'HEAD http://%s/zeros.bin HTTP/1.1\r\nHost: %s\r\n\r\n' "$A" "$A"
read_response "$CONN" 10 nobody
equal "HEAD: status" "$RESP_STATUS" 200
expect "HEAD: length of the body not sent" "$RESP_HEAD" '^Content-Length: 100000$'
etag=$(sed -n 's/^ETag: //Ip' <<<"$RESP_HEAD")
send "$CONN" 'GET http://%s/zeros.bin HTTP/1.1\r\nHost: %s\r\nIf-None-Match: %s\r\n\r\n' "$A" "$A" "$etag"
read_response "$CONN" 10
equal "304 after HEAD: status" "$RESP_STATUS" 304
send "$CONN" 'GET http://127.0.0.1:%s/chunked HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n' "$CHUNKED_PORT" "$CHUNKED_PORT"
# A chunked body: read to the empty line after the trailer.
IFS= read -r -t 10 -u "$CONN" line
equal "chunked after 304: status line" "${line%$'\r'}" "HTTP/1.1 200 OK"
chunked=
for ((i = 0; i < 30; i++)); do
	IFS= read -r -t 10 -u "$CONN" line || break
	chunked+=${line%$'\r'}'|'
	[ "$chunked" != "${chunked%X-Trailer: t||}" ] && break
done
expect "chunked: framing and trailer relayed as sent" "$chunked" \
	'\|\|5;ext=1\|hello\|6\| world\|0\|X-Trailer: t\|\|$'
send "$CONN" 'GET http://127.0.0.1:%s/chunked2 HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n' "$CHUNKED_PORT" "$CHUNKED_PORT"
IFS= read -r -t 10 -u "$CONN" line
equal "chunked twice on a reused upstream: status line" "${line%$'\r'}" "HTTP/1.1 200 OK"
for ((i = 0; i < 30; i++)); do
	IFS= read -r -t 10 -u "$CONN" line || break
	[ "${line%$'\r'}" = "X-Trailer: t" ] && { IFS= read -r -t 10 -u "$CONN" line; break; }
done
send "$CONN" 'GET http://%s/whoami/after HTTP/1.1\r\nHost: %s\r\n\r\n' "$A" "$A"
read_response "$CONN" 10
equal "GET after HEAD, 304 and chunked: status" "$RESP_STATUS" 200
equal "GET after HEAD, 304 and chunked: body" "$RESP_BODY" $'host=a.test uri=/whoami/after\n'
exec {CONN}>&-
n=$(log_query "$PX_LOG" 'select(.event == "request" and ((.path // "") |
	test("^/(zeros.bin|chunked|chunked2|whoami/after)$"))) | .conn' | sort -u | wc -l)
equal "log: the framings shared one conn" "$n" 1

# A body that ends at the upstream's close: relayed whole, then the client
# connection is closed too (nothing else could frame it), and the proxy says
# so with "Connection: close" (RFC 9112 9.6).
rawreq 'GET http://127.0.0.1:%s/eof HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n' "$EOF_PORT" "$EOF_PORT"
equal "close-delimited body: status" "$RAW_STATUS" 200
expect "close-delimited body: body" "$RAW" '^body until close$'
expect "close-delimited body: the client is told" "$RAW" '^Connection: close$'
equal "close-delimited body: closed after it (raw status)" "$RAW_RC" 0

stop_proxy keepalive
audit_wellformed keepalive "$PX_LOG"
ph_end
