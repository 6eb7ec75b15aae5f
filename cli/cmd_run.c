/*
 * cmd_run.c: pinhole run, a command in the sandbox with the proxy as its
 * only way out.
 *
 * Two processes outside.  The launcher (this one) forks the engine first
 * (cli/run_engine.c), which loads the policy and the secrets and sends
 * back the sandbox's view: the paths to hide, the CA certificate to
 * trust, the stand-ins, the log.  The launcher builds the mount plan and
 * the environment from it, starts the sandbox (netns/), hands the
 * listeners the sandbox made to the engine, which runs the proxy
 * (proxy/) on them, and waits for the command.  The launcher never holds
 * a secret.  Under --broker (cli/run_broker.c) the engine is a broker's,
 * reached over its Unix socket: the same conversation, no process of
 * ours, its lines for the user coming as NOTE messages.  Exit status: the
 * command's (128+N for signal N), 125 when pinhole failed before the
 * command ran (or lost its proxy).
 */
#include <sys/signalfd.h>
#include <sys/wait.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "audit/logview.h"
#include "cli/cli.h"
#include "cli/run.h"
#include "cli/run_trust.h"
#include "cli/run_java.h"
#include "common/log.h"
#include "netns/env.h"
#include "netns/limits.h"
#include "netns/mount.h"
#include "netns/net.h"
#include "netns/sandbox.h"
#include "netns/stdio.h"

/* --- running -------------------------------------------------------------- */

/*
 * What a terminal needs before pinhole's last line, whatever the command
 * left it in: CAN aborts an escape or control sequence in progress, ST
 * ends a string one (OSC, DCS, APC, PM, SOS: an unterminated OSC would
 * swallow the line), SGR 0 undoes attributes that could hide it
 * (concealed, black on black), and CR LF starts a fresh line.
 */
#define TERM_RESET "\030\033\\\033[0m\r\n"

/*
 * The last stderr lines: "pinhole: N client(s) refused the run CA ...",
 * then "pinhole: N denied: HOST:PORT (xK), ...; see LOG", each when there
 * is something to say.  Written with one write(2).  On a terminal it comes after TERM_RESET; a
 * file or a pipe gets the bytes the command wrote as they were and the
 * line after them, starting with "pinhole: " on a line of its own unless
 * the command's output did not end in a newline.
 */
static void
print_denied(const struct run *r)
{
	char *line = NULL;
	size_t len = 0, i;
	FILE *f;

	if ((r->denied_total == 0 && r->distrust_total == 0) ||
	    (f = open_memstream(&line, &len)) == NULL)
		return;
	if (isatty(STDERR_FILENO))
		fputs(TERM_RESET, f);
	/* The names came from the sandbox: escaped as pinhole log does. */
	if (r->distrust_total > 0) {
		fprintf(f, "pinhole: %zu client%s refused the run CA (%s",
		    r->distrust_total, r->distrust_total == 1 ? "" : "s",
		    r->distrust_total == 1 ? "" : "first ");
		logview_esc_put(f, r->distrust_first);
		fprintf(f, "): does it trust PINHOLE_CA_FILE? see %s\n",
		    r->logpath);
	}
	if (r->denied_total > 0) {
		fprintf(f, "pinhole: %zu denied: ", r->denied_total);
		for (i = 0; i < r->ndenied; i++) {
			fputs(i ? ", " : "", f);
			logview_esc_put(f, r->denied[i].what);
			fprintf(f, " (x%u)", r->denied[i].n);
		}
		fprintf(f, "; see %s\n", r->logpath);
	}
	if (fclose(f) == 0)
		(void)!write(STDERR_FILENO, line, len);
	free(line);
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

/* The engine's socket while the command runs, and its event. */
struct watch {
	struct run *r;
	struct event *ev;
};

/*
 * The engine spoke while the command runs: a broker's NOTE is printed
 * and the watch goes on; anything else means it ended before the
 * command, and the command ends too.  A broker gone took the sandbox's
 * listeners with it: their connections are refused (fail closed).
 */
static void
on_engine(evutil_socket_t fd, short what, void *arg)
{
	struct watch *w = arg;
	struct run *r = w->r;
	int said;

	(void)fd;
	(void)what;
	if ((said = run_engine_said_why(r)) == 2) {
		if (event_add(w->ev, NULL) == 0)
			return;
		said = 0;
	}
	/* One line: the engine's own, when it said why it ended. */
	if (r->broker != NULL)
		log_warnx("run: the broker went away: the sandbox's "
		          "connections fail closed; the command was stopped");
	else if (!said)
		log_warnx("run: the proxy ended before the command");
	r->engine_lost = 1;
	(void)kill(sbx_pid(r->sbx), SIGKILL);
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
	c.limit_pids = r->limit_pids;
	/*
	 * The default pids limit is held by the PID namespace's pid_max
	 * where the kernel has one; a cgroup (its move costs milliseconds)
	 * only where it does not, or when the user asks for a limit.
	 */
	c.pids_cgroup = r->limit_pids_given || !limits_pidns_max();
	c.limit_memory = r->limit_memory;
	c.unix_allow = r->unix_allow;
	c.nunix_allow = r->nunix_allow;
	/* The ports come from the engine (view CAPTURE), always sent. */
	c.capture = !r->no_capture && r->ncapture > 0;
	c.capture_ports = r->capture_ports;
	c.ncapture_ports = r->ncapture;
	if (mnt_plan_prepare_git(r->plan, err, sizeof(err)) != 0 ||
	    (r->sbx = sbx_start(&c, err, sizeof(err))) == NULL) {
		log_warnx("run: %s; see pinhole doctor", err);
		return -1;
	}
	if (run_engine_listeners(r) != 0)
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
	struct event *ev, *eng;
	struct watch w;
	int rc = 0;

	ev = event_new(r->base, r->sfd, EV_READ | EV_PERSIST, on_signal, r);
	eng = event_new(r->base, r->esock, EV_READ, on_engine, &w);
	w.r = r;
	w.ev = eng;
	if (ev == NULL || event_add(ev, NULL) != 0 || eng == NULL ||
	    event_add(eng, NULL) != 0) {
		log_warnx("run: cannot watch signals");
		rc = -1;
	} else if (sbx_reap(r->sbx, &r->status) == 0)
		/* The command may have ended already: checked once first. */
		event_base_dispatch(r->base);
	if (ev != NULL)
		event_free(ev);
	if (eng != NULL)
		event_free(eng);
	return rc;
}

static int
prepare(struct run *r, int argc, char **argv)
{
	char cwd[PATH_MAX], err[PATH_MAX + 64];
	int rc;

	/* First: nothing pinhole opens may land on a closed 0, 1 or 2. */
	if (stdio_check(err, sizeof(err)) != 0) {
		log_warnx("run: %s", err);
		return RUN_FAILED;
	}
	if (getcwd(cwd, sizeof(cwd)) == NULL) {
		log_warn("run: current directory");
		return RUN_FAILED;
	}
	if ((r->plan = mnt_plan_new(cwd, err, sizeof(err))) == NULL) {
		log_warnx("run: %s", err);
		return RUN_FAILED;
	}
	r->env = env_new(environ);
	r->limit_pids = LIMITS_PIDS_DEFAULT;
	/* A usage error is pinhole's failure too: 125, as for env(1). */
	if ((rc = run_parse_opts(r, argc, argv)) != 0)
		return rc > 0 ? -1 : RUN_FAILED;
	/* The engine next: the secrets are loaded there, never here. */
	if (run_check_home(r) != 0 || run_plan_home(r) != 0 ||
	    (r->broker != NULL ? run_broker_connect(r) : run_engine_start(r)) !=
	        0 ||
	    run_setup_launcher(r) != 0)
		return RUN_FAILED;
	env_set_proxy(r->env, NET_PROXY_PORT);
	run_setup_capture_env(r);
	run_java_env(r->env, NET_PROXY_PORT, r->java_store);
	return 0;
}

static void
run_free(struct run *r)
{
	int w;

	if (r->esock >= 0)
		close(r->esock);
	if (r->engine > 0)
		while (waitpid(r->engine, &w, 0) < 0 && errno == EINTR)
			;
	sbx_free(r->sbx);
	if (r->base != NULL)
		event_base_free(r->base);
	mnt_plan_free(r->plan);
	env_free(r->env);
	free(r->allow);
	free(r->logpath);
	free(r->ca_pem);
	run_trust_free(r->trust);
	if (r->sfd >= 0)
		close(r->sfd);
	pthread_mutex_destroy(&r->lock);
}

int
cmd_run(int argc, char **argv)
{
	struct run r;
	sigset_t mask;
	int rc;

	memset(&r, 0, sizeof(r));
	/* The engine's (run.h); its copy is made unlocked at the fork. */
	pthread_mutex_init(&r.lock, NULL);
	r.sfd = -1;
	r.esock = -1;
	r.status = RUN_FAILED;
	if ((rc = prepare(&r, argc, argv)) != 0) {
		run_free(&r);
		return rc < 0 ? 0 : rc;
	}
	if (r.verbose)
		log_init(NULL, log_verbose() + 1);
	signal(SIGPIPE, SIG_IGN);
	if ((r.base = event_base_new()) == NULL)
		fatalx("run: no event loop");
	if (watch_signals(&r, &mask) == 0 && start_sandbox(&r, &mask) == 0)
		(void)serve(&r);
	else
		r.status = RUN_FAILED;
	if (r.engine_lost)
		r.status = RUN_FAILED;
	/* The engine closes the sessions, logs them and says what it denied. */
	(void)run_engine_stop(&r);
	print_denied(&r);
	rc = r.status;
	run_free(&r);
	return rc;
}
