/*
 * inject.c: injected fields and placeholder stand-ins (see inject.h).
 *
 * A stand-in keeps the secret's length and, when the secret starts with
 * one, a well-known token prefix ("ghp_", "npm_", "glpat-"), so that tools
 * which check a token's shape accept it; the rest is random letters and
 * digits.  Only listed prefixes are kept: the first bytes of an arbitrary
 * secret are part of the secret.  A stand-in is worth nothing outside
 * this run's proxy.
 */
#include <sys/random.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <openssl/evp.h>

#include "policy/policy.h"
#include "policy/secret.h"
#include "proxy/http.h"
#include "proxy/inject.h"

#define STANDIN_MIN 20
#define STANDIN_MAX 512

struct standin {
	const char *env;
	const char *secret_name;
	char *value;
	size_t len;
};

struct inject_standins {
	struct standin *v;
	size_t n;
};

static const char alnum[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/* Public prefixes of token formats (GitHub, GitLab, npm, PyPI, ...). */
static const char *const prefixes[] = {
    "github_pat_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "glpat-",
    "npm_",
    "pypi-",
    "sk-",
    "xoxb-",
    "xoxp-",
    "hf_",
};

/* The length of the listed prefix V starts with, or 0. */
static size_t
prefix_len(const uint8_t *v, size_t len)
{
	size_t i, n;

	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		n = strlen(prefixes[i]);
		if (n < len && memcmp(v, prefixes[i], n) == 0)
			return n;
	}
	return 0;
}

static char *
make_standin(const struct secret *sec, size_t *outlen)
{
	const uint8_t *v;
	uint8_t rnd[STANDIN_MAX];
	size_t len = 0, pre = 0, i;
	char *s;

	if (sec != NULL && (v = secret_value(sec, &len)) != NULL)
		pre = prefix_len(v, len);
	len = len < STANDIN_MIN ? STANDIN_MIN : len;
	len = len > STANDIN_MAX ? STANDIN_MAX : len;
	if ((s = malloc(len + 1)) == NULL ||
	    getrandom(rnd, len, 0) != (ssize_t)len) {
		free(s);
		return NULL;
	}
	if (pre > 0)
		memcpy(s, v, pre);
	/* 62 letters: the modulo bias is irrelevant to a worthless token. */
	for (i = pre; i < len; i++)
		s[i] = alnum[rnd[i] % (sizeof(alnum) - 1)];
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

	if ((c.si = calloc(1, sizeof(*c.si))) == NULL)
		return NULL;
	policy_placeholders(p, add_one, &c);
	if (c.failed) {
		inject_standins_free(c.si);
		return NULL;
	}
	return c.si;
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
carries(const struct standin *st, const char *s, size_t len)
{
	return memmem(s, len, st->value, st->len) != NULL;
}

long
inject_leak(const struct inject_standins *si, const struct http_head *h,
    const struct policy_decision *dec, int tls)
{
	const struct standin *st;
	size_t i, f;
	int seen;

	for (i = 0; si != NULL && i < si->n; i++) {
		st = &si->v[i];
		seen = carries(st, h->target, h->target_len);
		for (f = 0; f < h->nfields && !seen; f++)
			seen = carries(
			    st, h->fields[f].value, h->fields[f].value_len);
		if (seen && (!tls || dec == NULL || binding(st, dec) == NULL))
			return (long)i;
	}
	return -1;
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

/* VAL percent-encoded but for RFC 3986's unreserved characters. */
static void
add_encoded(struct evbuffer *out, const uint8_t *val, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if ((val[i] >= 'a' && val[i] <= 'z') ||
		    (val[i] >= 'A' && val[i] <= 'Z') ||
		    (val[i] >= '0' && val[i] <= '9') ||
		    strchr("-._~", val[i]) != NULL)
			evbuffer_add(out, &val[i], 1);
		else
			evbuffer_add_printf(out, "%%%02X", val[i]);
}

int
inject_add_swapped(struct evbuffer *out, const char *s, size_t len,
    const struct inject_standins *si, const struct policy_decision *dec,
    const char **used, int in_target)
{
	const struct policy_placeholder *ph;
	const struct standin *st;
	const uint8_t *val;
	const char *at = NULL;
	size_t vlen;

	while ((st = first_bound(si, dec, s, len, &at)) != NULL) {
		ph = binding(st, dec);
		if ((val = secret_value(ph->secret, &vlen)) == NULL ||
		    (!in_target && !field_safe(val, vlen)))
			return -1;
		evbuffer_add(out, s, at - s);
		if (in_target)
			add_encoded(out, val, vlen);
		else
			evbuffer_add(out, val, vlen);
		*used = ph->secret_name;
		len -= (at - s) + st->len;
		s = at + st->len;
	}
	evbuffer_add(out, s, len);
	return 0;
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
		evbuffer_add_printf(out, "%s: Basic ", in->header);
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
			evbuffer_add_printf(out, "%s: Bearer ", in->header);
			evbuffer_add(out, val, vlen);
			evbuffer_add(out, "\r\n", 2);
			break;
		case POLICY_INJECT_HEADER:
			evbuffer_add_printf(out, "%s: ", in->header);
			evbuffer_add(out, val, vlen);
			evbuffer_add(out, "\r\n", 2);
			break;
		}
	}
	return 0;
}
