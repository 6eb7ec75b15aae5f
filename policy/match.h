/*
 * match.h: the policy index, built once the policy is parsed.  Decisions
 * are asked through policy_decide() (policy.h), which match.c implements;
 * the second pass (check.c) asks which rules cover a target.
 */
#ifndef PH_MATCH_H
#define PH_MATCH_H

#include <stdint.h>

struct policy;
struct match;
struct rule_target;

/* "No rule": larger than every rule index. */
#define MATCH_NONE UINT32_MAX

/*
 * Indexes the rules and targets of P, which must not change afterwards.
 * Never NULL (fatal on ENOMEM).
 */
struct match *match_build(const struct policy *p);

/* Frees the index.  NULL does nothing. */
void match_free(struct match *);

/*
 * Rules that cover every host and port of target T: *DENY, the first deny
 * rule without paths or methods, and *ALLOW, the first allow rule before
 * rule SELF without paths or methods; MATCH_NONE when there is none.
 */
void match_covering(const struct match *, const struct rule_target *t,
    uint32_t self, uint32_t *deny, uint32_t *allow);

#endif
