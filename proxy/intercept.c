/*
 * intercept.c: CONNECT tunnels whose requests the policy must see.
 *
 * The proxy answers the CONNECT, then terminates TLS itself (tls.c checks
 * the SNI and presents a leaf of the run CA); from then on the session
 * reads origin-form requests from inside the tunnel, and forward.c
 * decides and relays each one, to the real server over a TLS connection
 * of the proxy's own that verifies the certificate and the name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "audit/field.h"
#include "proxy/intercept.h"
#include "proxy/metrics.h"
#include "proxy/session_int.h"
#include "proxy/tls.h"

/* What interception adds to a session; its target is the session's. */
struct intercept {
	int ready; /* the client's handshake is done */
	int cut; /* end with no close_notify: the client sees a truncation */
	struct bufferevent *raw; /* the client's socket, under the filter */
	intercept_up_cb *up_cb;
};

/*
 * The error of BEV's failed handshake, or 0.  libevent keeps its own code
 * (SSL_ERROR_SSL, of no library) and then OpenSSL's queue, and hands them
 * back newest first: the oldest from a library says most (the alert the
 * client sent).
 */
static unsigned long
handshake_error(struct bufferevent *bev)
{
	unsigned long e, found = 0;

	while ((e = bufferevent_get_openssl_error(bev)) != 0)
		if (ERR_GET_LIB(e) != 0)
			found = e;
	return found;
}

/* The name of the alert by which the client refused our certificate. */
static const char *
distrust_alert(unsigned long e)
{
	static const struct {
		int alert;
		const char *name;
	} v[] = {
	    {SSL_AD_BAD_CERTIFICATE, "bad certificate"},
	    {SSL_AD_UNSUPPORTED_CERTIFICATE, "unsupported certificate"},
	    {SSL_AD_CERTIFICATE_REVOKED, "certificate revoked"},
	    {SSL_AD_CERTIFICATE_EXPIRED, "certificate expired"},
	    {SSL_AD_CERTIFICATE_UNKNOWN, "certificate unknown"},
	    {SSL_AD_UNKNOWN_CA, "unknown ca"},
	};
	size_t i;

	/* A received alert is reported as its number past the offset. */
	if (ERR_GET_LIB(e) != ERR_LIB_SSL)
		return NULL;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (ERR_GET_REASON(e) == SSL_AD_REASON_OFFSET + v[i].alert)
			return v[i].name;
	return NULL;
}

static const char failed[] = "TLS handshake with the client failed";

/*
 * Words in WHY a handshake that failed with E (SSL, socket error SOCK_ERR,
 * BEV_EVENT_* WHAT).  Returns 1 when the client refused the run CA: by an
 * alert about the certificate, or by hanging up, as many clients do
 * instead.
 */
static int
handshake_why(
    SSL *ssl, unsigned long e, short what, int sock_err, char *why, size_t len)
{
	const char *alert;

	tls_server_error(ssl, e, why, len);
	if (strncmp(why, failed, sizeof(failed) - 1) != 0)
		return 0; /* the proxy's own refusal: SNI */
	if ((alert = distrust_alert(e)) != NULL) {
		snprintf(why, len, "%s (alert %s)", FIELD_ERR_DISTRUST, alert);
		return 1;
	}
	if (e != 0)
		return 0;
	snprintf(why, len, "%s%s%s (does it trust the run CA?)",
	    FIELD_ERR_HANGUP, session_clean_eof(what) ? "" : ": ",
	    session_clean_eof(what) ? ""
	                            : evutil_socket_error_to_string(sock_err));
	return 1;
}

/* The TLS handshake with the sandbox's client is over, one way or the other. */
static void
handshake_event(struct bufferevent *bev, short what, void *arg)
{
	struct session *s = arg;
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	char why[256];
	int sock_err = EVUTIL_SOCKET_ERROR();

	if (what & BEV_EVENT_CONNECTED) {
		/* The CONNECT's record: 200, handshake done. */
		session_audit_end(s, NULL);
		s->icpt->ready = 1;
		session_next_request(s);
		return;
	}
	if (handshake_why(
	        ssl, handshake_error(bev), what, sock_err, why, sizeof(why)) &&
	    s->ctx->distrust != NULL)
		s->ctx->distrust(s->ctx->denied_arg, s->host, s->port);
	session_close(s, why); /* the CONNECT's record: 200, then this */
}

/* The most one write(2) of the client's socket takes. */
#define CLIENT_WRITE (256 * 1024)

/* The filter over the plain bufferevent, which keeps the socket. */
static struct bufferevent *
filter_start(struct session *s, SSL *ssl)
{
	struct bufferevent *tls_bev;

	/*
	 * Not closed with the filter: at the end, the close_notify and the
	 * last response must still reach the socket (intercept_free).
	 */
	tls_bev = bufferevent_openssl_filter_new(s->ctx->base, s->client.bev,
	    ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_DEFER_CALLBACKS);
	if (tls_bev == NULL) {
		SSL_free(ssl);
		return NULL;
	}
	s->icpt->raw = s->client.bev;
	/*
	 * What the filter encrypts goes out in writes of up to CLIENT_WRITE:
	 * libevent's default of 16,384 bytes a write cut each full record
	 * (16,406 bytes with its header and tag) across two writev(2)s.
	 */
	bufferevent_set_max_single_write(s->icpt->raw, CLIENT_WRITE);
	/*
	 * And no more than that waits under the filter: past it, what is
	 * left stays in the filter's output, where the relay's backpressure
	 * looks (forward.c); the socket's buffer had no bound of its own.
	 */
	bufferevent_setwatermark(s->icpt->raw, EV_WRITE, 0, CLIENT_WRITE);
	return tls_bev;
}

void
intercept_start(struct session *s)
{
	struct bufferevent *tls_bev;
	char err[256];
	SSL *ssl;

	if ((s->icpt = calloc(1, sizeof(*s->icpt))) == NULL) {
		session_close(s, "out of memory");
		return;
	}
	if ((ssl = tls_server_ssl(
	         s->ctx->tls, s->tt->host.name, err, sizeof(err))) == NULL) {
		session_reply_close(s, 502, err);
		return;
	}
	s->status = 200;
	/* The 200 (or SOCKS reply) goes out in the clear, ahead of TLS. */
	session_established(s);
	/*
	 * The client's TLS is a filter over its plain bufferevent, which
	 * also reads a hello sent before the 200.  On the socket itself
	 * (bufferevent_openssl_socket_new, as the upstream side is) it cost
	 * 20-30 us more of the engine per keep-alive request and gained no
	 * bulk (bench/README.md, "The merged tree").
	 */
	tls_bev = filter_start(s, ssl);
	if (tls_bev == NULL) {
		session_close(s, "out of memory");
		return;
	}
	s->client.bev = tls_bev;
	bufferevent_openssl_set_allow_dirty_shutdown(tls_bev, 1);
	bufferevent_setcb(tls_bev, NULL, NULL, handshake_event, s);
	bufferevent_enable(tls_bev, EV_READ | EV_WRITE);
	session_start_handshake_timer(s);
}

/* --- upstream ------------------------------------------------------------- */

/* The most one read of the upstream's TLS takes (a few records). */
#define UP_READ (64 * 1024)

static void
up_handshake(struct bufferevent *bev, short what, void *arg)
{
	struct session *s = arg;
	char why[256];

	if (what & BEV_EVENT_CONNECTED) {
		s->icpt->up_cb(s, bev, NULL);
		return;
	}
	tls_client_error(bufferevent_openssl_get_ssl(bev), handshake_error(bev),
	    why, sizeof(why));
	metrics_upstream_error(s->ctx->metrics, METRICS_UP_TLS);
	s->up.bev = NULL;
	bufferevent_free(bev);
	s->icpt->up_cb(s, NULL, why);
}

void
intercept_upstream(struct session *s, struct bufferevent *plain,
    const char *cafile, intercept_up_cb *cb)
{
	struct bufferevent *tls_bev;
	evutil_socket_t fd = bufferevent_getfd(plain);
	char err[256];
	SSL *ssl;

	ssl = tls_client_ssl(s->ctx->tls, s->tt->host.name, s->tt->port,
	    s->tt->host.kind != TARGET_NAME, cafile, err, sizeof(err));
	if (ssl == NULL) {
		bufferevent_free(plain);
		cb(s, NULL, err);
		return;
	}
	/*
	 * The SSL on the socket itself (nothing was sent or read on it
	 * yet): a record per read, large writes, one bufferevent.  A close
	 * with no close_notify ends a close-delimited body, as on the
	 * filter (dirty shutdown allowed).
	 */
	SSL_set_options(ssl, SSL_OP_IGNORE_UNEXPECTED_EOF);
	bufferevent_setfd(plain, -1);
	bufferevent_free(plain);
	tls_bev = bufferevent_openssl_socket_new(s->ctx->base, fd, ssl,
	    BUFFEREVENT_SSL_CONNECTING,
	    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (tls_bev == NULL) {
		evutil_closesocket(fd); /* libevent freed SSL */
		cb(s, NULL, "out of memory");
		return;
	}
	bufferevent_openssl_set_allow_dirty_shutdown(tls_bev, 1);
	/* Reads of up to UP_READ: no 4 KiB slices of each record. */
	bufferevent_setwatermark(tls_bev, EV_READ, 0, UP_READ);
	s->icpt->up_cb = cb;
	s->up.bev = tls_bev;
	bufferevent_setcb(tls_bev, NULL, NULL, up_handshake, s);
	bufferevent_enable(tls_bev, EV_READ | EV_WRITE);
}

/* The plaintext of one TLS record at most (RFC 8446 5.1). */
#define UP_RECORD (16 * 1024)

/* The event of BEV's callback for SSL_read's error ERR. */
static short
read_end(int err)
{
	if (err == SSL_ERROR_ZERO_RETURN)
		return BEV_EVENT_EOF | BEV_EVENT_READING;
	return BEV_EVENT_ERROR | BEV_EVENT_READING;
}

void
intercept_up_drain(struct bufferevent *bev)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_iovec v;
	int n = 1, err = SSL_ERROR_NONE;

	/*
	 * Not after a small read: a small response (keep-alive) would pay a
	 * read(2) that finds nothing for each.
	 */
	if (ssl == NULL || !(bufferevent_get_enabled(bev) & EV_READ) ||
	    evbuffer_get_length(in) < UP_RECORD / 4)
		return;
	/* A reservation of a whole record: each SSL_read takes one. */
	while (n > 0 && evbuffer_get_length(in) < UP_READ &&
	    evbuffer_reserve_space(in, UP_RECORD, &v, 1) == 1) {
		ERR_clear_error();
		if ((n = SSL_read(ssl, v.iov_base, (int)v.iov_len)) > 0) {
			v.iov_len = (size_t)n;
			evbuffer_commit_space(in, &v, 1);
		} else
			err = SSL_get_error(ssl, n);
	}
	/*
	 * Wanting to write (a TLS 1.3 KeyUpdate's answer on a full socket)
	 * is no end: libevent's own next read meets it again and waits for
	 * the socket to take it.
	 */
	if (n <= 0 && err != SSL_ERROR_WANT_READ &&
	    err != SSL_ERROR_WANT_WRITE) {
		/*
		 * The end (a close_notify, or EOF: SSL_OP_IGNORE_UNEXPECTED_EOF)
		 * or a failure, which libevent would only meet at the socket's
		 * next readable event: said now, as it says it.
		 */
		ERR_clear_error();
		bufferevent_disable(bev, EV_READ);
		bufferevent_trigger_event(bev, read_end(err), 0);
	}
}

/* --- the end -------------------------------------------------------------- */

static void
linger_written(struct bufferevent *bev, void *arg)
{
	(void)arg;
	bufferevent_free(bev);
}

static void
linger_event(struct bufferevent *bev, short what, void *arg)
{
	(void)what;
	(void)arg;
	bufferevent_free(bev);
}

/* RAW outlives the session until what it holds is sent (or 5 s pass). */
static void
linger(struct bufferevent *raw)
{
	struct timeval tv = {5, 0};

	if (evbuffer_get_length(bufferevent_get_output(raw)) == 0) {
		bufferevent_free(raw);
		return;
	}
	bufferevent_setcb(raw, NULL, linger_written, linger_event, NULL);
	bufferevent_setwatermark(raw, EV_WRITE, 0, 0);
	bufferevent_set_timeouts(raw, NULL, &tv);
	bufferevent_disable(raw, EV_READ);
	bufferevent_enable(raw, EV_WRITE);
}

void
intercept_cut(struct session *s)
{
	if (s->icpt != NULL)
		s->icpt->cut = 1;
}

void
intercept_free(struct session *s)
{
	struct bufferevent *tls_bev = s->client.bev;
	SSL *ssl;
	/*
	 * A clean end: the client tells a whole response from a cut (and a
	 * cut response, e.g. of a leak, ends with none).
	 */
	int notify = s->icpt != NULL && s->icpt->ready && !s->icpt->cut;

	if (s->icpt == NULL)
		return;
	if (tls_bev != NULL && s->icpt->raw != NULL) {
		ssl = bufferevent_openssl_get_ssl(tls_bev);
		/* The close_notify whole, however full the socket's buffer. */
		bufferevent_setwatermark(s->icpt->raw, EV_WRITE, 0, 0);
		if (notify)
			(void)SSL_shutdown(ssl);
		bufferevent_free(tls_bev);
		SSL_free(ssl);
		s->client.bev = NULL;
		linger(s->icpt->raw);
	}
	free(s->icpt);
	s->icpt = NULL;
}
