/*
 * check.h: the second pass over a parsed policy, run once its index is
 * built (match.h): resolves secret references and adds every finding to
 * the policy's diagnostics.
 */
#ifndef PH_CHECK_H
#define PH_CHECK_H

#include <stdint.h>

struct policy;

/*
 * The protocol a well-known non-HTTP port carries ("ssh" for 22), or
 * NULL when the port is not in check.c's short table.
 */
const char *check_port_protocol(uint16_t port);

/* An edit distance for "did you mean" (the parser's parse_distance). */
typedef unsigned check_distance_fn(const char *a, const char *b);

/* Runs the second pass on P, whose index must be built. */
void check_policy(struct policy *p, check_distance_fn *distance);

#endif
