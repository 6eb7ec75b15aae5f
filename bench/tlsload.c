/*
 * tlsload: a small HTTPS load generator for bench_intercept.sh.
 *
 *   tlsload ka   HOST PORT CONC N PATH   CONC connections, N keep-alive
 *                                        GETs each: prints requests/s
 *   tlsload new  HOST PORT CONC SECS PATH  CONC threads, each a new
 *                                        connection, full handshake,
 *                                        one GET, close: connections/s
 *   tlsload bulk HOST PORT 1 1 PATH      one GET of a big file: MB/s
 *
 * HOST is the name sent (SNI, Host); the TCP connection goes to
 * TLSLOAD_ADDR (default 127.0.0.1), or, if TLSLOAD_PROXY is set
 * (ADDR:PORT), through an HTTP proxy's CONNECT, for HOST:PORT or for
 * TLSLOAD_CONNECT (an authority such as 127.0.0.1:PORT, for a proxy
 * that has no name for HOST: the bench's peers).  Each line ends with
 * cpu=MICROSECONDS, the process's own user + system time, so that the
 * client's share of the machine is known too.  Certificates are not
 * verified: the figure is the server's (or proxy's) cost, and both rows
 * of a comparison skip the same work.  One thread per connection,
 * blocking I/O: simple, and at 16 connections on 2 cores good enough.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

static const char *host, *path;
static int port;
static long count; /* requests per connection, or seconds */
static SSL_CTX *ctx;
static int mode_new;
static volatile int stop;
static long total_req, total_err;
static unsigned long long total_bytes;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A TCP connection to the server, or through the proxy's CONNECT. */
static int
dial(void)
{
	const char *proxy = getenv("TLSLOAD_PROXY");
	const char *addr = getenv("TLSLOAD_ADDR");
	const char *authority = getenv("TLSLOAD_CONNECT");
	struct sockaddr_in sa = {.sin_family = AF_INET};
	char buf[1024], a[64];
	int fd, one = 1, n, got = 0;

	sa.sin_port = htons(port);
	if (addr == NULL)
		addr = "127.0.0.1";
	if (proxy != NULL) {
		snprintf(a, sizeof(a), "%s", proxy);
		char *c = strrchr(a, ':');
		if (c == NULL)
			return -1;
		*c = '\0';
		sa.sin_port = htons(atoi(c + 1));
		addr = a;
	}
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		return -1;
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		goto fail;
	if (proxy == NULL)
		return fd;
	if (authority != NULL)
		n = snprintf(buf, sizeof(buf),
		    "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority,
		    authority);
	else
		n = snprintf(buf, sizeof(buf),
		    "CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n", host, port,
		    host, port);
	if (n < 0 || n >= (int)sizeof(buf))
		goto fail;
	if (write(fd, buf, n) != n)
		goto fail;
	/* Read the reply byte by byte up to the blank line: nothing more. */
	while (got < (int)sizeof(buf) - 1) {
		if (read(fd, buf + got, 1) != 1)
			goto fail;
		got++;
		if (got >= 4 && memcmp(buf + got - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	buf[got] = '\0';
	if (strncmp(buf + 8, " 200", 4) != 0)
		goto fail;
	return fd;
fail:
	close(fd);
	return -1;
}

/* One response on SSL: its head and Content-Length body.  0 or -1. */
static int
response(SSL *ssl, char *buf, size_t cap, unsigned long long *bytes)
{
	size_t got = 0, hlen;
	long long clen;
	char *e, *cl;
	int n;

	for (;;) {
		buf[got] = '\0';
		if ((e = strstr(buf, "\r\n\r\n")) != NULL)
			break;
		if (got + 1 >= cap)
			return -1;
		if ((n = SSL_read(ssl, buf + got, cap - 1 - got)) <= 0)
			return -1;
		got += n;
	}
	hlen = e + 4 - buf;
	if ((cl = strcasestr(buf, "\r\ncontent-length:")) == NULL || cl > e)
		return -1;
	clen = atoll(cl + 17);
	if (strncmp(buf + 8, " 200", 4) != 0)
		return -1;
	/* Keep-alive: one request at a time, so no bytes past the body. */
	clen -= got - hlen;
	*bytes += got - hlen;
	while (clen > 0) {
		if ((n = SSL_read(ssl, buf, cap)) <= 0)
			return -1;
		clen -= n;
		*bytes += n;
	}
	return clen == 0 ? 0 : -1;
}

static void *
worker(void *arg)
{
	static const size_t cap = 256 << 10;
	char *buf = malloc(cap), req[512];
	long done = 0, errs = 0, i;
	unsigned long long bytes = 0;
	double end = now() + count;
	int fd, n;
	SSL *ssl;

	(void)arg;
	n = snprintf(req, sizeof(req),
	    "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: tlsload\r\n%s\r\n",
	    path, host, port, mode_new ? "Connection: close\r\n" : "");
	do {
		if ((fd = dial()) < 0) {
			errs++;
			continue;
		}
		ssl = SSL_new(ctx);
		SSL_set_fd(ssl, fd);
		SSL_set_tlsext_host_name(ssl, host);
		if (SSL_connect(ssl) != 1) {
			errs++;
			goto next;
		}
		for (i = 0; i < (mode_new ? 1 : count); i++) {
			if (SSL_write(ssl, req, n) != n ||
			    response(ssl, buf, cap, &bytes) != 0) {
				errs++;
				break;
			}
			done++;
		}
		SSL_shutdown(ssl);
	next:
		SSL_free(ssl);
		close(fd);
	} while (mode_new && now() < end);
	pthread_mutex_lock(&lock);
	total_req += done;
	total_err += errs;
	total_bytes += bytes;
	pthread_mutex_unlock(&lock);
	free(buf);
	return NULL;
}

int
main(int argc, char **argv)
{
	pthread_t th[1024];
	struct rusage ru;
	long long cpu;
	int conc, i;
	double t0, t;

	if (argc != 7) {
		fprintf(stderr,
		    "usage: tlsload ka|new|bulk HOST PORT CONC N PATH\n");
		return 2;
	}
	mode_new = strcmp(argv[1], "new") == 0;
	host = argv[2];
	port = atoi(argv[3]);
	conc = atoi(argv[4]);
	count = atol(argv[5]);
	path = argv[6];
	if (conc < 1 || conc > 1024)
		return 2;
	ctx = SSL_CTX_new(TLS_client_method());
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
	t0 = now();
	for (i = 0; i < conc; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (i = 0; i < conc; i++)
		pthread_join(th[i], NULL);
	t = now() - t0;
	getrusage(RUSAGE_SELF, &ru);
	cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL +
	    ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
	if (strcmp(argv[1], "bulk") == 0)
		printf("%.1f MB/s errors=%ld bytes=%llu cpu=%lld\n",
		    total_bytes / t / 1e6, total_err, total_bytes, cpu);
	else
		printf(
		    "%.0f req/s requests=%ld errors=%ld secs=%.2f cpu=%lld\n",
		    total_req / t, total_req, total_err, t, cpu);
	return total_err != 0;
}
