/*
 * gitguard.h: the sweep that runs after the command, in the sandbox's
 * PID 1, once nothing else runs there.  It needs no snapshot: a file's
 * ctime is set by the kernel on every change (write, chmod, rename, link)
 * and the sandbox cannot set it back, so what git would read as config,
 * hooks or another repository's location and whose ctime is at or after
 * the run's start is new or changed, and is moved aside under a name
 * pinhole makes at random (NAME.pinhole-quarantine-<16 hex digits>,
 * renamed with RENAME_NOREPLACE).
 *
 * Below each writable root it looks for every .git entry (the root's own
 * and nested ones, in any case) and every directory git would take for a
 * bare repository: a .git file or symbolic link that is new is moved
 * aside; in a git directory (and in each one below its modules/ and
 * worktrees/) everything but git's inert data (objects, refs, logs,
 * HEAD, index, packed-refs, info/exclude, ...) that is new, lies in
 * something new or holds something new is moved aside: config,
 * config.worktree, commondir, gitdir, hooks/, info/attributes, unknown
 * names.  Mount points (the read-only guards, the pinned .git's own
 * entry, other mounts) are not moved nor entered.  The walk is bounded;
 * hitting a bound, a directory it cannot read (but an old one nobody may
 * search) or a failed rename is a failure to neutralise.
 */
#ifndef PH_GITGUARD_H
#define PH_GITGUARD_H

#include <stddef.h>
#include <time.h>

/* pinhole run's exit status when the sweep could not neutralise a plant. */
#define GITGUARD_EXIT 123

/* Bounds of one sweep: directory depth, entries read over all roots. */
#define GITGUARD_DEPTH_MAX 256
#define GITGUARD_ENTRIES_MAX 4000000

struct gitguard;

struct gitguard *gitguard_new(void);
void gitguard_free(struct gitguard *);

/*
 * Opens writable root PATH now (before the command starts: a path could
 * be moved later) and notes the instant from which a change counts, by
 * the root's own file system clock (the ctime of an O_TMPFILE file there,
 * less a second), or the system clock less two seconds where the file
 * system makes no such file.  NAME is how messages call the root (the
 * host's path).  Returns 0, or -1 with the reason in ERR.
 */
int gitguard_add_root(struct gitguard *, const char *path, const char *name,
    char *err, size_t errlen);

/* Changes from SINCE on count, for every root added so far (for tests). */
void gitguard_set_since(struct gitguard *, const struct timespec *since);

/* Lower bounds than GITGUARD_DEPTH_MAX and GITGUARD_ENTRIES_MAX (tests). */
void gitguard_set_limits(struct gitguard *, unsigned depth, size_t entries);

/*
 * Sweeps every root.  SAY gets one line per file moved aside (WARN 0)
 * and per file that could not be neutralised (WARN 1).  Returns 0 when
 * nothing planted is left, -1 otherwise.
 */
int gitguard_sweep(struct gitguard *,
    void (*say)(void *arg, int fail, const char *msg), void *arg);

#endif /* PH_GITGUARD_H */
