#!/usr/bin/env bash
# Escape scenario, the network below the proxy: no raw, packet or ICMP
# echo socket (AF_INET/AF_INET6 SOCK_RAW, AF_PACKET, SOCK_PACKET, ping
# sockets), no change to the sandbox's interfaces, addresses or routes
# over netlink, only lo exists.  Without capture (--no-capture) no route
# out: a direct connection or datagram fails at once with ENETUNREACH.
# With capture (the default) a port nobody captures is refused at once
# (ECONNREFUSED).  Either way a service on the host's loopback is not
# reached.  The ICMP sockets (ping, raw) are refused by the sandbox's
# supervisor with the kernel's errors, and each kind leaves one record
# in the audit log (method ICMP or RAW, via capture, no host) and a
# place on pinhole's last stderr line; a real ping fails inside.
# Prober: tests/escape/escape.c.
# usage: escape_net.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/probe_lib.sh"
ph_begin escape_net socat ping busybox
W=$T/work
probe_init "$W"
[ "$(uname -m)" = x86_64 ] && i386_abi_host
# A service on the host's loopback that must stay out of reach.
start_socat host-svc TCP-LISTEN:@PORT@,bind=127.0.0.1,reuseaddr,fork \
	SYSTEM:'echo reached' || exit 1

# icmp_logged WHAT LOG: the probe's raw and ping sockets left one record
# per kind in LOG (ICMP twice: IPv4 and IPv6; RAW once for three), none
# with a host, and the last stderr line counts each once.
icmp_logged() {
	local q='select(.event == "request" and .via == "capture" and
		.decision == "deny" and (has("host") | not))'
	equal "$1: ICMP records" \
		"$(log_query "$2" "$q | select(.method == \"ICMP\")" | wc -l)" 2
	equal "$1: RAW records" \
		"$(log_query "$2" "$q | select(.method == \"RAW\")" | wc -l)" 1
	expect "$1: the ICMP reason" "$(cat "$2")" \
		'"reason":"ICMP \(ping\) is not carried: the sandbox has no ICMP socket; only TCP through the proxy and DNS leave it"'
	expect "$1: the ICMPv6 reason" "$(cat "$2")" '"reason":"ICMPv6 \(ping\)'
	local last
	last=$(last_line "$ERR")
	expect "$1: last line, ICMP" "$last" '^pinhole: [0-9]+ denied: .*(: |, )ICMP \(x1\)'
	expect "$1: last line, ICMPv6" "$last" '(: |, )ICMPv6 \(x1\)'
	expect "$1: last line, RAW" "$last" '(: |, )RAW \(x1\)'
	audit_wellformed "$1" "$2"
	expect "$1: pinhole log hints" "$("$PINHOLE" log "$2")" \
		'^      ICMP never leaves the sandbox; no rule can allow it$'
}

v6=()
have_ipv6 && v6=(connect 2001:db8::1 443)
RUN_LOG=$T/nocapture.jsonl
prun --no-capture -- "$PROBE" raw ifaces netlink connect 192.0.2.1 80 \
	"${v6[@]}" udp 192.0.2.1 53 connect 127.0.0.1 "$SOCAT_PORT" ifaces
equal "status" "$RC" 0
# Raw sockets need CAP_NET_RAW (EPERM); packet sockets are a family the
# filter refuses before that (EAFNOSUPPORT).
for a in raw-inet raw-inet-tcp raw-inet6 inet-packet; do
	refused "$a" EPERM
done
for a in packet-raw packet-dgram; do
	refused "$a" EAFNOSUPPORT
done
# ICMP echo: ping_group_range of a new network namespace is "1 0".
for a in ping-inet ping-inet6; do
	refused "$a" EACCES
done
for a in route-add-default addr-add link-add link-set-down; do
	refused "$a" EPERM
done
equal "only lo, before and after" "$(grep '^ifaces:' <<<"$OUT" | sort -u)" \
	"ifaces: lo"
refused connect:192.0.2.1 ENETUNREACH
if have_ipv6; then
	refused connect:2001:db8::1 'ENETUNREACH|EADDRNOTAVAIL'
else
	echo "escape_net: no IPv6 on this host: the IPv6 route not checked"
fi
refused udp-send:192.0.2.1 ENETUNREACH
# "At once": no SYN waits for a timeout anywhere.
slow=$(sed -n 's/^connect-ms: //p' <<<"$OUT" | awk '$1 > 500' | head -1)
equal "every connect answered at once (slowest over 500 ms: none)" "$slow" ""
refused "connect:127.0.0.1" ECONNREFUSED
none_through "network"
icmp_logged "no capture" "$RUN_LOG"

# Capture on: the same sockets refused; every address is local now, so a
# port that nothing captures (5555: no allow rule names it; the host's
# service port) is refused at once, not unreachable, and the host's
# service is not reached.
v6=()
have_ipv6 && v6=(connect 2001:db8::1 5555)
RUN_LOG=$T/capture.jsonl
prun -- "$PROBE" raw ifaces netlink connect 192.0.2.1 5555 "${v6[@]}" \
	connect 127.0.0.1 "$SOCAT_PORT" ifaces
equal "capture: status" "$RC" 0
for a in raw-inet raw-inet-tcp raw-inet6 inet-packet; do
	refused "$a" EPERM
done
for a in packet-raw packet-dgram; do
	refused "$a" EAFNOSUPPORT
done
for a in ping-inet ping-inet6; do
	refused "$a" EACCES
done
for a in route-add-default addr-add link-add link-set-down; do
	refused "$a" EPERM
done
equal "capture: only lo" "$(grep '^ifaces:' <<<"$OUT" | sort -u)" "ifaces: lo"
refused connect:192.0.2.1 ECONNREFUSED
have_ipv6 && refused connect:2001:db8::1 ECONNREFUSED
refused "connect:127.0.0.1" ECONNREFUSED
slow=$(sed -n 's/^connect-ms: //p' <<<"$OUT" | awk '$1 > 500' | head -1)
equal "capture: refused at once (slowest over 500 ms: none)" "$slow" ""
none_through "network with capture"
icmp_logged "capture" "$RUN_LOG"

# The i386 ABI's direct socket call meets the same supervisor.
if [ "$(uname -m)" = x86_64 ]; then
	RUN_LOG=$T/raw32.jsonl
	prun -- "$PROBE" raw32
	equal "i386: status" "$RC" 0
	if [ "$I386_ABI" = absent ]; then
		i386_absent_checked "i386 raw sockets"
	else
		i386_present_checked "i386 raw sockets"
		refused i386:raw-inet EPERM
		refused i386:ping-inet EACCES
		equal "i386: RAW and ICMP records" \
			"$(log_query "$RUN_LOG" 'select(.method == "RAW" or .method == "ICMP") | .method' | sort | tr '\n' ' ')" \
			'"ICMP" "RAW" '
	fi
fi

# Real clients.  iputils ping carries cap_net_raw as a file capability,
# which the sandbox never grants: its exec fails (EPERM) before any
# socket; pinhole says why and logs it as the raw socket it needed.
# busybox ping asks for a raw socket: refused, logged, counted.
RUN_LOG=$T/iputils.jsonl
prun -- ping -c1 -W1 203.0.113.7
equal "iputils ping: fails inside at exec" "$RC" 126
refuse "iputils ping: no reply" "$OUT" 'bytes from'
expect "iputils ping: why" "$ERR" \
	'^pinhole: ping: Operation not permitted: it needs the file capability cap_net_raw, which the sandbox never grants'
equal "iputils ping: one RAW record" \
	"$(log_query "$RUN_LOG" 'select(.method == "RAW" and .decision == "deny")' | wc -l)" 1
expect "iputils ping: last line" "$(last_line "$ERR")" \
	'^pinhole: 1 denied: RAW \(x1\); see '
RUN_LOG=$T/ping.jsonl
prun -- busybox ping -c1 -W1 203.0.113.7
check "busybox ping: fails inside (status $RC)" test "$RC" -ne 0
refuse "busybox ping: no reply" "$OUT" 'bytes from'
equal "busybox ping: one RAW record" \
	"$(log_query "$RUN_LOG" 'select(.method == "RAW" and .decision == "deny")' | wc -l)" 1
expect "busybox ping: last line" "$(last_line "$ERR")" \
	'^pinhole: 1 denied: RAW \(x1\); see '
if have_ipv6; then
	prun -- busybox ping -6 -c1 -W1 2001:db8::7
	check "busybox ping -6: fails inside (status $RC)" test "$RC" -ne 0
	expect "busybox ping -6: last line" "$(last_line "$ERR")" \
		'^pinhole: 1 denied: RAW \(x1\); see '
fi

ph_end
