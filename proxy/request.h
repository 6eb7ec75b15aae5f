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

#include <stdint.h>

struct session;
struct session_ctx;

/*
 * Starts a session on accepted socket FD, connection number CONN, and
 * waits for its first request head.  Returns NULL (FD closed) when out of
 * memory.
 */
struct session *request_new(struct session_ctx *, int fd, uint64_t conn);

/*
 * The policy in the context was replaced: every open tunnel that the new
 * policy would not allow is closed.  Other sessions take the new policy
 * at their next request head.
 */
void request_policy_reloaded(struct session_ctx *);

#endif /* PH_REQUEST_H */
