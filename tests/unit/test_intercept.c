/*
 * test_intercept.c: unit tests of proxy/intercept.c, a CONNECT whose
 * requests the policy must see, with no network.
 *
 * The client is one end of a socketpair handed to request_new(), and
 * speaks TLS over it with OpenSSL, trusting the run CA as the sandbox
 * does.  Requests the policy refuses inside the tunnel are answered
 * there, so no upstream is needed; one loopback listener stands for the
 * real server in the policy's "resolve" line and is never connected to.
 * intercept_up_drain() is tried on an upstream bufferevent of its own, a
 * socketpair whose other end is a TLS server with a leaf of the run CA.
 */
#include <sys/socket.h>

#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include "policy/policy.h"
#include "proxy/ca.h"
#include "proxy/intercept.h"
#include "proxy/request.h"
#include "proxy/session.h"
#include "proxy/session_int.h"
#include "proxy/tls.h"
#include "tests/unit/fixture.h"

static const char *const hosts[] = {"up.test"};

struct fixture {
	struct event_base *base;
	struct session_ctx ctx;
	struct session_shared shared;
	struct ca *ca;
	struct proxy_policy *pp;
	int cfd;
	SSL *ssl;
	char got[8192];
	size_t ngot;
	int eof;
	char err[256];
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (f == NULL || (f->base = event_base_new()) == NULL ||
	    (f->pp = calloc(1, sizeof(*f->pp))) == NULL)
		return -1;
	*state = f;
	f->cfd = -1;
	if ((f->ca = ca_new_run(hosts, 1, 0, f->err, sizeof(f->err))) == NULL ||
	    (f->ctx.tls = tls_new(f->ca, f->err, sizeof(f->err))) == NULL) {
		fprintf(stderr, "setup: %s\n", f->err);
		return -1;
	}
	f->pp->p = fixture_policy("resolve up.test 127.0.0.1\n"
	                          "allow up.test { private paths /a/* }\n",
	    0);
	f->pp->refs = 1;
	f->ctx.base = f->base;
	f->ctx.run_id = "test";
	f->ctx.policy = f->pp;
	TAILQ_INIT(&f->ctx.sessions);
	session_shared_init(&f->shared, 1 << 20, 64 << 20);
	f->ctx.shared = &f->shared;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	session_close_all(&f->ctx);
	SSL_free(f->ssl);
	if (f->cfd >= 0)
		close(f->cfd);
	policy_free(f->pp->p);
	free(f->pp);
	tls_free(f->ctx.tls);
	ca_free(f->ca);
	event_base_free(f->base);
	free(f);
	ERR_clear_error();
	return 0;
}

/* Turns the loop once, briefly. */
static void
turn(struct fixture *f)
{
	event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	usleep(1000);
}

/* Sends CONNECT up.test:443 in the clear. */
static void
send_connect(struct fixture *f)
{
	static const char req[] =
	    "CONNECT up.test:443 HTTP/1.1\r\nHost: up.test\r\n\r\n";
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	f->cfd = sv[0];
	assert_non_null(request_new(&f->ctx, sv[1], 1, PROXY_VIA_PROXY));
	assert_int_equal(
	    write(f->cfd, req, sizeof(req) - 1), (ssize_t)sizeof(req) - 1);
}

/* Reads the 200 line, and nothing after it. */
static void
read_ok(struct fixture *f)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	char buf[sizeof(ok)];
	size_t n = 0;
	ssize_t r;
	int64_t end = fixture_now_ms() + 2000;

	/* Byte by byte: the TLS records that follow are the client's. */
	while (n < sizeof(ok) - 1 && fixture_now_ms() < end) {
		turn(f);
		while (n < sizeof(ok) - 1 && (r = read(f->cfd, buf + n, 1)) > 0)
			n++;
	}
	buf[n] = '\0';
	assert_string_equal(buf, ok);
}

/* Sends CONNECT up.test:443 in the clear and reads the 200 line. */
static void
connect_tunnel(struct fixture *f)
{
	send_connect(f);
	read_ok(f);
}

/* A TLS client as in the sandbox: trusts the run CA, SNI and name. */
static void
client_tls(struct fixture *f, const char *sni)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	BIO *bio = BIO_new_mem_buf(ca_cert_pem(f->ca), -1);
	X509 *root = PEM_read_bio_X509(bio, NULL, NULL, NULL);
	char buf[64];

	assert_non_null(ctx);
	assert_non_null(root);
	assert_int_equal(
	    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), root), 1);
	X509_free(root);
	BIO_free(bio);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	assert_non_null(f->ssl = SSL_new(ctx));
	SSL_CTX_free(ctx);
	snprintf(buf, sizeof(buf), "%s", sni);
	assert_int_equal(SSL_set_tlsext_host_name(f->ssl, buf), 1);
	assert_int_equal(SSL_set1_host(f->ssl, "up.test"), 1);
	assert_int_equal(SSL_set_fd(f->ssl, f->cfd), 1);
}

/* Runs the handshake; returns 1 when it completed. */
static int
handshake(struct fixture *f)
{
	int64_t end = fixture_now_ms() + 3000;
	int r, e;

	while (fixture_now_ms() < end) {
		if ((r = SSL_connect(f->ssl)) == 1)
			return 1;
		e = SSL_get_error(f->ssl, r);
		if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
			return 0;
		turn(f);
	}
	return 0;
}

/* Sends REQ inside the tunnel and reads until the proxy closes it. */
static void
request(struct fixture *f, const char *req)
{
	int64_t end = fixture_now_ms() + 3000;
	int r, e;

	assert_int_equal(
	    SSL_write(f->ssl, req, (int)strlen(req)), (int)strlen(req));
	while (!f->eof && fixture_now_ms() < end) {
		turn(f);
		while ((r = SSL_read(f->ssl, f->got + f->ngot,
		            (int)(sizeof(f->got) - 1 - f->ngot))) > 0)
			f->ngot += (size_t)r;
		e = SSL_get_error(f->ssl, r);
		if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
			f->eof = 1;
	}
	f->got[f->ngot] = '\0';
}

static void
assert_got(const struct fixture *f, const char *want)
{
	if (strstr(f->got, want) == NULL)
		fail_msg("got \"%s\", want \"%s\"", f->got, want);
}

/*
 * The client's TLS bufferevent is a filter over the plain one (which
 * reads a hello sent early; intercept.c says why not on the socket).
 */
static void
assert_filter(struct fixture *f)
{
	struct session *s = TAILQ_FIRST(&f->ctx.sessions);

	assert_non_null(s);
	assert_non_null(s->client.bev);
	assert_non_null(bufferevent_get_underlying(s->client.bev));
}

/* The client's handshake verifies a leaf of the run CA for the target. */
static void
test_handshake(void **state)
{
	struct fixture *f = *state;

	connect_tunnel(f);
	client_tls(f, "up.test");
	assert_true(handshake(f));
	assert_int_equal(SSL_get_verify_result(f->ssl), X509_V_OK);
	assert_int_equal(f->ctx.nsessions, 1);
	assert_filter(f);
}

/* An SNI for another host: the handshake fails, the session ends. */
static void
test_sni_differs(void **state)
{
	struct fixture *f = *state;
	int64_t end;

	connect_tunnel(f);
	client_tls(f, "other.test");
	assert_false(handshake(f));
	end = fixture_now_ms() + 2000;
	while (f->ctx.nsessions > 0 && fixture_now_ms() < end)
		turn(f);
	assert_int_equal(f->ctx.nsessions, 0);
}

/*
 * A client that sends its hello right after the CONNECT, before the 200
 * came: the proxy reads both at once, and the hello must still reach the
 * TLS (the plain bufferevent holds it: the filter over it reads it).
 */
static void
test_hello_early(void **state)
{
	struct fixture *f = *state;
	int r;

	send_connect(f);
	client_tls(f, "up.test");
	/* The hello goes out now, in the same read as the CONNECT. */
	r = SSL_connect(f->ssl);
	assert_int_equal(SSL_get_error(f->ssl, r), SSL_ERROR_WANT_READ);
	read_ok(f);
	assert_true(handshake(f));
	assert_int_equal(SSL_get_verify_result(f->ssl), X509_V_OK);
	assert_filter(f);
	request(f, "GET /b HTTP/1.1\r\nHost: up.test\r\n\r\n");
	assert_got(f, "HTTP/1.1 403 ");
}

/*
 * The end of a tunnel after a proxy-made answer: the answer, then a
 * close_notify (SSL_read sees a clean end, not a truncation).
 */
static void
test_clean_end(void **state)
{
	struct fixture *f = *state;

	connect_tunnel(f);
	client_tls(f, "up.test");
	assert_true(handshake(f));
	request(f,
	    "GET /b HTTP/1.1\r\nHost: up.test\r\n"
	    "Connection: close\r\n\r\n");
	assert_got(f, "HTTP/1.1 403 ");
	assert_int_equal(SSL_get_shutdown(f->ssl) & SSL_RECEIVED_SHUTDOWN,
	    SSL_RECEIVED_SHUTDOWN);
}

static void
count_distrust(void *arg, const char *host, unsigned port)
{
	(void)host;
	(void)port;
	(*(int *)arg)++;
}

/*
 * A client that does not trust the run CA refuses the handshake with an
 * alert: the session ends, and the refusal is reported as distrust.
 */
static void
test_distrust(void **state)
{
	struct fixture *f = *state;
	int64_t end;
	int n = 0;

	f->ctx.distrust = count_distrust;
	f->ctx.denied_arg = &n;
	connect_tunnel(f);
	client_tls(f, "up.test");
	SSL_CTX_set_cert_store(SSL_get_SSL_CTX(f->ssl), X509_STORE_new());
	assert_false(handshake(f));
	end = fixture_now_ms() + 2000;
	while (f->ctx.nsessions > 0 && fixture_now_ms() < end)
		turn(f);
	assert_int_equal(f->ctx.nsessions, 0);
	assert_int_equal(n, 1);
	/* Many clients hang up instead, some before their hello. */
	SSL_free(f->ssl);
	f->ssl = NULL;
	close(f->cfd);
	f->cfd = -1;
	connect_tunnel(f);
	close(f->cfd);
	f->cfd = -1;
	end = fixture_now_ms() + 2000;
	while (f->ctx.nsessions > 0 && fixture_now_ms() < end)
		turn(f);
	assert_int_equal(f->ctx.nsessions, 0);
	assert_int_equal(n, 2);
}

struct inner_case {
	const char *req, *want;
};

/* Requests inside the tunnel the proxy answers itself. */
static void
test_inner_refused(void **state)
{
	static const struct inner_case cases[] = {
	    /* outside the rule's paths: decided as HTTPS, refused */
	    {"GET /b HTTP/1.1\r\nHost: up.test\r\n\r\n", "HTTP/1.1 403 "},
	    /* Host names another host: domain fronting */
	    {"GET /a/x HTTP/1.1\r\nHost: other.test\r\n\r\n", "HTTP/1.1 421 "},
	    {"GET /a/x HTTP/1.1\r\nHost: up.test:8443\r\n\r\n",
	        "HTTP/1.1 421 "},
	    /* origin form only */
	    {"GET https://up.test/a/x HTTP/1.1\r\nHost: up.test\r\n\r\n",
	        "HTTP/1.1 400 "},
	    {"CONNECT up.test:443 HTTP/1.1\r\nHost: up.test\r\n\r\n",
	        "HTTP/1.1 400 "},
	};
	struct fixture *f = *state;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		connect_tunnel(f);
		client_tls(f, "up.test");
		assert_true(handshake(f));
		request(f, cases[i].req);
		assert_got(f, cases[i].want);
		session_close_all(&f->ctx);
		SSL_free(f->ssl);
		f->ssl = NULL;
		close(f->cfd);
		f->cfd = -1;
		f->ngot = 0;
		f->eof = 0;
	}
}

/* --- intercept_up_drain ---------------------------------------------------- */

/* What an upstream bufferevent's callbacks saw. */
struct drain {
	int reads;
	size_t first; /* the input after the first read callback's drain */
	short what; /* the event callback's, 0 before */
};

static void
drain_read(struct bufferevent *bev, void *arg)
{
	struct drain *d = arg;

	intercept_up_drain(bev);
	if (d->reads++ == 0)
		d->first = evbuffer_get_length(bufferevent_get_input(bev));
}

static void
drain_event(struct bufferevent *bev, short what, void *arg)
{
	struct drain *d = arg;

	(void)bev;
	d->what = what;
}

/* Runs both ends of a TLS handshake over a socketpair; 1 when done. */
static int
pair_handshake(SSL *c, SSL *srv)
{
	int64_t end = fixture_now_ms() + 3000;
	int rc = 0, rs = 0;

	while ((rc != 1 || rs != 1) && fixture_now_ms() < end) {
		if (rc != 1)
			rc = SSL_connect(c);
		if (rs != 1)
			rs = SSL_accept(srv);
	}
	return rc == 1 && rs == 1;
}

/*
 * An upstream TLS bufferevent as intercept_upstream() makes it, open,
 * whose server (f->ssl, a leaf of the run CA) has already sent N records
 * of LEN bytes and, if END, its close_notify and FIN.
 */
static struct bufferevent *
drain_pair(struct fixture *f, struct drain *d, int n, int len, int end)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	static char buf[16384];
	struct bufferevent *bev;
	SSL *c;
	int sv[2], i;

	assert_non_null(ctx);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	f->cfd = sv[1];
	assert_non_null(f->ssl = tls_server_ssl(
	                    f->ctx.tls, "up.test", f->err, sizeof(f->err)));
	assert_int_equal(SSL_set_fd(f->ssl, sv[1]), 1);
	assert_non_null(c = SSL_new(ctx));
	SSL_CTX_free(ctx);
	SSL_set_options(c, SSL_OP_IGNORE_UNEXPECTED_EOF);
	assert_int_equal(SSL_set_tlsext_host_name(c, "up.test"), 1);
	assert_int_equal(SSL_set_fd(c, sv[0]), 1);
	assert_true(pair_handshake(c, f->ssl));
	memset(buf, 'x', sizeof(buf));
	for (i = 0; i < n; i++)
		assert_int_equal(SSL_write(f->ssl, buf, len), len);
	if (end) {
		(void)SSL_shutdown(f->ssl);
		shutdown(sv[1], SHUT_WR);
	}
	bev = bufferevent_openssl_socket_new(f->base, sv[0], c,
	    BUFFEREVENT_SSL_OPEN,
	    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	assert_non_null(bev);
	bufferevent_setcb(bev, drain_read, NULL, drain_event, d);
	bufferevent_enable(bev, EV_READ);
	return bev;
}

/* Turns the loop until BEV's input holds WANT bytes and D saw an event. */
static void
drain_run(
    struct fixture *f, struct bufferevent *bev, struct drain *d, size_t want)
{
	int64_t end = fixture_now_ms() + 3000;

	while ((d->what == 0 ||
	           evbuffer_get_length(bufferevent_get_input(bev)) < want) &&
	    fixture_now_ms() < end)
		turn(f);
}

/*
 * libevent reads one record a readable event; the drain takes the rest
 * in the same callback, and the close_notify after them is the event
 * callback's EOF, as libevent says it.
 */
static void
test_drain_end(void **state)
{
	struct fixture *f = *state;
	struct drain d = {0};
	struct bufferevent *bev = drain_pair(f, &d, 3, 10000, 1);

	drain_run(f, bev, &d, 30000);
	assert_int_equal(d.reads, 1);
	assert_int_equal(d.first, 30000);
	assert_int_equal(d.what, BEV_EVENT_EOF | BEV_EVENT_READING);
	bufferevent_free(bev);
}

/* No more than 64 KiB a callback; the rest on later turns, then the end. */
static void
test_drain_limit(void **state)
{
	struct fixture *f = *state;
	struct drain d = {0};
	struct bufferevent *bev = drain_pair(f, &d, 6, 16384, 1);

	drain_run(f, bev, &d, 6 * 16384);
	assert_int_equal(d.first, 4 * 16384);
	assert_int_equal(
	    evbuffer_get_length(bufferevent_get_input(bev)), 6 * 16384);
	assert_int_equal(d.what, BEV_EVENT_EOF | BEV_EVENT_READING);
	bufferevent_free(bev);
}

/* After a small read, nothing more: a keep-alive response pays no read. */
static void
test_drain_small(void **state)
{
	struct fixture *f = *state;
	struct drain d = {0};
	struct bufferevent *bev = drain_pair(f, &d, 3, 1000, 1);

	drain_run(f, bev, &d, 3000);
	assert_int_equal(d.first, 1000);
	assert_int_equal(d.reads, 3);
	assert_int_equal(d.what, BEV_EVENT_EOF | BEV_EVENT_READING);
	bufferevent_free(bev);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_handshake),
	    T(test_sni_differs),
	    T(test_hello_early),
	    T(test_distrust),
	    T(test_clean_end),
	    T(test_inner_refused),
	    T(test_drain_end),
	    T(test_drain_limit),
	    T(test_drain_small),
	};

	/* As the engine: a write to a client gone is an error, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
