/*
 * broker.h: pinhole proxy --broker PATH, the daemon that holds the
 * secrets and the CA keys for every sandbox on a host (cli/broker.c).
 *
 * The parent accepts on PATH (or the socket systemd passed), learns each
 * client's uid, gid and pid (SO_PEERCRED), applies the limits (sandboxes
 * per user, in all) and forks one engine per client; it never reads a
 * client's bytes.  The engine reads the client's REQUEST, checks the
 * configuration's grants (policy/grant.h), and is then a run's engine
 * for that sandbox (run_engine_serve): its own policy load, secrets, CA,
 * stand-ins and run id; the broker's audit log (records with the
 * client's uid, pid and command); its counts relayed to the parent's
 * metrics.  SIGHUP reloads the configuration for new clients (a broken
 * one is refused, the old kept); running sandboxes keep theirs.
 */
#ifndef PH_BROKER_H
#define PH_BROKER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define BROKER_PER_USER_DEFAULT 16 /* sandboxes one uid may have at once */
#define BROKER_SANDBOXES_DEFAULT 256 /* sandboxes in all */
#define BROKER_REQUEST_MS 10000 /* a client's REQUEST must come by then */

struct broker_opts {
	const char *config; /* -p FILE: the broker blocks (grant.h) */
	const char *path; /* --broker PATH */
	const char *log; /* --log FILE: else the config's log line */
	const char *dns; /* --dns SERVERS, or NULL */
	const char *metrics; /* --metrics ADDR, or NULL */
	uint64_t log_limit; /* per sandbox, 0: the run's default */
	unsigned per_user; /* --max-per-user */
	unsigned sandboxes; /* --max-sandboxes */
	int verbose;
};

struct policy;

/* Runs the broker until SIGTERM or SIGINT.  Returns the exit status. */
int broker_main(const struct broker_opts *o);

/* One client, as the parent accepted it. */
struct broker_client {
	int conn; /* the client's connection */
	uid_t uid; /* SO_PEERCRED */
	gid_t gid;
	pid_t pid;
	int relay; /* the metrics relay's end (metrics.h), or -1 */
};

/*
 * cli/broker_engine.c, in the process the parent forked for client C:
 * reads its REQUEST (within BROKER_REQUEST_MS), checks CONFIG's grants,
 * refuses (ERROR, a "client" record) or serves the sandbox
 * (run_engine_serve) until it ends.  The central log is O->log, else
 * CONFIG's log line.  Never returns: exits 0 when the sandbox ended as
 * it should, 1 otherwise.
 */
void
broker_engine_main(const struct broker_opts *o, const struct policy *config,
    const struct broker_client *c) __attribute__((noreturn));

#ifdef BROKER_ENGINE_INTERNAL
/* Tests: the REQUEST's deadline in ms (0: BROKER_REQUEST_MS again). */
void broker_engine_set_deadline(int ms);
#endif

#endif /* PH_BROKER_H */
