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
#include <openssl/ssl.h>

#include "proxy/intercept.h"
#include "proxy/session_int.h"
#include "proxy/tls.h"

/* What interception adds to a session; its target is the session's. */
struct intercept {
	int ready; /* the client's handshake is done */
	int cut; /* end with no close_notify: the client sees a truncation */
	struct bufferevent *raw; /* the client's socket, under the TLS */
	intercept_up_cb *up_cb;
};

static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";

/* libevent takes OpenSSL's errors off its queue; the last one says most. */
static unsigned long
last_error(struct bufferevent *bev)
{
	unsigned long e, last = 0;

	while ((e = bufferevent_get_openssl_error(bev)) != 0)
		last = e;
	return last;
}

/* The TLS handshake with the sandbox's client is over, one way or the other. */
static void
handshake_event(struct bufferevent *bev, short what, void *arg)
{
	struct session *s = arg;
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	unsigned long e;
	char why[256];
	int sock_err = EVUTIL_SOCKET_ERROR();

	if (what & BEV_EVENT_CONNECTED) {
		/* The CONNECT's record: 200, handshake done. */
		session_audit_end(s, NULL);
		s->icpt->ready = 1;
		session_next_request(s);
		return;
	}
	e = last_error(bev);
	tls_server_error(ssl, e, why, sizeof(why));
	/*
	 * A client that rejects the certificate often just hangs up (or
	 * resets) instead of sending an alert.
	 */
	if (e == 0 && strcmp(why, "TLS handshake with the client failed") == 0)
		snprintf(why, sizeof(why),
		    "the client ended the TLS handshake%s%s (does it trust the "
		    "run CA?)",
		    (what & BEV_EVENT_EOF) ? "" : ": ",
		    (what & BEV_EVENT_EOF)
		        ? ""
		        : evutil_socket_error_to_string(sock_err));
	session_close(s, why); /* the CONNECT's record: 200, then this */
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
	/* The 200 goes out in the clear, ahead of the TLS records. */
	bufferevent_write(s->client.bev, established, sizeof(established) - 1);
	/*
	 * Not closed with the filter: at the end, the close_notify and the
	 * last response must still reach the socket (intercept_free).
	 */
	tls_bev = bufferevent_openssl_filter_new(s->ctx->base, s->client.bev,
	    ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_DEFER_CALLBACKS);
	if (tls_bev == NULL) {
		SSL_free(ssl);
		session_close(s, "out of memory");
		return;
	}
	s->icpt->raw = s->client.bev;
	s->client.bev = tls_bev;
	bufferevent_openssl_set_allow_dirty_shutdown(tls_bev, 1);
	bufferevent_setcb(tls_bev, NULL, NULL, handshake_event, s);
	bufferevent_enable(tls_bev, EV_READ | EV_WRITE);
	session_start_handshake_timer(s);
}

/* --- upstream ------------------------------------------------------------- */

static void
up_handshake(struct bufferevent *bev, short what, void *arg)
{
	struct session *s = arg;
	char why[256];

	if (what & BEV_EVENT_CONNECTED) {
		s->icpt->up_cb(s, bev, NULL);
		return;
	}
	tls_client_error(bufferevent_openssl_get_ssl(bev), last_error(bev), why,
	    sizeof(why));
	s->up.bev = NULL;
	bufferevent_free(bev);
	s->icpt->up_cb(s, NULL, why);
}

void
intercept_upstream(struct session *s, struct bufferevent *plain,
    const char *cafile, intercept_up_cb *cb)
{
	struct bufferevent *tls_bev;
	char err[256];
	SSL *ssl;

	ssl = tls_client_ssl(s->ctx->tls, s->tt->host.name, s->tt->port,
	    s->tt->host.kind != TARGET_NAME, cafile, err, sizeof(err));
	if (ssl == NULL) {
		bufferevent_free(plain);
		cb(s, NULL, err);
		return;
	}
	tls_bev = bufferevent_openssl_filter_new(s->ctx->base, plain, ssl,
	    BUFFEREVENT_SSL_CONNECTING,
	    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (tls_bev == NULL) {
		SSL_free(ssl);
		bufferevent_free(plain);
		cb(s, NULL, "out of memory");
		return;
	}
	bufferevent_openssl_set_allow_dirty_shutdown(tls_bev, 1);
	s->icpt->up_cb = cb;
	s->up.bev = tls_bev;
	bufferevent_setcb(tls_bev, NULL, NULL, up_handshake, s);
	bufferevent_enable(tls_bev, EV_READ | EV_WRITE);
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

	if (s->icpt == NULL)
		return;
	if (tls_bev != NULL && s->icpt->raw != NULL) {
		ssl = bufferevent_openssl_get_ssl(tls_bev);
		/*
		 * A clean end: the client tells a whole response from a cut
		 * (and a cut response, e.g. of a leak, ends with none).
		 */
		if (s->icpt->ready && !s->icpt->cut)
			(void)SSL_shutdown(ssl);
		bufferevent_free(tls_bev);
		SSL_free(ssl);
		s->client.bev = NULL;
		linger(s->icpt->raw);
	}
	free(s->icpt);
	s->icpt = NULL;
}
