/*
 * decide.h: how the proxy decides a CONNECT or a request.  Turns the
 * target and head into a policy request, asks the policy, and checks
 * what the policy alone cannot see: a stand-in where it would leak, and
 * TRACE or TRACK on a rule that carries credentials.  The only caller of
 * policy_decide() in proxy/; the session and forward.c call it once a
 * whole head is read (and after taking the current policy: a reload
 * applies to every request after it, see session.c policy_follow).
 */
#ifndef PH_DECIDE_H
#define PH_DECIDE_H

#include <stdint.h>

#include "policy/policy.h"

struct http_head;
struct inject_standins;

/* A request as the proxy resolved it (absolute URL, or inside a tunnel). */
struct decide_request {
	const struct target_host *host; /* normalised */
	uint16_t port;
	int tls; /* inside an intercepted tunnel (else plain HTTP) */
	const char *method; /* as the client sent it */
	const char *path; /* target_path_normalise'd */
};

/* How the reason of a denial as a leak attempt begins (metrics count it). */
#define DECIDE_LEAK_PREFIX "leak attempt:"

/* Decides a CONNECT to HOST:PORT under P into D. */
void decide_connect(const struct policy *p, const struct target_host *host,
    uint16_t port, struct policy_decision *d);

/*
 * Decides request R, whose head is H, under P into D: the protocols of
 * its Upgrade fields are decided too; then a stand-in of SI that H
 * carries anywhere but where D swaps it denies it as a leak attempt
 * (before TRACE and TRACK, so that a leak's reason wins).
 */
void decide_request(const struct policy *p, const struct inject_standins *si,
    const struct http_head *h, const struct decide_request *r,
    struct policy_decision *d);

/*
 * Would P still allow a tunnel that a policy reload finds open?  METHOD
 * "CONNECT": a CONNECT tunnel to HOST:PORT, decided again as one (and it
 * must not now need interception); else the tunnel after a 101, decided
 * as the request (METHOD, PATH, TLS: inside an intercepted tunnel) that
 * opened it.  Returns 1 or 0.
 */
int decide_still_allowed(const struct policy *p, const char *method,
    const char *host, uint16_t port, const char *path, int tls);

#ifdef DECIDE_INTERNAL
const char *
decide_upgrade_list(const struct http_head *h, char *buf, size_t len);
#endif

#endif /* PH_DECIDE_H */
