#!/usr/bin/env bash
# Scenario: the broker's metrics (`pinhole proxy --broker PATH --metrics
# unix:SOCK`; then --metrics 127.0.0.1:0).  Two sandboxes (one makes an
# allowed request, the other asks for a denied host) and one client
# refused (a policy not granted to it); then a scrape shows the requests
# by decision, host and rule, the denial, the bytes, no sandbox active,
# 3 engines started in all (the refused client had one too: the broker
# forks before it reads a request), and the refusal by reason.  The counts of each
# sandbox come from its own engine process through the relay.
# usage: broker_metrics.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/broker_lib.sh"
ph_begin broker_metrics nginx curl jq setpriv timeout
bk_setup
U=${BK_USERS[0]}
W=$T/u$U/work

mkdir -p "$T/www"
echo "small body" >"$T/www/small"
chmod -R a+rX "$T/www"
web_conf() {
	cat <<-EOF
		server { listen 127.0.0.1:$WEB_PORT; root $T/www; }
	EOF
}
nginx_serve web WEB_PID WEB_PORT web_conf || exit 1
cat >"$T/conf/web.conf" <<EOC
resolve big.test 127.0.0.1
allow big.test:$WEB_PORT { private }
EOC
cp "$T/conf/web.conf" "$T/conf/other.conf"
# `other` is granted to a uid nobody here has.
cat >"$T/conf/broker.conf" <<EOC
broker {
	policy web web.conf
	users $U
}
broker {
	policy other other.conf
	users 4244
}
EOC
chmod 644 "$T/conf"/*.conf

# traffic: the two sandboxes and the refused client.
traffic() {
	brun "$U" "$W" -p web -- curl -sS --max-time 20 "http://big.test:$WEB_PORT/small"
	equal "$1: the allowed request" "$RC/$OUT" "0/small body"
	brun "$U" "$W" -p web -- curl -fsS --max-time 20 "http://denied.test:$WEB_PORT/small"
	check "$1: the denied request fails" test "$RC" -ne 0
	expect "$1: the denied host in the summary" "$ERR" "denied: denied\\.test:$WEB_PORT"
	brun "$U" "$W" -p other -- true
	equal "$1: the refused client" "$RC" 125
}

# settled URL: the scrape shows no sandbox active (the broker reaps its
# engines and absorbs their last counts asynchronously).
settled() {
	bk_scrape "$1" && [ "$(metric "$MBODY" pinhole_sandboxes_active)" = 0 ]
}

# counts NAME URL: the scrape after traffic.
counts() {
	local name=$1 url=$2 v
	check "$name: the sandboxes ended (none active)" wait_for 20 settled "$url"
	bk_scrape "$url"
	expect "$name: the allowed request by host and rule" "$MBODY" \
		"^pinhole_requests_total\\{decision=\"allow\",host=\"big\\.test\",port=\"$WEB_PORT\",rule=\"[^\"]*web\\.conf:2\",via=\"[a-z]+\"\\} 1$"
	expect "$name: the denied request by host" "$MBODY" \
		"^pinhole_requests_total\\{decision=\"deny\",host=\"denied\\.test\",port=\"$WEB_PORT\",rule=\"[^\"]*\",via=\"[a-z]+\"\\} 1$"
	equal "$name: one denial" "$(metric "$MBODY" pinhole_denials_total)" 1
	v=$(metric "$MBODY" 'pinhole_bytes_total\{direction="down"\}')
	check "$name: bytes down counted ($v)" test "${v:-0}" -gt 0
	equal "$name: sandboxes active" "$(metric "$MBODY" pinhole_sandboxes_active)" 0
	equal "$name: sandboxes in all" "$(metric "$MBODY" pinhole_sandboxes_total)" 3
	equal "$name: refused for the policy" \
		"$(metric "$MBODY" 'pinhole_broker_refused_total\{reason="policy"\}')" 1
	equal "$name: connections active" "$(metric "$MBODY" pinhole_connections_active)" 0
}

# --- on a Unix socket ----------------------------------------------------------
MSOCK=$BK/run/metrics.sock
start_broker broker "$T/conf/broker.conf" --metrics "unix:$MSOCK" || exit 1
msock_up() { [ -S "$MSOCK" ] || pid_done "$BK_PID"; }
check "the metrics socket is there" wait_for 10 msock_up
# A fresh broker's scrape already has its series.
bk_scrape "unix:$MSOCK"
equal "before any client: sandboxes active" "$(metric "$MBODY" pinhole_sandboxes_active)" 0
equal "before any client: sandboxes in all" "$(metric "$MBODY" pinhole_sandboxes_total)" 0
traffic unix
counts unix "unix:$MSOCK"
stop_proxy broker "$BK_PID" "$BK_ERR"

# --- on a loopback port ----------------------------------------------------------
start_broker broker2 "$T/conf/broker.conf" --metrics 127.0.0.1:0 || exit 1
metrics_up() { file_has "$BK_ERR" '^pinhole: metrics on ' || pid_done "$BK_PID"; }
wait_for 10 metrics_up
M_PORT=$(sed -n 's/^pinhole: metrics on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$BK_ERR" | head -1)
if [ -z "$M_PORT" ]; then
	bad "port: no 'pinhole: metrics on 127.0.0.1:PORT' line:"
	sed 's/^/  | /' "$BK_ERR"
else
	ok
	traffic port
	counts port "http://127.0.0.1:$M_PORT/metrics"
fi
stop_proxy broker2 "$BK_PID" "$BK_ERR"
bk_end
