/*
 * check.c: the second pass over a parsed policy (relayd's load_config
 * checks): secret references resolved, rules that can never match or
 * never decide, settings without effect, address blocks that take in
 * loopback or the metadata service, one secret per placeholder, unused
 * secrets, request options on ports that carry no HTTP, the broker
 * blocks' references.  Findings go to the policy's diagnostics.
 */
#include <arpa/inet.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLICY_INTERNAL
#include "check.h"
#include "grant.h"
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

/*
 * Well-known ports whose protocol is not HTTP (sorted by port, for
 * bsearch).  A connection there is an opaque tunnel: pinhole sees no
 * request, so paths, methods, inject, placeholder and upgrade cannot
 * apply, and a rule that needs requests makes its connections fail
 * (they are neither TLS nor HTTP to look into).  Kept to ports where
 * nothing else is commonly spoken.
 */
static const struct plain_port {
	uint16_t port;
	const char *proto;
} plain_ports[] = {
    {22, "ssh"},
    {23, "telnet"},
    {25, "smtp"},
    {53, "dns"},
    {110, "pop3"},
    {143, "imap"},
    {389, "ldap"},
    {465, "smtps"},
    {587, "smtp"},
    {636, "ldaps"},
    {993, "imaps"},
    {995, "pop3s"},
    {1433, "mssql"},
    {1521, "oracle"},
    {3306, "mysql"},
    {5432, "postgresql"},
    {5672, "amqp"},
    {6379, "redis"},
    {9418, "git"},
    {11211, "memcached"},
    {27017, "mongodb"},
};

#define PLAIN_LIST_MAX 4 /* ports named in one message */

static int
cmp_plain(const void *key, const void *elt)
{
	const struct plain_port *e = elt;

	return (int)*(const uint16_t *)key - (int)e->port;
}

const char *
check_port_protocol(uint16_t port)
{
	const struct plain_port *e;

	e = bsearch(&port, plain_ports, sizeof(plain_ports) / sizeof(*e),
	    sizeof(*e), cmp_plain);
	return e != NULL ? e->proto : NULL;
}

/* Does every port of R carry a protocol other than HTTP? */
static int
range_plain(const struct port_range *r)
{
	unsigned p;

	for (p = r->lo; p <= r->hi; p++)
		if (check_port_protocol((uint16_t)p) == NULL)
			return 0;
	return 1;
}

/* The rule's non-HTTP ports, and whether it names any other port. */
struct plain_scan {
	uint16_t ports[PLAIN_LIST_MAX];
	size_t nports; /* distinct, at most PLAIN_LIST_MAX kept */
	int more; /* more distinct ones than kept */
	int other; /* some port may carry HTTP */
	const struct rule_target *first; /* the first target with one */
	uint16_t first_port;
};

static void
plain_note(struct plain_scan *sc, const struct rule_target *t, uint16_t port)
{
	size_t i;

	if (sc->first == NULL) {
		sc->first = t;
		sc->first_port = port;
	}
	for (i = 0; i < sc->nports; i++)
		if (sc->ports[i] == port)
			return;
	if (sc->nports == PLAIN_LIST_MAX) {
		sc->more = 1;
		return;
	}
	for (i = sc->nports++; i > 0 && sc->ports[i - 1] > port; i--)
		sc->ports[i] = sc->ports[i - 1];
	sc->ports[i] = port;
}

static void
scan_plain(
    const struct policy *p, const struct policy_rule *r, struct plain_scan *sc)
{
	const struct rule_target *t;
	size_t i, k;
	unsigned port;

	memset(sc, 0, sizeof(*sc));
	for (i = 0; i < r->ntargets; i++) {
		t = policy_target_at(p, r->first_target + i);
		for (k = 0; k < t->nports; k++) {
			if (!range_plain(&t->ports[k])) {
				sc->other = 1;
				continue;
			}
			for (port = t->ports[k].lo; port <= t->ports[k].hi;
			     port++)
				plain_note(sc, t, (uint16_t)port);
		}
	}
}

/* "github.com:22", "*.example.com:22", "10.0.0.0/8:5432" into BUF. */
static void
target_text(const struct rule_target *t, uint16_t port, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	switch (t->kind) {
	case RT_ANY:
		snprintf(buf, len, "*:%u", port);
		break;
	case RT_EXACT:
		snprintf(buf, len, "%s:%u", t->host, port);
		break;
	case RT_WILD:
		snprintf(buf, len, "*.%s:%u", t->host, port);
		break;
	case RT_CIDR:
		inet_ntop(
		    t->family == 4 ? AF_INET : AF_INET6, t->addr, a, sizeof(a));
		if (t->plen == (t->family == 4 ? 32u : 128u))
			snprintf(buf, len, t->family == 4 ? "%s:%u" : "[%s]:%u",
			    a, port);
		else
			snprintf(buf, len,
			    t->family == 4 ? "%s/%u:%u" : "[%s]/%u:%u", a,
			    t->plen, port);
		break;
	}
}

/* Appends WORD to a list "a, b and c" of N words so far. */
static void
list_add(char *buf, size_t len, size_t n, int last, const char *word)
{
	size_t used = strlen(buf);

	snprintf(buf + used, len - used, "%s%s",
	    n == 0     ? ""
	        : last ? " and "
	               : ", ",
	    word);
}

/*
 * "port 22 carries ssh, not HTTP" or "ports 22 (ssh) and 3306 (mysql)
 * carry no HTTP".
 */
static void
ports_text(const struct plain_scan *sc, char *buf, size_t len)
{
	char one[32];
	size_t i, used;

	if (sc->nports == 1 && !sc->more) {
		snprintf(buf, len, "port %u carries %s, not HTTP", sc->ports[0],
		    check_port_protocol(sc->ports[0]));
		return;
	}
	snprintf(buf, len, "ports ");
	for (i = 0; i < sc->nports; i++) {
		snprintf(one, sizeof(one), "%u (%s)", sc->ports[i],
		    check_port_protocol(sc->ports[i]));
		list_add(buf, len, i, i + 1 == sc->nports && !sc->more, one);
	}
	used = strlen(buf);
	snprintf(buf + used, len - used, "%s carry no HTTP",
	    sc->more ? " and more" : "");
}

/* The request options R has: "paths and inject". */
static size_t
request_options(const struct policy_rule *r, char *buf, size_t len)
{
	const char *names[5];
	size_t n = 0, i;

	if (r->npaths > 0)
		names[n++] = "paths";
	if (r->nmethods > 0)
		names[n++] = "methods";
	if (r->ninject > 0)
		names[n++] = "inject";
	if (r->nplaceholder > 0)
		names[n++] = "placeholder";
	if (r->nupgrade > 0)
		names[n++] = "upgrade";
	buf[0] = '\0';
	for (i = 0; i < n; i++)
		list_add(buf, len, i, i + 1 == n, names[i]);
	return n;
}

/*
 * Options that need requests on ports that carry none: an error, also
 * when the rule names HTTP ports besides (its connections to the other
 * port would fail waiting for TLS or HTTP that never comes, and the fix,
 * a rule of its own, is one line).
 */
static void
check_plain_ports(struct policy *p, const struct policy_rule *r)
{
	struct plain_scan sc;
	char opts[64], ports[160], target[300];
	const char *whole =
	    r->deny ? "(the whole port denied)" : "(an opaque tunnel)";

	if (request_options(r, opts, sizeof(opts)) == 0)
		return;
	scan_plain(p, r, &sc);
	if (sc.first == NULL)
		return;
	ports_text(&sc, ports, sizeof(ports));
	target_text(sc.first, sc.first_port, target, sizeof(target));
	if (!sc.other)
		policy_diag_add(p, 0, r->file, r->line, sc.first->col,
		    "%s: %s: pinhole cannot see requests there, "
		    "so %s cannot apply; %s it without them %s",
		    target, ports, opts, r->deny ? "deny" : "allow", whole);
	else
		policy_diag_add(p, 0, r->file, r->line, sc.first->col,
		    "%s: %s: pinhole cannot see requests there, "
		    "so %s cannot apply there (and its connections would "
		    "fail under this rule); move %s to a rule of its own "
		    "without them %s",
		    target, ports, opts,
		    sc.nports == 1 && !sc.more ? "that port" : "those ports",
		    whole);
}

static void
check_rule(struct policy *p, struct policy_rule *r, check_distance_fn *dist)
{
	check_secrets_of(p, r, dist);
	check_plain_ports(p, r);
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

/* The closest of the policy names, or NULL. */
static const char *
closest_policy(
    const struct grant_set *g, const char *name, check_distance_fn *dist)
{
	const char *best = NULL;
	unsigned d, bestd = 3;
	size_t i;

	for (i = 0; i < grant_count(g); i++)
		if ((d = dist(name, grant_name(g, i))) < bestd) {
			bestd = d;
			best = grant_name(g, i);
		}
	return best;
}

/*
 * The broker blocks (grant.h): policies named but never defined, logins
 * naming no secret (a login uses its secret: never "unused"), and rules,
 * which a broker's configuration does not use.
 */
static void
check_grants(struct policy *p, check_distance_fn *dist)
{
	const struct grant_set *g = policy_grants(p);
	const struct grant_ref *ref;
	const struct policy_rule *r;
	const char *user, *best;
	struct secret *s;
	size_t i;

	if (g == NULL)
		return;
	for (i = 0; i < grant_ref_count(g); i++) {
		ref = grant_ref_at(g, i);
		if (ref->defines || grant_find(g, ref->name) >= 0)
			continue;
		if ((best = closest_policy(g, ref->name, dist)) != NULL)
			policy_diag_add(p, 0, ref->file, ref->line, ref->col,
			    "policy '%s' is not defined; did you mean '%s'?",
			    ref->name, best);
		else
			policy_diag_add(p, 0, ref->file, ref->line, ref->col,
			    "policy '%s' is not defined: give its files in one "
			    "block ('policy %s FILE...')",
			    ref->name, ref->name);
	}
	for (i = 0; i < grant_login_count(g); i++) {
		ref = grant_login_at(g, i, &user);
		if ((s = secret_store_find(policy_secrets(p), ref->name)) !=
		    NULL)
			secret_mark_used(s);
		else
			policy_diag_add(p, 0, ref->file, ref->line, ref->col,
			    "login %s: undefined secret '%s'; define it with "
			    "'secret %s file PATH' (or env, exec)",
			    user, ref->name, ref->name);
	}
	if (policy_rule_count(p) > 0) {
		r = policy_rule_at(p, 0);
		policy_diag_add(p, 0, r->file, r->line, r->col,
		    "a broker configuration grants policies; rules go in the "
		    "policy files");
	}
}

void
check_policy(struct policy *p, check_distance_fn *dist)
{
	size_t i;

	for (i = 0; i < policy_rule_count(p); i++)
		check_rule(p, policy_rule_edit(p, i), dist);
	check_placeholders(p);
	check_grants(p, dist);
	check_unused_secrets(p);
}
