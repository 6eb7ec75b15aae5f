/*
 * proc.h: runs a helper program with its standard output in a pipe, one
 * deadline for all of it, and nothing left running afterwards.  The
 * helper may also be a function run in the forked child instead of a
 * program (pinhole doctor's probes): the same pipe, deadline and cleanup.
 *
 * The helper runs in a process group of its own, below a small supervisor
 * process (a child subreaper, PR_SET_CHILD_SUBREAPER) that proc_run forks
 * first: whatever the helper starts, even a grandchild that setsid()s
 * away, stays below the supervisor, which at the end kills the helper's
 * group, then every process left below it, and reaps them all.  The
 * supervisor also cleans up when its parent dies (SIGTERM to pinhole), so
 * a helper never outlives the program that started it.  The limit: a
 * descendant that is set-user-ID (sudo) cannot be killed; it is counted.
 *
 * One deadline covers reading standard output to its end AND the helper's
 * exit.  When one of the two happens, the other must follow within a
 * short grace (PROC_GRACE_MS, at most the deadline): a helper that closed
 * its output but keeps running, or that exited while a descendant still
 * holds its output, is killed and the run fails.
 */
#ifndef PH_PROC_H
#define PH_PROC_H

#include <stddef.h>
#include <stdint.h>

/* Time between end of output and exit (either order), in milliseconds. */
#define PROC_GRACE_MS 1000
/* Time the supervisor gives the processes it killed to die, in ms. */
#define PROC_REAP_MS 2000

/* How a run ended. */
enum proc_end {
	PROC_DONE, /* output ended and the helper exited */
	PROC_TIMEOUT, /* the deadline passed first */
	PROC_LINGERED, /* output ended, no exit within the grace */
	PROC_HELD_OPEN, /* exited, output still open after the grace */
	PROC_TOO_LONG, /* output filled the buffer */
	PROC_CANCELLED, /* cancel_fd became readable */
	PROC_EXEC_FAILED, /* err: errno of exec */
	PROC_SYSTEM, /* err: errno of pipe, fork, poll or read */
};

struct proc_spec {
	char *const *argv; /* argv[0] is looked up in pinhole's PATH */
	char *const *envp; /* the helper's whole environment */
	void (*fn)(void *); /* non-NULL: the helper calls FN(ARG), then */
	void *arg; /* _exit(0), instead of exec'ing argv (envp unused) */
	int timeout_ms; /* > 0 */
	int grace_ms; /* 0: PROC_GRACE_MS */
	int cancel_fd; /* -1, or a descriptor whose readability cancels */
	uint8_t *out; /* standard output goes here... */
	size_t cap; /* ...at most this many bytes (filling it is TOO_LONG) */
};

struct proc_result {
	enum proc_end end;
	int err; /* errno, for PROC_EXEC_FAILED and PROC_SYSTEM */
	size_t len; /* bytes of output in out */
	int exited; /* 1 if the helper's exit was seen */
	int code; /* its exit status, if it exited normally */
	int signo; /* the signal that ended it, or 0 */
	unsigned killed; /* processes left behind that were killed */
	unsigned survivors; /* processes that could not be killed */
};

/*
 * Runs SPEC's helper: standard input /dev/null, standard output into
 * SPEC->out, standard error inherited, no other descriptor, default signal
 * dispositions and an empty signal mask.  A SPEC->fn helper is a forked
 * copy of the caller: FN may use what the caller had in memory (but only
 * async-signal-safe calls if other threads run), and its own children are
 * the supervisor's to kill like any others.  Returns 0 when it ended
 * PROC_DONE with exit status 0, else -1; *RES says how it ended either
 * way.  Safe to call from a thread while others run: between fork and
 * exec only async-signal-safe calls are made.
 */
int proc_run(const struct proc_spec *spec, struct proc_result *res);

#endif /* PH_PROC_H */
