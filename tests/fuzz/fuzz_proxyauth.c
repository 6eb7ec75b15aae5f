/*
 * fuzz_proxyauth.c: libFuzzer target for proxy/gate.c's reading of a
 * gateway client's Proxy-Authorization (RFC 7617 Basic), the only bytes
 * of a client the gate parses before a policy is chosen.
 *
 * The input is tried as a field value and as a whole request head.
 * Checks: a login found is 1..GATE_USER_MAX bytes without a colon or a
 * control byte, its password at most GATE_PASS_MAX bytes without a control
 * byte and NUL-terminated at its length; a refusal leaves both buffers
 * empty; the result for N bytes never depends on the bytes past N.  A
 * violation abort()s.
 *
 *	./fuzz_proxyauth -max_total_time=30 tests/fuzz/corpus/proxyauth
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define GATE_INTERNAL
#include "proxy/gate.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check(int ok)
{
	if (!ok)
		abort();
}

static int
clean(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return 0;
	return 1;
}

static void
check_login(int r, const char *user, const char *pass, size_t passlen)
{
	size_t ulen = strlen(user);

	if (r <= 0) {
		check(user[0] == '\0' && passlen == 0);
		return;
	}
	check(ulen >= 1 && ulen <= GATE_USER_MAX);
	check(memchr(user, ':', ulen) == NULL && clean(user, ulen));
	check(passlen <= GATE_PASS_MAX && pass[passlen] == '\0');
	check(clean(pass, passlen));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char user[GATE_USER_MAX + 1], pass[GATE_PASS_MAX + 1];
	static char user2[GATE_USER_MAX + 1], pass2[GATE_PASS_MAX + 1];
	char *copy = malloc(size + 16);
	size_t passlen, passlen2;
	int r, r2;

	if (copy == NULL)
		return 0;
	memcpy(copy, data, size);
	memset(copy + size, 'A', 16); /* bytes past N must not matter */
	r = gate_basic_parse(copy, size, user, pass, &passlen) == 0;
	check_login(r, user, pass, passlen);
	r2 = gate_basic_parse(
	         (const char *)data, size, user2, pass2, &passlen2) == 0;
	check(r == r2 && strcmp(user, user2) == 0 && passlen == passlen2 &&
	    memcmp(pass, pass2, passlen) == 0);
	r = gate_head_login(copy, size, user, pass, &passlen);
	check(r >= -1 && r <= 1);
	check_login(r, user, pass, passlen);
	free(copy);
	return 0;
}
