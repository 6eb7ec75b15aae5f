/*
 * fuzz_sni.c: libFuzzer target for the server side of proxy/tls.c, the
 * first code to read what the sandbox sends inside a CONNECT tunnel.
 *
 * The input is what the sandbox's client sends first (a ClientHello
 * record, or anything else).  It goes through a memory BIO to a server
 * SSL from tls_server_ssl(), once for a tunnel to a name (echo.test) and
 * once for one to an address (127.0.0.1), with one SSL_do_handshake()
 * each.  The run CA and contexts are made on the first input.
 *
 * Checks: a refusal's reason (tls_server_error) is one printable line;
 * and a hello that the server answers without a fatal error passed the
 * SNI check, so the name OpenSSL itself read from it (SSL_get_servername)
 * must be the tunnel's target, or absent for the address.  A violation
 * abort()s.
 *
 *	./fuzz_sni -max_total_time=60 tests/fuzz/corpus/sni
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "policy/target.h"
#include "proxy/ca.h"
#include "proxy/tls.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static const char *const hosts[] = {"echo.test", "127.0.0.1"};

static struct ca *ca;
static struct tls *tls;

static void
check(int ok)
{
	if (!ok)
		abort();
}

static void
init(void)
{
	char err[256];

	if (tls != NULL)
		return;
	if ((ca = ca_new_run(hosts, 2, 0, err, sizeof(err))) == NULL ||
	    (tls = tls_new(ca, err, sizeof(err))) == NULL) {
		fprintf(stderr, "fuzz_sni: %s\n", err);
		abort();
	}
}

/* One line of printable ASCII, for the log. */
static void
check_reason(const char *why, size_t len)
{
	size_t i, n = strnlen(why, len);

	check(n > 0 && n < len);
	for (i = 0; i < n; i++)
		check(why[i] >= ' ' && why[i] < 0x7f);
}

/* The server went on: the name OpenSSL read must be HOST's. */
static void
check_name(SSL *ssl, const char *host, int is_ip)
{
	const char *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	struct target_host h;

	if (sni == NULL) {
		check(is_ip);
		return;
	}
	check(target_host_parse(sni, strlen(sni), &h) == 0);
	check(strcmp(h.name, host) == 0);
}

static void
one(const uint8_t *data, size_t size, const char *host, int is_ip)
{
	char err[256], why[512];
	BIO *in, *out;
	SSL *ssl;
	int r, e;

	if ((ssl = tls_server_ssl(tls, host, err, sizeof(err))) == NULL ||
	    (in = BIO_new_mem_buf(data, (int)size)) == NULL ||
	    (out = BIO_new(BIO_s_mem())) == NULL)
		abort();
	BIO_set_mem_eof_return(in, -1); /* the rest is still to come */
	SSL_set_bio(ssl, in, out);
	SSL_set_accept_state(ssl);
	r = SSL_do_handshake(ssl);
	e = SSL_get_error(ssl, r);
	check(r != 1);
	if (e == SSL_ERROR_SSL) {
		tls_server_error(ssl, ERR_peek_error(), why, sizeof(why));
		check_reason(why, sizeof(why));
	} else if (BIO_ctrl_pending(out) > 0)
		check_name(ssl, host, is_ip);
	SSL_free(ssl);
	ERR_clear_error();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 20)
		return 0;
	init();
	one(data, size, hosts[0], 0);
	one(data, size, hosts[1], 1);
	return 0;
}
