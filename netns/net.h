/*
 * net.h: the sandbox's network namespace: bring lo up (netlink, libnl-3
 * route), make the loopback listeners the proxy will accept on, and pass
 * descriptors between processes (SCM_RIGHTS).
 */
#ifndef PH_NET_H
#define PH_NET_H

#include <stddef.h>
#include <stdint.h>

#define NET_PROXY_PORT 3128
#define NET_DNS_PORT 53
/* SOCKS5 on loopback (proxy/socks.h's SOCKS_PORT; netns/ has no proxy/). */
#define NET_SOCKS_PORT 1080
/* Descriptors in one message of net_send_fds (SCM_RIGHTS): more go in
 * batches (sandbox.c). */
#define NET_FDS_MAX 8

/*
 * Sets "lo" up in the calling process's network namespace.  Returns 0, or
 * -1 with a one-line reason in ERR.
 */
int net_lo_up(char *err, size_t errlen);

/*
 * Listens on 127.0.0.1:PORT and [::1]:PORT (IPv6 only when the kernel has
 * it).  Fills FDS (close-on-exec, listening) and returns how many, or -1
 * with a reason in ERR.
 */
int net_listen_loopback(
    uint16_t port, int fds[NET_FDS_MAX], char *err, size_t errlen);

/*
 * The DNS stub's sockets: UDP, and TCP listening, on 127.0.0.1:53 and
 * [::1]:53 (IPv6 only when the kernel has it), in FDS (room for MAX).
 * The sandbox's /etc/resolv.conf names them; the engine answers on them.
 * Returns how many, or -1 with a reason in ERR.
 */
int net_listen_dns(int *fds, int max, char *err, size_t errlen);

/*
 * Capture (issue 12): routes "local 0.0.0.0/0 dev lo" and "local ::/0 dev
 * lo" in the local table, as `ip route add local 0.0.0.0/0 dev lo` makes
 * them (the IPv6 one only when the kernel has IPv6), so that every
 * destination is local to the namespace.  After net_lo_up.  Returns 0,
 * or -1 with a reason in ERR.
 */
int net_capture_routes(char *err, size_t errlen);

/*
 * Does PORT have a loopback listener of its own (the proxy's, SOCKS's,
 * the DNS stub's) rather than a capture listener?
 */
int net_port_reserved(uint16_t port);

/*
 * The capture listeners: for each of the N PORTS (net_port_reserved ones
 * left out), one TCP socket listening on the wildcard, port PORT: [::]
 * dual-stack (IPV6_V6ONLY off), or 0.0.0.0 on a kernel without IPv6.
 * With the routes above, they accept connections to any address, and
 * getsockname() on an accepted socket gives the address the program
 * connected to (IPv4 as ::ffff:a.b.c.d).  In FDS (room for MAX).
 * Returns how many, or -1 with a reason in ERR (none left open).
 */
int net_listen_capture(const uint16_t *ports, size_t n, int *fds, int max,
    char *err, size_t errlen);

/*
 * The DNS stub's sockets under capture: UDP, and TCP listening, on the
 * wildcard, port 53 ([::] dual-stack, or 0.0.0.0 without IPv6), so a
 * query to any address reaches the stub.  In FDS (room for MAX).
 * Returns how many (2), or -1 with a reason in ERR.
 */
int net_listen_dns_any(int *fds, int max, char *err, size_t errlen);

/*
 * The refusals' sockets (proxy/refused.h): raw sockets, IPv4 TCP and
 * ICMP, then IPv6 TCP and ICMPv6 (left out on a kernel without IPv6),
 * made inside so they see what the sandbox's kernel receives.  They
 * receive from the start; the engine filters them.  In FDS (room for
 * MAX), close-on-exec.  Returns how many (2 or 4), or -1 with a reason
 * in ERR (none left open).
 */
int net_refusal_sockets(int *fds, int max, char *err, size_t errlen);

/* Sends N descriptors over Unix socket SOCK.  Returns 0 or -1 (errno). */
int net_send_fds(int sock, const int *fds, int n);

/*
 * Receives up to MAX descriptors from SOCK (close-on-exec).  Returns how
 * many, 0 at EOF, or -1 (errno).
 */
int net_recv_fds(int sock, int *fds, int max);

#endif /* PH_NET_H */
