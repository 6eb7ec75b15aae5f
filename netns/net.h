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
/* The proxy's two listeners and the DNS stub's four sockets, and room. */
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

/* Sends N descriptors over Unix socket SOCK.  Returns 0 or -1 (errno). */
int net_send_fds(int sock, const int *fds, int n);

/*
 * Receives up to MAX descriptors from SOCK (close-on-exec).  Returns how
 * many, 0 at EOF, or -1 (errno).
 */
int net_recv_fds(int sock, int *fds, int max);

#endif /* PH_NET_H */
