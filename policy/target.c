/*
 * target.c: canonical forms of hosts, ports, URLs and paths.
 *
 * The rule of thumb is to refuse what is ambiguous rather than guess: an
 * upstream server or a client library that reads a spelling differently
 * from us would let a request pass a rule it does not really match.
 */
#include <arpa/inet.h>
#include <string.h>
#include <strings.h>

#include "common/ph_err.h"
#include "target.h"

static int
is_digit(int c)
{
	return c >= '0' && c <= '9';
}

int
target_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Parses one part of a WHATWG IPv4 spelling: decimal, 0x-hex or 0-octal.
 * Returns 0 and the value, or -1.  Values are capped to avoid overflow;
 * anything above 2^32 is invalid anyway.
 */
static int
ipv4_part(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	unsigned base = 10;
	size_t i = 0;
	int d;

	if (len == 0)
		return -1;
	if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
	} else if (len >= 2 && s[0] == '0') {
		base = 8;
		i = 1;
	}
	for (; i < len; i++) {
		if ((d = target_hexval((unsigned char)s[i])) < 0 ||
		    (unsigned)d >= base)
			return -1;
		v = v * base + (unsigned)d;
		if (v > 0xffffffffULL)
			return -1;
	}
	*out = v;
	return 0;
}

/* True when the last label looks numeric, so the host must be IPv4. */
static int
ends_in_number(const char *s, size_t len)
{
	size_t start = len, i;

	while (start > 0 && s[start - 1] != '.')
		start--;
	if (start == len)
		return 0;
	for (i = start; i < len && is_digit((unsigned char)s[i]); i++)
		;
	if (i == len)
		return 1;
	if (len - start >= 2 && s[start] == '0' &&
	    (s[start + 1] == 'x' || s[start + 1] == 'X')) {
		for (i = start + 2;
		     i < len && target_hexval((unsigned char)s[i]) >= 0; i++)
			;
		return i == len;
	}
	return 0;
}

static int
ipv4_parse(const char *s, size_t len, uint8_t addr[4])
{
	uint64_t parts[4], v;
	size_t n = 0, start = 0, i;

	for (i = 0; i <= len; i++) {
		if (i < len && s[i] != '.')
			continue;
		if (n == 4 || ipv4_part(s + start, i - start, &parts[n]) != 0)
			return PH_ERR_INVALID;
		n++;
		start = i + 1;
	}
	/* All but the last part are single bytes; the last fills the rest. */
	for (i = 0; i + 1 < n; i++)
		if (parts[i] > 255)
			return PH_ERR_INVALID;
	if (parts[n - 1] >= (1ULL << (8 * (5 - n))))
		return PH_ERR_INVALID;
	v = parts[n - 1];
	for (i = 0; i + 1 < n; i++)
		v += parts[i] << (8 * (3 - i));
	addr[0] = v >> 24;
	addr[1] = v >> 16;
	addr[2] = v >> 8;
	addr[3] = v;
	return 0;
}

static int
host_set_v4(struct target_host *out, const uint8_t src[4])
{
	uint8_t a[4];

	memcpy(a, src, sizeof(a)); /* SRC may lie inside OUT->addr */
	out->kind = TARGET_V4;
	memset(out->addr, 0, sizeof(out->addr));
	memcpy(out->addr, a, 4);
	inet_ntop(AF_INET, a, out->name, sizeof(out->name));
	out->len = strlen(out->name);
	return 0;
}

static int
ipv6_parse(const char *s, size_t len, struct target_host *out)
{
	static const uint8_t mapped[12] = {
	    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	char buf[64];

	if (len == 0 || len >= sizeof(buf) || memchr(s, '%', len) != NULL)
		return PH_ERR_INVALID; /* zone ids name no global host */
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET6, buf, out->addr) != 1)
		return PH_ERR_INVALID;
	if (memcmp(out->addr, mapped, sizeof(mapped)) == 0)
		return host_set_v4(out, out->addr + 12);
	out->kind = TARGET_V6;
	inet_ntop(AF_INET6, out->addr, out->name, sizeof(out->name));
	out->len = strlen(out->name);
	return 0;
}

static int
name_parse(const char *s, size_t len, struct target_host *out)
{
	size_t i, label = 0;
	int c;

	if (len == 0)
		return PH_ERR_INVALID;
	if (len > TARGET_HOST_MAX - 1)
		return PH_ERR_TOO_LONG;
	for (i = 0; i < len; i++) {
		c = (unsigned char)s[i];
		if (c >= 0x80)
			return PH_ERR_NON_ASCII;
		if (c >= 'A' && c <= 'Z')
			c += 'a' - 'A';
		if (c == '.') {
			if (label == 0)
				return PH_ERR_INVALID;
			label = 0;
		} else if ((c >= 'a' && c <= 'z') || is_digit(c) || c == '-' ||
		    c == '_') {
			if (++label > 63)
				return PH_ERR_TOO_LONG;
		} else
			return PH_ERR_INVALID;
		out->name[i] = c;
	}
	if (label == 0)
		return PH_ERR_INVALID; /* "a." after the one dot we drop */
	out->name[len] = '\0';
	out->len = len;
	out->kind = TARGET_NAME;
	memset(out->addr, 0, sizeof(out->addr));
	return 0;
}

int
target_host_parse(const char *s, size_t len, struct target_host *out)
{
	uint8_t a[4];
	int r;

	if (len >= 2 && s[0] == '[' && s[len - 1] == ']')
		return ipv6_parse(s + 1, len - 2, out);
	if (memchr(s, ':', len) != NULL)
		return ipv6_parse(s, len, out);
	if (len > 1 && s[len - 1] == '.')
		len--;
	if (len > 0 && ends_in_number(s, len)) {
		if ((r = ipv4_parse(s, len, a)) != 0)
			return r;
		return host_set_v4(out, a);
	}
	return name_parse(s, len, out);
}

int
target_port_parse(const char *s, size_t len, uint16_t *port)
{
	unsigned v = 0;
	size_t i;

	if (len == 0 || len > 5)
		return PH_ERR_PORT;
	for (i = 0; i < len; i++) {
		if (!is_digit((unsigned char)s[i]))
			return PH_ERR_PORT;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return PH_ERR_PORT;
	*port = v;
	return 0;
}

int
target_authority_parse(
    const char *s, size_t len, struct target_host *h, uint16_t *port)
{
	const char *colon, *close;
	size_t hlen = len;
	int r;

	*port = 0;
	if (len == 0 || memchr(s, '@', len) != NULL)
		return PH_ERR_INVALID;
	if (s[0] == '[') {
		if ((close = memchr(s, ']', len)) == NULL)
			return PH_ERR_INVALID;
		hlen = close - s + 1;
		if (hlen < len && s[hlen] != ':')
			return PH_ERR_INVALID;
	} else if ((colon = memchr(s, ':', len)) != NULL) {
		/* A second colon means an unbracketed IPv6 address. */
		if (memchr(colon + 1, ':', len - (colon - s) - 1) != NULL)
			return PH_ERR_INVALID;
		hlen = colon - s;
	}
	if ((r = target_host_parse(s, hlen, h)) != 0)
		return r;
	if (hlen < len)
		r = target_port_parse(s + hlen + 1, len - hlen - 1, port);
	return r;
}

/*
 * Decodes one byte of IN at *I into *OUT, refusing what a server might read
 * differently from us: encoded separators, control bytes, bad escapes.
 */
static int
path_byte(const char *in, size_t len, size_t *i, int *out)
{
	int c = (unsigned char)in[*i], hi, lo;

	if (c == '\\')
		return PH_ERR_ENCODED_SLASH;
	if (c < 0x20 || c == 0x7f)
		return PH_ERR_NUL;
	if (c == ' ' || c >= 0x80)
		return PH_ERR_INVALID;
	if (c == '%') {
		if (len - *i < 3 ||
		    (hi = target_hexval((unsigned char)in[*i + 1])) < 0 ||
		    (lo = target_hexval((unsigned char)in[*i + 2])) < 0)
			return PH_ERR_INVALID;
		c = hi << 4 | lo;
		*i += 2;
		if (c == '/' || c == '\\')
			return PH_ERR_ENCODED_SLASH;
		if (c < 0x20 || c == 0x7f)
			return PH_ERR_NUL;
	}
	*out = c;
	return 0;
}

/*
 * UTF-8 as RFC 3629 has it: the shortest form only, no surrogates, nothing
 * above U+10FFFF.  An overlong '.' or '/' (%C0%AE, %C0%AF, %E0%80%AE) is
 * read as the ASCII byte by some servers (old Java, IIS): refused.
 */
struct utf8 {
	unsigned need; /* continuation bytes still to come */
	int lo, hi; /* the range of the next one */
};

static int
utf8_byte(struct utf8 *u, int c)
{
	if (u->need > 0) {
		if (c < u->lo || c > u->hi)
			return PH_ERR_BAD_UTF8;
		u->need--;
		u->lo = 0x80;
		u->hi = 0xbf;
		return 0;
	}
	if (c < 0x80)
		return 0;
	u->lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
	u->hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		u->need = 1;
	else if (c >= 0xe0 && c <= 0xef)
		u->need = 2;
	else if (c >= 0xf0 && c <= 0xf4)
		u->need = 3;
	else
		return PH_ERR_BAD_UTF8; /* 0x80-0xc1: overlong or stray */
	return 0;
}

int
target_utf8_valid(const char *s, size_t len)
{
	struct utf8 u = {0, 0x80, 0xbf};
	size_t i;

	for (i = 0; i < len; i++)
		if (utf8_byte(&u, (unsigned char)s[i]) != 0)
			return 0;
	return u.need == 0;
}

/*
 * A segment whose name, before its first ';', is empty, "." or ".." is
 * refused: Tomcat, Jetty and Spring drop the parameters and then resolve
 * it ("/allowed/..;/admin" is "/admin" to them, "/allowed/admin" to a
 * matcher that keeps the ';').  Parameters on other segments are kept.
 */
static int
dot_param(const char *seg, size_t n)
{
	const char *semi = memchr(seg, ';', n);
	size_t k;

	if (semi == NULL)
		return 0;
	k = semi - seg;
	return k == 0 || (k == 1 && seg[0] == '.') ||
	    (k == 2 && seg[0] == '.' && seg[1] == '.');
}

/*
 * Closes the segment OUT[SEG..O): "." is dropped, ".." drops itself and
 * the segment before it.  Returns the new end of OUT, which always follows
 * a '/'.
 */
static size_t
path_pop_dots(char *out, size_t seg, size_t o)
{
	size_t n = o - seg;

	if (n == 1 && out[seg] == '.')
		return seg;
	if (n == 2 && out[seg] == '.' && out[seg + 1] == '.') {
		o = seg;
		if (seg > 1) {
			o = seg - 1;
			while (out[o - 1] != '/')
				o--;
		}
		return o;
	}
	return o;
}

/*
 * "%25" then two hex digits decodes to an escape that a server decoding
 * twice reads as another byte ("%252e" is "." to it): refused.  Only a
 * decoded %25 puts a '%' in OUT, since a raw one is always an escape.
 */
static int
double_encoded(const char *out, size_t seg, size_t o, int c)
{
	return o - seg >= 2 && out[o - 2] == '%' &&
	    target_hexval((unsigned char)out[o - 1]) >= 0 &&
	    target_hexval(c) >= 0;
}

static int
normalise(const char *in, size_t len, char *out, size_t outsz)
{
	struct utf8 u = {0, 0x80, 0xbf};
	size_t i, o = 1, seg = 1;
	int c, r = 0;

	if (len == 0 || in[0] != '/')
		return PH_ERR_INVALID;
	if (outsz < 2)
		return PH_ERR_TOO_LONG;
	out[0] = '/';
	for (i = 1; i < len && in[i] != '?' && in[i] != '#'; i++) {
		if ((r = path_byte(in, len, &i, &c)) != 0 ||
		    (r = utf8_byte(&u, c)) != 0)
			return r;
		if (o + 1 >= outsz)
			return PH_ERR_TOO_LONG;
		if (double_encoded(out, seg, o, c))
			return PH_ERR_DOUBLE_ENCODED;
		if (c != '/') {
			out[o++] = c;
			continue;
		}
		/* A slash ends a segment; empty segments merge away. */
		if (dot_param(out + seg, o - seg))
			return PH_ERR_DOT_PARAM;
		o = path_pop_dots(out, seg, o);
		if (o > seg)
			out[o++] = '/';
		seg = o;
	}
	if (u.need > 0)
		return PH_ERR_BAD_UTF8;
	if (dot_param(out + seg, o - seg))
		return PH_ERR_DOT_PARAM;
	o = path_pop_dots(out, seg, o);
	out[o] = '\0';
	return 0;
}

int
target_path_normalise(const char *in, size_t len, char *out, size_t outsz)
{
	int r = normalise(in, len, out, outsz);

	/* A caller that logs the refused path must find a string. */
	if (r != 0 && outsz > 0)
		out[0] = '\0';
	return r;
}

int
target_url_parse(
    const char *s, size_t len, struct target_url *u, char *path, size_t pathsz)
{
	size_t skip, alen;
	uint16_t port;
	int r;

	if (len >= 7 && strncasecmp(s, "http://", 7) == 0) {
		u->tls = 0;
		skip = 7;
	} else if (len >= 8 && strncasecmp(s, "https://", 8) == 0) {
		u->tls = 1;
		skip = 8;
	} else
		return PH_ERR_INVALID;
	s += skip;
	len -= skip;
	/* Bounded: S need not be NUL-terminated, and may hold a NUL. */
	for (alen = 0; alen < len; alen++) {
		if (s[alen] == '\0')
			return PH_ERR_INVALID;
		if (s[alen] == '/' || s[alen] == '?' || s[alen] == '#')
			break;
	}
	if ((r = target_authority_parse(s, alen, &u->host, &port)) != 0)
		return r;
	u->port = port != 0 ? port : (u->tls ? 443 : 80);
	if (alen == len || s[alen] != '/')
		return target_path_normalise("/", 1, path, pathsz);
	return target_path_normalise(s + alen, len - alen, path, pathsz);
}

const char *
target_strerror(int r)
{
	switch (r) {
	case PH_ERR_INVALID:
		return "malformed host, port, URL or path";
	case PH_ERR_NON_ASCII:
		return "non-ASCII host name; write its xn-- (punycode) form";
	case PH_ERR_TOO_LONG:
		return "name or path too long";
	case PH_ERR_PORT:
		return "port must be a number from 1 to 65535";
	case PH_ERR_ENCODED_SLASH:
		return "encoded slash or backslash in path";
	case PH_ERR_NUL:
		return "NUL or control character in path";
	case PH_ERR_DOT_PARAM:
		return "a '.', '..' or empty path segment with ';' parameters "
		       "(servers resolve \"..;\" as \"..\")";
	case PH_ERR_BAD_UTF8:
		return "overlong or invalid UTF-8 in path (%C0%AE is read as "
		       "'.' by some servers)";
	case PH_ERR_DOUBLE_ENCODED:
		return "double percent-encoding in path (%25 followed by two "
		       "hex digits)";
	default:
		return ph_err(r);
	}
}

/* A decimal prefix length of 1 to 3 digits, at most MAX. */
static int
plen_parse(const char *s, size_t len, unsigned max, unsigned *plen)
{
	unsigned v = 0;
	size_t i;

	if (len == 0 || len > 3)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v > max)
		return -1;
	*plen = v;
	return 0;
}

enum target_cidr_result
target_cidr_parse(const char *s, size_t slen, struct target_cidr *out)
{
	struct target_host h;
	const char *slash = memchr(s, '/', slen);
	size_t alen = slash ? (size_t)(slash - s) : slen;
	unsigned i;

	memset(out, 0, sizeof(*out));
	if (target_host_parse(s, alen, &h) != 0 || h.kind == TARGET_NAME)
		return TARGET_CIDR_ADDR;
	out->family = h.kind == TARGET_V4 ? 4 : 6;
	out->maxlen = memchr(s, ':', alen) != NULL ? 128 : 32;
	memcpy(out->addr, h.addr, sizeof(out->addr));
	out->plen = out->family == 4 ? 32 : 128;
	if (slash != NULL &&
	    plen_parse(slash + 1, slen - alen - 1, out->maxlen, &out->plen) !=
	        0)
		return TARGET_CIDR_PLEN;
	if (out->maxlen == 128 && out->family == 4 && slash != NULL) {
		if (out->plen < 96)
			return TARGET_CIDR_MAPPED;
		out->plen -= 96;
	}
	for (i = out->plen; i < (out->family == 4 ? 32U : 128U); i++)
		if (out->addr[i / 8] & (0x80 >> (i % 8))) {
			out->host_bits = 1;
			out->addr[i / 8] &= ~(0x80 >> (i % 8));
		}
	return TARGET_CIDR_OK;
}

void
target_pattern_block(
    struct target_pattern *p, int family, const uint8_t *addr, unsigned plen)
{
	memset(p, 0, sizeof(*p));
	p->kind = TARGET_PATTERN_BLOCK;
	p->family = family;
	memcpy(p->addr, addr, family == 4 ? 4 : 16);
	p->plen = plen;
}
