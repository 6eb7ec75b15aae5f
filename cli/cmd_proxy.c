/*
 * cmd_proxy.c: pinhole proxy, the egress proxy as a daemon (no sandbox).
 *
 * SIGHUP reloads the policy atomically (a policy with errors is refused
 * and the old one stays); SIGTERM and SIGINT stop accepting, let sessions
 * finish for the grace period, then exit.  With a CA pinned in the policy
 * ("ca cert PATH key PATH", one its clients trust) it intercepts the rules
 * that need the requests inside TLS, as pinhole run does; the CA is read
 * at the start and kept by reloads.  This file is the options, the
 * listener, privilege shedding and the signals; proxy/engine_load.c loads
 * the policy, its secrets and the log, proxy/engine.c runs the proxy, its
 * reloads (secrets loaded off the loop) and its shutdown.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "cli/broker.h"
#include "cli/cli.h"
#include "cli/proxy_gateway.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "netns/sandbox.h"
#include "policy/policy.h"
#include "audit/audit.h"
#include "proxy/engine.h"
#include "proxy/engine_load.h"
#include "proxy/metrics.h"
#include "proxy/proxy.h"
#include "proxy/workers.h"

#define POLICIES_MAX 16

struct proxy_opts {
	const char *policies[POLICIES_MAX];
	size_t npolicies;
	const char *listen;
	const char *socks; /* SOCKS5 listener (via "socks"), or NULL */
	const char *metrics; /* Prometheus endpoint (metrics.h), or NULL */
	const char *log;
	const char *dns;
	uint64_t log_limit; /* 0: none */
	uint64_t head_memory; /* 0: the proxy's default */
	uint64_t buffer_memory; /* 0: the proxy's default */
	unsigned max_sessions;
	unsigned workers; /* event loops (threads); 0 until given */
	long max_per_client; /* ENGINE_PER_CLIENT_DEFAULT unless given */
	unsigned grace_ms;
	const char *broker; /* --broker PATH: the daemon (broker.h) */
	unsigned per_user, sandboxes; /* its limits */
	unsigned proxy_only; /* options a broker does not take (OPT_*) */
	unsigned broker_only; /* options only a broker takes */
};

struct daemon {
	struct proxy_opts o;
	struct engine_load_config lc; /* for the load and the reloads */
	struct cli_diag_count count;
	struct event_base *base;
	struct engine *eng;
	struct metrics *metrics; /* NULL without --metrics */
};

static void
proxy_usage(FILE *f)
{
	fprintf(f,
	    "usage: pinhole proxy -p POLICY [-p POLICY]... [--listen ADDR] "
	    "[--socks ADDR]\n"
	    "                     [--log FILE] [--dns SERVERS] [--max-sessions "
	    "N]\n"
	    "                     [--max-per-client N] [--grace SECONDS] "
	    "[--log-limit SIZE]\n"
	    "                     [--head-memory SIZE] [--buffer-memory "
	    "SIZE]\n"
	    "                     [--metrics ADDR] [--workers N]\n"
	    "       pinhole proxy -p BROKER.conf --broker PATH [--log FILE] "
	    "[--metrics ADDR]\n"
	    "                     [--max-per-user N] [--max-sandboxes N] "
	    "[--dns SERVERS]\n"
	    "                     [--log-limit SIZE] [-v]\n\n"
	    "Runs the egress proxy without a sandbox.  ADDR is HOST:PORT (an "
	    "IPv4 or\n[IPv6] address; port 0 picks a free one) or "
	    "unix:PATH.\n\n"
	    "  -p, --policy FILE      policy (repeatable; combined in order)\n"
	    "  -l, --listen ADDR      where to accept HTTP proxy clients\n"
	    "      --socks ADDR       where to accept SOCKS5 clients (no "
	    "authentication,\n"
	    "                         CONNECT only); --listen, --socks or "
	    "both\n"
	    "      --log FILE         audit log, or 'stderr' (default: the "
	    "policy's log,\n"
	    "                         else stderr)\n"
	    "      --dns SERVERS      DNS servers (c-ares list, e.g. "
	    "127.0.0.1:5353);\n"
	    "                         default: /etc/resolv.conf\n"
	    "      --log-limit SIZE   bytes the proxy may write to the log, "
	    "then only\n"
	    "                         counts (K, M, G; default: no limit)\n"
	    "      --head-memory SIZE memory for unfinished request heads, all "
	    "\n"
	    "                         connections together (default 16M)\n"
	    "      --buffer-memory SIZE  bytes queued between clients and "
	    "upstreams,\n"
	    "                         all connections together, about "
	    "(default 64M)\n"
	    "      --max-sessions N   concurrent connections (default: what "
	    "the\n"
	    "                         descriptor limit allows, at most 65536)\n"
	    "      --max-per-client N connections one client address (an "
	    "IPv6 /64)\n"
	    "                         may have open; more get 503 (default: "
	    "a quarter\n"
	    "                         of --max-sessions; 0: no limit)\n"
	    "      --grace SECONDS    time sessions get to finish at SIGTERM "
	    "(default 10)\n"
	    "      --workers N        event loops, one thread each (1-256; "
	    "default: the\n"
	    "                         CPUs the process may use)\n"
	    "      --metrics ADDR     serve Prometheus metrics (GET /metrics) "
	    "on\n"
	    "                         127.0.0.1:PORT, [::1]:PORT or "
	    "unix:PATH only\n"
	    "      --broker PATH      be the broker: serve sandboxes of "
	    "`pinhole run\n"
	    "                         --broker PATH` on the Unix socket PATH "
	    "(or the one\n"
	    "                         systemd passes), the policies the "
	    "configuration's\n"
	    "                         broker blocks grant; --listen and "
	    "--socks do not go\n"
	    "                         with it\n"
	    "      --max-per-user N   a broker's sandboxes per uid at once "
	    "(default %u)\n"
	    "      --max-sandboxes N  a broker's sandboxes in all (default "
	    "%u)\n"
	    "  -v, --verbose          one line per decision on stderr\n"
	    "  -h, --help             this text\n\n"
	    "Signals: HUP reloads the policy (a broker: its configuration), "
	    "TERM and\n"
	    "INT stop.\n\n"
	    "Rules inside TLS (paths, methods, inject) need a CA the clients "
	    "trust,\npinned in the policy: ca cert PATH key PATH (read at the "
	    "start);\nwithout one they answer 501.  placeholder rules are "
	    "refused.\n",
	    BROKER_PER_USER_DEFAULT, BROKER_SANDBOXES_DEFAULT);
}

static int
parse_uint(const char *s, unsigned max, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno != 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

/* --broker: one configuration, and none of the proxy's listeners. */
static int
broker_opts_check(const struct proxy_opts *o, int argc)
{
	const char *why = NULL;

	if (o->npolicies != 1)
		why = "--broker takes exactly one configuration (-p "
		      "BROKER.conf)";
	else if (o->listen != NULL || o->socks != NULL)
		why = "--listen and --socks do not go with --broker";
	else if (o->proxy_only > 0)
		why =
		    "--max-sessions, --max-per-client, --grace, --head-memory, "
		    "--buffer-memory and --workers do not go with --broker "
		    "(it runs one process per sandbox)";
	else if (optind != argc)
		why = "unexpected argument";
	if (why == NULL)
		return 0;
	log_warnx("proxy: %s", why);
	proxy_usage(stderr);
	return -1;
}

static int
parse_opts(int argc, char **argv, struct proxy_opts *o)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"policy", required_argument, NULL, 'p'},
	    {"listen", required_argument, NULL, 'l'},
	    {"socks", required_argument, NULL, 's'},
	    {"log", required_argument, NULL, 'L'},
	    {"dns", required_argument, NULL, 'D'},
	    {"max-sessions", required_argument, NULL, 'm'},
	    {"max-per-client", required_argument, NULL, 'c'},
	    {"grace", required_argument, NULL, 'g'},
	    {"log-limit", required_argument, NULL, 'S'},
	    {"head-memory", required_argument, NULL, 'H'},
	    {"buffer-memory", required_argument, NULL, 'B'},
	    {"metrics", required_argument, NULL, 'M'},
	    {"broker", required_argument, NULL, 'b'},
	    {"max-per-user", required_argument, NULL, 'U'},
	    {"max-sandboxes", required_argument, NULL, 'X'},
	    {"workers", required_argument, NULL, 'W'},
	    {"verbose", no_argument, NULL, 'v'},
	    {NULL, 0, NULL, 0},
	};
	unsigned secs = 10, n;
	int ch;

	while ((ch = getopt_long(argc, argv, "hp:l:v", opts, NULL)) != -1) {
		/* Which options belong to only one of the two daemons. */
		if (strchr("lsmcgHBW", ch) != NULL)
			o->proxy_only++;
		if (strchr("UX", ch) != NULL)
			o->broker_only++;
		switch (ch) {
		case 'h':
			proxy_usage(stdout);
			return 1;
		case 'p':
			if (o->npolicies == POLICIES_MAX)
				goto usage;
			o->policies[o->npolicies++] = optarg;
			break;
		case 'l':
			o->listen = optarg;
			break;
		case 's':
			o->socks = optarg;
			break;
		case 'L':
			o->log = optarg;
			break;
		case 'D':
			o->dns = optarg;
			break;
		case 'm':
			if (parse_uint(optarg, 1000000, &o->max_sessions) !=
			        0 ||
			    o->max_sessions == 0)
				goto usage;
			break;
		case 'c':
			if (parse_uint(optarg, 1000000, &n) != 0)
				goto usage;
			o->max_per_client = n;
			break;
		case 'g':
			if (parse_uint(optarg, 3600, &secs) != 0)
				goto usage;
			break;
		case 'S':
			if (audit_parse_size(optarg, &o->log_limit) != 0)
				goto usage;
			break;
		case 'H':
			if (audit_parse_size(optarg, &o->head_memory) != 0 ||
			    o->head_memory == 0)
				goto usage;
			break;
		case 'B':
			if (audit_parse_size(optarg, &o->buffer_memory) != 0 ||
			    o->buffer_memory == 0)
				goto usage;
			break;
		case 'M':
			o->metrics = optarg;
			break;
		case 'W':
			if (parse_uint(optarg, PROXY_GROUP_MAX, &o->workers) !=
			        0 ||
			    o->workers == 0)
				goto usage;
			break;
		case 'b':
			o->broker = optarg;
			break;
		case 'U':
			if (parse_uint(optarg, 65536, &o->per_user) != 0 ||
			    o->per_user == 0)
				goto usage;
			break;
		case 'X':
			if (parse_uint(optarg, 65536, &o->sandboxes) != 0 ||
			    o->sandboxes == 0)
				goto usage;
			break;
		case 'v':
			log_init(NULL, log_verbose() + 1);
			break;
		default:
			goto usage;
		}
	}
	o->grace_ms = secs * 1000;
	if (o->broker != NULL)
		return broker_opts_check(o, argc);
	if (o->broker_only > 0) {
		log_warnx("proxy: --max-per-user and --max-sandboxes are a "
		          "broker's (--broker PATH)");
		goto usage;
	}
	if (o->npolicies > 0 && (o->listen != NULL || o->socks != NULL) &&
	    optind == argc)
		return 0;
	log_warnx("proxy: %s",
	    o->npolicies == 0 ? "no policy (-p FILE)"
	        : o->listen == NULL && o->socks == NULL
	        ? "no --listen ADDR or --socks ADDR"
	        : "unexpected argument");
usage:
	proxy_usage(stderr);
	return -1;
}

/* What the engine loads: the policies, the log and a pinned CA; no view. */
static void
load_config(struct daemon *d)
{
	d->lc.name = "proxy";
	d->lc.policies = d->o.policies;
	d->lc.npolicies = d->o.npolicies;
	d->lc.diag = cli_print_diag;
	d->lc.diag_arg = &d->count;
	d->lc.log = d->o.log;
	d->lc.log_limit = d->o.log_limit;
	/* With a pinned CA the clients trust, rules inside TLS work. */
	d->lc.intercept = ENGINE_LOAD_INTERCEPT_PINNED;
}

/* Parses the policy again, reading no secret; NULL after printing why. */
static struct policy *
reparse(void *arg)
{
	struct daemon *d = arg;

	memset(&d->count, 0, sizeof(d->count));
	return engine_load_parse(&d->lc);
}

static void
on_reload(evutil_socket_t sig, short what, void *arg)
{
	struct daemon *d = arg;

	(void)sig;
	(void)what;
	engine_reload(d->eng);
}

static void
on_stopped(void *arg)
{
	struct daemon *d = arg;

	event_base_loopexit(d->base, NULL);
}

static void
on_stop(evutil_socket_t sig, short what, void *arg)
{
	struct daemon *d = arg;
	size_t n = engine_sessions(d->eng);

	(void)what;
	log_warnx("signal %d: stopping; %zu session%s may finish", (int)sig, n,
	    n == 1 ? "" : "s");
	engine_stop(d->eng, d->o.grace_ms, on_stopped, d);
}

/*
 * Listens on SPEC (none when NULL) for clients arriving as VIA and says
 * where, after WHAT.  Returns 0 or -1.
 */
static int
listen_on(
    struct daemon *d, const char *spec, enum proxy_via via, const char *what)
{
	unsigned port;

	if (spec == NULL)
		return 0;
	if (engine_listen(d->eng, spec, via, &port) != 0)
		return -1;
	/* The host as given (tests read the port picked for ":0"). */
	if (strncmp(spec, "unix:", 5) != 0)
		fprintf(stderr, "pinhole: %s on %.*s:%u\n", what,
		    (int)(strrchr(spec, ':') - spec), spec, port);
	return 0;
}

/* Serves the metrics on --metrics ADDR, if given; 0 or -1. */
static int
metrics_on(struct daemon *d)
{
	const char *spec = d->o.metrics;
	unsigned port;

	if (d->metrics == NULL)
		return 0;
	if (metrics_listen(d->metrics, d->base, spec, &port) != 0)
		return -1;
	/* The host as given (tests read the port picked for ":0"). */
	if (strncmp(spec, "unix:", 5) != 0)
		fprintf(stderr, "pinhole: metrics on %.*s:%u\n",
		    (int)(strrchr(spec, ':') - spec), spec, port);
	return 0;
}

/*
 * Makes the engine (resolver, proxy; it takes L over) and the listeners;
 * returns 0 or -1 after saying why.
 */
static int
daemon_open(struct daemon *d, struct engine_load *l)
{
	struct engine_config cf = {0};

	cf.dns = d->o.dns;
	cf.max_sessions = d->o.max_sessions;
	cf.max_per_client = d->o.max_per_client;
	cf.head_memory = (size_t)d->o.head_memory;
	cf.buffer_memory = (size_t)d->o.buffer_memory;
	cf.metrics = d->metrics;
	cf.metrics_shard = metrics_shard_new;
	cf.workers = d->o.workers;
	cf.parse = reparse;
	cf.parse_arg = d;
	if ((d->eng = engine_new(d->base, &cf, l)) == NULL ||
	    listen_on(d, d->o.socks, PROXY_VIA_SOCKS, "SOCKS listening") != 0 ||
	    listen_on(d, d->o.listen, PROXY_VIA_PROXY, "listening") != 0 ||
	    metrics_on(d) != 0)
		return -1;
	log_info(
	    "proxy: %u worker%s", d->o.workers, d->o.workers == 1 ? "" : "s");
	return 0;
}

#define SHED_PATHS_MAX 64

/*
 * Once listening, the daemon sheds privilege (sbx_shed).  A reload must
 * still read the policy files (their directories: includes) and the
 * secret files, so Landlock lets it; an exec secret's helper may need to
 * read anything, so with one the daemon goes without Landlock.
 */
struct shed {
	char *paths[SHED_PATHS_MAX];
	size_t n;
	int landlock;
};

static void
shed_add(void *arg, const char *path)
{
	struct shed *sh = arg;

	if (sh->n < SHED_PATHS_MAX)
		sh->paths[sh->n++] = xstrdup(path);
}

static void
shed_plan(const struct engine_load *l, struct shed *sh)
{
	sh->n = 0;
	sh->landlock = engine_load_reads(l, shed_add, sh);
}

static void
shed_apply(struct shed *sh)
{
	char report[256];

	if (sbx_shed((const char *const *)sh->paths, sh->n, sh->landlock,
	        report, sizeof(report)) != 0)
		log_warnx("proxy: %s", report);
	else
		log_info("proxy: %s", report);
}

static void
shed_free(struct shed *sh)
{
	while (sh->n > 0)
		free(sh->paths[--sh->n]);
}

static int
daemon_run(struct daemon *d)
{
	struct event *hup, *term, *intr;

	hup = evsignal_new(d->base, SIGHUP, on_reload, d);
	term = evsignal_new(d->base, SIGTERM, on_stop, d);
	intr = evsignal_new(d->base, SIGINT, on_stop, d);
	if (hup == NULL || term == NULL || intr == NULL ||
	    evsignal_add(hup, NULL) != 0 || evsignal_add(term, NULL) != 0 ||
	    evsignal_add(intr, NULL) != 0)
		fatalx("proxy: cannot set signal handlers");
	/* After the shedding: the threads inherit what the loop has. */
	if (engine_start(d->eng) != 0)
		return 1;
	event_base_dispatch(d->base);
	event_free(hup);
	event_free(term);
	event_free(intr);
	return 0;
}

/* pinhole proxy --broker: the daemon of cli/broker.c. */
static int
broker_run(const struct proxy_opts *po)
{
	struct broker_opts o;

	memset(&o, 0, sizeof(o));
	o.config = po->policies[0];
	o.path = po->broker;
	o.log = po->log;
	o.dns = po->dns;
	o.metrics = po->metrics;
	o.log_limit = po->log_limit;
	o.per_user = po->per_user;
	o.sandboxes = po->sandboxes;
	o.verbose = log_verbose();
	return broker_main(&o);
}

/* The one -p file has broker blocks: the gateway serves (L taken over). */
static int
gateway(const struct daemon *d, struct engine_load *l)
{
	struct proxy_gateway_opts go = {0};
	const char *why = NULL;

	if (d->o.npolicies != 1)
		why = "a gateway's configuration (broker blocks) is the one -p "
		      "file";
	else if (d->o.workers > 1)
		why = "--workers does not go with a gateway (broker blocks): "
		      "it runs one event loop";
	if (why != NULL) {
		log_warnx("proxy: %s", why);
		engine_load_free(l);
		return 1;
	}
	go.listen = d->o.listen;
	go.socks = d->o.socks;
	go.metrics = d->o.metrics;
	go.log = d->o.log;
	go.dns = d->o.dns;
	go.log_limit = d->o.log_limit;
	go.head_memory = d->o.head_memory;
	go.buffer_memory = d->o.buffer_memory;
	go.max_sessions = d->o.max_sessions;
	go.max_per_client = d->o.max_per_client;
	go.grace_ms = d->o.grace_ms;
	return proxy_gateway_run(&go, &d->lc, l);
}

int
cmd_proxy(int argc, char **argv)
{
	struct daemon d;
	struct engine_load *l;
	struct shed sh;
	int r;

	memset(&d, 0, sizeof(d));
	d.o.max_per_client = ENGINE_PER_CLIENT_DEFAULT;
	d.o.per_user = BROKER_PER_USER_DEFAULT;
	d.o.sandboxes = BROKER_SANDBOXES_DEFAULT;
	if ((r = parse_opts(argc, argv, &d.o)) != 0)
		return r > 0 ? 0 : CLI_EXIT_USAGE;
	if (d.o.broker != NULL)
		return broker_run(&d.o);
	load_config(&d);
	/* The policy, its secrets and the log (proxy/engine_load.c). */
	if (engine_load_new(&d.lc, NULL, &l) != ENGINE_LOAD_OK)
		return 1;
	if (proxy_gateway_is(l))
		return gateway(&d, l);
	/*
	 * Unless asked, one loop per CPU this process may use (its affinity:
	 * taskset, a cgroup's cpuset), at most PROXY_GROUP_MAX.  The limits
	 * and budgets are the process's whatever the number (proxy.h), so
	 * the default changes how fast, not what is served.  A gateway
	 * (above) and a broker run one.
	 */
	if (d.o.workers == 0) {
		unsigned cpus = workers_cpus();

		d.o.workers = cpus < PROXY_GROUP_MAX ? cpus : PROXY_GROUP_MAX;
	}
	signal(SIGPIPE, SIG_IGN);
	if ((d.base = engine_base_new()) == NULL)
		fatalx("proxy: cannot create the event loop");
	if (d.o.metrics != NULL && (d.metrics = metrics_new(0)) == NULL)
		fatalx("proxy: out of memory");
	shed_plan(l, &sh);
	if (daemon_open(&d, l) == 0) {
		shed_apply(&sh);
		r = daemon_run(&d);
	} else
		r = 1;
	shed_free(&sh);
	/* A pending reload is cancelled and joined; sessions logged. */
	engine_free(d.eng);
	metrics_free(d.metrics);
	event_base_free(d.base);
	return r;
}
