/*
 * net.c: the sandbox's side of the path out.  The namespace starts with a
 * lo that is down; pinhole brings it up over rtnetlink (libnl-3 route),
 * listens on loopback, and passes the listening sockets to the proxy in
 * the host namespace.  A socket keeps the namespace it was made in, so
 * the proxy accepts the sandbox's connections directly (DESIGN.md, "The
 * path out").
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>

#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/route/route.h>

#include <linux/rtnetlink.h>

#include "common/ph_err.h"
#include "netns/net.h"

int
net_lo_up(char *err, size_t errlen)
{
	struct nl_sock *sk;
	struct rtnl_link *lo = NULL, *change = NULL;
	int r = -1, e;

	if ((sk = nl_socket_alloc()) == NULL ||
	    (change = rtnl_link_alloc()) == NULL) {
		ph_errf(err, errlen, "netlink: out of memory");
		goto out;
	}
	if ((e = nl_connect(sk, NETLINK_ROUTE)) < 0 ||
	    (e = rtnl_link_get_kernel(sk, 0, "lo", &lo)) < 0) {
		ph_errf(err, errlen, "netlink: lo: %s", nl_geterror(e));
		goto out;
	}
	rtnl_link_set_flags(change, IFF_UP);
	if ((e = rtnl_link_change(sk, lo, change, 0)) < 0) {
		ph_errf(
		    err, errlen, "netlink: bring lo up: %s", nl_geterror(e));
		goto out;
	}
	r = 0;
out:
	rtnl_link_put(change);
	rtnl_link_put(lo);
	nl_socket_free(sk);
	return r;
}

/* One route "local DST dev lo" (DST "0.0.0.0/0" or "::/0"). */
static int
add_local_route(struct nl_sock *sk, int family, const char *dst, int lo,
    char *err, size_t errlen)
{
	struct rtnl_route *rt = NULL;
	struct rtnl_nexthop *nh = NULL;
	struct nl_addr *a = NULL;
	int r = -1, e;

	if ((e = nl_addr_parse(dst, family, &a)) < 0) {
		ph_errf(err, errlen, "route %s: %s", dst, nl_geterror(e));
		goto out;
	}
	if ((rt = rtnl_route_alloc()) == NULL ||
	    (nh = rtnl_route_nh_alloc()) == NULL) {
		ph_errf(err, errlen, "netlink: out of memory");
		goto out;
	}
	rtnl_route_set_family(rt, (uint8_t)family);
	rtnl_route_set_table(rt, RT_TABLE_LOCAL);
	rtnl_route_set_type(rt, RTN_LOCAL);
	rtnl_route_set_scope(rt, RT_SCOPE_HOST);
	rtnl_route_set_protocol(rt, RTPROT_BOOT);
	rtnl_route_set_dst(rt, a);
	rtnl_route_nh_set_ifindex(nh, lo);
	rtnl_route_add_nexthop(rt, nh);
	nh = NULL; /* the route's now */
	if ((e = rtnl_route_add(sk, rt, NLM_F_CREATE | NLM_F_EXCL)) < 0) {
		ph_errf(err, errlen, "netlink: route local %s dev lo: %s", dst,
		    nl_geterror(e));
		goto out;
	}
	r = 0;
out:
	if (nh != NULL)
		rtnl_route_nh_free(nh);
	rtnl_route_put(rt);
	nl_addr_put(a);
	return r;
}

/* Does the kernel have IPv6 (not ipv6.disable=1)? */
static int
have_ipv6(void)
{
	int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

int
net_capture_routes(char *err, size_t errlen)
{
	struct nl_sock *sk;
	int r = -1, e, lo = (int)if_nametoindex("lo");

	if ((sk = nl_socket_alloc()) == NULL) {
		ph_errf(err, errlen, "netlink: out of memory");
		return -1;
	}
	if (lo == 0)
		ph_errf(err, errlen, "no lo: %s", strerror(errno));
	else if ((e = nl_connect(sk, NETLINK_ROUTE)) < 0)
		ph_errf(err, errlen, "netlink: %s", nl_geterror(e));
	else if (add_local_route(sk, AF_INET, "0.0.0.0/0", lo, err, errlen) ==
	        0 &&
	    (!have_ipv6() ||
	        add_local_route(sk, AF_INET6, "::/0", lo, err, errlen) == 0))
		r = 0;
	nl_socket_free(sk);
	return r;
}

/*
 * A socket of TYPE bound to FAMILY's loopback address (WILDCARD: the
 * wildcard, dual-stack for AF_INET6), port PORT.
 */
static int
bind_on(int family, int type, uint16_t port, int wildcard)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	int fd, one = 1, v6only, saved;

	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		sin->sin_addr.s_addr =
		    htonl(wildcard ? INADDR_ANY : INADDR_LOOPBACK);
		len = sizeof(*sin);
	} else {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		sin6->sin6_addr = wildcard ? in6addr_any : in6addr_loopback;
		len = sizeof(*sin6);
	}
	if ((fd = socket(family, type | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	v6only = !wildcard;
	if ((family == AF_INET6 &&
	        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only,
	            sizeof(v6only)) != 0) ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, (struct sockaddr *)&ss, len) != 0 ||
	    (type == SOCK_STREAM && listen(fd, 4096) != 0)) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

static int
listen_on(int family, int type, uint16_t port)
{
	return bind_on(family, type, port, 0);
}

/* The wildcard: [::] dual-stack, or 0.0.0.0 on a kernel without IPv6. */
static int
listen_any(int type, uint16_t port)
{
	int fd = bind_on(AF_INET6, type, port, 1);

	if (fd < 0 && errno == EAFNOSUPPORT)
		fd = bind_on(AF_INET, type, port, 1);
	return fd;
}

int
net_listen_loopback(
    uint16_t port, int fds[NET_FDS_MAX], char *err, size_t errlen)
{
	int n = 0;

	if ((fds[n] = listen_on(AF_INET, SOCK_STREAM, port)) < 0) {
		ph_errf(err, errlen, "listen on 127.0.0.1:%u: %s", port,
		    strerror(errno));
		return -1;
	}
	n++;
	/* A kernel without IPv6 (ipv6.disable=1) has no ::1: IPv4 is enough. */
	if ((fds[n] = listen_on(AF_INET6, SOCK_STREAM, port)) >= 0)
		n++;
	else if (errno != EAFNOSUPPORT && errno != EADDRNOTAVAIL) {
		ph_errf(err, errlen, "listen on [::1]:%u: %s", port,
		    strerror(errno));
		close(fds[0]);
		return -1;
	}
	return n;
}

int
net_listen_dns(int *fds, int max, char *err, size_t errlen)
{
	static const int types[] = {SOCK_DGRAM, SOCK_STREAM};
	static const int families[] = {AF_INET, AF_INET6};
	int n = 0, i, j, fd;

	for (i = 0; i < 2; i++)
		for (j = 0; j < 2; j++) {
			if (n == max) {
				ph_errf(err, errlen, "DNS: too many sockets");
				goto fail;
			}
			if ((fd = listen_on(
			         families[i], types[j], NET_DNS_PORT)) >= 0) {
				fds[n++] = fd;
				continue;
			}
			/* No ::1 (ipv6.disable=1): 127.0.0.1 is enough. */
			if (families[i] == AF_INET6 &&
			    (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL))
				continue;
			ph_errf(err, errlen, "DNS: listen on %s port %u: %s",
			    families[i] == AF_INET ? "127.0.0.1" : "[::1]",
			    NET_DNS_PORT, strerror(errno));
			goto fail;
		}
	return n;
fail:
	while (n > 0)
		close(fds[--n]);
	return -1;
}

int
net_port_reserved(uint16_t port)
{
	return port == NET_DNS_PORT || port == NET_SOCKS_PORT ||
	    port == NET_PROXY_PORT;
}

/* Closes the N descriptors of FDS. */
static void
close_all(int *fds, int n)
{
	while (n > 0)
		close(fds[--n]);
}

int
net_listen_capture(const uint16_t *ports, size_t n, int *fds, int max,
    char *err, size_t errlen)
{
	size_t i;
	int k = 0;

	for (i = 0; i < n; i++) {
		if (ports[i] == 0 || net_port_reserved(ports[i]))
			continue;
		if (k == max) {
			ph_errf(
			    err, errlen, "capture: more than %d ports", max);
			goto fail;
		}
		if ((fds[k] = listen_any(SOCK_STREAM, ports[i])) < 0) {
			ph_errf(err, errlen, "capture: listen on port %u: %s",
			    ports[i], strerror(errno));
			goto fail;
		}
		k++;
	}
	return k;
fail:
	close_all(fds, k);
	return -1;
}

int
net_listen_dns_any(int *fds, int max, char *err, size_t errlen)
{
	if (max < 2) {
		ph_errf(err, errlen, "DNS: too many sockets");
		return -1;
	}
	if ((fds[0] = listen_any(SOCK_DGRAM, NET_DNS_PORT)) < 0 ||
	    (fds[1] = listen_any(SOCK_STREAM, NET_DNS_PORT)) < 0) {
		ph_errf(err, errlen, "DNS: listen on port %u: %s", NET_DNS_PORT,
		    strerror(errno));
		if (fds[0] >= 0)
			close(fds[0]);
		return -1;
	}
	return 2;
}

/*
 * The refusals' sockets (net.h): raw sockets, not one packet socket,
 * because the last close of a packet socket waits for an RCU grace
 * period (packet_release -> synchronize_net, 10-16 ms here), at the
 * engine's exit, which `pinhole run` waits for; a raw socket's close
 * waits for nothing.  IPv6 only where the kernel has it.
 */
int
net_refusal_sockets(int *fds, int max, char *err, size_t errlen)
{
	static const int kinds[][2] = {{AF_INET, IPPROTO_TCP},
	    {AF_INET, IPPROTO_ICMP}, {AF_INET6, IPPROTO_TCP},
	    {AF_INET6, IPPROTO_ICMPV6}};
	int n = 0, i;

	for (i = 0; i < 4; i++) {
		if (n >= max) {
			ph_errf(err, errlen, "raw sockets: too many sockets");
			goto fail;
		}
		fds[n] =
		    socket(kinds[i][0], SOCK_RAW | SOCK_CLOEXEC, kinds[i][1]);
		if (fds[n] >= 0)
			n++;
		else if (kinds[i][0] != AF_INET6 || errno != EAFNOSUPPORT) {
			ph_errf(err, errlen, "raw socket: %s", strerror(errno));
			goto fail;
		}
	}
	return n;
fail:
	close_all(fds, n);
	return -1;
}

int
net_send_fds(int sock, const int *fds, int n)
{
	char cbuf[CMSG_SPACE(sizeof(int) * NET_FDS_MAX)];
	char byte = 'F';
	struct iovec iov = {&byte, 1};
	struct msghdr msg;
	struct cmsghdr *c;

	if (n < 1 || n > NET_FDS_MAX) {
		errno = EINVAL;
		return -1;
	}
	memset(cbuf, 0, sizeof(cbuf));
	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = CMSG_SPACE(sizeof(int) * n);
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * n);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

int
net_recv_fds(int sock, int *fds, int max)
{
	char cbuf[CMSG_SPACE(sizeof(int) * NET_FDS_MAX)];
	char byte;
	struct iovec iov = {&byte, 1};
	struct msghdr msg;
	struct cmsghdr *c;
	ssize_t r;
	int n = 0, i;

	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof(cbuf);
	do
		r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return (int)r;
	for (c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (i = 0;
		     i < (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		     i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			if (n < max)
				fds[n++] = fd;
			else
				close(fd); /* more than asked for: not ours */
		}
	}
	if ((msg.msg_flags & MSG_CTRUNC) || n == 0) {
		while (n > 0)
			close(fds[--n]);
		errno = EPROTO;
		return -1;
	}
	return n;
}
