/*
 * check.c: the second pass over a parsed policy (relayd's load_config
 * checks): secret references resolved, rules that can never match or
 * never decide, settings without effect, address blocks that take in
 * loopback or the metadata service, one secret per placeholder, unused
 * secrets.  Findings go to the policy's diagnostics.
 */
#include <stdint.h>
#include <string.h>

#define POLICY_INTERNAL
#include "check.h"
#include "match.h"
#include "policy.h"

static void
check_shadowed(struct policy *p, const struct policy_rule *r)
{
	uint32_t i, d, a, deny = MATCH_NONE, allow = MATCH_NONE, by_deny = 0;

	if (r->ntargets == 0)
		return; /* every target had an error */
	for (i = 0; i < r->ntargets; i++) {
		match_covering(policy_index(p),
		    policy_target_at(p, r->first_target + i), r->index, &d, &a);
		if (d == MATCH_NONE && a == MATCH_NONE)
			return;
		by_deny += d != MATCH_NONE;
		if (deny == MATCH_NONE)
			deny = d;
		if (allow == MATCH_NONE)
			allow = a;
	}
	if (by_deny == r->ntargets)
		policy_diag_add(p, 1, r->file, r->line, r->col,
		    "this allow can never match: the deny at %s:%u covers it",
		    policy_rule_at(p, deny)->file,
		    policy_rule_at(p, deny)->line);
	else
		policy_diag_add(p, 1, r->file, r->line, r->col,
		    "this allow never decides: the earlier allow at %s:%u "
		    "matches everything it matches (move it before that rule)",
		    policy_rule_at(p, allow)->file,
		    policy_rule_at(p, allow)->line);
}

static int
only_port_80(const struct policy *p, const struct policy_rule *r)
{
	const struct rule_target *t;
	uint32_t i;

	for (i = 0; i < r->ntargets; i++) {
		t = policy_target_at(p, r->first_target + i);
		if (t->nports != 1 || t->ports[0].lo != 80 ||
		    t->ports[0].hi != 80)
			return 0;
	}
	return 1;
}

static struct secret *
secret_ref(struct policy *p, const struct policy_rule *r,
    const struct policy_loc *loc, const char *name, check_distance_fn *dist)
{
	struct secret *s;
	const char *best = NULL;
	unsigned d, bestd = 3;
	size_t i;

	if ((s = secret_store_find(policy_secrets(p), name)) != NULL) {
		secret_mark_used(s);
		return s;
	}
	for (i = 0; i < secret_store_count(policy_secrets(p)); i++) {
		const char *n =
		    secret_name(secret_store_get(policy_secrets(p), i));

		if ((d = dist(name, n)) < bestd) {
			bestd = d;
			best = n;
		}
	}
	if (best != NULL)
		policy_diag_add(p, 0, r->file, loc->line, loc->col,
		    "undefined secret '%s'; did you mean '%s'?", name, best);
	else
		policy_diag_add(p, 0, r->file, loc->line, loc->col,
		    "undefined secret '%s'; define it with 'secret %s file "
		    "PATH' (or env, exec)",
		    name, name);
	return NULL;
}

/* Secrets may be defined after use or in another file: resolve at the end. */
static void
check_secrets_of(
    struct policy *p, struct policy_rule *r, check_distance_fn *dist)
{
	size_t i;

	for (i = 0; i < r->ninject; i++)
		r->inject[i].secret = secret_ref(
		    p, r, &r->inject_loc[i], r->inject[i].secret_name, dist);
	for (i = 0; i < r->nplaceholder; i++)
		r->placeholder[i].secret =
		    secret_ref(p, r, &r->placeholder_loc[i],
		        r->placeholder[i].secret_name, dist);
}

/* The first binding of ENV in rules before rule END, and its rule. */
static const struct policy_placeholder *
placeholder_before(
    const struct policy *p, size_t end, const char *env, size_t *rule)
{
	size_t i, k;

	for (i = 0; i < end; i++)
		for (k = 0; k < policy_rule_at(p, i)->nplaceholder; k++)
			if (strcmp(policy_rule_at(p, i)->placeholder[k].env,
			        env) == 0) {
				*rule = i;
				return &policy_rule_at(p, i)->placeholder[k];
			}
	return NULL;
}

/*
 * One ENV, one secret: the sandbox sees a single stand-in per variable, so
 * two rules may not bind one variable to different secrets.
 */
static void
check_placeholders(struct policy *p)
{
	const struct policy_placeholder *a, *b;
	const struct policy_rule *ra, *rb;
	size_t i, j, k;

	for (i = 0; i < policy_rule_count(p); i++) {
		ra = policy_rule_at(p, i);
		for (k = 0; k < ra->nplaceholder; k++) {
			a = &ra->placeholder[k];
			if ((b = placeholder_before(p, i, a->env, &j)) ==
			        NULL ||
			    strcmp(a->secret_name, b->secret_name) == 0)
				continue;
			rb = policy_rule_at(p, j);
			policy_diag_add(p, 0, ra->file,
			    ra->placeholder_loc[k].line,
			    ra->placeholder_loc[k].col,
			    "placeholder %s is "
			    "already bound to secret '%s' at %s:%u",
			    a->env, b->secret_name, rb->file, rb->line);
		}
	}
}

/*
 * Addresses a wide block takes in by accident.  A rule naming addresses
 * allows them even where names resolving to them would be refused, so
 * "allow 0.0.0.0/0" opens loopback and the cloud metadata service.
 */
static const struct sensitive {
	int family;
	uint8_t addr[16];
	unsigned plen; /* the block the address belongs to */
	const char *what;
} sensitive[] = {
    {4, {127, 0, 0, 1}, 8, "loopback (127.0.0.0/8)"},
    {4, {169, 254, 169, 254}, 32, "the cloud metadata address 169.254.169.254"},
    {6, {[15] = 1}, 128, "loopback (::1)"},
    {6, {0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54}, 128,
        "the cloud metadata address fd00:ec2::254"},
};

static int
block_holds(const struct rule_target *t, const struct sensitive *v)
{
	unsigned i;

	if (t->kind != RT_CIDR || t->family != v->family || t->plen >= v->plen)
		return 0;
	for (i = 0; i < t->plen; i++)
		if ((t->addr[i / 8] ^ v->addr[i / 8]) & (0x80 >> (i % 8)))
			return 0;
	return 1;
}

static void
check_wide_blocks(struct policy *p, const struct policy_rule *r)
{
	const struct rule_target *t;
	size_t i, k;

	for (i = 0; i < r->ntargets; i++) {
		t = policy_target_at(p, r->first_target + i);
		for (k = 0; k < sizeof(sensitive) / sizeof(sensitive[0]); k++)
			if (block_holds(t, &sensitive[k])) {
				policy_diag_add(p, 1, r->file, r->line, t->col,
				    "this block takes in %s: a rule naming "
				    "addresses allows them even when private; "
				    "narrow it, or deny what it must not reach",
				    sensitive[k].what);
				break;
			}
	}
}

static void
check_rule(struct policy *p, struct policy_rule *r, check_distance_fn *dist)
{
	check_secrets_of(p, r, dist);
	if (r->deny)
		return;
	if (r->ninject > 0 && only_port_80(p, r))
		policy_diag_add(p, 1, r->file, r->line, r->col,
		    "inject can never apply: this rule allows only port 80, "
		    "and "
		    "credentials are never sent over plain HTTP");
	if (r->upstream_ca != NULL && !policy_rule_intercepts(r))
		policy_diag_add(p, 1, r->file, r->line, r->upstream_ca_col,
		    "upstream-ca has no effect: this rule does not intercept "
		    "(add paths, methods, inject or placeholder)");
	if (r->nupgrade > 0 && !policy_rule_constrained(r))
		policy_diag_add(p, 1, r->file, r->line, r->upgrade_col,
		    "upgrade has no effect: a rule without paths or methods "
		    "admits every upgrade");
	check_wide_blocks(p, r);
	check_shadowed(p, r);
}

static void
check_unused_secrets(struct policy *p)
{
	struct secret *s;
	const char *file;
	unsigned line, col;
	size_t i;

	for (i = 0; i < secret_store_count(policy_secrets(p)); i++) {
		s = secret_store_get(policy_secrets(p), i);
		if (secret_used(s))
			continue;
		policy_secret_where(p, i, &file, &line, &col);
		policy_diag_add(p, 1, file, line, col,
		    "secret '%s' is never used", secret_name(s));
	}
}

void
check_policy(struct policy *p, check_distance_fn *dist)
{
	size_t i;

	for (i = 0; i < policy_rule_count(p); i++)
		check_rule(p, policy_rule_edit(p, i), dist);
	check_placeholders(p);
	check_unused_secrets(p);
}
