#!/usr/bin/env bash
# Scenario: 64 MiB bodies through the proxy, both ways, intact (sha256):
# download through a CONNECT tunnel (HTTPS) and through plain-HTTP
# forwarding; upload (PUT to nginx's DAV location, which stores the body)
# with a length, chunked, and through a tunnel; the audit log counts the
# bytes.  A client that does not read makes the proxy stop reading too.
# usage: proxy_large.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin proxy_large nginx openssl curl jq sha256sum

SIZE=$((64 * 1024 * 1024))
gen_certs || exit 1
start_nginx || exit 1
head -c "$SIZE" /dev/urandom >"$T/www/big.bin"
want=$(sha256sum <"$T/www/big.bin" | cut -d' ' -f1)
pol=$T/policy.conf
cat >"$pol" <<EOF
resolve web.test 127.0.0.1
allow web.test:$H_PORT,$S_PORT { private }
EOF
start_proxy large "$pol" || exit 1

# sha_of FILE: its sha256, or "missing".
sha_of() {
	if [ -f "$1" ]; then sha256sum <"$1" | cut -d' ' -f1; else echo missing; fi
}

# end_bytes METHOD PORT FIELD: FIELD of the last end record for METHOD to
# web.test:PORT.
end_bytes() {
	log_query "$PX_LOG" 'select(.event == "end" and .method == "'"$1"'" and
		.port == '"$2"') | .'"$3" | tail -1
}

# --- downloads --------------------------------------------------------------
code=$(px_curl --max-time 120 --cacert "$T/ca.pem" -o "$T/got.tls" \
	-w '%{http_code}' "https://web.test:$S_PORT/big.bin")
equal "CONNECT download status" "$code" 200
equal "CONNECT download sha256" "$(sha_of "$T/got.tls")" "$want"
rm -f "$T/got.tls"

code=$(px_curl --max-time 120 -o "$T/got.http" -w '%{http_code}' \
	"http://web.test:$H_PORT/big.bin")
equal "forward download status" "$code" 200
equal "forward download sha256" "$(sha_of "$T/got.http")" "$want"
rm -f "$T/got.http"

n=$(end_bytes GET "$H_PORT" bytes_down)
equal "log: forward download bytes_down" "${n:-none}" "$SIZE"

# --- uploads: nginx stores what it read; compare it -------------------------
stored=$T/up/upload/put.bin
code=$(px_curl --max-time 120 -H 'Expect:' -T "$T/www/big.bin" -o /dev/null \
	-w '%{http_code}' "http://web.test:$H_PORT/upload/put.bin")
equal "forward upload status" "$code" 201
equal "forward upload sha256" "$(sha_of "$stored")" "$want"
n=$(end_bytes PUT "$H_PORT" bytes_up)
equal "log: forward upload bytes_up" "${n:-none}" "$SIZE"
rm -f "$stored"

# With Expect: 100-continue, the interim response must pass through.
code=$(px_curl --max-time 120 -H 'Expect: 100-continue' \
	-T "$T/www/big.bin" -o /dev/null -w '%{http_code}' \
	"http://web.test:$H_PORT/upload/put.bin")
equal "forward upload with 100-continue status" "$code" 201
equal "forward upload with 100-continue sha256" "$(sha_of "$stored")" "$want"
rm -f "$stored"

# From standard input curl sends the body chunked.
code=$(px_curl --max-time 120 -T - -o /dev/null -w '%{http_code}' \
	"http://web.test:$H_PORT/upload/put.bin" <"$T/www/big.bin")
equal "chunked upload status" "$code" 201
equal "chunked upload sha256" "$(sha_of "$stored")" "$want"
n=$(end_bytes PUT "$H_PORT" bytes_up)
if [ "${n:-0}" -gt "$SIZE" ]; then ok; else
	bad "log: chunked upload bytes_up ${n:-none}, want more than $SIZE"
fi
rm -f "$stored"

code=$(px_curl --max-time 120 --cacert "$T/ca.pem" -T "$T/www/big.bin" \
	-o /dev/null -w '%{http_code}' "https://web.test:$S_PORT/upload/put.bin")
equal "CONNECT upload status" "$code" 201
equal "CONNECT upload sha256" "$(sha_of "$stored")" "$want"
rm -f "$stored"

# --- backpressure: a client that does not read costs the proxy little ----------
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$PX_PID/status"; }
# max_growth: the most the proxy's RSS grows over 2 s of sampling, in KiB.
max_growth() {
	local base max r i
	base=$(rss_kb) max=$base
	for ((i = 0; i < 100; i++)); do
		r=$(rss_kb)
		[ "$r" -gt "$max" ] && max=$r
		sleep 0.02
	done
	echo $((max - base))
}
for via in forward tunnel; do
	open_conn
	if [ "$via" = tunnel ]; then
		send "$CONN" 'CONNECT web.test:%s HTTP/1.1\r\nHost: web.test:%s\r\n\r\n' "$H_PORT" "$H_PORT"
		read_response "$CONN" 10
		equal "backpressure ($via): tunnel open" "$RESP_STATUS" 200
		send "$CONN" 'GET /big.bin HTTP/1.1\r\nHost: web.test\r\n\r\n'
	else
		send "$CONN" 'GET http://web.test:%s/big.bin HTTP/1.1\r\nHost: web.test\r\n\r\n' "$H_PORT"
	fi
	grew=$(max_growth)
	if [ "$grew" -lt $((16 * 1024)) ]; then ok; else
		bad "backpressure ($via): the proxy grew by $grew KiB for a client that does not read"
	fi
	exec {CONN}>&-
done
# What the proxy took from nginx for them: socket buffers' worth, not 64 MiB.
wait_for 5 test "$(count_in "$PX_LOG" '"event":"end"')" -ge 8
n=$(log_query "$PX_LOG" 'select(.event == "end" and .port == '"$H_PORT"' and
	.bytes_down > 0 and .bytes_down < '"$((SIZE / 4))"')' | wc -l)
equal "backpressure: both stopped reading upstream early (log)" "$n" 2

# --- the tunnels' end records -------------------------------------------------
ups=$(log_query "$PX_LOG" 'select(.event == "end" and .method == "CONNECT") | .bytes_up')
downs=$(log_query "$PX_LOG" 'select(.event == "end" and .method == "CONNECT") | .bytes_down')
big_up=$(awk -v s="$SIZE" '$1 >= s { n++ } END { print n + 0 }' <<<"$ups")
big_down=$(awk -v s="$SIZE" '$1 >= s { n++ } END { print n + 0 }' <<<"$downs")
equal "log: one tunnel carried 64 MiB up" "$big_up" 1
equal "log: one tunnel carried 64 MiB down" "$big_down" 1
# (the backpressure tunnel sent little: it does not count above)

stop_proxy large
audit_wellformed large "$PX_LOG"
ph_end
