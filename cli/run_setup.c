/*
 * run_setup.c: what `pinhole run` prepares before the sandbox starts.  In
 * the engine: the run's choices for proxy/engine_load.c, which loads the
 * policy, the secrets, the audit log and the CA (where the log goes by
 * default, which log the run refuses, the files the sandbox must not
 * reach).  In the launcher: the view taken in, the paths hidden, the
 * machine id, the host name and the trust bundle.
 */
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "cli/cli.h"
#include "cli/run.h"
#include "cli/run_java.h"
#include "cli/run_trust.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "netns/env.h"
#include "netns/hostinfo.h"
#include "netns/mount.h"
#include "netns/net.h"
#include "audit/audit.h"
#include "proxy/dns.h"
#include "proxy/engine_load.h"
#include "proxy/view.h"

/* --- the environment ----------------------------------------------------- */

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

void
run_wipe_env(struct run *r, const char *name)
{
	env_unset(r->env, name);
	wipe_env(name);
}

/* --- the log ------------------------------------------------------------- */

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

static int out_of_reach(void *arg, const char *what, const char *path);

static void
say_shared(const char *path, const char *why)
{
	if (why != NULL)
		log_warnx(
		    "run: the audit log %s %s, which the sandboxed command "
		    "writes to as well (it could forge records); give "
		    "--log FILE",
		    path, why);
}

/*
 * Under run the log must be a stream the sandbox cannot write: not
 * pinhole's standard error (or a terminal, or the file behind fds 0-2),
 * which the command writes to as well and could fill with forged records.
 */
static int
log_shared(const char *path, const struct audit *a)
{
	const char *why = NULL;
	int fd;

	if (strcmp(path, "stderr") == 0)
		why = "is standard error";
	else if (audit_is_tty(a))
		why = "is a terminal";
	for (fd = 0; why == NULL && fd <= 2; fd++)
		if (audit_same_file(a, fd))
			why =
			    "is the file behind the command's standard streams";
	say_shared(path, why);
	return why != NULL;
}

/*
 * What one run may make pinhole write to the log (--log-limit): past it,
 * records are only counted (audit.h), so a sandbox cannot fill the disk.
 */
static int
log_limit(const struct run *r, struct audit *a)
{
	const char *s = r->log_limit != NULL ? r->log_limit : RUN_LOG_LIMIT;
	uint64_t bytes;

	if (audit_parse_size(s, &bytes) != 0) {
		log_warnx("run: --log-limit %s: a size is digits with an "
		          "optional K, M or G",
		    s);
		return -1;
	}
	audit_set_limit(a, bytes);
	return 0;
}

char *
run_setup_default_log(void)
{
	return default_log();
}

char *
run_setup_private_log(void)
{
	return private_log();
}

int
run_setup_copy_ok(struct run *r, const char *path, int fd)
{
	const char *why = NULL;
	struct stat l, o;
	int i;

	if (isatty(fd))
		why = "is a terminal";
	else if (fstat(fd, &l) != 0 || !S_ISREG(l.st_mode)) {
		log_warnx("run: the audit log %s is not a regular file (the "
		          "broker appends its records to it); give --log FILE",
		    path);
		return -1;
	}
	for (i = 0; why == NULL && i <= 2; i++)
		if (fstat(i, &o) == 0 && l.st_dev == o.st_dev &&
		    l.st_ino == o.st_ino)
			why =
			    "is the file behind the command's standard streams";
	say_shared(path, why);
	/* As a run's own log: where the sandbox writes, it could forge. */
	return why != NULL || out_of_reach(r, "audit log", path) != 0 ? -1 : 0;
}

/* The engine's hooks (engine_load.h): the run's choices about its log. */
static char *
log_default(void *arg)
{
	(void)arg;
	return default_log();
}

static char *
log_failed(void *arg, const char *err, int defaulted)
{
	char *next;

	(void)arg;
	if (!defaulted) {
		log_warnx("run: %s", err); /* "audit log PATH: why" */
		return NULL;
	}
	/* No usable home after all: the private fallback, said only when
	 * there is one (else private_log's line is the one). */
	if ((next = private_log()) != NULL)
		log_warnx("run: %s; using a private file instead (--log FILE "
		          "chooses)",
		    err);
	return next;
}

static int
log_opened(void *arg, const char *path, struct audit *a)
{
	return log_shared(path, a) || log_limit(arg, a) != 0 ? -1 : 0;
}

/* --- a broker's engine --------------------------------------------------- */

/*
 * What is wrong with ST for a file (or directory, DIR) the broker trusts:
 * another user than root or the broker could change it, or replace what
 * it holds.  A sticky directory (/tmp) is fine: only the owner of an
 * entry may rename it, and the entries are checked too.  NULL: nothing.
 */
static const char *
unsafe_stat(const struct stat *st, int dir, char *buf, size_t len)
{
	int sticky = dir && (st->st_mode & S_ISVTX) != 0;
	const char *change = dir ? "replace what it holds" : "change it";

	if (st->st_uid != 0 && st->st_uid != geteuid())
		snprintf(buf, len,
		    "is owned by uid %u, neither root nor the broker's uid "
		    "%u, so that user could %s",
		    (unsigned)st->st_uid, (unsigned)geteuid(), change);
	else if ((st->st_mode & S_IWGRP) != 0 && !sticky)
		snprintf(buf, len,
		    "is writable by group %u, so another user could %s",
		    (unsigned)st->st_gid, change);
	else if ((st->st_mode & S_IWOTH) != 0 && !sticky)
		snprintf(buf, len,
		    "is writable by others, so another user could %s", change);
	else
		return NULL;
	return buf;
}

/* One path of check_chain's.  LAST: the file itself, maybe no directory. */
static int
check_one(
    const char *p, int last, char *bad, size_t badlen, char *why, size_t whylen)
{
	struct stat st;

	if (lstat(p, &st) != 0)
		snprintf(why, whylen, "cannot be checked: %s", strerror(errno));
	else if (S_ISLNK(st.st_mode) && st.st_uid != 0 &&
	    st.st_uid != geteuid())
		/* Its owner may retarget it (in a sticky directory too) after
		 * the resolved path was checked. */
		snprintf(why, whylen,
		    "is a symbolic link owned by uid %u, neither root nor the "
		    "broker's uid %u, so that user could retarget it",
		    (unsigned)st.st_uid, (unsigned)geteuid());
	else if (S_ISLNK(st.st_mode) ||
	    unsafe_stat(&st, !last || S_ISDIR(st.st_mode), why, whylen) == NULL)
		return 0;
	snprintf(bad, badlen, "%s", p);
	return -1;
}

/*
 * PATH (absolute) and every directory up to it, each as lstat sees it: a
 * symlink is as safe as the directory that holds it (checked), and what
 * it points to is checked by the caller through realpath.  Returns 0, or
 * -1 with the failing path in BAD and why in WHY.
 */
static int
check_chain(
    const char *path, char *bad, size_t badlen, char *why, size_t whylen)
{
	char prefix[PATH_MAX];
	size_t len = strlen(path), i;

	if (len == 0 || path[0] != '/' || len >= sizeof(prefix)) {
		snprintf(bad, badlen, "%s", path);
		snprintf(why, whylen, "is not an absolute path");
		return -1;
	}
	if (check_one("/", len == 1, bad, badlen, why, whylen) != 0)
		return -1;
	for (i = 1; i <= len; i++) {
		/* Each component once: "/a", "/a/b", ..., PATH. */
		if ((i < len && path[i] != '/') || path[i - 1] == '/')
			continue;
		memcpy(prefix, path, i);
		prefix[i] = '\0';
		if (check_one(prefix, i == len, bad, badlen, why, whylen) != 0)
			return -1;
	}
	return 0;
}

/*
 * A broker's "trusted" hook (engine_load.h): a file the broker trusts
 * (policy, include, secret file, CA, trust anchor, secret helper, its
 * log) must be out of every other user's reach, up its whole path, as
 * written and as resolved, or a user could widen a policy or swap a
 * secret for the next sandbox.  Returns 0, or -1 having said why.
 */
static int
broker_trusted(void *arg, const char *what, const char *path)
{
	char bad[PATH_MAX], why[256], *real = NULL, *abs = NULL, cwd[PATH_MAX];
	int rc = -1;

	(void)arg;
	if (path[0] == '/')
		abs = xstrdup(path);
	else if (getcwd(cwd, sizeof(cwd)) != NULL)
		abs = xasprintf("%s/%s", cwd, path);
	if (abs == NULL) {
		log_warn("broker: %s %s: cannot check it", what, path);
		return -1;
	}
	if (check_chain(abs, bad, sizeof(bad), why, sizeof(why)) != 0)
		;
	else if ((real = realpath(abs, NULL)) == NULL) {
		snprintf(bad, sizeof(bad), "%s", abs);
		snprintf(
		    why, sizeof(why), "cannot be checked: %s", strerror(errno));
	} else if (check_chain(real, bad, sizeof(bad), why, sizeof(why)) == 0)
		rc = 0;
	if (rc != 0 && strcmp(bad, path) == 0)
		log_warnx("broker: %s %s: it %s", what, path, why);
	else if (rc != 0)
		log_warnx("broker: %s %s: %s %s", what, path, bad, why);
	free(real);
	free(abs);
	return rc;
}

/*
 * A broker's log is open: the limit per sandbox, the client named in
 * every record, the client's own copy added (the user's file: a failure
 * is said to the user, not fatal), and one "client" record that says who
 * started this sandbox with which policy.
 */
static int
broker_log_opened(void *arg, const char *path, struct audit *a)
{
	struct run *r = arg;
	struct audit_rec rec;
	int fd = r->client_copy;

	(void)path;
	if (log_limit(r, a) != 0 ||
	    audit_set_client(a, (unsigned)r->client_uid,
	        (unsigned)r->client_pid, r->client_cmd) != 0) {
		log_warnx("broker: audit log: cannot name the client");
		return -1;
	}
	r->client_copy = -1; /* the log's now, or closed */
	if (fd >= 0 && audit_add_copy(a, fd) != 0)
		run_engine_say(r,
		    "pinhole: your copy of the audit log is not a regular "
		    "file open for writing: the records go to the broker's "
		    "log only\n");
	audit_rec_init(&rec, "client", 0);
	rec.decision = "allow";
	rec.policy = r->client_policy;
	if (audit_write(a, &rec) < 0) {
		log_warn("broker: audit log: cannot write");
		return -1;
	}
	return 0;
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
 * The engine's "trusted" hook (engine_load.h).
 */
static int
out_of_reach(void *arg, const char *what, const char *path)
{
	struct run *r = arg;
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
 * /etc/resolv.conf (what it names, when a link) names the sandbox's DNS
 * stub (proxy/dnsstub.h), which asks no real server: under capture it
 * answers the names the policy may allow with synthetic addresses, else
 * it refuses every name at once, so a program that ignores the proxy
 * variables fails fast and pinhole says so, instead of waiting for the
 * host's resolver, which the sandbox cannot reach.  Without the file
 * glibc asks 127.0.0.1 anyway: the stub too.
 */
static int
plan_resolv(struct run *r)
{
	static const char conf[] =
	    "# pinhole: the sandbox's DNS stub; it asks no real server, see "
	    "pinhole(1) ENVIRONMENT\n"
	    "nameserver 127.0.0.1\n"
	    "options timeout:1 attempts:1\n";
	char err[PATH_MAX + 64], *real = realpath("/etc/resolv.conf", NULL);
	struct stat sb;
	int rc = 0;

	if (real != NULL && stat(real, &sb) == 0 && S_ISREG(sb.st_mode) &&
	    mnt_plan_add_file(
	        r->plan, real, conf, sizeof(conf) - 1, err, sizeof(err)) != 0) {
		log_warnx("run: resolv.conf: %s", err);
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
 * The resolver the proxy will make once the sandbox runs (engine.c), made
 * once now: a bad --dns list (or no server at all) stops the run before
 * the command starts, in one line, rather than ending the proxy under a
 * running command.  Returns 0, or -1 (said).
 */
static int
check_dns(const struct run *r)
{
	struct event_base *base = event_base_new();
	struct dns *d = NULL;
	char err[256] = "no event loop";
	int rc = -1;

	if (base != NULL &&
	    (d = dns_new(base, r->dns, 1000, err, sizeof(err))) != NULL)
		rc = 0;
	else
		log_warnx("run: DNS: %s", err);
	dns_free(d);
	if (base != NULL)
		event_base_free(base);
	return rc;
}

/*
 * The engine's part: the run's choices for proxy/engine_load.c, which
 * makes a run id, loads the policy and its secrets, opens the audit log
 * and makes the CA and the TLS contexts, the view going to SINK as it is
 * made.  Returns 0, or -1 (said).
 */
int
run_setup_engine(struct run *r, const struct engine_load_sink *sink)
{
	struct cli_diag_count count = {0, 0, 1, 1};
	struct engine_load_config cf = {0};
	int rc;

	cf.name = "run";
	cf.policies = r->policies;
	cf.npolicies = r->npolicies;
	cf.allow = r->allow;
	cf.diag = cli_print_diag;
	cf.diag_arg = &count;
	cf.log = r->log;
	cf.intercept = ENGINE_LOAD_INTERCEPT_RUN;
	cf.trusted = out_of_reach;
	cf.log_default = log_default;
	cf.log_failed = log_failed;
	cf.log_opened = log_opened;
	cf.arg = r;
	if (r->broker_engine) {
		/* The broker's files and its central log: no plan to check
		 * them against, no default, no other log to try. */
		cf.name = "broker";
		cf.trusted = broker_trusted;
		cf.log_default = NULL;
		cf.log_failed = NULL;
		cf.log_opened = broker_log_opened;
	}
	if (check_dns(r) != 0)
		return -1;
	/* Every failure is said in one line (secret.c names the secret):
	 * nothing to add, for ENGINE_LOAD_E_SECRETS either. */
	rc = engine_load_new(&cf, sink, &r->load);
	return rc == ENGINE_LOAD_OK ? 0 : -1;
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
		run_trust_set_ca(r->trust, r->ca_pem);
		break;
	case VIEW_TRUST:
		run_trust_add_pem(r->trust, view_get_text(m));
		break;
	case VIEW_LOG:
		/* A broker's central log is not the user's to read: the
		 * last line names the user's copy (run_broker_connect). */
		if (r->broker == NULL)
			r->logpath = xstrdup(view_get_text(m));
		break;
	case VIEW_NOTE:
		run_broker_note(view_get_text(m));
		break;
	case VIEW_CAPTURE:
		r->ncapture =
		    view_get_capture(m, &r->capture_skipped, r->capture_ports);
		break;
	case VIEW_ERROR:
		/* A run's engine said why; a broker's says it here (before
		 * HELLO: its refusal). */
		if (r->broker != NULL)
			run_broker_error(r, view_get_text(m));
		return -1;
	default:
		break;
	}
	return 0;
}

/*
 * What the sandbox trusts (run_trust.h), from the view; apt is pointed at
 * the bundle too (run_apt.c), Java at a store of the same (run_java.c).
 */
static int
plan_trust(struct run *r)
{
	char err[PATH_MAX + 256];
	const char *pem;
	size_t len;

	if (run_trust_build(r->trust, r->env, err, sizeof(err)) != 0 ||
	    run_trust_plan(r->trust, r->plan, err, sizeof(err)) != 0) {
		log_warnx("run: %s", err);
		return -1;
	}
	if (!run_trust_active(r->trust))
		return 0;
	r->trust_file = RUN_TRUST_BUNDLE;
	/* Java's store of the same certificates; a JVM is all it serves. */
	if ((pem = run_trust_pem(r->trust, &len)) != NULL &&
	    (r->java_store = run_java_place(r->plan, pem, err, sizeof(err))) ==
	        NULL)
		log_warnx("run: %s; Java will not trust the run CA", err);
	return 0;
}

/*
 * The engine ended before the view was complete (a broker's: closed its
 * connection, and has no pid of ours to wait for).  An exit with a status
 * said why (fatalx, or ERROR first); a signal (a crash, the OOM killer)
 * said nothing, so the launcher does, lest the run fail without a line.
 */
static void
engine_gone(struct run *r)
{
	pid_t p;
	int w = 0;

	if (r->engine == 0) {
		log_warnx("run: the broker closed the connection before the "
		          "sandbox started");
		return;
	}
	while ((p = waitpid(r->engine, &w, 0)) < 0 && errno == EINTR)
		;
	r->engine = 0;
	if (p < 0)
		log_warnx("run: the engine ended at start");
	else if (WIFSIGNALED(w))
		log_warnx("run: the engine ended at start (signal %d, %s)",
		    WTERMSIG(w), strsignal(WTERMSIG(w)));
	else if (WIFEXITED(w) && WEXITSTATUS(w) == 0)
		log_warnx("run: the engine ended at start");
}

/* --- capture -------------------------------------------------------------- */

/*
 * A policy whose ranges are too wide to capture (policy.h,
 * POLICY_CAPTURE_RANGE_MAX) or with more ports than a sandbox takes: one
 * line, since those connections work through the proxy variables only.
 */
static void
say_skipped(const struct run *r)
{
	if (r->no_capture || r->capture_skipped == 0)
		return;
	fprintf(stderr,
	    "pinhole: capture: %u port%s of the policy's allow rules %s not "
	    "captured (a rule's port range is over %d ports, or the policy "
	    "names over %d): connections to them need the proxy variables "
	    "(http_proxy, ALL_PROXY)\n",
	    (unsigned)r->capture_skipped, r->capture_skipped == 1 ? "" : "s",
	    r->capture_skipped == 1 ? "is" : "are", POLICY_CAPTURE_RANGE_MAX,
	    VIEW_CAPTURE_MAX);
}

#define SAY_PORTS 16 /* ports named in -v's line */

void
run_setup_capture_env(struct run *r)
{
	static const char url[] = "socks5h://127.0.0.1:1080";
	size_t i, said = 0;

	/* SOCKS5 listens inside in both modes (net.h NET_SOCKS_PORT). */
	env_set(r->env, "ALL_PROXY", url);
	env_set(r->env, "all_proxy", url);
	if (!r->verbose)
		return;
	if (r->no_capture) {
		fprintf(stderr,
		    "pinhole: capture off (--no-capture): only "
		    "programs that honour the proxy variables get "
		    "out\n");
		return;
	}
	fprintf(stderr, "pinhole: capture on: ports");
	for (i = 0; i < r->ncapture; i++) {
		if (net_port_reserved(r->capture_ports[i]))
			continue;
		if (said++ == SAY_PORTS) {
			fprintf(stderr, " and more");
			break;
		}
		fprintf(
		    stderr, "%s %u", said > 1 ? "," : "", r->capture_ports[i]);
	}
	fprintf(stderr,
	    "; DNS answers allowed names with 198.18.0.0/15 and "
	    "2001:2::/48\n");
}

/*
 * Under --broker the other end must say it is a broker: a run's engine
 * (or anything else) at PATH is not one, whatever it would serve.
 */
static int
role_ok(const struct run *r, const struct view_hello *h)
{
	if (r->broker != NULL && h->role != VIEW_ROLE_BROKER) {
		log_warnx("run: broker %s: %s is not a pinhole broker (it "
		          "answered as a run's engine)",
		    r->broker, r->broker);
		return 0;
	}
	if (r->broker == NULL && h->role != VIEW_ROLE_RUN) {
		log_warnx("run: engine: it answered as a broker");
		return 0;
	}
	return 1;
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

	r->trust = run_trust_new();
	view_order_init(&o, VIEW_FROM_ENGINE);
	do {
		if ((rc = view_recv(r->esock, &o, buf, &m)) != VIEW_OK) {
			/* A broker that closed on an unread REQUEST: reset. */
			if (rc == VIEW_E_TRUNC ||
			    (rc == VIEW_E_SYS && errno == ECONNRESET))
				engine_gone(r);
			else if (r->broker != NULL)
				log_warnx("run: broker %s: %s", r->broker,
				    view_strerror(rc));
			else
				log_warnx("run: engine: %s", view_strerror(rc));
			return -1;
		}
		if (m.type == VIEW_HELLO) {
			view_get_hello(&m, &h);
			memcpy(r->run_id, h.run_id, sizeof(r->run_id));
			if (!role_ok(r, &h))
				return -1;
		}
		if (take_view(r, &m, &bad) != 0)
			return -1;
	} while (m.type != VIEW_READY);
	r->lorder = o; /* the summary is checked against the same order */
	say_skipped(r);
	if (bad || plan_hide_homes(r) != 0 || plan_machine_id(r) != 0 ||
	    plan_hostname(r) != 0 || plan_resolv(r) != 0 ||
	    plan_trust(r) != 0 || run_apt_setup(r) != 0)
		return -1;
	return 0;
}
