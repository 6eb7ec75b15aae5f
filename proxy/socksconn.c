/*
 * socksconn.c: the SOCKS5 handshake on a session (socksconn.h).  The wire
 * format is socks.c's; what follows the handshake, request.c's CONNECT
 * path; the answers, session.c's (by the session's via).
 */
#include <sys/socket.h>

#include <arpa/inet.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "proxy/request.h"
#include "proxy/session_int.h"
#include "proxy/socks.h"
#include "proxy/socksconn.h"
#include "proxy/synth.h"

static void request_read(struct bufferevent *, void *);

/*
 * Refuses S's handshake: logged (a "request" record, deny, REASON), then
 * the reply CODE -- or, with METHOD set, the method reply "no acceptable
 * method" -- and close.
 */
static void
refuse(struct session *s, int method, enum socks_reply code, const char *reason)
{
	uint8_t buf[SOCKS_REPLY_MAX] = {SOCKS_VERSION, SOCKS_METHOD_NONE};
	size_t n = method ? 2 : socks_reply(code, 0, NULL, 0, buf);

	snprintf(s->why, sizeof(s->why), "%s", reason);
	session_audit_refused(s, 0, s->why);
	evbuffer_add(bufferevent_get_output(s->client.bev), buf, n);
	bufferevent_enable(s->client.bev, EV_WRITE);
	session_finish(s);
}

/* Why socks_request() refused, in words for the log. */
static const char *
request_why(int err)
{
	switch (err) {
	case SOCKS_E_VERSION:
		return "SOCKS: the request is not version 5";
	case SOCKS_E_COMMAND:
		return "SOCKS: only CONNECT is supported (not BIND or UDP "
		       "ASSOCIATE)";
	case SOCKS_E_ATYP:
		return "SOCKS: unknown address type";
	case SOCKS_E_NAME:
		return "SOCKS: the target is not a host name";
	case SOCKS_E_PORT:
		return "SOCKS: port 0";
	default:
		return "SOCKS: the reserved byte is not 0";
	}
}

/*
 * A synthetic address (the DNS stub's answer) stands for its name: H
 * becomes that name.  Returns 0, or -1 when the address is synthetic but
 * no longer mapped (S refused: a name is never guessed).
 */
static int
unsynth(struct session *s, struct target_host *h, uint16_t port)
{
	int family = h->kind == TARGET_V4 ? AF_INET : AF_INET6;
	char why[TARGET_HOST_MAX + 128], name[TARGET_HOST_MAX];

	if (h->kind == TARGET_NAME || s->ctx->synth == NULL ||
	    !synth_is_synthetic(family, h->addr))
		return 0;
	if (synth_name(s->ctx->synth, family, h->addr, name, sizeof(name)) !=
	        0 ||
	    target_host_parse(name, strlen(name), h) != 0) {
		session_note_target(s, "CONNECT", 7, h, port);
		snprintf(why, sizeof(why),
		    "%s is a synthetic address no longer mapped to a name "
		    "(look the name up again)",
		    h->name);
		session_reply_close(s, 403, why);
		return -1;
	}
	return 0;
}

/* The client went away, or its socket failed, before the tunnel. */
static void
client_event(struct bufferevent *bev, short what, void *arg)
{
	struct session *s = arg;

	(void)bev;
	if (session_clean_eof(what) &&
	    evbuffer_get_length(bufferevent_get_input(s->client.bev)) > 0)
		session_audit_refused(
		    s, 0, "SOCKS: the client closed mid-handshake");
	session_close(s,
	    session_clean_eof(what)
	        ? NULL
	        : evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
}

static void
request_read(struct bufferevent *bev, void *arg)
{
	struct session *s = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t len = evbuffer_get_length(in);
	struct socks_request r;
	int n;

	if (len > SOCKS_REQUEST_MAX)
		len = SOCKS_REQUEST_MAX;
	n = socks_request(evbuffer_pullup(in, len), len, &r);
	if (n == SOCKS_MORE)
		return;
	if (n < 0) {
		refuse(s, 0, socks_reply_for_error(n), request_why(n));
		return;
	}
	evbuffer_drain(in, n);
	evtimer_del(s->idle);
	session_follow_policy(s);
	if (unsynth(s, &r.host, r.port) != 0)
		return;
	/* From here the client's bytes are the tunnel's. */
	bufferevent_setcb(bev, NULL, NULL, client_event, s);
	bufferevent_setwatermark(bev, EV_READ, 0, HTTP_HEAD_MAX);
	request_connect(s, &r.host, r.port);
}

static void
greeting_read(struct bufferevent *bev, void *arg)
{
	static const uint8_t noauth[] = {SOCKS_VERSION, SOCKS_METHOD_NOAUTH};
	struct session *s = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t len = evbuffer_get_length(in);
	int n;

	if (len > SOCKS_REQUEST_MAX)
		len = SOCKS_REQUEST_MAX;
	n = socks_greeting(evbuffer_pullup(in, len), len);
	if (n == SOCKS_MORE)
		return;
	if (n == SOCKS_E_METHODS) {
		refuse(s, 1, SOCKS_REP_FAILURE,
		    "SOCKS: the client offers no \"no authentication\" method");
		return;
	}
	if (n < 0) {
		/* No SOCKS5 client: there is no reply it would read. */
		snprintf(s->why, sizeof(s->why),
		    "SOCKS: the greeting is not version 5");
		session_audit_refused(s, 0, s->why);
		session_finish(s);
		return;
	}
	evbuffer_drain(in, n);
	evbuffer_add(bufferevent_get_output(bev), noauth, sizeof(noauth));
	bufferevent_setcb(bev, request_read, NULL, client_event, s);
	if (evbuffer_get_length(in) > 0)
		request_read(bev, s); /* sent at once, before our reply */
}

struct session *
socksconn_new(struct session_ctx *ctx, int fd, uint64_t conn)
{
	struct session *s;

	if ((s = request_session(ctx, fd, conn, PROXY_VIA_SOCKS)) == NULL)
		return NULL;
	s->state = SESSION_HEAD;
	session_note_target(s, "CONNECT", 7, NULL, 0);
	/* The longest greeting or request; what follows waits in the kernel. */
	bufferevent_setwatermark(s->client.bev, EV_READ, 0, SOCKS_REQUEST_MAX);
	bufferevent_setcb(s->client.bev, greeting_read, NULL, client_event, s);
	bufferevent_enable(s->client.bev, EV_READ | EV_WRITE);
	session_start_head_timer(s);
	return s;
}
