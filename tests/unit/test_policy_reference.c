/*
 * test_policy_reference.c: the policy matcher against a naive reference.
 *
 * As OpenSSH's match tests, the indexed matcher of policy/policy.c is
 * checked against a version written plainly here: a linear scan over the
 * rules in file order.  Random policies are generated as text from a small
 * universe of names, wildcards, address blocks, ports, paths and methods,
 * so that rules overlap and collide; each is loaded with
 * policy_load_string() and asked random requests, in the tunnel phase and
 * in the request phase, whose answers must equal the reference's: verdict,
 * deciding line, interception, "private" and injection.  The generator is
 * a fixed-seed xorshift, so a failure repeats; it prints the policy and
 * the request.  A table of hand-written cases covers the corners.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "common/ph_err.h"
#include "policy/policy.h"
#include "policy/target.h"

#define NPOLICIES 200
#define NREQUESTS 500
#define MAXRULES 24
#define MAXTARGETS 3
#define MAXPORTS 4
#define MAXPATHS 3
#define MAXMETHODS 3
#define TEXTMAX 16384
#define SECRET_LINE "secret s1 env PH_TEST_SECRET\n"
#define FILENAME "ref.conf"

/* --- the reference model ------------------------------------------------ */

struct rng {
	uint64_t s;
};

enum ref_kind {
	REF_ANY,
	REF_EXACT,
	REF_WILD,
	REF_CIDR,
};

struct ref_ports {
	uint16_t lo, hi;
};

/* A request host as the reference sees it: family 0 is a name. */
struct ref_host {
	int family;
	char name[TARGET_HOST_MAX];
	uint8_t addr[16];
};

struct ref_target {
	enum ref_kind kind;
	char host[64]; /* EXACT name, WILD suffix; lower case */
	int family; /* CIDR: 4 or 6 */
	uint8_t addr[16];
	unsigned plen;
	struct ref_ports ports[MAXPORTS];
	size_t nports;
};

struct ref_rule {
	int deny;
	unsigned line;
	struct ref_target t[MAXTARGETS];
	size_t nt;
	const char *paths[MAXPATHS];
	size_t npaths;
	const char *methods[MAXMETHODS];
	size_t nmethods;
	int inject, placeholder, private_ok;
	int upgrade_ws; /* "upgrade websocket" */
};

struct ref_policy {
	struct ref_rule r[MAXRULES];
	size_t n;
	char text[TEXTMAX];
	size_t len;
	unsigned line; /* line being written */
};

struct ref_request {
	char text[96]; /* the host as given to target_host_parse */
	struct ref_host h;
	uint16_t port;
	const char *method; /* NULL: tunnel phase */
	const char *path;
	const char *upgrade; /* request phase: Upgrade list, or NULL */
	int tls;
};

struct ref_decision {
	int allow;
	unsigned line; /* 0: default deny */
	int intercept;
	int private_ok;
	int inject;
	int placeholder;
};

/* Rule host names, and request names that no rule names. */
static const char *const rule_names[] = {
    "example.com",
    "a.example.com",
    "b.a.example.com",
    "c.example.com",
    "x.test",
    "y.x.test",
    "example.org",
};
static const char *const rule_suffixes[] = {
    "example.com",
    "a.example.com",
    "test",
    "x.test",
    "com",
    "org",
};
static const char *const other_names[] = {
    "deep.b.a.example.com",
    "test",
    "com",
    "org",
    "aexample.com",
    "example.com.evil",
    "notin.net",
    "z.y.x.test",
    "xtest",
};

/*
 * Port specifications: text and ranges; "" is the default.  2222, not 22:
 * request options on a well-known non-HTTP port are an error (check.c).
 */
struct port_spec {
	const char *text;
	struct ref_ports r[MAXPORTS];
	size_t n;
};

static const struct port_spec port_specs[] = {
    {"", {{0, 0}}, 0},
    {"80", {{80, 80}}, 1},
    {"443", {{443, 443}}, 1},
    {"8080", {{8080, 8080}}, 1},
    {"2222", {{2222, 2222}}, 1},
    {"1-1024", {{1, 1024}}, 1},
    {"80,8080", {{80, 80}, {8080, 8080}}, 2},
    {"443,2222", {{443, 443}, {2222, 2222}}, 2},
    {"*", {{1, 65535}}, 1},
    {"1-79,81-1024,8080", {{1, 79}, {81, 1024}, {8080, 8080}}, 3},
};

static const uint16_t req_ports[] = {
    80, 443, 8080, 2222, 1, 79, 81, 1024, 1025, 65535};

static const char *const rule_paths[] = {
    "/a/*", "/a/b", "/*/b", "/a*", "/*", "/x/*/y", "/a/b/*/c*", "/", "/b*"};
static const char *const req_paths[] = {"/", "/a", "/a/", "/a/b", "/a/b/c",
    "/a/b/z/c", "/a/b/z/cd", "/ab", "/b", "/b/b", "/x/y", "/x/1/y", "/x/1/2/y",
    "/xy"};
static const char *const req_upgrades[] = {"websocket", "WEBSOCKET",
    "websocket/13", "h2c", "websocket, h2c", " websocket ,websocket", "",
    "HTTP/2.0"};
static const char *const rule_methods[] = {
    "GET", "POST", "PUT", "DELETE", "get"};
static const char *const req_methods[] = {
    "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static uint64_t
rng_next(struct rng *g)
{
	g->s ^= g->s >> 12;
	g->s ^= g->s << 25;
	g->s ^= g->s >> 27;
	return g->s * 0x2545F4914F6CDD1DULL;
}

static unsigned
rnd(struct rng *g, unsigned n)
{
	return (unsigned)((rng_next(g) >> 11) % n);
}

static int
chance(struct rng *g, unsigned percent)
{
	return rnd(g, 100) < percent;
}

static int
bit(const uint8_t *a, unsigned i)
{
	return (a[i / 8] >> (7 - i % 8)) & 1;
}

static int
prefix_equal(const uint8_t *a, const uint8_t *b, unsigned plen)
{
	unsigned i;

	for (i = 0; i < plen; i++)
		if (bit(a, i) != bit(b, i))
			return 0;
	return 1;
}

static void
mask(uint8_t *a, unsigned plen, unsigned bits)
{
	unsigned i;

	for (i = plen; i < bits; i++)
		a[i / 8] &= ~(0x80 >> (i % 8));
}

static int
ref_host_match(const struct ref_target *t, const struct ref_host *h)
{
	size_t n, sl;

	switch (t->kind) {
	case REF_ANY:
		return 1;
	case REF_EXACT:
		return h->family == 0 && strcmp(t->host, h->name) == 0;
	case REF_WILD:
		n = strlen(h->name);
		sl = strlen(t->host);
		return h->family == 0 && n > sl + 1 &&
		    h->name[n - sl - 1] == '.' &&
		    strcmp(h->name + n - sl, t->host) == 0;
	case REF_CIDR:
		return h->family == t->family &&
		    prefix_equal(t->addr, h->addr, t->plen);
	}
	return 0;
}

static int
ref_port_match(const struct ref_target *t, uint16_t port)
{
	size_t i;

	for (i = 0; i < t->nports; i++)
		if (port >= t->ports[i].lo && port <= t->ports[i].hi)
			return 1;
	return 0;
}

/* Plain recursive glob: '*' matches any run, '/' included. */
static int
ref_glob(const char *p, const char *s)
{
	if (*p == '\0')
		return *s == '\0';
	if (*p == '*')
		return ref_glob(p + 1, s) || (*s != '\0' && ref_glob(p, s + 1));
	return *s == *p && ref_glob(p + 1, s + 1);
}

static int
ref_rule_target_match(const struct ref_rule *r, const struct ref_request *q)
{
	size_t i;

	for (i = 0; i < r->nt; i++)
		if (ref_host_match(&r->t[i], &q->h) &&
		    ref_port_match(&r->t[i], q->port))
			return 1;
	return 0;
}

/* Does a CIDR target of R name the request's address (and port)? */
static int
ref_names_address(const struct ref_rule *r, const struct ref_request *q)
{
	size_t i;

	for (i = 0; i < r->nt; i++)
		if (r->t[i].kind == REF_CIDR &&
		    ref_host_match(&r->t[i], &q->h) &&
		    ref_port_match(&r->t[i], q->port))
			return 1;
	return 0;
}

/* Do the rule's paths and methods (if any) admit the request? */
static int
ref_rule_fits(const struct ref_rule *r, const struct ref_request *q)
{
	size_t i;
	int ok;

	for (i = 0, ok = r->nmethods == 0; i < r->nmethods; i++)
		ok |= strcmp(r->methods[i], q->method) == 0;
	if (!ok)
		return 0;
	for (i = 0, ok = r->npaths == 0; i < r->npaths; i++)
		ok |= ref_glob(r->paths[i], q->path);
	return ok;
}

/*
 * Does allow rule R admit the upgrade the request asks for?  Rules with
 * paths or methods admit only what "upgrade" names (here websocket, any
 * case, with or without a version); the others everything.
 */
static int
ref_upgrade_ok(const struct ref_rule *r, const struct ref_request *q)
{
	char list[64], *p, *save = NULL, *slash;
	size_t n = 0;

	if (q->upgrade == NULL || (r->npaths == 0 && r->nmethods == 0))
		return 1;
	snprintf(list, sizeof(list), "%s", q->upgrade);
	for (p = strtok_r(list, ",", &save); p != NULL;
	     p = strtok_r(NULL, ",", &save)) {
		p += strspn(p, " ");
		if ((slash = strchr(p, '/')) != NULL)
			*slash = '\0';
		p[strcspn(p, " ")] = '\0';
		if (*p == '\0')
			continue;
		if (!r->upgrade_ws || strcasecmp(p, "websocket") != 0)
			return 0;
		n++;
	}
	return n > 0;
}

/* The semantics of policy.h, as a scan in file order. */
static void
ref_decide(const struct ref_policy *rp, const struct ref_request *q,
    struct ref_decision *d)
{
	const struct ref_rule *r, *deny = NULL, *allow = NULL;
	int tunnel = q->method == NULL, constrained, deny_constrained = 0;
	int plain = !tunnel && !q->tls;
	size_t i;

	memset(d, 0, sizeof(*d));
	for (i = 0; i < rp->n; i++) {
		r = &rp->r[i];
		if (!ref_rule_target_match(r, q))
			continue;
		constrained = r->npaths > 0 || r->nmethods > 0;
		if (r->deny && tunnel && constrained)
			deny_constrained = 1;
		else if (r->deny && deny == NULL &&
		    (tunnel || ref_rule_fits(r, q)))
			deny = r;
		else if (!r->deny && allow == NULL &&
		    (tunnel || (ref_rule_fits(r, q) && ref_upgrade_ok(r, q))))
			allow = r;
	}
	if (deny != NULL) {
		d->line = deny->line;
		return;
	}
	if (allow == NULL)
		return;
	d->line = allow->line;
	if (plain && allow->inject)
		return; /* credentials never go over plain HTTP */
	d->allow = 1;
	d->intercept = tunnel &&
	    (allow->npaths > 0 || allow->nmethods > 0 || allow->inject ||
	        allow->placeholder || deny_constrained);
	d->private_ok = allow->private_ok || ref_names_address(allow, q);
	d->inject = allow->inject;
	d->placeholder = allow->placeholder && !plain;
}

/* --- generating policies ------------------------------------------------ */

static void emit(struct ref_policy *, const char *, ...)
    __attribute__((format(printf, 2, 3)));

static void
emit(struct ref_policy *rp, const char *fmt, ...)
{
	va_list ap;
	size_t i, start = rp->len;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(rp->text + rp->len, sizeof(rp->text) - rp->len, fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof(rp->text) - rp->len);
	rp->len += n;
	for (i = start; i < rp->len; i++)
		rp->line += rp->text[i] == '\n';
}

/* Writes NAME with random case and sometimes a trailing dot. */
static void
vary_name(struct rng *g, const char *name, char *out, size_t outsz)
{
	size_t i, n = strlen(name);

	assert_true(n + 2 <= outsz);
	for (i = 0; i < n; i++)
		out[i] = name[i] >= 'a' && name[i] <= 'z' && chance(g, 10)
		    ? name[i] - 32
		    : name[i];
	if (chance(g, 10))
		out[n++] = '.';
	out[n] = '\0';
}

static uint8_t
pick_byte(struct rng *g, const uint8_t *set, size_t n)
{
	return set[rnd(g, n)];
}

/* An IPv4 address, most often in 10/8 or 192.0.2/24 near block edges. */
static void
rand_v4(struct rng *g, uint8_t *a)
{
	static const uint8_t mid[] = {0, 1, 2, 3, 127, 128, 255};
	unsigned k = rnd(g, 10);
	uint32_t v;

	memset(a, 0, 16);
	if (k < 5) {
		a[0] = 10;
		a[1] = pick_byte(g, mid, NELEM(mid));
		a[2] = pick_byte(g, mid, NELEM(mid));
		a[3] = pick_byte(g, mid, NELEM(mid));
	} else if (k < 8) {
		a[0] = 192;
		a[2] = chance(g, 80) ? 2 : 3;
		a[3] = pick_byte(g, mid, NELEM(mid));
	} else if (k < 9) {
		a[0] = chance(g, 50) ? 9 : 11;
		memset(a + 1, a[0] == 9 ? 255 : 0, 3);
	} else {
		v = (uint32_t)rng_next(g);
		a[0] = v >> 24;
		a[1] = v >> 16;
		a[2] = v >> 8;
		a[3] = v;
	}
}

/* An IPv6 address, most often in 2001:db8::/32. */
static void
rand_v6(struct rng *g, uint8_t *a)
{
	static const uint8_t mid[] = {0, 1, 0x80, 0xff};
	unsigned k = rnd(g, 10), i;

	memset(a, 0, 16);
	if (k < 7) {
		a[0] = 0x20;
		a[1] = 0x01;
		a[2] = 0x0d;
		a[3] = chance(g, 90) ? 0xb8 : 0xb9;
		for (i = 4; i < 16; i++)
			a[i] =
			    chance(g, 60) ? 0 : pick_byte(g, mid, NELEM(mid));
	} else if (k < 9) {
		a[15] = chance(g, 50); /* "::" or "::1" */
	} else {
		for (i = 0; i < 16; i++)
			a[i] = (uint8_t)rng_next(g);
		a[0] |= 0x20; /* never ::ffff:0:0/96 */
	}
}

static void
port_spec_apply(struct ref_target *t, const struct port_spec *ps, int deny)
{
	static const struct ref_ports def_allow[] = {{80, 80}, {443, 443}};
	static const struct ref_ports def_deny[] = {{1, 65535}};

	if (ps->n > 0) {
		memcpy(t->ports, ps->r, ps->n * sizeof(ps->r[0]));
		t->nports = ps->n;
	} else if (deny) {
		memcpy(t->ports, def_deny, sizeof(def_deny));
		t->nports = 1;
	} else {
		memcpy(t->ports, def_allow, sizeof(def_allow));
		t->nports = 2;
	}
}

static void
gen_cidr_v4(
    struct rng *g, struct ref_target *t, int ports, char *out, size_t outsz)
{
	static const uint8_t plens[] = {
	    0, 1, 7, 8, 9, 12, 16, 23, 24, 25, 30, 31, 32};
	char a[INET_ADDRSTRLEN];

	t->family = 4;
	rand_v4(g, t->addr);
	t->plen = pick_byte(g, plens, NELEM(plens));
	mask(t->addr, t->plen, 32);
	inet_ntop(AF_INET, t->addr, a, sizeof(a));
	if (chance(g, 15)) /* IPv4-mapped spelling */
		snprintf(out, outsz, ports ? "[::ffff:%s]/%u" : "::ffff:%s/%u",
		    a, t->plen + 96);
	else if (t->plen == 32 && chance(g, 50))
		snprintf(out, outsz, "%s", a);
	else
		snprintf(out, outsz, "%s/%u", a, t->plen);
}

static void
gen_cidr_v6(
    struct rng *g, struct ref_target *t, int ports, char *out, size_t outsz)
{
	static const uint8_t plens[] = {
	    0, 1, 16, 31, 32, 33, 48, 64, 96, 112, 127, 128};
	char a[INET6_ADDRSTRLEN];

	t->family = 6;
	rand_v6(g, t->addr);
	t->plen = pick_byte(g, plens, NELEM(plens));
	mask(t->addr, t->plen, 128);
	inet_ntop(AF_INET6, t->addr, a, sizeof(a));
	if (t->plen == 128 && chance(g, 50))
		snprintf(out, outsz, ports ? "[%s]" : "%s", a);
	else if (ports && chance(g, 50))
		snprintf(out, outsz, "[%s/%u]", a, t->plen);
	else
		snprintf(out, outsz, ports ? "[%s]/%u" : "%s/%u", a, t->plen);
}

/* Fills T and writes its text (without ports) into OUT. */
static void
gen_host(
    struct rng *g, struct ref_target *t, int ports, char *out, size_t outsz)
{
	char v[80];
	unsigned k = rnd(g, 100);

	if (k < 8) {
		t->kind = REF_ANY;
		snprintf(out, outsz, "*");
	} else if (k < 45) {
		t->kind = REF_EXACT;
		snprintf(t->host, sizeof(t->host), "%s",
		    rule_names[rnd(g, NELEM(rule_names))]);
		vary_name(g, t->host, out, outsz);
	} else if (k < 65) {
		t->kind = REF_WILD;
		snprintf(t->host, sizeof(t->host), "%s",
		    rule_suffixes[rnd(g, NELEM(rule_suffixes))]);
		vary_name(g, t->host, v, sizeof(v));
		snprintf(out, outsz, "*.%s", v);
	} else {
		t->kind = REF_CIDR;
		if (chance(g, 60))
			gen_cidr_v4(g, t, ports, out, outsz);
		else
			gen_cidr_v6(g, t, ports, out, outsz);
	}
}

static void
gen_target(struct rng *g, struct ref_policy *rp, struct ref_rule *r)
{
	const struct port_spec *ps = &port_specs[rnd(g, NELEM(port_specs))];
	struct ref_target *t = &r->t[r->nt++];
	char host[96];

	memset(t, 0, sizeof(*t));
	gen_host(g, t, ps->n > 0, host, sizeof(host));
	port_spec_apply(t, ps, r->deny);
	if (r->nt > 1 && chance(g, 20))
		emit(rp, " \\\n   "); /* continued on the next line */
	emit(rp, " %s%s%s", host, ps->n > 0 ? ":" : "", ps->text);
}

static void
gen_options(struct rng *g, struct ref_rule *r)
{
	size_t n, i;

	if (chance(g, r->deny ? 35 : 25))
		for (n = 1 + rnd(g, MAXPATHS), i = 0; i < n; i++)
			r->paths[r->npaths++] =
			    rule_paths[rnd(g, NELEM(rule_paths))];
	if (chance(g, r->deny ? 30 : 20))
		for (n = 1 + rnd(g, 2), i = 0; i < n; i++)
			r->methods[r->nmethods++] = rule_methods[rnd(
			    g, NELEM(rule_methods) - (chance(g, 90) ? 1 : 0))];
	if (r->deny)
		return;
	r->inject = chance(g, 20);
	r->placeholder = chance(g, 5);
	r->private_ok = chance(g, 10);
	r->upgrade_ws = r->npaths + r->nmethods > 0 && chance(g, 40);
}

/* Writes the option block of R: on one line with ';', or one per line. */
static void
emit_options(struct rng *g, struct ref_policy *rp, const struct ref_rule *r)
{
	const char *sep = chance(g, 50) ? "; " : "\n\t";
	size_t i;

	emit(rp, " {%s", sep[0] == ';' ? " " : sep);
	if (r->npaths > 0) {
		emit(rp, "paths");
		for (i = 0; i < r->npaths; i++)
			emit(rp, " %s", r->paths[i]);
		emit(rp, "%s", sep);
	}
	if (r->nmethods > 0) {
		emit(rp, "methods");
		for (i = 0; i < r->nmethods; i++)
			emit(rp, " %s", r->methods[i]);
		emit(rp, "%s", sep);
	}
	if (r->inject)
		emit(rp, "inject bearer s1%s", sep);
	if (r->placeholder)
		emit(rp, "placeholder PH_TOKEN s1%s", sep);
	if (r->private_ok)
		emit(rp, "private%s", sep);
	if (r->upgrade_ws)
		emit(rp, "upgrade %s%s",
		    chance(g, 50) ? "websocket" : "WebSocket", sep);
	emit(rp, "}");
}

static void
gen_rule(struct rng *g, struct ref_policy *rp)
{
	struct ref_rule *r = &rp->r[rp->n++];
	size_t nt, i;

	memset(r, 0, sizeof(*r));
	if (chance(g, 10))
		emit(rp, chance(g, 50) ? "\n" : "# a comment\n");
	r->deny = chance(g, 30);
	r->line = rp->line;
	nt = chance(g, 70) ? 1 : chance(g, 65) ? 2 : 3;
	emit(rp, "%s", r->deny ? "deny" : "allow");
	for (i = 0; i < nt; i++)
		gen_target(g, rp, r);
	gen_options(g, r);
	if (r->npaths + r->nmethods > 0 || r->inject || r->placeholder ||
	    r->private_ok)
		emit_options(g, rp, r);
	emit(rp, chance(g, 5) ? "; " : "\n");
}

static void
gen_policy(struct rng *g, struct ref_policy *rp)
{
	size_t n = 1 + rnd(g, MAXRULES), i;

	rp->n = 0;
	rp->len = 0;
	rp->text[0] = '\0';
	rp->line = 1;
	emit(rp, SECRET_LINE);
	for (i = 0; i < n; i++)
		gen_rule(g, rp);
}

/* --- generating requests ------------------------------------------------ */

static void
req_name(struct rng *g, struct ref_request *q)
{
	const char *name;

	if (chance(g, 75))
		name = rule_names[rnd(g, NELEM(rule_names))];
	else
		name = other_names[rnd(g, NELEM(other_names))];
	q->h.family = 0;
	snprintf(q->h.name, sizeof(q->h.name), "%s", name);
	vary_name(g, name, q->text, sizeof(q->text));
}

/* An IPv4 host, in one of the spellings that normalise to it. */
static void
req_v4(struct rng *g, struct ref_request *q)
{
	const uint8_t *a = q->h.addr;
	char s[INET_ADDRSTRLEN];

	q->h.family = 4;
	rand_v4(g, q->h.addr);
	inet_ntop(AF_INET, a, s, sizeof(s));
	switch (rnd(g, 8)) {
	case 0:
		snprintf(q->text, sizeof(q->text), "::ffff:%s", s);
		break;
	case 1:
		snprintf(q->text, sizeof(q->text), "[::ffff:%s]", s);
		break;
	case 2:
		snprintf(q->text, sizeof(q->text), "%lu",
		    (unsigned long)a[0] << 24 | (unsigned long)a[1] << 16 |
		        (unsigned long)a[2] << 8 | a[3]);
		break;
	case 3:
		snprintf(q->text, sizeof(q->text), "0x%x.%u.%u.%u", a[0], a[1],
		    a[2], a[3]);
		break;
	default:
		snprintf(q->text, sizeof(q->text), "%s", s);
		break;
	}
}

static void
req_v6(struct rng *g, struct ref_request *q)
{
	const uint8_t *a = q->h.addr;
	char s[INET6_ADDRSTRLEN];

	q->h.family = 6;
	rand_v6(g, q->h.addr);
	inet_ntop(AF_INET6, a, s, sizeof(s));
	switch (rnd(g, 4)) {
	case 0:
		snprintf(q->text, sizeof(q->text), "[%s]", s);
		break;
	case 1: /* every group written out, upper case */
		snprintf(q->text, sizeof(q->text),
		    "%04X:%04X:%04X:%04X:%04X:%04X:%04X:%04X", a[0] << 8 | a[1],
		    a[2] << 8 | a[3], a[4] << 8 | a[5], a[6] << 8 | a[7],
		    a[8] << 8 | a[9], a[10] << 8 | a[11], a[12] << 8 | a[13],
		    a[14] << 8 | a[15]);
		break;
	default:
		snprintf(q->text, sizeof(q->text), "%s", s);
		break;
	}
}

static void
gen_request(struct rng *g, struct ref_request *q)
{
	unsigned k = rnd(g, 100);

	memset(q, 0, sizeof(*q));
	if (k < 50)
		req_name(g, q);
	else if (k < 78)
		req_v4(g, q);
	else
		req_v6(g, q);
	q->port = chance(g, 90) ? req_ports[rnd(g, NELEM(req_ports))]
	                        : (uint16_t)(1 + rnd(g, 65535));
	q->method = req_methods[rnd(g, NELEM(req_methods))];
	q->path = req_paths[rnd(g, NELEM(req_paths))];
	q->upgrade =
	    chance(g, 75) ? NULL : req_upgrades[rnd(g, NELEM(req_upgrades))];
	q->tls = chance(g, 70);
}

/* --- comparing ---------------------------------------------------------- */

static void
print_diag(void *arg, const struct policy_diag *d)
{
	(void)arg;
	if (!d->warning)
		fprintf(stderr, "%s:%u:%u: error: %s\n", d->file ? d->file : "",
		    d->line, d->col, d->msg);
}

static struct policy *
load(const char *text)
{
	struct policy *p = NULL;
	int r;

	r = policy_load_string(
	    FILENAME, text, strlen(text), print_diag, NULL, &p);
	if (r != 0)
		fprintf(stderr, "policy that does not load:\n%s\n", text);
	assert_int_equal(r, 0);
	assert_non_null(p);
	return p;
}

static void
print_mismatch(const struct ref_policy *rp, const struct ref_request *q,
    const struct ref_decision *want, const struct policy_decision *d,
    unsigned seed)
{
	fprintf(stderr,
	    "--- policy %u:\n%s--- request: host '%s' port %u "
	    "%s %s upgrade '%s' tls %d\n",
	    seed, rp->text, q->text, q->port,
	    q->method ? q->method : "(tunnel)", q->method ? q->path : "",
	    q->method && q->upgrade ? q->upgrade : "-", q->tls);
	fprintf(stderr,
	    "want %s line %u intercept %d private %d inject %d "
	    "placeholder %d\n",
	    want->allow ? "allow" : "deny", want->line, want->intercept,
	    want->private_ok, want->inject, want->placeholder);
	fprintf(stderr,
	    "got  %s line %u intercept %d private %d inject %zu "
	    "placeholder %zu (%s)\n",
	    d->verdict == POLICY_ALLOW ? "allow" : "deny", d->rule_line,
	    d->intercept, d->allow_private, d->ninject, d->nplaceholder,
	    d->reason);
}

static int
same(const struct ref_decision *want, const struct policy_decision *d)
{
	if ((d->verdict == POLICY_ALLOW) != want->allow ||
	    d->rule_line != want->line ||
	    (d->rule == NULL) != (want->line == 0) ||
	    (d->rule_file == NULL) != (want->line == 0) ||
	    d->intercept != want->intercept)
		return 0;
	if (want->allow &&
	    (d->allow_private != want->private_ok ||
	        d->ninject != (size_t)want->inject ||
	        d->nplaceholder != (size_t)want->placeholder))
		return 0;
	return d->rule_file == NULL || strcmp(d->rule_file, FILENAME) == 0;
}

/* Checks one request in one phase; returns 0 when both agree. */
static int
check_phase(const struct ref_policy *rp, const struct policy *p,
    const struct ref_request *q, const struct target_host *h, unsigned seed)
{
	struct policy_request req = {0};
	struct policy_decision d;
	struct ref_decision want;

	ref_decide(rp, q, &want);
	req.host = h;
	req.port = q->port;
	req.tls = q->tls;
	req.method = q->method;
	req.path = q->path;
	req.upgrade = q->method != NULL ? q->upgrade : NULL;
	policy_decide(p, &req, &d);
	if (same(&want, &d))
		return 0;
	print_mismatch(rp, q, &want, &d, seed);
	return -1;
}

/* The request's host normalises to what the reference took it for. */
static void
check_host(const struct ref_request *q, struct target_host *h)
{
	int r = target_host_parse(q->text, strlen(q->text), h);

	if (r != 0)
		fprintf(stderr, "target_host_parse(\"%s\"): %d\n", q->text, r);
	assert_int_equal(r, 0);
	if (q->h.family == 0) {
		assert_int_equal(h->kind, TARGET_NAME);
		assert_string_equal(h->name, q->h.name);
	} else {
		assert_int_equal(
		    h->kind, q->h.family == 4 ? TARGET_V4 : TARGET_V6);
		assert_memory_equal(
		    h->addr, q->h.addr, q->h.family == 4 ? 4 : 16);
	}
}

static size_t
check_policy(struct rng *g, const struct ref_policy *rp, unsigned seed)
{
	struct policy *p = load(rp->text);
	struct ref_request q;
	struct target_host h;
	size_t i, bad = 0;

	for (i = 0; i < NREQUESTS && bad == 0; i++) {
		gen_request(g, &q);
		check_host(&q, &h);
		if (check_phase(rp, p, &q, &h, seed) != 0)
			bad++;
		q.method = NULL;
		if (check_phase(rp, p, &q, &h, seed) != 0)
			bad++;
	}
	policy_free(p);
	return bad;
}

static void
test_random_policies(void **state)
{
	static struct ref_policy rp;
	struct rng g;
	size_t bad = 0;
	unsigned i;

	(void)state;
	for (i = 0; i < NPOLICIES; i++) {
		g.s = 0x9E3779B97F4A7C15ULL * (i + 1);
		gen_policy(&g, &rp);
		bad += check_policy(&g, &rp, i);
	}
	assert_int_equal(bad, 0);
}

/* The generator itself: paths and wildcards behave as the text says. */
static void
test_reference_self(void **state)
{
	struct ref_target t;
	struct ref_host h;

	(void)state;
	assert_true(ref_glob("/a/*", "/a/b/c"));
	assert_false(ref_glob("/a/*", "/a"));
	assert_true(ref_glob("/a*", "/a"));
	assert_true(ref_glob("/*/b", "/x/y/b"));
	assert_false(ref_glob("/a/b", "/a/b/"));
	memset(&t, 0, sizeof(t));
	memset(&h, 0, sizeof(h));
	t.kind = REF_WILD;
	snprintf(t.host, sizeof(t.host), "example.com");
	snprintf(h.name, sizeof(h.name), "example.com");
	assert_false(ref_host_match(&t, &h));
	snprintf(h.name, sizeof(h.name), "aexample.com");
	assert_false(ref_host_match(&t, &h));
	snprintf(h.name, sizeof(h.name), "a.example.com");
	assert_true(ref_host_match(&t, &h));
}

/* --- paths as servers read them ------------------------------------------ */

/*
 * How lenient servers read a request path: percent-decoded once (or twice,
 * SERVER_TWICE), overlong UTF-8 read as its ASCII byte (SERVER_OVERLONG,
 * old Java and IIS), ';' parameters dropped from every segment (Tomcat,
 * Jetty, Spring), then empty and dot segments resolved.  Whatever
 * target_path_normalise accepts must read the same way to all of them
 * once its parameters are dropped, or a rule would see another path than
 * the server serves.
 */
enum server_mode {
	SERVER_ONCE,
	SERVER_TWICE,
	SERVER_OVERLONG,
	SERVER_NMODES,
};

static int
ref_hex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes the valid escapes of IN into OUT (same size at most). */
static void
ref_decode(const char *in, char *out)
{
	size_t o = 0;

	for (; *in != '\0'; in++) {
		if (in[0] == '%' && ref_hex((unsigned char)in[1]) >= 0 &&
		    ref_hex((unsigned char)in[2]) >= 0) {
			out[o++] = (char)(ref_hex((unsigned char)in[1]) << 4 |
			    ref_hex((unsigned char)in[2]));
			in += 2;
		} else
			out[o++] = *in;
	}
	out[o] = '\0';
}

/* Two- and three-byte overlong forms of ASCII become the ASCII byte. */
static void
ref_overlong(char *s)
{
	unsigned char *u = (unsigned char *)s;
	size_t i, o = 0;

	for (i = 0; u[i] != '\0'; i++) {
		if ((u[i] == 0xc0 || u[i] == 0xc1) &&
		    (u[i + 1] & 0xc0) == 0x80) {
			u[o++] = (u[i] & 1) << 6 | (u[i + 1] & 0x3f);
			i++;
		} else if (u[i] == 0xe0 && u[i + 1] == 0x80 &&
		    (u[i + 2] & 0xc0) == 0x80) {
			u[o++] = u[i + 2] & 0x3f;
			i += 2;
		} else
			u[o++] = u[i];
	}
	u[o] = '\0';
}

/* Drops parameters and resolves segments of the decoded path IN. */
static void
ref_resolve(char *in, char *out, size_t outsz)
{
	char *segs[256], *p, *semi;
	size_t n = 0, i, o = 0;
	int slash = in[0] != '\0' && in[strlen(in) - 1] == '/', trailing = 0;

	for (p = strtok(in, "/"); p != NULL; p = strtok(NULL, "/")) {
		if ((semi = strchr(p, ';')) != NULL)
			*semi = '\0';
		trailing =
		    p[0] == '\0' || strcmp(p, ".") == 0 || strcmp(p, "..") == 0;
		if (strcmp(p, "..") == 0 && n > 0)
			n--;
		else if (!trailing && n < 256)
			segs[n++] = p;
	}
	trailing |= slash;
	out[o++] = '/';
	for (i = 0; i < n; i++)
		o += snprintf(out + o, outsz - o, "%s%s", segs[i],
		    i + 1 < n || trailing ? "/" : "");
	out[o] = '\0';
}

static void
server_view(const char *raw, enum server_mode m, char *out, size_t outsz)
{
	char a[512], b[512];
	size_t end = strcspn(raw, "?#");

	snprintf(a, sizeof(a), "%.*s", (int)end, raw);
	ref_decode(a, b);
	if (m == SERVER_TWICE) {
		ref_decode(b, a);
		memcpy(b, a, sizeof(b));
	} else if (m == SERVER_OVERLONG)
		ref_overlong(b);
	ref_resolve(b, out, outsz);
}

static const char *const raw_bits[] = {"a", "b", "/", "/", "//", ".", "..", ";",
    ";x", ";v=1", "%2e", "%2E", "%3b", "%3B", "%25", "%32", "%65", "%252e",
    "%252f", "%C0%AE", "%c0%af", "%C0", "%AE", "%E0%80%AE", "%C3%A9", "%2f",
    "?", "x"};

/* Ours, accepted, reads as every lenient server reads the raw path. */
static void
test_server_views(void **state)
{
	struct rng g = {0x9e3779b97f4a7c15ULL};
	char raw[256], ours[512], mine[512], view[512];
	size_t i, k, n, accepted = 0, bad = 0;
	int m;

	(void)state;
	for (i = 0; i < 200000; i++) {
		raw[0] = '/';
		raw[1] = '\0';
		for (n = 1 + rnd(&g, 8), k = 0; k < n; k++)
			strcat(raw, raw_bits[rnd(&g, NELEM(raw_bits))]);
		if (target_path_normalise(
		        raw, strlen(raw), ours, sizeof(ours)) != 0)
			continue;
		accepted++;
		snprintf(mine, sizeof(mine), "%s", ours);
		ref_resolve(mine, ours, sizeof(ours));
		for (m = 0; m < SERVER_NMODES; m++) {
			server_view(raw, m, view, sizeof(view));
			if (strcmp(view, ours) != 0 && bad++ < 10)
				fprintf(stderr, "%s: ours %s, server (%d) %s\n",
				    raw, ours, m, view);
		}
	}
	assert_true(accepted > 10000);
	assert_int_equal(bad, 0);
}

/* --- hand-written cases ------------------------------------------------- */

struct table_case {
	const char *policy;
	const char *host;
	uint16_t port;
	const char *method; /* NULL: tunnel phase */
	const char *path;
	int tls;
	enum policy_verdict verdict;
	unsigned line; /* 0: default deny */
	int intercept;
};

#define A POLICY_ALLOW
#define D POLICY_DENY

/* Wildcards cover names strictly below the suffix, not the apex. */
#define P_WILD "allow *.example.com\n"
/* A deny wins wherever it stands, an allow's order decides. */
#define P_DENY                                                                 \
	"allow a.example.com\n"                                                \
	"allow *.example.com:*\n"                                              \
	"deny *.example.com:443\n"
/* The first allow whose paths/methods fit decides; others fall through. */
#define P_PATHS                                                                \
	SECRET_LINE                                                            \
	"allow x.test {\n"                                                     \
	"\tpaths /repo/* /other\n"                                             \
	"\tinject bearer s1\n"                                                 \
	"}\n"                                                                  \
	"allow x.test { methods GET }\n"                                       \
	"allow *.test:443\n"
/* Block edges: /0, /25, /32, /128. */
#define P_CIDR                                                                 \
	"allow 0.0.0.0/0:22\n"                                                 \
	"allow [::]/0:22\n"                                                    \
	"allow 10.1.2.3/32:80\n"                                               \
	"allow 2001:db8::1/128\n"                                              \
	"allow 192.0.2.128/25:443\n"
/* IPv4-mapped spellings are IPv4, in rules and in requests. */
#define P_MAPPED                                                               \
	"allow 10.0.0.0/8\n"                                                   \
	"deny ::ffff:10.9.0.0/112\n"
/* A deny with methods/paths only turns interception on in the tunnel. */
#define P_INTERCEPT                                                            \
	"allow api.example.com:443\n"                                          \
	"deny api.example.com { methods POST; paths /hooks/* }\n"
#define P_TUNNEL_DENY                                                          \
	"allow x.test { paths /a }\n"                                          \
	"deny x.test:80\n"
#define P_STAR                                                                 \
	"allow *:443\n"                                                        \
	"deny *.example.com\n"
#define P_APEX                                                                 \
	"allow example.com\n"                                                  \
	"deny *.example.com\n"

static const struct table_case table[] = {
    {P_WILD, "example.com", 443, NULL, NULL, 1, D, 0, 0},
    {P_WILD, "a.example.com", 443, NULL, NULL, 1, A, 1, 0},
    {P_WILD, "b.a.example.com", 80, NULL, NULL, 1, A, 1, 0},
    {P_WILD, "A.EXAMPLE.COM.", 443, NULL, NULL, 1, A, 1, 0},
    {P_WILD, "aexample.com", 443, NULL, NULL, 1, D, 0, 0},
    {P_WILD, "a.example.com", 8080, NULL, NULL, 1, D, 0, 0},
    {P_WILD, "a.example.com.evil", 443, NULL, NULL, 1, D, 0, 0},
    {P_APEX, "example.com", 443, NULL, NULL, 1, A, 1, 0},
    {P_APEX, "www.example.com", 443, NULL, NULL, 1, D, 2, 0},
    {P_DENY, "a.example.com", 443, NULL, NULL, 1, D, 3, 0},
    {P_DENY, "a.example.com", 443, "GET", "/", 1, D, 3, 0},
    {P_DENY, "a.example.com", 80, NULL, NULL, 1, A, 1, 0},
    {P_DENY, "b.example.com", 8080, NULL, NULL, 1, A, 2, 0},
    {P_DENY, "example.com", 443, NULL, NULL, 1, D, 0, 0},
    {P_PATHS, "x.test", 443, NULL, NULL, 1, A, 2, 1},
    {P_PATHS, "x.test", 443, "GET", "/repo/a/b", 1, A, 2, 0},
    {P_PATHS, "x.test", 443, "POST", "/other", 1, A, 2, 0},
    {P_PATHS, "x.test", 443, "GET", "/repo", 1, A, 6, 0},
    {P_PATHS, "x.test", 443, "POST", "/repo", 1, A, 7, 0},
    {P_PATHS, "x.test", 80, "POST", "/repo", 0, D, 0, 0},
    {P_PATHS, "x.test", 80, "GET", "/repo/a", 0, D, 2, 0},
    {P_PATHS, "x.test", 80, "GET", "/x", 0, A, 6, 0},
    {P_PATHS, "y.x.test", 443, NULL, NULL, 1, A, 7, 0},
    {P_PATHS, "y.x.test", 80, NULL, NULL, 1, D, 0, 0},
    {P_CIDR, "255.255.255.255", 22, NULL, NULL, 1, A, 1, 0},
    {P_CIDR, "0.0.0.0", 22, NULL, NULL, 1, A, 1, 0},
    {P_CIDR, "::1", 22, NULL, NULL, 1, A, 2, 0},
    {P_CIDR, "::ffff:1.2.3.4", 22, NULL, NULL, 1, A, 1, 0},
    {P_CIDR, "10.1.2.3", 80, NULL, NULL, 1, A, 3, 0},
    {P_CIDR, "167838211", 80, NULL, NULL, 1, A, 3, 0},
    {P_CIDR, "10.1.2.4", 80, NULL, NULL, 1, D, 0, 0},
    {P_CIDR, "10.1.2.3", 443, NULL, NULL, 1, D, 0, 0},
    {P_CIDR, "[2001:db8::1]", 443, NULL, NULL, 1, A, 4, 0},
    {P_CIDR, "2001:DB8:0:0:0:0:0:1", 80, NULL, NULL, 1, A, 4, 0},
    {P_CIDR, "2001:db8::2", 443, NULL, NULL, 1, D, 0, 0},
    {P_CIDR, "2001:db8::1", 8080, NULL, NULL, 1, D, 0, 0},
    {P_CIDR, "192.0.2.127", 443, NULL, NULL, 1, D, 0, 0},
    {P_CIDR, "192.0.2.128", 443, NULL, NULL, 1, A, 5, 0},
    {P_CIDR, "192.0.2.255", 443, NULL, NULL, 1, A, 5, 0},
    {P_MAPPED, "::ffff:10.1.2.3", 443, NULL, NULL, 1, A, 1, 0},
    {P_MAPPED, "[::ffff:10.1.2.3]", 80, "GET", "/", 0, A, 1, 0},
    {P_MAPPED, "0xa.1.2.3", 443, NULL, NULL, 1, A, 1, 0},
    {P_MAPPED, "10.9.1.1", 443, NULL, NULL, 1, D, 2, 0},
    {P_MAPPED, "::ffff:10.9.1.1", 80, NULL, NULL, 1, D, 2, 0},
    {P_MAPPED, "11.0.0.1", 443, NULL, NULL, 1, D, 0, 0},
    {P_INTERCEPT, "api.example.com", 443, NULL, NULL, 1, A, 1, 1},
    {P_INTERCEPT, "api.example.com", 443, "GET", "/hooks/1", 1, A, 1, 0},
    {P_INTERCEPT, "api.example.com", 443, "POST", "/hooks/1", 1, D, 2, 0},
    {P_INTERCEPT, "api.example.com", 443, "POST", "/other", 1, A, 1, 0},
    {P_INTERCEPT, "api.example.com", 8080, NULL, NULL, 1, D, 0, 0},
    {P_TUNNEL_DENY, "x.test", 80, NULL, NULL, 1, D, 2, 0},
    {P_TUNNEL_DENY, "x.test", 443, NULL, NULL, 1, A, 1, 1},
    {P_TUNNEL_DENY, "x.test", 443, "GET", "/b", 1, D, 0, 0},
    {P_TUNNEL_DENY, "x.test", 443, "GET", "/a", 1, A, 1, 0},
    {P_STAR, "10.1.2.3", 443, NULL, NULL, 1, A, 1, 0},
    {P_STAR, "2001:db8::1", 443, NULL, NULL, 1, A, 1, 0},
    {P_STAR, "example.com", 443, NULL, NULL, 1, A, 1, 0},
    {P_STAR, "a.example.com", 443, NULL, NULL, 1, D, 2, 0},
    {P_STAR, "example.com", 80, NULL, NULL, 1, D, 0, 0},
};

static void
test_table(void **state)
{
	const struct table_case *c;
	struct policy_request req = {0};
	struct policy_decision d;
	struct target_host h;
	struct policy *p;
	size_t i, bad = 0;

	(void)state;
	for (i = 0; i < NELEM(table); i++) {
		c = &table[i];
		p = load(c->policy);
		assert_int_equal(
		    target_host_parse(c->host, strlen(c->host), &h), 0);
		req.host = &h;
		req.port = c->port;
		req.tls = c->tls;
		req.method = c->method;
		req.path = c->path;
		policy_decide(p, &req, &d);
		if (d.verdict != c->verdict || d.rule_line != c->line ||
		    d.intercept != c->intercept) {
			fprintf(stderr,
			    "case %zu: %s:%u %s %s: want %d line %u "
			    "intercept %d, got %d line %u intercept %d (%s)\n",
			    i, c->host, c->port, c->method ? c->method : "-",
			    c->path ? c->path : "-", c->verdict, c->line,
			    c->intercept, d.verdict, d.rule_line, d.intercept,
			    d.reason);
			bad++;
		}
		policy_free(p);
	}
	assert_int_equal(bad, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reference_self),
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_random_policies),
	    cmocka_unit_test(test_server_views),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
