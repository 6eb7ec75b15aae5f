/*
 * addr.h: what kind of address a destination is.  The proxy classifies
 * every address it is about to connect to, after DNS and for literal
 * targets alike, and refuses all but ADDR_GLOBAL unless the deciding rule
 * allows private destinations (policy_decision.allow_private).
 *
 * IPv6 forms that carry an IPv4 address at a known place (IPv4-mapped
 * ::ffff:0:0/96, IPv4-compatible ::/96, NAT64 64:ff9b::/96, 6to4
 * 2002::/16) are classified by the IPv4 address inside, so that
 * ::ffff:127.0.0.1 is loopback however it is spelled.  Where the place is
 * not known, the refusing side is taken: local NAT64 64:ff9b:1::/48 is
 * private, Teredo 2001::/32 reserved.
 */
#ifndef PH_ADDR_H
#define PH_ADDR_H

#include <stdint.h>

enum addr_class {
	ADDR_GLOBAL, /* reachable on the Internet: allowed */
	ADDR_LOOPBACK, /* 127.0.0.0/8, ::1 */
	ADDR_PRIVATE, /* RFC 1918, fc00::/7 (ULA) */
	ADDR_LINK_LOCAL, /* 169.254.0.0/16, fe80::/10 */
	ADDR_METADATA, /* 169.254.169.254, fd00:ec2::254, ... */
	ADDR_CGNAT, /* 100.64.0.0/10 */
	ADDR_MULTICAST, /* 224.0.0.0/4, ff00::/8 */
	ADDR_UNSPECIFIED, /* 0.0.0.0/8, :: */
	ADDR_BROADCAST, /* 255.255.255.255 */
	ADDR_DOCUMENTATION, /* 192.0.2.0/24, 198.51.100.0/24, ... */
	ADDR_RESERVED, /* 240.0.0.0/4, benchmarking, IETF ... */
};

/* Classifies ADDR: FAMILY 4 (4 bytes) or 6 (16 bytes). */
enum addr_class addr_classify(int family, const uint8_t *addr);

/* Returns a short name: "global", "loopback", "private", ... */
const char *addr_class_name(enum addr_class);

#endif
