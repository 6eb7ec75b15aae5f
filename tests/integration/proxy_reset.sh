#!/usr/bin/env bash
# Scenario: a client that dies mid-download.  curl fetches a 32 MiB file
# at 1 KB/s through the proxy, so the response fills every buffer between
# them; once its head came, curl is killed (SIGKILL: its socket, with
# unread bytes, closes with a reset).  On each path -- a plain HTTP
# request, a CONNECT tunnel, and an intercepted request inside TLS with a
# credential injected -- the proxy notices at once: the session ends with
# the client's error in its end record, its upstream connection closes
# and the proxy's open-connection gauge falls to 0.  (A reset is never a
# half-close: libevent reports the failed write and the read of 0 bytes
# after it as one event, EOF|ERROR, which once kept an intercepted
# session, its upstream and its buffers until the proxy stopped.)
# usage: proxy_reset.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin proxy_reset nginx openssl curl jq

gen_certs >/dev/null || exit 1
start_nginx || exit 1
head -c $((32 << 20)) /dev/urandom >"$T/www/big"
echo "TOKEN$$" >"$T/tok"
chmod 600 "$T/tok"

# The pinned CA the intercepting proxy signs with; curl trusts it.
gen_pin_ca || exit 1
cat >"$T/p.conf" <<EOF
ca cert $T/pin-ca.pem key $T/pin/ca.key
secret tok file $T/tok
resolve web.test 127.0.0.1
resolve other.test 127.0.0.1
allow web.test:$H_PORT { private }
allow other.test:$S_PORT { private }
allow web.test:$S_PORT { private upstream-ca $T/ca.pem inject bearer tok }
EOF
start_proxy reset "$T/p.conf" --metrics 127.0.0.1:0 || exit 1
metrics_up() { file_has "$PX_ERR" '^pinhole: metrics on ' || pid_done "$PX_PID"; }
wait_for 10 metrics_up
M_PORT=$(sed -n 's/^pinhole: metrics on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$PX_ERR" | head -1)
# active: the proxy's open client connections, from /metrics.
active() {
	curl -q -sS --max-time 10 "http://127.0.0.1:$M_PORT/metrics" |
		sed -n 's/^pinhole_connections_active \([0-9]*\)$/\1/p'
}
# ends FILTER: the end records that match (a jq condition).
ends() { jq -c "select(.event == \"end\" and $1)" "$PX_LOG" 2>/dev/null; }
has_end() { [ -n "$(ends "$1")" ]; }
head_came() { file_has "$1" '^(HTTP/1\.1 200 OK|Content-Length: 33554432)'; }

# killed NAME URL FILTER [CURL-ARGS...]: the download of URL, killed once
# its head came; the end record that FILTER picks then says the client
# failed.
killed() {
	local name=$1 url=$2 filter=$3 pid
	shift 3
	rm -f "$T/$name.head"
	# curl itself, not in a function (whose subshell the kill would hit).
	curl -q -sS --max-time 60 -x "http://127.0.0.1:$PX_PORT" --limit-rate 1k \
		-o /dev/null -D "$T/$name.head" "$@" "$url" 2>/dev/null &
	pid=$!
	wait_for 20 head_came "$T/$name.head"
	check "$name: the response started" head_came "$T/$name.head"
	check "$name: no end record while it runs" test -z "$(ends "$filter")"
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
	wait_for 10 has_end "$filter"
	expect "$name: ended by the client's reset" "$(ends "$filter" | jq -r .error)" \
		'^client( connection failed|: Connection reset by peer|: Broken pipe)$'
	wait_for 10 test "$(active)" = 0
	equal "$name: no connection left open" "$(active)" 0
}

killed plain "http://web.test:$H_PORT/big" '.host == "web.test" and .method == "GET" and .path == "/big" and .port == '"$H_PORT"
killed tunnel "https://other.test:$S_PORT/big" '.host == "other.test" and .method == "CONNECT"' \
	--cacert "$T/ca.pem"
killed intercepted "https://web.test:$S_PORT/big" '.host == "web.test" and .path == "/big" and .port == '"$S_PORT" \
	--cacert "$T/pin-ca.pem"
# The intercepted request went out with the token (and it still works).
equal "intercepted: the request was allowed, the token injected" \
	"$(jq -r "select(.event == \"request\" and .path == \"/big\" and .port == $S_PORT) | .secret" "$PX_LOG")" tok
fetch "https://web.test:$S_PORT/index.html" --cacert "$T/pin-ca.pem"
equal "the proxy still serves" "$CODE $BODY" "200 hello from nginx"
refuse "the token is not in the log" "$(cat "$PX_LOG")" "TOKEN$$"

stop_proxy reset
ph_end
