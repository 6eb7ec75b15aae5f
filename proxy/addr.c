/*
 * addr.c: classify destination addresses by the IANA special-purpose
 * address registries (IPv4 and IPv6), so that the proxy refuses to connect
 * to anything but the global Internet unless a rule says otherwise.
 *
 * Each family has one table of prefixes searched in order: the first
 * match wins, so more specific entries (the metadata hosts inside
 * link-local, CGNAT and ULA space) come first.  IPv6 forms that carry an
 * IPv4 address are unwrapped and classified by that address.  Choices
 * that the registries leave open, all of them on the refusing side:
 *   - Teredo (2001::/32) is RESERVED as part of 2001::/23: the address
 *     inside is the client's NAT, reached through a relay we do not know.
 *   - The local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215) may embed the
 *     IPv4 address at any of the RFC 6052 prefix lengths, so where it sits
 *     is unknown; the prefix is site-local and is classified PRIVATE.
 *   - All of 192.0.0.0/24 and 2001::/23 is RESERVED, including the few
 *     anycast and AMT/AS112 entries the registries mark as global.
 *   - Site-local fec0::/10 is PRIVATE; anything outside 2000::/3 that no
 *     entry names is RESERVED.
 *   - Besides the AWS, ECS and Alibaba hosts, Azure's WireServer
 *     168.63.129.16 and Google's IPv6 metadata host fd20:ce::254 are
 *     METADATA.
 */
#include <sys/socket.h>

#include <stddef.h>
#include <stdint.h>

#include "addr.h"

struct prefix {
	uint8_t bytes[16];
	unsigned bits;
	enum addr_class class;
};

/* An IPv6 prefix whose addresses carry an IPv4 address at OFFSET. */
struct embed {
	uint8_t bytes[16];
	unsigned bits;
	unsigned offset;
};

#define NITEMS(a) (sizeof(a) / sizeof((a)[0]))

static const struct prefix v4_table[] = {
    {{169, 254, 169, 254}, 32, ADDR_METADATA}, /* AWS, GCP, Azure, OCI */
    {{169, 254, 170, 2}, 32, ADDR_METADATA}, /* AWS ECS task metadata */
    {{100, 100, 100, 200}, 32, ADDR_METADATA}, /* Alibaba Cloud */
    {{168, 63, 129, 16}, 32, ADDR_METADATA}, /* Azure WireServer */
    {{0, 0, 0, 0}, 8, ADDR_UNSPECIFIED},
    {{10, 0, 0, 0}, 8, ADDR_PRIVATE},
    {{100, 64, 0, 0}, 10, ADDR_CGNAT},
    {{127, 0, 0, 0}, 8, ADDR_LOOPBACK},
    {{169, 254, 0, 0}, 16, ADDR_LINK_LOCAL},
    {{172, 16, 0, 0}, 12, ADDR_PRIVATE},
    {{192, 0, 0, 0}, 24, ADDR_RESERVED}, /* IETF protocol assignments */
    {{192, 0, 2, 0}, 24, ADDR_DOCUMENTATION},
    {{192, 88, 99, 0}, 24, ADDR_RESERVED}, /* 6to4 relay anycast */
    {{192, 168, 0, 0}, 16, ADDR_PRIVATE},
    {{198, 18, 0, 0}, 15, ADDR_RESERVED}, /* benchmarking */
    {{198, 51, 100, 0}, 24, ADDR_DOCUMENTATION},
    {{203, 0, 113, 0}, 24, ADDR_DOCUMENTATION},
    {{224, 0, 0, 0}, 4, ADDR_MULTICAST},
    {{255, 255, 255, 255}, 32, ADDR_BROADCAST},
    {{240, 0, 0, 0}, 4, ADDR_RESERVED},
};

static const struct prefix v6_table[] = {
    /* fd00:ec2::254, AWS */
    {{0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54}, 128, ADDR_METADATA},
    /* fd20:ce::254, Google Cloud */
    {{0xfd, 0x20, 0x00, 0xce, [14] = 0x02, [15] = 0x54}, 128, ADDR_METADATA},
    {{0}, 128, ADDR_UNSPECIFIED}, /* :: */
    {{[15] = 1}, 128, ADDR_LOOPBACK}, /* ::1 */
    {{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48, ADDR_PRIVATE}, /* NAT64 local */
    {{0x01, 0x00}, 64, ADDR_RESERVED}, /* 100::/64 discard */
    {{0x20, 0x01, 0x0d, 0xb8}, 32, ADDR_DOCUMENTATION}, /* 2001:db8::/32 */
    {{0x3f, 0xff}, 20, ADDR_DOCUMENTATION}, /* 3fff::/20 */
    {{0x20, 0x01, 0x00, 0x00}, 23, ADDR_RESERVED}, /* incl. Teredo, 2001:2:: */
    {{0xfc}, 7, ADDR_PRIVATE}, /* ULA */
    {{0xfe, 0x80}, 10, ADDR_LINK_LOCAL},
    {{0xfe, 0xc0}, 10, ADDR_PRIVATE}, /* site-local, deprecated */
    {{0xff}, 8, ADDR_MULTICAST},
    {{0x20}, 3, ADDR_GLOBAL},
};

static const struct embed v6_embeds[] = {
    {{[10] = 0xff, [11] = 0xff}, 96, 12}, /* ::ffff:0:0/96 mapped */
    {{0}, 96, 12}, /* ::/96 compatible */
    {{0x00, 0x64, 0xff, 0x9b}, 96, 12}, /* 64:ff9b::/96 NAT64 */
    {{0x20, 0x02}, 16, 2}, /* 2002::/16 6to4 */
};

static const char *const class_names[] = {
    [ADDR_GLOBAL] = "global",
    [ADDR_LOOPBACK] = "loopback",
    [ADDR_PRIVATE] = "private",
    [ADDR_LINK_LOCAL] = "link-local",
    [ADDR_METADATA] = "metadata",
    [ADDR_CGNAT] = "cgnat",
    [ADDR_MULTICAST] = "multicast",
    [ADDR_UNSPECIFIED] = "unspecified",
    [ADDR_BROADCAST] = "broadcast",
    [ADDR_DOCUMENTATION] = "documentation",
    [ADDR_RESERVED] = "reserved",
};

/* Returns 1 when the first BITS bits of ADDR and PFX are equal. */
static int
prefix_match(const uint8_t *addr, const uint8_t *pfx, unsigned bits)
{
	unsigned i, full = bits / 8, rest = bits % 8;
	uint8_t mask;

	for (i = 0; i < full; i++)
		if (addr[i] != pfx[i])
			return 0;
	if (rest == 0)
		return 1;
	mask = (uint8_t)(0xff << (8 - rest));
	return (addr[full] & mask) == (pfx[full] & mask);
}

/* The class of the first entry of TABLE that matches, or DEFLT. */
static enum addr_class
table_lookup(const struct prefix *table, size_t n, const uint8_t *addr,
    enum addr_class deflt)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (prefix_match(addr, table[i].bytes, table[i].bits))
			return table[i].class;
	return deflt;
}

static enum addr_class
classify_v4(const uint8_t *addr)
{
	return table_lookup(v4_table, NITEMS(v4_table), addr, ADDR_GLOBAL);
}

/*
 * Returns the IPv4 address inside ADDR, or NULL.  The unspecified and
 * loopback addresses lie in ::/96 but are IPv6's own, not IPv4-compatible.
 */
static const uint8_t *
embedded_v4(const uint8_t *addr)
{
	static const uint8_t zero[15];
	const uint8_t *v4 = NULL;
	size_t i;

	if (prefix_match(addr, zero, 120) && addr[15] <= 1)
		goto out;
	for (i = 0; i < NITEMS(v6_embeds); i++) {
		if (prefix_match(addr, v6_embeds[i].bytes, v6_embeds[i].bits)) {
			v4 = addr + v6_embeds[i].offset;
			break;
		}
	}
out:
	return v4;
}

static enum addr_class
classify_v6(const uint8_t *addr)
{
	const uint8_t *v4;

	/* The metadata hosts are not in any embedding prefix. */
	if ((v4 = embedded_v4(addr)) != NULL)
		return classify_v4(v4);
	return table_lookup(v6_table, NITEMS(v6_table), addr, ADDR_RESERVED);
}

enum addr_class
addr_classify(int family, const uint8_t *addr)
{
	enum addr_class c = ADDR_RESERVED;

	/* AF_INET and AF_INET6 are accepted too: they cannot be confused. */
	if (family == 4 || family == AF_INET)
		c = classify_v4(addr);
	else if (family == 6 || family == AF_INET6)
		c = classify_v6(addr);
	return c;
}

const char *
addr_class_name(enum addr_class c)
{
	if ((unsigned)c >= NITEMS(class_names) || class_names[c] == NULL)
		return "unknown";
	return class_names[c];
}
