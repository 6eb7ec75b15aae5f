/*
 * limits.h: how many processes and how much memory the sandbox may take
 * (pinhole run --limit-pids, --limit-memory).
 *
 * Processes: the sandbox's own PID namespace gets a pid_max (Linux 6.14
 * and later have one per namespace), which binds root too, and
 * RLIMIT_NPROC, which the kernel counts per user and user namespace
 * (Linux 5.14 and later), so inside a sandbox it counts the sandbox's
 * processes, but never binds a root run.  Memory: RLIMIT_AS, per process.
 */
#ifndef PH_LIMITS_H
#define PH_LIMITS_H

#include <stddef.h>

/* What a fork bomb meets by default: far below any host's pid_max. */
#define LIMITS_PIDS_DEFAULT 4096UL
/* Pids of a PID namespace below this are not reused after a wrap. */
#define LIMITS_PID_RESERVED 300UL

struct limits {
	unsigned long pids; /* 0: none */
	unsigned long long memory; /* bytes; 0: none */
};

/*
 * Reads a size: digits with an optional K, M, G or T (powers of 1024;
 * a trailing "B" or "iB" allowed).  Returns 0, or -1 for anything else,
 * zero, or an overflow.
 */
int limits_parse_size(const char *s, unsigned long long *out);

/* Reads a count of processes, 1 to 4194304.  Returns 0 or -1. */
int limits_parse_pids(const char *s, unsigned long *out);

/*
 * Whether the PID namespace has a pid_max of its own (Linux 6.14): on an
 * older kernel the file is the host's, and must not be written.
 */
int limits_pidns_max(void);

/*
 * In the sandbox's PID 1, in its new user and PID namespaces, before the
 * command exists, with the host's /proc still mounted: sets the pids
 * limit of L and says in REPORT what binds, both limits (and what does
 * not, e.g. no pids limit for root on an old kernel).  Returns 0, or -1
 * with ERR.
 */
int limits_apply_pids(const struct limits *l, char *report, size_t reportlen,
    char *err, size_t errlen);

/*
 * In the command, just before it is executed (PID 1 keeps its memory):
 * sets the memory limit of L.  Returns 0, or -1 with ERR.
 */
int limits_apply_memory(const struct limits *l, char *err, size_t errlen);

#endif /* PH_LIMITS_H */
