#!/usr/bin/env bash
# Scenario: the network of `pinhole run` with real curl inside against
# nginx (HTTP and HTTPS) on the host's loopback: the proxy variables lead
# out, on 127.0.0.1:3128 and [::1]:3128; allowed, denied and private
# targets; --allow; with --no-capture a direct connection fails at once
# (ENETUNREACH) and the host's loopback is not the sandbox's; the last
# stderr line names the denials; the audit log and `pinhole log`.
# usage: run_network.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin run_network nginx openssl curl jq
gen_certs || exit 1
mkdir -p "$T/www"
echo "allowed file" >"$T/www/a.txt"
start_nginx || exit 1
W=$T/work
mkdir -p "$W"
cp "$T/ca.pem" "$W/ca.pem"
cat >"$T/p.conf" <<EOC
resolve web.test 127.0.0.1
resolve nopriv.test 127.0.0.1
allow web.test:$H_PORT,$S_PORT { private }
allow nopriv.test:$H_PORT
EOC

prun -p "$T/p.conf" -- sh -c "
	curl -sS http://web.test:$H_PORT/a.txt
	curl -sS --cacert ca.pem https://web.test:$S_PORT/a.txt
	curl -sS -o /dev/null -D deny.h -w 'deny %{http_code}\n' http://deny.test/
	curl -sS -o /dev/null -w 'deny-tls %{http_connect}\n' https://deny.test/ 2>/dev/null
	curl -sS -o /dev/null -D priv.h -w 'nopriv %{http_code}\n' http://nopriv.test:$H_PORT/a.txt
	cat deny.h priv.h"
equal "status" "$RC" 0
expect "allowed over plain HTTP" "$OUT" '^allowed file$'
equal "allowed over HTTPS (CONNECT)" "$(grep -c '^allowed file$' <<<"$OUT")" 2
expect "denied: 403" "$OUT" '^deny 403$'
expect "denied CONNECT: 403" "$OUT" '^deny-tls 403$'
expect "denied: the reason" "$OUT" '^X-Pinhole-Reason: .*deny\.test'
expect "private address without 'private': 403" "$OUT" '^nopriv 403$'
expect "private refusal: the reason" "$OUT" "^X-Pinhole-Reason: .*127\\.0\\.0\\.1.*private"
expect "last line: the denials" "$(last_line "$ERR")" \
	"^pinhole: 3 denied: deny\\.test:80 \\(x1\\), deny\\.test:443 \\(x1\\), nopriv\\.test:$H_PORT \\(x1\\); see $T/audit\\.jsonl$"

if have_ipv6; then
	prun -p "$T/p.conf" -- curl -sS -x 'http://[::1]:3128' \
		"http://web.test:$H_PORT/a.txt"
	equal "the proxy on [::1]:3128" "$OUT" "allowed file"
else
	echo "run_network: no IPv6 on this host: [::1]:3128 not checked"
fi

# --allow: an address rule names the address, so loopback is allowed.
prun -a "127.0.0.1:$H_PORT" -- curl -sS --noproxy '' \
	-x http://127.0.0.1:3128 "http://127.0.0.1:$H_PORT/a.txt"
equal "--allow: fetched" "$OUT" "allowed file"
check "--allow: rule in the log" file_has "$T/audit.jsonl" '"rule":"--allow:1"'

# Nothing but the proxy (--no-capture; capture: run_capture_net.sh): a
# direct connection fails at once, and the host's loopback services are
# not there.
prun --no-capture -p "$T/p.conf" -- bash -c '
	exec 3<>/dev/tcp/192.0.2.1/80 && echo connected
	exec 3<>/dev/tcp/127.0.0.1/'"$H_PORT"' && echo reached-host'
expect "direct connect: unreachable" "$ERR" 'Network is unreachable'
refuse "direct connect: never connected" "$OUT" 'connected'
expect "host loopback: refused" "$ERR" 'Connection refused'
refuse "host loopback: not reached" "$OUT" 'reached-host'

# The audit log: every line parses, one run id per run, records complete.
check "audit: every line parses" jq -e . "$T/audit.jsonl" >/dev/null
n=$(jq -r 'select(.event=="request" and .host=="deny.test") | .decision' \
	"$T/audit.jsonl" | sort -u)
equal "audit: deny.test denied" "$n" deny
runs=$(jq -r .sandbox "$T/audit.jsonl" | sort -u | wc -l)
check "audit: one run id per run ($runs)" test "$runs" -ge 3
"$PINHOLE" log "$T/audit.jsonl" >"$T/review" 2>&1
equal "pinhole log: status" "$?" 0
check "pinhole log: deny.test listed" file_has "$T/review" 'deny\.test'

ph_end
