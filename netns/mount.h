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
 *   then hidden paths (they appear empty), then .git/hooks and
 *   .git/config inside writable binds, read-only again.
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
 * Could the sandbox change what host path PATH (relative: to the current
 * directory) names?  PATH is walked as the kernel resolves it, symlinks
 * included: when an entry on the way -- a component as given, a symlink,
 * an entry its target names, the file itself -- lies in a directory the
 * sandbox can write (mnt_plan_is_writable: the start directory and the
 * writable binds; its /tmp and /dev/shm are its own tmpfs), it could be
 * replaced, renamed or retargeted.  Returns 1 and that entry in WHERE,
 * 0 when none does (a missing entry ends the walk), or -1 when the walk
 * fails (a symlink loop, a path too long), the reason in WHERE.
 */
int mnt_plan_path_reachable(
    const struct mnt_plan *, const char *path, char *where, size_t wlen);

/*
 * Makes sure each writable bind that holds a Git repository has a
 * .git/hooks directory to cover (creating it, as git init would), and
 * notes which of .git/commondir and .git/config.worktree exist.  Outside,
 * before the sandbox starts.  Returns 0 or -1 with ERR.
 */
int mnt_plan_prepare_git(struct mnt_plan *, char *err, size_t errlen);

/*
 * After the run, in the sandbox's PID 1 once nothing else runs there (the
 * proxy side may no longer write): a .git/commondir or
 * .git/config.worktree that appeared meanwhile (it would point git at
 * hooks and config the sandbox wrote) is renamed to
 * NAME.pinhole-quarantine, and WARN says so.  Paths as the sandbox sees
 * them.
 */
void mnt_plan_recheck_git(const struct mnt_plan *,
    void (*warn)(void *arg, const char *msg), void *arg);

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
