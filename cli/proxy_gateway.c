/*
 * proxy_gateway.c: `pinhole proxy` as a gateway for several clients
 * (proxy_gateway.h).
 *
 * The configuration is loaded by cmd_proxy.c like any policy (its
 * secrets are the logins' passwords, its log the gateway's); each policy
 * its broker blocks name is then loaded on its own (engine_load.c, with
 * the pinned CA its files name), each with its own proxy, resolver and
 * log (its `log` line, else the gateway's), all on one loop and counting
 * into one --metrics.  SIGHUP reloads every policy, and the configuration
 * too when that is quick and safe: read on the loop, it may have no exec
 * secret (whose helper could hold the loop up to its deadline), and it
 * must name the same policies with the same files (the engines stay);
 * then its grants and passwords replace the old ones at once.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "cli/cli.h"
#include "cli/proxy_gateway.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "netns/sandbox.h"
#include "policy/grant.h"
#include "policy/policy.h"
#include "policy/secret.h"
#include "proxy/engine.h"
#include "proxy/engine_load.h"
#include "proxy/gate.h"
#include "proxy/metrics.h"
#include "proxy/proxy.h"

#define SHED_PATHS_MAX 64

struct gateway;

/* One policy of the broker blocks, served by its own engine. */
struct gw_policy {
	struct gateway *gw;
	struct engine_load_config lc;
	struct cli_diag_count count;
	struct engine *eng;
};

struct gateway {
	const struct proxy_gateway_opts *o;
	const struct engine_load_config *own_lc; /* how OWN was loaded */
	struct engine_load *own; /* the configuration as loaded: its log */
	struct policy *conf; /* reloaded since (grants, passwords); or NULL */
	const struct grant_set *grants;
	const struct secret_store *store;
	struct gw_policy *pol;
	size_t n;
	size_t running; /* engines not yet stopped */
	struct event_base *base;
	struct metrics *metrics;
	struct gate *gate;
	char *paths[SHED_PATHS_MAX]; /* what reloads read (Landlock) */
	size_t npaths;
	int landlock;
	int stopping;
};

int
proxy_gateway_is(const struct engine_load *l)
{
	return grant_count(policy_grants(engine_load_policy(l))) > 0;
}

static long
pick(void *arg, const struct sockaddr *sa, const char *user, const char *pass,
    size_t passlen, const char **why)
{
	struct gateway *gw = arg;

	return gate_pick(gw->grants, gw->store, sa, user, pass, passlen, why);
}

static struct proxy *
proxy_of(void *arg, long i)
{
	struct gateway *gw = arg;

	return i >= 0 && (size_t)i < gw->n ? engine_proxy(gw->pol[i].eng)
	                                   : NULL;
}

/* A policy without a `log` line writes to the gateway's log. */
static char *
log_default(void *arg)
{
	struct gw_policy *p = arg;

	return xstrdup(engine_load_log_path(p->gw->own));
}

static struct policy *
reparse(void *arg)
{
	struct gw_policy *p = arg;

	memset(&p->count, 0, sizeof(p->count));
	return engine_load_parse(&p->lc);
}

static void
shed_add(void *arg, const char *path)
{
	struct gateway *gw = arg;

	if (gw->npaths < SHED_PATHS_MAX)
		gw->paths[gw->npaths++] = xstrdup(path);
}

/* Loads policy I and makes its engine; 0, or -1 said. */
static int
policy_open(struct gateway *gw, size_t i)
{
	struct gw_policy *p = &gw->pol[i];
	struct engine_config cf = {0};
	struct engine_load *l;
	size_t nfiles;

	p->gw = gw;
	p->lc.name = grant_name(gw->grants, i);
	p->lc.policies = grant_files(gw->grants, i, &nfiles);
	p->lc.npolicies = nfiles;
	p->lc.diag = cli_print_diag;
	p->lc.diag_arg = &p->count;
	p->lc.log_limit = gw->o->log_limit;
	p->lc.intercept = ENGINE_LOAD_INTERCEPT_PINNED;
	p->lc.log_default = log_default;
	p->lc.arg = p;
	if (engine_load_new(&p->lc, NULL, &l) != ENGINE_LOAD_OK)
		return -1;
	if (!engine_load_reads(l, shed_add, gw))
		gw->landlock = 0;
	cf.dns = gw->o->dns;
	cf.max_sessions = gw->o->max_sessions;
	cf.max_per_client = gw->o->max_per_client;
	cf.head_memory = (size_t)gw->o->head_memory;
	cf.buffer_memory = (size_t)gw->o->buffer_memory;
	cf.metrics = gw->metrics;
	cf.parse = reparse;
	cf.parse_arg = p;
	if ((p->eng = engine_new(gw->base, &cf, l)) == NULL)
		return -1;
	gw->running++;
	log_info("gateway: policy %s loaded", p->lc.name);
	return 0;
}

/* Says where SPEC listens (tests read the port picked for ":0"). */
static int
listen_on(
    struct gateway *gw, const char *spec, enum proxy_via via, const char *what)
{
	unsigned port;

	if (spec == NULL)
		return 0;
	if (gate_listen(gw->gate, spec, via, &port) != 0)
		return -1;
	fprintf(stderr, "pinhole: %s on %.*s:%u\n", what,
	    (int)(strrchr(spec, ':') - spec), spec, port);
	return 0;
}

static int
gate_open(struct gateway *gw)
{
	const struct policy *conf = engine_load_policy(gw->own);
	struct gate_config cf = {0};
	unsigned port;

	cf.base = gw->base;
	cf.audit = engine_load_audit(gw->own);
	cf.metrics = gw->metrics;
	cf.head_ms = policy_timeout(conf, POLICY_TIMEOUT_HEAD);
	cf.max_pending = gw->o->max_sessions;
	cf.pick = pick;
	cf.proxy = proxy_of;
	cf.arg = gw;
	if ((gw->gate = gate_new(&cf)) == NULL ||
	    listen_on(gw, gw->o->socks, PROXY_VIA_SOCKS, "SOCKS listening") ||
	    listen_on(gw, gw->o->listen, PROXY_VIA_PROXY, "listening"))
		return -1;
	if (gw->metrics != NULL) {
		if (metrics_listen(
		        gw->metrics, gw->base, gw->o->metrics, &port) != 0)
			return -1;
		if (strncmp(gw->o->metrics, "unix:", 5) != 0)
			fprintf(stderr, "pinhole: metrics on %.*s:%u\n",
			    (int)(strrchr(gw->o->metrics, ':') -
			        gw->o->metrics),
			    gw->o->metrics, port);
	}
	return 0;
}

/* Does G name the policies the engines serve, with the same files? */
static int
same_policies(const struct gateway *gw, const struct grant_set *g)
{
	const char *const *files;
	size_t i, j, n;

	if (grant_count(g) != gw->n)
		return 0;
	for (i = 0; i < gw->n; i++) {
		files = grant_files(g, i, &n);
		if (strcmp(grant_name(g, i), gw->pol[i].lc.name) != 0 ||
		    n != gw->pol[i].lc.npolicies)
			return 0;
		for (j = 0; j < n; j++)
			if (strcmp(files[j], gw->pol[i].lc.policies[j]) != 0)
				return 0;
	}
	return 1;
}

/* Puts P, the configuration parsed again with its secrets, in place. */
static void
conf_swap(struct gateway *gw, struct policy *p)
{
	const struct grant_set *g = policy_grants(p);
	size_t i, n;

	for (i = 0; i < gw->n; i++) { /* they pointed into the old grants */
		gw->pol[i].lc.name = grant_name(g, i);
		gw->pol[i].lc.policies = grant_files(g, i, &n);
	}
	gw->grants = g;
	gw->store = policy_secrets(p);
	policy_free(gw->conf);
	gw->conf = p;
	log_warnx("gateway: the configuration reloaded (grants, passwords)");
}

static int
has_exec(const struct secret_store *ss)
{
	size_t i;

	for (i = 0; i < secret_store_count(ss); i++)
		if (secret_source(secret_store_get(ss, i)) == SECRET_EXEC)
			return 1;
	return 0;
}

static void
say_secret(void *arg, const char *msg)
{
	(void)arg;
	log_warnx("gateway: %s", msg);
}

/*
 * The configuration again, if it may be read on the loop (see above):
 * parsed, then its secrets loaded; its log stays the one opened at the
 * start (Landlock: the daemon opens no file for writing any more).
 */
static void
conf_reload(struct gateway *gw)
{
	struct policy *p;

	if (has_exec(gw->store)) {
		log_warnx("gateway: the configuration has an exec secret: its "
		          "grants and passwords change only with a restart");
		return;
	}
	if ((p = engine_load_parse(gw->own_lc)) == NULL) {
		log_warnx("gateway: the configuration has errors; the old "
		          "grants and passwords stay");
		return;
	}
	if (!same_policies(gw, policy_grants(p)) ||
	    has_exec(policy_secrets(p))) {
		log_warnx("gateway: the configuration names other policies, "
		          "files or an exec secret now: restart to apply it; "
		          "the old grants and passwords stay");
		policy_free(p);
	} else if (secret_store_load(policy_secrets(p), say_secret, NULL) !=
	    0) {
		log_warnx("gateway: the configuration's secrets did not load; "
		          "the old grants and passwords stay");
		policy_free(p);
	} else {
		conf_swap(gw, p);
	}
}

static void
on_reload(evutil_socket_t sig, short what, void *arg)
{
	struct gateway *gw = arg;
	size_t i;

	(void)sig;
	(void)what;
	log_warnx("gateway: reloading the configuration and every policy");
	conf_reload(gw);
	for (i = 0; i < gw->n; i++)
		engine_reload(gw->pol[i].eng);
}

static void
on_stopped(void *arg)
{
	struct gateway *gw = arg;

	if (--gw->running == 0)
		event_base_loopexit(gw->base, NULL);
}

static void
on_stop(evutil_socket_t sig, short what, void *arg)
{
	struct gateway *gw = arg;
	size_t i;

	(void)what;
	if (gw->stopping++)
		return;
	log_warnx("signal %d: stopping", (int)sig);
	gate_stop(gw->gate);
	for (i = 0; i < gw->n; i++)
		engine_stop(gw->pol[i].eng, gw->o->grace_ms, on_stopped, gw);
}

static void
run_loop(struct gateway *gw)
{
	struct event *hup, *term, *intr;
	char report[256];

	if (sbx_shed((const char *const *)gw->paths, gw->npaths, gw->landlock,
	        report, sizeof(report)) != 0)
		log_warnx("proxy: %s", report);
	else
		log_info("proxy: %s", report);
	hup = evsignal_new(gw->base, SIGHUP, on_reload, gw);
	term = evsignal_new(gw->base, SIGTERM, on_stop, gw);
	intr = evsignal_new(gw->base, SIGINT, on_stop, gw);
	if (hup == NULL || term == NULL || intr == NULL ||
	    evsignal_add(hup, NULL) != 0 || evsignal_add(term, NULL) != 0 ||
	    evsignal_add(intr, NULL) != 0)
		fatalx("proxy: cannot set signal handlers");
	event_base_dispatch(gw->base);
	event_free(hup);
	event_free(term);
	event_free(intr);
}

int
proxy_gateway_run(const struct proxy_gateway_opts *o,
    const struct engine_load_config *lc, struct engine_load *l)
{
	struct gateway gw;
	size_t i;
	int r = 1;

	memset(&gw, 0, sizeof(gw));
	gw.o = o;
	gw.own_lc = lc;
	gw.own = l;
	gw.grants = policy_grants(engine_load_policy(l));
	gw.store = policy_secrets(engine_load_policy(l));
	gw.n = grant_count(gw.grants);
	gw.landlock = engine_load_reads(l, shed_add, &gw);
	gw.pol = xcalloc(gw.n, sizeof(*gw.pol));
	signal(SIGPIPE, SIG_IGN);
	if ((gw.base = engine_base_new()) == NULL)
		fatalx("proxy: cannot create the event loop");
	if (o->metrics != NULL && (gw.metrics = metrics_new(0)) == NULL)
		fatalx("proxy: out of memory");
	for (i = 0; i < gw.n; i++)
		if (policy_open(&gw, i) != 0)
			break;
	if (i == gw.n && gate_open(&gw) == 0) {
		run_loop(&gw);
		r = 0;
	}
	gate_free(gw.gate);
	for (i = 0; i < gw.n; i++)
		engine_free(gw.pol[i].eng);
	free(gw.pol);
	while (gw.npaths > 0)
		free(gw.paths[--gw.npaths]);
	metrics_free(gw.metrics);
	event_base_free(gw.base);
	policy_free(gw.conf);
	engine_load_free(gw.own);
	return r;
}
