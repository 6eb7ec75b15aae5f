/*
 * gate.h: the front of `pinhole proxy` as a gateway for several clients,
 * each mapped to its own policy (and its own proxy) by its source address
 * or its proxy login (grant.h's `from` and `login`).
 *
 * The gate accepts, then looks at the first request head without taking
 * it from the socket (MSG_PEEK, bounded by HTTP_HEAD_MAX and the head
 * timeout): only its Proxy-Authorization field matters here.  The client
 * it picks is handed, unread, to that policy's proxy (proxy_take_fd), whose
 * session reads the head itself and drops Proxy-Authorization before
 * anything goes upstream (forward.c).  A client no grant admits, or whose
 * password is wrong, gets 407 with `Proxy-Authenticate: Basic
 * realm="pinhole"` and an audit record (decision deny, the login name in
 * the reason, never the password), and is closed.  A SOCKS5 listener
 * picks by address alone (no SOCKS login here): a refusal is the
 * greeting's "no acceptable method".
 *
 * A keep-alive connection stays with the policy its first request got:
 * later heads' Proxy-Authorization is dropped, not checked again.
 */
#ifndef PH_GATE_H
#define PH_GATE_H

#include <stddef.h>
#include <sys/socket.h>

#include "proxy/via.h"

struct event_base;
struct audit;
struct metrics;
struct proxy;
struct grant_set;
struct secret_store;

#define GATE_USER_MAX 255 /* bytes of a login name */
#define GATE_PASS_MAX 1024 /* bytes of a password */

/* Reasons of a refusal (the audit record's "reason" starts with one). */
#define GATE_WHY_AUTH "proxy authentication failed"
#define GATE_WHY_NONE "no policy for this client"

struct gate_config {
	struct event_base *base;
	struct audit *audit; /* borrowed; where refusals are recorded */
	struct metrics *metrics; /* borrowed; NULL: none */
	unsigned head_ms; /* the first head must be there by then */
	unsigned max_pending; /* connections whose head is awaited; 0: 4096 */
	/*
	 * The policy (an index) for a client from SA presenting login USER
	 * (NULL: none) with password PASS (PASSLEN bytes), or -1 with *WHY
	 * (GATE_WHY_*).  gate_pick is one, on grants and their secrets.
	 */
	long (*pick)(void *arg, const struct sockaddr *sa, const char *user,
	    const char *pass, size_t passlen, const char **why);
	/* The proxy that serves policy I. */
	struct proxy *(*proxy)(void *arg, long i);
	void *arg;
};

struct gate;

/* A gate on CF (copied), not yet listening; NULL when out of memory. */
struct gate *gate_new(const struct gate_config *cf);

/*
 * Listens on SPEC, IPV4:PORT or [IPV6]:PORT (port 0: the kernel's pick,
 * said in *PORT), for clients arriving as VIA (PROXY_VIA_PROXY or
 * PROXY_VIA_SOCKS).  Says why it failed.  Returns 0 or -1.
 */
int gate_listen(
    struct gate *, const char *spec, enum proxy_via via, unsigned *port);

/* Stops accepting and closes the connections not yet handed on. */
void gate_stop(struct gate *);

/* gate_stop, then frees.  NULL does nothing. */
void gate_free(struct gate *);

/*
 * The policy for a client from SA with login USER (NULL: none) and
 * password PASS: grant_gateway(G, SA, USER), then, when the grant needs a
 * secret, PASS must equal its value in STORE (compared in constant time
 * once the lengths agree).  Returns the index, or -1 with *WHY.
 */
long gate_pick(const struct grant_set *g, const struct secret_store *store,
    const struct sockaddr *sa, const char *user, const char *pass,
    size_t passlen, const char **why);

/*
 * Parses V (LEN bytes), a Proxy-Authorization value, strictly as RFC
 * 7617 Basic: the scheme (any case), blanks, then canonical base64 of
 * USER:PASS; USER is 1..GATE_USER_MAX bytes without a colon or a control
 * byte, PASS 0..GATE_PASS_MAX bytes without a control byte.  Fills USER
 * (NUL-terminated, GATE_USER_MAX + 1 bytes) and PASS (GATE_PASS_MAX + 1
 * bytes, *PASSLEN of them, NUL-terminated).  Returns 0, or -1 (both
 * buffers wiped).  The caller wipes PASS after use.
 */
int gate_basic_parse(
    const char *v, size_t len, char *user, char *pass, size_t *passlen);

#ifdef GATE_INTERNAL
/*
 * For tests: the login in a whole request head BUF (LEN bytes) as the gate
 * sees it.  Returns 0 with no Proxy-Authorization (*USER empty), 1 with a
 * valid one, -1 with a malformed or repeated one.
 */
int gate_head_login(
    const char *buf, size_t len, char *user, char *pass, size_t *passlen);
#endif

#endif /* PH_GATE_H */
