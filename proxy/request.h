/*
 * request.h: where a request head is read and handed on.  Internal to
 * proxy/.
 *
 * The top of the request path: a session (session.c) reads a request
 * head here, the policy's answer comes from decide.c, and the session
 * becomes a CONNECT tunnel (tunnel.c, or intercept.c when the policy must
 * see the requests inside) or a plain-HTTP exchange (forward.c).  The
 * modules below call back up only through the context's session_ops,
 * which request_new() sets: the session layer knows no relay.
 */
#ifndef PH_REQUEST_H
#define PH_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "proxy/via.h"

struct session;
struct session_ctx;
struct target_host;

/*
 * Starts a session on accepted socket FD, connection number CONN, arrived
 * as VIA, and waits for its first request head.  Returns NULL (FD closed)
 * when out of memory.
 */
struct session *
request_new(struct session_ctx *, int fd, uint64_t conn, enum proxy_via via);

/*
 * The same session, reading nothing yet: for a front that speaks its own
 * protocol first (SOCKS, capture), then calls request_connect() or
 * session_next_request().  Returns NULL (FD closed) when out of memory.
 */
struct session *request_session(
    struct session_ctx *, int fd, uint64_t conn, enum proxy_via via);

/*
 * S asks for a tunnel to HOST:PORT, as a CONNECT does (the CONNECT's own
 * path once its head is parsed; the SOCKS and capture fronts' after
 * theirs).  Notes the target (method "CONNECT"), has it decided
 * (decide_connect), writes the "request" record (via S's), and then:
 * refused -> session_reply_close() with 403 (the policy's reason), 501
 * (interception without a CA), 502 or 504 (DNS, addresses, connect), so
 * the front answers in its own way; allowed -> interception
 * (intercept_start) or the upstream connection and a tunnel, where
 * session_established() answers the front.  Bytes still in the client's
 * input are the tunnel's (sent upstream first): the front must have
 * drained its own.  The caller must not touch S afterwards: it may be
 * gone.
 */
void request_connect(
    struct session *s, const struct target_host *host, uint16_t port);

/*
 * Counts the LEN bytes a front holds for S before its request is known
 * (a captured connection's first bytes, peeked) against the memory all
 * unfinished heads share, as a head's are; over it, the heads that have
 * waited longest are refused (503).  session_head_release() frees them.
 * Returns 1 when S itself was refused: it is gone.
 */
int request_head_account(struct session *s, size_t len);

/*
 * The policy in the context was replaced: every open tunnel that the new
 * policy would not allow is closed.  Other sessions take the new policy
 * at their next request head.
 */
void request_policy_reloaded(struct session_ctx *);

#endif /* PH_REQUEST_H */
