/*
 * policy.c: the rule model and its accessors, and (for now) the second
 * pass and loading.  The index and decisions are in match.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <arpa/inet.h>

#define POLICY_INTERNAL
#include "common/ph_err.h"
#include "common/xmalloc.h"
#include "htab.h"
#include "match.h"
#include "parse.h"
#include "policy.h"

#define NONE MATCH_NONE

#define MAX_DIAGS 200

struct diag_item {
	int warning;
	const char *file;
	unsigned line, col;
	char *msg;
};

struct secret_loc {
	const char *file;
	unsigned line, col;
};

struct policy {
	char **files;
	size_t nfiles;
	struct policy_rule *rules;
	size_t nrules, caprules;
	struct rule_target *targets;
	size_t ntargets, captargets;
	struct secret_store *secrets;
	struct secret_loc *secret_locs;
	char *ca_cert, *ca_key; /* "ca" line, NULL: a run CA */
	const char *ca_file;
	unsigned ca_line;
	char *log_path;
	const char *log_file;
	unsigned log_line;
	unsigned timeout[POLICY_TIMEOUT_MAX];
	struct htab *resolve;
	struct target_host *resolved;
	size_t nresolved;
	/* The index: made and freed by match.c, which policy.c does not call. */
	struct match *index;
	void (*index_free)(struct match *);
	struct diag_item *diags;
	size_t ndiags, nerrors, nwarnings;
};

struct policy *
policy_new(void)
{
	struct policy *p = xcalloc(1, sizeof(*p));

	p->secrets = secret_store_new();
	p->timeout[POLICY_TIMEOUT_CONNECT] = 10 * 1000;
	p->timeout[POLICY_TIMEOUT_HEAD] = 30 * 1000;
	p->timeout[POLICY_TIMEOUT_IDLE] = 300 * 1000;
	p->resolve = htab_new();
	return p;
}

static void
rule_free(struct policy_rule *r)
{
	size_t i, k;

	for (i = 0; i < r->npaths; i++)
		free(r->paths[i]);
	for (i = 0; i < r->nmethods; i++)
		free(r->methods[i]);
	for (i = 0; i < r->ninject; i++) {
		free((char *)(uintptr_t)r->inject[i].header);
		free((char *)(uintptr_t)r->inject[i].user);
		free((char *)(uintptr_t)r->inject[i].secret_name);
	}
	for (i = 0; i < r->nplaceholder; i++) {
		free((char *)(uintptr_t)r->placeholder[i].env);
		free((char *)(uintptr_t)r->placeholder[i].secret_name);
		for (k = 0; k < r->placeholder[i].nheaders; k++)
			free((char *)(uintptr_t)r->placeholder[i].headers[k]);
	}
	for (i = 0; i < r->nupgrade; i++)
		free(r->upgrade[i]);
	free(r->upgrade);
	free(r->paths);
	free(r->methods);
	free(r->inject);
	free(r->placeholder);
	free(r->inject_loc);
	free(r->placeholder_loc);
	free(r->upstream_ca);
}

void
policy_free(struct policy *p)
{
	size_t i;

	if (p == NULL)
		return;
	for (i = 0; i < p->nrules; i++)
		rule_free(&p->rules[i]);
	for (i = 0; i < p->ntargets; i++) {
		free(p->targets[i].host);
		free(p->targets[i].ports);
	}
	for (i = 0; i < p->ndiags; i++)
		free(p->diags[i].msg);
	for (i = 0; i < p->nfiles; i++)
		free(p->files[i]);
	free(p->rules);
	free(p->targets);
	free(p->files);
	free(p->diags);
	free(p->secret_locs);
	free(p->log_path);
	free(p->ca_cert);
	free(p->ca_key);
	free(p->resolved);
	if (p->index_free != NULL)
		p->index_free(p->index);
	htab_free(p->resolve);
	secret_store_free(p->secrets);
	free(p);
}

void
policy_diag_add(struct policy *p, int warning, const char *file, unsigned line,
    unsigned col, const char *fmt, ...)
{
	struct diag_item *d;
	va_list ap;

	if (warning)
		p->nwarnings++;
	else
		p->nerrors++;
	if (p->ndiags == MAX_DIAGS)
		return; /* counted, not kept: policy_report says so */
	if ((p->ndiags & (p->ndiags - 1)) == 0)
		p->diags = xreallocarray(
		    p->diags, p->ndiags ? p->ndiags * 2 : 1, sizeof(*p->diags));
	d = &p->diags[p->ndiags++];
	d->warning = warning;
	d->file = file;
	d->line = line;
	d->col = col;
	va_start(ap, fmt);
	if (vasprintf(&d->msg, fmt, ap) < 0)
		d->msg = xstrdup("(message lost: out of memory)");
	va_end(ap);
}

/* Index of FILE among the files read (NULL: after all of them). */
static size_t
file_rank(const struct policy *p, const char *file)
{
	size_t i;

	for (i = 0; file != NULL && i < p->nfiles; i++)
		if (p->files[i] == file)
			return i;
	return p->nfiles;
}

/*
 * Second-pass findings come after the parse errors; sorting by place puts
 * every diagnostic in reading order.  Insertion sort: it is stable, and
 * there are at most MAX_DIAGS.
 */
static void
diags_sort(struct policy *p)
{
	struct diag_item d;
	size_t i, j, rank;

	for (i = 1; i < p->ndiags; i++) {
		d = p->diags[i];
		rank = file_rank(p, d.file);
		for (j = i; j > 0; j--) {
			const struct diag_item *o = &p->diags[j - 1];
			size_t orank = file_rank(p, o->file);

			if (orank < rank ||
			    (orank == rank &&
			        (o->line < d.line ||
			            (o->line == d.line && o->col <= d.col))))
				break;
			p->diags[j] = *o;
		}
		p->diags[j] = d;
	}
}

void
policy_report(const struct policy *p, policy_diag_fn *fn, void *arg)
{
	struct policy_diag d;
	size_t i, total = p->nerrors + p->nwarnings;

	for (i = 0; i < p->ndiags && fn != NULL; i++) {
		d.warning = p->diags[i].warning;
		d.file = p->diags[i].file;
		d.line = p->diags[i].line;
		d.col = p->diags[i].col;
		d.msg = p->diags[i].msg;
		fn(arg, &d);
	}
	if (total > p->ndiags && fn != NULL) {
		d.warning = p->nerrors == 0;
		d.file = NULL;
		d.line = d.col = 0;
		d.msg = "too many diagnostics; the rest are not shown";
		fn(arg, &d);
	}
}

size_t
policy_error_count(const struct policy *p)
{
	return p->nerrors;
}

size_t
policy_warning_count(const struct policy *p)
{
	return p->nwarnings;
}

const char *
policy_intern_file(struct policy *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->nfiles; i++)
		if (strcmp(p->files[i], name) == 0)
			return p->files[i];
	p->files = xreallocarray(p->files, p->nfiles + 1, sizeof(*p->files));
	p->files[p->nfiles] = xstrdup(name);
	return p->files[p->nfiles++];
}

struct policy_rule *
policy_rule_add(
    struct policy *p, int deny, const char *file, unsigned line, unsigned col)
{
	struct policy_rule *r;

	if (p->nrules == p->caprules) {
		p->caprules = p->caprules ? p->caprules * 2 : 16;
		p->rules =
		    xreallocarray(p->rules, p->caprules, sizeof(*p->rules));
	}
	r = &p->rules[p->nrules];
	memset(r, 0, sizeof(*r));
	r->deny = deny;
	r->file = file;
	r->line = line;
	r->col = col;
	r->index = p->nrules++;
	r->first_target = p->ntargets;
	return r;
}

struct rule_target *
policy_target_add(struct policy *p, struct policy_rule *r)
{
	struct rule_target *t;

	if (p->ntargets == p->captargets) {
		p->captargets = p->captargets ? p->captargets * 2 : 16;
		p->targets = xreallocarray(
		    p->targets, p->captargets, sizeof(*p->targets));
	}
	t = &p->targets[p->ntargets++];
	memset(t, 0, sizeof(*t));
	t->rule = r->index;
	r->ntargets++;
	return t;
}

int
policy_set_log(struct policy *p, const char *path, const char *file,
    unsigned line, unsigned col)
{
	if (p->log_path != NULL) {
		policy_diag_add(p, 0, file, line, col,
		    "log is already set at %s:%u", p->log_file, p->log_line);
		return PH_ERR_EXISTS;
	}
	p->log_path = xstrdup(path);
	p->log_file = file;
	p->log_line = line;
	return 0;
}

int
policy_set_ca(struct policy *p, const char *cert, const char *key,
    const char *file, unsigned line, unsigned col)
{
	if (p->ca_cert != NULL) {
		policy_diag_add(p, 0, file, line, col,
		    "ca is already set at %s:%u", p->ca_file, p->ca_line);
		return PH_ERR_EXISTS;
	}
	p->ca_cert = xstrdup(cert);
	p->ca_key = xstrdup(key);
	p->ca_file = file;
	p->ca_line = line;
	return 0;
}

int
policy_ca(const struct policy *p, const char **cert, const char **key)
{
	*cert = p->ca_cert;
	*key = p->ca_key;
	return p->ca_cert != NULL;
}

void
policy_set_timeout(struct policy *p, enum policy_timeout which, unsigned ms)
{
	p->timeout[which] = ms;
}

int
policy_resolve_add(struct policy *p, const char *host,
    const struct target_host *addrs, size_t n)
{
	size_t i;

	if (htab_find(p->resolve, host, strlen(host)) != NULL)
		return PH_ERR_EXISTS;
	p->resolved =
	    xreallocarray(p->resolved, p->nresolved + n, sizeof(*p->resolved));
	for (i = 0; i < n; i++) {
		p->resolved[p->nresolved] = addrs[i];
		htab_add(p->resolve, host, strlen(host), 0, p->nresolved++);
	}
	return 0;
}

int
policy_secret_define(struct policy *p, const char *name, enum secret_source src,
    const char *const *argv, size_t argc, const char *file, unsigned line,
    unsigned col, const char **prev_file, unsigned *prev_line)
{
	size_t i, n = secret_store_count(p->secrets);
	int r;

	if ((r = secret_store_define(p->secrets, name, src, argv, argc)) != 0) {
		for (i = 0; i < n; i++)
			if (strcmp(secret_name(secret_store_get(p->secrets, i)),
			        name) == 0) {
				*prev_file = p->secret_locs[i].file;
				*prev_line = p->secret_locs[i].line;
			}
		return r;
	}
	p->secret_locs =
	    xreallocarray(p->secret_locs, n + 1, sizeof(*p->secret_locs));
	p->secret_locs[n].file = file;
	p->secret_locs[n].line = line;
	p->secret_locs[n].col = col;
	return 0;
}

static int
has_placeholder(const struct policy_rule *r, const char *env)
{
	size_t i;

	for (i = 0; i < r->nplaceholder; i++)
		if (strcmp(r->placeholder[i].env, env) == 0)
			return 1;
	return 0;
}

static void
check_shadowed(struct policy *p, const struct policy_rule *r)
{
	uint32_t i, d, a, deny = NONE, allow = NONE, by_deny = 0;

	if (r->ntargets == 0)
		return; /* every target had an error */
	for (i = 0; i < r->ntargets; i++) {
		match_covering(p->index, &p->targets[r->first_target + i],
		    r->index, &d, &a);
		if (d == NONE && a == NONE)
			return;
		by_deny += d != NONE;
		if (deny == NONE)
			deny = d;
		if (allow == NONE)
			allow = a;
	}
	if (by_deny == r->ntargets)
		policy_diag_add(p, 1, r->file, r->line, r->col,
		    "this allow can never match: the deny at %s:%u covers it",
		    p->rules[deny].file, p->rules[deny].line);
	else
		policy_diag_add(p, 1, r->file, r->line, r->col,
		    "this allow never decides: the earlier allow at %s:%u "
		    "matches everything it matches (move it before that rule)",
		    p->rules[allow].file, p->rules[allow].line);
}

static int
only_port_80(const struct policy *p, const struct policy_rule *r)
{
	const struct rule_target *t;
	uint32_t i;

	for (i = 0; i < r->ntargets; i++) {
		t = &p->targets[r->first_target + i];
		if (t->nports != 1 || t->ports[0].lo != 80 ||
		    t->ports[0].hi != 80)
			return 0;
	}
	return 1;
}

static struct secret *
secret_ref(struct policy *p, const struct policy_rule *r,
    const struct policy_loc *loc, const char *name)
{
	struct secret *s;
	const char *best = NULL;
	unsigned d, bestd = 3;
	size_t i;

	if ((s = secret_store_find(p->secrets, name)) != NULL) {
		secret_mark_used(s);
		return s;
	}
	for (i = 0; i < secret_store_count(p->secrets); i++) {
		const char *n = secret_name(secret_store_get(p->secrets, i));

		if ((d = parse_distance(name, n)) < bestd) {
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
check_secrets_of(struct policy *p, struct policy_rule *r)
{
	size_t i;

	for (i = 0; i < r->ninject; i++)
		r->inject[i].secret = secret_ref(
		    p, r, &r->inject_loc[i], r->inject[i].secret_name);
	for (i = 0; i < r->nplaceholder; i++)
		r->placeholder[i].secret = secret_ref(p, r,
		    &r->placeholder_loc[i], r->placeholder[i].secret_name);
}

/* The first binding of ENV in rules before rule END, and its rule. */
static const struct policy_placeholder *
placeholder_before(
    const struct policy *p, size_t end, const char *env, size_t *rule)
{
	size_t i, k;

	for (i = 0; i < end; i++)
		for (k = 0; k < p->rules[i].nplaceholder; k++)
			if (strcmp(p->rules[i].placeholder[k].env, env) == 0) {
				*rule = i;
				return &p->rules[i].placeholder[k];
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

	for (i = 0; i < p->nrules; i++) {
		ra = &p->rules[i];
		for (k = 0; k < ra->nplaceholder; k++) {
			a = &ra->placeholder[k];
			if ((b = placeholder_before(p, i, a->env, &j)) ==
			        NULL ||
			    strcmp(a->secret_name, b->secret_name) == 0)
				continue;
			rb = &p->rules[j];
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
		t = &p->targets[r->first_target + i];
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
check_rule(struct policy *p, struct policy_rule *r)
{
	check_secrets_of(p, r);
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
	size_t i;

	for (i = 0; i < secret_store_count(p->secrets); i++) {
		s = secret_store_get(p->secrets, i);
		if (!secret_used(s))
			policy_diag_add(p, 1, p->secret_locs[i].file,
			    p->secret_locs[i].line, p->secret_locs[i].col,
			    "secret '%s' is never used", secret_name(s));
	}
}

size_t
policy_finish(struct policy *p)
{
	size_t i;

	policy_set_index(p, match_build(p), match_free);
	for (i = 0; i < p->nrules; i++)
		check_rule(p, &p->rules[i]);
	check_placeholders(p);
	check_unused_secrets(p);
	diags_sort(p);
	return p->nerrors;
}

/* --- loading and accessors --------------------------------------------- */

static int
load_finish(
    struct policy *p, policy_diag_fn *diag, void *arg, struct policy **out)
{
	policy_finish(p);
	policy_report(p, diag, arg);
	if (p->nerrors > 0) {
		policy_free(p);
		*out = NULL;
		return PH_ERR_POLICY;
	}
	*out = p;
	return 0;
}

int
policy_load(const char *const *files, size_t nfiles, policy_diag_fn *diag,
    void *arg, struct policy **out)
{
	struct policy *p = policy_new();
	struct parse_state *st = parse_state_new(p);
	size_t i;

	for (i = 0; i < nfiles; i++)
		parse_file(st, files[i]);
	parse_state_free(st);
	return load_finish(p, diag, arg, out);
}

int
policy_load_extra(const char *const *files, size_t nfiles, const char *name,
    const char *text, policy_diag_fn *diag, void *arg, struct policy **out)
{
	struct policy *p = policy_new();
	struct parse_state *st = parse_state_new(p);
	size_t i;

	for (i = 0; i < nfiles; i++)
		parse_file(st, files[i]);
	if (text != NULL)
		parse_buffer(st, name, text, strlen(text));
	parse_state_free(st);
	return load_finish(p, diag, arg, out);
}

int
policy_load_string(const char *file, const char *text, size_t len,
    policy_diag_fn *diag, void *arg, struct policy **out)
{
	struct policy *p = policy_new();
	struct parse_state *st = parse_state_new(p);

	parse_buffer(st, file, text, len);
	parse_state_free(st);
	return load_finish(p, diag, arg, out);
}

static void
target_text(const struct rule_target *t, char *buf, size_t len)
{
	char addr[INET6_ADDRSTRLEN];

	switch (t->kind) {
	case RT_ANY:
		snprintf(buf, len, "*");
		break;
	case RT_EXACT:
		snprintf(buf, len, "%s", t->host);
		break;
	case RT_WILD:
		snprintf(buf, len, "*.%s", t->host);
		break;
	case RT_CIDR:
		inet_ntop(t->family == 4 ? AF_INET : AF_INET6, t->addr, addr,
		    sizeof(addr));
		snprintf(buf, len, "%s/%u", addr, t->plen);
		break;
	}
}

void
policy_intercept_targets(
    const struct policy *p, void (*fn)(void *, const char *), void *arg)
{
	const struct policy_rule *r;
	char text[TARGET_HOST_MAX + 8];
	size_t i, k;

	for (i = 0; i < p->nrules; i++) {
		r = &p->rules[i];
		if (r->deny ? !policy_rule_constrained(r)
		            : !policy_rule_intercepts(r))
			continue;
		for (k = 0; k < r->ntargets; k++) {
			target_text(&p->targets[r->first_target + k], text,
			    sizeof(text));
			fn(arg, text);
		}
	}
}

void
policy_upstream_cas(
    const struct policy *p, void (*fn)(void *, const char *), void *arg)
{
	size_t i;

	for (i = 0; i < p->nrules; i++)
		if (p->rules[i].upstream_ca != NULL)
			fn(arg, p->rules[i].upstream_ca);
}

void
policy_placeholders(const struct policy *p,
    void (*fn)(void *, const struct policy_placeholder *), void *arg)
{
	const struct policy_rule *r;
	size_t i, k, j, seen;

	/* One ENV stands for one secret: report each ENV once. */
	for (i = 0; i < p->nrules; i++) {
		r = &p->rules[i];
		for (k = 0; k < r->nplaceholder; k++) {
			seen = 0;
			for (j = 0; j < i && !seen; j++)
				seen = has_placeholder(
				    &p->rules[j], r->placeholder[k].env);
			for (j = 0; j < k && !seen; j++)
				seen = strcmp(r->placeholder[j].env,
				           r->placeholder[k].env) == 0;
			if (!seen)
				fn(arg, &r->placeholder[k]);
		}
	}
}

size_t
policy_file_count(const struct policy *p)
{
	return p->nfiles;
}

const char *
policy_file_at(const struct policy *p, size_t i)
{
	return i < p->nfiles ? p->files[i] : NULL;
}

struct secret_store *
policy_secrets(const struct policy *p)
{
	return p->secrets;
}

const char *
policy_log_path(const struct policy *p)
{
	return p->log_path;
}

unsigned
policy_timeout(const struct policy *p, enum policy_timeout which)
{
	return which < POLICY_TIMEOUT_MAX ? p->timeout[which] : 0;
}

size_t
policy_resolve(const struct policy *p, const char *host,
    struct target_host *out, size_t max)
{
	const struct htab_list *l = htab_find(p->resolve, host, strlen(host));
	size_t i;

	if (l == NULL)
		return 0;
	for (i = 0; i < l[0].n && i < max; i++)
		out[i] = p->resolved[l[0].ids[i]];
	return l[0].n;
}

size_t
policy_rule_count(const struct policy *p)
{
	return p->nrules;
}

const struct policy_rule *
policy_rule_at(const struct policy *p, size_t i)
{
	return i < p->nrules ? &p->rules[i] : NULL;
}

const struct rule_target *
policy_target_at(const struct policy *p, size_t i)
{
	return i < p->ntargets ? &p->targets[i] : NULL;
}

size_t
policy_target_count(const struct policy *p)
{
	return p->ntargets;
}

void
policy_set_index(
    struct policy *p, struct match *m, void (*free_fn)(struct match *))
{
	if (p->index_free != NULL)
		p->index_free(p->index);
	p->index = m;
	p->index_free = free_fn;
}

const struct match *
policy_index(const struct policy *p)
{
	return p->index;
}
