/*
 * test_capture.c: captured connections (proxy/capture.c).
 *
 * capture_destination() on addresses: IPv4, IPv4-mapped, IPv6,
 * synthetic ones mapped and not.  Then the path out as pinhole run makes
 * it, in namespaces the test makes: a forked child in its own user and
 * network namespaces (the "host": lo, and 203.0.113.7 on it) runs a real
 * proxy with a synth map holding names, and upstream servers in a forked
 * process (127.0.0.1:443 a TLS echo, 127.0.0.1:80 and 203.0.113.7:80
 * HTTP, 127.0.0.1:2222 a server that speaks first); the client, forked
 * from it, makes a network namespace of its own set up as the sandbox's
 * (`local 0.0.0.0/0 dev lo`, `local ::/0 dev lo`), makes the capture
 * listeners there on [::]:443, [::]:80 and [::]:2222 and hands them to
 * the proxy (SCM_RIGHTS, PROXY_VIA_CAPTURE), then connects to synthetic
 * and documentation addresses as a program in the sandbox would.
 * Checked: opaque TLS through to the echo (IPv4 and IPv6), an SNI that
 * differs and a missing one refused, other bytes tunnelled, nothing sent
 * refused at the head timeout, peeked bytes held as heads are (the
 * oldest refused over the budget), interception of a peeked hello (a request
 * refused inside, 403) with no 200 before the TLS, other bytes refused
 * on its rule, plain HTTP with Host agreeing and not (421) and a rule
 * with credentials refused in plain HTTP (403), an address
 * target decided by address rules, a denied name and an unmapped
 * synthetic address reset at once, the server-first protocol tunnelled,
 * and the audit records (via "capture", the reasons).
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "audit/audit.h"
#include "policy/policy.h"
#include "policy/target.h"
#include "proxy/ca.h"
#include "proxy/capture.h"
#include "proxy/proxy.h"
#include "proxy/synth.h"
#include "proxy/tls.h"
#include "tests/unit/fixture.h"

#define SKIPPED 77
#define RUN_MS 20000
#define NCAP 3

/* --- capture_destination ---------------------------------------------------- */

static void
test_destination(void **state)
{
	struct synth *sy = synth_new();
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
	struct sockaddr_in s4 = {.sin_family = AF_INET};
	struct sockaddr sa = {.sa_family = AF_UNIX};
	uint8_t v4[4], v6[16];
	struct target_host h;
	uint16_t port;

	(void)state;
	assert_non_null(sy);
	assert_int_equal(synth_map(sy, "a.test", v4, v6), 0);
	s4.sin_port = htons(443);
	inet_pton(AF_INET, "203.0.113.9", &s4.sin_addr);
	assert_int_equal(capture_destination(
	                     (struct sockaddr *)&s4, sizeof(s4), sy, &h, &port),
	    CAPTURE_DEST_OK);
	assert_int_equal(h.kind, TARGET_V4);
	assert_string_equal(h.name, "203.0.113.9");
	assert_int_equal(port, 443);
	/* The dual-stack listener's view of the same: IPv4-mapped. */
	s6.sin6_port = htons(80);
	inet_pton(AF_INET6, "::ffff:203.0.113.9", &s6.sin6_addr);
	assert_int_equal(capture_destination(
	                     (struct sockaddr *)&s6, sizeof(s6), sy, &h, &port),
	    CAPTURE_DEST_OK);
	assert_int_equal(h.kind, TARGET_V4);
	assert_string_equal(h.name, "203.0.113.9");
	assert_int_equal(port, 80);
	inet_pton(AF_INET6, "2001:DB8::9", &s6.sin6_addr);
	assert_int_equal(capture_destination(
	                     (struct sockaddr *)&s6, sizeof(s6), sy, &h, &port),
	    CAPTURE_DEST_OK);
	assert_int_equal(h.kind, TARGET_V6);
	assert_string_equal(h.name, "2001:db8::9");
	/* Synthetic: the name, by either family, mapped or not. */
	memcpy(&s4.sin_addr, v4, 4);
	assert_int_equal(capture_destination(
	                     (struct sockaddr *)&s4, sizeof(s4), sy, &h, &port),
	    CAPTURE_DEST_OK);
	assert_int_equal(h.kind, TARGET_NAME);
	assert_string_equal(h.name, "a.test");
	memset(s6.sin6_addr.s6_addr, 0, 10);
	memset(s6.sin6_addr.s6_addr + 10, 0xff, 2);
	memcpy(s6.sin6_addr.s6_addr + 12, v4, 4);
	assert_int_equal(capture_destination(
	                     (struct sockaddr *)&s6, sizeof(s6), sy, &h, &port),
	    CAPTURE_DEST_OK);
	assert_string_equal(h.name, "a.test");
	memcpy(s6.sin6_addr.s6_addr, v6, 16);
	assert_int_equal(capture_destination(
	                     (struct sockaddr *)&s6, sizeof(s6), sy, &h, &port),
	    CAPTURE_DEST_OK);
	assert_string_equal(h.name, "a.test");
	v6[15] ^= 0x40;
	memcpy(s6.sin6_addr.s6_addr, v6, 16);
	assert_int_equal(capture_destination(
	                     (struct sockaddr *)&s6, sizeof(s6), sy, &h, &port),
	    CAPTURE_DEST_UNMAPPED);
	assert_int_equal(h.kind, TARGET_V6);
	assert_int_equal(capture_destination((struct sockaddr *)&s4, sizeof(s4),
	                     NULL, &h, &port),
	    CAPTURE_DEST_UNMAPPED);
	assert_int_equal(capture_destination(&sa, sizeof(sa), sy, &h, &port),
	    CAPTURE_DEST_BAD);
	assert_int_equal(
	    capture_destination((struct sockaddr *)&s4, 4, sy, &h, &port),
	    CAPTURE_DEST_BAD);
	synth_free(sy);
}

/* --- the namespace ---------------------------------------------------------- */

static void
write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);

	CHECK(fd >= 0);
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
}

/* The "host": a user and network namespace, lo up.  0 or -1. */
static int
enter_host(void)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();

	if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0)
		return -1;
	write_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	write_file("/proc/self/uid_map", map);
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
	write_file("/proc/self/gid_map", map);
	CHECK(system("ip link set lo up && "
	             "ip addr add 203.0.113.7/32 dev lo") == 0);
	return 0;
}

/* The "sandbox": a network namespace whose every address is local. */
static void
enter_sandbox(void)
{
	CHECK(unshare(CLONE_NEWNET) == 0);
	CHECK(system("ip link set lo up && "
	             "ip route add local 0.0.0.0/0 dev lo && "
	             "ip -6 route add local ::/0 dev lo") == 0);
}

/* A listener on ADDR:PORT; "::" is dual-stack, like capture's own. */
static int
listen_at(const char *addr, uint16_t port)
{
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
	struct sockaddr_in s4 = {.sin_family = AF_INET};
	int six = strchr(addr, ':') != NULL, zero = 0, fd;

	fd = socket(six ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	if (six) {
		CHECK(setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero,
		          sizeof(zero)) == 0);
		s6.sin6_port = htons(port);
		CHECK(inet_pton(AF_INET6, addr, &s6.sin6_addr) == 1);
		CHECK(bind(fd, (struct sockaddr *)&s6, sizeof(s6)) == 0);
	} else {
		s4.sin_port = htons(port);
		CHECK(inet_pton(AF_INET, addr, &s4.sin_addr) == 1);
		CHECK(bind(fd, (struct sockaddr *)&s4, sizeof(s4)) == 0);
	}
	CHECK(listen(fd, 16) == 0);
	return fd;
}

/* --- the upstream servers --------------------------------------------------- */

enum srv { SRV_TLS, SRV_HTTP, SRV_HTTP_ADDR, SRV_FIRST, NSRV };

static SSL_CTX *
server_ctx(void)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	EVP_PKEY *k = EVP_EC_gen("P-256");
	X509 *x = X509_new();

	CHECK(ctx != NULL && k != NULL && x != NULL);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
	    (const unsigned char *)"tls.test", -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(x));
	X509_set_pubkey(x, k);
	CHECK(X509_sign(x, k, EVP_sha256()) > 0);
	CHECK(SSL_CTX_use_certificate(ctx, x) == 1);
	CHECK(SSL_CTX_use_PrivateKey(ctx, k) == 1);
	X509_free(x);
	EVP_PKEY_free(k);
	return ctx;
}

static void
serve_tls(int fd, SSL_CTX *ctx)
{
	SSL *ssl = SSL_new(ctx);
	char buf[512];
	int n;

	SSL_set_fd(ssl, fd);
	if (SSL_accept(ssl) != 1)
		return;
	while ((n = SSL_read(ssl, buf, sizeof(buf))) > 0)
		SSL_write(ssl, buf, n);
	SSL_shutdown(ssl);
}

/* Answers one request with NAME and its request line as the body. */
static void
serve_http(int fd, const char *name)
{
	char buf[2048], body[600], head[200];
	size_t got = 0;
	ssize_t n;
	char *eol;

	while (got < sizeof(buf) - 1 &&
	    (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0) {
		got += (size_t)n;
		buf[got] = '\0';
		if (strstr(buf, "\r\n\r\n") != NULL)
			break;
	}
	buf[got] = '\0';
	if ((eol = strstr(buf, "\r\n")) != NULL)
		*eol = '\0';
	snprintf(body, sizeof(body), "%s %.500s", name, buf);
	snprintf(head, sizeof(head),
	    "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n"
	    "Connection: close\r\n\r\n",
	    strlen(body));
	(void)!write(fd, head, strlen(head));
	(void)!write(fd, body, strlen(body));
}

static void
serve_first(int fd)
{
	static const char banner[] = "SSH-2.0-test\r\n";
	char buf[512];
	ssize_t n;

	(void)!write(fd, banner, sizeof(banner) - 1);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		(void)!write(fd, buf, (size_t)n);
}

/* The servers' process: each connection served in a child of its own. */
static void
servers(const int lfd[NSRV])
{
	struct pollfd p[NSRV];
	SSL_CTX *ctx = server_ctx();
	int i, fd;

	signal(SIGCHLD, SIG_IGN);
	for (i = 0; i < NSRV; i++)
		p[i] = (struct pollfd){.fd = lfd[i], .events = POLLIN};
	for (;;) {
		if (poll(p, NSRV, -1) < 0)
			_exit(1);
		for (i = 0; i < NSRV; i++) {
			if (!(p[i].revents & POLLIN) ||
			    (fd = accept(lfd[i], NULL, NULL)) < 0)
				continue;
			if (fork() == 0) {
				if (i == SRV_TLS)
					serve_tls(fd, ctx);
				else if (i == SRV_HTTP)
					serve_http(fd, "web");
				else if (i == SRV_HTTP_ADDR)
					serve_http(fd, "addr");
				else
					serve_first(fd);
				_exit(0);
			}
			close(fd);
		}
	}
}

/* --- the client ------------------------------------------------------------- */

static uint8_t tls_v4[4], tls_v6[16], web_v4[4], web_v6[16], srv_v4[4],
    srv_v6[16], denied_v4[4], denied_v6[16], icpt_v4[4], icpt_v6[16],
    cred_v4[4], cred_v6[16];
static struct ca *run_ca; /* the run CA, which the client trusts */

/* A connection to ADDR (4 or 16 bytes) : PORT, with a 3 s read timeout. */
static int
dial(const uint8_t *addr, int len, uint16_t port)
{
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
	struct sockaddr_in s4 = {.sin_family = AF_INET};
	struct timeval tv = {3, 0};
	int fd = socket(len == 4 ? AF_INET : AF_INET6, SOCK_STREAM, 0);

	CHECK(fd >= 0);
	CHECK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0);
	if (len == 4) {
		s4.sin_port = htons(port);
		memcpy(&s4.sin_addr, addr, 4);
		CHECK(connect(fd, (struct sockaddr *)&s4, sizeof(s4)) == 0);
	} else {
		s6.sin6_port = htons(port);
		memcpy(&s6.sin6_addr, addr, 16);
		CHECK(connect(fd, (struct sockaddr *)&s6, sizeof(s6)) == 0);
	}
	return fd;
}

static int
dial_text(const char *text, uint16_t port)
{
	uint8_t a[16];
	int six = strchr(text, ':') != NULL;

	CHECK(inet_pton(six ? AF_INET6 : AF_INET, text, a) == 1);
	return dial(a, six ? 16 : 4, port);
}

/* The connection was reset before any byte came (no reply from a proxy). */
static void
check_reset(int fd)
{
	char c;

	CHECK(recv(fd, &c, 1, 0) < 0 && errno == ECONNRESET);
	close(fd);
}

/* TLS with SNI over FD; echoes "ping" when WANT_OK, else must fail. */
static void
tls_through(int fd, const char *sni, int want_ok)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *ssl = SSL_new(ctx);
	char buf[8] = {0};

	SSL_set_fd(ssl, fd);
	if (sni != NULL)
		SSL_set_tlsext_host_name(ssl, sni);
	if (!want_ok) {
		CHECK(SSL_connect(ssl) != 1);
	} else {
		CHECK(SSL_connect(ssl) == 1);
		CHECK(SSL_write(ssl, "ping", 4) == 4);
		CHECK(SSL_read(ssl, buf, sizeof(buf)) == 4);
		CHECK(memcmp(buf, "ping", 4) == 0);
	}
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
}

/*
 * Through an interception: TLS with the run CA's leaf for icpt.test,
 * SNI given when NAME is not NULL, and a request whose path the rule
 * refuses (403 inside the tunnel: no upstream needed).
 */
static void
intercepted(int fd, const char *sni, int want_ok)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	BIO *bio = BIO_new_mem_buf(ca_cert_pem(run_ca), -1);
	X509 *root = PEM_read_bio_X509(bio, NULL, NULL, NULL);
	static const char req[] =
	    "GET /b HTTP/1.1\r\nHost: icpt.test\r\nConnection: close\r\n\r\n";
	char buf[512];
	SSL *ssl;
	int n;

	CHECK(ctx != NULL && root != NULL);
	CHECK(X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), root) == 1);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	CHECK((ssl = SSL_new(ctx)) != NULL);
	if (sni != NULL)
		SSL_set_tlsext_host_name(ssl, sni);
	CHECK(SSL_set1_host(ssl, "icpt.test") == 1);
	SSL_set_fd(ssl, fd);
	if (!want_ok)
		CHECK(SSL_connect(ssl) != 1);
	else {
		CHECK(SSL_connect(ssl) == 1);
		CHECK(SSL_write(ssl, req, sizeof(req) - 1) ==
		    (int)sizeof(req) - 1);
		CHECK((n = SSL_read(ssl, buf, sizeof(buf) - 1)) > 12);
		buf[n] = '\0';
		CHECK(strncmp(buf, "HTTP/1.1 403", 12) == 0);
	}
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	X509_free(root);
	BIO_free(bio);
	close(fd);
}

/* Sends REQ on FD and reads the whole answer (until close) into BUF. */
static void
exchange(int fd, const char *req, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	CHECK(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
	while (got < len - 1 && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fd);
}

/* Makes the capture listeners and sends them over SOCK, in one message. */
static void
send_listeners(int sock)
{
	static const uint16_t ports[NCAP] = {443, 80, 2222};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * NCAP)];
	} u;
	struct msghdr m = {0};
	struct iovec iov = {"L", 1};
	int fds[NCAP], i;

	for (i = 0; i < NCAP; i++)
		fds[i] = listen_at("::", ports[i]);
	memset(&u, 0, sizeof(u));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.buf;
	m.msg_controllen = sizeof(u.buf);
	u.h.cmsg_level = SOL_SOCKET;
	u.h.cmsg_type = SCM_RIGHTS;
	u.h.cmsg_len = CMSG_LEN(sizeof(int) * NCAP);
	memcpy(CMSG_DATA(&u.h), fds, sizeof(fds));
	CHECK(sendmsg(sock, &m, 0) == 1);
	for (i = 0; i < NCAP; i++)
		close(fds[i]);
	close(sock);
}

/* The NCAP listeners the client sent over SOCK, into FDS. */
static void
recv_listeners(int sock, int fds[NCAP])
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * NCAP)];
	} u;
	struct msghdr m = {0};
	char c;
	struct iovec iov = {&c, 1};

	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.buf;
	m.msg_controllen = sizeof(u.buf);
	CHECK(recvmsg(sock, &m, 0) == 1);
	CHECK(CMSG_FIRSTHDR(&m) != NULL &&
	    CMSG_FIRSTHDR(&m)->cmsg_type == SCM_RIGHTS &&
	    CMSG_FIRSTHDR(&m)->cmsg_len == CMSG_LEN(sizeof(int) * NCAP));
	memcpy(fds, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof(int) * NCAP);
	close(sock);
}

static void
client(int sock)
{
	char buf[2048], part[1205];
	int fd, fd2;

	enter_sandbox();
	send_listeners(sock);

	/* Opaque TLS, SNI agreeing, both families; then an SNI that does not. */
	tls_through(dial(tls_v4, 4, 443), "tls.test", 1);
	tls_through(dial(tls_v6, 16, 443), "tls.test", 1);
	tls_through(dial(tls_v4, 4, 443), "other.test", 0);
	tls_through(dial(tls_v4, 4, 443), NULL, 0); /* no SNI, to a name */
	/* Not TLS nor HTTP: tunnelled, as the rule does not intercept. */
	fd = dial(tls_v4, 4, 443);
	CHECK(write(fd, "hello\r\n", 7) == 7);
	(void)!read(fd, buf, sizeof(buf));
	close(fd);
	/* Nothing sent on 443: reset after the head timeout. */
	check_reset(dial(tls_v4, 4, 443));
	/*
	 * Two hellos not whole yet, 2410 bytes held: over the head memory
	 * (2000), the one that waited longest goes.
	 */
	memset(part, 'x', sizeof(part));
	memcpy(part, "\x16\x03\x01\x05\xdc\x01\x00\x05\xd8", 9);
	fd = dial(tls_v4, 4, 443);
	fd2 = dial(tls_v4, 4, 443);
	CHECK(write(fd, part, sizeof(part)) == (ssize_t)sizeof(part));
	CHECK(write(fd2, part, sizeof(part)) == (ssize_t)sizeof(part));
	check_reset(fd);
	close(fd2);
	/* Interception, its hello peeked first; no 200 before the TLS. */
	intercepted(dial(icpt_v4, 4, 443), "icpt.test", 1);
	intercepted(dial(icpt_v6, 16, 443), "elsewhere.test", 0);
	/* A rule that intercepts needs TLS or HTTP. */
	fd = dial(icpt_v4, 4, 443);
	CHECK(write(fd, "hello\r\n", 7) == 7);
	check_reset(fd);
	/* Plain HTTP to the name connected to; Host must agree. */
	exchange(dial(web_v4, 4, 80),
	    "GET /x HTTP/1.1\r\nHost: web.test\r\nConnection: close\r\n\r\n",
	    buf, sizeof(buf));
	CHECK(strncmp(buf, "HTTP/1.1 200", 12) == 0);
	CHECK(strstr(buf, "web GET /x HTTP/1.1") != NULL);
	exchange(dial(web_v6, 16, 80),
	    "GET /y HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n",
	    buf, sizeof(buf));
	CHECK(strncmp(buf, "HTTP/1.1 421", 12) == 0);
	/* Credentials never go in plain HTTP: that rule's request is refused. */
	exchange(dial(cred_v4, 4, 80),
	    "GET /cred HTTP/1.1\r\nHost: cred.test\r\nConnection: "
	    "close\r\n\r\n",
	    buf, sizeof(buf));
	CHECK(strncmp(buf, "HTTP/1.1 403", 12) == 0);
	/* An address target, by the address rules: allowed, then not. */
	exchange(dial_text("203.0.113.7", 80),
	    "GET /z HTTP/1.1\r\nHost: 203.0.113.7\r\nConnection: close\r\n\r\n",
	    buf, sizeof(buf));
	CHECK(strncmp(buf, "HTTP/1.1 200", 12) == 0);
	CHECK(strstr(buf, "addr GET /z") != NULL);
	check_reset(dial_text("203.0.113.8", 80));
	check_reset(dial_text("2001:db8::8", 443));
	/* A denied name, an unmapped synthetic address: reset, nothing sent. */
	check_reset(dial(denied_v4, 4, 443));
	check_reset(dial(denied_v6, 16, 2222));
	check_reset(dial_text("198.18.200.1", 443));
	/* The server speaks first: tunnelled at once, no byte asked for. */
	fd = dial(srv_v4, 4, 2222);
	CHECK(read(fd, buf, 14) == 14 &&
	    memcmp(buf, "SSH-2.0-test\r\n", 14) == 0);
	CHECK(write(fd, "hi", 2) == 2);
	CHECK(read(fd, buf, 2) == 2 && memcmp(buf, "hi", 2) == 0);
	close(fd);
	fd = dial(srv_v6, 16, 2222);
	CHECK(read(fd, buf, 14) == 14 &&
	    memcmp(buf, "SSH-2.0-test\r\n", 14) == 0);
	close(fd);
	_exit(0);
}

/* --- the proxy -------------------------------------------------------------- */

struct run {
	struct event_base *base;
	pid_t client;
	int status;
	int64_t deadline;
};

static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct run *r = arg;

	(void)fd;
	(void)what;
	if (waitpid(r->client, &r->status, WNOHANG) == r->client ||
	    fixture_now_ms() > r->deadline)
		event_base_loopbreak(r->base);
}

static unsigned denied; /* the run's denied callback, told */

static void
on_denied(void *arg, const char *host, unsigned port)
{
	(void)arg;
	(void)host;
	(void)port;
	denied++;
}

static const char policy_text[] =
    "resolve tls.test 127.0.0.1\n"
    "resolve web.test 127.0.0.1\n"
    "resolve srv.test 127.0.0.1\n"
    "allow tls.test:443 { private }\n"
    "allow web.test:80 { private }\n"
    "allow srv.test:2222 { private }\n"
    "allow 203.0.113.7:80 { private }\n"
    "resolve icpt.test 127.0.0.1\n"
    "allow icpt.test:443 { private paths /a/* }\n"
    "secret tok env PH_TEST_CAPTURE_TOK\n"
    "resolve cred.test 127.0.0.1\n"
    "allow cred.test:80 { private inject bearer tok }\n"
    "timeout head 500ms\n";

/* The audit log holds a line with every one of the strings (NULL-ended). */
static void
check_log(const char *path, ...)
{
	char line[4096];
	const char *want[8];
	size_t n = 0, i;
	va_list ap;
	int found = 0;
	FILE *f;

	va_start(ap, path);
	while (n < 8 && (want[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	CHECK((f = fopen(path, "r")) != NULL);
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		for (i = 0; i < n && strstr(line, want[i]) != NULL; i++)
			;
		found = i == n;
	}
	fclose(f);
	if (!found) {
		fprintf(stderr, "no record with %s... in:\n", want[0]);
		CHECK((f = fopen(path, "r")) != NULL);
		while (fgets(line, sizeof(line), f) != NULL)
			fputs(line, stderr);
		fclose(f);
	}
	CHECK(found);
}

/* Every record of a session in the log says via capture. */
static void
check_all_capture(const char *path)
{
	char line[4096];
	unsigned n = 0;
	FILE *f;

	CHECK((f = fopen(path, "r")) != NULL);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strstr(line, "\"conn\"") == NULL)
			continue;
		if (strstr(line, "\"via\":\"capture\"") == NULL)
			fprintf(stderr, "not via capture: %s", line);
		CHECK(strstr(line, "\"via\":\"capture\"") != NULL);
		n++;
	}
	fclose(f);
	CHECK(n >= 10);
}

static void
in_child(void)
{
	const struct timeval tick = {0, 10 * 1000};
	struct proxy_config cf = {0};
	struct run r = {0};
	struct synth *sy;
	struct audit *au;
	static const char *const icpt_hosts[] = {"icpt.test"};
	struct proxy *px;
	struct event *ev;
	struct tls *tls;
	char dir[256], log[300], err[256];
	int lfd[NSRV], cap[NCAP], sv[2], i;
	pid_t srv;

	if (enter_host() != 0) {
		fprintf(stderr,
		    "test_capture: SKIPPED: no user and network "
		    "namespace here (unshare: %s)\n",
		    strerror(errno));
		_exit(SKIPPED);
	}
	signal(SIGPIPE, SIG_IGN);
	CHECK(fixture_tmpdir(dir, sizeof(dir), "capture") == 0);
	snprintf(log, sizeof(log), "%s/audit.jsonl", dir);
	CHECK((sy = synth_new()) != NULL);
	CHECK(synth_map(sy, "tls.test", tls_v4, tls_v6) == 0);
	CHECK(synth_map(sy, "web.test", web_v4, web_v6) == 0);
	CHECK(synth_map(sy, "srv.test", srv_v4, srv_v6) == 0);
	CHECK(synth_map(sy, "denied.test", denied_v4, denied_v6) == 0);
	CHECK(synth_map(sy, "icpt.test", icpt_v4, icpt_v6) == 0);
	CHECK(synth_map(sy, "cred.test", cred_v4, cred_v6) == 0);
	CHECK(
	    (run_ca = ca_new_run(icpt_hosts, 1, 0, err, sizeof(err))) != NULL);
	CHECK((tls = tls_new(run_ca, err, sizeof(err))) != NULL);
	lfd[SRV_TLS] = listen_at("127.0.0.1", 443);
	lfd[SRV_HTTP] = listen_at("127.0.0.1", 80);
	lfd[SRV_HTTP_ADDR] = listen_at("203.0.113.7", 80);
	lfd[SRV_FIRST] = listen_at("127.0.0.1", 2222);
	if ((srv = fork()) == 0)
		servers(lfd);
	CHECK(srv > 0);
	for (i = 0; i < NSRV; i++)
		close(lfd[i]);

	CHECK((r.base = event_base_new()) != NULL);
	CHECK((au = audit_open(log, "test", err, sizeof(err))) != NULL);
	cf.policy = fixture_policy(policy_text, 0);
	cf.audit = au;
	cf.run_id = "test";
	cf.synth = sy;
	cf.tls = tls;
	cf.denied = on_denied;
	cf.head_memory = 2000;
	CHECK((px = proxy_new(r.base, &cf)) != NULL);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	if ((r.client = fork()) == 0) {
		close(sv[0]);
		client(sv[1]);
	}
	CHECK(r.client > 0);
	close(sv[1]);
	recv_listeners(sv[0], cap);
	for (i = 0; i < NCAP; i++)
		CHECK(proxy_listen_fd(px, cap[i], PROXY_VIA_CAPTURE) == 0);
	r.deadline = fixture_now_ms() + RUN_MS;
	ev = event_new(r.base, -1, EV_PERSIST, on_tick, &r);
	event_add(ev, &tick);
	event_base_dispatch(r.base);
	kill(srv, SIGKILL);
	waitpid(srv, NULL, 0);
	if (fixture_now_ms() > r.deadline)
		kill(r.client, SIGKILL);
	event_free(ev);
	proxy_free(px);
	audit_close(au);
	event_base_free(r.base);
	synth_free(sy);
	tls_free(tls);
	ca_free(run_ca);
	if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0)
		check_log(log, "(the client failed)", NULL);
	CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
	/*
	 * 203.0.113.8, 2001:db8::8, denied.test twice, /b inside the
	 * interception and /cred in plain HTTP; not the refusals of SNI,
	 * Host or bytes.
	 */
	if (denied != 6)
		fprintf(stderr, "denied told %u times\n", denied);
	CHECK(denied == 6);

	check_all_capture(log);
	check_log(log, "\"tls.test\"", "\"CONNECT\"", "\"allow\"", NULL);
	check_log(log,
	    "SNI other.test differs from the name tls.test the program "
	    "connected to",
	    "\"deny\"", NULL);
	check_log(log, "\"web.test\"", "\"GET\"", "\"/x\"", "\"allow\"", NULL);
	check_log(log, "\"web.test\"", "421", NULL);
	check_log(log, "\"cred.test\"", "\"/cred\"",
	    "credentials are never sent over plain HTTP", NULL);
	check_log(log, "\"203.0.113.7\"", "\"GET\"", "\"allow\"", NULL);
	check_log(log, "\"203.0.113.8\"", "\"CONNECT\"", "\"deny\"", NULL);
	check_log(log, "\"denied.test\"", "\"CONNECT\"", "\"deny\"", NULL);
	check_log(log, "\"198.18.200.1\"", "synthetic address no longer mapped",
	    NULL);
	check_log(log, "\"srv.test\"", "2222", "\"allow\"", NULL);
	check_log(log, "\"tls.test\"",
	    "a TLS ClientHello without SNI, to the name tls.test", NULL);
	check_log(log, "\"end\"", "\"tls.test\"", "\"bytes_up\":7", NULL);
	check_log(log, "\"tls.test\"", "within the head timeout", NULL);
	check_log(log, "\"icpt.test\"", "\"/b\"", "\"deny\"", NULL);
	check_log(log, "\"icpt.test\"", "needs TLS or HTTP", NULL);
	check_log(log, "\"tls.test\"", "\"status\":503",
	    "memory for unfinished request heads", NULL);
	fixture_rmtree(dir);
	_exit(0);
}

static void
test_captured(void **state)
{
	int status = fixture_in_child(in_child);

	(void)state;
	if (WIFEXITED(status) && WEXITSTATUS(status) == SKIPPED)
		skip();
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_destination),
	    cmocka_unit_test(test_captured),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
