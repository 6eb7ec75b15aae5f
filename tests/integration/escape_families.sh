#!/usr/bin/env bash
# Escape probe: socket families.  Inside `pinhole run`, only AF_UNIX,
# AF_INET, AF_INET6 and AF_NETLINK (route, sock_diag, uevent) sockets can
# be made; every other family fails with EAFNOSUPPORT (vsock's port table
# is the host's), other netlink protocols with EPROTONOSUPPORT, and
# socketpair is AF_UNIX only.  Through the i386 ABI the direct calls meet
# the same rules and socketcall(2) fails with ENOSYS.  Nothing is ever
# connected: vsock sockets are only created (and refused).
# usage: escape_families.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/probe_lib.sh"
ph_begin escape_families
PROBE=$(dirname "$PINHOLE")/probe_families
if [ ! -x "$PROBE" ]; then
	echo "escape_families: CANNOT RUN: no $PROBE" >&2
	exit 77
fi

# The prober runs from the work directory: the sandbox has its own /tmp.
mkdir -p "$T/work"
cp "$PROBE" "$T/work/probe_families"
prun -- ./probe_families
equal "status" "$RC" 0
for f in unix inet inet6 netlink-route netlink-uevent netlink-sock-diag \
	socketpair-unix; do
	expect "$f: allowed" "$OUT" "^$f: ok$"
done
for f in vsock bluetooth alg can xdp key packet packet-dgram tipc rds \
	appletalk x25 ax25 llc qipcrtr smc mctp kcm ib nfc ieee802154 \
	phonet caif pppox rxrpc socketpair-inet; do
	expect "$f: refused" "$OUT" "^$f: refused EAFNOSUPPORT$"
done
for p in audit xfrm generic netfilter; do
	expect "netlink-$p: refused" "$OUT" \
		"^netlink-$p: refused EPROTONOSUPPORT$"
done
refuse "nothing else made" "$OUT" \
	'^(vsock|packet|alg|key|netlink-(audit|xfrm|generic|netfilter)): ok$'

# x32 (bit 30): the filter answers, whether or not the kernel has x32.
if [ "$(uname -m)" = x86_64 ]; then
	expect "x32 vsock: refused" "$OUT" '^x32 vsock: refused EAFNOSUPPORT$'
	i386_abi_host
fi
if grep -q '^i386: absent$' <<<"$OUT"; then
	echo "escape_families: NOTE: $(uname -m) has no i386 ABI; only the native one checked" >&2
	check "no i386 ABI on $(uname -m)" test "$(uname -m)" != x86_64
elif [ "$I386_ABI" = absent ]; then
	i386_absent_checked "socket families"
else
	i386_present_checked "socket families"
	expect "i386 unix: allowed" "$OUT" '^i386 unix: ok$'
	expect "i386 inet: allowed" "$OUT" '^i386 inet: ok$'
	for f in vsock alg packet key can tipc; do
		expect "i386 $f: refused" "$OUT" "^i386 $f: refused EAFNOSUPPORT$"
	done
	expect "i386 netlink-audit: refused" "$OUT" \
		'^i386 netlink-audit: refused EPROTONOSUPPORT$'
	refuse "i386 socketcall: nothing made" "$OUT" '^i386-socketcall [a-z0-9-]*: ok$'
	expect "i386 socketcall vsock: ENOSYS" "$OUT" \
		'^i386-socketcall vsock: refused ENOSYS$'
fi
ph_end
