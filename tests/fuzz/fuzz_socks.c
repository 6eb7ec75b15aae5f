/*
 * fuzz_socks.c: libFuzzer target for proxy/socks.c, the first code to
 * read what a SOCKS client in the sandbox sends.
 *
 * The input is read as a greeting and then, from where the greeting
 * ended (or from the start), as a request, whole and at every cut.
 * Checks: a result is SOCKS_MORE, a SOCKS_E_* code or a length within
 * the input; a cut of a message that parsed whole is SOCKS_MORE or the
 * same error (never a different success); a request's host is
 * NUL-terminated at its length, a name is canonical (no upper case, no
 * trailing dot), its port not 0; a reply fits SOCKS_REPLY_MAX.  A
 * violation abort()s.
 *
 *	./fuzz_socks -max_total_time=30 tests/fuzz/corpus/socks
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sys/socket.h>

#include "proxy/socks.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check(int ok)
{
	if (!ok)
		abort();
}

static void
check_request(const uint8_t *p, size_t n)
{
	struct socks_request r, c;
	static const uint8_t zero[16];
	uint8_t out[SOCKS_REPLY_MAX];
	int rc = socks_request(p, n, &r), rc2;
	size_t i;

	check(rc <= SOCKS_REQUEST_MAX && (rc <= 0 || (size_t)rc <= n));
	check(rc >= SOCKS_E_RESERVED);
	if (rc > 0) {
		check(r.cmd == SOCKS_CMD_CONNECT);
		check(r.port != 0);
		check(r.host.len > 0 && r.host.name[r.host.len] == '\0' &&
		    strlen(r.host.name) == r.host.len);
		for (i = 0; r.host.kind == TARGET_NAME && i < r.host.len; i++)
			check(r.host.name[i] < 'A' || r.host.name[i] > 'Z');
		check(r.host.name[r.host.len - 1] != '.');
		for (i = 0; i < (size_t)rc; i++) {
			rc2 = socks_request(p, i, &c);
			check(rc2 == SOCKS_MORE);
		}
	}
	check(socks_reply(socks_reply_for_error(rc), AF_INET6,
	          rc > 0 ? r.host.addr : zero, r.port, out) <= SOCKS_REPLY_MAX);
	check(socks_reply_name(socks_reply_for_error(rc)) != NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *p, size_t n)
{
	int g = socks_greeting(p, n);
	size_t i;

	check(g <= 257 && (g <= 0 || (size_t)g <= n));
	check(g >= SOCKS_E_RESERVED);
	if (g > 0) {
		for (i = 0; i < (size_t)g; i++)
			check(socks_greeting(p, i) == SOCKS_MORE);
		check_request(p + g, n - (size_t)g);
	}
	check_request(p, n);
	return 0;
}
