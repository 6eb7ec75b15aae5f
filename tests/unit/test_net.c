/*
 * test_net.c: unit tests of netns/net.c.
 *
 * Loopback and listeners are tried in a forked child in new user and
 * network namespaces, whose lo starts down and whose port 3128 is free
 * whatever the host runs; no uid map is needed, since the child holds
 * CAP_NET_ADMIN over its own network namespace all the same.  The first
 * failed check ends the child with status 1 and one line on stderr; the
 * parent asserts status 0.  Passing descriptors needs no namespace: it
 * runs in the test process over socketpairs.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "netns/net.h"
#include "proxy/dnsstub.h"
#include "tests/unit/fixture.h"

#define PORT NET_PROXY_PORT

/* A blocking connect to ADDR (text) port PORT; returns the fd or -1. */
static int
connect_to(const char *addr, uint16_t port)
{
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	struct sockaddr *sa;
	socklen_t len;
	int fd, family, saved;

	memset(&sin, 0, sizeof(sin));
	memset(&sin6, 0, sizeof(sin6));
	if (inet_pton(AF_INET, addr, &sin.sin_addr) == 1) {
		family = sin.sin_family = AF_INET;
		sin.sin_port = htons(port);
		sa = (struct sockaddr *)&sin;
		len = sizeof(sin);
	} else {
		CHECK(inet_pton(AF_INET6, addr, &sin6.sin6_addr) == 1);
		family = sin6.sin6_family = AF_INET6;
		sin6.sin6_port = htons(port);
		sa = (struct sockaddr *)&sin6;
		len = sizeof(sin6);
	}
	CHECK((fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	if (connect(fd, sa, len) != 0) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

static int
has_ipv6(void)
{
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

static void
enter_netns(void)
{
	CHECK(unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0);
}

/* --- net_lo_up ------------------------------------------------------------ */

static void
child_lo_up(void)
{
	char err[256] = "";
	int fd;

	enter_netns();
	/* lo is down: no route even to 127.0.0.1. */
	CHECK(connect_to("127.0.0.1", PORT) == -1 && errno == ENETUNREACH);
	CHECK(net_lo_up(err, sizeof(err)) == 0);
	/* Up: the address answers (refused: nobody listens yet). */
	CHECK(connect_to("127.0.0.1", PORT) == -1 && errno == ECONNREFUSED);
	CHECK((fd = connect_to("127.0.0.2", PORT)) == -1 &&
	    errno == ECONNREFUSED);
	/* A second call on a lo that is up changes nothing. */
	CHECK(net_lo_up(err, sizeof(err)) == 0);
	CHECK(connect_to("127.0.0.1", PORT) == -1 && errno == ECONNREFUSED);
}

static void
test_lo_up(void **state)
{
	(void)state;
	fixture_child_ok(child_lo_up);
}

/* Nothing but loopback: an outside address has no route, at once. */
static void
child_no_route_out(void)
{
	char err[256] = "";

	enter_netns();
	CHECK(net_lo_up(err, sizeof(err)) == 0);
	CHECK(connect_to("192.0.2.1", 80) == -1 && errno == ENETUNREACH);
	CHECK(connect_to("8.8.8.8", 53) == -1 && errno == ENETUNREACH);
	if (has_ipv6())
		CHECK(connect_to("2001:db8::1", 80) == -1 &&
		    errno == ENETUNREACH);
}

static void
test_no_route_out(void **state)
{
	(void)state;
	fixture_child_ok(child_no_route_out);
}

/* --- net_listen_loopback -------------------------------------------------- */

/* FD listens on ADDR:PORT (text address), close-on-exec. */
static void
check_listener(int fd, int family, const char *addr)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char buf[INET6_ADDRSTRLEN];
	int on = 0, v6only = 0;
	socklen_t olen = sizeof(on);
	uint16_t port;

	CHECK(fd >= 0);
	CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
	CHECK(getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &olen) == 0);
	CHECK(on == 1);
	CHECK(getsockname(fd, (struct sockaddr *)&ss, &len) == 0);
	CHECK(ss.ss_family == family);
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		CHECK(inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf)));
		port = ntohs(sin->sin_port);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		CHECK(inet_ntop(AF_INET6, &sin6->sin6_addr, buf, sizeof(buf)));
		port = ntohs(sin6->sin6_port);
		olen = sizeof(v6only);
		CHECK(getsockopt(
		          fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &olen) == 0);
		CHECK(v6only == 1);
	}
	CHECK(strcmp(buf, addr) == 0);
	CHECK(port == PORT);
}

/* A connection to ADDR:PORT is accepted on LFD and carries a byte. */
static void
check_connects(int lfd, const char *addr)
{
	char c = 0;
	int cfd, afd;

	CHECK((cfd = connect_to(addr, PORT)) >= 0);
	CHECK((afd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0);
	CHECK(write(cfd, "x", 1) == 1);
	CHECK(read(afd, &c, 1) == 1 && c == 'x');
	close(afd);
	close(cfd);
}

static void
child_listen(void)
{
	int fds[NET_FDS_MAX] = {-1, -1, -1, -1}, more[NET_FDS_MAX], n;
	int want = has_ipv6() ? 2 : 1;
	char err[256] = "";

	enter_netns();
	CHECK(net_lo_up(err, sizeof(err)) == 0);
	CHECK((n = net_listen_loopback(PORT, fds, err, sizeof(err))) == want);
	check_listener(fds[0], AF_INET, "127.0.0.1");
	check_connects(fds[0], "127.0.0.1");
	if (want == 2) {
		check_listener(fds[1], AF_INET6, "::1");
		check_connects(fds[1], "::1");
	}
	/* Only loopback: 127.0.0.2 is loopback too but not listened on. */
	CHECK(connect_to("127.0.0.2", PORT) == -1 && errno == ECONNREFUSED);
	/* The port is taken now: a second set of listeners is refused. */
	CHECK(net_listen_loopback(PORT, more, err, sizeof(err)) == -1);
	CHECK(strstr(err, "127.0.0.1:3128") != NULL);
	CHECK(strstr(err, strerror(EADDRINUSE)) != NULL);
	close(fds[0]);
	if (want == 2)
		close(fds[1]);
}

static void
test_listen(void **state)
{
	(void)state;
	fixture_child_ok(child_listen);
}

/* The DNS stub's sockets: UDP and TCP on port 53 of each loopback. */
static void
child_listen_dns(void)
{
	int fds[NET_FDS_MAX], n, i, type, want = has_ipv6() ? 4 : 2;
	socklen_t len = sizeof(type);
	char err[256] = "";

	enter_netns();
	CHECK(net_lo_up(err, sizeof(err)) == 0);
	/* no room for them all: refused, none left open */
	CHECK(net_listen_dns(fds, 1, err, sizeof(err)) == -1);
	CHECK((n = net_listen_dns(fds, NET_FDS_MAX, err, sizeof(err))) == want);
	for (i = 0; i < n; i++) {
		CHECK((fcntl(fds[i], F_GETFD) & FD_CLOEXEC) != 0);
		CHECK(
		    getsockopt(fds[i], SOL_SOCKET, SO_TYPE, &type, &len) == 0);
		CHECK(type == (i % 2 ? SOCK_STREAM : SOCK_DGRAM));
		CHECK(dnsstub_is_stub_fd(fds[i])); /* what the engine asks */
		CHECK(getsockopt(
		          fds[i], SOL_SOCKET, SO_ACCEPTCONN, &type, &len) == 0);
		CHECK(type == i % 2);
	}
	CHECK(net_listen_dns(fds + n, NET_FDS_MAX - n, err, sizeof(err)) == -1);
	CHECK(strstr(err, "127.0.0.1 port 53") != NULL);
	for (i = 0; i < n; i++)
		close(fds[i]);
}

static void
test_listen_dns(void **state)
{
	(void)state;
	fixture_child_ok(child_listen_dns);
}

/* Open descriptors of the calling process. */
static int
count_fds(void)
{
	struct dirent *de;
	DIR *d;
	int n = 0;

	CHECK((d = opendir("/proc/self/fd")) != NULL);
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own */
}

/*
 * [::1]:3128 taken by someone else, 127.0.0.1:3128 free: the call fails
 * naming the IPv6 address, and the IPv4 listener it made is closed.
 */
static void
child_listen_v6_taken(void)
{
	struct sockaddr_in6 sin6;
	int fds[NET_FDS_MAX], fd, one = 1, before, afd;
	char err[256] = "";

	enter_netns();
	CHECK(net_lo_up(err, sizeof(err)) == 0);
	CHECK((fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	CHECK(
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) == 0);
	memset(&sin6, 0, sizeof(sin6));
	sin6.sin6_family = AF_INET6;
	sin6.sin6_port = htons(PORT);
	sin6.sin6_addr = in6addr_loopback;
	CHECK(bind(fd, (struct sockaddr *)&sin6, sizeof(sin6)) == 0);
	CHECK(listen(fd, 1) == 0);
	before = count_fds();
	CHECK(net_listen_loopback(PORT, fds, err, sizeof(err)) == -1);
	CHECK(strstr(err, "[::1]:3128") != NULL);
	CHECK(count_fds() == before);
	/* Nothing listens on 127.0.0.1 any more. */
	CHECK(connect_to("127.0.0.1", PORT) == -1 && errno == ECONNREFUSED);
	/* The other listener was not disturbed. */
	CHECK((afd = connect_to("::1", PORT)) >= 0);
	close(afd);
	close(fd);
}

static void
test_listen_v6_taken(void **state)
{
	(void)state;
	if (!has_ipv6()) {
		print_message("skipped: this kernel has no IPv6\n");
		skip();
	}
	fixture_child_ok(child_listen_v6_taken);
}

/* --- capture (issue 12) --------------------------------------------------- */

/* The local address of the connection FD accepted, as text, and its port. */
static void
local_of(int fd, char *addr, size_t len, unsigned *port)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

	CHECK(getsockname(fd, (struct sockaddr *)&ss, &sl) == 0);
	if (ss.ss_family == AF_INET) {
		CHECK(inet_ntop(AF_INET, &sin->sin_addr, addr, len) != NULL);
		*port = ntohs(sin->sin_port);
	} else {
		CHECK(ss.ss_family == AF_INET6);
		CHECK(inet_ntop(AF_INET6, &sin6->sin6_addr, addr, len) != NULL);
		*port = ntohs(sin6->sin6_port);
	}
}

/* ADDR:P is accepted on LFD, which sees ADDR (or WANT) as the local side. */
static void
check_captured(int lfd, const char *addr, uint16_t p, const char *want)
{
	char got[INET6_ADDRSTRLEN];
	unsigned port;
	int cfd, afd;

	CHECK((cfd = connect_to(addr, p)) >= 0);
	CHECK((afd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0);
	local_of(afd, got, sizeof(got), &port);
	if (strcmp(got, want) != 0 || port != p)
		CHECK(!"the accepted connection's local address");
	close(afd);
	close(cfd);
}

static void
child_capture(void)
{
	static const uint16_t ports[] = {53, 80, 1080, 2222, 3128};
	int fds[8], n, type, v6 = has_ipv6();
	socklen_t len = sizeof(type);
	char err[256] = "";

	enter_netns();
	CHECK(net_lo_up(err, sizeof(err)) == 0);
	CHECK(net_capture_routes(err, sizeof(err)) == 0);
	/* Made already: the second time fails, and says which. */
	CHECK(net_capture_routes(err, sizeof(err)) == -1);
	CHECK(strstr(err, "0.0.0.0/0") != NULL);
	/* 53, 1080 and 3128 have loopback listeners of their own. */
	CHECK(net_listen_capture(ports, 5, fds, 1, err, sizeof(err)) == -1);
	CHECK(
	    (n = net_listen_capture(ports, 5, fds, 8, err, sizeof(err))) == 2);
	CHECK(getsockopt(fds[0], SOL_SOCKET, SO_ACCEPTCONN, &type, &len) == 0 &&
	    type == 1);
	CHECK((fcntl(fds[0], F_GETFD) & FD_CLOEXEC) != 0);
	/* Any address is local now; the listener sees where it went. */
	check_captured(fds[1], "203.0.113.7", 2222,
	    v6 ? "::ffff:203.0.113.7" : "203.0.113.7");
	check_captured(
	    fds[0], "192.0.2.1", 80, v6 ? "::ffff:192.0.2.1" : "192.0.2.1");
	if (v6)
		check_captured(fds[0], "2001:db8::7", 80, "2001:db8::7");
	/* A port nobody listens on is refused at once, not unreachable. */
	CHECK(connect_to("203.0.113.7", 5555) == -1 && errno == ECONNREFUSED);
	if (v6)
		CHECK(connect_to("2001:db8::7", 5555) == -1 &&
		    errno == ECONNREFUSED);
	close(fds[0]);
	close(fds[1]);
}

static void
test_capture(void **state)
{
	(void)state;
	fixture_child_ok(child_capture);
}

/* The DNS stub's wildcard sockets: a query to any address reaches them. */
static void
child_dns_any(void)
{
	struct sockaddr_in to;
	char buf[8], err[256] = "";
	int fds[2], u, tfd, afd, type;
	socklen_t len = sizeof(type);

	enter_netns();
	CHECK(net_lo_up(err, sizeof(err)) == 0);
	CHECK(net_capture_routes(err, sizeof(err)) == 0);
	CHECK(net_listen_dns_any(fds, 1, err, sizeof(err)) == -1);
	CHECK(net_listen_dns_any(fds, 2, err, sizeof(err)) == 2);
	CHECK(getsockopt(fds[0], SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
	    type == SOCK_DGRAM);
	CHECK(dnsstub_is_stub_fd(fds[0]) && dnsstub_is_stub_fd(fds[1]));
	memset(&to, 0, sizeof(to));
	to.sin_family = AF_INET;
	to.sin_port = htons(NET_DNS_PORT);
	CHECK(inet_pton(AF_INET, "192.0.2.53", &to.sin_addr) == 1);
	CHECK((u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) >= 0);
	CHECK(sendto(u, "q", 1, 0, (struct sockaddr *)&to, sizeof(to)) == 1);
	CHECK(recv(fds[0], buf, sizeof(buf), 0) == 1 && buf[0] == 'q');
	CHECK((tfd = connect_to("198.51.100.53", NET_DNS_PORT)) >= 0);
	CHECK((afd = accept4(fds[1], NULL, NULL, SOCK_CLOEXEC)) >= 0);
	/* 127.0.0.1, which resolv.conf names, is one of them too. */
	CHECK(sendto(u, "r", 1, 0,
	          (struct sockaddr *)&(struct sockaddr_in){AF_INET,
	              htons(NET_DNS_PORT), {htonl(INADDR_LOOPBACK)}, {0}},
	          sizeof(to)) == 1);
	CHECK(recv(fds[0], buf, sizeof(buf), 0) == 1 && buf[0] == 'r');
	close(afd);
	close(tfd);
	close(u);
	close(fds[0]);
	close(fds[1]);
}

static void
test_dns_any(void **state)
{
	(void)state;
	fixture_child_ok(child_dns_any);
}

/*
 * The refusals' sockets: raw, IPv4 TCP and ICMP, then IPv6 TCP and
 * ICMPv6 where the kernel has IPv6, close-on-exec; too little room: none
 * left open.
 */
static void
child_refusal_sockets(void)
{
	static const int kinds[][2] = {{AF_INET, IPPROTO_TCP},
	    {AF_INET, IPPROTO_ICMP}, {AF_INET6, IPPROTO_TCP},
	    {AF_INET6, IPPROTO_ICMPV6}};
	socklen_t len;
	char err[256] = "";
	int fds[4], n, i, v, want = has_ipv6() ? 4 : 2;

	enter_netns();
	CHECK((n = net_refusal_sockets(fds, 4, err, sizeof(err))) == want);
	for (i = 0; i < n; i++) {
		CHECK((fcntl(fds[i], F_GETFD) & FD_CLOEXEC) != 0);
		len = sizeof(v);
		CHECK(getsockopt(fds[i], SOL_SOCKET, SO_TYPE, &v, &len) == 0 &&
		    v == SOCK_RAW);
		CHECK(
		    getsockopt(fds[i], SOL_SOCKET, SO_DOMAIN, &v, &len) == 0 &&
		    v == kinds[i][0]);
		CHECK(getsockopt(fds[i], SOL_SOCKET, SO_PROTOCOL, &v, &len) ==
		        0 &&
		    v == kinds[i][1]);
		close(fds[i]);
	}
	CHECK(net_refusal_sockets(fds, 1, err, sizeof(err)) == -1);
	CHECK(strstr(err, "too many") != NULL);
	CHECK(fcntl(fds[0], F_GETFD) == -1);
}

static void
test_refusal_sockets(void **state)
{
	(void)state;
	fixture_child_ok(child_refusal_sockets);
}

/* --- net_send_fds, net_recv_fds ------------------------------------------- */

/* Open descriptors of the test process. */
static int
nfds_open(void)
{
	struct dirent *de;
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own */
}

static void
socket_pair(int sp[2])
{
	assert_int_equal(
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
}

/* A pipe's two ends, passed and received: same pipe, close-on-exec. */
static void
test_pass_pipe(void **state)
{
	int sp[2], p[2], got[NET_FDS_MAX] = {-1, -1, -1, -1};
	char buf[8];

	(void)state;
	socket_pair(sp);
	assert_int_equal(pipe(p), 0); /* not close-on-exec: the copies are */
	assert_int_equal(net_send_fds(sp[0], p, 2), 0);
	assert_int_equal(net_recv_fds(sp[1], got, NET_FDS_MAX), 2);
	assert_true(got[0] >= 0 && got[1] >= 0);
	assert_true(got[0] != p[0] && got[1] != p[1]);
	assert_true((fcntl(got[0], F_GETFD) & FD_CLOEXEC) != 0);
	assert_true((fcntl(got[1], F_GETFD) & FD_CLOEXEC) != 0);
	/* In order: got[0] reads, got[1] writes. */
	assert_int_equal(fcntl(got[0], F_GETFL) & O_ACCMODE, O_RDONLY);
	assert_int_equal(fcntl(got[1], F_GETFL) & O_ACCMODE, O_WRONLY);
	assert_int_equal(write(got[1], "hi", 2), 2);
	assert_int_equal(read(got[0], buf, sizeof(buf)), 2);
	assert_memory_equal(buf, "hi", 2);
	/* The same pipe as the originals. */
	assert_int_equal(write(p[1], "yo", 2), 2);
	assert_int_equal(read(got[0], buf, sizeof(buf)), 2);
	assert_memory_equal(buf, "yo", 2);
	close(got[0]);
	close(got[1]);
	close(p[0]);
	close(p[1]);
	close(sp[0]);
	close(sp[1]);
}

/* NET_FDS_MAX at once, the most a message may carry, and one alone. */
static void
test_pass_max(void **state)
{
	int sp[2], fds[NET_FDS_MAX], got[NET_FDS_MAX], i;
	struct stat sa, sb;

	(void)state;
	socket_pair(sp);
	for (i = 0; i < NET_FDS_MAX; i++)
		assert_true((fds[i] = open("/dev/null", O_RDONLY)) >= 0);
	assert_int_equal(net_send_fds(sp[0], fds, NET_FDS_MAX), 0);
	assert_int_equal(net_recv_fds(sp[1], got, NET_FDS_MAX), NET_FDS_MAX);
	for (i = 0; i < NET_FDS_MAX; i++) {
		assert_int_equal(fstat(got[i], &sa), 0);
		assert_int_equal(fstat(fds[i], &sb), 0);
		assert_true(sa.st_rdev == sb.st_rdev);
		close(got[i]);
	}
	assert_int_equal(net_send_fds(sp[0], fds, 1), 0);
	assert_int_equal(net_recv_fds(sp[1], got, NET_FDS_MAX), 1);
	close(got[0]);
	for (i = 0; i < NET_FDS_MAX; i++)
		close(fds[i]);
	close(sp[0]);
	close(sp[1]);
}

static void
test_send_bad_count(void **state)
{
	int sp[2], fds[NET_FDS_MAX + 1] = {0, 0, 0, 0, 0}, got[1];

	(void)state;
	socket_pair(sp);
	errno = 0;
	assert_int_equal(net_send_fds(sp[0], fds, 0), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(net_send_fds(sp[0], fds, -1), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(net_send_fds(sp[0], fds, NET_FDS_MAX + 1), -1);
	assert_int_equal(errno, EINVAL);
	/* Nothing was sent: the peer sees end of file, no message. */
	close(sp[0]);
	assert_int_equal(net_recv_fds(sp[1], got, 1), 0);
	close(sp[1]);
}

/* A message with no descriptor in it is not what was expected. */
static void
test_recv_without_fds(void **state)
{
	int sp[2], got[NET_FDS_MAX], before = nfds_open();

	(void)state;
	socket_pair(sp);
	assert_int_equal(send(sp[0], "F", 1, 0), 1);
	errno = 0;
	assert_int_equal(net_recv_fds(sp[1], got, NET_FDS_MAX), -1);
	assert_int_equal(errno, EPROTO);
	close(sp[0]);
	close(sp[1]);
	assert_int_equal(nfds_open(), before);
}

static void
test_recv_eof(void **state)
{
	int sp[2], got[NET_FDS_MAX];

	(void)state;
	socket_pair(sp);
	close(sp[0]);
	assert_int_equal(net_recv_fds(sp[1], got, NET_FDS_MAX), 0);
	close(sp[1]);
}

/* Over a stream socket too, and end of file after the message. */
static void
test_stream_then_eof(void **state)
{
	int sp[2], p[2], got[NET_FDS_MAX];

	(void)state;
	assert_int_equal(
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(net_send_fds(sp[0], p, 2), 0);
	close(sp[0]);
	assert_int_equal(net_recv_fds(sp[1], got, NET_FDS_MAX), 2);
	assert_int_equal(net_recv_fds(sp[1], got + 2, 2), 0);
	close(got[0]);
	close(got[1]);
	close(p[0]);
	close(p[1]);
	close(sp[1]);
}

/* More than asked for: the surplus is closed, not leaked. */
static void
test_recv_more_than_max(void **state)
{
	int sp[2], fds[3], got[NET_FDS_MAX], i, before;

	(void)state;
	socket_pair(sp);
	for (i = 0; i < 3; i++)
		assert_true((fds[i] = open("/dev/null", O_RDONLY)) >= 0);
	assert_int_equal(net_send_fds(sp[0], fds, 3), 0);
	before = nfds_open();
	assert_int_equal(net_recv_fds(sp[1], got, 2), 2);
	assert_int_equal(nfds_open(), before + 2);
	close(got[0]);
	close(got[1]);
	for (i = 0; i < 3; i++)
		close(fds[i]);
	close(sp[0]);
	close(sp[1]);
}

/*
 * A peer that sends more than NET_FDS_MAX in one message (not through
 * net_send_fds): the control data is cut, the call fails and what did
 * arrive is closed.
 */
static void
test_recv_truncated(void **state)
{
	enum { N = NET_FDS_MAX + 2 };
	char cbuf[CMSG_SPACE(sizeof(int) * N)];
	int sp[2], fds[N], got[NET_FDS_MAX], i, before;
	char byte = 'F';
	struct iovec iov = {&byte, 1};
	struct msghdr msg;
	struct cmsghdr *c;

	(void)state;
	socket_pair(sp);
	for (i = 0; i < N; i++)
		assert_true((fds[i] = open("/dev/null", O_RDONLY)) >= 0);
	memset(cbuf, 0, sizeof(cbuf));
	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof(cbuf);
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * N);
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	assert_int_equal(sendmsg(sp[0], &msg, 0), 1);
	before = nfds_open();
	errno = 0;
	assert_int_equal(net_recv_fds(sp[1], got, NET_FDS_MAX), -1);
	assert_int_equal(errno, EPROTO);
	assert_int_equal(nfds_open(), before);
	for (i = 0; i < N; i++)
		close(fds[i]);
	close(sp[0]);
	close(sp[1]);
}

/* Writing to a peer that is gone fails, without a SIGPIPE. */
static void
test_send_peer_gone(void **state)
{
	int sp[2], p[2];

	(void)state;
	assert_int_equal(
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	close(sp[1]);
	errno = 0;
	assert_int_equal(net_send_fds(sp[0], p, 2), -1);
	assert_int_equal(errno, EPIPE);
	close(p[0]);
	close(p[1]);
	close(sp[0]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lo_up),
	    cmocka_unit_test(test_no_route_out),
	    cmocka_unit_test(test_listen),
	    cmocka_unit_test(test_listen_dns),
	    cmocka_unit_test(test_listen_v6_taken),
	    cmocka_unit_test(test_capture),
	    cmocka_unit_test(test_dns_any),
	    cmocka_unit_test(test_refusal_sockets),
	    cmocka_unit_test(test_pass_pipe),
	    cmocka_unit_test(test_pass_max),
	    cmocka_unit_test(test_send_bad_count),
	    cmocka_unit_test(test_recv_without_fds),
	    cmocka_unit_test(test_recv_eof),
	    cmocka_unit_test(test_stream_then_eof),
	    cmocka_unit_test(test_recv_more_than_max),
	    cmocka_unit_test(test_recv_truncated),
	    cmocka_unit_test(test_send_peer_gone),
	};

	return cmocka_run_group_tests_name("net", tests, NULL, NULL);
}
