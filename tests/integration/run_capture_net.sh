#!/usr/bin/env bash
# Scenario: capture, the sandbox's side (issue 12).  Inside `pinhole run`
# every address is local (routes "local 0.0.0.0/0 dev lo", "local ::/0"):
# a program that ignores the proxy variables and connects to 203.0.113.7
# on a captured port (80, 443, the policy's ports) reaches pinhole, which
# decides it (capture.c: no rule allows 203.0.113.7, so a reset and a
# "capture" record in the log); a port nothing captures is refused at
# once (ECONNREFUSED);
# a DNS query to any address reaches the stub; the command has ALL_PROXY
# and all_proxy for SOCKS, the proxy variables as before; -v says which
# mode is on; a port range too wide to capture is said on stderr.  With
# --no-capture a direct connection is unreachable (ENETUNREACH), as
# before.  Nothing leaves the sandbox's loopback: the addresses are
# documentation ones, answered inside.
# usage: run_capture_net.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin run_capture_net curl python3 bash
W=$T/work
mkdir -p "$W"
echo 'allow example.test:2222' >"$T/p.conf"
LOG=$T/audit.jsonl

# connect ADDR PORT: "NAME: connected" or "NAME: failed", and the time
# it took in ms; bash's /dev/tcp, which knows no proxy variable.
cat >"$W/conn.sh" <<'EOF'
t0=$EPOCHREALTIME
if (exec 3<>"/dev/tcp/$1/$2") 2>"err-$2"; then r=connected; else r=failed; fi
t1=$EPOCHREALTIME
ms=$(( (${t1/./} - ${t0/./}) / 1000 ))
echo "$1:$2: $r $ms ms $(tr '\n' ' ' <"err-$2")"
EOF

# One DNS query (A example.test) over UDP to ADDR:53: its id and rcode.
cat >"$W/q.py" <<'EOF'
import socket, struct, sys
q = struct.pack(">HHHHHH", 0x4242, 0x0100, 1, 0, 0, 0)
for label in ("example", "test"):
    q += bytes([len(label)]) + label.encode()
q += b"\0\0\1\0\1"
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
s.sendto(q, (sys.argv[1], 53))
r = s.recv(600)
print("dns %s: id=%x" % (sys.argv[1], struct.unpack(">H", r[:2])[0]))
EOF

prun -v -p "$T/p.conf" -- bash -c '
	env | grep -iE "^(all|http|https|no)_proxy=" | sort
	curl -s -m 5 --noproxy "*" -D - -o body http://203.0.113.7/ ||
		echo "curl rc=$?"
	cat body 2>/dev/null; echo
	bash conn.sh 203.0.113.7 80
	bash conn.sh 203.0.113.7 2222
	bash conn.sh 203.0.113.7 5555
	bash conn.sh 198.51.100.1 5555
	[ -n "$1" ] && bash conn.sh 2001:db8::7 443 && bash conn.sh 2001:db8::7 5555
	python3 q.py 192.0.2.53' - "$(have_ipv6 && echo 6)"
equal "status" "$RC" 0
# The connection to port 80 was accepted inside and answered by pinhole.
expect "captured: port 80 connects" "$OUT" '^203\.0\.113\.7:80: connected'
expect "captured: a policy port connects" "$OUT" '^203\.0\.113\.7:2222: connected'
refuse "captured: not unreachable" "$OUT$ERR" 'Network is unreachable'
if grep -q '^X-Pinhole-Reason: ' <<<"$OUT"; then
	ok
elif file_has "$LOG" '"via":"capture".*203\.0\.113\.7|203\.0\.113\.7.*"via":"capture"'; then
	ok
else
	bad "captured: answered by pinhole (X-Pinhole-Reason or a capture record)"
	printf '%s\n' "$OUT" | head -20 | sed 's/^/  | /'
fi
# A port no rule names: refused at once, on any address.
expect "uncaptured port: refused" "$OUT" \
	'^203\.0\.113\.7:5555: failed [0-9]+ ms .*Connection refused'
expect "uncaptured port, another address: refused" "$OUT" \
	'^198\.51\.100\.1:5555: failed [0-9]+ ms .*Connection refused'
slow=$(sed -n 's/^[0-9.]*:5555: failed \([0-9]*\) ms.*/\1/p' <<<"$OUT" |
	awk '$1 > 500' | head -1)
equal "uncaptured port: at once (slowest over 500 ms: none)" "$slow" ""
if have_ipv6; then
	expect "IPv6: port 443 connects" "$OUT" '^2001:db8::7:443: connected'
	expect "IPv6: uncaptured port refused" "$OUT" \
		'^2001:db8::7:5555: failed [0-9]+ ms .*Connection refused'
else
	echo "run_capture_net: no IPv6 on this host: ::/0 not checked"
fi
# DNS: a query to a documentation address is answered inside.
expect "DNS to 192.0.2.53: answered by the stub" "$OUT" '^dns 192\.0\.2\.53: id=4242$'
# The environment: SOCKS for ALL_PROXY, the proxy variables as before.
expect "ALL_PROXY" "$OUT" '^ALL_PROXY=socks5h://127\.0\.0\.1:1080$'
expect "all_proxy" "$OUT" '^all_proxy=socks5h://127\.0\.0\.1:1080$'
expect "http_proxy stays" "$OUT" '^http_proxy=http://127\.0\.0\.1:3128$'
expect "NO_PROXY stays" "$OUT" '^NO_PROXY=localhost,127\.0\.0\.1,::1$'
# -v: one line for the mode.
expect "-v: capture on" "$ERR" \
	'^pinhole: capture on: ports 80, 443, 2222; DNS answers allowed names with 198\.18\.0\.0/15 and 2001:2::/48$'
equal "-v: one mode line" "$(grep -c '^pinhole: capture o' <<<"$ERR")" 1

# --no-capture: nothing but the proxy, as before.
prun -v --no-capture -p "$T/p.conf" -- bash -c '
	env | grep -E "^ALL_PROXY="
	bash conn.sh 203.0.113.7 80
	bash conn.sh 203.0.113.7 2222'
equal "--no-capture: status" "$RC" 0
expect "--no-capture: port 80 unreachable" "$OUT" \
	'^203\.0\.113\.7:80: failed [0-9]+ ms .*Network is unreachable'
expect "--no-capture: a policy port unreachable" "$OUT" \
	'^203\.0\.113\.7:2222: failed [0-9]+ ms .*Network is unreachable'
expect "--no-capture: SOCKS stays (ALL_PROXY)" "$OUT" '^ALL_PROXY=socks5h://'
expect "--no-capture: -v says so" "$ERR" \
	'^pinhole: capture off \(--no-capture\): only programs that honour the proxy variables get out$'

# A range too wide to capture: said in one line; its ports refused.
printf 'allow wide.test:10000-10999\nallow example.test:2222\n' >"$T/wide.conf"
prun -p "$T/wide.conf" -- bash conn.sh 203.0.113.7 10001
equal "wide range: status" "$RC" 0
expect "wide range: said" "$ERR" \
	'^pinhole: capture: 1000 ports of the policy.s allow rules are not captured .*need the proxy variables'
expect "wide range: its ports refused" "$OUT" \
	'^203\.0\.113\.7:10001: failed [0-9]+ ms .*Connection refused'

ph_end
