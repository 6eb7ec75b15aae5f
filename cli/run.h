/*
 * run.h: the parts of `pinhole run` (cli/cmd_run.c: the sandbox and the
 * loop; cli/run_opts.c: the command line; cli/run_setup.c: the run's
 * choices for the engine's loading, and the view made into the mount plan
 * and the environment; cli/run_engine.c: the engine process and the
 * socket to it; cli/run_apt.c: apt's configuration and state), sharing
 * one struct run.
 */
#ifndef PH_RUN_H
#define PH_RUN_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "netns/sockguard.h"
#include "proxy/view.h"

struct engine;
struct engine_load;
struct engine_load_sink;
struct env;
struct event_base;
struct metrics;
struct mnt_plan;
struct policy;
struct run_trust;
struct sbx;

#define RUN_FAILED 125 /* pinhole itself failed before the command ran */
#define RUN_POLICIES_MAX 16
#define RUN_KEEP_MAX 64
#define RUN_DENIED_MAX 16 /* host:port pairs named in the last line */
#define RUN_LOOKUPS_SAID 8 /* names looked up directly, said on stderr */
#define RUN_LIST_MAX 256 /* intercepted targets, upstream-ca files */
#define RUN_UNIX_MAX 16 /* --unix-socket */
#define RUN_LOG_LIMIT "64M" /* what one run may write to the audit log */
/*
 * --workers by default: the CPUs the process may use, at most this many.
 * Each loop keeps its own leaf certificates, upstream TLS sessions and
 * idle upstream connections: one sandbox's few hosts, spread over more
 * loops than this, would meet mostly cold caches.
 */
#define RUN_WORKERS_DEFAULT_MAX 8

struct run_denied {
	char what[300];
	unsigned n;
};

struct run {
	/* options */
	const char *policies[RUN_POLICIES_MAX];
	size_t npolicies;
	char *allow; /* --allow rules, one per line */
	const char *log, *dns, *chdir;
	const char *cache_dir; /* --cache DIR */
	int no_cache; /* --no-cache */
	const char *log_limit; /* --log-limit SIZE */
	const char *keep[RUN_KEEP_MAX];
	size_t nkeep;
	int verbose;
	unsigned long limit_pids; /* --limit-pids; 0: none */
	int limit_pids_given; /* --limit-pids on the command line */
	unsigned long long limit_memory; /* --limit-memory; 0: none */
	struct sockguard_allow unix_allow[RUN_UNIX_MAX]; /* --unix-socket */
	size_t nunix_allow;
	int no_capture; /* --no-capture */
	/* --workers N: the engine's event loops (1..PROXY_GROUP_MAX; by
	 * default the CPUs, at most RUN_WORKERS_DEFAULT_MAX); 0 in a
	 * broker's engine, and before the options are read: one loop */
	unsigned workers;
	/* in the launcher: --broker PATH (or PINHOLE_BROKER); the policy
	 * asked for is policies[0], a name (view.h VIEW_POLICY_NAME_MAX) */
	const char *broker;
	char **argv;
	struct mnt_plan *plan;
	struct env *env;
	/* running */
	struct engine_load *load; /* in the engine, until the listeners came */
	char *logpath; /* in the launcher (view) */
	struct event_base *base;
	struct engine *eng; /* the proxy, once the listeners came */
	struct sbx *sbx;
	char
	    *readable[RUN_LIST_MAX]; /* files the proxy reads late (Landlock) */
	size_t nreadable;
	int sfd, status;
	int esock; /* the socket between the launcher and the engine */
	pid_t engine; /* in the launcher: the engine's pid */
	pid_t launcher; /* in the engine: its parent's */
	int engine_lost; /* the engine ended before the command */
	char *ca_pem; /* in the launcher: the CA certificate (view) */
	const char *trust_file; /* the bundle with the run CA, inside */
	struct run_trust *trust; /* in the launcher: what the sandbox trusts */
	const char *java_store; /* in the sandbox: Java's trust store */
	struct view_order lorder; /* the launcher's check of the engine */
	struct view_order eorder; /* the engine's check of the launcher */
	char run_id[17];
	/* in the launcher: the ports the sandbox captures (view CAPTURE) */
	uint16_t capture_ports[VIEW_CAPTURE_MAX];
	size_t ncapture;
	uint32_t capture_skipped; /* ports of ranges too wide to capture */
	/* in the engine: capture listeners the proxy could not take */
	unsigned capture_dropped, capture_first_dropped;
	/*
	 * In the engine, with --workers N the proxies of N loops, each in
	 * its own thread, call back into the run (a denial, a client that
	 * refused the run CA, a line for the user): LOCK guards what they
	 * change below and the writes to stderr or to esock.  Taken only
	 * when something is denied, distrusted or said, never on the path
	 * of an allowed request.  Made with the run, destroyed with it.
	 */
	pthread_mutex_t lock;
	struct run_denied denied[RUN_DENIED_MAX];
	size_t ndenied, denied_total;
	unsigned lookups_said; /* engine: names said by on_looked_up */
	/* clients that refused the run CA, and the first one's host:port */
	size_t distrust_total;
	char distrust_first[300];
	/*
	 * In a broker's engine (cli/broker.c): the client it serves, from
	 * SO_PEERCRED and its REQUEST; its hooks replace the run's
	 * (run_setup_engine), its view says VIEW_ROLE_BROKER, and its
	 * words for the user go as NOTE messages, not to stderr.
	 */
	int broker_engine;
	uid_t client_uid;
	pid_t client_pid;
	char client_cmd[VIEW_CMD_MAX + 1];
	char client_policy[VIEW_POLICY_NAME_MAX + 1]; /* the name asked */
	int client_copy; /* the client's copy of its records (audit.h), -1 */
	struct metrics *metrics; /* a broker's engine: the relay; or NULL */
};

extern char **environ;

/*
 * Reads the options and the command into R (whose plan and environment
 * exist).  Returns 0, 1 after --help, or -1 on a usage error (said).
 */
int run_parse_opts(struct run *r, int argc, char **argv);

/* --workers by default: the CPUs the process may use (taskset and a
 * cpuset count), at most RUN_WORKERS_DEFAULT_MAX. */
unsigned run_workers_default(void);

/*
 * The start directory holds no home of the user's.  Returns 0, or -1
 * (said).  The launcher's, before the engine starts.
 */
int run_check_home(struct run *r);

/*
 * cli/run_cache.c.  The sandbox's home (HOME set in the sandbox's
 * environment when pinhole chose it) and its tool caches, in the plan;
 * the cache directory made.  Before the engine starts (it checks the
 * plan's writable places).  Returns 0, or -1 (said).
 */
int run_plan_home(struct run *r);

/*
 * The cache key of policies POLICIES (N, as given) and --allow rules
 * ALLOW (or NULL) into OUT: NAME-HEX, NAME from the first policy's file
 * name ("allow", "none" without one), HEX 16 digits of the SHA-256 of
 * the policies' real paths and the rules.  Returns 0, or -1.
 */
int run_cache_key(const char *const *policies, size_t n, const char *allow,
    char *out, size_t len);

/*
 * In the engine: loads into r->load (proxy/engine_load.c: a run id, the
 * policy and its secrets, the audit log and, when a rule intercepts, the
 * CA and the TLS contexts) with the run's hooks; the view goes to SINK
 * as it is made.  Returns 0, or -1 (said).
 */
int run_setup_engine(struct run *r, const struct engine_load_sink *sink);

/*
 * The run's default audit log, $XDG_STATE_HOME/pinhole/audit.jsonl (or
 * in the home), its directory made; the private fallback
 * $TMPDIR/pinhole-UID/audit.jsonl when there is no home (and as
 * run_setup_private_log, when the default cannot be opened).  NULL
 * (said) when none is usable.  The caller frees the path.
 */
char *run_setup_default_log(void);
char *run_setup_private_log(void);

/*
 * Under --broker: the user's copy of the records, PATH open on FD, is
 * refused (said) where a run refuses its own log -- a terminal, the file
 * behind fds 0-2, a place the sandbox may write to -- and when it is not
 * a regular file.  Returns 0 or -1.
 */
int run_setup_copy_ok(struct run *r, const char *path, int fd);

/*
 * In the launcher: receives the view (environment secrets wiped as they
 * are named), and adds the hidden paths, the run's machine id and host
 * name and the trust bundle to the plan, the stand-ins to the
 * environment.  Returns 0, or -1 (said, by it or by the engine).
 */
int run_setup_launcher(struct run *r);

/*
 * The command's environment for the SOCKS listener (ALL_PROXY,
 * all_proxy), after env_set_proxy; with -v, one line on the capture
 * mode.  In the launcher, after run_setup_launcher.
 */
void run_setup_capture_env(struct run *r);

/* Wipes variable NAME from pinhole's environment and the sandbox's. */
void run_wipe_env(struct run *r, const char *name);

/*
 * apt in the sandbox (run_apt.c): where the host has apt, a fresh tmpfs
 * over /var/lib/apt/lists and /var/cache/apt, and APT_CONFIG naming a
 * file that includes the user's APT_CONFIG and sets APT::Sandbox::User
 * "root" (and the CA bundle when intercepting).  After the trust bundle.
 * Returns 0, or -1 after saying why.
 */
int run_apt_setup(struct run *r);

/*
 * cli/run_engine.c.  Forks the engine, which runs run_setup_engine, the
 * proxy on the listeners it is given, and exits after STOP; the
 * launcher keeps r->esock and r->engine.  Returns 0, or -1 (said).
 */
int run_engine_start(struct run *r);

/*
 * cli/run_broker.c.  Instead of run_engine_start under --broker: connects
 * to the broker at r->broker and asks for policy r->policies[0] (REQUEST,
 * with the user's copy of the log); r->esock is then the broker's socket
 * and r->engine 0.  Everything after is the same conversation.  Returns
 * 0, or -1 (said: no broker there, or its refusal).
 */
int run_broker_connect(struct run *r);

/*
 * cli/run_broker.c.  A broker's NOTE TEXT on stderr as one line,
 * "pinhole: TEXT", its control bytes escaped; its ERROR TEXT as
 * "pinhole: run: broker PATH: TEXT".
 */
void run_broker_note(const char *text);
void run_broker_error(const struct run *r, const char *text);

/*
 * In a broker's engine, a process the broker forked for one client
 * (cli/broker.c): R filled (broker_engine, the client, policies, log,
 * esock the client's socket, REQUEST already read), runs the engine as
 * run_engine_start's child does -- view, listeners, proxy, summary --
 * until the client says STOP or goes.  Returns the process's exit
 * status.
 */
int run_engine_serve(struct run *r);

/*
 * In the engine: a line for the user (FMT ends in a newline): on stderr
 * in a run, a NOTE to the client in a broker's engine (its stderr is the
 * broker's log).  From any loop's thread: it takes r->lock, which the
 * caller must not hold.
 */
void run_engine_say(struct run *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Hands the sandbox's listeners to the engine.  Returns 0, or -1. */
int run_engine_listeners(struct run *r);

/*
 * The engine ended (or spoke) before STOP: one message read.  Returns 2
 * for a NOTE (a broker's line for the user, printed; it goes on), 1 if
 * it was ERROR (the engine said why on stderr; a broker's text is
 * printed here), else 0 (it closed, or broke the protocol).
 */
int run_engine_said_why(struct run *r);

/*
 * Tells the engine the command ended, takes the denied summary into R
 * and waits for the engine to exit.  Returns 0, or -1 (said).
 */
int run_engine_stop(struct run *r);

#endif /* PH_RUN_H */
