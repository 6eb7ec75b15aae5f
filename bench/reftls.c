/*
 * reftls.c: a reference TLS-terminating CONNECT relay for
 * bench_intercept.sh, the floor of any intercepting proxy on the machine
 * it runs on, as refrelay.c is the floor of a plain one.  Not a proxy to
 * use: no policy beyond "127.0.0.0/8 only", no HTTP parsing, no header
 * added, no audit log, no timeouts, no certificate verification, literal
 * IPv4 targets only.
 *
 *	reftls CERT KEY
 *
 * Listens on 127.0.0.1 (a free port, printed on standard error as
 * "reftls: listening on 127.0.0.1:PORT"), answers "CONNECT a.b.c.d:PORT"
 * with a 200 once the target accepts, terminates the client's TLS with
 * CERT (a chain, leaf first) and KEY, then makes its own TLS connection to
 * the target (the client's SNI passed on; no verification, no session
 * reuse, no tickets either way) and moves the plaintext both ways with
 * SSL_read/SSL_write through a 64 KiB buffer per direction, until both
 * directions have ended (close_notify and shutdown(SHUT_WR) passed on).
 *
 * What it shows is the work every intercepting relay does and cannot
 * avoid: two TLS handshakes per connection (one as a server, one as a
 * client), every byte decrypted once and encrypted once on each leg, two
 * sockets per tunnel.  One thread, epoll edge-triggered, each socket
 * registered once; an SSL call that would block records what it waits
 * for (the socket readable or writable) and is not tried again before
 * epoll says so.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#define HEAD_MAX 1024
#define EVENTS_MAX 256
#define BUF_SIZE (64 * 1024)

static const char ok_reply[] = "HTTP/1.1 200 Connection established\r\n\r\n";
static const char bad_reply[] =
    "HTTP/1.1 403 Forbidden\r\n"
    "Content-Length: 0\r\nConnection: close\r\n\r\n";

enum tunnel_state { T_HEAD, T_CONNECTING, T_HS_CLIENT, T_HS_UP, T_RELAY };

struct tunnel;

/*
 * A socket of a tunnel and its TLS.  rd_wait: what the next read-side
 * call (the CONNECT head, the handshake, SSL_read) waits for; wr_wait:
 * the same for the write side (the connect, SSL_write).  0, EPOLLIN or
 * EPOLLOUT; an edge of that kind clears it.
 */
struct end {
	int fd;
	SSL *ssl;
	unsigned rd_wait, wr_wait;
	struct tunnel *t;
};

/* Plaintext from end[i] to end[1 - i]. */
struct flow {
	char *buf;
	size_t off, len;
	int eof, shut;
};

struct tunnel {
	enum tunnel_state state;
	int dead; /* freed after the current batch of events */
	struct tunnel *next_dead;
	struct end end[2]; /* 0: client, 1: upstream */
	struct flow flow[2];
	char head[HEAD_MAX];
	size_t head_len;
};

static int ep;
static SSL_CTX *server_ctx, *client_ctx;
static struct tunnel *graveyard;

static void
die(const char *what)
{
	fprintf(stderr, "reftls: %s: %s\n", what, strerror(errno));
	ERR_print_errors_fp(stderr);
	exit(1);
}

static void
kill_tunnel(struct tunnel *t)
{
	int i;

	if (t->dead)
		return;
	t->dead = 1;
	for (i = 0; i < 2; i++) {
		if (t->end[i].fd != -1)
			close(t->end[i].fd); /* also leaves the epoll set */
		t->end[i].fd = -1;
	}
	t->next_dead = graveyard;
	graveyard = t;
}

/* Frees the tunnels killed during the last batch of events. */
static void
bury(void)
{
	struct tunnel *t;
	int i;

	while ((t = graveyard) != NULL) {
		graveyard = t->next_dead;
		for (i = 0; i < 2; i++) {
			SSL_free(t->end[i].ssl);
			free(t->flow[i].buf);
		}
		free(t);
	}
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

/* What an SSL call that returned n <= 0 waits for: EPOLLIN or EPOLLOUT,
 * 0 for the end of the peer's data, -1 for an error. */
static int
ssl_wait(SSL *ssl, int n)
{
	switch (SSL_get_error(ssl, n)) {
	case SSL_ERROR_WANT_READ:
		return EPOLLIN;
	case SSL_ERROR_WANT_WRITE:
		return EPOLLOUT;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	default:
		ERR_clear_error();
		return -1;
	}
}

/* "CONNECT a.b.c.d:port ...": the target, if it is in 127.0.0.0/8. */
static int
parse_target(const char *head, struct sockaddr_in *sa)
{
	char ip[16];
	unsigned port;

	if (sscanf(head, "CONNECT %15[0-9.]:%u ", ip, &port) != 2 ||
	    port == 0 || port > 65535 ||
	    inet_pton(AF_INET, ip, &sa->sin_addr) != 1 ||
	    (ntohl(sa->sin_addr.s_addr) >> 24) != 127)
		return -1;
	sa->sin_family = AF_INET;
	sa->sin_port = htons(port);
	return 0;
}

/* Reads the CONNECT head and starts the connect to the target. */
static void
step_head(struct tunnel *t)
{
	struct sockaddr_in sa = {0};
	struct end *up = &t->end[1];
	int one = 1;
	ssize_t n;
	char *e;

	n = read(t->end[0].fd, t->head + t->head_len,
	    sizeof(t->head) - 1 - t->head_len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		t->end[0].rd_wait = EPOLLIN;
		return;
	}
	if (n <= 0)
		goto fail;
	t->head_len += n;
	t->head[t->head_len] = '\0';
	if ((e = strstr(t->head, "\r\n\r\n")) == NULL) {
		if (t->head_len + 1 >= sizeof(t->head))
			goto refuse;
		return;
	}
	/* The client waits for the 200 before its ClientHello. */
	if (e + 4 != t->head + t->head_len || parse_target(t->head, &sa) != 0)
		goto refuse;
	up->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (up->fd == -1)
		goto fail;
	setsockopt(up->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(up->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 &&
	    errno != EINPROGRESS)
		goto fail;
	if (watch(up) != 0)
		goto fail;
	up->wr_wait = EPOLLOUT;
	t->state = T_CONNECTING;
	return;
refuse:
	(void)!write(t->end[0].fd, bad_reply, sizeof(bad_reply) - 1);
fail:
	kill_tunnel(t);
}

/* The target accepted (or not): the 200, and the client's handshake. */
static void
step_connecting(struct tunnel *t)
{
	socklen_t len = sizeof(int);
	int err = 0;

	if (getsockopt(t->end[1].fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 ||
	    err != 0 ||
	    write(t->end[0].fd, ok_reply, sizeof(ok_reply) - 1) !=
	        (ssize_t)(sizeof(ok_reply) - 1) ||
	    (t->end[0].ssl = SSL_new(server_ctx)) == NULL ||
	    SSL_set_fd(t->end[0].ssl, t->end[0].fd) != 1) {
		kill_tunnel(t);
		return;
	}
	SSL_set_accept_state(t->end[0].ssl);
	t->end[0].rd_wait = 0; /* the ClientHello may be there already */
	t->state = T_HS_CLIENT;
}

/* One handshake step on e: 1 when done, 0 to wait, -1 on failure. */
static int
handshake(struct end *e)
{
	int n = SSL_do_handshake(e->ssl), w;

	if (n == 1)
		return 1;
	if ((w = ssl_wait(e->ssl, n)) <= 0)
		return -1;
	e->rd_wait = w;
	return 0;
}

/* The client's handshake is done: the target's, with the client's SNI. */
static int
start_upstream(struct tunnel *t)
{
	const char *sni =
	    SSL_get_servername(t->end[0].ssl, TLSEXT_NAMETYPE_host_name);
	struct end *up = &t->end[1];

	if ((up->ssl = SSL_new(client_ctx)) == NULL ||
	    SSL_set_fd(up->ssl, up->fd) != 1 ||
	    (sni != NULL && SSL_set_tlsext_host_name(up->ssl, sni) != 1))
		return -1;
	SSL_set_connect_state(up->ssl);
	up->rd_wait = 0;
	return 0;
}

/* Moves what it can from end[i] to end[1 - i]: 1 if anything moved. */
static int
move(struct tunnel *t, int i)
{
	struct end *src = &t->end[i], *dst = &t->end[1 - i];
	struct flow *f = &t->flow[i];
	int n, w, moved = 0;

	if (t->dead)
		return 0;
	if (f->len == 0 && !f->eof && src->rd_wait == 0) {
		if ((n = SSL_read(src->ssl, f->buf, BUF_SIZE)) > 0) {
			f->off = 0;
			f->len = n;
			moved = 1;
		} else if ((w = ssl_wait(src->ssl, n)) > 0)
			src->rd_wait = w;
		else if (w == 0)
			f->eof = moved = 1;
		else
			goto fail;
	}
	if (f->len > 0 && dst->wr_wait == 0) {
		if ((n = SSL_write(dst->ssl, f->buf + f->off, f->len)) > 0) {
			f->off += n;
			f->len -= n;
			moved = 1;
		} else if ((w = ssl_wait(dst->ssl, n)) > 0)
			dst->wr_wait = w;
		else
			goto fail;
	}
	if (f->eof && f->len == 0 && !f->shut) {
		/* close_notify, then the TCP FIN: best effort, as it ends. */
		SSL_shutdown(dst->ssl);
		ERR_clear_error();
		shutdown(dst->fd, SHUT_WR);
		f->shut = moved = 1;
	}
	return moved;
fail:
	kill_tunnel(t);
	return 0;
}

/* Takes the tunnel as far as it can go without blocking. */
static void
step(struct tunnel *t)
{
	int r, i;

	if (t->state == T_HEAD && t->end[0].rd_wait == 0)
		step_head(t);
	if (!t->dead && t->state == T_CONNECTING && t->end[1].wr_wait == 0)
		step_connecting(t);
	if (!t->dead && t->state == T_HS_CLIENT && t->end[0].rd_wait == 0) {
		if ((r = handshake(&t->end[0])) < 0 ||
		    (r == 1 && start_upstream(t) != 0))
			kill_tunnel(t);
		else if (r == 1)
			t->state = T_HS_UP;
	}
	if (!t->dead && t->state == T_HS_UP && t->end[1].rd_wait == 0) {
		if ((r = handshake(&t->end[1])) < 0)
			kill_tunnel(t);
		else if (r == 1) {
			for (i = 0; i < 2; i++)
				if ((t->flow[i].buf = malloc(BUF_SIZE)) == NULL)
					kill_tunnel(t);
			t->state = T_RELAY;
		}
	}
	if (t->dead || t->state != T_RELAY)
		return;
	while (!t->dead && (move(t, 0) | move(t, 1)))
		;
	if (!t->dead && t->flow[0].shut && t->flow[1].shut)
		kill_tunnel(t);
}

static void
on_event(struct end *e, uint32_t events)
{
	/* An error or hang-up: let the next call find it. */
	if (events & (EPOLLERR | EPOLLHUP | EPOLLRDHUP))
		events |= EPOLLIN | EPOLLOUT;
	if (events & EPOLLIN) {
		if (e->rd_wait == EPOLLIN)
			e->rd_wait = 0;
		if (e->wr_wait == EPOLLIN)
			e->wr_wait = 0;
	}
	if (events & EPOLLOUT) {
		if (e->rd_wait == EPOLLOUT)
			e->rd_wait = 0;
		if (e->wr_wait == EPOLLOUT)
			e->wr_wait = 0;
	}
	if (!e->t->dead)
		step(e->t);
}

static void
on_accept(int lfd)
{
	struct tunnel *t;
	int fd, one = 1;

	while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) !=
	    -1) {
		if ((t = calloc(1, sizeof(*t))) == NULL) {
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		t->end[0].fd = fd;
		t->end[1].fd = -1;
		t->end[0].t = t->end[1].t = t;
		if (watch(&t->end[0]) != 0) {
			kill_tunnel(t);
			continue;
		}
		step(t);
	}
}

static SSL_CTX *
make_ctx(const SSL_METHOD *method)
{
	SSL_CTX *ctx = SSL_CTX_new(method);

	if (ctx == NULL)
		die("SSL_CTX_new");
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_options(
	    ctx, SSL_OP_NO_TICKET | SSL_OP_IGNORE_UNEXPECTED_EOF);
	SSL_CTX_set_num_tickets(ctx, 0);
	SSL_CTX_set_mode(ctx,
	    SSL_MODE_ENABLE_PARTIAL_WRITE |
	        SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* Whole socket reads, not a record header and then its body. */
	SSL_CTX_set_read_ahead(ctx, 1);
	return ctx;
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
	fprintf(
	    stderr, "reftls: listening on 127.0.0.1:%u\n", ntohs(sa.sin_port));
	return fd;
}

int
main(int argc, char **argv)
{
	struct epoll_event ev[EVENTS_MAX], lev = {.events = EPOLLIN};
	struct rlimit rl;
	int lfd, i, n;

	if (argc != 3) {
		fprintf(stderr, "usage: reftls CERT KEY\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	server_ctx = make_ctx(TLS_server_method());
	client_ctx = make_ctx(TLS_client_method());
	SSL_CTX_set_verify(client_ctx, SSL_VERIFY_NONE, NULL);
	if (SSL_CTX_use_certificate_chain_file(server_ctx, argv[1]) != 1 ||
	    SSL_CTX_use_PrivateKey_file(
	        server_ctx, argv[2], SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(server_ctx) != 1)
		die(argv[1]);
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
