/*
 * run_setup.c: what `pinhole run` prepares before the sandbox starts: the
 * policy and its secrets (environment secrets kept out), the audit log,
 * the paths hidden from the sandbox, and, when a rule needs the requests
 * inside TLS, the CA, the TLS contexts, the trust bundle and the
 * placeholder stand-ins.
 */
#include <sys/prctl.h>
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/run.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "netns/env.h"
#include "netns/mount.h"
#include "policy/policy.h"
#include "policy/secret.h"
#include "proxy/audit.h"
#include "proxy/ca.h"
#include "proxy/inject.h"
#include "proxy/tls.h"

/* --- policy, secrets, log ------------------------------------------------- */

static int
load_policy(struct run *r)
{
	struct cli_diag_count count = {0, 0, 1};
	struct secret_store *ss;

	if (policy_load_extra(r->policies, r->npolicies, "--allow", r->allow,
	        cli_print_diag, &count, &r->policy) != 0)
		return -1;
	ss = policy_secrets(r->policy);
	if (secret_store_count(ss) > 0 &&
	    secret_store_load(ss, NULL, NULL) != 0) {
		log_warnx("run: the policy's secrets could not be loaded");
		return -1;
	}
	return 0;
}

/* Wipes NAME's value in pinhole's own environment, then removes it. */
static void
wipe_env(const char *name)
{
	size_t len = strlen(name);
	char **e;

	for (e = environ; *e != NULL; e++)
		if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
			explicit_bzero(*e + len + 1, strlen(*e + len + 1));
	unsetenv(name);
}

/*
 * Environment secrets never enter the sandbox: --keep-env of one is an
 * error, and a kept default of the same name is dropped.  The values are
 * in the secret store by now; pinhole's own copies are wiped, so no
 * process started later (the sandbox's PID 1 begins as a copy of this
 * one) holds them.
 */
static int
guard_env_secrets(struct run *r)
{
	struct secret_store *ss = policy_secrets(r->policy);
	struct secret *sec;
	size_t i, k;

	for (i = 0; i < secret_store_count(ss); i++) {
		sec = secret_store_get(ss, i);
		if (secret_source(sec) != SECRET_ENV)
			continue;
		for (k = 0; k < r->nkeep; k++)
			if (strcmp(r->keep[k], secret_origin(sec)) == 0) {
				log_warnx("run: --keep-env %s: that variable "
				          "holds secret '%s', which the "
				          "sandbox must not see",
				    r->keep[k], secret_name(sec));
				return -1;
			}
		env_unset(r->env, secret_origin(sec));
		wipe_env(secret_origin(sec));
	}
	return 0;
}

/* mkdir -p DIR, private: the log names hosts and paths. */
static void
make_dirs(char *dir)
{
	char *p;

	for (p = dir + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		(void)mkdir(dir, 0700);
		*p = '/';
	}
	(void)mkdir(dir, 0700);
}

/*
 * The log when there is no usable home (e.g. nobody): a directory of this
 * user's, $TMPDIR/pinhole-UID (or /tmp/...), made 0700 and checked to be
 * a real directory that the user owns and nobody else may enter, so that
 * no one can plant the log there.  Returns the log's path, or NULL (said).
 */
static char *
private_log(void)
{
	const char *tmp = getenv("TMPDIR");
	struct stat st;
	char *dir, *path = NULL;

	if (tmp == NULL || tmp[0] != '/')
		tmp = "/tmp";
	dir = xasprintf("%s/pinhole-%u", tmp, (unsigned)getuid());
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		log_warn("run: audit log: %s", dir);
	else if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != getuid() || (st.st_mode & 077) != 0)
		log_warnx("run: audit log: %s is not a private directory of "
		          "uid %u (a symlink, another owner, or open to "
		          "others); give --log FILE",
		    dir, (unsigned)getuid());
	else
		path = xasprintf("%s/audit.jsonl", dir);
	free(dir);
	return path;
}

/* $XDG_STATE_HOME/pinhole/audit.jsonl, by default in the user's home. */
static char *
default_log(void)
{
	const char *state = getenv("XDG_STATE_HOME");
	struct passwd *pw = getpwuid(getuid());
	char *dir, *path;

	if (state != NULL && state[0] == '/')
		dir = xasprintf("%s/pinhole", state);
	else if (pw != NULL && pw->pw_dir[0] == '/')
		dir = xasprintf("%s/.local/state/pinhole", pw->pw_dir);
	else
		return private_log();
	make_dirs(dir);
	path = xasprintf("%s/audit.jsonl", dir);
	free(dir);
	return path;
}

/*
 * Under run the log must be a stream the sandbox cannot write: not
 * pinhole's standard error (or a terminal, or the file behind fds 0-2),
 * which the command writes to as well and could fill with forged records.
 */
static int
log_shared(const struct run *r)
{
	const char *why = NULL;
	int fd;

	if (strcmp(r->logpath, "stderr") == 0)
		why = "is standard error";
	else if (audit_is_tty(r->audit))
		why = "is a terminal";
	for (fd = 0; why == NULL && fd <= 2; fd++)
		if (audit_same_file(r->audit, fd))
			why =
			    "is the file behind the command's standard streams";
	if (why != NULL)
		log_warnx(
		    "run: the audit log %s %s, which the sandboxed command "
		    "writes to as well (it could forge records); give "
		    "--log FILE",
		    r->logpath, why);
	return why != NULL;
}

/*
 * What one run may make pinhole write to the log (--log-limit): past it,
 * records are only counted (audit.h), so a sandbox cannot fill the disk.
 */
static int
log_limit(struct run *r)
{
	const char *s = r->log_limit != NULL ? r->log_limit : RUN_LOG_LIMIT;
	uint64_t bytes;

	if (audit_parse_size(s, &bytes) != 0) {
		log_warnx("run: --log-limit %s: a size is digits with an "
		          "optional K, M or G",
		    s);
		return -1;
	}
	audit_set_limit(r->audit, bytes);
	return 0;
}

static int
open_log(struct run *r)
{
	const char *path = r->log ? r->log : policy_log_path(r->policy);
	char err[256];

	r->logpath = path ? xstrdup(path) : default_log();
	if (r->logpath == NULL)
		return -1;
	if (audit_make_run_id(r->run_id) != 0)
		fatal("getrandom");
	if (strcmp(r->logpath, "stderr") == 0) {
		(void)log_shared(r);
		return -1;
	}
	r->audit = audit_open(r->logpath, r->run_id, err, sizeof(err));
	if (r->audit == NULL && path == NULL) {
		/* No usable home after all: the private fallback. */
		log_warnx("run: %s; using a private file instead (--log FILE "
		          "chooses)",
		    err);
		free(r->logpath);
		if ((r->logpath = private_log()) == NULL)
			return -1;
		r->audit = audit_open(r->logpath, r->run_id, err, sizeof(err));
	}
	if (r->audit == NULL) {
		log_warnx("run: audit log: %s", err);
		return -1;
	}
	return log_shared(r) || log_limit(r) != 0 ? -1 : 0;
}

/* --- interception --------------------------------------------------------- */

/* Where distributions keep the system's CA bundle; the first one found. */
static const char *const system_bundles[] = {
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
};

/* Variables that point tools at a CA bundle. */
static const char *const bundle_vars[] = {
    "SSL_CERT_FILE",
    "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "PIP_CERT",
    "NPM_CONFIG_CAFILE",
    "CARGO_HTTP_CAINFO",
};

struct strlist {
	char *v[RUN_LIST_MAX];
	size_t n;
	int full;
};

static void
strlist_add(void *arg, const char *s)
{
	struct strlist *l = arg;

	if (l->n < RUN_LIST_MAX)
		l->v[l->n++] = xstrdup(s);
	else
		l->full = 1;
}

/* The system bundle plus the run CA, over the system bundle's path. */
static int
trust_bundle(struct run *r)
{
	const char *pem = ca_cert_pem(r->ca), *dst = NULL;
	char err[PATH_MAX + 64], *sys = NULL, *all;
	size_t i, len = 0;
	FILE *f;

	for (i = 0; dst == NULL &&
	     i < sizeof(system_bundles) / sizeof(system_bundles[0]);
	     i++)
		if ((f = fopen(system_bundles[i], "re")) != NULL) {
			dst = system_bundles[i];
			if (getdelim(&sys, &len, '\0', f) < 0)
				sys[0] = '\0';
			fclose(f);
		}
	/* No system bundle: tools that read the variables still work. */
	all = xasprintf("%s\n%s", sys ? sys : "", pem);
	free(sys);
	if (dst == NULL)
		dst = "/tmp/.pinhole-ca-bundle.pem";
	i = mnt_plan_add_file(r->plan, dst, all, strlen(all), err, sizeof(err));
	free(all);
	if (i != 0) {
		log_warnx("run: %s", err);
		return -1;
	}
	for (i = 0; i < sizeof(bundle_vars) / sizeof(bundle_vars[0]); i++)
		env_set(r->env, bundle_vars[i], dst);
	return 0;
}

/*
 * When a rule needs the requests inside TLS: a run CA that can sign only
 * for the intercepted targets, the TLS contexts, and the bundle the
 * sandbox trusts.  Placeholder stand-ins go into the environment.
 */
static int
setup_interception(struct run *r)
{
	struct strlist t = {{NULL}, 0, 0}, cas = {{NULL}, 0, 0};
	const char *cert, *key;
	char err[256];
	size_t i;
	int rc = -1;

	policy_intercept_targets(r->policy, strlist_add, &t);
	policy_upstream_cas(r->policy, strlist_add, &cas);
	memcpy(r->readable, cas.v, sizeof(cas.v));
	r->nreadable = cas.n;
	if (t.full || cas.full) {
		log_warnx(
		    "run: more than %d intercepted targets", RUN_LIST_MAX);
		goto out;
	}
	if ((r->standins = inject_standins_new(r->policy)) == NULL)
		fatalx("run: out of memory");
	for (i = 0; i < inject_standins_count(r->standins); i++)
		env_set(r->env, inject_standin_env(r->standins, i),
		    inject_standin_value(r->standins, i));
	rc = 0;
	if (t.n == 0)
		goto out;
	rc = -1;
	/* A CA the user pins ("ca" line), else one made for this run. */
	r->ca = policy_ca(r->policy, &cert, &key)
	    ? ca_load(cert, key, err, sizeof(err))
	    : ca_new_run((const char *const *)t.v, t.n, 0, err, sizeof(err));
	if (r->ca == NULL ||
	    (r->tls = tls_new(r->ca, err, sizeof(err))) == NULL) {
		log_warnx("run: interception: %s", err);
		goto out;
	}
	/* The CA key is a secret too: no core dump, no tracing. */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (!ca_constrained(r->ca))
		log_warnx("run: the CA that signs for intercepted hosts has no "
		          "name constraints: it could sign for any name");
	rc = trust_bundle(r);
out:
	for (i = 0; i < t.n; i++)
		free(t.v[i]);
	return rc;
}

/* --- the mount plan ------------------------------------------------------- */

static void
hide_file(struct run *r, const char *path)
{
	char *real = realpath(path, NULL);

	if (real != NULL)
		(void)mnt_plan_add(r->plan, MNT_HIDE, NULL, real, NULL, 0);
	free(real);
}

/*
 * The audit log must not lie where the sandbox can write: hidden, the
 * file itself cannot be touched, but the directory holding it could be
 * renamed and a forged log put in its place for the reviewer.
 */
static int
log_writable(const struct run *r)
{
	char *real = realpath(r->logpath, NULL);
	int w = real != NULL && mnt_plan_is_writable(r->plan, real);

	if (w)
		log_warnx("run: the audit log %s lies in a directory the "
		          "sandbox may write to, where it could be replaced; "
		          "give --log FILE elsewhere",
		    r->logpath);
	free(real);
	return w;
}

/*
 * The policy files must not lie where the sandbox can write (it would
 * widen its own next run); they are hidden, as are the secret files and
 * the audit log.
 */
static int
plan_hides(struct run *r)
{
	struct secret_store *ss = policy_secrets(r->policy);
	struct passwd *pw = getpwuid(getuid());
	const char *f, *cert, *key;
	char *real;
	size_t i;
	int bad = 0;

	for (i = 0; (f = policy_file_at(r->policy, i)) != NULL; i++) {
		if ((real = realpath(f, NULL)) == NULL)
			continue; /* "--allow" */
		if (mnt_plan_is_writable(r->plan, real)) {
			log_warnx("run: policy file %s lies in a directory the "
			          "sandbox may write to; move it out (or run "
			          "from another directory)",
			    f);
			bad = -1;
		}
		(void)mnt_plan_add(r->plan, MNT_HIDE, NULL, real, NULL, 0);
		free(real);
	}
	for (i = 0; i < secret_store_count(ss); i++)
		if (secret_source(secret_store_get(ss, i)) == SECRET_FILE)
			hide_file(r, secret_origin(secret_store_get(ss, i)));
	if (policy_ca(r->policy, &cert, &key))
		hide_file(r, key);
	if (strcmp(r->logpath, "stderr") != 0 && log_writable(r))
		bad = -1;
	else if (strcmp(r->logpath, "stderr") != 0)
		hide_file(r, r->logpath);
	mnt_plan_hide_home(r->plan, pw != NULL ? pw->pw_dir : NULL);
	return bad;
}

int
run_setup(struct run *r)
{
	if (load_policy(r) != 0 || guard_env_secrets(r) != 0 ||
	    open_log(r) != 0 || plan_hides(r) != 0 ||
	    setup_interception(r) != 0)
		return -1;
	return 0;
}
