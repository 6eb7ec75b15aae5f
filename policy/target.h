/*
 * target.h: normalisation of what a request names: host, port, authority,
 * URL and path.  Both the policy parser (for rule targets) and the proxy
 * (for requests from the sandbox) go through these functions, so that a
 * rule and a request are always compared in one canonical form.
 *
 * Nothing here allocates; callers pass the buffers.
 */
#ifndef PH_TARGET_H
#define PH_TARGET_H

#include <stddef.h>
#include <stdint.h>

/* Longest host name (RFC 1035) plus NUL. */
#define TARGET_HOST_MAX 254

enum target_kind {
	TARGET_NAME, /* a DNS name, lower case, no trailing dot */
	TARGET_V4, /* an IPv4 address (also from IPv4-mapped IPv6) */
	TARGET_V6, /* an IPv6 address */
};

struct target_host {
	enum target_kind kind;
	size_t len; /* strlen(name) */
	char name[TARGET_HOST_MAX]; /* canonical text, no brackets */
	uint8_t addr[16]; /* V4: first 4 bytes; V6: all 16 */
};

/*
 * Normalises host S of LEN bytes (no port; IPv6 with or without brackets).
 * Names: one trailing dot removed, lower-cased, letters, digits, '-' and
 * '_' in labels of 1-63 bytes, at most 253 bytes.  A name whose last label
 * is numeric is parsed as IPv4 the way browsers do (WHATWG URL): "127.1",
 * "0x7f.0.0.1", "0177.0.0.1" and "2130706433" all give 127.0.0.1.
 * IPv4-mapped IPv6 (::ffff:a.b.c.d) becomes the IPv4 address.
 * Returns 0, PH_ERR_NON_ASCII for a byte >= 0x80 (IDN), PH_ERR_TOO_LONG, or
 * PH_ERR_INVALID.
 */
int target_host_parse(const char *s, size_t len, struct target_host *out);

/* Parses a decimal port 1-65535.  Returns 0 or PH_ERR_PORT. */
int target_port_parse(const char *s, size_t len, uint16_t *port);

/*
 * Parses an authority "host", "host:port", "[v6]" or "[v6]:port" (no
 * userinfo).  *port is 0 when absent.  Returns 0 or a PH_ERR_* code.
 */
int target_authority_parse(
    const char *s, size_t len, struct target_host *h, uint16_t *port);

/*
 * Normalises the path of a request target IN (LEN bytes, starting with
 * '/'), stopping at '?' or '#': percent-decodes once, merges repeated
 * slashes and resolves "." and ".." segments (RFC 3986 5.2.4; ".." never
 * climbs above "/").  Writes a NUL-terminated result of at most LEN + 1
 * bytes into OUT (OUTSZ >= LEN + 2 always suffices).
 * Returns 0; PH_ERR_ENCODED_SLASH for %2F, %5C or a raw backslash;
 * PH_ERR_NUL for NUL or a control character, raw or encoded; PH_ERR_INVALID
 * for a bad escape, a raw space or non-ASCII byte, or no leading '/';
 * PH_ERR_DOT_PARAM for a segment that is empty, "." or ".." before a ';'
 * ("..;", ".;x", "%2e%2e;", ";x"); PH_ERR_BAD_UTF8 when the decoded bytes
 * are not shortest-form UTF-8 (%C0%AE, %E0%80%AE); PH_ERR_DOUBLE_ENCODED
 * for %25 followed by two hex digits (%252e); PH_ERR_TOO_LONG if OUT is
 * too small.  Parameters on other segments ("/a;v=1/b") are kept as text.
 * On error OUT holds "" (when OUTSZ > 0).
 */
int target_path_normalise(const char *in, size_t len, char *out, size_t outsz);

/* Are the LEN bytes at S shortest-form UTF-8 (RFC 3629)?  Returns 1 or 0. */
int target_utf8_valid(const char *s, size_t len);

struct target_url {
	int tls; /* 1 for https, 0 for http */
	struct target_host host;
	uint16_t port; /* explicit, or 80 / 443 by scheme */
};

/*
 * Parses an absolute URL "http[s]://authority[/path][?query][#frag]" (no
 * userinfo) and writes its normalised path (query removed) into PATH.
 * Returns 0 or a PH_ERR_* code (see target_path_normalise).
 */
int target_url_parse(
    const char *s, size_t len, struct target_url *u, char *path, size_t pathsz);

/* An address block, as target_cidr_parse() reads it. */
struct target_cidr {
	int family; /* 4 or 6 */
	uint8_t addr[16]; /* the network: host bits cleared */
	unsigned plen; /* prefix length (of the IPv4 block when mapped) */
	unsigned maxlen; /* 32, or 128 when written as IPv6 */
	int host_bits; /* the address had bits set past the prefix */
};

enum target_cidr_result {
	TARGET_CIDR_OK,
	TARGET_CIDR_ADDR, /* ADDR is no address */
	TARGET_CIDR_PLEN, /* LEN is not 0 to maxlen */
	TARGET_CIDR_MAPPED, /* ::ffff:a.b.c.d/LEN with LEN below 96 */
};

/*
 * Parses the address block "ADDR" or "ADDR/LEN" of SLEN bytes at S, the
 * one reader of address blocks (policy rules, the run CA's constraints).
 * ADDR is read as target_host_parse() reads it; no LEN means the address
 * alone.  ::ffff:a.b.c.d/LEN is the IPv4 block a.b.c.d/(LEN-96).  Host
 * bits are cleared and reported in HOST_BITS; whether they are an error
 * is the caller's call.  On TARGET_CIDR_PLEN, OUT->maxlen is set.
 */
enum target_cidr_result
target_cidr_parse(const char *s, size_t slen, struct target_cidr *out);

enum target_pattern_kind {
	TARGET_PATTERN_ANY, /* "*": every name and address */
	TARGET_PATTERN_NAME, /* one host name */
	TARGET_PATTERN_WILD, /* "*.suffix": names strictly under NAME */
	TARGET_PATTERN_BLOCK, /* an address block */
};

/*
 * What a rule names, typed: the hosts a run CA may sign for
 * (policy_intercept_targets, ca_new_run_for).  Normalised already.
 */
struct target_pattern {
	enum target_pattern_kind kind;
	const char *name; /* NAME: the name; WILD: the suffix; else NULL */
	int family; /* BLOCK: 4 or 6 */
	uint8_t addr[16]; /* BLOCK: the network (V4: first 4 bytes) */
	unsigned plen; /* BLOCK: prefix length */
};

/* Makes *P the block of FAMILY (4 or 6) at ADDR/PLEN. */
void target_pattern_block(
    struct target_pattern *p, int family, const uint8_t *addr, unsigned plen);

/* Returns a static reason for a PH_ERR_* code from this module. */
const char *target_strerror(int);

/* The value of hexadecimal digit C (0 to 15), or -1. */
int target_hexval(int c);

#endif
