/*
 * run_opts.c: the command line of `pinhole run`, bubblewrap's option names
 * where they exist.  Mount steps go into the plan and environment steps
 * into the environment in the order given.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/run.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "netns/env.h"
#include "netns/limits.h"
#include "netns/mount.h"
#include "proxy/proxy.h"
#include "proxy/workers.h"

static void
run_usage(FILE *f)
{
	fprintf(f,
	    "usage: pinhole run [OPTIONS] -- COMMAND [ARG...]\n\n"
	    "Runs COMMAND in a sandbox whose only way to the network is "
	    "pinhole's proxy.\n\n"
	    "  -p, --policy FILE      policy (repeatable; combined in order);\n"
	    "                         under --broker: the NAME of a policy "
	    "the\n"
	    "                         broker grants (one; default "
	    "\"default\")\n"
	    "  -a, --allow TARGET     one more allow rule, e.g. "
	    "example.org:443\n"
	    "      --log FILE         audit log (default: the policy's, else\n"
	    "                         ~/.local/state/pinhole/audit.jsonl)\n"
	    "      --log-limit SIZE   bytes the run may write to the log, "
	    "then only\n"
	    "                         counts (K, M, G; default 64M; 0: no "
	    "limit)\n"
	    "      --dns SERVERS      DNS servers for the proxy (c-ares list)\n"
	    "      --bind SRC [DST]   SRC at DST (default: SRC), read-write\n"
	    "      --ro-bind SRC [DST]  the same, read-only\n"
	    "      --tmpfs DST        a fresh tmpfs at DST\n"
	    "      --hide PATH        PATH appears empty\n"
	    "      --chdir DIR        start in DIR (the current directory "
	    "stays "
	    "the\n"
	    "                         writable one)\n"
	    "      --cache DIR        keep the tool caches of the home in DIR "
	    "(default:\n"
	    "                         ~/.cache/pinhole/KEY, KEY from the "
	    "policy)\n"
	    "      --no-cache         tool caches start empty and are thrown "
	    "away\n"
	    "      --setenv VAR VALUE set VAR\n"
	    "      --unsetenv VAR     remove VAR\n"
	    "      --keep-env VAR     keep VAR from pinhole's environment\n"
	    "      --allow-git-config let the command write .git/hooks and "
	    ".git/config\n"
	    "      --limit-pids N     at most N processes and threads "
	    "(default 4096;\n"
	    "                         none: no limit)\n"
	    "      --limit-memory SIZE  at most SIZE (K, M, G) of address "
	    "space per\n"
	    "                         process (default: no limit)\n"
	    "                         Where a cgroup can be made (root, a "
	    "delegated\n"
	    "                         cgroup v2) both bind the sandbox "
	    "whole.\n"
	    "      --unix-socket PATH let the command connect to the host's "
	    "Unix socket\n"
	    "                         PATH (a way out of the sandbox: "
	    "see pinhole(1))\n"
	    "      --no-capture       no transparent capture: only programs "
	    "that honour\n"
	    "                         the proxy variables get out\n"
	    "      --workers N        the proxy's event loops, one thread "
	    "each (1-%u;\n"
	    "                         default the CPUs, at most %u)\n"
	    "      --broker PATH      use the broker at Unix socket PATH "
	    "(pinhole proxy\n"
	    "                         --broker): it holds the secrets; "
	    "--log gets a copy\n"
	    "                         of the records; no -a, --dns or "
	    "--log-limit\n"
	    "                         (default: $PINHOLE_BROKER, if set and "
	    "not empty)\n"
	    "  -v, --verbose          say what the sandbox applied; one line "
	    "per decision\n"
	    "  -h, --help             this text\n\n"
	    "Defaults: / read-only, the current directory writable, fresh "
	    "/tmp, /proc\nand /dev, the home writable (its writes thrown away, "
	    "but for the tool\ncaches); the environment holds PATH, HOME, "
	    "USER, LOGNAME, TERM, LANG,\nLC_*, TZ and the proxy variables.  "
	    "Exit status: the command's; 125 when\npinhole failed before it "
	    "ran.  If the sandbox will not start: pinhole doctor.\n",
	    (unsigned)PROXY_GROUP_MAX, (unsigned)RUN_WORKERS_DEFAULT_MAX);
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
	int k, ok = i + n < argc;

	/* "--" starts the command: it is never an option's argument. */
	for (k = 1; ok && k <= n; k++)
		ok = strcmp(argv[i + k], "--") != 0;
	if (ok)
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
			else if (r->nkeep == RUN_KEEP_MAX) {
				log_warnx(
				    "run: at most %d --keep-env", RUN_KEEP_MAX);
				*bad = -1;
			} else {
				r->keep[r->nkeep++] = argv[*i];
				env_keep(r->env, environ, argv[*i]);
			}
		}
	} else
		return 0;
	return 1;
}

/* --limit-pids N|none, --limit-memory SIZE.  Returns 1 if taken. */
static int
limit_opt(struct run *r, int argc, char **argv, int *i, int *bad)
{
	const char *o = argv[*i], *v;

	if (strcmp(o, "--limit-pids") != 0 && strcmp(o, "--limit-memory") != 0)
		return 0;
	if ((*bad = need(argc, argv, *i, 1)) != 0)
		return 1;
	v = argv[++*i];
	if (strcmp(o, "--limit-memory") == 0)
		*bad = limits_parse_size(v, &r->limit_memory);
	else if (strcmp(v, "none") == 0)
		r->limit_pids = 0;
	else
		*bad = limits_parse_pids(v, &r->limit_pids);
	if (strcmp(o, "--limit-pids") == 0)
		r->limit_pids_given = 1;
	if (*bad)
		log_warnx("run: %s: bad value '%s'", o, v);
	return 1;
}

unsigned
run_workers_default(void)
{
	unsigned n = workers_cpus();

	return n < RUN_WORKERS_DEFAULT_MAX ? n : RUN_WORKERS_DEFAULT_MAX;
}

/*
 * --workers N: the engine's event loops, 1 to PROXY_GROUP_MAX, digits
 * only (strtoul would take a sign and blanks).  Returns 1 if taken.
 */
static int
workers_opt(struct run *r, int argc, char **argv, int *i, int *bad)
{
	const char *v;
	unsigned long n = 0;
	size_t k;

	if (strcmp(argv[*i], "--workers") != 0)
		return 0;
	if ((*bad = need(argc, argv, *i, 1)) != 0)
		return 1;
	v = argv[++*i];
	for (k = 0; v[k] >= '0' && v[k] <= '9' && n <= PROXY_GROUP_MAX; k++)
		n = n * 10 + (unsigned long)(v[k] - '0');
	if (k == 0 || v[k] != '\0' || n < 1 || n > PROXY_GROUP_MAX) {
		log_warnx("run: --workers: bad value '%s' (the proxy's event "
		          "loops: 1 to %u)",
		    v, (unsigned)PROXY_GROUP_MAX);
		*bad = -1;
	} else
		r->workers = (unsigned)n;
	return 1;
}

/*
 * --unix-socket PATH: the socket file is identified now, outside, by its
 * device and inode; the sandbox reaches that one socket, by any path it
 * sees it at.
 */
static int
add_unix_socket(struct run *r, const char *path)
{
	if (r->nunix_allow == RUN_UNIX_MAX) {
		log_warnx("run: at most %d --unix-socket", RUN_UNIX_MAX);
		return -1;
	}
	if (sockguard_allow_path(path, &r->unix_allow[r->nunix_allow]) != 0) {
		log_warn("run: --unix-socket %s", path);
		return -1;
	}
	r->nunix_allow++;
	return 0;
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
	else if (strcmp(o, "--log-limit") == 0)
		slot = &r->log_limit;
	else if (strcmp(o, "--dns") == 0)
		slot = &r->dns;
	else if (strcmp(o, "--chdir") == 0)
		slot = &r->chdir;
	else if (strcmp(o, "--cache") == 0)
		slot = &r->cache_dir;
	else if (strcmp(o, "--no-cache") == 0)
		r->no_cache = 1;
	else if (strcmp(o, "--no-capture") == 0)
		r->no_capture = 1;
	else if (strcmp(o, "-p") == 0 || strcmp(o, "--policy") == 0) {
		if (r->npolicies == RUN_POLICIES_MAX) {
			log_warnx(
			    "run: at most %d policy files", RUN_POLICIES_MAX);
			*bad = -1;
		} else
			slot = &r->policies[r->npolicies++];
	} else if (strcmp(o, "-a") == 0 || strcmp(o, "--allow") == 0) {
		if ((*bad = need(argc, argv, *i, 1)) == 0)
			add_allow(r, argv[++*i]);
	} else if (strcmp(o, "--unix-socket") == 0) {
		if ((*bad = need(argc, argv, *i, 1)) == 0)
			*bad = add_unix_socket(r, argv[++*i]);
	} else
		return 0;
	if (slot != NULL && (*bad = need(argc, argv, *i, 1)) == 0)
		*slot = argv[++*i];
	return 1;
}

/* A policy's name as a broker grants it (view.h): [A-Za-z0-9._-]{1,64}. */
static int
policy_name_ok(const char *s)
{
	size_t n = strspn(s,
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789._-");

	return n > 0 && n <= VIEW_POLICY_NAME_MAX && s[n] == '\0';
}

/*
 * Under a broker (--broker, else a non-empty PINHOLE_BROKER) the policy
 * is the broker's: -p names one it grants, and what would widen or
 * change it here (-a, --dns, --log-limit) is refused rather than
 * silently ignored.  Returns 0, or -1 (said).
 */
static int
broker_opts(struct run *r)
{
	const char *env = getenv("PINHOLE_BROKER"), *why = NULL;

	if (r->broker == NULL && env != NULL && env[0] != '\0')
		r->broker = env;
	if (r->broker == NULL)
		return 0;
	if (r->broker[0] == '\0')
		why = "--broker needs a socket's path";
	else if (r->allow != NULL)
		why = "-a/--allow cannot be used with --broker: the broker's "
		      "policy says what is allowed";
	else if (r->dns != NULL)
		why = "--dns cannot be used with --broker: the broker resolves "
		      "(pinhole proxy --broker ... --dns)";
	else if (r->log_limit != NULL)
		why = "--log-limit cannot be used with --broker: the broker "
		      "sets it (pinhole proxy --broker ... --log-limit)";
	else if (r->npolicies > 1)
		why = "a second -p cannot be used with --broker: -p names the "
		      "one policy asked of the broker";
	else if (r->workers != 0)
		why = "--workers cannot be used with --broker: the broker "
		      "serves each sandbox with an engine process of its own, "
		      "one event loop";
	if (why != NULL) {
		log_warnx("run: %s", why);
		return -1;
	}
	if (r->npolicies == 0)
		r->policies[r->npolicies++] = "default";
	if (!policy_name_ok(r->policies[0])) {
		log_warnx("run: -p %s: under --broker -p names a policy the "
		          "broker grants, not a file (a name of letters, "
		          "digits, '.', '_' and '-', at most %d)",
		    r->policies[0], VIEW_POLICY_NAME_MAX);
		return -1;
	}
	return 0;
}

int
run_parse_opts(struct run *r, int argc, char **argv)
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
		if (strcmp(argv[i], "--broker") == 0) {
			if (need(argc, argv, i, 1) != 0)
				return -1;
			r->broker = argv[++i];
			continue;
		}
		if (strcmp(argv[i], "--report") == 0) {
			log_warnx("run: %s is not implemented yet", argv[i]);
			return -1;
		}
		if (!plain_opt(r, argc, argv, &i, &bad) &&
		    !limit_opt(r, argc, argv, &i, &bad) &&
		    !workers_opt(r, argc, argv, &i, &bad) &&
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
	if (broker_opts(r) != 0)
		return -1;
	/* A broker's client: the broker's engine has its one loop. */
	if (r->workers == 0 && r->broker != NULL)
		r->workers = 1;
	else if (r->workers == 0)
		r->workers = run_workers_default();
	return 0;
}
