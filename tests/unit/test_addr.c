/*
 * test_addr.c: unit tests of proxy/addr.c, address classification.
 *
 * The table holds the first and last address of every special block and
 * the addresses just outside it, then the embedded IPv4 forms (mapped,
 * compatible, NAT64, 6to4) of a loopback, a private, a metadata and a
 * public address.  A sweep checks that every embedded form of an IPv4
 * address is classified like the address itself.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/addr.h"

#define G ADDR_GLOBAL
#define LO ADDR_LOOPBACK
#define PRIV ADDR_PRIVATE
#define LL ADDR_LINK_LOCAL
#define META ADDR_METADATA
#define CGN ADDR_CGNAT
#define MC ADDR_MULTICAST
#define UNSP ADDR_UNSPECIFIED
#define BC ADDR_BROADCAST
#define DOC ADDR_DOCUMENTATION
#define RES ADDR_RESERVED

#define NITEMS(a) (sizeof(a) / sizeof((a)[0]))

struct addr_case {
	const char *in;
	enum addr_class want;
};

static const struct addr_case v4_cases[] = {
    {"0.0.0.0", UNSP},
    {"0.255.255.255", UNSP},
    {"1.0.0.0", G},
    {"9.255.255.255", G},
    {"10.0.0.0", PRIV},
    {"10.255.255.255", PRIV},
    {"11.0.0.0", G},
    {"100.63.255.255", G},
    {"100.64.0.0", CGN},
    {"100.127.255.255", CGN},
    {"100.128.0.0", G},
    {"100.100.100.199", CGN},
    {"100.100.100.200", META},
    {"100.100.100.201", CGN},
    {"126.255.255.255", G},
    {"127.0.0.0", LO},
    {"127.0.0.1", LO},
    {"127.255.255.255", LO},
    {"128.0.0.0", G},
    {"168.63.129.15", G},
    {"168.63.129.16", META},
    {"168.63.129.17", G},
    {"169.253.255.255", G},
    {"169.254.0.0", LL},
    {"169.254.169.253", LL},
    {"169.254.169.254", META},
    {"169.254.169.255", LL},
    {"169.254.170.1", LL},
    {"169.254.170.2", META},
    {"169.254.170.3", LL},
    {"169.254.255.255", LL},
    {"169.255.0.0", G},
    {"172.15.255.255", G},
    {"172.16.0.0", PRIV},
    {"172.31.255.255", PRIV},
    {"172.32.0.0", G},
    {"191.255.255.255", G},
    {"192.0.0.0", RES},
    {"192.0.0.255", RES},
    {"192.0.1.0", G},
    {"192.0.1.255", G},
    {"192.0.2.0", DOC},
    {"192.0.2.255", DOC},
    {"192.0.3.0", G},
    {"192.88.98.255", G},
    {"192.88.99.0", RES},
    {"192.88.99.255", RES},
    {"192.88.100.0", G},
    {"192.167.255.255", G},
    {"192.168.0.0", PRIV},
    {"192.168.255.255", PRIV},
    {"192.169.0.0", G},
    {"198.17.255.255", G},
    {"198.18.0.0", RES},
    {"198.19.255.255", RES},
    {"198.20.0.0", G},
    {"198.51.99.255", G},
    {"198.51.100.0", DOC},
    {"198.51.100.255", DOC},
    {"198.51.101.0", G},
    {"203.0.112.255", G},
    {"203.0.113.0", DOC},
    {"203.0.113.255", DOC},
    {"203.0.114.0", G},
    {"223.255.255.255", G},
    {"224.0.0.0", MC},
    {"239.255.255.255", MC},
    {"240.0.0.0", RES},
    {"255.255.255.254", RES},
    {"255.255.255.255", BC},
    {"1.1.1.1", G},
    {"8.8.8.8", G},
    {"93.184.216.34", G},
};

static const struct addr_case v6_cases[] = {
    /* Unspecified, loopback and the IPv4-compatible block around them. */
    {"::", UNSP},
    {"::1", LO},
    {"::2", UNSP},
    {"::127.0.0.1", LO},
    {"::10.0.0.1", PRIV},
    {"::169.254.169.254", META},
    {"::8.8.8.8", G},
    {"::93.184.216.34", G},
    {"::255.255.255.255", BC},
    {"::1:0:0", RES},
    {"::1:0:0:0", RES},
    /* IPv4-mapped, and SIIT's ::ffff:0:0:0/96 just beside it. */
    {"::ffff:127.0.0.1", LO},
    {"::ffff:7f00:1", LO},
    {"::FFFF:127.255.255.255", LO},
    {"::ffff:10.0.0.1", PRIV},
    {"::ffff:169.254.169.254", META},
    {"::ffff:169.254.170.2", META},
    {"::ffff:100.100.100.200", META},
    {"::ffff:100.64.0.1", CGN},
    {"::ffff:8.8.8.8", G},
    {"::ffff:93.184.216.34", G},
    {"::ffff:0.0.0.0", UNSP},
    {"::ffff:0.0.0.1", UNSP},
    {"::ffff:224.0.0.1", MC},
    {"::ffff:255.255.255.255", BC},
    {"::fffe:ffff:ffff", RES},
    {"::1:0:0:0:0", RES},
    {"::ffff:0:127.0.0.1", RES},
    /* NAT64 well-known prefix 64:ff9b::/96. */
    {"64:ff9b::127.0.0.1", LO},
    {"64:ff9b::7f00:1", LO},
    {"64:ff9b::10.0.0.1", PRIV},
    {"64:ff9b::169.254.169.254", META},
    {"64:ff9b::a9fe:a9fe", META},
    {"64:ff9b::8.8.8.8", G},
    {"64:ff9b::93.184.216.34", G},
    {"64:ff9b::", UNSP},
    {"64:ff9b::ffff:ffff", BC},
    {"64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", RES},
    {"64:ff9b::1:0:0", RES},
    {"64:ff9b:0:0:0:1::", RES},
    /* Local-use NAT64 64:ff9b:1::/48: where the IPv4 sits is unknown. */
    {"64:ff9b:1::", PRIV},
    {"64:ff9b:1::808:808", PRIV},
    {"64:ff9b:1:ffff:ffff:ffff:ffff:ffff", PRIV},
    {"64:ff9b:2::", RES},
    /* 6to4 2002::/16, IPv4 in bits 16..47. */
    {"2002:7f00:1::", LO},
    {"2002:7f00:1::1", LO},
    {"2002:a00:1::", PRIV},
    {"2002:a9fe:a9fe::1", META},
    {"2002:c0a8:101::", PRIV},
    {"2002:808:808::", G},
    {"2002:5db8:d822::1", G},
    {"2002::", UNSP},
    {"2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", BC},
    {"2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", G},
    {"2003::", G},
    /* IETF protocol assignments 2001::/23, Teredo and benchmarking. */
    {"2001::", RES},
    {"2001:0:4136:e378:8000:63bf:3fff:fdd2", RES},
    {"2001::80ff:fffe", RES},
    {"2001:0:ffff:ffff:ffff:ffff:ffff:ffff", RES},
    {"2001:2::", RES},
    {"2001:2:0:ffff:ffff:ffff:ffff:ffff", RES},
    {"2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", RES},
    {"2001:200::", G},
    /* Documentation. */
    {"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", G},
    {"2001:db8::", DOC},
    {"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", DOC},
    {"2001:db9::", G},
    {"3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", G},
    {"3fff::", DOC},
    {"3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", DOC},
    {"3fff:1000::", G},
    /* Global unicast 2000::/3 and what lies outside it. */
    {"1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", RES},
    {"2000::", G},
    {"2606:4700::1111", G},
    {"2a00:1450:4001:82a::200e", G},
    {"3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", G},
    {"4000::", RES},
    {"5f00::1", RES},
    /* Discard-only 100::/64. */
    {"ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", RES},
    {"100::", RES},
    {"100::ffff:ffff:ffff:ffff", RES},
    {"100:0:0:1::", RES},
    /* ULA, with the metadata hosts inside it. */
    {"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", RES},
    {"fc00::", PRIV},
    {"fd00:ec2::253", PRIV},
    {"fd00:ec2::254", META},
    {"fd00:ec2::255", PRIV},
    {"fd00:ec2:0:1::254", PRIV},
    {"fd20:ce::254", META},
    {"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", PRIV},
    {"fe00::", RES},
    /* Link-local, site-local, multicast. */
    {"fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", RES},
    {"fe80::", LL},
    {"fe80::1", LL},
    {"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", LL},
    {"fec0::", PRIV},
    {"feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", PRIV},
    {"ff00::", MC},
    {"ff02::1", MC},
    {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", MC},
};

static enum addr_class
classify_str(const char *s)
{
	uint8_t a[16];
	int fam = strchr(s, ':') != NULL ? 6 : 4;

	if (inet_pton(fam == 6 ? AF_INET6 : AF_INET, s, a) != 1)
		fail_msg("bad test address %s", s);
	return addr_classify(fam, a);
}

static void
check_cases(const struct addr_case *c, size_t n)
{
	enum addr_class got;
	size_t i;

	for (i = 0; i < n; i++) {
		got = classify_str(c[i].in);
		if (got != c[i].want)
			fail_msg("%s: got %s, want %s", c[i].in,
			    addr_class_name(got), addr_class_name(c[i].want));
	}
}

static void
test_v4_table(void **state)
{
	(void)state;
	check_cases(v4_cases, NITEMS(v4_cases));
}

static void
test_v6_table(void **state)
{
	(void)state;
	check_cases(v6_cases, NITEMS(v6_cases));
}

/* Classifies V4 wrapped in the IPv6 prefix PFX (LEN bytes) at OFF. */
static enum addr_class
classify_wrapped(const uint8_t *v4, const uint8_t *pfx, size_t len, size_t off)
{
	uint8_t a[16] = {0};

	if (len > 0)
		memcpy(a, pfx, len);
	memcpy(a + off, v4, 4);
	return addr_classify(6, a);
}

static void
check_embeddings(const uint8_t *v4)
{
	static const uint8_t mapped[] = {
	    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	static const uint8_t nat64[] = {0x00, 0x64, 0xff, 0x9b};
	static const uint8_t sixto4[] = {0x20, 0x02};
	enum addr_class want = addr_classify(4, v4);

	assert_int_equal(
	    classify_wrapped(v4, mapped, sizeof(mapped), 12), want);
	assert_int_equal(classify_wrapped(v4, nat64, sizeof(nat64), 12), want);
	assert_int_equal(classify_wrapped(v4, sixto4, sizeof(sixto4), 2), want);
	/* ::0.0.0.0 and ::0.0.0.1 are IPv6's own :: and ::1. */
	if (v4[0] | v4[1] | v4[2] || v4[3] > 1)
		assert_int_equal(classify_wrapped(v4, NULL, 0, 12), want);
}

static void
test_embedded_sweep(void **state)
{
	static const uint8_t lows[][2] = {{0, 0}, {0, 1}, {255, 255},
	    {169, 254}, {170, 2}, {100, 200}, {129, 16}};
	uint8_t v4[4];
	unsigned a, b;
	size_t i;

	(void)state;
	for (a = 0; a < 256; a++) {
		for (b = 0; b < 256; b++) {
			v4[0] = (uint8_t)a;
			v4[1] = (uint8_t)b;
			for (i = 0; i < NITEMS(lows); i++) {
				v4[2] = lows[i][0];
				v4[3] = lows[i][1];
				check_embeddings(v4);
			}
		}
	}
}

static void
test_family(void **state)
{
	uint8_t v4[4] = {127, 0, 0, 1};
	uint8_t v6[16] = {[15] = 1};

	(void)state;
	assert_int_equal(addr_classify(AF_INET, v4), ADDR_LOOPBACK);
	assert_int_equal(addr_classify(AF_INET6, v6), ADDR_LOOPBACK);
	/* An unknown family is never global. */
	assert_int_equal(addr_classify(0, v4), ADDR_RESERVED);
	assert_int_equal(addr_classify(5, v4), ADDR_RESERVED);
}

static void
test_names(void **state)
{
	static const struct {
		enum addr_class c;
		const char *name;
	} names[] = {
	    {ADDR_GLOBAL, "global"},
	    {ADDR_LOOPBACK, "loopback"},
	    {ADDR_PRIVATE, "private"},
	    {ADDR_LINK_LOCAL, "link-local"},
	    {ADDR_METADATA, "metadata"},
	    {ADDR_CGNAT, "cgnat"},
	    {ADDR_MULTICAST, "multicast"},
	    {ADDR_UNSPECIFIED, "unspecified"},
	    {ADDR_BROADCAST, "broadcast"},
	    {ADDR_DOCUMENTATION, "documentation"},
	    {ADDR_RESERVED, "reserved"},
	};
	size_t i;

	(void)state;
	for (i = 0; i < NITEMS(names); i++)
		assert_string_equal(addr_class_name(names[i].c), names[i].name);
	assert_string_equal(
	    addr_class_name((enum addr_class)(ADDR_RESERVED + 1)), "unknown");
	assert_string_equal(addr_class_name((enum addr_class) - 1), "unknown");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_v4_table),
	    cmocka_unit_test(test_v6_table),
	    cmocka_unit_test(test_embedded_sweep),
	    cmocka_unit_test(test_family),
	    cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests_name("addr", tests, NULL, NULL);
}
