/*
 * gitguard.c: the post-run sweep of git plants (see gitguard.h).
 *
 * Why ctime: the kernel sets it to the current time on every change of
 * an inode (contents, mode, owner, link count, rename), and no system
 * call sets it to another value, so a file the sandbox made, changed,
 * renamed or linked into place has a ctime at or after the run's start.
 * A directory renamed into place is new, but what it holds is not: what
 * lies in a new directory is treated as new too ("taint").  Objects,
 * refs and logs are never read (git runs nothing from them), so the sweep
 * costs one readdir per directory of the work tree and a statx per
 * subdirectory.
 */
#include <sys/random.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/ph_err.h"
#include "common/xmalloc.h"
#include "netns/gitguard.h"

#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif
#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

#define QUARANTINE ".pinhole-quarantine-"

struct root {
	int fd;
	char *name;
	struct timespec since;
};

struct seen {
	dev_t dev;
	ino_t ino;
};

struct gitguard {
	struct root *roots;
	size_t nroots;
	unsigned depth_max;
	size_t entries_max;
	/* one sweep */
	void (*say)(void *, int, const char *);
	void *arg;
	struct timespec since; /* of the root being swept */
	size_t entries;
	int failed, stopped;
	struct seen *seen; /* git directories swept already */
	size_t nseen;
	char path[PATH_MAX + 256]; /* for messages only */
	size_t plen;
};

/* What statx says of one entry. */
struct ent {
	int dir, mnt, isnew;
	int closed; /* another owner's directory the command cannot search */
	unsigned mode;
};

/* Names in a git directory that git runs nothing from. */
static const char *const inert_gitdir[] = {
    "AUTO_MERGE",
    "BISECT_EXPECTED_REV",
    "CHERRY_PICK_HEAD",
    "COMMIT_EDITMSG",
    "FETCH_HEAD",
    "HEAD",
    "MERGE_HEAD",
    "MERGE_MODE",
    "MERGE_MSG",
    "ORIG_HEAD",
    "REBASE_HEAD",
    "REVERT_HEAD",
    "SQUASH_MSG",
    "TAG_EDITMSG",
    "branches",
    "description",
    "index",
    "lfs",
    "logs",
    "objects",
    "packed-refs",
    "refs",
    "shallow",
};
static const char *const inert_info[] = {
    "exclude",
    "refs",
};

enum kind { GITDIR, INFO };

/* --- messages and bounds -------------------------------------------------- */

static void say(struct gitguard *g, int fail, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
say(struct gitguard *g, int fail, const char *fmt, ...)
{
	char msg[sizeof(g->path) + 256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (fail)
		g->failed = 1;
	if (g->say != NULL)
		g->say(g->arg, fail, msg);
}

/* The message path grows by NAME; returns the length to go back to. */
static size_t
push(struct gitguard *g, const char *name)
{
	size_t old = g->plen, room = sizeof(g->path) - old;
	int n = snprintf(g->path + old, room, "/%s", name);

	g->plen = n < 0 || (size_t)n >= room ? sizeof(g->path) - 1 : old + n;
	return old;
}

static void
pop(struct gitguard *g, size_t old)
{
	g->plen = old;
	g->path[old] = '\0';
}

/* One more entry read: -1 once past the bound (the sweep then fails). */
static int
count(struct gitguard *g)
{
	if (g->stopped)
		return -1;
	if (++g->entries <= g->entries_max)
		return 0;
	say(g, 1,
	    "more than %zu entries in the writable directories; "
	    "stopped at %s",
	    g->entries_max, g->path);
	g->stopped = 1;
	return -1;
}

static int
too_deep(struct gitguard *g, unsigned depth)
{
	if (g->stopped)
		return 1;
	if (depth <= g->depth_max)
		return 0;
	say(g, 1, "more than %u directories deep at %s; stopped there",
	    g->depth_max, g->path);
	g->stopped = 1;
	return 1;
}

/* --- looking -------------------------------------------------------------- */

static int
look(struct gitguard *g, int dfd, const char *name, struct ent *e)
{
	struct statx sx;
	const struct statx_timestamp *c = &sx.stx_ctime;

	if (statx(dfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
	        STATX_TYPE | STATX_MODE | STATX_UID | STATX_CTIME, &sx) != 0)
		return -1;
	e->dir = S_ISDIR(sx.stx_mode);
	/*
	 * This process has the command's credentials and no capability: a
	 * directory of another owner that it may not search, the command
	 * could neither enter nor chmod, whenever it was changed.
	 */
	e->closed = e->dir && sx.stx_uid != geteuid() &&
	    faccessat(dfd, name, X_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) != 0 &&
	    errno == EACCES;
	e->mode = sx.stx_mode & 07777;
	e->mnt = (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
	    (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
	e->isnew = c->tv_sec > g->since.tv_sec ||
	    (c->tv_sec == g->since.tv_sec && c->tv_nsec >= g->since.tv_nsec);
	return 0;
}

/* look(), saying why when the entry is there but cannot be checked. */
static int
look_said(struct gitguard *g, int dfd, const char *name, struct ent *e)
{
	if (look(g, dfd, name, e) == 0)
		return 0;
	if (errno != ENOENT)
		say(g, 1, "cannot check %s: %s", g->path, strerror(errno));
	return -1;
}

static int
opendir_at(int dfd, const char *name)
{
	return openat(dfd, name,
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
}

/*
 * An old directory that nobody may search: the command could not have
 * reached into it without a chmod, which would have made it new; or
 * another owner's that the command could not search at all.
 */
static int
sealed(const struct ent *e)
{
	return e->closed || (!e->isnew && (e->mode & 0111) == 0);
}

struct names {
	char **v;
	size_t n;
};

static void
names_free(struct names *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

/*
 * The names in directory FD (left open), read in full before anything in
 * it is renamed.  Returns 0, or -1, with the failure said when SAY_IT.
 */
static int
list(struct gitguard *g, int fd, struct names *l, int say_it)
{
	struct dirent *de;
	DIR *d;
	int dfd, r = -1;

	l->v = NULL;
	l->n = 0;
	if ((dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    (d = fdopendir(dfd)) == NULL) {
		if (say_it)
			say(g, 1, "cannot read %s: %s", g->path,
			    strerror(errno));
		if (dfd >= 0)
			close(dfd);
		return -1;
	}
	for (errno = 0; (de = readdir(d)) != NULL; errno = 0) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (count(g) != 0)
			goto out;
		l->v = xreallocarray(l->v, l->n + 1, sizeof(*l->v));
		l->v[l->n++] = xstrdup(de->d_name);
	}
	if (errno == 0)
		r = 0;
	else if (say_it)
		say(g, 1, "cannot read %s: %s", g->path, strerror(errno));
out:
	closedir(d);
	if (r != 0) {
		names_free(l);
		l->v = NULL;
		l->n = 0;
	}
	return r;
}

/* --- moving aside --------------------------------------------------------- */

/* NAME in DFD goes to NAME.pinhole-quarantine-<random>, never over one. */
static void
aside(struct gitguard *g, int dfd, const char *name)
{
	unsigned char rnd[8];
	char to[NAME_MAX + 1];
	size_t k;
	int i, j, r = -1;

	for (i = 0; i < 4 && r != 0; i++) {
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			break;
		j = snprintf(to, sizeof(to), "%.200s" QUARANTINE, name);
		for (k = 0; k < sizeof(rnd); k++)
			j += snprintf(to + j, sizeof(to) - j, "%02x", rnd[k]);
		r = renameat2(dfd, name, dfd, to, RENAME_NOREPLACE);
		/*
		 * A file system without RENAME_NOREPLACE: nothing else runs
		 * now, and the name cannot be guessed.
		 */
		if (r != 0 && errno == EINVAL &&
		    faccessat(dfd, to, F_OK, AT_SYMLINK_NOFOLLOW) != 0 &&
		    errno == ENOENT)
			r = renameat(dfd, name, dfd, to);
		if (r != 0 && errno != EEXIST)
			break;
	}
	if (r == 0)
		say(g, 0,
		    "%s is new or changed since the run started, and git "
		    "would read it; moved to %s",
		    g->path, to);
	else if (errno != ENOENT)
		say(g, 1, "cannot move %s aside: %s", g->path, strerror(errno));
}

/* --- git directories ------------------------------------------------------ */

/* NAME ends in .pinhole-quarantine-<16 hex digits>. */
static int
is_quarantine(const char *name)
{
	size_t n = strlen(name), q = strlen(QUARANTINE);

	return n >= q + 16 && strncmp(name + n - q - 16, QUARANTINE, q) == 0 &&
	    strspn(name + n - 16, "0123456789abcdef") == 16;
}

/*
 * Git reads fixed names in a git directory: none ends as a quarantine
 * name does, whoever made it (a name moved aside by the previous run
 * is not moved again; its ctime is that of the rename).
 */
static int
is_inert(enum kind k, const char *name)
{
	const char *const *v = k == GITDIR ? inert_gitdir : inert_info;
	size_t i,
	    n = k == GITDIR ? sizeof(inert_gitdir) / sizeof(inert_gitdir[0])
	                    : sizeof(inert_info) / sizeof(inert_info[0]);

	if (is_quarantine(name))
		return 1;
	for (i = 0; i < n; i++)
		if (strcmp(name, v[i]) == 0)
			return 1;
	return 0;
}

/* Is anything below directory FD (closed) new?  When unsure: yes. */
static int
changed_below(struct gitguard *g, int fd, unsigned depth)
{
	struct names l;
	struct ent e;
	size_t i;
	int r = 1;

	/* What cannot be read goes aside whole: no failure then. */
	if (fd < 0 || depth > g->depth_max || list(g, fd, &l, 0) != 0)
		goto out;
	for (i = 0, r = 0; i < l.n && r == 0; i++) {
		if (look(g, fd, l.v[i], &e) != 0)
			r = errno != ENOENT;
		else if (e.mnt)
			continue;
		else if (e.isnew)
			r = 1;
		else if (e.dir && !sealed(&e))
			r = changed_below(g, opendir_at(fd, l.v[i]), depth + 1);
	}
	names_free(&l);
out:
	if (fd >= 0)
		close(fd);
	return r;
}

/* Swept already (a git directory reached twice)?  Else noted. */
static int
seen(struct gitguard *g, int fd)
{
	struct stat sb;
	size_t i;

	if (fstat(fd, &sb) != 0)
		return 0;
	for (i = 0; i < g->nseen; i++)
		if (g->seen[i].dev == sb.st_dev && g->seen[i].ino == sb.st_ino)
			return 1;
	g->seen = xreallocarray(g->seen, g->nseen + 1, sizeof(*g->seen));
	g->seen[g->nseen].dev = sb.st_dev;
	g->seen[g->nseen++].ino = sb.st_ino;
	return 0;
}

static void gitdir(struct gitguard *, int, enum kind, int, unsigned);

/*
 * Directory NAME of git's (entry E, new or in something new: NW), opened
 * to look inside; or -1 when there is nothing to look at: it is sealed,
 * or it cannot be read and, being new, went aside whole; or it cannot
 * be read (said).
 */
static int
enter(
    struct gitguard *g, int dfd, const char *name, const struct ent *e, int nw)
{
	int fd;

	if (!nw && sealed(e))
		return -1;
	if ((fd = opendir_at(dfd, name)) >= 0)
		return fd;
	if (nw)
		aside(g, dfd, name);
	else
		say(g, 1, "cannot read %s: %s", g->path, strerror(errno));
	return -1;
}

/*
 * modules/ and worktrees/ (and a submodule name's leading directories):
 * a directory holding HEAD is a git directory, any other is walked the
 * same way, and a new file is moved aside.  FD is closed.
 */
static void
holder(struct gitguard *g, int fd, int taint, unsigned depth)
{
	struct names l;
	struct ent e;
	size_t i, old;
	int sub, nw;

	if (too_deep(g, depth) || list(g, fd, &l, 1) != 0)
		goto out;
	for (i = 0; i < l.n && !g->stopped; i++) {
		old = push(g, l.v[i]);
		if (look_said(g, fd, l.v[i], &e) != 0) {
			/* gone, or said */
		} else if (e.mnt) {
			/* a read-only guard, or the user's own mount */
		} else if (e.dir) {
			nw = taint || e.isnew;
			if ((sub = enter(g, fd, l.v[i], &e, nw)) < 0)
				; /* sealed, aside, or said */
			else if (faccessat(sub, "HEAD", F_OK,
			             AT_SYMLINK_NOFOLLOW) == 0)
				gitdir(g, sub, GITDIR, nw, depth + 1);
			else
				holder(g, sub, nw, depth + 1);
		} else if (taint || e.isnew)
			aside(g, fd, l.v[i]);
		pop(g, old);
	}
	names_free(&l);
out:
	close(fd);
}

/*
 * A hooks/ directory that holds nothing but regular files named *.sample
 * (what git clone and git init copy from the templates): git runs a hook
 * only by its exact name, so these run nothing, and moving them aside
 * would only make noise.  Anything else in it, or more than a template
 * holds, and it goes aside whole as before.
 */
static int
only_samples(int dfd, const char *name)
{
	struct dirent *de;
	struct stat st;
	size_t n, len, count = 0;
	int fd, ok = 1;
	DIR *d;

	if ((fd = opendir_at(dfd, name)) < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while (ok && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		n = strlen(de->d_name);
		len = sizeof(".sample") - 1;
		ok = ++count <= 64 && n > len &&
		    strcmp(de->d_name + n - len, ".sample") == 0 &&
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ==
		        0 &&
		    S_ISREG(st.st_mode);
	}
	closedir(d);
	return ok;
}

/*
 * A git directory (or its info/), FD closed: what git runs nothing from
 * stays; what is new, lies in something new or holds something new goes
 * aside; modules/ and worktrees/ hold more git directories.
 */
static void
gitdir(struct gitguard *g, int fd, enum kind k, int taint, unsigned depth)
{
	struct names l;
	struct ent e;
	size_t i, old;
	int nw, sub;

	if (too_deep(g, depth) || (k == GITDIR && seen(g, fd)) ||
	    list(g, fd, &l, 1) != 0)
		goto out;
	for (i = 0; i < l.n && !g->stopped; i++) {
		if (is_inert(k, l.v[i]))
			continue;
		old = push(g, l.v[i]);
		if (look_said(g, fd, l.v[i], &e) != 0) {
			pop(g, old);
			continue;
		}
		nw = taint || e.isnew;
		if (e.mnt)
			; /* a read-only guard: hooks, config */
		else if (k == GITDIR && e.dir &&
		    (strcmp(l.v[i], "modules") == 0 ||
		        strcmp(l.v[i], "worktrees") == 0)) {
			if ((sub = enter(g, fd, l.v[i], &e, nw)) >= 0)
				holder(g, sub, nw, depth + 1);
		} else if (k == GITDIR && e.dir &&
		    strcmp(l.v[i], "info") == 0) {
			if ((sub = enter(g, fd, l.v[i], &e, nw)) >= 0)
				gitdir(g, sub, INFO, nw, depth + 1);
		} else if (k == GITDIR && e.dir &&
		    strcmp(l.v[i], "hooks") == 0 && only_samples(fd, l.v[i]))
			; /* git's templates: no hook runs from them */
		else if (e.dir && !nw && sealed(&e))
			; /* nothing in it can have changed */
		else if (nw ||
		    (e.dir &&
		        changed_below(g, opendir_at(fd, l.v[i]), depth + 1)))
			aside(g, fd, l.v[i]);
		pop(g, old);
	}
	names_free(&l);
out:
	close(fd);
}

/* --- the work tree -------------------------------------------------------- */

/*
 * A .git entry in DFD: a directory is swept as a git directory (not
 * tainted when it is a pinned mount point: only its contents count); a
 * new file or symbolic link (gitdir: elsewhere) goes aside.
 */
static void
dotgit(struct gitguard *g, int dfd, const char *name, unsigned depth)
{
	struct ent e;
	int fd, nw;

	if (look_said(g, dfd, name, &e) != 0)
		return;
	if (e.dir) {
		nw = !e.mnt && e.isnew;
		if ((fd = enter(g, dfd, name, &e, nw)) >= 0)
			gitdir(g, fd, GITDIR, nw, depth + 1);
	} else if (!e.mnt && e.isnew)
		aside(g, dfd, name);
}

/*
 * In a case-folding directory (ext4, f2fs with +F) git's ".git" finds
 * ".GIT": any case counts, here and for what makes a bare repository.
 */
static int
is_dotgit(const char *name)
{
	return strcasecmp(name, ".git") == 0;
}

/* Which of HEAD, objects, refs and commondir NAME is, as a bit. */
static unsigned
bare_part(const char *name)
{
	static const char *const parts[] = {
	    "HEAD", "objects", "refs", "commondir"};
	unsigned i;

	for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (strcasecmp(name, parts[i]) == 0)
			return 1u << i;
	return 0;
}

/* What git takes for a git directory: HEAD, and objects and refs here or
 * in the directory commondir names (setup.c, is_git_directory). */
static int
is_bare(unsigned parts)
{
	return (parts & 1) && ((parts & 6) == 6 || (parts & 8));
}

static void walk(struct gitguard *, int, unsigned);

/*
 * Directory NAME in DFD, walked.  One it cannot read is a failure, but
 * for an old one that nobody may search (no x bit): the command could
 * not have reached into it without a chmod, which would make it new.
 */
static void
subdir(struct gitguard *g, int dfd, const char *name, const struct ent *e,
    unsigned depth)
{
	if (!sealed(e))
		walk(g, opendir_at(dfd, name), depth);
}

/*
 * Every directory below FD (closed), for .git entries, and for
 * directories that git takes for a bare repository (HEAD, objects/ and
 * refs/, or HEAD and commondir: git run there or below reads their
 * config and hooks).
 */
static void
walk(struct gitguard *g, int fd, unsigned depth)
{
	struct dirent *de;
	struct ent e;
	unsigned bare = 0;
	size_t old;
	DIR *d;

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		say(g, 1, "cannot read %s: %s", g->path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	for (errno = 0; (de = readdir(d)) != NULL; errno = 0) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (count(g) != 0)
			break;
		bare |= bare_part(de->d_name);
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN &&
		    !is_dotgit(de->d_name))
			continue;
		old = push(g, de->d_name);
		if (is_dotgit(de->d_name))
			dotgit(g, dirfd(d), de->d_name, depth);
		else if (look_said(g, dirfd(d), de->d_name, &e) != 0)
			; /* gone, or said */
		else if (e.dir && !e.mnt && !too_deep(g, depth + 1))
			subdir(g, dirfd(d), de->d_name, &e, depth + 1);
		pop(g, old);
		if (g->stopped)
			break;
	}
	if (errno != 0 && !g->stopped)
		say(g, 1, "cannot read %s: %s", g->path, strerror(errno));
	else if (is_bare(bare) && !g->stopped &&
	    look(g, dirfd(d), ".", &e) == 0 &&
	    (fd = openat(dirfd(d), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >=
	        0)
		gitdir(g, fd, GITDIR, e.isnew && !e.mnt, depth);
	closedir(d);
}

/* --- the interface -------------------------------------------------------- */

struct gitguard *
gitguard_new(void)
{
	struct gitguard *g = xcalloc(1, sizeof(*g));

	g->depth_max = GITGUARD_DEPTH_MAX;
	g->entries_max = GITGUARD_ENTRIES_MAX;
	return g;
}

void
gitguard_free(struct gitguard *g)
{
	size_t i;

	if (g == NULL)
		return;
	for (i = 0; i < g->nroots; i++) {
		close(g->roots[i].fd);
		free(g->roots[i].name);
	}
	free(g->roots);
	free(g->seen);
	free(g);
}

/* Now, by the clock of the file system of directory FD, less a margin. */
static void
start_time(int fd, struct timespec *ts)
{
	struct stat sb;
	int t;

	t = openat(fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (t >= 0 && fstat(t, &sb) == 0) {
		*ts = sb.st_ctim;
		ts->tv_sec -= 1;
	} else {
		clock_gettime(CLOCK_REALTIME, ts);
		ts->tv_sec -= 2;
	}
	if (t >= 0)
		close(t);
}

int
gitguard_add_root(struct gitguard *g, const char *path, const char *name,
    char *err, size_t errlen)
{
	struct root r;

	if ((r.fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		ph_errf(
		    err, errlen, "git guard: %s: %s", path, strerror(errno));
		return -1;
	}
	start_time(r.fd, &r.since);
	r.name = xstrdup(name);
	g->roots = xreallocarray(g->roots, g->nroots + 1, sizeof(*g->roots));
	g->roots[g->nroots++] = r;
	return 0;
}

void
gitguard_set_since(struct gitguard *g, const struct timespec *since)
{
	size_t i;

	for (i = 0; i < g->nroots; i++)
		g->roots[i].since = *since;
}

void
gitguard_set_limits(struct gitguard *g, unsigned depth, size_t entries)
{
	g->depth_max = depth;
	g->entries_max = entries;
}

int
gitguard_sweep(struct gitguard *g,
    void (*fn)(void *arg, int fail, const char *msg), void *arg)
{
	size_t i;

	g->say = fn;
	g->arg = arg;
	g->entries = 0;
	g->failed = g->stopped = 0;
	g->nseen = 0;
	for (i = 0; i < g->nroots && !g->stopped; i++) {
		g->since = g->roots[i].since;
		snprintf(g->path, sizeof(g->path), "%s", g->roots[i].name);
		g->plen = strlen(g->path);
		walk(g,
		    openat(g->roots[i].fd, ".",
		        O_RDONLY | O_DIRECTORY | O_CLOEXEC),
		    0);
	}
	return g->failed ? -1 : 0;
}
