/*
 * engine_load.c: the policy and its secrets, the audit log, the CA, the
 * TLS contexts and the stand-ins, loaded for an engine, and the sandbox
 * view published as they are (engine_load.h says the order).  The one
 * place that reads a policy for `pinhole run` and `pinhole proxy`.
 */
#include <sys/prctl.h>

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/xmalloc.h"
#include "policy/grant.h"
#include "policy/policy.h"
#include "policy/secret.h"
#include "audit/audit.h"
#include "proxy/ca.h"
#include "proxy/engine_load.h"
#include "proxy/inject.h"
#include "proxy/tls.h"
#include "proxy/view.h"

struct engine_load {
	const struct engine_load_config *cf; /* while loading */
	const struct engine_load_sink *sink; /* while loading */
	struct policy *p;
	struct audit *audit;
	char *logpath;
	char run_id[17];
	struct ca *ca;
	struct tls *tls; /* signs with ca */
	struct inject_standins *standins;
};

/* --- the hooks and the sink, where the caller gave them ------------------ */

static int
trusted(struct engine_load *l, const char *what, const char *path)
{
	const struct engine_load_config *cf = l->cf;

	return cf->trusted != NULL ? cf->trusted(cf->arg, what, path) : 0;
}

static int
publish(struct engine_load *l, int (*fn)(void *, const char *), const char *s)
{
	return fn != NULL ? fn(l->sink->arg, s) : 0;
}

/* --- the policy and its secrets ------------------------------------------- */

struct strlist {
	char *v[ENGINE_LOAD_LIST_MAX];
	size_t n;
	int full;
};

static void
strlist_add(void *arg, const char *s)
{
	struct strlist *sl = arg;

	if (sl->n < ENGINE_LOAD_LIST_MAX)
		sl->v[sl->n++] = xstrdup(s);
	else
		sl->full = 1;
}

static void
strlist_clear(struct strlist *sl)
{
	while (sl->n > 0)
		free(sl->v[--sl->n]);
}

/*
 * A helper named without a '/' is looked up in PATH as execvp does: an
 * empty or relative PATH entry can put it in the work directory.  Checks
 * the first executable found (none found: the helper fails later).
 */
static int
trusted_helper(struct engine_load *l, const char *name)
{
	const char *path = getenv("PATH"), *p, *end;
	char cand[PATH_MAX];
	int n;

	if (strchr(name, '/') != NULL)
		return trusted(l, "secret helper", name);
	for (p = path ? path : "/usr/bin:/bin"; p != NULL;
	     p = *end ? end + 1 : NULL) {
		end = p + strcspn(p, ":");
		n = snprintf(cand, sizeof(cand), "%.*s%s%s", (int)(end - p), p,
		    end > p ? "/" : "", name);
		if (n > 0 && (size_t)n < sizeof(cand) &&
		    access(cand, X_OK) == 0)
			return trusted(l, "secret helper", cand);
	}
	return 0;
}

/*
 * Every file the engine trusts (policy, include, secret, secret helper,
 * CA, trust anchor), offered to the caller's check before any is used.
 */
static int
trusted_files(struct engine_load *l)
{
	struct secret_store *ss = policy_secrets(l->p);
	struct strlist cas = {{NULL}, 0, 0};
	const struct secret *sec;
	const char *f, *cert, *key;
	size_t i;
	int bad = 0;

	if (l->cf->trusted == NULL)
		return 0;
	for (i = 0; (f = policy_file_at(l->p, i)) != NULL; i++)
		if (strcmp(f, "--allow") != 0)
			bad |= trusted(l, "policy file", f);
	for (i = 0; i < secret_store_count(ss); i++) {
		sec = secret_store_get(ss, i);
		if (secret_source(sec) == SECRET_FILE)
			bad |= trusted(l, "secret file", secret_origin(sec));
		else if (secret_source(sec) == SECRET_EXEC)
			bad |= trusted_helper(l, secret_origin(sec));
	}
	if (policy_ca(l->p, &cert, &key)) {
		bad |= trusted(l, "CA certificate", cert);
		bad |= trusted(l, "CA key", key);
	}
	policy_upstream_cas(l->p, strlist_add, &cas);
	for (i = 0; i < cas.n; i++)
		bad |= trusted(l, "upstream-ca", cas.v[i]);
	for (i = 0; policy_trust_at(l->p, i) != NULL; i++)
		bad |= trusted(l, "trust file", policy_trust_at(l->p, i)->path);
	strlist_clear(&cas);
	return bad;
}

static void
first_placeholder(void *arg, const struct policy_placeholder *ph)
{
	const struct policy_placeholder **first = arg;

	if (*first == NULL)
		*first = ph;
}

/*
 * A placeholder's stand-in is for a sandbox to hold; a daemon has none to
 * hand it to, and a client holding the real value would need no stand-in.
 */
static int
placeholders_refused(const struct engine_load_config *cf, struct policy *p)
{
	const struct policy_placeholder *ph = NULL;

	if (cf->intercept != ENGINE_LOAD_INTERCEPT_PINNED)
		return 0;
	policy_placeholders(p, first_placeholder, &ph);
	if (ph == NULL)
		return 0;
	log_warnx("%s: placeholder %s (secret %s): pinhole %s has no sandbox "
	          "to give a stand-in to; use inject (the credential is added "
	          "for the client) or pinhole run",
	    cf->name, ph->env, ph->secret_name, cf->name);
	return -1;
}

/*
 * A broker's configuration has no rules: a run (or a broker's sandbox,
 * whose policy must be a policy) given one would deny everything
 * without saying why.  pinhole proxy decides for itself (a gateway).
 */
static int
grants_refused(const struct engine_load_config *cf, struct policy *p)
{
	const struct grant_set *g = policy_grants(p);
	const char *where;
	unsigned line;

	if (cf->intercept != ENGINE_LOAD_INTERCEPT_RUN || g == NULL)
		return 0;
	where = grant_where(g, 0, &line);
	log_warnx("%s: %s:%u: this is a broker configuration (broker "
	          "blocks): use it with pinhole proxy --broker",
	    cf->name, where ? where : "?", line);
	return -1;
}

struct policy *
engine_load_parse(const struct engine_load_config *cf)
{
	struct policy *p = NULL;

	if (policy_load_extra(cf->policies, cf->npolicies, "--allow", cf->allow,
	        cf->diag, cf->diag_arg, &p) != 0)
		return NULL;
	if (grants_refused(cf, p) != 0 || placeholders_refused(cf, p) != 0) {
		policy_free(p);
		p = NULL;
	}
	return p;
}

/*
 * The policy, then the check of every file it trusts, then its secrets:
 * no file or helper a sandbox could have planted is read or run.
 */
static int
load_policy(struct engine_load *l)
{
	if ((l->p = engine_load_parse(l->cf)) == NULL || trusted_files(l) != 0)
		return ENGINE_LOAD_FAILED;
	if (secret_store_load(policy_secrets(l->p), NULL, NULL) != 0)
		return ENGINE_LOAD_E_SECRETS;
	return ENGINE_LOAD_OK;
}

/* The variables that hold secrets, named first of all (view.h). */
static int
publish_envsecrets(struct engine_load *l)
{
	const struct engine_load_sink *s = l->sink;
	struct secret_store *ss = policy_secrets(l->p);
	const struct secret *sec;
	size_t i;

	for (i = 0; s->envsecret != NULL && i < secret_store_count(ss); i++) {
		sec = secret_store_get(ss, i);
		if (secret_source(sec) == SECRET_ENV &&
		    s->envsecret(
		        s->arg, secret_origin(sec), secret_name(sec)) != 0)
			return -1;
	}
	return 0;
}

/* --- the audit log -------------------------------------------------------- */

/* The log's path: the config's, the policy's, the caller's default. */
static int
log_path(struct engine_load *l)
{
	const struct engine_load_config *cf = l->cf;
	const char *path = cf->log ? cf->log : policy_log_path(l->p);

	if (path != NULL)
		l->logpath = xstrdup(path);
	else if (cf->log_default != NULL)
		l->logpath = cf->log_default(cf->arg);
	else
		l->logpath = xstrdup("stderr");
	return l->logpath != NULL ? 0 : -1;
}

/*
 * Opens the log; where it cannot be, the caller may offer one more path
 * (a default that turned out unusable) or say why.
 */
static int
open_log(struct engine_load *l)
{
	const struct engine_load_config *cf = l->cf;
	int defaulted = cf->log == NULL && policy_log_path(l->p) == NULL &&
	    cf->log_default != NULL;
	char err[256], *next;
	int tries;

	if (log_path(l) != 0)
		return -1;
	for (tries = 0; tries < 2; tries++) {
		l->audit = audit_open(l->logpath, l->run_id, err, sizeof(err));
		if (l->audit != NULL)
			break;
		if (cf->log_failed == NULL) {
			log_warnx("%s: %s", cf->name, err);
			return -1;
		}
		next = cf->log_failed(cf->arg, err, defaulted && tries == 0);
		if (next == NULL)
			return -1;
		free(l->logpath);
		l->logpath = next;
	}
	if (l->audit == NULL)
		return -1;
	audit_set_limit(l->audit, cf->log_limit);
	return cf->log_opened != NULL
	    ? cf->log_opened(cf->arg, l->logpath, l->audit)
	    : 0;
}

/*
 * The files to hide: the files the engine trusts, the secret files, the
 * CA key and the audit log.  The log must not lie where the sandbox can
 * write: hidden, the file itself cannot be touched, but a directory or a
 * symlink on its way could be renamed or retargeted and a forged log put
 * in its place for the reviewer.
 */
static int
publish_hides(struct engine_load *l)
{
	struct secret_store *ss = policy_secrets(l->p);
	int (*hide)(void *, const char *) = l->sink->hide;
	const char *f, *cert, *key;
	size_t i;
	int bad = 0;

	for (i = 0; (f = policy_file_at(l->p, i)) != NULL; i++)
		bad |= publish(l, hide, f); /* "--allow": nothing */
	for (i = 0; i < secret_store_count(ss); i++)
		if (secret_source(secret_store_get(ss, i)) == SECRET_FILE)
			bad |= publish(
			    l, hide, secret_origin(secret_store_get(ss, i)));
	if (policy_ca(l->p, &cert, &key))
		bad |= publish(l, hide, key);
	if (strcmp(l->logpath, "stderr") != 0 &&
	    trusted(l, "audit log", l->logpath) != 0)
		bad = -1;
	else if (strcmp(l->logpath, "stderr") != 0)
		bad |= publish(l, hide, l->logpath);
	return bad;
}

/* --- interception --------------------------------------------------------- */

/* The intercepted targets, typed; names borrowed from the policy. */
struct patlist {
	struct target_pattern v[ENGINE_LOAD_LIST_MAX];
	size_t n;
	int full;
};

static void
patlist_add(void *arg, const struct target_pattern *p)
{
	struct patlist *pl = arg;

	if (pl->n < ENGINE_LOAD_LIST_MAX)
		pl->v[pl->n++] = *p;
	else
		pl->full = 1;
}

static int
publish_standins(struct engine_load *l)
{
	const struct engine_load_sink *s = l->sink;
	size_t i;

	if ((l->standins = inject_standins_new(l->p)) == NULL)
		fatalx("%s: out of memory", l->cf->name);
	for (i = 0;
	     s->standin != NULL && i < inject_standins_count(l->standins); i++)
		if (s->standin(s->arg, inject_standin_env(l->standins, i),
		        inject_standin_value(l->standins, i)) != 0)
			return -1;
	return 0;
}

/* A CA the user pins ("ca" line), else one made for these targets. */
static int
make_tls(
    struct engine_load *l, const struct patlist *t, const struct strlist *cas)
{
	const char *name = l->cf->name, *cert, *key;
	char err[256];
	size_t i;

	l->ca = policy_ca(l->p, &cert, &key)
	    ? ca_load(cert, key, err, sizeof(err))
	    : ca_new_run_for(t->v, t->n, 0, err, sizeof(err));
	if (l->ca == NULL ||
	    (l->tls = tls_new(l->ca, err, sizeof(err))) == NULL) {
		log_warnx("%s: interception: %s", name, err);
		return -1;
	}
	/* Trust anchors are read now, before the sandbox exists. */
	for (i = 0; i < cas->n; i++)
		if (tls_add_trust(l->tls, cas->v[i], err, sizeof(err)) != 0) {
			log_warnx(
			    "%s: upstream-ca %s: %s", name, cas->v[i], err);
			return -1;
		}
	/* The CA key is a secret too: no core dump, no tracing. */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (!ca_constrained(l->ca))
		log_warnx("%s: the CA that signs for intercepted hosts has no "
		          "name constraints: it could sign for any name",
		    name);
	return 0;
}

/*
 * Under ENGINE_LOAD_INTERCEPT_PINNED only a pinned CA intercepts: a CA
 * made here would be trusted by no client.  Without one, the rules that
 * need it answer 501 (request.c), said once here.
 */
static int
pinned_or_run(struct engine_load *l)
{
	const char *cert, *key;

	if (l->cf->intercept != ENGINE_LOAD_INTERCEPT_PINNED ||
	    policy_ca(l->p, &cert, &key))
		return 1;
	log_warnx("%s: no pinned CA (ca cert PATH key PATH): the rules that "
	          "need TLS interception (paths, methods, inject) answer 501",
	    l->cf->name);
	return 0;
}

/*
 * When a rule needs the requests inside TLS: a CA that can sign only for
 * the intercepted targets, the TLS contexts, and its certificate for the
 * sandbox to trust.  Placeholder stand-ins are published in any case.
 */
static int
intercept(struct engine_load *l)
{
	struct patlist t = {.n = 0};
	struct strlist cas = {{NULL}, 0, 0};
	int rc = -1;

	policy_intercept_targets(l->p, patlist_add, &t);
	/* Read here, the CA files need no Landlock read access later. */
	policy_upstream_cas(l->p, strlist_add, &cas);
	if (t.full || cas.full)
		log_warnx("%s: more than %d intercepted targets", l->cf->name,
		    ENGINE_LOAD_LIST_MAX);
	else if (publish_standins(l) != 0)
		rc = -1;
	else if (t.n == 0 || !pinned_or_run(l))
		rc = 0;
	else if (make_tls(l, &t, &cas) == 0)
		rc = publish(l, l->sink->ca, ca_cert_pem(l->ca));
	strlist_clear(&cas);
	return rc;
}

/*
 * The certificates of the policy's `trust` lines, read and checked here,
 * before the sandbox exists: only certificates leave (ca_read_certs),
 * whatever else the file holds.
 */
static int
publish_trust(struct engine_load *l)
{
	const struct policy_trust *t;
	char err[512], *pem;
	size_t i;
	int rc = 0;

	if (l->sink->trust == NULL)
		return 0;
	for (i = 0; rc == 0 && (t = policy_trust_at(l->p, i)) != NULL; i++) {
		if (i == VIEW_TRUST_MAX) {
			log_warnx("%s: more than %d trust lines", l->cf->name,
			    VIEW_TRUST_MAX);
			return -1;
		}
		if (ca_read_certs(t->path, &pem, err, sizeof(err)) < 0) {
			log_warnx("%s: %s:%u: trust %s: %s", l->cf->name,
			    t->file, t->line, t->path, err);
			return -1;
		}
		rc = l->sink->trust(l->sink->arg, pem);
		free(pem);
	}
	return rc;
}

/* --- the whole ------------------------------------------------------------ */

static int
publish_hello(struct engine_load *l)
{
	return l->sink->hello != NULL ? l->sink->hello(l->sink->arg, l->run_id)
	                              : 0;
}

static int
publish_end(struct engine_load *l)
{
	if ((l->sink->policy != NULL &&
	        l->sink->policy(l->sink->arg, l->p) != 0) ||
	    publish(l, l->sink->log, l->logpath) != 0)
		return -1;
	return l->sink->ready != NULL ? l->sink->ready(l->sink->arg) : 0;
}

int
engine_load_new(const struct engine_load_config *cf,
    const struct engine_load_sink *sink, struct engine_load **out)
{
	static const struct engine_load_sink none = {0};
	struct engine_load *l = xcalloc(1, sizeof(*l));
	int rc = ENGINE_LOAD_FAILED;

	l->cf = cf;
	l->sink = sink != NULL ? sink : &none;
	if (audit_make_run_id(l->run_id) != 0)
		fatal("getrandom");
	if (publish_hello(l) == 0 && (rc = load_policy(l)) == ENGINE_LOAD_OK &&
	    (publish_envsecrets(l) != 0 || open_log(l) != 0 ||
	        publish_hides(l) != 0 || (cf->intercept && intercept(l) != 0) ||
	        publish_trust(l) != 0 || publish_end(l) != 0))
		rc = ENGINE_LOAD_FAILED;
	l->cf = NULL;
	l->sink = NULL;
	if (rc != ENGINE_LOAD_OK) {
		engine_load_free(l);
		l = NULL;
	}
	*out = l;
	return rc;
}

const struct policy *
engine_load_policy(const struct engine_load *l)
{
	return l->p;
}

struct audit *
engine_load_audit(const struct engine_load *l)
{
	return l->audit;
}

const char *
engine_load_run_id(const struct engine_load *l)
{
	return l->run_id;
}

const char *
engine_load_log_path(const struct engine_load *l)
{
	return l->logpath;
}

struct tls *
engine_load_tls(const struct engine_load *l)
{
	return l->tls;
}

const struct inject_standins *
engine_load_standins(const struct engine_load *l)
{
	return l->standins;
}

int
engine_load_reads(const struct engine_load *l,
    void (*fn)(void *arg, const char *path), void *arg)
{
	struct secret_store *ss = policy_secrets(l->p);
	const struct secret *sec;
	const char *f;
	char *real;
	size_t i;
	int landlock = 1;

	for (i = 0; (f = policy_file_at(l->p, i)) != NULL; i++)
		if ((real = realpath(f, NULL)) != NULL) {
			fn(arg, dirname(real));
			free(real);
		}
	for (i = 0; i < secret_store_count(ss); i++) {
		sec = secret_store_get(ss, i);
		if (secret_source(sec) == SECRET_EXEC)
			landlock = 0;
		else if (secret_source(sec) == SECRET_FILE)
			fn(arg, secret_origin(sec));
	}
	return landlock;
}

struct policy *
engine_load_take_policy(struct engine_load *l)
{
	struct policy *p = l->p;

	l->p = NULL;
	return p;
}

void
engine_load_free(struct engine_load *l)
{
	if (l == NULL)
		return;
	audit_close(l->audit);
	free(l->logpath);
	inject_standins_free(l->standins);
	tls_free(l->tls);
	ca_free(l->ca);
	policy_free(l->p);
	free(l);
}
