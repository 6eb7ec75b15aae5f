/*
 * mount.h: the sandbox's mount view (DESIGN.md, "run" defaults).
 *
 *   /            the host's tree, read-only (flags the kernel locks kept)
 *   /proc        a new proc for the new PID namespace
 *   /dev         tmpfs with null, zero, full, random, urandom, tty,
 *                a private devpts (pts, ptmx) and shm
 *   /tmp         a fresh tmpfs
 *   CWD          the start directory, read-write (even under /tmp)
 *   then the user's --bind, --ro-bind, --tmpfs, in order
 *   then hidden paths (they appear empty), then the git guards of
 *   writable binds: .git pinned, its hooks, config, commondir and
 *   config.worktree read-only again (a symbolic link there: refused).
 *
 * A plan is made outside, before any namespace, from paths as the caller
 * sees them; mnt_apply() carries it out inside.
 */
#ifndef PH_MOUNT_H
#define PH_MOUNT_H

#include <stddef.h>

enum mnt_kind {
	MNT_BIND, /* SRC at DST, read-write */
	MNT_RO_BIND, /* SRC at DST, read-only */
	MNT_TMPFS, /* a fresh tmpfs at DST */
	MNT_HIDE, /* DST appears empty: a directory or a file */
	MNT_FILE, /* a read-only file with given contents at DST */
};

struct mnt_plan;

/*
 * A plan whose writable start directory is CWD (made absolute and
 * resolved).  Returns NULL with the reason in ERR (e.g. CWD is "/").
 */
struct mnt_plan *mnt_plan_new(const char *cwd, char *err, size_t errlen);
void mnt_plan_free(struct mnt_plan *);

/*
 * Adds a step.  SRC (binds only) must exist and is resolved; DST defaults
 * to SRC and must be absolute.  For MNT_HIDE a missing path is skipped
 * when it is applied.  Returns 0, or -1 with the reason in ERR.
 */
int mnt_plan_add(struct mnt_plan *, enum mnt_kind, const char *src,
    const char *dst, char *err, size_t errlen);

/*
 * A read-only file holding the LEN bytes of DATA (copied) at DST, over
 * what is there (e.g. the system's CA bundle).  Applied before the hidden
 * paths.  Returns 0, or -1 with ERR for a relative DST.
 */
int mnt_plan_add_file(struct mnt_plan *, const char *dst, const void *data,
    size_t len, char *err, size_t errlen);

/* Lets the sandbox write .git/hooks and .git/config (--allow-git-config). */
void mnt_plan_allow_git_config(struct mnt_plan *);

/*
 * Hides what DESIGN.md lists under HOME (~/.ssh, ~/.aws, ...).
 */
void mnt_plan_hide_home(struct mnt_plan *, const char *home);

/*
 * Returns 1 when host path PATH (resolved) lies beneath a writable bind
 * of the plan (the start directory included), else 0.
 */
int mnt_plan_is_writable(const struct mnt_plan *, const char *path);

/*
 * Makes sure each writable bind that holds a Git repository has a
 * .git/hooks directory to cover (creating it, as git init would).
 * Outside, before the sandbox starts.  Returns 0 or -1 with ERR.
 */
int mnt_plan_prepare_git(struct mnt_plan *, char *err, size_t errlen);

/*
 * Calls FN(ARG, INSIDE, HOST) for each writable root whose git plants the
 * post-run sweep (gitguard.h) must look for: the start directory, then
 * each writable bind, as the sandbox sees it and as the host does; none
 * with --allow-git-config.  Stops at the first FN that does not return 0
 * and returns -1, else 0.
 */
int mnt_plan_git_roots(const struct mnt_plan *,
    int (*fn)(void *arg, const char *inside, const char *host), void *arg);

/*
 * The directories the sandbox may write to, as it sees them: the start
 * directory, /tmp, /dev/shm, writable binds and tmpfs.  Calls FN for
 * each.
 */
void mnt_plan_writable_dirs(
    const struct mnt_plan *, void (*fn)(void *, const char *), void *arg);

/* The start directory inside (the resolved CWD). */
const char *mnt_plan_cwd(const struct mnt_plan *);

/*
 * Builds the view in the calling process, which must be alone in a new
 * mount namespace with CAP_SYS_ADMIN over it, and makes it the root.
 * Returns 0, or -1 with the step and the reason in ERR.
 */
int mnt_apply(const struct mnt_plan *, char *err, size_t errlen);

#endif /* PH_MOUNT_H */
