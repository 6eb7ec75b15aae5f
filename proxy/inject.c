/*
 * inject.c: injected fields and placeholder stand-ins (see inject.h).
 *
 * A stand-in has the shape of the secret when the secret has a known
 * token shape, so that tools which check a token's shape before using
 * the network (gh, npm) accept it: a listed prefix ("ghp_", "npm_",
 * "pypi-", "github_pat_") is kept, and the body after it is random
 * characters of the body's alphabet, of the same length, with the
 * format's separators ('_' in github_pat_) where they were; a JWT keeps
 * its header (public: it names the algorithm) and gets random base64url
 * payload and signature of the same lengths.  Any other secret gets
 * random letters and digits, as long as the secret but at least
 * STANDIN_MIN: nothing of an arbitrary secret is kept, its first bytes
 * are part of it.  A stand-in is worth nothing outside this run's proxy.
 */
#include <sys/random.h>

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "policy/policy.h"
#include "policy/secret.h"
#include "policy/target.h"
#include "proxy/http.h"
#include "proxy/inject.h"
#include "proxy/scan.h"

#define STANDIN_MIN 20
#define STANDIN_MAX 512
#define JWT_HEADER_MAX 1024 /* a longer first part is no JWT header */

struct standin {
	const char *env;
	const char *secret_name;
	char *value;
	size_t len;
};

struct inject_standins {
	struct standin *v;
	size_t n;
	struct scan *sc; /* the stand-ins in the forms a leak may take */
};

/* Forms of a stand-in the tripwire looks for (besides %XX, decoded). */
#define TRIP_FORMS (SCAN_RAW | SCAN_CASE | SCAN_BASE64)

static const char alnum[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
static const char b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/*
 * Public prefixes of token formats and the alphabet of the body after
 * them; a body byte outside it is a separator of the format and stays.
 */
static const struct token_shape {
	const char *prefix;
	const char *body;
} token_shapes[] = {
    {"github_pat_", alnum}, /* 22 alnum '_' 59 alnum */
    {"ghp_", alnum}, /* then 36 alnum; gho_, ghs_ too */
    {"gho_", alnum},
    {"ghu_", alnum},
    {"ghs_", alnum},
    {"ghr_", alnum},
    {"glpat-", b64url},
    {"npm_", alnum}, /* then 36 alnum */
    {"pypi-", b64url}, /* then a base64url macaroon */
    {"sk-", alnum},
    {"xoxb-", alnum},
    {"xoxp-", alnum},
    {"hf_", alnum},
};

/* The listed shape V starts with (with a body after it), or NULL. */
static const struct token_shape *
token_shape(const uint8_t *v, size_t len)
{
	size_t i, n;

	for (i = 0; i < sizeof(token_shapes) / sizeof(token_shapes[0]); i++) {
		n = strlen(token_shapes[i].prefix);
		if (n < len && memcmp(v, token_shapes[i].prefix, n) == 0)
			return &token_shapes[i];
	}
	return NULL;
}

/* Is every byte of V (LEN bytes) in the base64url alphabet? */
static int
all_b64url(const uint8_t *v, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (v[i] == '\0' || strchr(b64url, v[i]) == NULL)
			return 0;
	return 1;
}

/* Does base64url V (LEN bytes, unpadded) decode to a JSON object with
 * a string "alg"? */
static int
jwt_header(const uint8_t *v, size_t len)
{
	unsigned char in[JWT_HEADER_MAX + 4], out[JWT_HEADER_MAX];
	size_t i, n = len;
	int dec, ok = 0;
	json_t *j;

	if (len == 0 || len > JWT_HEADER_MAX || len % 4 == 1)
		return 0;
	for (i = 0; i < len; i++)
		in[i] = v[i] == '-' ? '+' : v[i] == '_' ? '/' : v[i];
	while (n % 4 != 0)
		in[n++] = '=';
	if ((dec = EVP_DecodeBlock(out, in, (int)n)) < 0)
		return 0;
	dec -= (int)(n - len); /* EVP_DecodeBlock counts the padding */
	if ((j = json_loadb((const char *)out, (size_t)dec, 0, NULL)) != NULL)
		ok = json_is_object(j) &&
		    json_is_string(json_object_get(j, "alg"));
	json_decref(j);
	return ok;
}

/*
 * The length of V's header when V is a JWT (three base64url parts,
 * the first a JSON object naming "alg"), else 0.
 */
static size_t
jwt_header_len(const uint8_t *v, size_t len)
{
	const uint8_t *d1, *d2;

	if ((d1 = memchr(v, '.', len)) == NULL ||
	    (d2 = memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - v))) == NULL ||
	    memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - v)) != NULL ||
	    d2 == d1 + 1 || !all_b64url(v, (size_t)(d1 - v)) ||
	    !all_b64url(d1 + 1, (size_t)(d2 - d1 - 1)) ||
	    !all_b64url(d2 + 1, len - (size_t)(d2 + 1 - v)) ||
	    !jwt_header(v, (size_t)(d1 - v)))
		return 0;
	return (size_t)(d1 - v);
}

/*
 * Fills S[FROM..LEN) from RND: where V (VLEN bytes) has a byte of
 * ALPHA (or none), a random one of ALPHA; elsewhere V's byte, a
 * separator of the format ('.' of a JWT, '_' of github_pat_).  The
 * modulo bias is irrelevant to a worthless token.
 */
static void
fill_body(char *s, size_t from, size_t len, const uint8_t *rnd,
    const uint8_t *v, size_t vlen, const char *alpha)
{
	size_t i, na = strlen(alpha);

	for (i = from; i < len; i++)
		if (i < vlen && (v[i] == '\0' || strchr(alpha, v[i]) == NULL))
			s[i] = (char)v[i];
		else
			s[i] = alpha[rnd[i] % na];
}

static char *
make_standin(const struct secret *sec, size_t *outlen)
{
	const struct token_shape *ts = NULL;
	const uint8_t *v = NULL;
	const char *alpha = alnum;
	uint8_t rnd[STANDIN_MAX];
	size_t len = 0, vlen = 0, keep = 0;
	char *s;

	if (sec != NULL && (v = secret_value(sec, &len)) != NULL) {
		/* A JWT cut at STANDIN_MAX would not be one. */
		if (len <= STANDIN_MAX && (keep = jwt_header_len(v, len)) > 0)
			alpha = b64url;
		else if ((ts = token_shape(v, len)) != NULL) {
			keep = strlen(ts->prefix);
			alpha = ts->body;
		}
		if (keep > 0)
			vlen = len; /* separators are kept from here */
	}
	len = len < STANDIN_MIN ? STANDIN_MIN : len;
	len = len > STANDIN_MAX ? STANDIN_MAX : len;
	if ((s = malloc(len + 1)) == NULL ||
	    getrandom(rnd, len, 0) != (ssize_t)len) {
		free(s);
		return NULL;
	}
	if (keep > 0)
		memcpy(s, v, keep);
	fill_body(s, keep, len, rnd, v, vlen, alpha);
	s[len] = '\0';
	*outlen = len;
	return s;
}

struct add_ctx {
	struct inject_standins *si;
	int failed;
};

static void
add_one(void *arg, const struct policy_placeholder *ph)
{
	struct add_ctx *c = arg;
	struct standin *v, *st;

	if (c->failed)
		return;
	v = realloc(c->si->v, (c->si->n + 1) * sizeof(*v));
	if (v == NULL) {
		c->failed = 1;
		return;
	}
	c->si->v = v;
	st = &v[c->si->n];
	st->env = ph->env;
	st->secret_name = ph->secret_name;
	if ((st->value = make_standin(ph->secret, &st->len)) == NULL) {
		c->failed = 1;
		return;
	}
	c->si->n++;
}

struct inject_standins *
inject_standins_new(const struct policy *p)
{
	struct add_ctx c = {NULL, 0};
	size_t i;

	if ((c.si = calloc(1, sizeof(*c.si))) == NULL)
		return NULL;
	policy_placeholders(p, add_one, &c);
	if (c.failed || (c.si->sc = scan_new()) == NULL)
		goto fail;
	for (i = 0; i < c.si->n; i++)
		if (scan_add_value(c.si->sc, c.si->v[i].value, c.si->v[i].len,
		        (unsigned)i, TRIP_FORMS) != 0)
			goto fail;
	if (scan_compile(c.si->sc) != 0)
		goto fail;
	return c.si;
fail:
	inject_standins_free(c.si);
	return NULL;
}

void
inject_standins_free(struct inject_standins *si)
{
	size_t i;

	if (si == NULL)
		return;
	for (i = 0; i < si->n; i++)
		free(si->v[i].value);
	free(si->v);
	scan_free(si->sc);
	free(si);
}

size_t
inject_standins_count(const struct inject_standins *si)
{
	return si != NULL ? si->n : 0;
}

const char *
inject_standin_env(const struct inject_standins *si, size_t i)
{
	return si != NULL && i < si->n ? si->v[i].env : NULL;
}

const char *
inject_standin_value(const struct inject_standins *si, size_t i)
{
	return si != NULL && i < si->n ? si->v[i].value : NULL;
}

/* Does DEC bind the variable of stand-in ST? */
static const struct policy_placeholder *
binding(const struct standin *st, const struct policy_decision *dec)
{
	size_t i;

	for (i = 0; i < dec->nplaceholder; i++)
		if (strcmp(dec->placeholder[i].env, st->env) == 0)
			return &dec->placeholder[i];
	return NULL;
}

static int
is_name(const char *name, size_t len, const char *want)
{
	return strlen(want) == len && strncasecmp(name, want, len) == 0;
}

/* Does PH swap its stand-in in field NAME? */
static int
swaps_in(const struct policy_placeholder *ph, const char *name, size_t len)
{
	size_t k;

	if (is_name(name, len, "authorization"))
		return 1;
	for (k = 0; k < ph->nheaders; k++)
		if (is_name(name, len, ph->headers[k]))
			return 1;
	return 0;
}

/* Is field NAME where some stand-in DEC binds is swapped? */
static int
swap_site(const struct policy_decision *dec, const char *name, size_t len)
{
	size_t i;

	for (i = 0; dec != NULL && i < dec->nplaceholder; i++)
		if (swaps_in(&dec->placeholder[i], name, len))
			return 1;
	return 0;
}

/*
 * When V is "Basic CREDENTIALS", decodes them into *OUT (*OUTLEN bytes,
 * to wipe and free) and returns 1; 0 when V is not Basic or not valid
 * Base64; -1 when out of memory.
 */
static int
basic_decode(const char *v, size_t len, uint8_t **out, size_t *outlen)
{
	size_t i = 6, n, pad = 0;
	int r;

	if (len < 7 || strncasecmp(v, "basic ", 6) != 0)
		return 0;
	while (i < len && v[i] == ' ')
		i++;
	v += i;
	n = len - i;
	if (n == 0 || n % 4 != 0 || n > INT32_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!(isalnum((unsigned char)v[i]) || v[i] == '+' ||
		        v[i] == '/' || (v[i] == '=' && i + 2 >= n)))
			return 0;
	pad = (v[n - 1] == '=') + (v[n - 2] == '=');
	if ((*out = malloc(n / 4 * 3 + 1)) == NULL)
		return -1;
	r = EVP_DecodeBlock(*out, (const unsigned char *)v, (int)n);
	if (r < 0 || (size_t)r < pad) {
		free(*out);
		*out = NULL;
		return 0;
	}
	*outlen = (size_t)r - pad;
	return 1;
}

/* Each stand-in in S[0..LEN) in a form SI's search knows; -1 when done. */
static long
next_found(const struct inject_standins *si, const uint8_t **s, size_t *len)
{
	uint32_t st = SCAN_START;
	size_t end;
	unsigned id;

	if (!scan_feed(si->sc, &st, *s, *len, &end, &id))
		return -1;
	*s += end;
	*len -= end;
	return (long)id;
}

/*
 * The stand-ins in a field where DEC swaps some: each must be bound by
 * DEC to a variable that swaps in this field (in Basic credentials,
 * decoded).  Returns the first that is not, or -1 (-2: out of memory).
 */
static long
site_leak(const struct inject_standins *si, const struct http_field *f,
    const struct policy_decision *dec)
{
	const struct policy_placeholder *ph;
	const uint8_t *p = (const uint8_t *)f->value;
	uint8_t *plain = NULL;
	size_t len = f->value_len, plen = 0;
	long i, r = -1;
	int b;

	if ((b = basic_decode(f->value, f->value_len, &plain, &plen)) < 0)
		return -2;
	if (b) {
		p = plain;
		len = plen;
	}
	while (r < 0 && (i = next_found(si, &p, &len)) >= 0)
		if ((ph = binding(&si->v[i], dec)) == NULL ||
		    !swaps_in(ph, f->name, f->name_len))
			r = i;
	if (plain != NULL) {
		explicit_bzero(plain, plen);
		free(plain);
	}
	return r;
}

/*
 * Decodes %XX in place (twice over, for %25XX), returns the new length.
 * What a server may decode, the tripwire decodes too.
 */
static size_t
percent_decode(char *s, size_t len)
{
	size_t i, n, round;
	int hi, lo;

	for (round = 0; round < 2; round++) {
		for (i = n = 0; i < len; i++)
			if (s[i] == '%' && i + 2 < len &&
			    (hi = target_hexval(s[i + 1])) >= 0 &&
			    (lo = target_hexval(s[i + 2])) >= 0) {
				s[n++] = (char)(hi << 4 | lo);
				i += 2;
			} else
				s[n++] = s[i];
		len = n;
	}
	return len;
}

/* The first stand-in in BUF[0..LEN) as is or %-decoded (BUF changes). */
static long
found(const struct inject_standins *si, char *buf, size_t len)
{
	const uint8_t *p = (const uint8_t *)buf;
	size_t n = len;
	long i;

	if ((i = next_found(si, &p, &n)) >= 0)
		return i;
	p = (const uint8_t *)buf;
	n = percent_decode(buf, len);
	return next_found(si, &p, &n);
}

/*
 * Runs of H's fields outside swap sites: names together, values
 * together, names and values in turn (a stand-in cut in two lands whole
 * in one of them); in BUF, 3 * head_len bytes.
 */
struct runs {
	char *names, *values, *both;
	size_t nn, nv, nb;
};

static void
make_runs(struct runs *r, char *buf, const struct http_head *h,
    const struct policy_decision *dec)
{
	const struct http_field *f;
	size_t i;

	r->names = buf;
	r->values = buf + h->head_len;
	r->both = buf + 2 * h->head_len;
	r->nn = r->nv = r->nb = 0;
	for (i = 0; i < h->nfields; i++) {
		f = &h->fields[i];
		memcpy(r->names + r->nn, f->name, f->name_len);
		r->nn += f->name_len;
		if (swap_site(dec, f->name, f->name_len))
			continue;
		memcpy(r->values + r->nv, f->value, f->value_len);
		r->nv += f->value_len;
		memcpy(r->both + r->nb, f->name, f->name_len);
		memcpy(r->both + r->nb + f->name_len, f->value, f->value_len);
		r->nb += f->name_len + f->value_len;
	}
}

long
inject_leak(const struct inject_standins *si, const struct http_head *h,
    const struct policy_decision *dec, int tls, const char **where)
{
	const struct policy_decision *bound = tls ? dec : NULL;
	const char *w = NULL;
	struct runs r;
	char *buf;
	long i = -1;
	size_t f;

	if (si == NULL || si->n == 0)
		return -1;
	/* The target, the fields, a copy of each: within 4 head lengths. */
	if ((buf = malloc(4 * h->head_len + 1)) == NULL)
		return INJECT_LEAK_NOMEM;
	memcpy(buf + 3 * h->head_len, h->target, h->target_len);
	if ((i = found(si, buf + 3 * h->head_len, h->target_len)) >= 0)
		w = "in the request target";
	for (f = 0; i < 0 && bound != NULL && f < h->nfields; f++)
		if (swap_site(
		        bound, h->fields[f].name, h->fields[f].name_len) &&
		    (i = site_leak(si, &h->fields[f], bound)) >= 0)
			w = "in a field not listed for it";
	if (i == -2)
		i = INJECT_LEAK_NOMEM;
	if (i == -1) {
		make_runs(&r, buf, h, bound);
		if ((i = found(si, r.names, r.nn)) >= 0)
			w = "in a field name";
		else if ((i = found(si, r.both, r.nb)) >= 0 ||
		    (i = found(si, r.values, r.nv)) >= 0)
			w = "in a header field";
	}
	free(buf);
	if (where != NULL && w != NULL)
		*where = w;
	return i;
}

int
inject_replaces(const struct policy_decision *dec, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < dec->ninject; i++)
		if (strlen(dec->inject[i].header) == len &&
		    strncasecmp(dec->inject[i].header, name, len) == 0)
			return 1;
	return 0;
}

/* The first bound stand-in in S[0..LEN), and where; NULL when none. */
static const struct standin *
first_bound(const struct inject_standins *si, const struct policy_decision *dec,
    const char *s, size_t len, const char **at)
{
	const struct standin *best = NULL;
	const char *p;
	size_t i;

	for (i = 0; si != NULL && i < si->n; i++) {
		if (binding(&si->v[i], dec) == NULL)
			continue;
		p = memmem(s, len, si->v[i].value, si->v[i].len);
		if (p != NULL && (best == NULL || p < *at)) {
			best = &si->v[i];
			*at = p;
		}
	}
	return best;
}

/* A value that can go into a header field: no CR, LF, NUL or control. */
static int
field_safe(const uint8_t *val, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if ((val[i] < ' ' && val[i] != '\t') || val[i] == 0x7f)
			return 0;
	return 1;
}

int
inject_add_swapped(struct evbuffer *out, const char *s, size_t len,
    const struct inject_standins *si, const struct policy_decision *dec,
    const char **used)
{
	const struct policy_placeholder *ph;
	const struct standin *st;
	const uint8_t *val;
	const char *at = NULL;
	size_t vlen;

	while ((st = first_bound(si, dec, s, len, &at)) != NULL) {
		ph = binding(st, dec);
		if ((val = secret_value(ph->secret, &vlen)) == NULL ||
		    !field_safe(val, vlen))
			return -1;
		evbuffer_add(out, s, at - s);
		evbuffer_add(out, val, vlen);
		*used = ph->secret_name;
		len -= (at - s) + st->len;
		s = at + st->len;
	}
	evbuffer_add(out, s, len);
	return 0;
}

/* "Basic " and the Base64 of B's bytes, which are then wiped. */
static int
add_basic_swapped(struct evbuffer *out, struct evbuffer *b)
{
	size_t n = evbuffer_get_length(b);
	unsigned char *plain = evbuffer_pullup(b, -1), *enc;
	int r = -1, k;

	if ((plain == NULL && n > 0) || n > INT32_MAX / 2 ||
	    (enc = malloc(4 * ((n + 2) / 3) + 1)) == NULL)
		goto out;
	k = EVP_EncodeBlock(enc, plain, (int)n);
	evbuffer_add(out, "Basic ", 6);
	evbuffer_add(out, enc, (size_t)k);
	explicit_bzero(enc, (size_t)k);
	free(enc);
	r = 0;
out:
	if (plain != NULL)
		explicit_bzero(plain, n);
	return r;
}

int
inject_add_field(struct evbuffer *out, const struct http_field *f,
    const struct inject_standins *si, const struct policy_decision *dec,
    const char **used)
{
	struct evbuffer *b = NULL;
	uint8_t *plain = NULL;
	size_t plen = 0;
	int r = -1, basic = 0;

	evbuffer_add(out, f->name, f->name_len);
	evbuffer_add(out, ": ", 2);
	if (!swap_site(dec, f->name, f->name_len))
		evbuffer_add(out, f->value, f->value_len);
	else if (is_name(f->name, f->name_len, "authorization") &&
	    (basic = basic_decode(f->value, f->value_len, &plain, &plen)) > 0) {
		/* user:password, either may be a stand-in. */
		if ((b = evbuffer_new()) == NULL ||
		    inject_add_swapped(
		        b, (const char *)plain, plen, si, dec, used) != 0 ||
		    add_basic_swapped(out, b) != 0)
			goto out;
	} else if (basic < 0 ||
	    inject_add_swapped(out, f->value, f->value_len, si, dec, used) != 0)
		goto out;
	evbuffer_add(out, "\r\n", 2);
	r = 0;
out:
	if (plain != NULL) {
		explicit_bzero(plain, plen);
		free(plain);
	}
	if (b != NULL)
		evbuffer_free(b);
	return r;
}

/* "Basic " base64(user ":" value), in a buffer wiped after use. */
static int
add_basic(struct evbuffer *out, const struct policy_inject *in,
    const uint8_t *val, size_t vlen)
{
	size_t ulen = strlen(in->user), plain = ulen + 1 + vlen;
	unsigned char *buf, *enc;
	int r = -1, n;

	buf = malloc(plain);
	enc = malloc(4 * ((plain + 2) / 3) + 1);
	if (buf != NULL && enc != NULL) {
		memcpy(buf, in->user, ulen);
		buf[ulen] = ':';
		memcpy(buf + ulen + 1, val, vlen);
		n = EVP_EncodeBlock(enc, buf, (int)plain);
		evbuffer_add(out, in->header, strlen(in->header));
		evbuffer_add(out, ": Basic ", 8);
		evbuffer_add(out, enc, (size_t)n);
		evbuffer_add(out, "\r\n", 2);
		explicit_bzero(enc, (size_t)n);
		r = 0;
	}
	if (buf != NULL)
		explicit_bzero(buf, plain);
	free(buf);
	free(enc);
	return r;
}

int
inject_add_fields(struct evbuffer *out, const struct policy_decision *dec)
{
	const struct policy_inject *in;
	const uint8_t *val;
	size_t i, vlen;

	for (i = 0; i < dec->ninject; i++) {
		in = &dec->inject[i];
		if (in->secret == NULL ||
		    (val = secret_value(in->secret, &vlen)) == NULL ||
		    !field_safe(val, vlen))
			return -1;
		switch (in->kind) {
		case POLICY_INJECT_BASIC:
			if (add_basic(out, in, val, vlen) != 0)
				return -1;
			break;
		case POLICY_INJECT_BEARER:
			evbuffer_add(out, in->header, strlen(in->header));
			evbuffer_add(out, ": Bearer ", 9);
			evbuffer_add(out, val, vlen);
			evbuffer_add(out, "\r\n", 2);
			break;
		case POLICY_INJECT_HEADER:
			evbuffer_add(out, in->header, strlen(in->header));
			evbuffer_add(out, ": ", 2);
			evbuffer_add(out, val, vlen);
			evbuffer_add(out, "\r\n", 2);
			break;
		}
	}
	return 0;
}
