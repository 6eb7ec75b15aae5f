/*
 * mount.h: the sandbox's mount view (DESIGN.md, "run" defaults).
 *
 *   /            the host's tree, read-only (flags the kernel locks kept)
 *   /proc        a new proc for the new PID namespace; sys,
 *                sysrq-trigger, irq and bus in it read-only
 *   /dev         tmpfs with null, zero, full, random, urandom, tty,
 *                a private devpts (pts, ptmx) and shm
 *   /tmp         a fresh tmpfs
 *   HOME         the user's home under a per-run writable layer (an
 *                overlayfs whose upper layer is a tmpfs thrown away at
 *                the end: the host's home is read, never written), or a
 *                fresh empty tmpfs when the user has none
 *   caches       tool caches in the home, bound from a directory kept
 *                outside (or fresh tmpfs: --no-cache)
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
	MNT_CACHE, /* a tool cache: SRC (NULL: a fresh tmpfs) at DST,
		      read-write, after the home and before the start
		      directory; skipped where no mount point can be made */
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
 * to SRC and must be absolute.  DST is resolved as the host sees it now:
 * wholly for MNT_HIDE and MNT_FILE (a link's target is what is hidden),
 * but for its last component otherwise; inside, no symbolic link is
 * followed to reach it, so a link found there stops the view.  For
 * MNT_HIDE a path with nothing to hide (missing, a dangling link, behind
 * a directory pinhole may not search) is skipped when it is applied;
 * any other failure stops the view.  Returns 0, or -1 with ERR.
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

/* One file of a tree (mnt_plan_add_tree): NAME is "FILE" or "DIR/FILE". */
struct mnt_file {
	const char *name;
	const void *data;
	size_t len;
};

/*
 * A read-only tmpfs at DST holding the N FILES (copied), each read-only,
 * in at most one level of directories.  DST must lie in the sandbox's
 * own /tmp (it is taken as written, not resolved on the host, and made
 * there); applied with the files of mnt_plan_add_file.  Returns 0, or -1
 * with ERR (DST not under /tmp, a bad name).
 */
int mnt_plan_add_tree(struct mnt_plan *, const char *dst,
    const struct mnt_file *files, size_t n, char *err, size_t errlen);
/*
 * The sandbox's home at HOME (absolute, resolved, not "/"): the host's
 * directory there under a per-run writable layer, or, with FRESH, an
 * empty tmpfs (HOME must then lie where a mount point can be made, such
 * as under /tmp).  Returns 0, or -1 with ERR.
 */
int mnt_plan_set_home(
    struct mnt_plan *, const char *home, int fresh, char *err, size_t errlen);

/*
 * DIR, the directory that holds the tool caches (resolved now), is hidden
 * right after the home is mounted, before the caches are bound, and also
 * when the home stays read-only: the sandbox sees only its own caches.
 * Returns 0, or -1 with ERR.
 */
int mnt_plan_cache_root(
    struct mnt_plan *, const char *dir, char *err, size_t errlen);

/* The home set by mnt_plan_set_home, or NULL. */
const char *mnt_plan_home(const struct mnt_plan *);

/*
 * After mnt_apply, in the process that ran it: NULL, or why the home
 * stayed the host's, read-only, with no tool cache (no overlayfs here).
 */
const char *mnt_home_note(void);

/* Lets the sandbox write .git/hooks and .git/config (--allow-git-config). */
void mnt_plan_allow_git_config(struct mnt_plan *);

/*
 * Hides the default credential files: those under "~/" in HOME (skipped
 * when HOME is NULL or relative), the others below ROOT ("": the host's
 * /; tests give a fake tree; NULL: skipped), glob patterns expanded now.
 * Returns 0, or -1 with ERR.
 */
int mnt_plan_hide_defaults(struct mnt_plan *, const char *home,
    const char *root, char *err, size_t errlen);

/* The default hidden list: entry I (e.g. "~/.ssh"; may be a glob), or NULL. */
size_t mnt_hidden_count(void);
const char *mnt_hidden_at(size_t i);

/*
 * Refuses a start directory that is HOME or holds it (the sandbox could
 * plant ~/.bashrc and the like), unless a --bind of the start directory
 * asks for it.  Returns 0, or -1 with the reason and the way out in ERR.
 */
int mnt_plan_check_home(
    const struct mnt_plan *, const char *home, char *err, size_t errlen);

/*
 * Returns 1 when host path PATH (resolved) lies beneath a writable bind
 * of the plan (the start directory and tool caches included), else 0.
 * The home is not one: its writes never reach the host.
 */
int mnt_plan_is_writable(const struct mnt_plan *, const char *path);

/*
 * Returns 1 when the start directory or a step's destination is PATH
 * (absolute, resolved), lies beneath it or holds it (but "/"), else 0:
 * a mount pinhole adds on its own at PATH would meet the user's.
 */
int mnt_plan_touches(const struct mnt_plan *, const char *path);

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
 * directory, /tmp, /dev/shm, the home, tool caches, writable binds and
 * tmpfs.  Calls FN for
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
