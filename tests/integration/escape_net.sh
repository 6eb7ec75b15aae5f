#!/usr/bin/env bash
# Escape scenario, the network below the proxy: no raw, packet or ICMP
# echo socket (AF_INET/AF_INET6 SOCK_RAW, AF_PACKET, SOCK_PACKET, ping
# sockets), no change to the sandbox's interfaces, addresses or routes
# over netlink, only lo exists.  Without capture (--no-capture) no route
# out: a direct connection or datagram fails at once with ENETUNREACH.
# With capture (the default) a port nobody captures is refused at once
# (ECONNREFUSED).  Either way a service on the host's loopback is not
# reached.
# Prober: tests/escape/escape.c.
# usage: escape_net.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/probe_lib.sh"
ph_begin escape_net socat
W=$T/work
probe_init "$W"
# A service on the host's loopback that must stay out of reach.
start_socat host-svc TCP-LISTEN:@PORT@,bind=127.0.0.1,reuseaddr,fork \
	SYSTEM:'echo reached' || exit 1

v6=()
have_ipv6 && v6=(connect 2001:db8::1 443)
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

# Capture on: the same sockets refused; every address is local now, so a
# port that nothing captures (5555: no allow rule names it; the host's
# service port) is refused at once, not unreachable, and the host's
# service is not reached.
v6=()
have_ipv6 && v6=(connect 2001:db8::1 5555)
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

ph_end
