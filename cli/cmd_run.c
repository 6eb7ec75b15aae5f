/*
 * cmd_run.c: pinhole run, a command in the sandbox with the proxy as its
 * only way out.
 *
 * One process outside: it loads the policy and the secrets, starts the
 * sandbox (netns/), takes the listeners the sandbox made, sheds what it
 * does not need (capabilities, file access), and runs the proxy (proxy/)
 * on them until the command ends.  Exit status: the command's (128+N for
 * signal N), 125 when pinhole failed before the command ran.
 */
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "cli/cli.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "netns/env.h"
#include "netns/mount.h"
#include "netns/net.h"
#include "netns/sandbox.h"
#include "policy/policy.h"
#include "policy/secret.h"
#include "proxy/audit.h"
#include "proxy/ca.h"
#include "proxy/dns.h"
#include "proxy/inject.h"
#include "proxy/proxy.h"
#include "proxy/tls.h"

#define RUN_FAILED 125 /* pinhole itself failed before the command ran */
#define POLICIES_MAX 16
#define KEEP_MAX 64
#define DENIED_MAX 16 /* host:port pairs named in the last line */
#define LIST_MAX 256 /* intercepted targets, upstream-ca files */

struct denied {
	char what[300];
	unsigned n;
};

struct run {
	/* options */
	const char *policies[POLICIES_MAX];
	size_t npolicies;
	char *allow; /* --allow rules, one per line */
	const char *log, *dns, *chdir;
	const char *keep[KEEP_MAX];
	size_t nkeep;
	int verbose;
	char **argv;
	struct mnt_plan *plan;
	struct env *env;
	/* running */
	struct policy *policy;
	char *logpath;
	struct audit *audit;
	struct dns *resolver;
	struct event_base *base;
	struct proxy *px;
	struct sbx *sbx;
	struct ca *ca; /* the run CA, when a rule intercepts */
	struct tls *tls;
	struct inject_standins *standins;
	char *readable[LIST_MAX]; /* upstream-ca files, for Landlock */
	size_t nreadable;
	int sfd, status;
	char run_id[17];
	struct denied denied[DENIED_MAX];
	size_t ndenied, denied_total;
};

extern char **environ;

static void
run_usage(FILE *f)
{
	fprintf(f,
	    "usage: pinhole run [OPTIONS] -- COMMAND [ARG...]\n\n"
	    "Runs COMMAND in a sandbox whose only way to the network is "
	    "pinhole's proxy.\n\n"
	    "  -p, --policy FILE      policy (repeatable; combined in order)\n"
	    "  -a, --allow TARGET     one more allow rule, e.g. "
	    "example.org:443\n"
	    "      --log FILE         audit log (default: the policy's, else\n"
	    "                         ~/.local/state/pinhole/audit.jsonl)\n"
	    "      --dns SERVERS      DNS servers for the proxy (c-ares list)\n"
	    "      --bind SRC [DST]   SRC at DST (default: SRC), read-write\n"
	    "      --ro-bind SRC [DST]  the same, read-only\n"
	    "      --tmpfs DST        a fresh tmpfs at DST\n"
	    "      --hide PATH        PATH appears empty\n"
	    "      --chdir DIR        start in DIR (the current directory "
	    "stays "
	    "the\n"
	    "                         writable one)\n"
	    "      --setenv VAR VALUE set VAR\n"
	    "      --unsetenv VAR     remove VAR\n"
	    "      --keep-env VAR     keep VAR from pinhole's environment\n"
	    "      --allow-git-config let the command write .git/hooks and "
	    ".git/config\n"
	    "  -v, --verbose          say what the sandbox applied; one line "
	    "per decision\n"
	    "  -h, --help             this text\n\n"
	    "Defaults: / read-only, the current directory writable, fresh "
	    "/tmp, /proc\nand /dev; the environment holds PATH, HOME, USER, "
	    "LOGNAME, TERM, LANG,\nLC_*, TZ and the proxy variables.  Exit "
	    "status: the command's; 125 when\npinhole failed before it ran.  "
	    "If the sandbox will not start: pinhole doctor.\n");
}

/* --- options -------------------------------------------------------------- */

/* The optional second word of --bind SRC [DST]. */
static const char *
optional_dst(int argc, char **argv, int *i)
{
	if (*i + 1 < argc && argv[*i + 1][0] == '/')
		return argv[++*i];
	return NULL;
}

static int
need(int argc, char **argv, int i, int n)
{
	if (i + n < argc)
		return 0;
	log_warnx("run: %s needs %s", argv[i],
	    n == 1 ? "an argument" : "two arguments");
	return -1;
}

static int
add_step(struct run *r, enum mnt_kind kind, const char *src, const char *dst)
{
	char err[PATH_MAX + 64];

	if (mnt_plan_add(r->plan, kind, src, dst, err, sizeof(err)) != 0) {
		log_warnx("run: %s", err);
		return -1;
	}
	return 0;
}

static void
add_allow(struct run *r, const char *target)
{
	char *more =
	    xasprintf("%sallow %s\n", r->allow ? r->allow : "", target);

	free(r->allow);
	r->allow = more;
}

/* Options with a file or an environment argument.  Returns 1 if taken. */
static int
mount_or_env_opt(struct run *r, int argc, char **argv, int *i, int *bad)
{
	const char *o = argv[*i], *src;

	*bad = 0;
	if (strcmp(o, "--bind") == 0 || strcmp(o, "--ro-bind") == 0) {
		if ((*bad = need(argc, argv, *i, 1)) == 0) {
			src = argv[++*i];
			*bad = add_step(r, o[2] == 'b' ? MNT_BIND : MNT_RO_BIND,
			    src, optional_dst(argc, argv, i));
		}
	} else if (strcmp(o, "--tmpfs") == 0 || strcmp(o, "--hide") == 0) {
		if ((*bad = need(argc, argv, *i, 1)) == 0) {
			++*i;
			*bad = add_step(r, o[2] == 't' ? MNT_TMPFS : MNT_HIDE,
			    NULL, argv[*i]);
		}
	} else if (strcmp(o, "--setenv") == 0) {
		if ((*bad = need(argc, argv, *i, 2)) == 0 &&
		    env_set(r->env, argv[*i + 1], argv[*i + 2]) != 0) {
			log_warnx("run: --setenv: bad name '%s'", argv[*i + 1]);
			*bad = -1;
		}
		*i += 2;
	} else if (strcmp(o, "--unsetenv") == 0 ||
	    strcmp(o, "--keep-env") == 0) {
		if ((*bad = need(argc, argv, *i, 1)) == 0) {
			++*i;
			if (!env_name_ok(argv[*i])) {
				log_warnx(
				    "run: %s: bad name '%s'", o, argv[*i]);
				*bad = -1;
			} else if (o[2] == 'u')
				env_unset(r->env, argv[*i]);
			else if (r->nkeep == KEEP_MAX)
				*bad = -1;
			else {
				r->keep[r->nkeep++] = argv[*i];
				env_keep(r->env, environ, argv[*i]);
			}
		}
	} else
		return 0;
	return 1;
}

/* Simple options.  Returns 1 if taken. */
static int
plain_opt(struct run *r, int argc, char **argv, int *i, int *bad)
{
	const char *o = argv[*i];
	const char **slot = NULL;

	*bad = 0;
	if (strcmp(o, "-v") == 0 || strcmp(o, "--verbose") == 0)
		r->verbose = 1;
	else if (strcmp(o, "--allow-git-config") == 0)
		mnt_plan_allow_git_config(r->plan);
	else if (strcmp(o, "--log") == 0)
		slot = &r->log;
	else if (strcmp(o, "--dns") == 0)
		slot = &r->dns;
	else if (strcmp(o, "--chdir") == 0)
		slot = &r->chdir;
	else if (strcmp(o, "-p") == 0 || strcmp(o, "--policy") == 0) {
		if (r->npolicies == POLICIES_MAX) {
			log_warnx("run: at most %d policy files", POLICIES_MAX);
			*bad = -1;
		} else
			slot = &r->policies[r->npolicies++];
	} else if (strcmp(o, "-a") == 0 || strcmp(o, "--allow") == 0) {
		if ((*bad = need(argc, argv, *i, 1)) == 0)
			add_allow(r, argv[++*i]);
	} else
		return 0;
	if (slot != NULL && (*bad = need(argc, argv, *i, 1)) == 0)
		*slot = argv[++*i];
	return 1;
}

/* Returns 0, 1 after --help, or -1 on a usage error. */
static int
parse_opts(struct run *r, int argc, char **argv)
{
	int i, bad;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			run_usage(stdout);
			return 1;
		}
		if (strcmp(argv[i], "--report") == 0 ||
		    strcmp(argv[i], "--broker") == 0) {
			log_warnx("run: %s is not implemented yet", argv[i]);
			return -1;
		}
		if (!plain_opt(r, argc, argv, &i, &bad) &&
		    !mount_or_env_opt(r, argc, argv, &i, &bad)) {
			if (argv[i][0] != '-')
				break; /* the command, without "--" */
			log_warnx("run: unknown option %s", argv[i]);
			return -1;
		}
		if (bad)
			return -1;
	}
	if (i >= argc) {
		log_warnx("run: no command; usage: pinhole run [OPTIONS] -- "
		          "COMMAND [ARG...]");
		return -1;
	}
	r->argv = &argv[i];
	return 0;
}

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
		return xstrdup("stderr");
	make_dirs(dir);
	path = xasprintf("%s/audit.jsonl", dir);
	free(dir);
	return path;
}

static int
open_log(struct run *r)
{
	const char *path = r->log ? r->log : policy_log_path(r->policy);
	char err[256];

	r->logpath = path ? xstrdup(path) : default_log();
	if (audit_make_run_id(r->run_id) != 0)
		fatal("getrandom");
	r->audit = audit_open(r->logpath, r->run_id, err, sizeof(err));
	if (r->audit == NULL && path == NULL) {
		/* No usable home (e.g. nobody): the log must still exist. */
		log_warnx("run: %s; the audit log goes to stderr (--log FILE "
		          "chooses)",
		    err);
		free(r->logpath);
		r->logpath = xstrdup("stderr");
		r->audit = audit_open(r->logpath, r->run_id, err, sizeof(err));
	}
	if (r->audit == NULL) {
		log_warnx("run: audit log: %s", err);
		return -1;
	}
	return 0;
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
	char *v[LIST_MAX];
	size_t n;
	int full;
};

static void
strlist_add(void *arg, const char *s)
{
	struct strlist *l = arg;

	if (l->n < LIST_MAX)
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
		log_warnx("run: more than %d intercepted targets", LIST_MAX);
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

/* --- running -------------------------------------------------------------- */

static void
on_denied(void *arg, const char *host, unsigned port)
{
	struct run *r = arg;
	char what[300];
	size_t i;

	snprintf(what, sizeof(what), strchr(host, ':') ? "[%s]:%u" : "%s:%u",
	    host, port);
	r->denied_total++;
	for (i = 0; i < r->ndenied; i++)
		if (strcmp(r->denied[i].what, what) == 0) {
			r->denied[i].n++;
			return;
		}
	if (r->ndenied < DENIED_MAX) {
		snprintf(r->denied[r->ndenied].what, sizeof(what), "%s", what);
		r->denied[r->ndenied++].n = 1;
	}
}

/* The last stderr line: pinhole: N denied: HOST:PORT (xK), ...; see LOG */
static void
print_denied(const struct run *r)
{
	size_t i;

	if (r->denied_total == 0)
		return;
	fprintf(stderr, "pinhole: %zu denied: ", r->denied_total);
	for (i = 0; i < r->ndenied; i++)
		fprintf(stderr, "%s%s (x%u)", i ? ", " : "", r->denied[i].what,
		    r->denied[i].n);
	fprintf(stderr, "; see %s\n", r->logpath);
}

static void
on_signal(evutil_socket_t fd, short what, void *arg)
{
	struct run *r = arg;
	struct signalfd_siginfo si;

	(void)what;
	while (read(fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo != SIGCHLD) {
			/* The terminal's signals reached the command already. */
			if (si.ssi_code != SI_KERNEL)
				(void)kill(sbx_pid(r->sbx), (int)si.ssi_signo);
			continue;
		}
		if (sbx_reap(r->sbx, &r->status) != 0)
			event_base_loopbreak(r->base);
	}
}

static int
start_proxy(struct run *r)
{
	struct proxy_config cf = {0};
	char err[256];
	int i;

	if ((r->base = event_base_new()) == NULL ||
	    (r->resolver = dns_new(r->base, r->dns,
	         policy_timeout(r->policy, POLICY_TIMEOUT_CONNECT), err,
	         sizeof(err))) == NULL) {
		log_warnx("run: DNS: %s", r->base ? err : "no event loop");
		return -1;
	}
	cf.policy = r->policy;
	cf.audit = r->audit;
	cf.dns = r->resolver;
	cf.run_id = r->run_id;
	cf.max_sessions = proxy_fd_budget();
	cf.denied = on_denied;
	cf.denied_arg = r;
	cf.tls = r->tls;
	cf.standins = r->standins;
	if ((r->px = proxy_new(r->base, &cf)) == NULL)
		fatalx("run: out of memory");
	r->policy = NULL; /* the proxy's now */
	for (i = 0; i < sbx_nlisteners(r->sbx); i++)
		if (proxy_listen_fd(r->px, sbx_listener(r->sbx, i)) != 0) {
			log_warnx(
			    "run: cannot accept on the sandbox's listener");
			return -1;
		}
	sbx_release_listeners(r->sbx);
	return 0;
}

/*
 * What parses the sandbox's bytes keeps only what proxying needs: no
 * capability, no_new_privs, and (Landlock) reads of /etc, the trust store
 * and the libraries.  Everything else it needs is open already.  The
 * process has one thread, so the ruleset covers all of it.
 */
static void
shed(const struct run *r)
{
	char report[256];

	if (sbx_shed((const char *const *)r->readable, r->nreadable, 1, report,
	        sizeof(report)) != 0)
		log_warnx("run: proxy: %s", report);
	else if (r->verbose)
		log_warnx("proxy: %s", report);
}

/* In the sandbox's first process: its copy of the secrets goes. */
static void
scrub(void *arg)
{
	struct run *r = arg;

	policy_free(r->policy);
	r->policy = NULL;
	tls_free(r->tls);
	r->tls = NULL;
	ca_free(r->ca); /* the CA key never enters the sandbox */
	r->ca = NULL;
}

static int
start_sandbox(struct run *r, const sigset_t *mask)
{
	struct sbx_config c;
	char err[768];

	memset(&c, 0, sizeof(c));
	c.plan = r->plan;
	c.argv = r->argv;
	c.envp = env_vector(r->env);
	c.chdir = r->chdir;
	c.mask = *mask;
	c.verbose = r->verbose;
	c.scrub = scrub;
	c.scrub_arg = r;
	if (mnt_plan_prepare_git(r->plan, err, sizeof(err)) != 0 ||
	    (r->sbx = sbx_start(&c, err, sizeof(err))) == NULL) {
		log_warnx("run: %s; see pinhole doctor", err);
		return -1;
	}
	if (start_proxy(r) != 0)
		return -1;
	if (sbx_wait_exec(r->sbx, err, sizeof(err)) != 0) {
		log_warnx("run: %s; see pinhole doctor", err);
		return -1;
	}
	return 0;
}

static int
watch_signals(struct run *r, sigset_t *old)
{
	static const int sigs[] = {
	    SIGCHLD,
	    SIGINT,
	    SIGTERM,
	    SIGHUP,
	    SIGQUIT,
	    SIGUSR1,
	    SIGUSR2,
	};
	sigset_t set;
	size_t i;

	sigemptyset(&set);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&set, sigs[i]);
	if (sigprocmask(SIG_BLOCK, &set, old) != 0 ||
	    (r->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		log_warn("run: signals");
		return -1;
	}
	return 0;
}

static int
serve(struct run *r)
{
	struct event *ev;

	ev = event_new(r->base, r->sfd, EV_READ | EV_PERSIST, on_signal, r);
	if (ev == NULL || event_add(ev, NULL) != 0) {
		log_warnx("run: cannot watch signals");
		return -1;
	}
	shed(r);
	/* The command may have ended already: check once before waiting. */
	if (sbx_reap(r->sbx, &r->status) == 0)
		event_base_dispatch(r->base);
	event_free(ev);
	return 0;
}

static int
prepare(struct run *r, int argc, char **argv)
{
	char cwd[PATH_MAX], err[PATH_MAX + 64];
	int rc;

	if (getcwd(cwd, sizeof(cwd)) == NULL) {
		log_warn("run: current directory");
		return RUN_FAILED;
	}
	if ((r->plan = mnt_plan_new(cwd, err, sizeof(err))) == NULL) {
		log_warnx("run: %s", err);
		return RUN_FAILED;
	}
	r->env = env_new(environ);
	/* A usage error is pinhole's failure too: 125, as for env(1). */
	if ((rc = parse_opts(r, argc, argv)) != 0)
		return rc > 0 ? -1 : RUN_FAILED;
	if (load_policy(r) != 0 || guard_env_secrets(r) != 0 ||
	    open_log(r) != 0 || plan_hides(r) != 0 ||
	    setup_interception(r) != 0)
		return RUN_FAILED;
	env_set_proxy(r->env, NET_PROXY_PORT);
	return 0;
}

static void
run_free(struct run *r)
{
	size_t i;

	proxy_free(r->px);
	tls_free(r->tls);
	ca_free(r->ca);
	inject_standins_free(r->standins);
	for (i = 0; i < r->nreadable; i++)
		free(r->readable[i]);
	dns_free(r->resolver);
	sbx_free(r->sbx);
	if (r->base != NULL)
		event_base_free(r->base);
	audit_close(r->audit);
	policy_free(r->policy);
	mnt_plan_free(r->plan);
	env_free(r->env);
	free(r->allow);
	free(r->logpath);
	if (r->sfd >= 0)
		close(r->sfd);
}

int
cmd_run(int argc, char **argv)
{
	struct run r;
	sigset_t mask;
	int rc;

	memset(&r, 0, sizeof(r));
	r.sfd = -1;
	r.status = RUN_FAILED;
	if ((rc = prepare(&r, argc, argv)) != 0) {
		run_free(&r);
		return rc < 0 ? 0 : rc;
	}
	if (r.verbose)
		log_init(NULL, log_verbose() + 1);
	signal(SIGPIPE, SIG_IGN);
	if (watch_signals(&r, &mask) == 0 && start_sandbox(&r, &mask) == 0)
		(void)serve(&r);
	else
		r.status = RUN_FAILED;
	/* Sessions of processes that ended with the sandbox: close, log. */
	proxy_free(r.px);
	r.px = NULL;
	print_denied(&r);
	rc = r.status;
	run_free(&r);
	return rc;
}
