/*
 * match.c: the policy index and decisions.
 *
 * Index: exact host names in one hash table, "*.suffix" rules in another
 * keyed by suffix (a name with k labels costs k-1 look-ups: the reversed
 * label trie, flattened), address blocks keyed by (family, prefix length,
 * network) for each prefix length in use, and "*" rules in a plain list.
 * A decision visits only the rules whose target can match the host, and
 * keeps the lowest rule index seen, so no sorting is needed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define POLICY_INTERNAL
#include "common/xmalloc.h"
#include "common/htab.h"
#include "match.h"
#include "policy.h"

/* The index lists of each key (see htab.h). */
enum {
	L_ALLOW, /* allow rules, in file order */
	L_DENY, /* deny rules */
	L_PLAIN, /* allow rules without paths/methods: they can shadow */
};

struct match {
	/* The policy's arrays: fixed once parsing is done. */
	const struct policy_rule *rules;
	const struct rule_target *targets;
	size_t ntargets;
	struct htab *exact, *wild, *cidr;
	struct htab_list any[HTAB_LISTS]; /* "*" targets */
	uint8_t plens[2][129]; /* prefix lengths in use, v4 and v6 */
	unsigned nplens[2];
};

/* Walks the index lists whose rules may match; see gather_host(). */
typedef void gather_fn(void *arg, const struct htab_list *);

/* Writes the decision's one-line reason; long host names are cut. */
static void reasonf(struct policy_decision *, const char *, ...)
    __attribute__((format(printf, 2, 3)));

static void
reasonf(struct policy_decision *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->reason, sizeof(d->reason), fmt, ap);
	va_end(ap);
}

/* --- matching ---------------------------------------------------------- */

int
policy_path_match(const char *pat, const char *path)
{
	const char *star = NULL, *resume = NULL;

	/* Greedy-free glob: on mismatch, let the last '*' eat one more byte. */
	while (*path != '\0') {
		if (*pat == '*') {
			star = ++pat;
			resume = path;
		} else if (*pat == *path) {
			pat++;
			path++;
		} else if (star != NULL) {
			pat = star;
			path = ++resume;
		} else
			return 0;
	}
	while (*pat == '*')
		pat++;
	return *pat == '\0';
}

static int
ports_contain(const struct rule_target *t, uint16_t port)
{
	size_t i;

	for (i = 0; i < t->nports; i++)
		if (port >= t->ports[i].lo && port <= t->ports[i].hi)
			return 1;
	return 0;
}

/* Are all of B's ports in A's?  Both lists are sorted and merged. */
static int
ports_superset(const struct rule_target *a, const struct rule_target *b)
{
	size_t i, j = 0;

	for (i = 0; i < b->nports; i++) {
		while (j < a->nports && a->ports[j].hi < b->ports[i].lo)
			j++;
		if (j == a->nports || a->ports[j].lo > b->ports[i].lo ||
		    a->ports[j].hi < b->ports[i].hi)
			return 0;
	}
	return 1;
}

static int
method_match(const struct policy_rule *r, const char *method)
{
	size_t i;

	if (r->nmethods == 0)
		return 1;
	for (i = 0; i < r->nmethods; i++)
		if (strcmp(r->methods[i], method) == 0)
			return 1;
	return 0;
}

static int
paths_match(const struct policy_rule *r, const char *path)
{
	size_t i;

	if (r->npaths == 0)
		return 1;
	for (i = 0; i < r->npaths; i++)
		if (policy_path_match(r->paths[i], path))
			return 1;
	return 0;
}

/*
 * Does rule R admit the upgrade UP (a comma-separated protocol list, or
 * NULL)?  Rules without paths or methods admit any, as they admit any
 * request; others only protocols they name, compared without case and
 * without a "/version".
 */
static int
upgrade_match(const struct policy_rule *r, const char *up)
{
	size_t i, n;
	int found;

	if (up == NULL || !policy_rule_constrained(r))
		return 1;
	if (up[strspn(up, " \t,")] == '\0')
		return 0; /* an empty Upgrade names nothing the rule names */
	for (;;) {
		up += strspn(up, " \t,");
		if (*up == '\0')
			return 1;
		n = strcspn(up, " \t,/");
		for (i = 0, found = 0; i < r->nupgrade && !found; i++)
			found = strlen(r->upgrade[i]) == n &&
			    strncasecmp(r->upgrade[i], up, n) == 0;
		up += n;
		up += strspn(up, " \t");
		/* "name", "name/version"; anything else is not understood. */
		if (!found || n == 0 || (*up != '/' && *up != ',' && *up))
			return 0;
		up += strcspn(up, ",");
	}
}

static void
cidr_key(
    uint8_t *key, size_t *len, int family, const uint8_t *addr, unsigned plen)
{
	size_t n = (plen + 7) / 8;

	key[0] = family;
	key[1] = plen;
	memcpy(key + 2, addr, n);
	if (plen % 8)
		key[1 + n] &= 0xff << (8 - plen % 8);
	*len = 2 + n;
}

/* Visits the lists of address rules whose block holds ADDR, up to MAXLEN. */
static void
gather_addr(const struct match *m, int family, const uint8_t *addr,
    unsigned maxlen, gather_fn *fn, void *arg)
{
	const struct htab_list *l;
	uint8_t key[18];
	size_t klen;
	unsigned i, f = family == 4 ? 0 : 1;

	for (i = 0; i < m->nplens[f]; i++) {
		if (m->plens[f][i] > maxlen)
			continue;
		cidr_key(key, &klen, family, addr, m->plens[f][i]);
		if ((l = htab_find(m->cidr, key, klen)) != NULL)
			fn(arg, l);
	}
}

/* Visits the wildcard lists of every proper suffix of NAME. */
static void
gather_suffixes(const struct match *m, const char *name, size_t len,
    gather_fn *fn, void *arg)
{
	const struct htab_list *l;
	size_t i;

	for (i = 0; i < len; i++) {
		if (name[i] != '.')
			continue;
		if ((l = htab_find(m->wild, name + i + 1, len - i - 1)) != NULL)
			fn(arg, l);
	}
}

static void
gather_any(const struct match *m, gather_fn *fn, void *arg)
{
	if (m->any[L_ALLOW].n > 0 || m->any[L_DENY].n > 0)
		fn(arg, m->any);
}

/* Visits every index list whose targets may match host H. */
static void
gather_host(const struct match *m, const struct target_host *h, gather_fn *fn,
    void *arg)
{
	const struct htab_list *l;

	if (h->kind == TARGET_NAME) {
		if ((l = htab_find(m->exact, h->name, h->len)) != NULL)
			fn(arg, l);
		gather_suffixes(m, h->name, h->len, fn, arg);
	} else
		gather_addr(m, h->kind == TARGET_V4 ? 4 : 6, h->addr,
		    h->kind == TARGET_V4 ? 32 : 128, fn, arg);
	gather_any(m, fn, arg);
}

struct cand {
	const struct match *m;
	const struct policy_request *req;
	uint32_t deny, allow, near_target, near_host;
	uint32_t allow_tid; /* the target through which ALLOW matched */
	int deny_constrained;
};

static void
consider_deny(struct cand *c, uint32_t tid)
{
	const struct rule_target *t = &c->m->targets[tid];
	const struct policy_rule *r = &c->m->rules[t->rule];
	const struct policy_request *q = c->req;

	if (r->index > c->deny || !ports_contain(t, q->port))
		return;
	if (q->method == NULL && policy_rule_constrained(r))
		c->deny_constrained = 1;
	else if (q->method == NULL ||
	    (method_match(r, q->method) && paths_match(r, q->path)))
		c->deny = r->index;
}

static void
consider_allow(struct cand *c, uint32_t tid)
{
	const struct rule_target *t = &c->m->targets[tid];
	const struct policy_rule *r = &c->m->rules[t->rule];
	const struct policy_request *q = c->req;

	if (r->index < c->near_host)
		c->near_host = r->index;
	if (!ports_contain(t, q->port))
		return;
	if (r->index < c->near_target)
		c->near_target = r->index;
	if (q->method == NULL ||
	    (method_match(r, q->method) && paths_match(r, q->path) &&
	        upgrade_match(r, q->upgrade))) {
		c->allow = r->index;
		c->allow_tid = tid;
	}
}

/*
 * Every deny of the key is seen; allows come in file order, so the scan
 * stops at the first rule not earlier than the best allow found so far.
 */
static void
consider_lists(void *arg, const struct htab_list *l)
{
	struct cand *c = arg;
	uint32_t i, tid;

	for (i = 0; i < l[L_DENY].n; i++)
		consider_deny(c, l[L_DENY].ids[i]);
	for (i = 0; i < l[L_ALLOW].n; i++) {
		tid = l[L_ALLOW].ids[i];
		if (c->m->targets[tid].rule >= c->allow)
			break;
		consider_allow(c, tid);
	}
}

static void
explain_miss(
    const struct match *m, const struct cand *c, struct policy_decision *d)
{
	const struct policy_request *q = c->req;
	const struct policy_rule *r;

	if (c->near_target != MATCH_NONE) {
		r = &m->rules[c->near_target];
		if (!method_match(r, q->method))
			reasonf(d, "method %s is not allowed by rule %s:%u",
			    q->method, r->file, r->line);
		else if (!paths_match(r, q->path))
			reasonf(d, "path %s is not allowed by rule %s:%u",
			    q->path, r->file, r->line);
		else
			reasonf(d,
			    "upgrade to '%.64s' is not allowed by rule %s:%u "
			    "(after a switch of protocols nothing is checked; "
			    "the rule must name it: upgrade PROTO)",
			    q->upgrade, r->file, r->line);
	} else if (c->near_host != MATCH_NONE) {
		r = &m->rules[c->near_host];
		reasonf(d, "port %u is not allowed for %s (rule %s:%u)",
		    q->port, q->host->name, r->file, r->line);
	} else
		reasonf(d,
		    q->host->kind == TARGET_V6 ? "no rule allows [%s]:%u"
		                               : "no rule allows %s:%u",
		    q->host->name, q->port);
}

static void
decide_allow(const struct policy_rule *r, const struct cand *c,
    struct policy_decision *d)
{
	int plain = c->req->method != NULL && !c->req->tls;

	d->rule = r;
	d->rule_file = r->file;
	d->rule_line = r->line;
	if (plain && r->ninject > 0) {
		reasonf(d,
		    "credentials are never sent over plain HTTP (rule %s:%u)",
		    r->file, r->line);
		return;
	}
	d->verdict = POLICY_ALLOW; /* no reason text: the rule says it */
	d->intercept = c->req->method == NULL &&
	    (policy_rule_intercepts(r) || c->deny_constrained);
	/* An address rule names the very address: private or not, it is meant. */
	d->allow_private =
	    r->private_ok || c->m->targets[c->allow_tid].kind == RT_CIDR;
	d->upstream_ca = r->upstream_ca;
	d->inject = r->inject;
	d->ninject = r->ninject;
	/* Stand-ins are swapped only inside TLS, never in plain HTTP. */
	d->placeholder = plain ? NULL : r->placeholder;
	d->nplaceholder = plain ? 0 : r->nplaceholder;
	d->upgrade = r->upgrade;
	d->nupgrade = r->nupgrade;
}

enum policy_verdict
policy_decide(const struct policy *p, const struct policy_request *req,
    struct policy_decision *d)
{
	const struct match *m = policy_index(p);
	struct cand c = {m, req, MATCH_NONE, MATCH_NONE, MATCH_NONE, MATCH_NONE,
	    MATCH_NONE, 0};
	const struct policy_rule *r;

	memset(d, 0, sizeof(*d));
	d->verdict = POLICY_DENY;
	gather_host(m, req->host, consider_lists, &c);
	if (c.deny != MATCH_NONE) {
		r = &m->rules[c.deny];
		d->rule = r;
		d->rule_file = r->file;
		d->rule_line = r->line;
		reasonf(d, "denied by rule %s:%u", r->file, r->line);
	} else if (c.allow == MATCH_NONE)
		explain_miss(m, &c, d);
	else
		decide_allow(&m->rules[c.allow], &c, d);
	return d->verdict;
}

/* --- names the DNS stub may answer ----------------------------------- */

/* The most index lists a name can hit: its own, one per proper suffix
 * (at most 126 dots in 253 bytes), and the "*" lists. */
#define HOST_LISTS 130

struct hit {
	const struct htab_list *l[HOST_LISTS];
	size_t n;
};

static void
collect(void *arg, const struct htab_list *l)
{
	struct hit *h = arg;

	if (h->n < HOST_LISTS)
		h->l[h->n++] = l;
}

/* Does a deny of H, without paths or methods, cover every port of T? */
static int
denied_on_all(
    const struct match *m, const struct hit *h, const struct rule_target *t)
{
	const struct rule_target *o;
	size_t i, j;

	for (i = 0; i < h->n; i++)
		for (j = 0; j < h->l[i][L_DENY].n; j++) {
			o = &m->targets[h->l[i][L_DENY].ids[j]];
			if (!policy_rule_constrained(&m->rules[o->rule]) &&
			    ports_superset(o, t))
				return 1;
		}
	return 0;
}

/*
 * An allow target of the name some of whose ports no single port-wide
 * deny takes back (a deny without ports covers them all): a CONNECT to
 * the name may then be allowed on some port.  A few look-ups, as for a
 * decision; a port taken back only by several denies together still
 * counts as allowed (the connection is then refused, as a CONNECT).
 */
int
policy_host_may_allow(const struct policy *p, const struct target_host *host)
{
	const struct match *m = policy_index(p);
	const struct htab_list *l;
	struct hit h;
	size_t i, j;
	int may = 0;

	if (host->kind != TARGET_NAME)
		return 0;
	h.n = 0;
	gather_host(m, host, collect, &h);
	for (i = 0; i < h.n && !may; i++) {
		l = &h.l[i][L_ALLOW];
		for (j = 0; j < l->n && !may; j++)
			may = !denied_on_all(m, &h, &m->targets[l->ids[j]]);
	}
	return may;
}

/* --- building --------------------------------------------------------- */

static void
plen_note(struct match *m, int family, unsigned plen)
{
	unsigned f = family == 4 ? 0 : 1, i;

	for (i = 0; i < m->nplens[f]; i++)
		if (m->plens[f][i] == plen)
			return;
	m->plens[f][m->nplens[f]++] = plen;
}

static void
list_push(struct htab_list *l, uint32_t id)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 4;
		l->ids = xreallocarray(l->ids, l->cap, sizeof(*l->ids));
	}
	l->ids[l->n++] = id;
}

/* Files target TID of rule R under KEY in TAB (or the "*" lists). */
static void
index_add(struct match *m, struct htab *tab, const void *key, size_t len,
    const struct policy_rule *r, uint32_t tid)
{
	unsigned which[2] = {r->deny ? L_DENY : L_ALLOW, L_PLAIN};
	unsigned i, n = !r->deny && !policy_rule_constrained(r) ? 2 : 1;

	for (i = 0; i < n; i++) {
		if (tab == NULL)
			list_push(&m->any[which[i]], tid);
		else
			htab_add(tab, key, len, which[i], tid);
	}
}

/* Targets are in file order, so every list comes out sorted by rule. */
static void
index_build(struct match *m)
{
	const struct rule_target *t;
	const struct policy_rule *r;
	uint8_t key[18];
	size_t i, klen;

	for (i = 0; i < m->ntargets; i++) {
		t = &m->targets[i];
		r = &m->rules[t->rule];
		switch (t->kind) {
		case RT_ANY:
			index_add(m, NULL, NULL, 0, r, i);
			break;
		case RT_EXACT:
			index_add(m, m->exact, t->host, strlen(t->host), r, i);
			break;
		case RT_WILD:
			index_add(m, m->wild, t->host, strlen(t->host), r, i);
			break;
		case RT_CIDR:
			cidr_key(key, &klen, t->family, t->addr, t->plen);
			index_add(m, m->cidr, key, klen, r, i);
			plen_note(m, t->family, t->plen);
			break;
		}
	}
}

/* --- covering, for the second pass ------------------------------------ */

/* Visits the lists whose targets cover every host that T covers. */
static void
gather_covering(const struct match *m, const struct rule_target *t,
    gather_fn *fn, void *arg)
{
	const struct htab_list *l;
	const char *h = t->host;

	switch (t->kind) {
	case RT_EXACT:
	case RT_WILD:
		l = htab_find(
		    t->kind == RT_EXACT ? m->exact : m->wild, h, strlen(h));
		if (l != NULL)
			fn(arg, l);
		gather_suffixes(m, h, strlen(h), fn, arg);
		break;
	case RT_CIDR:
		gather_addr(m, t->family, t->addr, t->plen, fn, arg);
		break;
	case RT_ANY:
		break;
	}
	gather_any(m, fn, arg);
}

struct cover {
	const struct match *m;
	const struct rule_target *t;
	uint32_t self, deny, allow;
};

/* Looks for a deny, or an earlier plain allow, covering target C->T. */
static void
cover_lists(void *arg, const struct htab_list *l)
{
	struct cover *c = arg;
	const struct rule_target *o;
	const struct policy_rule *r;
	uint32_t i;

	for (i = 0; i < l[L_DENY].n; i++) {
		o = &c->m->targets[l[L_DENY].ids[i]];
		r = &c->m->rules[o->rule];
		if (!policy_rule_constrained(r) && r->index < c->deny &&
		    ports_superset(o, c->t))
			c->deny = r->index;
	}
	for (i = 0; i < l[L_PLAIN].n; i++) {
		o = &c->m->targets[l[L_PLAIN].ids[i]];
		if (o->rule >= c->self || o->rule >= c->allow)
			break;
		if (ports_superset(o, c->t))
			c->allow = o->rule;
	}
}

struct match *
match_build(const struct policy *p)
{
	struct match *m = xcalloc(1, sizeof(*m));

	m->rules = policy_rule_at(p, 0);
	m->targets = policy_target_at(p, 0);
	m->ntargets = policy_target_count(p);
	m->exact = htab_new();
	m->wild = htab_new();
	m->cidr = htab_new();
	index_build(m);
	return m;
}

void
match_free(struct match *m)
{
	size_t i;

	if (m == NULL)
		return;
	for (i = 0; i < HTAB_LISTS; i++)
		free(m->any[i].ids);
	htab_free(m->exact);
	htab_free(m->wild);
	htab_free(m->cidr);
	free(m);
}

void
match_covering(const struct match *m, const struct rule_target *t,
    uint32_t self, uint32_t *deny, uint32_t *allow)
{
	struct cover c = {m, t, self, MATCH_NONE, MATCH_NONE};

	gather_covering(m, t, cover_lists, &c);
	*deny = c.deny;
	*allow = c.allow;
}
