/*
 * policy.c: the rule model and its accessors.  It calls nothing of its
 * neighbours: parse.c fills it and loads it (index from match.c, second
 * pass from check.c), match.c answers policy_decide().
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define POLICY_INTERNAL
#include "common/ph_err.h"
#include "common/xmalloc.h"
#include "common/htab.h"
#include "policy/grant.h"
#include "policy.h"

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
	struct policy_trust *trust; /* "trust FILE" lines, in order */
	size_t ntrust;
	unsigned timeout[POLICY_TIMEOUT_MAX];
	struct htab *resolve;
	struct target_host *resolved;
	size_t nresolved;
	/* The index: made and freed by match.c, which policy.c does not call. */
	struct match *index;
	void (*index_free)(struct match *);
	struct diag_item *diags;
	size_t ndiags, nerrors, nwarnings;
	struct grant_set *grants; /* broker blocks (grant.h); NULL: none */
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
	grant_set_free(p->grants);
	free(p->rules);
	free(p->targets);
	free(p->files);
	free(p->diags);
	free(p->secret_locs);
	free(p->log_path);
	free(p->ca_cert);
	free(p->ca_key);
	for (i = 0; i < p->ntrust; i++)
		free(p->trust[i].path);
	free(p->trust);
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
void
policy_diag_sort(struct policy *p)
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

void
policy_trust_add(struct policy *p, const char *path, const char *file,
    unsigned line, unsigned col)
{
	struct policy_trust *t;

	p->trust = xreallocarray(p->trust, p->ntrust + 1, sizeof(*p->trust));
	t = &p->trust[p->ntrust++];
	t->path = xstrdup(path);
	t->file = file;
	t->line = line;
	t->col = col;
}

const struct policy_trust *
policy_trust_at(const struct policy *p, size_t i)
{
	return i < p->ntrust ? &p->trust[i] : NULL;
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
rule_pattern(const struct rule_target *t, struct target_pattern *out)
{
	static const enum target_pattern_kind kinds[] = {
	    [RT_ANY] = TARGET_PATTERN_ANY,
	    [RT_EXACT] = TARGET_PATTERN_NAME,
	    [RT_WILD] = TARGET_PATTERN_WILD,
	};

	if (t->kind == RT_CIDR) {
		target_pattern_block(out, t->family, t->addr, t->plen);
		return;
	}
	memset(out, 0, sizeof(*out));
	out->kind = kinds[t->kind];
	out->name = t->host;
}

void
policy_intercept_targets(const struct policy *p,
    void (*fn)(void *, const struct target_pattern *), void *arg)
{
	const struct policy_rule *r;
	struct target_pattern pat;
	size_t i, k;

	for (i = 0; i < p->nrules; i++) {
		r = &p->rules[i];
		if (r->deny ? !policy_rule_constrained(r)
		            : !policy_rule_intercepts(r))
			continue;
		for (k = 0; k < r->ntargets; k++) {
			rule_pattern(&p->targets[r->first_target + k], &pat);
			fn(arg, &pat);
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

struct policy_rule *
policy_rule_edit(struct policy *p, size_t i)
{
	return i < p->nrules ? &p->rules[i] : NULL;
}

void
policy_secret_where(const struct policy *p, size_t i, const char **file,
    unsigned *line, unsigned *col)
{
	*file = p->secret_locs[i].file;
	*line = p->secret_locs[i].line;
	*col = p->secret_locs[i].col;
}

/* Marks ports LO..HI in the bit set SET (65536 bits). */
static void
mark_ports(uint8_t *set, unsigned lo, unsigned hi)
{
	unsigned p;

	for (p = lo; p <= hi; p++)
		set[p >> 3] |= (uint8_t)(1u << (p & 7));
}

static int
port_marked(const uint8_t *set, unsigned p)
{
	return (set[p >> 3] >> (p & 7)) & 1;
}

/*
 * One listener per port inside the sandbox: a range as wide as "*" would
 * be 65535 of them, so long ranges are left to the proxy variables.
 */
size_t
policy_capture_ports(
    const struct policy *p, uint16_t *ports, size_t max, size_t *skipped)
{
	uint8_t take[65536 / 8], wide[65536 / 8];
	const struct rule_target *t;
	size_t i, k, n = 0;
	unsigned port;

	memset(take, 0, sizeof(take));
	memset(wide, 0, sizeof(wide));
	mark_ports(take, 80, 80);
	mark_ports(take, 443, 443);
	for (i = 0; i < p->ntargets; i++) {
		t = &p->targets[i];
		if (p->rules[t->rule].deny)
			continue;
		for (k = 0; k < t->nports; k++)
			mark_ports(t->ports[k].hi - t->ports[k].lo + 1u >
			            POLICY_CAPTURE_RANGE_MAX
			        ? wide
			        : take,
			    t->ports[k].lo, t->ports[k].hi);
	}
	*skipped = 0;
	for (port = 1; port <= 65535; port++) {
		if (port_marked(take, port)) {
			if (n < max)
				ports[n++] = (uint16_t)port;
		} else if (port_marked(wide, port))
			(*skipped)++;
	}
	return n;
}

const struct grant_set *
policy_grants(const struct policy *p)
{
	return p->grants;
}

struct grant_set *
policy_grants_edit(struct policy *p)
{
	if (p->grants == NULL)
		p->grants = grant_set_new();
	return p->grants;
}
