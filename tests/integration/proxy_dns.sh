#!/usr/bin/env bash
# Scenario: names resolved by the proxy through a DNS server (dnsmasq on a
# loopback port, --dns 127.0.0.1:PORT): an A record to 127.0.0.1 with
# `private` is served, without it refused; NXDOMAIN and a silent DNS
# server give 502 with the reason; an AAAA-only name reaches nginx on [::1].
# usage: proxy_dns.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin proxy_dns nginx openssl dnsmasq socat curl jq

gen_certs || exit 1
start_nginx || exit 1
start_dnsmasq --host-record=ok.test,127.0.0.1 \
	--host-record=noprivate.test,127.0.0.1 \
	--host-record=six.test,::1 || exit 1

pol=$T/policy.conf
cat >"$pol" <<EOF
timeout connect 2s
allow ok.test:$H_PORT,$S_PORT { private }
allow noprivate.test:$H_PORT
allow nx.test:$H_PORT { private }
allow six.test:$H_PORT { private }
EOF
start_proxy dns "$pol" --dns "127.0.0.1:$DNS_PORT" || exit 1

fetch "http://ok.test:$H_PORT/index.html"
equal "A record: status" "$CODE" 200
equal "A record: body" "$BODY" "hello from nginx"
fetch "https://ok.test:$S_PORT/index.html" --cacert "$T/ca.pem"
equal "A record through CONNECT: status" "$CODE" 200

fetch "http://noprivate.test:$H_PORT/"
equal "A record to loopback without private: status" "$CODE" 403
expect "A record to loopback without private: reason" "$HEADERS" \
	"^X-Pinhole-Reason: noprivate.test resolves to 127.0.0.1:$H_PORT \(loopback\)"

fetch "http://nx.test:$H_PORT/"
equal "NXDOMAIN: status" "$CODE" 502
expect "NXDOMAIN: reason" "$HEADERS" '^X-Pinhole-Reason: .*nx\.test.*(NXDOMAIN|no such domain)'

if have_ipv6; then
	fetch "http://six.test:$H_PORT/whoami"
	equal "AAAA only: status" "$CODE" 200
	equal "AAAA only: body" "$BODY" "host=six.test uri=/whoami"
	n=$(log_query "$PX_LOG" 'select(.event == "end" and .host == "six.test" and
		.addr == "[::1]:'"$H_PORT"'")' | wc -l)
	equal "AAAA only: log names [::1]" "$n" 1
else
	bad "AAAA only: CANNOT RUN: no ::1 on this machine"
fi

n=$(log_query "$PX_LOG" 'select(.event == "end" and .host == "ok.test" and
	.addr == "127.0.0.1:'"$H_PORT"'" and .status == 200)' | wc -l)
equal "log: the A record's address" "$n" 1
n=$(log_query "$PX_LOG" 'select(.event == "end" and .host == "nx.test" and
	.status == 502 and (.error | test("NXDOMAIN|no such domain")))' | wc -l)
equal "log: the NXDOMAIN end record" "$n" 1
stop_proxy dns
audit_wellformed dns "$PX_LOG"

# --- a DNS server that never answers: bounded by `timeout connect` ---------------
start_socat silentdns udp -u "UDP-RECV:@PORT@,bind=127.0.0.1" /dev/null || exit 1
cat >"$T/slow.conf" <<EOF
timeout connect 1s
allow ok.test:$H_PORT { private }
EOF
start_proxy slowdns "$T/slow.conf" --dns "127.0.0.1:$SOCAT_PORT" || exit 1
start=$(date +%s%N)
fetch "http://ok.test:$H_PORT/"
ms=$((($(date +%s%N) - start) / 1000000))
equal "DNS timeout: status" "$CODE" 502
expect "DNS timeout: reason" "$HEADERS" '^X-Pinhole-Reason: .*ok\.test.*(timeout|timed out)'
if [ "$ms" -ge 500 ] && [ "$ms" -lt 6000 ]; then ok; else
	bad "DNS timeout: answered after $ms ms, want about 1000"
fi
stop_proxy slowdns
audit_wellformed slowdns "$PX_LOG"
ph_end
