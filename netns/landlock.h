/*
 * landlock.h: Landlock rulesets for the sandboxed command and for the
 * proxy (DESIGN.md, "Landlock (ABI-probed)").
 *
 * Best effort, as the kernel's samples/landlock/sandboxer.c: the running
 * kernel's ABI is probed and the rights and scopes it lacks are left out.
 * Without Landlock, ll_apply() succeeds and says so in its report, since
 * Landlock is a second wall behind the mount namespace, not the first.
 *
 * Use: ll_new(), one ll_allow() per path, ll_apply(), ll_free().  Paths
 * are resolved by ll_apply(), in the mount view of that moment.
 */
#ifndef PH_LANDLOCK_H
#define PH_LANDLOCK_H

#include <stddef.h>

enum ll_mode {
	/*
	 * The sandboxed command: writing (create, remove, rename, link,
	 * truncate, device ioctls) only beneath allowed paths; reading and
	 * executing stay unrestricted.  From ABI 6 on, it can neither
	 * signal nor connect to abstract Unix sockets of processes outside
	 * its domain, such as the parent of the process that called
	 * ll_apply().
	 */
	LL_SANDBOX,
	/*
	 * The proxy after start-up: every file access, reading and
	 * executing included, only beneath allowed paths.  No scopes: it
	 * still signals its child.
	 */
	LL_PROXY,
	/*
	 * The sandbox's PID 1, before it starts the command: scopes only
	 * (from ABI 6), no file access restricted (its layer grants REFER
	 * beneath "/", which every layer denies unless granted, so that
	 * renames across directories work in the command's).  The command's domain is
	 * nested in it, so what PID 1 does on the command's behalf (the
	 * Unix socket supervisor's connect) reaches abstract sockets made
	 * inside, and none made outside, as the command itself would.
	 */
	LL_SCOPE,
};

/* Rights for ll_allow(), beneath a directory or on a file. */
#define LL_READ 0x1U /* read files, list directories */
#define LL_WRITE 0x2U /* write, truncate; in a directory: create, remove */
#define LL_EXEC 0x4U /* execute files */
#define LL_DEV 0x8U /* write to and ioctl device nodes */

struct ll_rules;

/*
 * Returns the Landlock ABI version of the running kernel, or 0 when it
 * has no Landlock or has it disabled.
 */
int ll_abi(void);

/*
 * Returns an empty ruleset for MODE, for the ABI probed now, or NULL
 * (errno ENOMEM).
 */
struct ll_rules *ll_new(enum ll_mode mode);

/*
 * Allows WHAT, a mask of LL_* bits, beneath PATH.  Rights that MODE or
 * the ABI do not restrict are dropped, and so are those that make no
 * sense on PATH's type: LL_WRITE on a file is writing and truncating it.
 * Returns 0, or -1 with errno EINVAL (WHAT empty or unknown bits) or
 * ENOMEM.
 */
int ll_allow(struct ll_rules *, const char *path, unsigned what);

/*
 * Restricts the calling thread and the processes it starts from now on;
 * other threads are not restricted, so call it before making any.  Sets
 * PR_SET_NO_NEW_PRIVS.  A PATH that does not exist is skipped and counted
 * in the report.  Returns 0 with one line for --verbose in REPORT (ABI,
 * paths, skipped paths, scopes), also when Landlock is not available:
 * then nothing is restricted and the line says why.  Returns -1 with the
 * reason in REPORT when a path cannot be opened or a Landlock call fails;
 * nothing is restricted then.
 */
int ll_apply(struct ll_rules *, char *report, size_t reportlen);

/* Frees the ruleset.  NULL does nothing. */
void ll_free(struct ll_rules *);

#ifdef LL_INTERNAL
/* ll_new() for the given ABI rather than the probed one (0: none). */
struct ll_rules *ll_new_abi(enum ll_mode mode, int abi);
#endif

#endif /* PH_LANDLOCK_H */
