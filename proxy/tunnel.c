/*
 * tunnel.c: splice(2) relay of CONNECT tunnels (see tunnel.h).
 *
  * Each direction moves socket -> pipe -> socket, once it has carried a
 * read of 16 KiB; small exchanges go by recv and send.  The pipe comes
 * from the event loop's pool (pipepool.h) when bytes are to move and goes
 * back as soon as it is empty, so an idle tunnel holds its two sockets
 * only.  When no pipe can be had (the pool's bound, EMFILE, ENFILE), the
 * direction copies instead: recv and send of 16 KiB, what the destination
 * did not take kept on the heap until it does; the next read tries the
 * pool again.  Backpressure is the pipe (or the kept bytes): reading
 * stops while bytes wait and resumes once the peer has taken them.
 * Half-close: EOF from a source becomes shutdown(SHUT_WR) on the
 * destination once nothing waits; the tunnel ends when both directions
 * are done, or on the first error.
 *
 * The bufferevent relay (tunnel_relay_start) carries what splice cannot:
 * the bytes after a 101 (in the clear, or inside an intercepted tunnel
 * through its TLS bufferevents), and a CONNECT tunnel whose bytes were
 * already queued.  Bytes move between the two bufferevents by
 * handing over evbuffer chains (no copy).  Backpressure: when the peer's
 * output grows past session_buf_high() (less with many sessions), reading
 * stops on the side that feeds it and resumes from the peer's write
 * callback once it has drained.  Half-close: EOF from one side becomes
 * shutdown(SHUT_WR) on the other once its output is flushed; the tunnel
 * ends when both directions are done.
 */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "proxy/pipepool.h"
#include "proxy/session_int.h"
#include "proxy/tunnel.h"

#define SPLICE_MAX (1024 * 1024)
#define SMALL_MAX (16 * 1024) /* a read this full means bulk: use a pipe */
#define FAIL_DST (-2) /* fill's: the send to the destination failed */

struct tdir {
	struct tunnel *t;
	const char *src_name, *dst_name; /* for errors: the side that failed */
	int src, dst;
	int pipe[2]; /* from the pool while bytes are in it, else -1 */
	size_t inpipe; /* bytes waiting in the pipe */
	char *held; /* no pipe could be had: bytes waiting here */
	size_t nheld, offheld; /* ...how many, and sent of them */
	int bulk; /* a read filled SMALL_MAX (or was not all taken): splice */
	int eof, shut;
	int reading, writing; /* events added */
	uint64_t *bytes; /* the session's counter */
	struct event *rd; /* src readable */
	struct event *wr; /* dst writable */
};

struct tunnel {
	struct session *s;
	struct pipepool *pool; /* the loop's (NULL: a pipe per take) */
	int fd[2]; /* client, upstream */
	struct tdir dir[2]; /* client -> upstream, upstream -> client */
};

static void on_read(evutil_socket_t, short, void *);
static void on_write(evutil_socket_t, short, void *);

void
tunnel_free(struct tunnel *t)
{
	int i;

	if (t == NULL)
		return;
	for (i = 0; i < 2; i++) {
		if (t->dir[i].rd != NULL)
			event_free(t->dir[i].rd);
		if (t->dir[i].wr != NULL)
			event_free(t->dir[i].wr);
		if (t->dir[i].pipe[0] >= 0)
			pipepool_give(
			    t->pool, t->dir[i].pipe, t->dir[i].inpipe == 0);
		free(t->dir[i].held);
		if (t->fd[i] >= 0)
			close(t->fd[i]);
	}
	free(t);
}

/* Ends the tunnel (the session's close path frees T); SIDE failed. */
static void
fail(struct tdir *d, const char *side, int err)
{
	char why[128];

	snprintf(why, sizeof(why), "%s: %s", side, strerror(err));
	session_close(d->t->s, why);
}

/* Bytes read from the source that the destination has not taken yet. */
static size_t
waiting(const struct tdir *d)
{
	return d->inpipe + d->nheld;
}

/*
 * Keeps the N bytes at P that the destination did not take: in a pipe
 * from the pool (64 KiB hold SMALL_MAX), and what it does not take (no
 * pipe to be had, or one the kernel made smaller: pipe-user-pages-soft) in
 * a copy on the heap, sent after the pipe's.  Nothing else waits in D.
 */
static int
keep(struct tdir *d, const char *p, size_t n)
{
	ssize_t w = 0;

	if (pipepool_take(d->t->pool, d->pipe) == 0 &&
	    (w = write(d->pipe[1], p, n)) < 0)
		w = 0;
	d->inpipe = (size_t)w;
	if ((size_t)w < n) {
		if ((d->held = malloc(n - w)) == NULL)
			return -1;
		memcpy(d->held, p + w, n - w);
		d->nheld = n - w;
		d->offheld = 0;
	}
	return 0;
}

/*
 * Without a pipe: most tunnels carry a request and an answer of a few
 * KiB, for which recv and send cost fewer calls than a pipe and two
 * splices.  A read that fills the buffer, or that the destination did not
 * take whole, means bulk: the next reads splice through a pipe from the
 * pool.  This is also the copy a bulk direction falls back to when no
 * pipe can be had.
 */
static int
fill_small(struct tdir *d)
{
	char buf[SMALL_MAX];
	ssize_t r, w;

	if ((r = recv(d->src, buf, sizeof(buf), MSG_DONTWAIT)) <= 0) {
		d->eof = r == 0;
		return r == 0 || errno == EAGAIN || errno == EINTR ? 0 : -1;
	}
	w = send(d->dst, buf, r, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (w < 0 && errno != EAGAIN && errno != EINTR)
		return FAIL_DST;
	w = w < 0 ? 0 : w;
	*d->bytes += w;
	if (w < r || r == (ssize_t)sizeof(buf))
		d->bulk = 1;
	return w < r ? keep(d, buf + w, r - w) : 0;
}

/*
 * Source -> pipe (or the copy of fill_small), when nothing waits.
 * Returns 0 (EOF noted in D), or -1 (FAIL_DST: the destination's) with
 * errno.
 */
static int
fill(struct tdir *d)
{
	ssize_t r;

	if (waiting(d) > 0)
		return 0;
	if (!d->bulk || pipepool_take(d->t->pool, d->pipe) != 0)
		return fill_small(d);
	r = splice(d->src, NULL, d->pipe[1], NULL, SPLICE_MAX,
	    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (r > 0)
		d->inpipe += r;
	else if (r == 0)
		d->eof = 1;
	else if (errno != EAGAIN && errno != EINTR)
		return -1;
	return 0;
}

/* Held bytes -> destination, as much as it takes.  Returns 0 or -1. */
static int
drain_held(struct tdir *d)
{
	ssize_t w;

	while (d->nheld > 0) {
		w = send(d->dst, d->held + d->offheld, d->nheld,
		    MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (w <= 0)
			return -1;
		d->offheld += w;
		d->nheld -= w;
		*d->bytes += w;
	}
	if (d->nheld == 0) {
		free(d->held);
		d->held = NULL;
	}
	return 0;
}

/*
 * Pipe, then held bytes -> destination, as much as it takes; an empty
 * pipe goes back to the pool.  Returns 0 or -1.
 */
static int
drain(struct tdir *d)
{
	ssize_t r;

	while (d->inpipe > 0) {
		r = splice(d->pipe[0], NULL, d->dst, NULL, d->inpipe,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (r <= 0)
			return -1;
		d->inpipe -= r;
		*d->bytes += r;
	}
	if (d->inpipe == 0 && d->pipe[0] >= 0)
		pipepool_give(d->t->pool, d->pipe, 1);
	return d->inpipe == 0 ? drain_held(d) : 0;
}

static void
want(struct event *ev, int *on, int yes)
{
	if (yes && !*on)
		event_add(ev, NULL);
	else if (!yes && *on)
		event_del(ev);
	*on = yes;
}

/*
 * Sets what D waits for: the source while nothing waits (a full pipe
 * shows as EAGAIN on fill, and the writable destination resumes it), the
 * destination while bytes wait.  Passes an EOF on once none wait.
 * Returns 1 when the whole tunnel is done.
 */
static int
update(struct tdir *d)
{
	want(d->rd, &d->reading, !d->eof && waiting(d) == 0);
	want(d->wr, &d->writing, waiting(d) > 0);
	if (d->eof && waiting(d) == 0 && !d->shut) {
		shutdown(d->dst, SHUT_WR);
		d->shut = 1;
	}
	return d->t->dir[0].shut && d->t->dir[1].shut;
}

static void
step(struct tdir *d, int reading)
{
	struct session *s = d->t->s;
	int r = reading ? fill(d) : 0;

	if (r == 0 && drain(d) != 0)
		r = FAIL_DST;
	/* A read fails on the source, a write on the destination. */
	if (r != 0)
		fail(d, r == FAIL_DST ? d->dst_name : d->src_name, errno);
	else {
		session_touch(s);
		if (update(d))
			session_close(s, NULL);
	}
}

static void
on_read(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	step(arg, 1);
}

static void
on_write(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	step(arg, 0);
}

/*
 * Sends the front's answer (session_established: the 200, a SOCKS reply,
 * nothing) and the bytes the client sent behind its request straight to
 * the sockets.  Returns 0 when nothing is left in any buffer.
 */
static int
flush_start(struct session *s)
{
	struct evbuffer *cin = bufferevent_get_input(s->client.bev);
	struct evbuffer *cout = bufferevent_get_output(s->client.bev);
	int cfd = bufferevent_getfd(s->client.bev);
	int ufd = bufferevent_getfd(s->up.bev);
	size_t len;
	ssize_t n;

	session_established(s);
	if ((len = evbuffer_get_length(cout)) > 0) {
		n = send(cfd, evbuffer_pullup(cout, -1), len,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0)
			evbuffer_drain(cout, n);
		if (n < 0 || (size_t)n < len)
			return -1; /* the rest goes by the bufferevent */
	}
	while (evbuffer_get_length(cin) > 0) {
		n = evbuffer_write(cin, ufd);
		if (n <= 0)
			break;
		s->client.bytes += n;
	}
	return evbuffer_get_length(cin) > 0 ||
	        evbuffer_get_length(bufferevent_get_input(s->up.bev)) > 0
	    ? -1
	    : 0;
}

static int
dir_init(struct tunnel *t, int i, struct event_base *base)
{
	struct tdir *d = &t->dir[i];

	d->t = t;
	d->src_name = i == 0 ? "client" : "upstream";
	d->dst_name = i == 0 ? "upstream" : "client";
	d->src = t->fd[i];
	d->dst = t->fd[1 - i];
	d->pipe[0] = d->pipe[1] = -1;
	d->bytes = i == 0 ? &t->s->client.bytes : &t->s->up.bytes;
	d->rd = event_new(base, d->src, EV_READ | EV_PERSIST, on_read, d);
	d->wr = event_new(base, d->dst, EV_WRITE | EV_PERSIST, on_write, d);
	return d->rd != NULL && d->wr != NULL ? 0 : -1;
}

/* Takes the socket out of BEV, which is freed without closing it. */
static int
take_fd(struct bufferevent *bev)
{
	int fd = bufferevent_getfd(bev);

	bufferevent_setfd(bev, -1);
	bufferevent_free(bev);
	return fd;
}

int
tunnel_start(struct session *s)
{
	struct event_base *base = s->ctx->base;
	struct tunnel *t;

	if (flush_start(s) != 0 || (t = calloc(1, sizeof(*t))) == NULL)
		return -1;
	t->s = s;
	t->pool = s->ctx->pipes;
	t->fd[0] = t->fd[1] = -1;
	t->dir[0].pipe[0] = t->dir[1].pipe[0] = -1;
	t->fd[0] = bufferevent_getfd(s->client.bev);
	t->fd[1] = bufferevent_getfd(s->up.bev);
	if (dir_init(t, 0, base) != 0 || dir_init(t, 1, base) != 0) {
		t->fd[0] = t->fd[1] = -1; /* still the bufferevents' */
		tunnel_free(t);
		return -1;
	}
	take_fd(s->client.bev);
	take_fd(s->up.bev);
	s->client.bev = s->up.bev = NULL;
	s->tun = t;
	update(&t->dir[0]);
	update(&t->dir[1]);
	return 0;
}

/* --- the bufferevent relay ----------------------------------------------- */

static struct session_dir *
dir_of(struct session *s, struct bufferevent *bev)
{
	return bev == s->client.bev ? &s->client : &s->up;
}

/* Moves what D has read to its peer's output, with backpressure. */
static void
relay_move(struct session *s, struct session_dir *d)
{
	struct evbuffer *in = bufferevent_get_input(d->bev);
	struct evbuffer *out = bufferevent_get_output(d->dst->bev);
	size_t n = evbuffer_get_length(in);
	size_t high = session_buf_high(s->ctx);

	if (n == 0)
		return;
	evbuffer_add_buffer(out, in);
	d->bytes += n;
	session_touch(s);
	if (evbuffer_get_length(out) >= high) {
		bufferevent_disable(d->bev, EV_READ);
		bufferevent_setwatermark(d->dst->bev, EV_WRITE, high / 4, 0);
	}
}

/* Passes D's EOF on as soon as the peer's output is flushed. */
static void
relay_shut(struct session *s, struct session_dir *d)
{
	struct bufferevent *peer = d->dst->bev;

	if (!d->eof || d->shut ||
	    evbuffer_get_length(bufferevent_get_output(peer)) > 0)
		return;
	shutdown(bufferevent_getfd(peer), SHUT_WR);
	d->shut = 1;
	if (d->dst->shut)
		session_close(s, NULL);
}

static void
relay_read(struct bufferevent *bev, void *arg)
{
	struct session *s = arg;

	relay_move(s, dir_of(s, bev));
}

/* BEV's output drained: the side feeding it may read again. */
static void
relay_written(struct bufferevent *bev, void *arg)
{
	struct session *s = arg;
	struct session_dir *feeder = dir_of(s, bev)->dst;

	if (!feeder->eof)
		bufferevent_enable(feeder->bev, EV_READ);
	bufferevent_setwatermark(bev, EV_WRITE, 0, 0);
	relay_shut(s, feeder);
}

static void
relay_event(struct bufferevent *bev, short what, void *arg)
{
	struct session *s = arg;
	struct session_dir *d = dir_of(s, bev);
	char why[128];

	if (session_clean_eof(what)) {
		relay_move(s, d);
		d->eof = 1;
		bufferevent_setwatermark(d->dst->bev, EV_WRITE, 0, 0);
		relay_shut(s, d);
		return;
	}
	snprintf(why, sizeof(why), "%s: %s",
	    d == &s->client ? "client" : "upstream",
	    evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	session_close(s, why);
}

void
tunnel_relay_start(struct session *s)
{
	s->state = SESSION_TUNNEL;
	bufferevent_setcb(
	    s->client.bev, relay_read, relay_written, relay_event, s);
	bufferevent_setcb(s->up.bev, relay_read, relay_written, relay_event, s);
	bufferevent_setwatermark(s->client.bev, EV_READ, 0, 0);
	bufferevent_enable(s->client.bev, EV_READ | EV_WRITE);
	bufferevent_enable(s->up.bev, EV_READ | EV_WRITE);
	session_start_idle(s);
	/* Bytes sent right after the switch (a TLS hello, a first frame). */
	relay_move(s, &s->client);
	relay_move(s, &s->up);
}
