#!/usr/bin/env bash
# Scenario: the SOCKS5 front (`pinhole proxy --socks`).  curl
# --socks5-hostname to an allowed name pinned with `resolve` (served,
# logged via socks) and to a denied one (reply 2 at once, logged deny);
# curl --socks5 to 127.0.0.1 and [::1] literals (address rules with
# `private`); netcat-openbsd's SOCKS5 client to a raw TCP echo server;
# and raw handshakes: a malformed greeting (closed, no reply), no
# acceptable method (0xFF), BIND and UDP ASSOCIATE (7), address type 9
# (8), an upstream that refuses (5), a name DNS does not know (4).
# Everything on loopback; names come from `resolve` or dnsmasq on
# 127.0.0.1.
# usage: proxy_socks.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin proxy_socks nginx openssl dnsmasq socat curl jq nc python3

gen_certs || exit 1
start_nginx || exit 1
start_socat echo TCP-LISTEN:@PORT@,bind=127.0.0.1,reuseaddr,fork \
	EXEC:cat || exit 1
ECHO_PORT=$SOCAT_PORT
start_dnsmasq --host-record=known.test,127.0.0.1 || exit 1
DEAD_PORT=$(rand_port) || exit 1

pol=$T/policy.conf
cat >"$pol" <<EOF
timeout connect 2s
resolve web.test 127.0.0.1
resolve refused.test 127.0.0.1
allow web.test:$H_PORT,$S_PORT { private }
allow 127.0.0.1:$H_PORT,$ECHO_PORT { private }
allow [::1]:$H_PORT { private }
allow refused.test:$DEAD_PORT { private }
allow nowhere.test:$H_PORT { private }
EOF
start_proxy socks "$pol" --socks 127.0.0.1:0 --dns "127.0.0.1:$DNS_PORT" ||
	exit 1
SP=$(sed -n 's/^pinhole: SOCKS listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' \
	"$PX_ERR" | head -1)
if [ -z "$SP" ]; then
	bad "no 'SOCKS listening on' line"
	ph_end
fi

# socks_curl ARGS...: curl through the SOCKS listener, bounded in time.
socks_curl() { curl -q -sS --max-time 20 "$@"; }

# --- curl -------------------------------------------------------------------
body=$(socks_curl --socks5-hostname "127.0.0.1:$SP" \
	"http://web.test:$H_PORT/index.html" 2>"$T/c.err")
equal "socks5h to an allowed name: body" "$body" "hello from nginx"
body=$(socks_curl --socks5-hostname "127.0.0.1:$SP" --cacert "$T/ca.pem" \
	"https://web.test:$S_PORT/index.html" 2>"$T/c.err")
equal "socks5h, then TLS to the server: body" "$body" "hello from nginx"

start=$(date +%s%N)
socks_curl --socks5-hostname "127.0.0.1:$SP" "http://evil.test:$H_PORT/" \
	>/dev/null 2>"$T/c.err"
rc=$? ms=$((($(date +%s%N) - start) / 1000000))
equal "denied name: curl fails (SOCKS)" "$rc" 97
expect "denied name: reply 2" "$(cat "$T/c.err")" '\(2\)'
[ "$ms" -lt 3000 ] && ok || bad "denied name took $ms ms"

body=$(socks_curl --socks5 "127.0.0.1:$SP" \
	"http://127.0.0.1:$H_PORT/index.html" 2>"$T/c.err")
equal "socks5 to 127.0.0.1: body" "$body" "hello from nginx"
if have_ipv6; then
	body=$(socks_curl --socks5 "127.0.0.1:$SP" \
		"http://[::1]:$H_PORT/index.html" 2>"$T/c.err")
	equal "socks5 to [::1]: body" "$body" "hello from nginx"
else
	bad "no IPv6 on lo: the [::1] case cannot run"
fi
socks_curl --socks5 "127.0.0.1:$SP" "http://127.0.0.2:$H_PORT/" \
	>/dev/null 2>"$T/c.err"
expect "socks5 to an address no rule names: reply 2" "$(cat "$T/c.err")" '\(2\)'

# --- raw TCP (netcat-openbsd) -----------------------------------------------
got=$(printf 'ping through socks\n' |
	timeout 10 nc -N -X 5 -x "127.0.0.1:$SP" 127.0.0.1 "$ECHO_PORT" 2>&1)
equal "nc -X 5: echoed" "$got" "ping through socks"

# --- raw handshakes ---------------------------------------------------------
# socks_raw HEX: sends the bytes HEX to the SOCKS listener, then reads
# until it closes (5 s at most); sets SR to what came back, in hex
# ("timeout" if it did not close).
socks_raw() {
	SR=$(python3 - "$SP" "$1" <<-'PY'
		import socket, sys
		s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5)
		s.sendall(bytes.fromhex(sys.argv[2]))
		got = b""
		try:
		    while True:
		        b = s.recv(4096)
		        if not b:
		            break
		        got += b
		except socket.timeout:
		    got = b"timeout"
		except ConnectionResetError:
		    pass
		print("timeout" if got == b"timeout" else got.hex())
	PY
	)
}
hport() { printf '%04x' "$1"; }
hex() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n'; }
hname() { printf '%02x' "${#1}" && hex "$1"; }
GREET=050100
ZERO=000000000000 # 0.0.0.0:0

socks_raw 0401005000000001
equal "malformed greeting (SOCKS4): closed, nothing sent" "$SR" ""
socks_raw 05020102
equal "no acceptable method: 05ff" "$SR" 05ff
socks_raw "${GREET}050200017f000001$(hport "$H_PORT")"
equal "BIND: reply 7" "$SR" "050005070001$ZERO"
socks_raw "${GREET}050300017f000001$(hport "$H_PORT")"
equal "UDP ASSOCIATE: reply 7" "$SR" "050005070001$ZERO"
socks_raw "${GREET}050100097f000001$(hport "$H_PORT")"
equal "address type 9: reply 8" "$SR" "050005080001$ZERO"
socks_raw "${GREET}05010003$(hname refused.test)$(hport "$DEAD_PORT")"
equal "upstream refused: reply 5" "$SR" "050005050001$ZERO"
socks_raw "${GREET}05010003$(hname nowhere.test)$(hport "$H_PORT")"
equal "a name DNS does not know: reply 4" "$SR" "050005040001$ZERO"
socks_raw "${GREET}05010003$(hname known.test)$(hport "$H_PORT")"
equal "a name no rule allows (raw): reply 2" "$SR" "050005020001$ZERO"
# Greeting, request and data at once: the tunnel carries the data.
socks_raw "${GREET}05010003$(hname web.test)$(hport "$H_PORT")$(hex \
	$'GET /whoami HTTP/1.0\r\nHost: web.test\r\n\r\n')"
expect "greeting, request and data at once: success, then the response" \
	"$SR" "^050005000001${ZERO}$(hex 'HTTP/1.1 200')"

# --- the audit log ----------------------------------------------------------
stop_proxy socks
log=$PX_LOG
audit_wellformed socks "$log"
n=$(log_query "$log" 'select(.via != "socks")' | wc -l)
equal "log: every record says via socks" "$n" 0
n=$(log_query "$log" 'select(.event == "request" and .method == "CONNECT" and
	.host == "web.test" and .decision == "allow")' | wc -l)
[ "$n" -ge 3 ] && ok || bad "log: allowed CONNECTs to web.test ($n)"
n=$(log_query "$log" 'select(.event == "end" and .host == "web.test" and
	.status == 200 and .bytes_down > 0)' | wc -l)
[ "$n" -ge 3 ] && ok || bad "log: end records of the web.test tunnels ($n)"
n=$(log_query "$log" 'select(.event == "request" and .host == "evil.test" and
	.decision == "deny" and .method == "CONNECT")' | wc -l)
equal "log: the denied name" "$n" 1
n=$(log_query "$log" 'select(.event == "request" and .host == "::1" and
	.decision == "allow")' | wc -l)
equal "log: the [::1] CONNECT" "$n" 1
n=$(log_query "$log" 'select(.event == "end" and .host == "127.0.0.1" and
	.port == '"$ECHO_PORT"' and .status == 200 and .bytes_up == 19)' | wc -l)
equal "log: the raw TCP tunnel, 19 bytes up" "$n" 1
n=$(log_query "$log" 'select(.event == "request" and .decision == "deny" and
	(.reason | test("only CONNECT")))' | wc -l)
equal "log: BIND and UDP ASSOCIATE refused" "$n" 2
n=$(log_query "$log" 'select(.event == "request" and .decision == "deny" and
	(.reason | test("address type")))' | wc -l)
equal "log: address type 9 refused" "$n" 1
n=$(log_query "$log" 'select(.event == "request" and .decision == "deny" and
	(.reason | test("no \"no authentication\"")))' | wc -l)
equal "log: no acceptable method" "$n" 1
n=$(log_query "$log" 'select(.event == "end" and .host == "refused.test" and
	.status == 502 and (.error | test("refused")))' | wc -l)
equal "log: the refused upstream" "$n" 1
ph_end
