/*
 * fuzz_target.c: libFuzzer target for policy/target.c.
 *
 * The first byte picks the function (host, authority, URL, path, port),
 * the rest is its input, passed in an exact-size heap copy so that any
 * read past the given length is caught.  On success the results must be
 * canonical: a host's name is NUL-terminated with len == strlen(name),
 * and parsing it again gives the same kind, name and address; a path
 * starts with '/', has no empty, "." or ".." segment, none of those with
 * ';' parameters either ("..;"), is shortest-form UTF-8, holds no '%'
 * followed by two hex digits (double encoding), and normalising it again
 * gives it back.  A violation abort()s.
 *
 * Build with -DFUZZ_URL_NUL to give target_url_parse() a NUL after its
 * input, which hides its read past LEN (strcspn on the authority) so that
 * a run can go on to find something else.
 *
 *	./fuzz_target -max_total_time=60 tests/fuzz/corpus/target
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/ph_err.h"
#include "policy/target.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

enum fuzz_fn {
	FUZZ_HOST,
	FUZZ_AUTHORITY,
	FUZZ_URL,
	FUZZ_PATH,
	FUZZ_PORT,
	FUZZ_NFN,
};

static void
check(int ok)
{
	if (!ok)
		abort();
}

static int
is_name_byte(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
	    c == '_' || c == '.';
}

/* H is canonical, and parsing its name again gives H back. */
static void
check_host(const struct target_host *h)
{
	struct target_host again;
	size_t i;

	check(memchr(h->name, '\0', sizeof(h->name)) != NULL);
	check(h->len == strlen(h->name) && h->len > 0);
	check(h->kind == TARGET_NAME || h->kind == TARGET_V4 ||
	    h->kind == TARGET_V6);
	if (h->kind == TARGET_NAME) {
		for (i = 0; i < h->len; i++)
			check(is_name_byte((unsigned char)h->name[i]));
		check(h->name[0] != '.' && h->name[h->len - 1] != '.');
		check(strstr(h->name, "..") == NULL);
	}
	check(target_host_parse(h->name, h->len, &again) == 0);
	check(again.kind == h->kind && again.len == h->len);
	check(strcmp(again.name, h->name) == 0);
	check(memcmp(again.addr, h->addr, sizeof(h->addr)) == 0);
}

/* Bytes that read differently raw than decoded: no idempotence for them. */
static int
has_decoded_special(const char *s)
{
	for (; *s != '\0'; s++)
		if (*s == '%' || *s == '?' || *s == '#' || *s == ' ' ||
		    (unsigned char)*s >= 0x80)
			return 1;
	return 0;
}

static int
hex(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	    (c >= 'A' && c <= 'F');
}

/* No segment reads as empty, "." or ".." once its parameters are cut. */
static void
check_params(const char *p)
{
	const char *seg, *end, *semi;
	size_t k;

	for (seg = p + 1; *seg != '\0'; seg = *end ? end + 1 : end) {
		end = seg + strcspn(seg, "/");
		semi = memchr(seg, ';', end - seg);
		if (semi == NULL)
			continue;
		k = semi - seg;
		check(k > 0 && !(k == 1 && seg[0] == '.') &&
		    !(k == 2 && seg[0] == '.' && seg[1] == '.'));
	}
}

static void
check_path(const char *p, size_t inlen)
{
	size_t len = strlen(p), i;
	char *again;

	check(p[0] == '/' && len <= inlen);
	check(strstr(p, "//") == NULL);
	check(strstr(p, "/./") == NULL && strstr(p, "/../") == NULL);
	check(!(len >= 2 && strcmp(p + len - 2, "/.") == 0));
	check(!(len >= 3 && strcmp(p + len - 3, "/..") == 0));
	check(target_utf8_valid(p, len));
	for (i = 0; i + 2 < len; i++)
		check(!(p[i] == '%' && hex((unsigned char)p[i + 1]) &&
		    hex((unsigned char)p[i + 2])));
	check_params(p);
	if (has_decoded_special(p))
		return;
	again = malloc(len + 2);
	check(again != NULL);
	check(target_path_normalise(p, len, again, len + 2) == 0);
	check(strcmp(again, p) == 0);
	free(again);
}

static void
fuzz_host(const char *s, size_t len)
{
	struct target_host h;

	if (target_host_parse(s, len, &h) == 0)
		check_host(&h);
}

static void
fuzz_authority(const char *s, size_t len)
{
	struct target_host h;
	uint16_t port = 1;

	if (target_authority_parse(s, len, &h, &port) == 0)
		check_host(&h);
}

static void
fuzz_url(const char *s, size_t len)
{
	struct target_url u;
	char *path, *in = NULL;

	if ((path = malloc(len + 2)) == NULL)
		return;
#ifdef FUZZ_URL_NUL
	if ((in = malloc(len + 1)) == NULL)
		goto out;
	memcpy(in, s, len);
	in[len] = '\0';
	s = in;
#endif
	if (target_url_parse(s, len, &u, path, len + 2) == 0) {
		check_host(&u.host);
		check(u.port != 0 && (u.tls == 0 || u.tls == 1));
		check_path(path, len);
	}
#ifdef FUZZ_URL_NUL
out:
#endif
	free(in);
	free(path);
}

static void
fuzz_path(const char *s, size_t len)
{
	char *out;
	int r;

	if ((out = malloc(len + 2)) == NULL)
		return;
	r = target_path_normalise(s, len, out, len + 2);
	check(r != PH_ERR_TOO_LONG); /* LEN + 2 always suffices */
	if (r == 0)
		check_path(out, len);
	free(out);
}

static void
fuzz_port(const char *s, size_t len)
{
	uint16_t port = 0;

	if (target_port_parse(s, len, &port) == 0)
		check(port != 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;
	size_t len;

	if (size == 0)
		return 0;
	len = size - 1;
	if ((s = malloc(len ? len : 1)) == NULL)
		return 0;
	memcpy(s, data + 1, len);
	switch (data[0] % FUZZ_NFN) {
	case FUZZ_HOST:
		fuzz_host(s, len);
		break;
	case FUZZ_AUTHORITY:
		fuzz_authority(s, len);
		break;
	case FUZZ_URL:
		fuzz_url(s, len);
		break;
	case FUZZ_PATH:
		fuzz_path(s, len);
		break;
	case FUZZ_PORT:
		fuzz_port(s, len);
		break;
	}
	free(s);
	return 0;
}
