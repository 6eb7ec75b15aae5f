/*
 * capture.h: a connection captured in the sandbox (a program that
 * ignores the proxy variables connected to some address; the sandbox's
 * local routes brought it to a listener on its port).  Its destination
 * is the socket's own address: a synthetic one (synth.h) stands for the
 * name the DNS stub gave it for, any other is an address target.  It is
 * decided as a CONNECT to that host and port (records via "capture");
 * denied, it is reset.  On ports 80 and 443, and for rules that
 * intercept, the first bytes are peeked (peek.h) first: a TLS hello must
 * name the same host (SNI), HTTP requests are served one by one like
 * absolute-form ones (forward.c), other bytes go through a tunnel only
 * when the rule does not intercept.  Other ports are tunnelled at once,
 * so that protocols where the server speaks first work.  Internal to
 * proxy/.
 */
#ifndef PH_CAPTURE_H
#define PH_CAPTURE_H

#include <stdint.h>
#include <sys/socket.h>

struct session;
struct session_ctx;
struct synth;
struct target_host;

/*
 * Starts a session on FD, a connection accepted on a capture listener,
 * connection number CONN.  Nothing is decided or answered before the
 * loop runs again: the session it returns is still there for the caller.
 * Returns NULL (FD closed) when out of memory.
 */
struct session *capture_start(struct session_ctx *, int fd, uint64_t conn);

enum capture_dest {
	CAPTURE_DEST_OK, /* *HOST: the name, or the address */
	CAPTURE_DEST_UNMAPPED, /* synthetic, mapped to no name now; *HOST:
	                          the address */
	CAPTURE_DEST_BAD, /* neither IPv4 nor IPv6 */
};

/*
 * The target of a connection whose original destination is SA (LEN
 * bytes): an IPv4-mapped IPv6 address is its IPv4 one; a synthetic
 * address is the name SYNTH (may be NULL: none) maps it back to.
 * Writes *HOST and *PORT.
 */
enum capture_dest capture_destination(const struct sockaddr *sa, socklen_t len,
    struct synth *synth, struct target_host *host, uint16_t *port);

#endif /* PH_CAPTURE_H */
