/*
 * engine_load.h: what an engine runs on, loaded in the one process that
 * may hold secrets -- the policy and its secrets, the audit log and, when
 * a rule needs the requests inside TLS, the CA, the TLS contexts and the
 * placeholder stand-ins -- and the sandbox view published as it loads.
 *
 * The view (view.h says its messages) is what a sandbox may know of the
 * engine: the run id, the variables that hold secrets (to be wiped), the
 * paths to hide, the stand-ins, the CA certificate to trust, the log
 * path; never a secret value or the CA key.  It goes through a sink in
 * this order:
 *
 *   hello  envsecret..  hide..  standin..  ca (0 or 1)  policy  log  ready
 *
 * `pinhole run`'s engine sends each to the launcher (cli/run_engine.c), a
 * broker will send them to its client, `pinhole proxy` publishes none.
 *
 * What is the caller's to decide -- is a file the engine trusts out of a
 * sandbox's reach, where the log goes when nobody named one, what an
 * unusable log means -- are hooks in the config, so that the run's words
 * stay in cli/.  The loaded engine is then handed to engine_new().
 */
#ifndef PINHOLE_PROXY_ENGINE_LOAD_H
#define PINHOLE_PROXY_ENGINE_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

struct audit;
struct engine_load;
struct inject_standins;
struct tls;

#define ENGINE_LOAD_LIST_MAX 256 /* intercepted targets, upstream-ca files */

/* Where the view goes.  Each may be NULL; each returns 0, or -1 said. */
struct engine_load_sink {
	int (*hello)(void *arg, const char *run_id);
	/* VAR holds secret NAME's value: the user wipes its copy. */
	int (*envsecret)(void *arg, const char *var, const char *name);
	int (*hide)(void *arg, const char *path);
	int (*standin)(void *arg, const char *var, const char *value);
	int (*ca)(void *arg, const char *pem);
	/* The certificates of one `trust` line (PEM, certificates only);
	 * NULL: the trust lines are not read (pinhole proxy). */
	int (*trust)(void *arg, const char *pem);
	int (*log)(void *arg, const char *path);
	int (*ready)(void *arg);
	void *arg;
	/* The policy is loaded: what the view says of it besides (the ports
	 * the sandbox captures, issue 12); before log.  May be NULL. */
	int (*policy)(void *arg, const struct policy *p);
};

struct engine_load_config {
	const char *name; /* in messages: "run", "proxy" */
	const char *const *policies;
	size_t npolicies;
	const char *allow; /* rules after the files, named "--allow"; or NULL */
	policy_diag_fn *diag; /* the policy's diagnostics */
	void *diag_arg;
	const char
	    *log; /* NULL: the policy's, else log_default's, else stderr */
	uint64_t log_limit; /* 0: none */
	int intercept; /* ENGINE_LOAD_INTERCEPT_*: below */
	/* The hooks, each may be NULL; ARG is theirs. */
	/* WHAT names a file the engine trusts: 0 if it may, -1 said why. */
	int (*trusted)(void *arg, const char *what, const char *path);
	/* The log nobody named: a path (malloc'd), or NULL said why. */
	char *(*log_default)(void *arg);
	/* The log could not be opened (ERR says why; DEFAULTED: the path was
	 * log_default's): another path to try (malloc'd), or NULL said why.
	 * NULL hook: the engine says "NAME: ERR". */
	char *(*log_failed)(void *arg, const char *err, int defaulted);
	/* The log is open at PATH (may set its limit): 0, or -1 said why. */
	int (*log_opened)(void *arg, const char *path, struct audit *);
	void *arg;
};

/*
 * Interception (cf.intercept).  RUN: when a rule needs the requests
 * inside TLS, the pinned CA ("ca" line) or one made for the run, the TLS
 * contexts and the placeholder stand-ins (pinhole run).  PINNED: only
 * with a pinned CA, one the administrator made the clients trust; without
 * one the rules that need it answer 501; a placeholder rule is refused,
 * at the start and at each reload, since no sandbox gets its stand-in
 * (pinhole proxy).
 */
enum {
	ENGINE_LOAD_INTERCEPT_NONE = 0,
	ENGINE_LOAD_INTERCEPT_RUN = 1,
	ENGINE_LOAD_INTERCEPT_PINNED = 2,
};

/* engine_load_new's results. */
enum {
	ENGINE_LOAD_OK = 0,
	ENGINE_LOAD_FAILED = -1, /* said */
	ENGINE_LOAD_E_SECRETS = -2, /* a secret did not load (secret.c said
	                               which and why, in one line: a run adds
	                               none; a reload says what it keeps) */
};

/*
 * Makes a run id, loads CF's policy, checks the files it trusts, loads
 * its secrets, opens the log and, with CF->intercept, makes the CA and the
 * TLS contexts; publishes the view through SINK (NULL: none) as it goes.
 * Returns ENGINE_LOAD_OK and *OUT, or an error (*OUT NULL) said.
 */
int engine_load_new(const struct engine_load_config *cf,
    const struct engine_load_sink *sink, struct engine_load **out);

/*
 * Parses CF's policy again, reading no secret (a reload); NULL said,
 * also for a placeholder rule under ENGINE_LOAD_INTERCEPT_PINNED.
 */
struct policy *engine_load_parse(const struct engine_load_config *cf);

/* What was loaded, borrowed from L. */
const struct policy *engine_load_policy(const struct engine_load *l);
struct audit *engine_load_audit(const struct engine_load *l);
const char *engine_load_run_id(const struct engine_load *l);
const char *engine_load_log_path(const struct engine_load *l);
struct tls *engine_load_tls(const struct engine_load *l); /* or NULL */
const struct inject_standins *engine_load_standins(const struct engine_load *l);

/*
 * What a reload reads, for a daemon that sheds privilege (Landlock): FN
 * gets the directory of each policy file (includes lie near it) and each
 * secret file.  Returns 1, or 0 when an exec secret's helper may need to
 * read anything (no Landlock then).
 */
int engine_load_reads(const struct engine_load *l,
    void (*fn)(void *arg, const char *path), void *arg);

/* The policy, now the caller's (NULL the second time). */
struct policy *engine_load_take_policy(struct engine_load *l);

/* Closes the log, frees the CA, the TLS contexts, the stand-ins and the
 * policy (wiping its secrets).  NULL does nothing. */
void engine_load_free(struct engine_load *l);

#endif
