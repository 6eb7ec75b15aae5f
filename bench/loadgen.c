/*
 * loadgen.c: the load generator of bench_proxy.sh (see bench/README.md).
 *
 * One thread, epoll, non-blocking sockets, IPv4 loopback only: every
 * address it is given must be in 127.0.0.0/8, or it refuses to start.
 *
 *	loadgen port
 *	    prints a free TCP port on 127.0.0.1 (for the servers it starts).
 *
 *	loadgen rate [-x PROXY] -t TARGET -g PATH -c CONC -d SECS [-n MAX]
 *	             [-p PID] [-s NSRC] [-C CPU]
 *	    keeps CONC connections in flight for SECS seconds (or MAX
 *	    connections): connect to PROXY, "CONNECT TARGET", read the 200,
 *	    "GET PATH" inside the tunnel, read the whole response, close.
 *	    Without -x it connects to TARGET itself (the direct baseline).
 *	    Prints connections/s, latency p50/p99 and, with -p, the CPU time
 *	    process PID spent per connection (utime + stime of
 *	    /proc/PID/stat, every thread).  With -C, how busy core CPU was
 *	    (from /proc/stat): busy minus the CPU share of PID is other load
 *	    on the proxy's core, noise to report.
 *
 *	loadgen hold -x PROXY -t TARGET -n N -p PID [-s NSRC] [-w SECS]
 *	    opens N CONNECT tunnels (at most 256 handshakes at a time), waits
 *	    until all are established and one second more, then prints the
 *	    VmRSS of PID before and after, per tunnel.  Within SECS seconds
 *	    (default 120), or it reports what it got.
 *
 * NSRC spreads the client sockets over the source addresses 127.0.0.1 to
 * 127.0.0.NSRC (default 1), each with its own ephemeral ports.
 *
 * Output: one line of KEY=VALUE pairs on standard output, for the script.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUF_MAX 2048 /* a response head and a small body */
#define HOLD_INFLIGHT 256 /* handshakes at once in hold mode */
#define CONN_TIMEOUT_NS (10 * 1000000000LL)
#define ERRORS_MAX 1000 /* stop launching after this many failures */
#define EVENTS_MAX 512

enum conn_state {
	CONN_FREE,
	CONN_CONNECTING, /* waiting for connect(), then sending */
	CONN_TUNNEL, /* waiting for the 200 of the CONNECT */
	CONN_RESPONSE, /* waiting for the GET response */
	CONN_HELD, /* hold mode: established, idle */
};

struct conn {
	int fd;
	enum conn_state st;
	int64_t t0; /* ns, before socket() */
	const char *req; /* being sent */
	size_t req_len, sent;
	size_t got; /* bytes in buf */
	long body_left; /* -1: head not complete */
	char buf[BUF_MAX];
};

struct opts {
	int mode_hold;
	int proxied;
	struct sockaddr_in proxy, target;
	char target_text[64];
	const char *path;
	unsigned conc, nsrc;
	double secs;
	long max, pid;
	int cpu; /* -C: report how busy this core was, or -1 */
};

struct gen {
	struct opts o;
	int ep;
	struct conn *conns;
	size_t nconns;
	struct conn **idle; /* a stack of the CONN_FREE ones */
	size_t nidle;
	unsigned active, launched_src;
	long launched, done, errors, dropped;
	char connect_req[256], get_req[512];
	uint32_t *lat; /* microseconds, one per completed connection */
	size_t nlat, lat_cap;
	char first_error[160];
};

static void
die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void
die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "loadgen: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Parses "127.x.y.z:PORT" into SA; anything off loopback is refused. */
static void
parse_addr(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	char *end;
	unsigned long port;

	if (colon == NULL || (size_t)(colon - s) >= sizeof(host))
		die("%s: expected 127.x.y.z:PORT", s);
	memcpy(host, s, colon - s);
	host[colon - s] = '\0';
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	port = strtoul(colon + 1, &end, 10);
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1 || *end != '\0' ||
	    port == 0 || port > 65535)
		die("%s: expected 127.x.y.z:PORT", s);
	if ((ntohl(sa->sin_addr.s_addr) >> 24) != 127)
		die("%s: not a loopback address (127.0.0.0/8)", s);
	sa->sin_port = htons(port);
}

static void record_error(struct gen *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
record_error(struct gen *g, const char *fmt, ...)
{
	va_list ap;

	g->errors++;
	if (g->first_error[0] != '\0')
		return;
	va_start(ap, fmt);
	vsnprintf(g->first_error, sizeof(g->first_error), fmt, ap);
	va_end(ap);
}

/* --- /proc ---------------------------------------------------------------- */

/* utime and stime of PID in clock ticks (all threads).  Returns 0 or -1. */
static int
proc_cpu_ticks(long pid, long long *user, long long *sys)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	/* Fields after the ")" of comm: state is field 3, utime 14. */
	if (!ok || (p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 2,
	        "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
	        &st) != 2)
		return -1;
	*user = (long long)ut;
	*sys = (long long)st;
	return 0;
}

/* Busy and total clock ticks of core CPU since boot.  Returns 0 or -1. */
static int
proc_core_ticks(int cpu, long long *busy, long long *total)
{
	char name[16], line[256];
	unsigned long long v[8] = {0};
	FILE *f;
	int found = 0, i;

	snprintf(name, sizeof(name), "cpu%d ", cpu);
	if ((f = fopen("/proc/stat", "r")) == NULL)
		return -1;
	while (!found && fgets(line, sizeof(line), f) != NULL)
		found = strncmp(line, name, strlen(name)) == 0 &&
		    sscanf(line + strlen(name),
		        "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
		        &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8;
	fclose(f);
	if (!found)
		return -1;
	/* user nice system idle iowait irq softirq steal */
	*total = 0;
	for (i = 0; i < 8; i++)
		*total += (long long)v[i];
	*busy = *total - (long long)(v[3] + v[4]);
	return 0;
}

/* VmRSS of PID in KiB, or -1. */
static long
proc_rss_kb(long pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* --- connections ---------------------------------------------------------- */

static void
conn_close(struct gen *g, struct conn *c)
{
	close(c->fd);
	c->fd = -1;
	c->st = CONN_FREE;
	g->active--;
	g->idle[g->nidle++] = c;
}

static void
conn_fail(struct gen *g, struct conn *c, const char *what, int err)
{
	record_error(g, "%s: %s", what, err ? strerror(err) : "protocol");
	conn_close(g, c);
}

static int
conn_watch(struct gen *g, struct conn *c, int op, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = c};

	return epoll_ctl(g->ep, op, c->fd, &ev);
}

static int
bind_source(struct gen *g, int fd)
{
	struct sockaddr_in src = {.sin_family = AF_INET};
	int one = 1;

	if (g->o.nsrc <= 1)
		return 0;
	src.sin_addr.s_addr = htonl(0x7f000001 + g->launched_src++ % g->o.nsrc);
	setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	return bind(fd, (struct sockaddr *)&src, sizeof(src));
}

/* Starts connection C.  Returns 0, or -1 (counted as an error). */
static int
conn_start(struct gen *g, struct conn *c)
{
	const struct sockaddr_in *to =
	    g->o.proxied ? &g->o.proxy : &g->o.target;
	int one = 1;

	c->t0 = now_ns();
	c->got = 0;
	c->sent = 0;
	c->body_left = -1;
	c->req = g->o.proxied ? g->connect_req : g->get_req;
	c->req_len = strlen(c->req);
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd == -1) {
		record_error(g, "socket: %s", strerror(errno));
		g->idle[g->nidle++] = c;
		return -1;
	}
	c->st = CONN_CONNECTING;
	g->active++;
	g->launched++;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (bind_source(g, c->fd) != 0 ||
	    (connect(c->fd, (const struct sockaddr *)to, sizeof(*to)) != 0 &&
	        errno != EINPROGRESS) ||
	    conn_watch(g, c, EPOLL_CTL_ADD, EPOLLOUT) != 0) {
		conn_fail(g, c, "connect", errno);
		return -1;
	}
	return 0;
}

/* Sends the rest of C's request; then waits for the answer. */
static void
conn_send(struct gen *g, struct conn *c)
{
	ssize_t n;

	n = send(c->fd, c->req + c->sent, c->req_len - c->sent, MSG_NOSIGNAL);
	if (n < 0 && errno != EAGAIN) {
		conn_fail(g, c, "send", errno);
		return;
	}
	if (n > 0)
		c->sent += n;
	if (c->sent < c->req_len)
		return;
	if (c->st == CONN_CONNECTING)
		c->st = g->o.proxied ? CONN_TUNNEL : CONN_RESPONSE;
	if (conn_watch(g, c, EPOLL_CTL_MOD, EPOLLIN) != 0)
		conn_fail(g, c, "epoll_ctl", errno);
}

/* The length of the head in C's buffer, or 0 when it is not complete. */
static size_t
head_len(const struct conn *c)
{
	const char *end = memmem(c->buf, c->got, "\r\n\r\n", 4);

	return end != NULL ? (size_t)(end - c->buf) + 4 : 0;
}

static int
status_ok(const struct conn *c)
{
	return c->got >= 12 && memcmp(c->buf, "HTTP/1.", 7) == 0 &&
	    memcmp(c->buf + 9, "200", 3) == 0;
}

/* Content-Length of the head of HLEN bytes in C's buffer, or -1. */
static long
content_length(struct conn *c, size_t hlen)
{
	static const char key[] = "\r\ncontent-length:";
	size_t i, k = sizeof(key) - 1;

	for (i = 0; i + k < hlen; i++)
		if (strncasecmp(c->buf + i, key, k) == 0)
			return strtol(c->buf + i + k, NULL, 10);
	return -1;
}

static void
conn_done(struct gen *g, struct conn *c)
{
	int64_t us = (now_ns() - c->t0) / 1000;

	if (g->nlat == g->lat_cap) {
		g->lat_cap = g->lat_cap ? g->lat_cap * 2 : 65536;
		if ((g->lat = realloc(g->lat, g->lat_cap * sizeof(*g->lat))) ==
		    NULL)
			die("out of memory");
	}
	g->lat[g->nlat++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
	g->done++;
	conn_close(g, c);
}

/* The 200 of the CONNECT is in: send the GET, or hold the tunnel. */
static void
tunnel_open(struct gen *g, struct conn *c, size_t hlen)
{
	if (!status_ok(c) || c->got != hlen) {
		c->buf[c->got < 40 ? c->got : 40] = '\0';
		record_error(g, "CONNECT answered: %s", c->buf);
		conn_close(g, c);
		return;
	}
	c->got = 0;
	if (g->o.mode_hold) {
		c->st = CONN_HELD;
		g->done++;
		return;
	}
	c->st = CONN_RESPONSE;
	c->req = g->get_req;
	c->req_len = strlen(c->req);
	c->sent = 0;
	if (conn_watch(g, c, EPOLL_CTL_MOD, EPOLLOUT) != 0)
		conn_fail(g, c, "epoll_ctl", errno);
}

/* Counts the body bytes of the GET response; done when all are in. */
static void
response_progress(struct gen *g, struct conn *c)
{
	size_t hlen;

	if (c->body_left < 0) {
		if ((hlen = head_len(c)) == 0)
			return;
		if (!status_ok(c) ||
		    (c->body_left = content_length(c, hlen)) < 0) {
			conn_fail(g, c, "GET response", 0);
			return;
		}
		c->body_left -= c->got - hlen;
	} else
		c->body_left -= c->got;
	c->got = 0;
	if (c->body_left <= 0)
		conn_done(g, c);
}

static void
conn_read(struct gen *g, struct conn *c)
{
	ssize_t n;
	size_t hlen;

	n = recv(c->fd, c->buf + c->got, sizeof(c->buf) - c->got, 0);
	if (n <= 0) {
		if (n < 0 && errno == EAGAIN)
			return;
		if (c->st == CONN_HELD) {
			g->dropped++;
			conn_close(g, c);
		} else
			conn_fail(g, c, n == 0 ? "early EOF" : "recv",
			    n == 0 ? 0 : errno);
		return;
	}
	c->got += n;
	if (c->st == CONN_TUNNEL && (hlen = head_len(c)) > 0)
		tunnel_open(g, c, hlen);
	else if (c->st == CONN_RESPONSE)
		response_progress(g, c);
	else if (c->st == CONN_HELD || c->got == sizeof(c->buf))
		conn_fail(g, c, "unexpected bytes", 0);
}

static void
conn_event(struct gen *g, struct conn *c, uint32_t ev)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if ((ev & EPOLLOUT) && c->st == CONN_CONNECTING && c->sent == 0) {
		getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err != 0) {
			conn_fail(g, c, "connect", err);
			return;
		}
	}
	if (ev & EPOLLOUT)
		conn_send(g, c);
	else if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP))
		conn_read(g, c);
}

/* --- the two modes -------------------------------------------------------- */

static struct conn *
free_conn(struct gen *g)
{
	return g->nidle > 0 ? g->idle[--g->nidle] : NULL;
}

/* Handles ready sockets for up to MS milliseconds. */
static void
poll_once(struct gen *g, int ms)
{
	struct epoll_event ev[EVENTS_MAX];
	int i, n;

	n = epoll_wait(g->ep, ev, EVENTS_MAX, ms);
	if (n < 0 && errno != EINTR)
		die("epoll_wait: %s", strerror(errno));
	for (i = 0; i < n; i++)
		conn_event(g, ev[i].data.ptr, ev[i].events);
}

/* Fails the connections stuck for longer than CONN_TIMEOUT_NS. */
static void
expire(struct gen *g, int64_t now)
{
	size_t i;

	for (i = 0; i < g->nconns; i++) {
		struct conn *c = &g->conns[i];

		if (c->st != CONN_FREE && c->st != CONN_HELD &&
		    now - c->t0 > CONN_TIMEOUT_NS)
			conn_fail(g, c, "timeout", ETIMEDOUT);
	}
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static uint32_t
percentile(struct gen *g, double q)
{
	size_t i;

	if (g->nlat == 0)
		return 0;
	i = (size_t)(q * (double)(g->nlat - 1) + 0.5);
	return g->lat[i];
}

/* CPU time per connection: user + system, user, system; and load. */
static void
print_cpu(long conns, double secs, long long user, long long sys)
{
	double tick_us = 1e6 / (double)sysconf(_SC_CLK_TCK);

	printf(" cpu_us_per_conn=%.1f user_us=%.1f sys_us=%.1f cpu_util=%.2f",
	    (double)(user + sys) * tick_us / (double)conns,
	    (double)user * tick_us / (double)conns,
	    (double)sys * tick_us / (double)conns,
	    (double)(user + sys) * tick_us / 1e6 / secs);
}

static void
run_rate(struct gen *g)
{
	int64_t start, deadline, last_scan, end;
	long long u0, s0, u1, s1, b0, t0, b1, t1;
	int cpu_ok = 0, core_ok = 0;
	struct conn *c;
	double secs;

	if (g->o.pid > 0)
		cpu_ok = proc_cpu_ticks(g->o.pid, &u0, &s0) == 0;
	if (g->o.cpu >= 0)
		core_ok = proc_core_ticks(g->o.cpu, &b0, &t0) == 0;
	start = last_scan = now_ns();
	deadline = start + (int64_t)(g->o.secs * 1e9);
	for (;;) {
		int64_t now = now_ns();
		int more = now < deadline && g->launched < g->o.max &&
		    g->errors < ERRORS_MAX;

		while (more && g->active < g->o.conc && (c = free_conn(g)))
			if (conn_start(g, c) != 0)
				break;
		if (!more && g->active == 0)
			break;
		if (now - last_scan > 1000000000LL) {
			expire(g, now);
			last_scan = now;
		}
		poll_once(g, 100);
	}
	end = now_ns();
	if (core_ok)
		core_ok = proc_core_ticks(g->o.cpu, &b1, &t1) == 0 && t1 > t0;
	if (cpu_ok) {
		usleep(200000); /* let the proxy finish closing */
		cpu_ok = proc_cpu_ticks(g->o.pid, &u1, &s1) == 0;
	}
	secs = (double)(end - start) / 1e9;
	qsort(g->lat, g->nlat, sizeof(*g->lat), cmp_u32);
	printf("mode=rate conc=%u conns=%ld errors=%ld secs=%.2f rate=%.0f "
	       "p50_us=%u p99_us=%u",
	    g->o.conc, g->done, g->errors, secs, (double)g->done / secs,
	    percentile(g, 0.50), percentile(g, 0.99));
	if (cpu_ok && g->done > 0)
		print_cpu(g->done, secs, u1 - u0, s1 - s0);
	if (core_ok)
		printf(" core%d_busy=%.2f", g->o.cpu,
		    (double)(b1 - b0) / (double)(t1 - t0));
	printf("\n");
}

static void
run_hold(struct gen *g)
{
	int64_t deadline = now_ns() + (int64_t)(g->o.secs * 1e9), settle;
	long rss0, rss1;
	struct conn *c;

	rss0 = proc_rss_kb(g->o.pid);
	while (g->done + g->errors < g->o.max && g->errors < ERRORS_MAX &&
	    now_ns() < deadline) {
		while (g->launched < g->o.max &&
		    g->launched - g->done - g->errors < HOLD_INFLIGHT &&
		    (c = free_conn(g)) != NULL)
			if (conn_start(g, c) != 0)
				break;
		poll_once(g, 100);
	}
	settle = now_ns() + 1000000000LL;
	while (now_ns() < settle)
		poll_once(g, 100);
	rss1 = proc_rss_kb(g->o.pid);
	printf("mode=hold n=%ld established=%ld errors=%ld dropped=%ld "
	       "rss_before_kb=%ld rss_after_kb=%ld per_tunnel_b=%.0f\n",
	    g->o.max, g->done - g->dropped, g->errors, g->dropped, rss0, rss1,
	    g->done > 0 ? (double)(rss1 - rss0) * 1024 / (double)g->done : 0);
}

/* --- setup ---------------------------------------------------------------- */

static void
print_free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int fd;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
		die("free port: %s", strerror(errno));
	printf("%u\n", ntohs(sa.sin_port));
	close(fd);
}

static void
usage(void)
{
	fprintf(stderr,
	    "usage: loadgen port\n"
	    "       loadgen rate [-x PROXY] -t TARGET -g PATH -c CONC -d SECS "
	    "[-n MAX] [-p PID] [-s NSRC] [-C CPU]\n"
	    "       loadgen hold -x PROXY -t TARGET -n N -p PID [-s NSRC] "
	    "[-w SECS]\n"
	    "PROXY and TARGET are 127.x.y.z:PORT.\n");
	exit(2);
}

static void
parse_opts(int argc, char **argv, struct opts *o)
{
	int ch;

	o->conc = 1;
	o->nsrc = 1;
	o->secs = -1;
	o->max = -1;
	o->path = "/";
	o->cpu = -1;
	while ((ch = getopt(argc, argv, "x:t:g:c:d:n:p:s:w:C:")) != -1) {
		switch (ch) {
		case 'x':
			parse_addr(optarg, &o->proxy);
			o->proxied = 1;
			break;
		case 't':
			parse_addr(optarg, &o->target);
			snprintf(o->target_text, sizeof(o->target_text), "%s",
			    optarg);
			break;
		case 'g':
			o->path = optarg;
			break;
		case 'c':
			o->conc = strtoul(optarg, NULL, 10);
			break;
		case 'd':
		case 'w':
			o->secs = strtod(optarg, NULL);
			break;
		case 'n':
			o->max = strtol(optarg, NULL, 10);
			break;
		case 'p':
			o->pid = strtol(optarg, NULL, 10);
			break;
		case 's':
			o->nsrc = strtoul(optarg, NULL, 10);
			break;
		case 'C':
			o->cpu = (int)strtol(optarg, NULL, 10);
			break;
		default:
			usage();
		}
	}
	if (o->target_text[0] == '\0' || o->conc == 0 || o->nsrc == 0 ||
	    o->nsrc > 250 || optind != argc)
		usage();
}

static void
setup(struct gen *g)
{
	struct rlimit rl;
	const struct opts *o = &g->o;
	size_t i;

	snprintf(g->connect_req, sizeof(g->connect_req),
	    "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", o->target_text,
	    o->target_text);
	snprintf(g->get_req, sizeof(g->get_req),
	    "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: loadgen\r\n\r\n",
	    o->path, o->target_text);
	g->nconns = o->mode_hold ? (size_t)o->max : o->conc;
	g->conns = calloc(g->nconns, sizeof(*g->conns));
	g->idle = calloc(g->nconns, sizeof(*g->idle));
	if (g->conns == NULL || g->idle == NULL)
		die("out of memory");
	for (i = g->nconns; i > 0; i--)
		g->idle[g->nidle++] = &g->conns[i - 1];
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if ((g->ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		die("epoll_create1: %s", strerror(errno));
}

int
main(int argc, char **argv)
{
	struct gen g;

	memset(&g, 0, sizeof(g));
	if (argc < 2)
		usage();
	if (strcmp(argv[1], "port") == 0) {
		print_free_port();
		return 0;
	}
	if (strcmp(argv[1], "hold") == 0)
		g.o.mode_hold = 1;
	else if (strcmp(argv[1], "rate") != 0)
		usage();
	parse_opts(argc - 1, argv + 1, &g.o);
	if (g.o.mode_hold && (!g.o.proxied || g.o.max <= 0 || g.o.pid <= 0))
		usage();
	if (g.o.mode_hold && g.o.secs < 0)
		g.o.secs = 120;
	if (!g.o.mode_hold && g.o.secs < 0 && g.o.max < 0)
		usage();
	if (g.o.secs < 0)
		g.o.secs = 3600;
	if (g.o.max < 0)
		g.o.max = 1L << 40;
	setup(&g);
	if (g.o.mode_hold)
		run_hold(&g);
	else
		run_rate(&g);
	if (g.first_error[0] != '\0')
		fprintf(stderr, "loadgen: first error: %s\n", g.first_error);
	return 0;
}
