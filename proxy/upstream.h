/*
 * upstream.h: from a decided target to a connected socket.
 *
 * Resolves the host (a "resolve" line of the policy first, then DNS; a
 * literal address as is), classifies every address and refuses the
 * non-global ones unless the decision allows private destinations, then
 * connects to each remaining address in turn, each attempt bounded by the
 * connect timeout.  The socket connected is to the very address checked:
 * there is no second lookup to rebind.
 */
#ifndef PH_UPSTREAM_H
#define PH_UPSTREAM_H

#include <stdint.h>

struct bufferevent;
struct policy;
struct policy_decision;
struct session_ctx;
struct target_host;
struct upstream;

/*
 * On success BEV is connected (the callee owns it) and ADDR names the
 * address ("192.0.2.1:443"); on failure BEV is NULL, STATUS is the HTTP
 * status to answer (403 refused address, 502 DNS or connect failure, 504
 * connect timeout) and REASON says why in one line.
 */
typedef void upstream_cb(void *arg, struct bufferevent *bev, int status,
    const char *reason, const char *addr);

/* Starts; CB runs later (never from inside this call), once. */
struct upstream *upstream_open(struct session_ctx *, const struct policy *,
    const struct policy_decision *, const struct target_host *host,
    uint16_t port, upstream_cb *cb, void *arg);

/* Abandons U: CB will not run.  NULL does nothing. */
void upstream_cancel(struct upstream *u);

#endif
