/*
 * sandbox.h: starting a command in the sandbox and watching it, from
 * outside.  The sandbox is a child in new user, mount, PID, network, IPC
 * and UTS namespaces: its PID 1 (init.c) brings lo up, listens on
 * 127.0.0.1:3128 and [::1]:3128 (the proxy), port 1080 of each (SOCKS),
 * port 53 (the DNS stub) and, under capture, on the captured ports of
 * every address, and sends the listeners out (net.c),
 * builds the mount view (mount.c), and starts the command with no
 * capabilities, no_new_privs, seccomp (seccomp.c) and Landlock
 * (landlock.c).
 */
#ifndef PH_SANDBOX_H
#define PH_SANDBOX_H

#include <sys/types.h>

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct mnt_plan;
struct sbx;
struct sockguard_allow;

/*
 * PID 1 overwrites pinhole's own argv strings (hostinfo_title): it copies
 * ARGV and CHDIR first; any other field that may point into argv must be
 * copied there too (sandbox_identity in sandbox.c).
 */
struct sbx_config {
	const struct mnt_plan *plan;
	char *const *argv; /* the command */
	char **envp; /* its whole environment */
	const char *chdir; /* start directory inside; NULL: the plan's */
	sigset_t mask; /* the command's signal mask */
	int verbose; /* say what Landlock and seccomp applied */
	unsigned long limit_pids; /* 0: none (limits.h) */
	int pids_cgroup; /* hold LIMIT_PIDS in a cgroup too, where one can be */
	unsigned long long limit_memory; /* bytes, per process; 0: none */
	/* Host Unix sockets the command may reach (--unix-socket). */
	const struct sockguard_allow *unix_allow;
	size_t nunix_allow;
	/*
	 * Capture (issue 12; 0: pinhole run --no-capture): routes that make
	 * every address local, a listener on the wildcard for each of the
	 * NCAPTURE_PORTS ports (at most SBX_CAPTURE_MAX), the DNS stub on the
	 * wildcard and the refusals' raw sockets (net.h).
	 */
	int capture;
	const uint16_t *capture_ports;
	size_t ncapture_ports;
};

/* Capture listeners at most: one descriptor each, in every process. */
#define SBX_CAPTURE_MAX 512
/* The loopback listeners (proxy, SOCKS, DNS), the 4 raw sockets, room. */
#define SBX_LISTENERS_MAX (SBX_CAPTURE_MAX + 16)

/*
 * Starts the sandbox and waits until it listens.  Returns the sandbox, or
 * NULL with a one-line reason in ERR (nothing left running).
 */
struct sbx *sbx_start(const struct sbx_config *, char *err, size_t errlen);

/* The listening sockets made inside (owned by the sandbox handle). */
int sbx_listener(const struct sbx *, int i);
int sbx_nlisteners(const struct sbx *);

/* Takes the listeners over: the handle no longer closes them. */
void sbx_release_listeners(struct sbx *);

/*
 * Waits until the command has been executed.  Returns 0, or -1 with the
 * reason in ERR when setting it up failed (pinhole's failure: 125).  A
 * command that cannot be found or executed is not a failure here: its
 * status (127, 126) comes from sbx_reap.
 */
int sbx_wait_exec(struct sbx *, char *err, size_t errlen);

/* PID 1 of the sandbox, as the caller's namespace sees it. */
pid_t sbx_pid(const struct sbx *);

/*
 * Reaps PID 1 if it ended: returns 1 and sets *STATUS (exit code, or
 * 128+N after signal N), 0 while it runs, -1 on error.
 */
int sbx_reap(struct sbx *, int *status);

/*
 * The proxy's side sheds what it does not need once it has opened what it
 * needs (policy, secrets, log, listeners): it drops every capability,
 * sets no_new_privs, and with LANDLOCK its file access
 * is limited to reading /etc (resolv.conf, hosts), the trust store, the
 * libraries, and the NEXTRA paths of EXTRA.  Returns 0 with what was done
 * in REPORT, or -1 with the reason (what succeeded before stays).
 */
int sbx_shed(const char *const *extra, size_t nextra, int landlock,
    char *report, size_t reportlen);

/* Kills what is left (SIGKILL ends the namespace), reaps, frees. */
void sbx_free(struct sbx *);

#ifdef SBX_INTERNAL
/*
 * The launcher's side of the listener handoff alone, on SOCK (taken
 * over): a handle with the listeners that came, or NULL with the reason
 * in ERR.  For tests of what a PID 1 may send.
 */
struct sbx *sbx_test_listeners(int sock, char *err, size_t errlen);
#endif

#endif /* PH_SANDBOX_H */
