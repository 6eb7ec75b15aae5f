/*
 * doctor.h: pinhole doctor, which kernel features work here and what to do
 * where one does not.
 *
 * Each probe tries its layer for real, in a forked child (so no namespace,
 * filter or mount leaks into the caller), waits for it a bounded time and
 * carries back one struct doctor_result.  The probes run in the order a
 * failure would show when the sandbox starts: user namespace, the other
 * namespaces, the network namespace with lo, capture (its local routes),
 * the mount view, Landlock, seccomp; after the user namespace, whether
 * AppArmor restricts it (Ubuntu 23.10+) and pinhole's profile is loaded.  The policy's rows (cli/doctor_policy.c) use the same result,
 * child runner and helpers; nothing here knows of policies or prints.
 */
#ifndef PH_DOCTOR_H
#define PH_DOCTOR_H

#include <stddef.h>

/* The rows doctor_run() fills: one per kernel layer. */
#define DOCTOR_NKERNEL 8
/* How long a probe's child may take before it is killed, in ms. */
#define DOCTOR_TIMEOUT_MS 5000

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

/* A probe: fills R (its feature and required fields are set). */
typedef void doctor_child_fn(struct doctor_result *r, void *arg);

/*
 * Runs every kernel probe, in order, and fills up to MAX entries of RES.
 * A probe that needs the user namespace, found missing before it, is not
 * tried and says so.  Returns the number of rows filled.
 */
size_t doctor_run(struct doctor_result *res, size_t max);

/*
 * Runs the kernel probe called NAME alone, whatever the others would
 * say.  Returns 0 with *RES filled, or -1 when there is no such probe.
 */
int doctor_probe(const char *name, struct doctor_result *res);

/* The name of the I-th kernel probe in running order; NULL past the last. */
const char *doctor_feature(size_t i);

/* "yes", "partial" or "no". */
const char *doctor_status_name(enum doctor_status);

/* Returns 1 when a required row does not work, else 0. */
int doctor_exit_status(const struct doctor_result *, size_t n);

/*
 * Runs FN(R, ARG) in a child (so nothing it enters or installs reaches
 * the caller) and copies the child's status, detail and advice back into
 * R, waiting at most MS; a child that does not answer is killed, reaped
 * and said to be so in R.  R keeps its feature and required fields.
 */
void doctor_in_child(
    doctor_child_fn *fn, void *arg, struct doctor_result *r, int ms);

/* Sets R's status, detail (FMT) and advice; long text is cut. */
void
doctor_verdict(struct doctor_result *r, enum doctor_status, const char *advice,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Sets R's advice; long paths in it are cut. */
void doctor_advise(struct doctor_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends to R's detail, cutting what does not fit. */
void doctor_append(struct doctor_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Replaces the control bytes in R's detail and advice by '?'. */
void doctor_printable(struct doctor_result *r);

/* A guess at the container we run in ("docker (/.dockerenv)"), or NULL. */
const char *doctor_container(void);

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

#ifdef DOCTOR_INTERNAL
/*
 * The apparmor row, from the restriction's sysctl file RESTRICT_PATH and
 * the kernel's list of loaded profiles PROFILES (files a test can fake).
 */
void doctor_apparmor_check(
    struct doctor_result *r, const char *restrict_path, const char *profiles);
#endif

#endif /* PH_DOCTOR_H */
