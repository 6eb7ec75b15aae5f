/*
 * doctor.h: pinhole doctor, which kernel features work here and what to do
 * where one does not.
 *
 * Each probe tries its layer for real, in a forked child (so no namespace,
 * filter or mount leaks into the caller), waits for it a bounded time and
 * carries back one struct doctor_result.  The probes run in the order a
 * failure would show when the sandbox starts: user namespace, the other
 * namespaces, the network namespace with lo, the mount view, Landlock,
 * seccomp, then, when asked, the policy, its secrets and its log.
 */
#ifndef PH_DOCTOR_H
#define PH_DOCTOR_H

#include <stddef.h>
#include <stdio.h>

#include "policy/policy.h"

/* Most rows doctor_run() fills: six kernel layers plus three of policy. */
#define DOCTOR_MAX 9

enum doctor_status {
	DOCTOR_YES, /* works */
	DOCTOR_PARTIAL, /* works in part: some of it failed */
	DOCTOR_NO, /* does not work, or was not tried */
};

struct doctor_result {
	const char *feature; /* "userns", "network", ... */
	int required; /* pinhole run cannot start without it */
	enum doctor_status status;
	char detail[256]; /* what works, or why not */
	char advice[256]; /* what to do; "" when nothing */
};

struct doctor_opts {
	const char *const *policy; /* -p files, NULL: no policy rows */
	size_t npolicy;
	const char *log; /* --log; NULL: the policy's log line */
	policy_diag_fn *diag; /* receives the policy's diagnostics */
	void *diag_arg;
};

/*
 * Runs every probe that OPTS calls for, in order, and fills up to MAX
 * entries of RES.  A probe that needs a layer found missing before it
 * is not tried and says so.  Returns the number of rows filled.
 */
size_t
doctor_run(const struct doctor_opts *, struct doctor_result *res, size_t max);

/*
 * Runs the kernel probe called NAME alone (no policy ones), whatever
 * the others would say.  Returns 0 with *RES filled, or -1 when there is
 * no such probe.
 */
int doctor_probe(const char *name, struct doctor_result *res);

/* The name of the I-th probe in running order, or NULL past the last. */
const char *doctor_feature(size_t i);

/* "yes", "partial" or "no". */
const char *doctor_status_name(enum doctor_status);

/* Returns 1 when a required row does not work, else 0. */
int doctor_exit_status(const struct doctor_result *, size_t n);

/* Prints the kernel release, the uid and any container found, one a line. */
void doctor_print_context(FILE *);

/*
 * Prints RES as an aligned table (feature, works, detail, what to do)
 * followed by a one-line verdict.  Returns 0, or -1 on a write error.
 */
int doctor_print_table(FILE *, const struct doctor_result *, size_t n);

/*
 * Prints RES as a JSON array of {feature, status, detail, advice}
 * objects.  Returns 0, or -1 on a write or memory error.
 */
int doctor_print_json(FILE *, const struct doctor_result *, size_t n);

/* What is known when unshare(CLONE_NEWUSER) or the uid map fails. */
struct doctor_userns_facts {
	int max_user_namespaces; /* /proc/sys/user/..., -1: no such file */
	int unprivileged_userns_clone; /* /proc/sys/kernel/..., -1: none */
	int apparmor_restrict; /* apparmor_restrict_unprivileged_userns */
	int seccomp_mode; /* PR_GET_SECCOMP: 2 when under a filter */
	int container; /* a container was detected */
	int root; /* euid 0 */
	int err; /* errno of the failure */
};

/* Writes what to do about a user namespace failure into BUF. */
void
doctor_userns_advice(const struct doctor_userns_facts *, char *buf, size_t len);

#endif /* PH_DOCTOR_H */
