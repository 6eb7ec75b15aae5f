/*
 * run_setup.c: what `pinhole run` prepares before the sandbox starts: the
 * policy and its secrets (environment secrets kept out), the audit log,
 * the paths hidden from the sandbox, and, when a rule needs the requests
 * inside TLS, the CA, the TLS contexts, the trust bundle and the
 * placeholder stand-ins.
 */
#include <sys/prctl.h>
#include <sys/random.h>
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
#include "cli/run_java.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "netns/env.h"
#include "netns/hostinfo.h"
#include "netns/mount.h"
#include "policy/policy.h"
#include "policy/secret.h"
#include "audit/audit.h"
#include "proxy/ca.h"
#include "proxy/inject.h"
#include "proxy/tls.h"
#include "proxy/view.h"

/* --- policy, secrets, log ------------------------------------------------- */

static int trusted_files(struct run *);

/* The engine's side: one text message of the view to the launcher. */
static int
send_text(struct run *r, uint32_t type, const char *s)
{
	if (view_send(r->esock, type, s, strlen(s) + 1, NULL, 0) != 0) {
		log_warn("run: engine: cannot send the view");
		return -1;
	}
	return 0;
}

/*
 * The policy, then the check that every file it trusts is out of the
 * sandbox's reach, then its secrets: no file or helper a sandbox could
 * have planted is read or run.
 */
static int
load_policy(struct run *r)
{
	struct cli_diag_count count = {0, 0, 1};
	struct secret_store *ss;

	if (policy_load_extra(r->policies, r->npolicies, "--allow", r->allow,
	        cli_print_diag, &count, &r->policy) != 0 ||
	    trusted_files(r) != 0)
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
 * error.  The values are in the engine's secret store by now; the
 * launcher is told the names first of all (ENVSECRET) and wipes its own
 * copies, so it and the sandbox's PID 1 (a copy of it) hold none.
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
		if (send_text(r, VIEW_ENVSECRET, secret_origin(sec)) != 0)
			return -1;
	}
	return 0;
}

void
run_wipe_env(struct run *r, const char *name)
{
	env_unset(r->env, name);
	wipe_env(name);
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

/* The intercepted targets, typed; names borrowed from the policy. */
struct patlist {
	struct target_pattern v[RUN_LIST_MAX];
	size_t n;
	int full;
};

static void
patlist_add(void *arg, const struct target_pattern *p)
{
	struct patlist *l = arg;

	if (l->n < RUN_LIST_MAX)
		l->v[l->n++] = *p;
	else
		l->full = 1;
}

/* The system bundle plus the run CA, over the system bundle's path. */
static int
trust_bundle(struct run *r)
{
	const char *pem = r->ca_pem, *dst = NULL;
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
	/* Java's store of the same certificates; a JVM is all it serves. */
	if (i == 0 &&
	    (r->java_store = run_java_place(r->plan, all, err, sizeof(err))) ==
	        NULL)
		log_warnx("run: %s; Java will not trust the run CA", err);
	free(all);
	if (i != 0) {
		log_warnx("run: %s", err);
		return -1;
	}
	for (i = 0; i < sizeof(bundle_vars) / sizeof(bundle_vars[0]); i++)
		env_set(r->env, bundle_vars[i], dst);
	return 0;
}

static int
send_standin(struct run *r, const char *name, const char *value)
{
	unsigned char p[VIEW_TEXT_MAX];
	ssize_t n = view_put_standin(p, sizeof(p), name, value);

	if (n < 0 ||
	    view_send(r->esock, VIEW_STANDIN, p, (size_t)n, NULL, 0) != 0) {
		log_warnx("run: engine: cannot send stand-in %s", name);
		return -1;
	}
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
	struct patlist t = {.n = 0};
	struct strlist cas = {{NULL}, 0, 0};
	const char *cert, *key;
	char err[256];
	size_t i;
	int rc = -1;

	policy_intercept_targets(r->policy, patlist_add, &t);
	/* Read here, the CA files need no Landlock read access later. */
	policy_upstream_cas(r->policy, strlist_add, &cas);
	if (t.full || cas.full) {
		log_warnx(
		    "run: more than %d intercepted targets", RUN_LIST_MAX);
		goto out;
	}
	if ((r->standins = inject_standins_new(r->policy)) == NULL)
		fatalx("run: out of memory");
	for (i = 0; i < inject_standins_count(r->standins); i++)
		if (send_standin(r, inject_standin_env(r->standins, i),
		        inject_standin_value(r->standins, i)) != 0)
			goto out;
	rc = 0;
	if (t.n == 0)
		goto out;
	rc = -1;
	/* A CA the user pins ("ca" line), else one made for this run. */
	r->ca = policy_ca(r->policy, &cert, &key)
	    ? ca_load(cert, key, err, sizeof(err))
	    : ca_new_run_for(t.v, t.n, 0, err, sizeof(err));
	if (r->ca == NULL ||
	    (r->tls = tls_new(r->ca, err, sizeof(err))) == NULL) {
		log_warnx("run: interception: %s", err);
		goto out;
	}
	/* Trust anchors are read now, before the sandbox exists. */
	for (i = 0; i < cas.n; i++)
		if (tls_add_trust(r->tls, cas.v[i], err, sizeof(err)) != 0) {
			log_warnx("run: upstream-ca %s: %s", cas.v[i], err);
			goto out;
		}
	/* The CA key is a secret too: no core dump, no tracing. */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (!ca_constrained(r->ca))
		log_warnx("run: the CA that signs for intercepted hosts has no "
		          "name constraints: it could sign for any name");
	rc = send_text(r, VIEW_CA, ca_cert_pem(r->ca));
out:
	for (i = 0; i < cas.n; i++)
		free(cas.v[i]);
	return rc;
}

/* --- the mount plan ------------------------------------------------------- */

/* Every hide applies or the run stops (a missing file has nothing). */
static int
hide_file(struct run *r, const char *path)
{
	char *real = realpath(path, NULL), err[PATH_MAX + 64];
	int rc = 0;

	if (real != NULL &&
	    mnt_plan_add(r->plan, MNT_HIDE, NULL, real, err, sizeof(err)) !=
	        0) {
		log_warnx("run: cannot hide %s: %s", path, err);
		rc = -1;
	}
	free(real);
	return rc;
}

/*
 * A file pinhole trusts (policy, include, secret, CA, trust anchor, secret
 * helper) must be out of the sandbox's reach, or the sandbox could replace
 * it, or retarget a symlink or directory on its way, and so widen its own
 * next run, or the proxy's trust.  Returns 0, or -1 having said why.
 */
static int
out_of_reach(struct run *r, const char *what, const char *path)
{
	char where[PATH_MAX + 64];
	int rc;

	if ((rc = mnt_plan_path_reachable(
	         r->plan, path, where, sizeof(where))) == 0)
		return 0;
	if (rc < 0)
		log_warnx("run: %s %s: cannot check where it lies: %s", what,
		    path, where);
	else
		log_warnx("run: %s %s: %s lies in a directory the sandbox may "
		          "write to, so the sandbox could replace or retarget "
		          "it; move it out of the start directory and the "
		          "writable binds",
		    what, path, where);
	return -1;
}

/*
 * A helper named without a '/' is looked up in PATH as execvp does: an
 * empty or relative PATH entry can put it in the work directory.  Checks
 * the first executable found (none found: the helper fails later).
 */
static int
helper_out_of_reach(struct run *r, const char *name)
{
	const char *path = getenv("PATH"), *p, *end;
	char cand[PATH_MAX];
	int n;

	if (strchr(name, '/') != NULL)
		return out_of_reach(r, "secret helper", name);
	for (p = path ? path : "/usr/bin:/bin"; p != NULL;
	     p = *end ? end + 1 : NULL) {
		end = p + strcspn(p, ":");
		n = snprintf(cand, sizeof(cand), "%.*s%s%s", (int)(end - p), p,
		    end > p ? "/" : "", name);
		if (n > 0 && (size_t)n < sizeof(cand) &&
		    access(cand, X_OK) == 0)
			return out_of_reach(r, "secret helper", cand);
	}
	return 0;
}

/* Every file the run trusts, checked with out_of_reach. */
static int
trusted_files(struct run *r)
{
	struct secret_store *ss = policy_secrets(r->policy);
	struct strlist cas = {{NULL}, 0, 0};
	const struct secret *sec;
	const char *f, *cert, *key;
	size_t i;
	int bad = 0;

	for (i = 0; (f = policy_file_at(r->policy, i)) != NULL; i++)
		if (strcmp(f, "--allow") != 0)
			bad |= out_of_reach(r, "policy file", f);
	for (i = 0; i < secret_store_count(ss); i++) {
		sec = secret_store_get(ss, i);
		if (secret_source(sec) == SECRET_FILE)
			bad |=
			    out_of_reach(r, "secret file", secret_origin(sec));
		else if (secret_source(sec) == SECRET_EXEC)
			bad |= helper_out_of_reach(r, secret_origin(sec));
	}
	if (policy_ca(r->policy, &cert, &key)) {
		bad |= out_of_reach(r, "CA certificate", cert);
		bad |= out_of_reach(r, "CA key", key);
	}
	policy_upstream_cas(r->policy, strlist_add, &cas);
	for (i = 0; i < cas.n; i++) {
		bad |= out_of_reach(r, "upstream-ca", cas.v[i]);
		free(cas.v[i]);
	}
	return bad;
}

/*
 * The engine names the files to hide (HIDE): the files pinhole trusts,
 * out of the sandbox's reach already (trusted_files, checked by
 * load_policy), the secret files, the CA key and the audit log.
 */
static int
send_hides(struct run *r)
{
	struct secret_store *ss = policy_secrets(r->policy);
	const char *f, *cert, *key;
	size_t i;
	int bad = 0;

	for (i = 0; (f = policy_file_at(r->policy, i)) != NULL; i++)
		bad |= send_text(r, VIEW_HIDE, f); /* "--allow": nothing */
	for (i = 0; i < secret_store_count(ss); i++)
		if (secret_source(secret_store_get(ss, i)) == SECRET_FILE)
			bad |= send_text(r, VIEW_HIDE,
			    secret_origin(secret_store_get(ss, i)));
	if (policy_ca(r->policy, &cert, &key))
		bad |= send_text(r, VIEW_HIDE, key);
	/*
	 * The audit log must not lie where the sandbox can write: hidden, the
	 * file itself cannot be touched, but a directory or a symlink on its
	 * way could be renamed or retargeted and a forged log put in its
	 * place for the reviewer.
	 */
	if (strcmp(r->logpath, "stderr") != 0 &&
	    out_of_reach(r, "audit log", r->logpath) != 0)
		bad = -1;
	else if (strcmp(r->logpath, "stderr") != 0)
		bad |= send_text(r, VIEW_HIDE, r->logpath);
	return bad;
}

/* The password database's home, and $HOME where it differs. */
static int
plan_hide_homes(struct run *r)
{
	struct passwd *pw = getpwuid(getuid());
	const char *home = getenv("HOME");
	char err[PATH_MAX + 64];

	if (mnt_plan_hide_defaults(r->plan, pw != NULL ? pw->pw_dir : NULL, "",
	        err, sizeof(err)) != 0 ||
	    (home != NULL && (pw == NULL || strcmp(home, pw->pw_dir) != 0) &&
	        mnt_plan_hide_defaults(r->plan, home, NULL, err, sizeof(err)) !=
	            0)) {
		log_warnx("run: hiding the credential files: %s", err);
		return -1;
	}
	return 0;
}

/*
 * A machine id of this run's own (32 hex digits, as systemd writes it)
 * over the host's, wherever the host has one: it names the machine to
 * whatever the command talks to.
 */
static int
plan_machine_id(struct run *r)
{
	static const char *const files[] = {
	    "/etc/machine-id",
	    "/var/lib/dbus/machine-id",
	};
	unsigned char raw[16];
	char id[34], err[PATH_MAX + 64], *real, *done = NULL;
	struct stat sb;
	size_t i;
	int rc = 0;

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		fatal("getrandom");
	for (i = 0; i < sizeof(raw); i++)
		snprintf(id + 2 * i, 3, "%02x", raw[i]);
	id[32] = '\n';
	id[33] = '\0';
	for (i = 0; rc == 0 && i < sizeof(files) / sizeof(files[0]); i++) {
		/* The second is often a link to the first: once is enough. */
		if ((real = realpath(files[i], NULL)) == NULL ||
		    stat(real, &sb) != 0 || !S_ISREG(sb.st_mode) ||
		    (done != NULL && strcmp(done, real) == 0)) {
			free(real);
			continue;
		}
		if (mnt_plan_add_file(
		        r->plan, real, id, 33, err, sizeof(err)) != 0) {
			log_warnx("run: machine id: %s", err);
			rc = -1;
		}
		free(done);
		done = real;
	}
	free(done);
	return rc;
}

/* /etc/hostname says what the UTS namespace says (hostinfo.h). */
static int
plan_hostname(struct run *r)
{
	char err[PATH_MAX + 64], *real = realpath("/etc/hostname", NULL);
	struct stat sb;
	int rc = 0;

	if (real != NULL && stat(real, &sb) == 0 && S_ISREG(sb.st_mode) &&
	    mnt_plan_add_file(r->plan, real, HOSTINFO_HOSTNAME "\n",
	        sizeof(HOSTINFO_HOSTNAME), err, sizeof(err)) != 0) {
		log_warnx("run: hostname: %s", err);
		rc = -1;
	}
	free(real);
	return rc;
}

/*
 * The start directory must not hold the invoking user's home (by the
 * password database and by $HOME; for root under sudo, the sudoer's):
 * dot files there run code outside later.
 */
int
run_check_home(struct run *r)
{
	const char *homes[3] = {NULL, getenv("HOME"), NULL};
	struct passwd *pw = getpwuid(getuid());
	char err[3 * PATH_MAX + 256], *sudo = getenv("SUDO_UID"), *end;
	unsigned long uid;
	size_t i;

	if (pw != NULL)
		homes[0] = pw->pw_dir;
	if (getuid() == 0 && sudo != NULL && *sudo != '\0') {
		uid = strtoul(sudo, &end, 10);
		if (*end == '\0' && (pw = getpwuid((uid_t)uid)) != NULL)
			homes[2] = pw->pw_dir;
	}
	for (i = 0; i < 3; i++)
		if (mnt_plan_check_home(r->plan, homes[i], err, sizeof(err)) !=
		    0) {
			log_warnx("run: %s", err);
			return -1;
		}
	return 0;
}

/*
 * The engine's part: a run id, the policy and its secrets, the audit log,
 * and interception; the view goes to the launcher as it is made (the
 * environment secrets' names first).  Returns 0, or -1 (said).
 */
int
run_setup_engine(struct run *r)
{
	unsigned char p[64];
	ssize_t n;

	if (audit_make_run_id(r->run_id) != 0)
		fatal("getrandom");
	n = view_put_hello(p, sizeof(p), VIEW_ROLE_RUN, r->run_id);
	if (view_send(r->esock, VIEW_HELLO, p, (size_t)n, NULL, 0) != 0) {
		log_warn("run: engine: cannot send the view");
		return -1;
	}
	if (load_policy(r) != 0 || guard_env_secrets(r) != 0 ||
	    open_log(r) != 0 || send_hides(r) != 0 ||
	    setup_interception(r) != 0 ||
	    send_text(r, VIEW_LOG, r->logpath) != 0 ||
	    view_send(r->esock, VIEW_READY, NULL, 0, NULL, 0) != 0)
		return -1;
	return 0;
}

/* One message of the view, in the launcher. */
static int
take_view(struct run *r, const struct view_msg *m, int *bad)
{
	const char *name, *value;

	switch (m->type) {
	case VIEW_ENVSECRET:
		run_wipe_env(r, view_get_text(m));
		break;
	case VIEW_STANDIN:
		view_get_standin(m, &name, &value);
		env_set(r->env, name, value);
		break;
	case VIEW_HIDE:
		if (hide_file(r, view_get_text(m)) != 0)
			*bad = 1;
		break;
	case VIEW_CA:
		r->ca_pem = xstrdup(view_get_text(m));
		break;
	case VIEW_LOG:
		r->logpath = xstrdup(view_get_text(m));
		break;
	case VIEW_ERROR:
		return -1; /* the engine said why */
	default:
		break;
	}
	return 0;
}

/*
 * The launcher's part: the view from the engine (every message checked by
 * view_recv), then the mount plan and the environment made from it.
 */
int
run_setup_launcher(struct run *r)
{
	static unsigned char buf[VIEW_MSG_MAX];
	struct view_order o;
	struct view_msg m;
	struct view_hello h;
	int rc, bad = 0;

	view_order_init(&o, VIEW_FROM_ENGINE);
	do {
		if ((rc = view_recv(r->esock, &o, buf, &m)) != VIEW_OK) {
			if (rc != VIEW_E_TRUNC)
				log_warnx("run: engine: %s", view_strerror(rc));
			return -1;
		}
		if (m.type == VIEW_HELLO) {
			view_get_hello(&m, &h);
			memcpy(r->run_id, h.run_id, sizeof(r->run_id));
		}
		if (take_view(r, &m, &bad) != 0)
			return -1;
	} while (m.type != VIEW_READY);
	r->lorder = o; /* the summary is checked against the same order */
	if (bad || plan_hide_homes(r) != 0 || plan_machine_id(r) != 0 ||
	    plan_hostname(r) != 0 ||
	    (r->ca_pem != NULL && trust_bundle(r) != 0))
		return -1;
	return 0;
}
