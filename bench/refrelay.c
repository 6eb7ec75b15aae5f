/*
 * refrelay.c: a reference CONNECT relay for bench_proxy.sh, the floor that
 * the proxies are measured against.  Not a proxy to use: no policy beyond
 * "127.0.0.0/8 only", no audit log, no timeouts, literal IPv4 targets.
 *
 *	refrelay [-m copy|splice] [-b BYTES]
 *
 * Listens on 127.0.0.1 (a free port, printed on standard error as
 * "refrelay: listening on 127.0.0.1:PORT"), answers "CONNECT a.b.c.d:PORT"
 * with a 200 once the target accepts, then moves bytes both ways until
 * both directions have ended (EOF becomes shutdown(SHUT_WR)).
 *
 * What it shows is the cost of the kernel work any relay does:
 *   - one epoll_ctl per socket (edge-triggered, registered once);
 *   - copy: read()/write() through a BYTES buffer per direction (64 KiB),
 *     allocated when bytes arrive and freed once drained, so that an idle
 *     tunnel holds no buffer;
 *   - splice: splice(2) through a pipe per direction (made on the first
 *     bytes, sized BYTES), the bytes never enter user space.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEAD_MAX 1024
#define EVENTS_MAX 256

static const char ok_reply[] = "HTTP/1.1 200 Connection established\r\n\r\n";
static const char bad_reply[] =
    "HTTP/1.1 403 Forbidden\r\n"
    "Content-Length: 0\r\nConnection: close\r\n\r\n";

enum tunnel_state { T_HEAD, T_CONNECTING, T_RELAY };

struct tunnel;

/* A socket of a tunnel, and what edge-triggered epoll said of it. */
struct end {
	int fd;
	int readable, writable;
	struct tunnel *t;
};

/* Bytes from end[i] to end[1 - i]: a buffer (copy) or a pipe (splice). */
struct flow {
	char *buf;
	size_t off, len;
	int pipe[2];
	int eof, shut;
};

struct tunnel {
	enum tunnel_state state;
	int dead; /* freed after the current batch of events */
	struct tunnel *next_dead;
	struct end end[2]; /* 0: client, 1: upstream */
	struct flow flow[2];
};

static int ep;
static int use_splice;
static struct tunnel *graveyard;
static size_t chunk = 64 * 1024;

static void
die(const char *what)
{
	fprintf(stderr, "refrelay: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int
watch(struct end *e)
{
	struct epoll_event ev = {
	    .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
	    .data.ptr = e,
	};

	return epoll_ctl(ep, EPOLL_CTL_ADD, e->fd, &ev);
}

/*
 * Closes T.  Its memory goes once the current batch of events is handled:
 * a later event of the batch may name T's other socket.
 */
static void
tunnel_close(struct tunnel *t)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (t->end[i].fd != -1)
			close(t->end[i].fd);
		if (t->flow[i].pipe[0] != -1) {
			close(t->flow[i].pipe[0]);
			close(t->flow[i].pipe[1]);
		}
		free(t->flow[i].buf);
	}
	t->dead = 1;
	t->next_dead = graveyard;
	graveyard = t;
}

static void
bury(void)
{
	struct tunnel *t;

	while ((t = graveyard) != NULL) {
		graveyard = t->next_dead;
		free(t);
	}
}

/* --- moving bytes ----------------------------------------------------------- */

/* Fills F from SRC.  Returns 1 on progress, 0 on none, -1 on error. */
static int
flow_fill(struct flow *f, struct end *src)
{
	ssize_t n;

	if (f->len > 0 || f->eof || !src->readable)
		return 0;
	if (use_splice) {
		if (f->pipe[0] == -1 &&
		    (pipe2(f->pipe, O_NONBLOCK | O_CLOEXEC) != 0 ||
		        fcntl(f->pipe[1], F_SETPIPE_SZ, (int)chunk) < 0))
			return -1;
		n = splice(src->fd, NULL, f->pipe[1], NULL, chunk,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	} else {
		if (f->buf == NULL && (f->buf = malloc(chunk)) == NULL)
			return -1;
		n = read(src->fd, f->buf, chunk);
	}
	if (n < 0 && errno == EAGAIN) {
		src->readable = 0;
		free(f->buf); /* nothing came: an idle tunnel keeps no buffer */
		f->buf = NULL;
		return 0;
	}
	if (n < 0)
		return -1;
	if (n == 0)
		f->eof = 1;
	f->off = 0;
	f->len = n;
	return 1;
}

/* Drains F into DST.  Returns 1 on progress, 0 on none, -1 on error. */
static int
flow_drain(struct flow *f, struct end *dst)
{
	ssize_t n;

	if (f->len == 0 || !dst->writable)
		return 0;
	if (use_splice)
		n = splice(f->pipe[0], NULL, dst->fd, NULL, f->len,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	else
		n = write(dst->fd, f->buf + f->off, f->len);
	if (n < 0 && errno == EAGAIN) {
		dst->writable = 0;
		return 0;
	}
	if (n <= 0)
		return -1;
	f->off += n;
	f->len -= n;
	if (f->len == 0 && !use_splice) {
		free(f->buf); /* an idle tunnel keeps no buffer */
		f->buf = NULL;
	}
	return 1;
}

/* Moves what can be moved in direction I.  Returns 0 or -1. */
static int
flow_pump(struct tunnel *t, int i)
{
	struct flow *f = &t->flow[i];
	int in, out;

	do {
		if ((in = flow_fill(f, &t->end[i])) < 0 ||
		    (out = flow_drain(f, &t->end[1 - i])) < 0)
			return -1;
	} while (in > 0 || out > 0);
	if (f->eof && f->len == 0 && !f->shut) {
		shutdown(t->end[1 - i].fd, SHUT_WR);
		f->shut = 1;
	}
	return 0;
}

/* --- the head and the connection upstream ----------------------------------- */

/* Parses "CONNECT a.b.c.d:PORT " into SA; only 127.0.0.0/8.  0 or -1. */
static int
parse_connect(const char *head, struct sockaddr_in *sa)
{
	char host[16];
	unsigned port;

	memset(sa, 0, sizeof(*sa));
	if (sscanf(head, "CONNECT %15[0-9.]:%u ", host, &port) != 2 ||
	    port == 0 || port > 65535 ||
	    inet_pton(AF_INET, host, &sa->sin_addr) != 1 ||
	    (ntohl(sa->sin_addr.s_addr) >> 24) != 127)
		return -1;
	sa->sin_family = AF_INET;
	sa->sin_port = htons(port);
	return 0;
}

static int
connect_upstream(struct tunnel *t, const struct sockaddr_in *sa)
{
	struct end *up = &t->end[1];
	int one = 1;

	up->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (up->fd == -1)
		return -1;
	setsockopt(up->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(up->fd, (const struct sockaddr *)sa, sizeof(*sa)) != 0 &&
	    errno != EINPROGRESS)
		return -1;
	t->state = T_CONNECTING;
	return watch(up);
}

/* Reads the request head into flow 0's buffer.  Returns 0 or -1. */
static int
head_read(struct tunnel *t)
{
	struct flow *f = &t->flow[0];
	struct sockaddr_in sa;
	size_t want;
	ssize_t n;
	char *end;

	if (f->buf == NULL && (f->buf = malloc(HEAD_MAX + 1)) == NULL)
		return -1;
	do {
		want = HEAD_MAX - f->len;
		n = read(t->end[0].fd, f->buf + f->len, want);
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return -1;
		f->len += n;
		f->buf[f->len] = '\0';
	} while (
	    (end = strstr(f->buf, "\r\n\r\n")) == NULL && f->len < HEAD_MAX);
	/* A short read emptied the socket: the next bytes bring an edge. */
	if ((size_t)n < want)
		t->end[0].readable = 0;
	if (end == NULL)
		return -1;
	if (end + 4 != f->buf + f->len || parse_connect(f->buf, &sa) != 0) {
		write(t->end[0].fd, bad_reply, sizeof(bad_reply) - 1);
		return -1;
	}
	free(f->buf);
	f->buf = NULL;
	f->len = 0;
	return connect_upstream(t, &sa);
}

/* The upstream socket is writable: connected, or failed. */
static int
upstream_ready(struct tunnel *t)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(t->end[1].fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 ||
	    err != 0)
		return -1;
	if (write(t->end[0].fd, ok_reply, sizeof(ok_reply) - 1) !=
	    (ssize_t)sizeof(ok_reply) - 1)
		return -1;
	t->state = T_RELAY;
	return 0;
}

/* --- the loop --------------------------------------------------------------- */

static void
on_event(struct end *e, uint32_t ev)
{
	struct tunnel *t = e->t;
	int r = 0;

	if (t->dead)
		return;
	if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		e->readable = 1;
	if (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR))
		e->writable = 1;
	if (t->state == T_HEAD && e == &t->end[0] && e->readable)
		r = head_read(t);
	else if (t->state == T_CONNECTING && e == &t->end[1] && e->writable)
		r = upstream_ready(t);
	if (r == 0 && t->state == T_RELAY &&
	    (flow_pump(t, 0) != 0 || flow_pump(t, 1) != 0))
		r = -1;
	if (r != 0 || (t->flow[0].shut && t->flow[1].shut))
		tunnel_close(t);
}

static void
on_accept(int lfd)
{
	struct tunnel *t;
	int fd, one = 1, i;

	while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) !=
	    -1) {
		if ((t = calloc(1, sizeof(*t))) == NULL) {
			close(fd);
			continue;
		}
		for (i = 0; i < 2; i++) {
			t->end[i].t = t;
			t->end[i].fd = -1;
			t->flow[i].pipe[0] = t->flow[i].pipe[1] = -1;
		}
		t->end[0].fd = fd;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (watch(&t->end[0]) != 0)
			tunnel_close(t);
	}
}

static int
listen_loopback(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int fd;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(fd, 4096) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
		die("listen");
	fprintf(stderr, "refrelay: listening on 127.0.0.1:%u\n",
	    ntohs(sa.sin_port));
	return fd;
}

int
main(int argc, char **argv)
{
	struct epoll_event ev[EVENTS_MAX], lev = {.events = EPOLLIN};
	struct rlimit rl;
	int lfd, ch, i, n;

	while ((ch = getopt(argc, argv, "m:b:")) != -1) {
		if (ch == 'm' && strcmp(optarg, "splice") == 0)
			use_splice = 1;
		else if (ch == 'b' &&
		    (chunk = strtoul(optarg, NULL, 10)) >= 4096)
			continue;
		else if (ch != 'm' || strcmp(optarg, "copy") != 0) {
			fprintf(stderr,
			    "usage: refrelay [-m copy|splice] "
			    "[-b BYTES >= 4096]\n");
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if ((ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		die("epoll_create1");
	lfd = listen_loopback();
	lev.data.ptr = NULL;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev) != 0)
		die("epoll_ctl");
	for (;;) {
		if ((n = epoll_wait(ep, ev, EVENTS_MAX, -1)) < 0 &&
		    errno != EINTR)
			die("epoll_wait");
		for (i = 0; i < n; i++) {
			if (ev[i].data.ptr == NULL)
				on_accept(lfd);
			else
				on_event(ev[i].data.ptr, ev[i].events);
		}
		bury();
	}
}
