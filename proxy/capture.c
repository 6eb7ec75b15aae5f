/*
 * capture.c: what the proxy does with a captured connection (capture.h).
 *
 * The session is made by request.c (request_session) and, one loop turn
 * later (capture_start's caller still holds it), its destination is
 * decided as a CONNECT.  A denial, or a tunnel that needs no look at the
 * first bytes, goes straight to request_connect(), which decides again
 * (the same policy, the same answer), writes the record and resets or
 * tunnels.  Otherwise the first bytes are read, at most PEEK_MAX, under
 * the head timeout, and left in the client's input: a tunnel sends them
 * upstream first, the TLS of an interception reads its hello from them,
 * and the HTTP head parser its first request.  A refusal is a reset
 * (session_reply_close before the front's exchange is over) with a
 * "request" record that says why.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/log.h"
#include "policy/policy.h"
#include "policy/target.h"
#include "proxy/capture.h"
#include "proxy/decide.h"
#include "proxy/peek.h"
#include "proxy/request.h"
#include "proxy/session_int.h"
#include "proxy/synth.h"

/* The address of SA, in FAMILY (IPv4-mapped: AF_INET), and its port. */
static int
split(const struct sockaddr *sa, socklen_t len, int *family,
    const uint8_t **addr, uint16_t *port)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
	int r = 0;

	if (sa->sa_family == AF_INET && len >= sizeof(*s4)) {
		*family = AF_INET;
		*addr = (const uint8_t *)&s4->sin_addr;
		*port = ntohs(s4->sin_port);
	} else if (sa->sa_family == AF_INET6 && len >= sizeof(*s6)) {
		*family =
		    IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr) ? AF_INET : AF_INET6;
		*addr = s6->sin6_addr.s6_addr + (*family == AF_INET ? 12 : 0);
		*port = ntohs(s6->sin6_port);
	} else
		r = -1;
	return r;
}

enum capture_dest
capture_destination(const struct sockaddr *sa, socklen_t len,
    struct synth *synth, struct target_host *host, uint16_t *port)
{
	enum capture_dest d = CAPTURE_DEST_BAD;
	char text[INET6_ADDRSTRLEN], mapped[TARGET_HOST_MAX];
	const char *name = NULL;
	const uint8_t *addr;
	int family, synthetic;

	if (split(sa, len, &family, &addr, port) == 0 &&
	    inet_ntop(family, addr, text, sizeof(text)) != NULL) {
		synthetic = synth_is_synthetic(family, addr);
		if (synthetic && synth != NULL &&
		    synth_name(synth, family, addr, mapped, sizeof(mapped)) ==
		        0)
			name = mapped;
		/* Unmapped, the address still names it in the record. */
		if (name == NULL)
			name = text;
		if (target_host_parse(name, strlen(name), host) == 0)
			d = synthetic && name == text ? CAPTURE_DEST_UNMAPPED
			                              : CAPTURE_DEST_OK;
	}
	return d;
}

/* --- refusals ------------------------------------------------------------- */

/* Refuses S (a reset), with a "request" record and a line that say why. */
static void
refuse(struct session *s, int status, const char *why)
{
	log_info("conn %llu: captured %s:%u: refused: %s",
	    (unsigned long long)s->conn, s->host, s->port, why);
	session_reply_close(s, status, why);
}

/* Hands S to request.c as a CONNECT to its target: tunnel, intercept, deny. */
static void
go_connect(struct session *s)
{
	struct session_target t = *s->tt;

	free(s->tt); /* an interception makes its own */
	s->tt = NULL;
	session_head_release(s); /* the peeked bytes are the tunnel's now */
	evtimer_del(s->idle);
	/* Reading stays as it is: an interception's TLS takes it over. */
	bufferevent_setcb(s->client.bev, NULL, NULL, NULL, NULL);
	request_connect(s, &t.host, t.port);
}

/* S spoke HTTP: its requests are served to its target one by one. */
static void
go_plain(struct session *s)
{
	s->reach = SESSION_REACH_PLAIN;
	s->front_done = 1; /* answers are HTTP from now on */
	session_next_request(s);
}

/* A TLS hello (peek_sni said R, naming SNI): does it agree with the name? */
static void
tls_hello(struct session *s, int r, const struct target_host *sni)
{
	const struct target_host *to = &s->tt->host;
	char why[TARGET_HOST_MAX * 2 + 96];

	if (r == PEEK_SNI_BAD)
		refuse(s, 400,
		    "the first bytes are a TLS record but no readable "
		    "ClientHello (malformed, or not in one record)");
	else if (r == PEEK_SNI_NONE && to->kind == TARGET_NAME) {
		snprintf(why, sizeof(why),
		    "a TLS ClientHello without SNI, to the name %s", to->name);
		refuse(s, 421, why);
	} else if (r == PEEK_SNI_FOUND && strcmp(sni->name, to->name) != 0) {
		snprintf(why, sizeof(why),
		    "SNI %s differs from the name %s the program connected to",
		    sni->name, to->name);
		refuse(s, 421, why);
	} else
		go_connect(s);
}

/* --- the first bytes -------------------------------------------------------- */

/* The client closed before its first bytes could be told apart. */
static void
peek_eof(struct session *s)
{
	if (evbuffer_get_length(bufferevent_get_input(s->client.bev)) == 0)
		session_close(s, "the client closed before sending a byte");
	else
		refuse(s, 400,
		    "the client closed before its first bytes told TLS "
		    "from HTTP");
}

/* Looks at what S sent so far; acts once it tells what it is. */
static void
peek_try(struct session *s)
{
	struct evbuffer *in = bufferevent_get_input(s->client.bev);
	size_t n = evbuffer_get_length(in);
	enum peek_kind k = PEEK_MORE;
	struct target_host sni;
	const uint8_t *p = NULL;
	int r = PEEK_SNI_MORE;

	/* Held like a head: many connections must not hold PEEK_MAX each. */
	if (n > 0 && request_head_account(s, n))
		return;
	if (n > PEEK_MAX)
		n = PEEK_MAX;
	if (n > 0 && (p = evbuffer_pullup(in, n)) == NULL) {
		session_close(s, "out of memory");
		return;
	}
	if (n > 0 && (k = peek_classify(p, n)) == PEEK_TLS &&
	    (r = peek_sni(p, n, &sni)) == PEEK_SNI_MORE)
		k = PEEK_MORE; /* the hello is not whole yet */
	if (k == PEEK_MORE) {
		if (s->client.eof)
			peek_eof(s);
		return;
	}
	evtimer_del(s->idle);
	if (k == PEEK_TLS)
		tls_hello(s, r, &sni);
	else if (k == PEEK_HTTP)
		go_plain(s);
	else if (s->dec.intercept)
		refuse(s, 400,
		    "this rule needs TLS or HTTP (paths, methods, inject or "
		    "placeholder), and the program sent neither");
	else
		go_connect(s);
}

static void
peek_read(struct bufferevent *bev, void *arg)
{
	(void)bev;
	peek_try(arg);
}

static void
peek_event(struct bufferevent *bev, short what, void *arg)
{
	struct session *s = arg;

	(void)bev;
	if (session_clean_eof(what)) {
		s->client.eof = 1;
		peek_try(s);
		return;
	}
	session_close(s, evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
}

static void
peek_timeout(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	refuse(arg, 408,
	    "nothing that tells TLS from HTTP within the head timeout "
	    "(ports 80 and 443, and rules that intercept, wait for the "
	    "first bytes)");
}

/* Reads S's first bytes, at most PEEK_MAX, under the head timeout. */
static void
peek_wait(struct session *s)
{
	unsigned ms = policy_timeout(s->policy->p, POLICY_TIMEOUT_HEAD);
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	bufferevent_setwatermark(s->client.bev, EV_READ, 0, PEEK_MAX);
	bufferevent_setcb(s->client.bev, peek_read, NULL, peek_event, s);
	bufferevent_enable(s->client.bev, EV_READ);
	event_assign(s->idle, s->ctx->base, -1, 0, peek_timeout, s);
	evtimer_add(s->idle, &tv);
}

/* --- start ---------------------------------------------------------------- */

/* S's destination, at its socket's own address, noted as its target. */
static enum capture_dest
destination(struct session *s, struct session_target *t)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	enum capture_dest d = CAPTURE_DEST_BAD;

	if (getsockname(bufferevent_getfd(s->client.bev),
	        (struct sockaddr *)&ss, &len) == 0)
		d = capture_destination((struct sockaddr *)&ss, len,
		    s->ctx->synth, &t->host, &t->port);
	if (d != CAPTURE_DEST_BAD)
		session_note_target(s, "CONNECT", 7, &t->host, t->port);
	return d;
}

/* One loop turn after the accept: decided as a CONNECT to its target. */
static void
begin(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	struct session_target t;
	enum capture_dest d = destination(s, &t);

	(void)fd;
	(void)what;
	if (d == CAPTURE_DEST_UNMAPPED)
		refuse(s, 502,
		    "synthetic address no longer mapped (its name was looked "
		    "up too long ago: look it up again)");
	else if (d != CAPTURE_DEST_OK)
		refuse(
		    s, 502, "the connection's original destination is unknown");
	else if ((s->tt = malloc(sizeof(*s->tt))) == NULL)
		session_close(s, "out of memory");
	else {
		*s->tt = t;
		decide_connect(s->policy->p, &t.host, t.port, &s->dec);
		/* Denied (a reset), or a tunnel at once, needs no bytes. */
		if (s->dec.verdict == POLICY_ALLOW &&
		    (s->dec.intercept || t.port == 80 || t.port == 443))
			peek_wait(s);
		else
			go_connect(s);
	}
}

struct session *
capture_start(struct session_ctx *ctx, int fd, uint64_t conn)
{
	static const struct timeval now = {0, 0};
	struct session *s;

	if ((s = request_session(ctx, fd, conn, PROXY_VIA_CAPTURE)) == NULL)
		return NULL;
	event_assign(s->idle, ctx->base, -1, 0, begin, s);
	evtimer_add(s->idle, &now);
	return s;
}
