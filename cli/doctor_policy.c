/*
 * doctor_policy.c: the rows of pinhole doctor -p: does the policy load,
 * do its secrets load, can its audit log be written.  The kernel rows
 * come first, from netns/doctor.c, whose child runner and result helpers
 * these probes share; the secrets and log probes run in a child too, so
 * the secret values never reach the doctor process.
 */
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/doctor_policy.h"

#define NITEMS(a) (sizeof(a) / sizeof((a)[0]))

struct doctor_ctx {
	const struct doctor_policy_opts *o;
	struct policy *policy; /* loaded by the policy probe */
	unsigned errors, warnings; /* its diagnostics */
};

enum probe_when {
	WHEN_POLICY, /* -p given */
	WHEN_LOG, /* -p or --log given */
};

enum probe_needs {
	NEEDS_NOTHING,
	NEEDS_POLICY, /* the policy loaded */
	NEEDS_LOG, /* --log given, or the policy loaded */
};

struct probe {
	const char *name;
	int required;
	enum probe_when when;
	enum probe_needs needs;
	int timeout_ms; /* 0: runs in the caller, not in a child */
	doctor_child_fn *fn;
};

static doctor_child_fn probe_policy, probe_secrets, probe_log;

/* In running order, after the kernel's. */
static const struct probe probes[] = {
    {"policy", 1, WHEN_POLICY, NEEDS_NOTHING, 0, probe_policy},
    {"secrets", 1, WHEN_POLICY, NEEDS_POLICY, DOCTOR_TIMEOUT_MS, probe_secrets},
    {"log", 1, WHEN_LOG, NEEDS_LOG, DOCTOR_TIMEOUT_MS, probe_log},
};

/* Counts the policy's diagnostics on their way to the caller's DIAG. */
static void
count_diag(void *arg, const struct policy_diag *d)
{
	struct doctor_ctx *c = arg;

	if (d->warning)
		c->warnings++;
	else
		c->errors++;
	if (c->o->diag != NULL)
		c->o->diag(c->o->diag_arg, d);
}

static void
probe_policy(struct doctor_result *r, void *arg)
{
	struct doctor_ctx *c = arg;
	size_t nr, ns;

	if (policy_load(
	        c->o->policy, c->o->npolicy, count_diag, c, &c->policy) != 0) {
		doctor_verdict(r, DOCTOR_NO,
		    "fix the errors printed on stderr as FILE:LINE:COL",
		    "%u error%s, %u warning%s", c->errors,
		    c->errors == 1 ? "" : "s", c->warnings,
		    c->warnings == 1 ? "" : "s");
		return;
	}
	nr = policy_rule_count(c->policy);
	ns = secret_store_count(policy_secrets(c->policy));
	doctor_verdict(r, DOCTOR_YES, "",
	    "%zu rule%s, %zu secret%s, %u warning%s", nr, nr == 1 ? "" : "s",
	    ns, ns == 1 ? "" : "s", c->warnings, c->warnings == 1 ? "" : "s");
}

struct secret_failures {
	unsigned n;
	char first[256];
};

static void
secret_failed(void *arg, const char *msg)
{
	struct secret_failures *f = arg;

	if (f->n++ == 0)
		snprintf(f->first, sizeof(f->first), "%s", msg);
}

/* Runs in a child: the values never reach the doctor process. */
static void
probe_secrets(struct doctor_result *r, void *arg)
{
	struct doctor_ctx *c = arg;
	struct secret_store *st = policy_secrets(c->policy);
	struct secret_failures f = {0, ""};
	size_t i, n = secret_store_count(st);

	if (n == 0) {
		doctor_verdict(
		    r, DOCTOR_YES, "", "the policy defines no secret");
		return;
	}
	secret_store_load(st, secret_failed, &f);
	if (f.n == 0) {
		doctor_verdict(r, DOCTOR_YES, "", "%zu loaded:", n);
		for (i = 0; i < n; i++)
			doctor_append(
			    r, " %s", secret_name(secret_store_get(st, i)));
	} else {
		doctor_verdict(r, DOCTOR_NO, "", "%s", f.first);
		if (f.n == 1)
			doctor_advise(r,
			    "fix what it names; 'pinhole check "
			    "--secrets' checks again");
		else
			doctor_advise(r,
			    "fix it and %u more; 'pinhole check "
			    "--secrets' lists them all",
			    f.n - 1);
	}
	/* This child's copy: wipe the values before it answers. */
	policy_free(c->policy);
	c->policy = NULL;
}

/* PATH does not exist: can it be created?  Fills R. */
static void
log_creatable(struct doctor_result *r, const char *path)
{
	char dir[PATH_MAX];
	char *slash;
	int err;

	snprintf(dir, sizeof(dir), "%s", path);
	if ((slash = strrchr(dir, '/')) == NULL)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir) /* "/name": the root directory */
		slash[1] = '\0';
	else
		*slash = '\0';
	/* access(): nothing is created, so nothing is left behind. */
	if (access(dir, W_OK | X_OK) == 0) {
		doctor_verdict(
		    r, DOCTOR_YES, "", "%s will be created in %s", path, dir);
		return;
	}
	err = errno;
	doctor_verdict(r, DOCTOR_NO, "", "cannot create %s: %s: %s", path, dir,
	    strerror(err));
	if (err == ENOENT)
		doctor_advise(
		    r, "mkdir -p %s, or name another file with --log", dir);
	else
		doctor_advise(r,
		    "let uid %u write to %s, or name another file with --log",
		    (unsigned)getuid(), dir);
}

static void
probe_log(struct doctor_result *r, void *arg)
{
	struct doctor_ctx *c = arg;
	const char *path = c->o->log;
	int fd;

	if (path == NULL)
		path = policy_log_path(c->policy);
	if (path == NULL) {
		doctor_verdict(r, DOCTOR_YES, "",
		    "the default audit log (see --log in pinhole(1))");
		return;
	}
	if (strcmp(path, "stderr") == 0) {
		/* The command writes there too: it could forge records. */
		doctor_verdict(r, DOCTOR_NO, "",
		    "pinhole run refuses an audit log on stderr (pinhole "
		    "proxy takes it)");
		doctor_advise(
		    r, "name a file with --log or the policy's log line");
		return;
	}
	/* No O_CREAT; O_NONBLOCK: a FIFO without a reader cannot hang us. */
	fd =
	    open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd != -1) {
		doctor_verdict(
		    r, DOCTOR_YES, "", "%s is writable (appended to)", path);
		close(fd);
	} else if (errno == ENOENT) {
		log_creatable(r, path);
	} else {
		doctor_verdict(r, DOCTOR_NO, "", "cannot append to %s: %s",
		    path, strerror(errno));
		doctor_advise(r,
		    "let uid %u write to it, or name another file with --log",
		    (unsigned)getuid());
	}
}

/* --- running ------------------------------------------------------------- */

static int
wanted(const struct probe *p, const struct doctor_policy_opts *o)
{
	switch (p->when) {
	case WHEN_POLICY:
		return o->npolicy > 0;
	default:
		return o->npolicy > 0 || o->log != NULL;
	}
}

/* Why P cannot be tried yet, or NULL when it can. */
static const char *
not_tried(const struct probe *p, const struct doctor_ctx *c)
{
	switch (p->needs) {
	case NEEDS_POLICY:
		return c->policy != NULL ? NULL : "the policy has errors";
	case NEEDS_LOG:
		return c->policy != NULL || c->o->log != NULL
		    ? NULL
		    : "the policy has errors";
	default:
		return NULL;
	}
}

static void
run_one(const struct probe *p, struct doctor_ctx *c, struct doctor_result *r)
{
	const char *why;
	int ms = p->timeout_ms;

	memset(r, 0, sizeof(*r));
	r->feature = p->name;
	r->required = p->required;
	/* Each exec helper may take its whole timeout. */
	if (p->needs == NEEDS_POLICY && c->policy != NULL)
		ms += SECRET_EXEC_TIMEOUT_MS *
		    (int)secret_store_count(policy_secrets(c->policy));
	if ((why = not_tried(p, c)) != NULL)
		doctor_verdict(
		    r, DOCTOR_NO, "fix the policy first", "not tried: %s", why);
	else if (ms == 0)
		p->fn(r, c);
	else
		doctor_in_child(p->fn, c, r, ms);
	doctor_printable(r);
}

size_t
doctor_policy_run(
    const struct doctor_policy_opts *o, struct doctor_result *res, size_t max)
{
	struct doctor_ctx c = {o, NULL, 0, 0};
	size_t i, n;

	n = doctor_run(res, max);
	for (i = 0; i < NITEMS(probes) && n < max; i++) {
		if (!wanted(&probes[i], o))
			continue;
		run_one(&probes[i], &c, &res[n]);
		n++;
	}
	policy_free(c.policy);
	return n;
}
