/*
 * peek.c: what the first bytes of a captured connection are (peek.h).
 * The ClientHello reader follows RFC 8446 4.1.2 and RFC 6066 3 as
 * OpenSSL's server reads them: one record, lengths that add up exactly,
 * one server_name extension holding one host_name, so that the name
 * checked here is the name the server will see.
 */
#include <string.h>

#include "policy/target.h"
#include "proxy/peek.h"

#define REC_HEAD 5
#define REC_MAX 16384
#define HS_HEAD 4
#define HS_CLIENT_HELLO 1
#define EXT_SERVER_NAME 0
#define NAME_HOST 0
/* The longest method token a request head may have (http.c). */
#define METHOD_MAX 32

/* A cursor over the bytes of one length-delimited field. */
struct rd {
	const uint8_t *p;
	size_t n;
};

/* RFC 9110 5.6.2 tchar. */
static int
is_tchar(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') ||
	    (c != '\0' && strchr("!#$%&'*+-.^_`|~", c));
}

static enum peek_kind
classify_method(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n && i <= METHOD_MAX; i++) {
		if (p[i] == ' ')
			return i > 0 ? PEEK_HTTP : PEEK_OTHER;
		if (!is_tchar(p[i]))
			return PEEK_OTHER;
	}
	return i > METHOD_MAX ? PEEK_OTHER : PEEK_MORE;
}

enum peek_kind
peek_classify(const uint8_t *p, size_t n)
{
	if (n == 0)
		return PEEK_MORE;
	/* Any minor version is TLS here: peek_sni() is the strict one, so
	 * that no handshake a server would read passes as opaque bytes. */
	if (p[0] == 0x16) {
		if (n < 2)
			return PEEK_MORE;
		return p[1] == 0x03 ? PEEK_TLS : PEEK_OTHER;
	}
	return classify_method(p, n);
}

static int
get_u8(struct rd *r, size_t *v)
{
	if (r->n < 1)
		return -1;
	*v = r->p[0];
	r->p++;
	r->n--;
	return 0;
}

static int
get_u16(struct rd *r, size_t *v)
{
	if (r->n < 2)
		return -1;
	*v = (size_t)r->p[0] << 8 | r->p[1];
	r->p += 2;
	r->n -= 2;
	return 0;
}

/* Moves the LEN bytes at R into SUB. */
static int
get_sub(struct rd *r, size_t len, struct rd *sub)
{
	if (r->n < len)
		return -1;
	sub->p = r->p;
	sub->n = len;
	r->p += len;
	r->n -= len;
	return 0;
}

/* A vector with a LENBYTES-byte length of at least MIN bytes. */
static int
get_vec(struct rd *r, int lenbytes, size_t min, struct rd *sub)
{
	size_t len;

	if ((lenbytes == 1 ? get_u8(r, &len) : get_u16(r, &len)) != 0)
		return -1;
	if (len < min)
		return -1;
	return get_sub(r, len, sub);
}

/* The one host_name of a server_name extension's data (RFC 6066 3). */
static int
server_name(struct rd ext, struct target_host *host)
{
	struct rd list, name;
	size_t type;

	if (get_vec(&ext, 2, 1, &list) != 0 || ext.n != 0)
		return PEEK_SNI_BAD;
	if (get_u8(&list, &type) != 0 || type != NAME_HOST)
		return PEEK_SNI_BAD;
	if (get_vec(&list, 2, 1, &name) != 0 || list.n != 0)
		return PEEK_SNI_BAD;
	if (memchr(name.p, '\0', name.n) != NULL)
		return PEEK_SNI_BAD;
	if (target_host_parse((const char *)name.p, name.n, host) != 0)
		return PEEK_SNI_BAD;
	return PEEK_SNI_FOUND;
}

/* The extensions block, the rest of the hello: one server_name at most. */
static int
extensions(struct rd r, struct target_host *host)
{
	struct rd list, data;
	size_t type;
	int found = 0, res = PEEK_SNI_NONE;

	if (get_vec(&r, 2, 0, &list) != 0 || r.n != 0)
		return PEEK_SNI_BAD;
	while (list.n > 0 && res != PEEK_SNI_BAD) {
		if (get_u16(&list, &type) != 0 ||
		    get_vec(&list, 2, 0, &data) != 0)
			return PEEK_SNI_BAD;
		if (type != EXT_SERVER_NAME)
			continue;
		res = found++ ? PEEK_SNI_BAD : server_name(data, host);
	}
	return res;
}

/* The ClientHello body (RFC 8446 4.1.2; TLS 1.0 to 1.2 read the same). */
static int
client_hello(struct rd r, struct target_host *host)
{
	struct rd skip;
	size_t major;

	if (get_u8(&r, &major) != 0 || major != 3 || get_sub(&r, 1, &skip))
		return PEEK_SNI_BAD;
	if (get_sub(&r, 32, &skip) != 0 || get_vec(&r, 1, 0, &skip) != 0 ||
	    skip.n > 32)
		return PEEK_SNI_BAD;
	if (get_vec(&r, 2, 2, &skip) != 0 || skip.n % 2 != 0)
		return PEEK_SNI_BAD;
	if (get_vec(&r, 1, 1, &skip) != 0)
		return PEEK_SNI_BAD;
	if (r.n == 0)
		return PEEK_SNI_NONE;
	return extensions(r, host);
}

int
peek_sni(const uint8_t *p, size_t n, struct target_host *host)
{
	size_t rec, hs;

	if (n >= 1 && p[0] != 0x16)
		return PEEK_SNI_BAD;
	if (n >= 2 && p[1] != 0x03)
		return PEEK_SNI_BAD;
	if (n >= 3 && p[2] > 0x04)
		return PEEK_SNI_BAD;
	if (n < REC_HEAD)
		return PEEK_SNI_MORE;
	rec = (size_t)p[3] << 8 | p[4];
	if (rec < HS_HEAD || rec > REC_MAX)
		return PEEK_SNI_BAD;
	if (n >= REC_HEAD + 1 && p[REC_HEAD] != HS_CLIENT_HELLO)
		return PEEK_SNI_BAD;
	if (n < REC_HEAD + HS_HEAD)
		return PEEK_SNI_MORE;
	hs = (size_t)p[6] << 16 | (size_t)p[7] << 8 | p[8];
	/* The hello alone fills the record: nothing else is sent with it. */
	if (hs + HS_HEAD != rec)
		return PEEK_SNI_BAD;
	if (n < REC_HEAD + rec)
		return PEEK_SNI_MORE;
	return client_hello((struct rd){p + REC_HEAD + HS_HEAD, hs}, host);
}
