/*
 * test_tls.c: unit tests of proxy/tls.c, the interception contexts.
 *
 * Handshakes run in memory: the two SSL objects are joined by a BIO pair
 * and SSL_do_handshake() is called on each in turn, a bounded number of
 * times.  Toward the sandbox, tls_server_ssl() meets a plain OpenSSL
 * client that trusts only the run CA; toward the upstream,
 * tls_client_ssl() meets a plain OpenSSL server whose leaf comes from a
 * second run CA (the "upstream" CA), whose certificate is the CA file.
 * Some ClientHellos are captured from a client and altered byte by byte,
 * for what no client library would send.
 *
 * CA files are written to a mkdtemp directory under $TMPDIR (or /tmp).
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "proxy/ca.h"
#include "proxy/tls.h"
#include "tests/unit/fixture.h"

#define ERRLEN 512
#define STEPS 32 /* handshake rounds before giving up */
#define HELLO_MAX 4096

struct fixture {
	struct ca *ca; /* the run CA: the sandbox trusts it */
	struct tls *t;
	struct ca *up; /* the upstream's CA */
	SSL_CTX *sctx; /* the upstream server's */
	char dir[PATH_MAX];
	char upca[PATH_MAX + 32]; /* up's certificate */
	char runca[PATH_MAX + 32]; /* ca's: not the upstream's */
	char err[ERRLEN];
	unsigned long cerr, serr; /* first OpenSSL error of each side */
};

static const char *const hosts[] = {"echo.test", "127.0.0.1"};

static int
setup(void **state)
{
	struct fixture *f;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return -1;
	*state = f;
	if (fixture_tmpdir(f->dir, sizeof(f->dir), "test_tls") != 0)
		return -1;
	if ((f->ca = ca_new_run(hosts, 2, 0, f->err, sizeof(f->err))) == NULL ||
	    (f->t = tls_new(f->ca, f->err, sizeof(f->err))) == NULL ||
	    (f->up = ca_new_run(hosts, 2, 0, f->err, sizeof(f->err))) == NULL) {
		fprintf(stderr, "setup: %s\n", f->err);
		return -1;
	}
	snprintf(f->upca, sizeof(f->upca), "%s/up.pem", f->dir);
	snprintf(f->runca, sizeof(f->runca), "%s/run.pem", f->dir);
	fixture_write_file(f->upca, ca_cert_pem(f->up));
	fixture_write_file(f->runca, ca_cert_pem(f->ca));
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	SSL_CTX_free(f->sctx);
	tls_free(f->t);
	ca_free(f->ca);
	ca_free(f->up);
	if (f->dir[0] != '\0')
		fixture_rmtree(f->dir);
	free(f);
	/* Each test must leave OpenSSL's error queue as it found it. */
	if (ERR_peek_error() != 0) {
		ERR_print_errors_fp(stderr);
		return -1;
	}
	return 0;
}

/* --- in-memory handshakes ------------------------------------------------- */

static void
join(SSL *c, SSL *s)
{
	BIO *bc, *bs;

	assert_int_equal(BIO_new_bio_pair(&bc, 0, &bs, 0), 1);
	SSL_set_bio(c, bc, bc);
	SSL_set_bio(s, bs, bs);
	SSL_set_connect_state(c);
	SSL_set_accept_state(s);
}

/* One handshake step: 1 done, 0 wants more, -1 failed (first error: *E). */
static int
step(SSL *ssl, unsigned long *e)
{
	int r = SSL_do_handshake(ssl);

	if (r == 1)
		return 1;
	switch (SSL_get_error(ssl, r)) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		return 0;
	default:
		*e = ERR_peek_error();
		ERR_clear_error();
		return -1;
	}
}

/* Runs the handshake of C and S, joined.  Returns 0 when both finish. */
static int
handshake(struct fixture *f, SSL *c, SSL *s)
{
	int cs = 0, ss = 0, i;

	f->cerr = f->serr = 0;
	join(c, s);
	for (i = 0; i < STEPS && (cs == 0 || ss == 0); i++) {
		if (cs == 0)
			cs = step(c, &f->cerr);
		if (ss == 0)
			ss = step(s, &f->serr);
	}
	return cs == 1 && ss == 1 ? 0 : -1;
}

/* S sends a byte and C reads it (and, first, its session tickets). */
static void
exchange(SSL *c, SSL *s)
{
	char b = 0;

	assert_int_equal(SSL_write(s, "x", 1), 1);
	assert_int_equal(SSL_read(c, &b, 1), 1);
	assert_int_equal(b, 'x');
}

static void
free_pair(SSL *c, SSL *s)
{
	SSL_free(c);
	SSL_free(s);
}

/* --- plain OpenSSL peers -------------------------------------------------- */

/*
 * A plain server with a leaf for HOST from CA (the upstream's; the run
 * CA's for a control), TLS up to MAX (0: any).  Below TLS 1.2 it is made
 * as permissive as OpenSSL allows, so that only the client can refuse.
 * The fixture owns it (one at a time).
 */
static SSL_CTX *
server_ctx(struct fixture *f, struct ca *ca, const char *host, int max)
{
	SSL_CTX *ctx;
	EVP_PKEY *key;
	X509 *cert;

	SSL_CTX_free(f->sctx);
	assert_non_null(ctx = f->sctx = SSL_CTX_new(TLS_server_method()));
	if (ca_leaf(ca, host, &cert, &key, f->err, sizeof(f->err)) != 0)
		fail_msg("ca_leaf %s: %s", host, f->err);
	assert_int_equal(SSL_CTX_use_certificate(ctx, cert), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey(ctx, key), 1);
	if (max != 0 && max < TLS1_2_VERSION) {
		SSL_CTX_set_security_level(ctx, 0);
		assert_int_equal(
		    SSL_CTX_set_cipher_list(ctx, "DEFAULT:@SECLEVEL=0"), 1);
		assert_int_equal(SSL_CTX_set_min_proto_version(ctx, 0), 1);
	}
	if (max != 0)
		assert_int_equal(SSL_CTX_set_max_proto_version(ctx, max), 1);
	return ctx;
}

static X509 *
pem_x509(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, (int)strlen(pem));
	X509 *x;

	assert_non_null(b);
	x = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	assert_non_null(x);
	return x;
}

/*
 * A client as in the sandbox: trusts the run CA, sends SNI (NULL: none)
 * and verifies NAME (a name or an address), offers ALPN (NULL: none).
 */
static SSL *
sandbox_client(struct fixture *f, const char *sni, const char *name,
    const char *alpn, size_t alpnlen)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	X509 *root = pem_x509(ca_cert_pem(f->ca));
	char buf[256]; /* SSL_set_tlsext_host_name() casts const away */
	SSL *ssl;

	assert_non_null(ctx);
	assert_int_equal(
	    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), root), 1);
	X509_free(root);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	assert_non_null(ssl = SSL_new(ctx));
	SSL_CTX_free(ctx);
	if (sni != NULL) {
		snprintf(buf, sizeof(buf), "%s", sni);
		assert_int_equal(SSL_set_tlsext_host_name(ssl, buf), 1);
	}
	if (name != NULL && strchr(name, ':') == NULL &&
	    strspn(name, "0123456789.") == strlen(name))
		assert_int_equal(
		    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name),
		    1);
	else if (name != NULL)
		assert_int_equal(SSL_set1_host(ssl, name), 1);
	if (alpn != NULL)
		assert_int_equal(
		    SSL_set_alpn_protos(
		        ssl, (const unsigned char *)alpn, (unsigned)alpnlen),
		    0);
	return ssl;
}

/* --- the server side, toward the sandbox ---------------------------------- */

static SSL *
server_ssl(struct fixture *f, const char *host)
{
	SSL *s = tls_server_ssl(f->t, host, f->err, sizeof(f->err));

	if (s == NULL)
		fail_msg("tls_server_ssl %s: %s", host, f->err);
	return s;
}

/* The ALPN protocol C negotiated, "" for none. */
static const char *
alpn_of(SSL *c, char *buf, size_t len)
{
	const unsigned char *p;
	unsigned n;

	SSL_get0_alpn_selected(c, &p, &n);
	snprintf(buf, len, "%.*s", (int)n, p != NULL ? (const char *)p : "");
	return buf;
}

#define H2_H11 "\x02h2\x08http/1.1"
#define H2 "\x02h2"

/* SNI names the CONNECT target: a leaf for it, HTTP/1.1 over h2. */
static void
test_server_ok(void **state)
{
	struct fixture *f = *state;
	SSL *c, *s;
	char buf[32];

	c = sandbox_client(f, "echo.test", "echo.test", H2_H11, 12);
	s = server_ssl(f, "echo.test");
	if (handshake(f, c, s) != 0) {
		tls_server_error(s, f->serr, f->err, sizeof(f->err));
		fail_msg("handshake: %s", f->err);
	}
	assert_int_equal(SSL_get_verify_result(c), X509_V_OK);
	assert_string_equal(alpn_of(c, buf, sizeof(buf)), "http/1.1");
	assert_string_equal(alpn_of(s, buf, sizeof(buf)), "http/1.1");
	assert_int_equal(SSL_version(c), TLS1_3_VERSION);
	free_pair(c, s);

	/* http/1.1 first, or alone. */
	c = sandbox_client(
	    f, "echo.test", "echo.test", "\x08http/1.1\x02h2", 12);
	s = server_ssl(f, "echo.test");
	assert_int_equal(handshake(f, c, s), 0);
	assert_string_equal(alpn_of(c, buf, sizeof(buf)), "http/1.1");
	free_pair(c, s);

	/* No ALPN at all. */
	c = sandbox_client(f, "echo.test", "echo.test", NULL, 0);
	s = server_ssl(f, "echo.test");
	assert_int_equal(handshake(f, c, s), 0);
	assert_string_equal(alpn_of(c, buf, sizeof(buf)), "");
	free_pair(c, s);
}

/* A client that offers only h2 gets no ALPN, not a refusal. */
static void
test_server_h2_only(void **state)
{
	struct fixture *f = *state;
	SSL *c, *s;
	char buf[32];

	c = sandbox_client(f, "echo.test", "echo.test", H2, 3);
	s = server_ssl(f, "echo.test");
	assert_int_equal(handshake(f, c, s), 0);
	assert_string_equal(alpn_of(c, buf, sizeof(buf)), "");
	free_pair(c, s);

	/* A name that merely starts like http/1.1 is not it. */
	c = sandbox_client(
	    f, "echo.test", "echo.test", "\x09http/1.10\x08http/1.0", 19);
	s = server_ssl(f, "echo.test");
	assert_int_equal(handshake(f, c, s), 0);
	assert_string_equal(alpn_of(c, buf, sizeof(buf)), "");
	free_pair(c, s);
}

/* Names compare in canonical form: case and a trailing dot do not count. */
static void
test_server_sni_canonical(void **state)
{
	static const char *const snis[] = {"ECHO.test", "echo.test."};
	struct fixture *f = *state;
	SSL *c, *s;
	size_t i;

	for (i = 0; i < sizeof(snis) / sizeof(snis[0]); i++) {
		c = sandbox_client(f, snis[i], "echo.test", NULL, 0);
		s = server_ssl(f, "echo.test");
		if (handshake(f, c, s) != 0) {
			tls_server_error(s, f->serr, f->err, sizeof(f->err));
			fail_msg("SNI %s: %s", snis[i], f->err);
		}
		free_pair(c, s);
	}
}

/* Fails the handshake of C with S; S's reason must hold WANT. */
static void
refused(struct fixture *f, SSL *c, SSL *s, const char *want)
{
	char why[256];

	assert_int_equal(handshake(f, c, s), -1);
	tls_server_error(s, f->serr, why, sizeof(why));
	if (strstr(why, want) == NULL)
		fail_msg("reason \"%s\" lacks \"%s\"", why, want);
	assert_null(strchr(why, '\n'));
	/* Nothing was signed or sent: the alert came before any certificate. */
	assert_null(SSL_get0_peer_certificate(c));
}

/* Another name: unrecognized_name, before any certificate. */
static void
test_server_sni_differs(void **state)
{
	struct fixture *f = *state;
	SSL *c, *s;

	c = sandbox_client(f, "other.test", "other.test", H2_H11, 12);
	s = server_ssl(f, "echo.test");
	refused(f, c, s, "differs");
	assert_int_equal(ERR_GET_LIB(f->cerr), ERR_LIB_SSL);
	assert_int_equal(
	    ERR_GET_REASON(f->cerr), SSL_R_TLSV1_UNRECOGNIZED_NAME);
	tls_server_error(s, f->serr, f->err, sizeof(f->err));
	assert_non_null(strstr(f->err, "'other.test'"));
	assert_non_null(strstr(f->err, "echo.test"));
	free_pair(c, s);

	/* A subdomain, a parent, an address: all different. */
	c = sandbox_client(f, "a.echo.test", NULL, NULL, 0);
	s = server_ssl(f, "echo.test");
	refused(f, c, s, "differs");
	free_pair(c, s);
	c = sandbox_client(f, "test", NULL, NULL, 0);
	s = server_ssl(f, "echo.test");
	refused(f, c, s, "differs");
	free_pair(c, s);
	c = sandbox_client(f, "127.0.0.1", NULL, NULL, 0);
	s = server_ssl(f, "echo.test");
	refused(f, c, s, "differs");
	free_pair(c, s);
	/* For an address target, a name that is not it. */
	c = sandbox_client(f, "echo.test", NULL, NULL, 0);
	s = server_ssl(f, "127.0.0.1");
	refused(f, c, s, "differs");
	free_pair(c, s);
}

/* No SNI: refused for a name, as a client for an address sends none. */
static void
test_server_no_sni(void **state)
{
	struct fixture *f = *state;
	GENERAL_NAMES *san;
	const GENERAL_NAME *gn;
	X509 *leaf;
	SSL *c, *s;

	c = sandbox_client(f, NULL, "echo.test", NULL, 0);
	s = server_ssl(f, "echo.test");
	refused(f, c, s, "no SNI");
	assert_int_equal(
	    ERR_GET_REASON(f->cerr), SSL_R_TLSV1_UNRECOGNIZED_NAME);
	free_pair(c, s);

	c = sandbox_client(f, NULL, "127.0.0.1", H2_H11, 12);
	s = server_ssl(f, "127.0.0.1");
	if (handshake(f, c, s) != 0) {
		tls_server_error(s, f->serr, f->err, sizeof(f->err));
		fail_msg("handshake: %s", f->err);
	}
	assert_int_equal(SSL_get_verify_result(c), X509_V_OK);
	assert_non_null(leaf = SSL_get0_peer_certificate(c));
	san = X509_get_ext_d2i(leaf, NID_subject_alt_name, NULL, NULL);
	assert_non_null(san);
	assert_int_equal(sk_GENERAL_NAME_num(san), 1);
	gn = sk_GENERAL_NAME_value(san, 0);
	assert_int_equal(gn->type, GEN_IPADD);
	assert_int_equal(ASN1_STRING_length(gn->d.iPAddress), 4);
	assert_memory_equal(
	    ASN1_STRING_get0_data(gn->d.iPAddress), "\x7f\0\0\x01", 4);
	GENERAL_NAMES_free(san);
	free_pair(c, s);

	/* An address in SNI (some clients send one) is fine when it matches. */
	c = sandbox_client(f, "127.0.0.1", "127.0.0.1", NULL, 0);
	s = server_ssl(f, "127.0.0.1");
	assert_int_equal(handshake(f, c, s), 0);
	free_pair(c, s);
}

/*
 * A sandbox client's connection to S (TLS up to VERSION), offering SESS
 * (NULL: none), ended cleanly so that its session stays resumable.
 * Returns its session and SSL_session_reused() in *REUSED.
 */
static SSL_SESSION *
sandbox_once(
    struct fixture *f, SSL *s, int version, SSL_SESSION *sess, int *reused)
{
	SSL *c = sandbox_client(f, "echo.test", "echo.test", NULL, 0);
	SSL_SESSION *out;

	assert_int_equal(SSL_set_max_proto_version(c, version), 1);
	if (sess != NULL)
		assert_int_equal(SSL_set_session(c, sess), 1);
	assert_int_equal(handshake(f, c, s), 0);
	exchange(c, s);
	*reused = SSL_session_reused(c);
	assert_non_null(out = SSL_get1_session(c));
	assert_int_equal(SSL_shutdown(c), 0);
	free_pair(c, s);
	return out;
}

/*
 * No resumption toward the sandbox: every hello is checked anew.  A plain
 * server with a leaf of the run CA resumes the same client (the control).
 */
static void
test_server_no_resumption(void **state)
{
	static const int versions[] = {TLS1_2_VERSION, TLS1_3_VERSION};
	struct fixture *f = *state;
	SSL_SESSION *sess, *again;
	SSL *c, *s;
	size_t i;
	int reused;

	for (i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		server_ctx(f, f->ca, "echo.test", 0);
		sess = sandbox_once(
		    f, SSL_new(f->sctx), versions[i], NULL, &reused);
		assert_int_equal(reused, 0);
		again = sandbox_once(
		    f, SSL_new(f->sctx), versions[i], sess, &reused);
		assert_int_equal(reused, 1);
		SSL_SESSION_free(again);
		SSL_SESSION_free(sess);

		s = server_ssl(f, "echo.test");
		sess = sandbox_once(f, s, versions[i], NULL, &reused);
		assert_int_equal(reused, 0);
		s = server_ssl(f, "echo.test");
		again = sandbox_once(f, s, versions[i], sess, &reused);
		assert_int_equal(reused, 0);
		SSL_SESSION_free(again);

		/* And a session offered under another name does not help. */
		c = sandbox_client(f, "other.test", NULL, NULL, 0);
		assert_int_equal(SSL_set_max_proto_version(c, versions[i]), 1);
		assert_int_equal(SSL_set_session(c, sess), 1);
		s = server_ssl(f, "echo.test");
		assert_int_equal(handshake(f, c, s), -1);
		tls_server_error(s, f->serr, f->err, sizeof(f->err));
		assert_non_null(strstr(f->err, "differs"));
		free_pair(c, s);
		SSL_SESSION_free(sess);
	}
}

/* --- raw ClientHellos ----------------------------------------------------- */

/* The first flight of a client sending SNI "echo.test"; its length. */
static size_t
capture_hello(struct fixture *f, unsigned char *buf, size_t len)
{
	SSL *c = sandbox_client(f, "echo.test", NULL, NULL, 0);
	BIO *bc, *bs;
	int n;

	assert_int_equal(BIO_new_bio_pair(&bc, 0, &bs, 0), 1);
	SSL_set_bio(c, bc, bc);
	SSL_set_connect_state(c);
	assert_int_equal(SSL_do_handshake(c), -1);
	n = BIO_read(bs, buf, (int)len);
	assert_true(n > 0 && (size_t)n < len);
	SSL_free(c);
	BIO_free(bs);
	ERR_clear_error();
	return (size_t)n;
}

/* Where the name "echo.test" is in HELLO. */
static unsigned char *
sni_at(unsigned char *hello, size_t len)
{
	unsigned char *p = memmem(hello, len, "echo.test", 9);

	assert_non_null(p);
	assert_true(p - hello > 5);
	/* list length, host_name, name length */
	assert_memory_equal(p - 5, "\x00\x0c\x00\x00\x09", 5);
	return p;
}

/*
 * Feeds HELLO to a server for echo.test.  Returns 0 when it went on
 * (wants the client's next flight), else -1 with the reason in WHY.
 */
static int
feed(struct fixture *f, const unsigned char *hello, size_t len, char *why,
    size_t whylen)
{
	SSL *s = server_ssl(f, "echo.test");
	BIO *in = BIO_new_mem_buf(hello, (int)len);
	BIO *out = BIO_new(BIO_s_mem());
	unsigned long e = 0;
	int r;

	assert_non_null(in);
	assert_non_null(out);
	BIO_set_mem_eof_return(in, -1); /* more to come: retry */
	SSL_set_bio(s, in, out);
	SSL_set_accept_state(s);
	r = step(s, &e);
	why[0] = '\0';
	if (r != 0)
		tls_server_error(s, e, why, whylen);
	SSL_free(s);
	ERR_clear_error();
	return r == 0 ? 0 : -1;
}

/* What no client library sends: a bad list, odd bytes in the name. */
static void
test_server_raw_hello(void **state)
{
	struct fixture *f = *state;
	unsigned char hello[HELLO_MAX], bad[HELLO_MAX], *p;
	size_t len = capture_hello(f, hello, sizeof(hello));
	char why[256];

	assert_int_equal(feed(f, hello, len, why, sizeof(why)), 0);

	/* Name type other than host_name. */
	memcpy(bad, hello, len);
	p = sni_at(bad, len);
	p[-3] = 1;
	assert_int_equal(feed(f, bad, len, why, sizeof(why)), -1);
	assert_string_equal(why, "malformed SNI");

	/* List length that does not fit the extension. */
	memcpy(bad, hello, len);
	p = sni_at(bad, len);
	p[-4] = 0x0b;
	assert_int_equal(feed(f, bad, len, why, sizeof(why)), -1);
	assert_string_equal(why, "malformed SNI");

	/* Name length past the list. */
	memcpy(bad, hello, len);
	p = sni_at(bad, len);
	p[-1] = 0x0a;
	assert_int_equal(feed(f, bad, len, why, sizeof(why)), -1);
	assert_string_equal(why, "malformed SNI");

	/* Empty name. */
	memcpy(bad, hello, len);
	p = sni_at(bad, len);
	p[-1] = 0;
	assert_int_equal(feed(f, bad, len, why, sizeof(why)), -1);
	assert_string_equal(why, "malformed SNI");

	/* A NUL or control byte: refused, and shown printable. */
	memcpy(bad, hello, len);
	p = sni_at(bad, len);
	p[8] = '\0'; /* "echo.tes\0" */
	assert_int_equal(feed(f, bad, len, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "SNI 'echo.tes?' differs"));
	memcpy(bad, hello, len);
	p = sni_at(bad, len);
	p[4] = '\n';
	assert_int_equal(feed(f, bad, len, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "SNI 'echo?test' differs"));
	assert_null(strchr(why, '\n'));

	/* Upper case: the same name. */
	memcpy(bad, hello, len);
	p = sni_at(bad, len);
	memcpy(p, "ECHO.TEST", 9);
	assert_int_equal(feed(f, bad, len, why, sizeof(why)), 0);
}

/* --- the client side, toward the upstream --------------------------------- */

static SSL *
client_ssl(struct fixture *f, const char *host, uint16_t port, int is_ip,
    const char *cafile)
{
	SSL *c = NULL;

	/* As run_setup does before the sandbox starts. */
	if (cafile == NULL ||
	    tls_add_trust(f->t, cafile, f->err, sizeof(f->err)) == 0)
		c = tls_client_ssl(
		    f->t, host, port, is_ip, cafile, f->err, sizeof(f->err));
	if (c == NULL)
		fail_msg("tls_client_ssl %s: %s", host, f->err);
	return c;
}

/* Fails the handshake of C with S; C's reason must hold WANT (and WANT2). */
static void
client_refused(
    struct fixture *f, SSL *c, SSL *s, const char *want, const char *want2)
{
	char why[256];

	assert_int_equal(handshake(f, c, s), -1);
	tls_client_error(c, f->cerr, why, sizeof(why));
	if (strstr(why, want) == NULL ||
	    (want2 != NULL && strstr(why, want2) == NULL))
		fail_msg("reason \"%s\" lacks \"%s\" or \"%s\"", why, want,
		    want2 ? want2 : "");
}

/* Verified against the CA file, SNI sent, TLS 1.3. */
static void
test_client_ok(void **state)
{
	struct fixture *f = *state;
	SSL_CTX *sctx = server_ctx(f, f->up, "echo.test", 0);
	SSL *c, *s;

	c = client_ssl(f, "echo.test", 443, 0, f->upca);
	assert_int_equal(SSL_get_min_proto_version(c), TLS1_2_VERSION);
	s = SSL_new(sctx);
	if (handshake(f, c, s) != 0) {
		tls_client_error(c, f->cerr, f->err, sizeof(f->err));
		fail_msg("handshake: %s", f->err);
	}
	assert_int_equal(SSL_get_verify_result(c), X509_V_OK);
	assert_string_equal(
	    SSL_get_servername(s, TLSEXT_NAMETYPE_host_name), "echo.test");
	assert_int_equal(SSL_version(c), TLS1_3_VERSION);
	exchange(c, s);
	free_pair(c, s);

	/* TLS 1.2 is enough. */
	sctx = server_ctx(f, f->up, "echo.test", TLS1_2_VERSION);
	c = client_ssl(f, "echo.test", 443, 0, f->upca);
	s = SSL_new(sctx);
	assert_int_equal(handshake(f, c, s), 0);
	assert_int_equal(SSL_version(c), TLS1_2_VERSION);
	free_pair(c, s);
}

/* An address: verified against the leaf's IP, and no SNI. */
static void
test_client_ip(void **state)
{
	struct fixture *f = *state;
	SSL_CTX *sctx = server_ctx(f, f->up, "127.0.0.1", 0);
	SSL *c, *s;

	c = client_ssl(f, "127.0.0.1", 8443, 1, f->upca);
	s = SSL_new(sctx);
	assert_int_equal(handshake(f, c, s), 0);
	assert_null(SSL_get_servername(s, TLSEXT_NAMETYPE_host_name));
	free_pair(c, s);

	sctx = server_ctx(f, f->up, "echo.test", 0);
	c = client_ssl(f, "127.0.0.1", 8443, 1, f->upca);
	s = SSL_new(sctx);
	client_refused(f, c, s, "does not verify", "IP address mismatch");
	free_pair(c, s);
}

/* The certificate is for another name. */
static void
test_client_wrong_host(void **state)
{
	struct fixture *f = *state;
	SSL_CTX *sctx = server_ctx(f, f->up, "echo.test", 0);
	SSL *c, *s;

	c = client_ssl(f, "wrong.test", 443, 0, f->upca);
	s = SSL_new(sctx);
	client_refused(f, c, s, "does not verify", "hostname mismatch");
	tls_client_error(c, f->cerr, f->err, sizeof(f->err));
	assert_non_null(strstr(f->err, "wrong.test"));
	free_pair(c, s);
}

/* Another CA; and the system store, which knows neither. */
static void
test_client_untrusted(void **state)
{
	struct fixture *f = *state;
	SSL_CTX *sctx = server_ctx(f, f->up, "echo.test", 0);
	SSL *c, *s;

	c = client_ssl(f, "echo.test", 443, 0, f->runca);
	s = SSL_new(sctx);
	client_refused(f, c, s, "does not verify",
	    "unable to get local issuer certificate");
	free_pair(c, s);

	c = client_ssl(f, "echo.test", 443, 0, NULL);
	s = SSL_new(sctx);
	client_refused(f, c, s, "does not verify",
	    "unable to get local issuer certificate");
	free_pair(c, s);
}

/* TLS 1.1 at most on the server: refused, though the server would. */
static void
test_client_old_tls(void **state)
{
	struct fixture *f = *state;
	SSL_CTX *sctx = server_ctx(f, f->up, "echo.test", TLS1_1_VERSION);
	SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
	SSL *c, *s;

	c = client_ssl(f, "echo.test", 443, 0, f->upca);
	s = SSL_new(sctx);
	client_refused(f, c, s, "upstream failed", "protocol version");
	free_pair(c, s);

	/* The server does speak TLS 1.1 to a client that lets it. */
	assert_non_null(cctx);
	SSL_CTX_set_security_level(cctx, 0);
	assert_int_equal(SSL_CTX_set_min_proto_version(cctx, 0), 1);
	assert_int_equal(
	    SSL_CTX_set_cipher_list(cctx, "DEFAULT:@SECLEVEL=0"), 1);
	c = SSL_new(cctx);
	s = SSL_new(sctx);
	assert_int_equal(handshake(f, c, s), 0);
	assert_int_equal(SSL_version(c), TLS1_1_VERSION);
	free_pair(c, s);
	SSL_CTX_free(cctx);
}

/* An unreadable CA file: no SSL, and the reason. */
static void
test_client_bad_cafile(void **state)
{
	struct fixture *f = *state;
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/missing.pem", f->dir);
	assert_int_equal(tls_add_trust(f->t, path, f->err, sizeof(f->err)), -1);
	assert_non_null(strstr(f->err, "upstream-ca"));
	/* Not garbage either. */
	fixture_write_file(path, "not a certificate\n");
	assert_int_equal(tls_add_trust(f->t, path, f->err, sizeof(f->err)), -1);
	assert_non_null(strstr(f->err, "upstream-ca"));
	assert_null(tls_client_ssl(
	    f->t, "echo.test", 443, 0, path, f->err, sizeof(f->err)));
	assert_non_null(strstr(f->err, "was not loaded"));
}

/*
 * A trust anchor is read once, when added: a file written afterwards (by
 * the sandbox, with its own CA) changes nothing, and a file never added
 * is never read.
 */
static void
test_client_trust_preloaded(void **state)
{
	struct fixture *f = *state;
	char path[PATH_MAX + 32], other[PATH_MAX + 32];
	SSL *c, *s;

	snprintf(path, sizeof(path), "%s/anchor.pem", f->dir);
	snprintf(other, sizeof(other), "%s/late.pem", f->dir);
	fixture_write_file(path, ca_cert_pem(f->up));
	assert_int_equal(tls_add_trust(f->t, path, f->err, sizeof(f->err)), 0);
	/* The sandbox puts its own CA in the file. */
	fixture_write_file(path, ca_cert_pem(f->ca));
	c = tls_client_ssl(
	    f->t, "echo.test", 443, 0, path, f->err, sizeof(f->err));
	assert_non_null(c);
	s = SSL_new(server_ctx(f, f->ca, "echo.test", 0));
	client_refused(f, c, s, "does not verify",
	    "unable to get local issuer certificate");
	free_pair(c, s);
	ERR_clear_error();
	c = tls_client_ssl(
	    f->t, "echo.test", 443, 0, path, f->err, sizeof(f->err));
	assert_non_null(c);
	s = SSL_new(server_ctx(f, f->up, "echo.test", 0));
	assert_int_equal(handshake(f, c, s), 0);
	free_pair(c, s);
	/* Added twice: still the first reading. */
	assert_int_equal(tls_add_trust(f->t, path, f->err, sizeof(f->err)), 0);
	/* Never added: refused, not read. */
	fixture_write_file(other, ca_cert_pem(f->ca));
	assert_null(tls_client_ssl(
	    f->t, "echo.test", 443, 0, other, f->err, sizeof(f->err)));
	assert_non_null(strstr(f->err, "was not loaded"));
}

/*
 * One connection to HOST:PORT through CAFILE against SCTX, with a byte
 * read (TLS 1.3 tickets come after the handshake), ended with a
 * close_notify when CLEAN, else freed as bufferevent_free() frees it.
 * Returns SSL_session_reused(), or -1 when the handshake failed.
 */
static int
connect_once(struct fixture *f, SSL_CTX *sctx, const char *host, uint16_t port,
    int is_ip, const char *cafile, int clean)
{
	SSL *c = client_ssl(f, host, port, is_ip, cafile);
	SSL *s = SSL_new(sctx);
	int r = -1;

	assert_non_null(s);
	if (handshake(f, c, s) == 0) {
		exchange(c, s);
		r = SSL_session_reused(c);
		if (clean)
			assert_int_equal(SSL_shutdown(c), 0);
	}
	free_pair(c, s);
	return r;
}

static const int versions[] = {TLS1_3_VERSION, TLS1_2_VERSION};

/* The second connection to a host:port resumes; another port does not. */
static void
test_client_resume(void **state)
{
	struct fixture *f = *state;
	char copy[PATH_MAX + 32];
	SSL_CTX *sctx;
	size_t i;
	uint16_t port;

	snprintf(copy, sizeof(copy), "%s/copy.pem", f->dir);
	fixture_write_file(copy, ca_cert_pem(f->up));
	for (i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		sctx = server_ctx(f, f->up, "echo.test", versions[i]);
		port = (uint16_t)(1000 + i); /* a fresh key per version */
		assert_int_equal(
		    connect_once(f, sctx, "echo.test", port, 0, f->upca, 1), 0);
		assert_int_equal(
		    connect_once(f, sctx, "echo.test", port, 0, f->upca, 1), 1);
		assert_int_equal(
		    connect_once(f, sctx, "echo.test", port, 0, f->upca, 1), 1);
		/* Another port, another CA file: another session. */
		assert_int_equal(connect_once(f, sctx, "echo.test",
		                     (uint16_t)(port + 100), 0, f->upca, 1),
		    0);
		assert_int_equal(
		    connect_once(f, sctx, "echo.test", port, 0, copy, 1), 0);
		/* The system store does not trust the upstream CA. */
		assert_int_equal(
		    connect_once(f, sctx, "echo.test", port, 0, NULL, 1), -1);
		ERR_clear_error();
	}
}

/*
 * The proxy ends upstream connections with bufferevent_free(), which
 * frees the SSL without a close_notify.  OpenSSL then marks the session
 * not resumable (ssl_clear_bad_session), and that is the very
 * SSL_SESSION the cache keeps: the next connection cannot resume it.
 */
static void
test_client_resume_unclean(void **state)
{
	struct fixture *f = *state;
	SSL_CTX *sctx;
	size_t i;

	for (i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		sctx = server_ctx(f, f->up, "echo.test", versions[i]);
		assert_int_equal(connect_once(f, sctx, "echo.test",
		                     (uint16_t)(1000 + i), 0, f->upca, 0),
		    0);
		if (connect_once(f, sctx, "echo.test", (uint16_t)(1000 + i), 0,
		        f->upca, 0) != 1)
			fail_msg("TLS 0x%x: no resumption after a connection "
			         "freed without close_notify",
			    versions[i]);
	}
}

/*
 * A session verified under one CA file is not resumed under another,
 * however long the path.  The key "host:port cafile" is cut to 261 bytes,
 * so two CA files whose paths agree that far share sessions: here the
 * second file does not vouch for the server, yet the handshake resumes.
 */
static void
test_client_resume_long_cafile(void **state)
{
	struct fixture *f = *state;
	char sub[PATH_MAX], a[PATH_MAX + 32], b[PATH_MAX + 32];
	SSL_CTX *sctx = server_ctx(f, f->up, "echo.test", 0);
	size_t n;

	n = (size_t)snprintf(sub, sizeof(sub), "%s/", f->dir);
	memset(sub + n, 'd', 250);
	sub[n + 250] = '\0';
	assert_int_equal(mkdir(sub, 0700), 0);
	snprintf(a, sizeof(a), "%s/a.pem", sub);
	snprintf(b, sizeof(b), "%s/b.pem", sub);
	fixture_write_file(a, ca_cert_pem(f->up));
	fixture_write_file(b, ca_cert_pem(f->ca)); /* not the upstream's CA */
	assert_int_equal(connect_once(f, sctx, "echo.test", 443, 0, a, 1), 0);
	assert_int_equal(connect_once(f, sctx, "echo.test", 443, 0, a, 1), 1);
	/* b.pem alone does not vouch for the server. */
	assert_int_equal(connect_once(f, sctx, "echo.test", 444, 0, b, 1), -1);
	ERR_clear_error();
	if (connect_once(f, sctx, "echo.test", 443, 0, b, 1) != -1)
		fail_msg("a session verified under .../a.pem was resumed "
		         "under .../b.pem (%zu bytes), which does not vouch "
		         "for the server",
		    strlen(b));
	ERR_clear_error();
}

/* Sessions to an address resume as those to a name do. */
static void
test_client_resume_ip(void **state)
{
	struct fixture *f = *state;
	SSL_CTX *sctx = server_ctx(f, f->up, "127.0.0.1", 0);

	assert_int_equal(
	    connect_once(f, sctx, "127.0.0.1", 443, 1, f->upca, 1), 0);
	assert_int_equal(
	    connect_once(f, sctx, "127.0.0.1", 443, 1, f->upca, 1), 1);
}

#define T(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_server_ok),
	    T(test_server_h2_only),
	    T(test_server_sni_canonical),
	    T(test_server_sni_differs),
	    T(test_server_no_sni),
	    T(test_server_no_resumption),
	    T(test_server_raw_hello),
	    T(test_client_ok),
	    T(test_client_ip),
	    T(test_client_wrong_host),
	    T(test_client_untrusted),
	    T(test_client_old_tls),
	    T(test_client_bad_cafile),
	    T(test_client_trust_preloaded),
	    T(test_client_resume),
	    T(test_client_resume_unclean),
	    T(test_client_resume_long_cafile),
	    T(test_client_resume_ip),
	};

	return cmocka_run_group_tests_name("tls", tests, NULL, NULL);
}
