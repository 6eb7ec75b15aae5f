/*
 * mount.c: the sandbox's mount view, with the new mount API.
 *
 * Every source is captured first as a detached copy (open_tree with
 * OPEN_TREE_CLONE) while the host's paths still resolve, then the
 * read-only copy of "/" becomes the root (pivot_root), and the copies are
 * attached to paths that now resolve inside the new root, so a symbolic
 * link in a destination cannot point out of it.  Read-only is one
 * mount_setattr(MOUNT_ATTR_RDONLY, AT_RECURSIVE) over a whole tree: it
 * adds the flag and leaves the others (nosuid, nodev, noexec, atime),
 * which the kernel locks in a user namespace anyway.
 */
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ph_err.h"
#include "common/xmalloc.h"
#include "netns/mount.h"

#define DEV_NODES_MAX 8

struct mnt_op {
	enum mnt_kind kind;
	char *src, *dst;
	int tree; /* detached copy of SRC, in mnt_apply */
	void *data; /* MNT_FILE */
	size_t len;
	struct mnt_file *files; /* MNT_FILE of a tree (mnt_plan_add_tree) */
	size_t nfiles;
};

struct mnt_plan {
	char *cwd;
	char *home; /* mnt_plan_set_home, or NULL */
	int home_fresh;
	char *cache_root; /* mnt_plan_cache_root, or NULL */
	struct mnt_op *ops;
	size_t nops;
	int allow_git_config;
};

/*
 * What keeps a repository in a writable bind from planting code that the
 * user's next git command would run outside the sandbox: .git itself is
 * pinned (a mount point cannot be renamed or replaced), and what names
 * hooks or other git directories is read-only.  The first entry must
 * stay first: the others are attached inside it.
 */
static const struct {
	const char *name;
	int ro;
} git_guards[] = {
    {".git", 0},
    {".git/hooks", 1},
    {".git/config", 1},
    {".git/commondir", 1},
    {".git/config.worktree", 1},
};
#define GIT_GUARDS (sizeof(git_guards) / sizeof(git_guards[0]))

/* Devices of the minimal /dev, bound from the host's. */
static const char *const dev_nodes[] = {
    "null",
    "zero",
    "full",
    "random",
    "urandom",
    "tty",
};

/*
 * Credential and key files hidden by default (they appear empty): "~/"
 * is the invoking user's home, a glob pattern is expanded when the plan
 * is made.  The one list: the man page and test_mount.c follow it.
 */
static const char *const default_hidden[] = {
    "~/.ssh",
    "~/.aws",
    "~/.gnupg", /* keys, and the agent's sockets kept there */
    "~/.netrc",
    "~/.git-credentials",
    "~/.config/gh",
    "~/.docker/config.json",
    "~/.npmrc",
    "~/.pypirc",
    "~/.kube",
    "~/.vault-token",
    "~/.cargo/credentials.toml",
    "~/.cargo/credentials",
    "~/.config/gcloud",
    "~/.azure",
    "~/.pgpass",
    "~/.my.cnf",
    "~/.config/hub",
    "~/.terraform.d/credentials.tfrc.json",
    "/run/user/%u/gnupg", /* gpg's agent sockets, of the caller's uid */
    "/etc/shadow", /* what a root run could read */
    "/etc/gshadow",
    "/etc/ssh/*_key",
};
#define DEFAULT_HIDDEN (sizeof(default_hidden) / sizeof(default_hidden[0]))

/* /proc entries that change the host (bubblewrap's list), read-only. */
static const char *const proc_ro[] = {
    "/proc/sys",
    "/proc/sysrq-trigger",
    "/proc/irq",
    "/proc/bus",
};

/* --- the plan (outside) --------------------------------------------------- */

/*
 * Directories every user and service shares: as the start directory (or
 * inside it) the sandbox could plant files that others run or read
 * later, or take over their temporary files.  A directory below one is
 * fine: it is the user's own.
 */
static const char *const shared_dirs[] = {
    "/tmp",
    "/var/tmp",
    "/dev/shm",
    "/run",
};

/* The shared directory that REAL (resolved) is or holds, or NULL. */
static const char *
holds_shared(const char *real)
{
	static char found[PATH_MAX];
	char *s;
	size_t i;
	int hit;

	for (i = 0; i < sizeof(shared_dirs) / sizeof(shared_dirs[0]); i++) {
		if ((s = realpath(shared_dirs[i], NULL)) == NULL)
			continue;
		hit = strncmp(s, real, strlen(real)) == 0 &&
		    (s[strlen(real)] == '\0' || s[strlen(real)] == '/');
		snprintf(found, sizeof(found), "%s", s);
		free(s);
		if (hit)
			return found;
	}
	return NULL;
}

struct mnt_plan *
mnt_plan_new(const char *cwd, char *err, size_t errlen)
{
	struct mnt_plan *p;
	const char *shared;
	char *real;

	if ((real = realpath(cwd, NULL)) == NULL) {
		ph_errf(err, errlen, "start directory %s: %s", cwd,
		    strerror(errno));
		return NULL;
	}
	if (strcmp(real, "/") == 0) {
		ph_errf(err, errlen,
		    "the start directory is /, which would make "
		    "the whole tree writable; cd to a project "
		    "directory first");
		free(real);
		return NULL;
	}
	if ((shared = holds_shared(real)) != NULL) {
		ph_errf(err, errlen,
		    "the start directory %s %s %s, which every user and "
		    "service "
		    "shares: the sandbox could plant or replace files others "
		    "use; cd to a project directory first (a directory of "
		    "your own below %s will do)",
		    real, strcmp(real, shared) == 0 ? "is" : "holds", shared,
		    shared);
		free(real);
		return NULL;
	}
	p = xcalloc(1, sizeof(*p));
	p->cwd = real;
	return p;
}

static void
free_files(struct mnt_file *f, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free((void *)(uintptr_t)f[i].name);
		free((void *)(uintptr_t)f[i].data);
	}
	free(f);
}

void
mnt_plan_free(struct mnt_plan *p)
{
	size_t i;

	if (p == NULL)
		return;
	for (i = 0; i < p->nops; i++) {
		free(p->ops[i].src);
		free(p->ops[i].dst);
		free(p->ops[i].data);
		free_files(p->ops[i].files, p->ops[i].nfiles);
	}
	free(p->ops);
	free(p->cwd);
	free(p->home);
	free(p->cache_root);
	free(p);
}

/*
 * PATH as the host sees it: every symbolic link resolved, those of its
 * last component too when FOLLOW; what does not exist (yet) is kept as
 * written below the deepest part that does.  NULL on another error.
 */
static char *
resolve_host(const char *path, int follow)
{
	const char *slash = strrchr(path, '/'), *base = slash + 1;
	char *parent, *real, *r;

	if (strcmp(path, "/") == 0)
		return xstrdup(path);
	if (follow && (real = realpath(path, NULL)) != NULL)
		return real;
	/* Closed to pinhole: as it stands (inside it stays closed, hide()). */
	if (follow && errno == EACCES)
		return xstrdup(path);
	/* A missing or dangling last component: resolve the rest. */
	if (follow && errno != ENOENT && errno != ENOTDIR)
		return NULL;
	if (*base == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return follow ? NULL : resolve_host(path, 1);
	parent = slash == path ? xstrdup("/") : xstrndup(path, slash - path);
	real = resolve_host(parent, 1);
	free(parent);
	if (real == NULL)
		return NULL;
	r = xasprintf("%s/%s", strcmp(real, "/") == 0 ? "" : real, base);
	free(real);
	return r;
}

int
mnt_plan_add(struct mnt_plan *p, enum mnt_kind kind, const char *src,
    const char *dst, char *err, size_t errlen)
{
	struct mnt_op op = {kind, NULL, NULL, -1, NULL, 0, NULL, 0};

	if (kind == MNT_BIND || kind == MNT_RO_BIND ||
	    (kind == MNT_CACHE && src != NULL)) {
		if ((op.src = realpath(src, NULL)) == NULL) {
			ph_errf(err, errlen, "%s: %s", src, strerror(errno));
			return -1;
		}
		if (dst == NULL)
			dst = op.src;
	} else if (dst == NULL)
		dst = src;
	if (dst == NULL || dst[0] != '/') {
		ph_errf(err, errlen,
		    "%s: the destination must be an absolute "
		    "path",
		    dst ? dst : "(none)");
		free(op.src);
		return -1;
	}
	/*
	 * Hidden or replaced: what the path names as the host sees it (a
	 * link's target); elsewhere the last component is a mount point, which
	 * must not be a link when it is attached.
	 */
	if ((op.dst = resolve_host(
	         dst, kind == MNT_HIDE || kind == MNT_FILE)) == NULL) {
		ph_errf(err, errlen, "%s: %s", dst, strerror(errno));
		free(op.src);
		return -1;
	}
	p->ops = xreallocarray(p->ops, p->nops + 1, sizeof(*p->ops));
	p->ops[p->nops++] = op;
	return 0;
}

int
mnt_plan_add_file(struct mnt_plan *p, const char *dst, const void *data,
    size_t len, char *err, size_t errlen)
{
	struct mnt_op *op;

	if (mnt_plan_add(p, MNT_FILE, NULL, dst, err, errlen) != 0)
		return -1;
	op = &p->ops[p->nops - 1];
	op->data = xmalloc(len ? len : 1);
	memcpy(op->data, data, len);
	op->len = len;
	return 0;
}

/* "FILE" or "DIR/FILE": no empty, "." or ".." part. */
static int
tree_name_ok(const char *name)
{
	const char *slash = strchr(name, '/');
	size_t len = strlen(name);

	if (len == 0 || len >= NAME_MAX || name[0] == '.' ||
	    (slash != NULL &&
	        (slash == name || slash[1] == '\0' || slash[1] == '.' ||
	            strchr(slash + 1, '/') != NULL)))
		return 0;
	return 1;
}

int
mnt_plan_add_tree(struct mnt_plan *p, const char *dst,
    const struct mnt_file *files, size_t n, char *err, size_t errlen)
{
	struct mnt_op op = {MNT_FILE, NULL, NULL, -1, NULL, 0, NULL, 0};
	size_t i;

	/* The sandbox's /tmp is its own: nothing of the host's is there. */
	if (strncmp(dst, "/tmp/", 5) != 0 || strchr(dst + 5, '/') != NULL ||
	    strcmp(dst + 5, "") == 0 || strcmp(dst + 5, ".") == 0 ||
	    strcmp(dst + 5, "..") == 0) {
		ph_errf(err, errlen, "%s: a tree goes right under /tmp", dst);
		return -1;
	}
	for (i = 0; i < n; i++)
		if (!tree_name_ok(files[i].name)) {
			ph_errf(err, errlen, "%s: bad file name '%s'", dst,
			    files[i].name);
			return -1;
		}
	op.dst = xstrdup(dst);
	op.files = xcalloc(n ? n : 1, sizeof(*op.files));
	for (i = 0; i < n; i++) {
		op.files[i].name = xstrdup(files[i].name);
		op.files[i].data =
		    memcpy(xmalloc(files[i].len ? files[i].len : 1),
		        files[i].data, files[i].len);
		op.files[i].len = files[i].len;
	}
	op.nfiles = n;
	p->ops = xreallocarray(p->ops, p->nops + 1, sizeof(*p->ops));
	p->ops[p->nops++] = op;
	return 0;
}

int
mnt_plan_set_home(
    struct mnt_plan *p, const char *home, int fresh, char *err, size_t errlen)
{
	if (home == NULL || home[0] != '/' || strcmp(home, "/") == 0) {
		ph_errf(err, errlen, "home %s: not an absolute directory",
		    home ? home : "(none)");
		return -1;
	}
	free(p->home);
	p->home = xstrdup(home);
	p->home_fresh = fresh;
	return 0;
}

int
mnt_plan_cache_root(
    struct mnt_plan *p, const char *dir, char *err, size_t errlen)
{
	char *real;

	if (dir == NULL || dir[0] != '/' ||
	    (real = resolve_host(dir, 1)) == NULL) {
		ph_errf(err, errlen, "%s: %s", dir ? dir : "(none)",
		    dir && dir[0] == '/' ? strerror(errno) : "not absolute");
		return -1;
	}
	free(p->cache_root);
	p->cache_root = real;
	return 0;
}

const char *
mnt_plan_home(const struct mnt_plan *p)
{
	return p->home;
}

void
mnt_plan_allow_git_config(struct mnt_plan *p)
{
	p->allow_git_config = 1;
}

size_t
mnt_hidden_count(void)
{
	return DEFAULT_HIDDEN;
}

const char *
mnt_hidden_at(size_t i)
{
	return i < DEFAULT_HIDDEN ? default_hidden[i] : NULL;
}

/* Hides every path PATTERN matches now (a plain path: that path). */
static int
hide_glob(struct mnt_plan *p, const char *pattern, char *err, size_t errlen)
{
	glob_t g;
	size_t i;
	int r = 0;

	if (strpbrk(pattern, "*?[") == NULL)
		return mnt_plan_add(p, MNT_HIDE, NULL, pattern, err, errlen);
	if (glob(pattern, GLOB_NOSORT, NULL, &g) != 0)
		return 0; /* no match, or an unreadable directory */
	for (i = 0; r == 0 && i < g.gl_pathc; i++)
		r = mnt_plan_add(p, MNT_HIDE, NULL, g.gl_pathv[i], err, errlen);
	globfree(&g);
	return r;
}

/* BASE then ENTRY into BUF, "%u" in ENTRY the caller's uid; snprintf's. */
static int
expand(char *buf, size_t len, const char *base, const char *entry)
{
	const char *u = strstr(entry, "%u");

	if (u == NULL)
		return snprintf(buf, len, "%s%s", base, entry);
	return snprintf(buf, len, "%s%.*s%u%s", base, (int)(u - entry), entry,
	    (unsigned)getuid(), u + 2);
}

int
mnt_plan_hide_defaults(struct mnt_plan *p, const char *home, const char *root,
    char *err, size_t errlen)
{
	char path[PATH_MAX];
	const char *e, *base;
	size_t i;
	int n;

	for (i = 0; i < DEFAULT_HIDDEN; i++) {
		e = default_hidden[i];
		if (strncmp(e, "~/", 2) == 0) {
			if (home == NULL || home[0] != '/')
				continue;
			base = home;
			e += 1;
		} else if (root != NULL)
			base = root;
		else
			continue;
		n = expand(
		    path, sizeof(path), strcmp(base, "/") == 0 ? "" : base, e);
		if (n < 0 || (size_t)n >= sizeof(path)) {
			ph_errf(err, errlen, "%s%s: path too long", base, e);
			return -1;
		}
		if (hide_glob(p, path, err, errlen) != 0)
			return -1;
	}
	return 0;
}

/* PATH is DIR or lies beneath it (both absolute and resolved). */
static int
beneath(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return 1;
	return strncmp(path, dir, n) == 0 &&
	    (path[n] == '\0' || path[n] == '/');
}

int
mnt_plan_is_writable(const struct mnt_plan *p, const char *path)
{
	size_t i;

	if (beneath(path, p->cwd))
		return 1;
	for (i = 0; i < p->nops; i++)
		if ((p->ops[i].kind == MNT_BIND ||
		        (p->ops[i].kind == MNT_CACHE && p->ops[i].src)) &&
		    beneath(path, p->ops[i].src))
			return 1;
	return 0;
}

/* PATH and DIR are one, or one lies beneath the other ("/" holds none). */
static int
near(const char *path, const char *dir)
{
	return strcmp(dir, "/") != 0 && strcmp(path, "/") != 0 &&
	    (beneath(path, dir) || beneath(dir, path));
}

int
mnt_plan_touches(const struct mnt_plan *p, const char *path)
{
	size_t i;

	if (near(path, p->cwd))
		return 1;
	for (i = 0; i < p->nops; i++)
		if (near(path, p->ops[i].dst))
			return 1;
	return 0;
}

/* Says where (or why not) in WHERE, printf-style; returns RC. */
static int walk_said(int rc, char *where, size_t wlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int
walk_said(int rc, char *where, size_t wlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(where, wlen, fmt, ap);
	va_end(ap);
	return rc;
}

/* Replaces the head of TODO (LEN bytes) with TARGET, keeping the rest. */
static int
splice_link(char *todo, size_t sz, size_t len, const char *target)
{
	char rest[PATH_MAX];

	if (snprintf(rest, sizeof(rest), "%s", todo + len) >=
	        (int)sizeof(rest) ||
	    snprintf(todo, sz, "%s/%s", target, rest) >= (int)sz)
		return -1;
	return 0;
}

/*
 * One step of the walk: the first component (LEN bytes) of TODO, in the
 * resolved directory CUR.  Returns 2 to go on (CUR and TODO advanced, or
 * a symlink's target spliced into TODO), else mnt_plan_path_reachable's
 * answer.
 */
static int
walk_step(const struct mnt_plan *p, char *cur, char *todo, size_t len,
    int *hops, char *where, size_t wlen)
{
	char entry[PATH_MAX], target[PATH_MAX];
	struct stat sb;
	ssize_t n;

	if (snprintf(entry, sizeof(entry), "%s/%.*s", cur, (int)len, todo) >=
	    (int)sizeof(entry))
		return walk_said(-1, where, wlen, "path too long");
	if (mnt_plan_is_writable(p, cur[0] ? cur : "/"))
		return walk_said(1, where, wlen, "%s", entry);
	/* A missing rest is nothing to take over; other failures: unknown. */
	if (lstat(entry, &sb) != 0)
		return errno == ENOENT || errno == ENOTDIR
		    ? 0
		    : walk_said(
		          -1, where, wlen, "%s: %s", entry, strerror(errno));
	if (!S_ISLNK(sb.st_mode)) {
		memmove(todo, todo + len, strlen(todo + len) + 1);
		snprintf(cur, PATH_MAX, "%s", entry);
		return 2;
	}
	if (++*hops > 40)
		return walk_said(
		    -1, where, wlen, "%s: %s", entry, strerror(ELOOP));
	if ((n = readlink(entry, target, sizeof(target) - 1)) < 0)
		return walk_said(
		    -1, where, wlen, "%s: %s", entry, strerror(errno));
	target[n] = '\0';
	if (target[0] == '/')
		cur[0] = '\0';
	if (splice_link(todo, PATH_MAX, len, target) != 0)
		return walk_said(-1, where, wlen, "path too long");
	return 2;
}

int
mnt_plan_path_reachable(
    const struct mnt_plan *p, const char *path, char *where, size_t wlen)
{
	char cur[PATH_MAX] = "", todo[PATH_MAX], dir[PATH_MAX], *slash;
	int hops = 0, r = 2;
	size_t len;

	if (path[0] != '/' && getcwd(dir, sizeof(dir)) == NULL)
		return walk_said(
		    -1, where, wlen, "getcwd: %s", strerror(errno));
	if (snprintf(todo, sizeof(todo), "%s/%s", path[0] == '/' ? "" : dir,
	        path) >= (int)sizeof(todo))
		return walk_said(-1, where, wlen, "path too long");
	while (r == 2) {
		memmove(todo, todo + strspn(todo, "/"),
		    strlen(todo + strspn(todo, "/")) + 1);
		if (todo[0] == '\0')
			break;
		len = strcspn(todo, "/");
		if ((len == 1 && todo[0] == '.') ||
		    (len == 2 && todo[0] == '.' && todo[1] == '.')) {
			/* CUR is resolved: its parent is the real one. */
			if (len == 2 && (slash = strrchr(cur, '/')) != NULL)
				*slash = '\0';
			memmove(todo, todo + len, strlen(todo + len) + 1);
			continue;
		}
		r = walk_step(p, cur, todo, len, &hops, where, wlen);
	}
	if (r == 2 && mnt_plan_is_writable(p, cur[0] ? cur : "/"))
		return walk_said(1, where, wlen, "%s", cur[0] ? cur : "/");
	return r == 2 ? 0 : r;
}

int
mnt_plan_check_home(
    const struct mnt_plan *p, const char *home, char *err, size_t errlen)
{
	char *real;
	size_t i;
	int r = 0;

	if (home == NULL || home[0] != '/' ||
	    (real = realpath(home, NULL)) == NULL)
		return 0;
	if (!beneath(real, p->cwd))
		goto out;
	/* Made writable on purpose: --bind of the start directory. */
	for (i = 0; i < p->nops; i++)
		if (p->ops[i].kind == MNT_BIND &&
		    strcmp(p->ops[i].src, p->cwd) == 0)
			goto out;
	ph_errf(err, errlen,
	    "the start directory %s holds the home directory %s, which would "
	    "let the sandbox plant ~/.bashrc, ~/.gitconfig, "
	    "~/.config/systemd/user or ~/.local/bin for code that runs "
	    "outside later; cd to a project directory, or give --bind %s to "
	    "make it writable on purpose",
	    p->cwd, real, p->cwd);
	r = -1;
out:
	free(real);
	return r;
}

static int
prepare_git(const char *src, char *err, size_t errlen)
{
	char path[PATH_MAX];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/.git", src);
	if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		snprintf(path, sizeof(path), "%s/.git/hooks", src);
		if (mkdir(path, 0755) != 0 && errno != EEXIST) {
			ph_errf(err, errlen, "%s: %s", path, strerror(errno));
			return -1;
		}
	}
	return 0;
}

int
mnt_plan_prepare_git(struct mnt_plan *p, char *err, size_t errlen)
{
	size_t i;

	if (p->allow_git_config)
		return 0;
	if (prepare_git(p->cwd, err, errlen) != 0)
		return -1;
	for (i = 0; i < p->nops; i++)
		if (p->ops[i].kind == MNT_BIND &&
		    prepare_git(p->ops[i].src, err, errlen) != 0)
			return -1;
	return 0;
}

int
mnt_plan_git_roots(const struct mnt_plan *p,
    int (*fn)(void *, const char *, const char *), void *arg)
{
	size_t i;

	if (p->allow_git_config)
		return 0;
	if (fn(arg, p->cwd, p->cwd) != 0)
		return -1;
	for (i = 0; i < p->nops; i++)
		if (p->ops[i].kind == MNT_BIND &&
		    fn(arg, p->ops[i].dst, p->ops[i].src) != 0)
			return -1;
	return 0;
}

void
mnt_plan_writable_dirs(
    const struct mnt_plan *p, void (*fn)(void *, const char *), void *arg)
{
	size_t i;

	fn(arg, p->cwd);
	fn(arg, "/tmp");
	fn(arg, "/dev/shm");
	if (p->home != NULL)
		fn(arg, p->home);
	for (i = 0; i < p->nops; i++)
		if (p->ops[i].kind == MNT_BIND || p->ops[i].kind == MNT_TMPFS ||
		    p->ops[i].kind == MNT_CACHE)
			fn(arg, p->ops[i].dst);
}

const char *
mnt_plan_cwd(const struct mnt_plan *p)
{
	return p->cwd;
}

/* --- detached trees (inside) ---------------------------------------------- */

/* A detached copy of PATH and what is mounted beneath it. */
static int
tree_clone(const char *path, int ro, int recursive)
{
	struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY};
	int fd, saved;

	fd = open_tree(AT_FDCWD, path,
	    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
	        (recursive ? AT_RECURSIVE : 0));
	if (fd < 0 || !ro)
		return fd;
	if (mount_setattr(
	        fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a)) != 0) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

/* A new, detached tmpfs with MODE at its root. */
static int
tmpfs_new(const char *mode, unsigned attrs)
{
	int fs, mnt = -1;

	if ((fs = fsopen("tmpfs", FSOPEN_CLOEXEC)) < 0)
		return -1;
	if (fsconfig(fs, FSCONFIG_SET_STRING, "mode", mode, 0) == 0 &&
	    fsconfig(fs, FSCONFIG_SET_STRING, "size", "50%", 0) == 0 &&
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
		mnt = fsmount(fs, FSMOUNT_CLOEXEC, attrs);
	close(fs);
	return mnt;
}

/* Attaches detached TREE at DST (resolved in the current root). */
static int
attach(int tree, const char *dst)
{
	int r = move_mount(tree, "", AT_FDCWD, dst,
	    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_SYMLINKS);
	int saved = errno;

	close(tree);
	errno = saved;
	return r;
}

/*
 * DST in the view, with no symbolic link on the way (O_PATH): what the
 * plan names was resolved outside, so a link there now was planted or
 * made by a bind.  -1 with errno (ELOOP for a link).
 */
static int
open_dst(const char *dst)
{
	struct open_how how = {
	    .flags = O_PATH | O_CLOEXEC,
	    .resolve = RESOLVE_NO_SYMLINKS,
	};

	return (int)syscall(SYS_openat2, AT_FDCWD, dst, &how, sizeof(how));
}

/* Attaches detached TREE at DST, following no symbolic link. */
static int
attach_nofollow(int tree, const char *dst)
{
	int fd = open_dst(dst), r = -1, saved;

	if (fd >= 0)
		r = move_mount(tree, "", fd, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
	saved = errno;
	if (fd >= 0)
		close(fd);
	close(tree);
	errno = saved;
	return r;
}

/* --- building the view (inside) ------------------------------------------- */

struct view {
	const struct mnt_plan *p;
	int root, cwd, empty; /* detached trees; EMPTY: a read-only tmpfs */
	int home; /* the detached overlay of the home, or -1 */
	int dev[DEV_NODES_MAX];
	int *git; /* per writable bind: hooks, config (or -1) */
	size_t ngit;
	char *err;
	size_t errlen;
};

static int
failed(struct view *v, const char *what, const char *path)
{
	ph_errf(v->err, v->errlen, "mount view: %s %s: %s", what, path,
	    strerror(errno));
	return -1;
}

static int
git_failed(struct view *v, const char *path, const char *why)
{
	ph_errf(v->err, v->errlen, "git guard %s: %s", path, why);
	return -1;
}

/*
 * Captures the git guards of writable bind SRC (read-only but for .git).
 * A guard is there and copied, or absent (the post-run sweep covers what
 * appears later), or the run stops: a symbolic link would be followed by
 * git to where no guard is, so it is refused rather than left out.
 */
static int
capture_git(struct view *v, const char *src)
{
	char path[PATH_MAX];
	struct stat sb;
	size_t i;
	int *g, file;

	v->git = xreallocarray(v->git, v->ngit + GIT_GUARDS, sizeof(*v->git));
	g = &v->git[v->ngit];
	v->ngit += GIT_GUARDS;
	for (i = 0; i < GIT_GUARDS; i++)
		g[i] = -1;
	if (v->p->allow_git_config)
		return 0;
	for (i = 0; i < GIT_GUARDS; i++) {
		snprintf(path, sizeof(path), "%s/%s", src, git_guards[i].name);
		if (lstat(path, &sb) != 0) {
			if (errno == ENOENT && i == 0)
				return 0; /* not a repository */
			if (errno == ENOENT)
				continue;
			return git_failed(v, path, strerror(errno));
		}
		if (S_ISLNK(sb.st_mode))
			return git_failed(v, path,
			    "a symbolic link, which a guard cannot pin "
			    "(make it a real file or directory, or use "
			    "--allow-git-config)");
		/* A worktree's .git is a file naming its git dir: read-only. */
		file = i == 0 && !S_ISDIR(sb.st_mode);
		if ((g[i] = tree_clone(path, git_guards[i].ro || file, 1)) < 0)
			return git_failed(v, path, strerror(errno));
		if (file)
			break;
	}
	return 0;
}

/* Why the home stayed read-only (mnt_home_note), or "". */
static char home_note[320];

/*
 * The overlay itself, its layers named by path: the home through LOW (a
 * descriptor: the path is covered by now), upper and work on the tmpfs
 * over it.  userxattr: in a user namespace overlayfs may keep its marks
 * only in user.* attributes.  Returns the detached overlay, or -1.
 */
static int
overlay_new(int low, const char *upper, const char *work)
{
	char lower[64];
	int fs, mnt = -1;

	snprintf(lower, sizeof(lower), "/proc/self/fd/%d", low);
	if ((fs = fsopen("overlay", FSOPEN_CLOEXEC)) < 0)
		return -1;
	if (fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir", lower, 0) == 0 &&
	    fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", upper, 0) == 0 &&
	    fsconfig(fs, FSCONFIG_SET_STRING, "workdir", work, 0) == 0 &&
	    fsconfig(fs, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) == 0 &&
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
		mnt = fsmount(
		    fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	close(fs);
	return mnt;
}

/*
 * The home under a per-run writable layer, built while the host's paths
 * resolve (the home may lie under /tmp, which the view replaces): a
 * tmpfs is put over the home for a moment to hold the upper and work
 * directories (this namespace's own mount, never the host's), the
 * overlay made, the tmpfs taken off again (the overlay keeps it).  The
 * upper root takes the home's mode, which the overlay's root shows.  On
 * failure the home stays the host's, read-only, and home_note says why.
 */
static void
capture_home(struct view *v)
{
	const char *home = v->p->home;
	char upper[PATH_MAX], work[PATH_MAX];
	struct stat sb;
	int low, t = -1, covered = 0;

	snprintf(upper, sizeof(upper), "%s/upper", home);
	snprintf(work, sizeof(work), "%s/work", home);
	if ((low = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    fstat(low, &sb) != 0 ||
	    (t = tmpfs_new("0700", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) < 0 ||
	    move_mount(t, "", AT_FDCWD, home, MOVE_MOUNT_F_EMPTY_PATH) != 0)
		goto fail;
	covered = 1;
	if (mkdir(upper, sb.st_mode & 07777) != 0 ||
	    chmod(upper, sb.st_mode & 07777) != 0 || mkdir(work, 0700) != 0 ||
	    (v->home = overlay_new(low, upper, work)) < 0)
		goto fail;
	goto out;
fail:
	snprintf(home_note, sizeof(home_note),
	    "the home %s stays read-only, with no tool cache: overlayfs: %s",
	    home, strerror(errno));
out:
	if (covered)
		(void)umount2(home, MNT_DETACH);
	if (t >= 0)
		close(t);
	if (low >= 0)
		close(low);
}

const char *
mnt_home_note(void)
{
	return home_note[0] ? home_note : NULL;
}

/* A read-only tmpfs holding an empty directory and an empty file. */
static int
make_empty(struct view *v)
{
	struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY};
	int fd;

	if ((v->empty = tmpfs_new("0755",
	         MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)) < 0)
		return failed(v, "create", "an empty tmpfs");
	if (mkdirat(v->empty, "dir", 0755) != 0)
		return failed(v, "create", "an empty directory");
	if ((fd = openat(
	         v->empty, "file", O_CREAT | O_WRONLY | O_CLOEXEC, 0444)) < 0)
		return failed(v, "create", "an empty file");
	close(fd);
	if (mount_setattr(v->empty, "", AT_EMPTY_PATH, &a, sizeof(a)) != 0)
		return failed(v, "make read-only", "the empty tmpfs");
	return 0;
}

/* Everything the view needs from the host, before the root changes. */
static int
capture(struct view *v)
{
	struct mnt_op *op;
	char path[64];
	size_t i;

	if ((v->root = tree_clone("/", 1, 1)) < 0)
		return failed(v, "copy", "/");
	if ((v->cwd = tree_clone(v->p->cwd, 0, 1)) < 0)
		return failed(v, "copy", v->p->cwd);
	if (capture_git(v, v->p->cwd) != 0)
		return -1;
	for (i = 0; i < sizeof(dev_nodes) / sizeof(dev_nodes[0]); i++) {
		snprintf(path, sizeof(path), "/dev/%s", dev_nodes[i]);
		v->dev[i] = tree_clone(path, 0, 0); /* -1: not on this host */
	}
	for (i = 0; i < v->p->nops; i++) {
		op = &v->p->ops[i];
		if (op->kind == MNT_CACHE && op->src != NULL) {
			if ((op->tree = tree_clone(op->src, 0, 1)) < 0)
				return failed(v, "copy", op->src);
			continue;
		}
		if (op->kind != MNT_BIND && op->kind != MNT_RO_BIND)
			continue;
		if ((op->tree = tree_clone(
		         op->src, op->kind == MNT_RO_BIND, 1)) < 0)
			return failed(v, "copy", op->src);
		if (op->kind == MNT_BIND && capture_git(v, op->src) != 0)
			return -1;
	}
	if (make_empty(v) != 0)
		return -1;
	if (v->p->home != NULL && !v->p->home_fresh)
		capture_home(v);
	return 0;
}

/* The read-only copy of "/" becomes the root; the old one goes. */
static int
enter_root(struct view *v)
{
	/* Any directory will do as a stand: it is detached right after. */
	if (attach(v->root, "/tmp") != 0) {
		v->root = -1;
		return failed(v, "attach the root copy at", "/tmp");
	}
	v->root = -1;
	if (chdir("/tmp") != 0 || syscall(SYS_pivot_root, ".", ".") != 0 ||
	    umount2(".", MNT_DETACH) != 0 || chdir("/") != 0)
		return failed(v, "pivot_root to", "the root copy");
	return 0;
}

/*
 * A mount point for OPT (--bind, --tmpfs) that could not be made: on the
 * read-only / the user has to make it outside first.
 */
static int
no_mountpoint(struct view *v, const char *opt, const char *dst)
{
	if (errno != EROFS)
		return failed(v, "make a mount point at", dst);
	ph_errf(v->err, v->errlen,
	    "%s %s: it does not exist and the sandbox's / is read-only, so "
	    "no mount point can be made for it; create it outside first "
	    "(mkdir -p %s), or choose a path under the home, /tmp or the "
	    "start directory",
	    opt, dst, dst);
	return -1;
}

/* mkdir -p of PATH's parent, where the view is writable (a tmpfs). */
static int
make_parents(const char *path)
{
	char buf[PATH_MAX], *p;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (p = buf + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return 0;
}

/*
 * A mount point at PATH inside the view, for a file or a directory; it
 * can be made only where the view is writable already (a tmpfs, a bind).
 */
static int
mountpoint(const char *path, int dir)
{
	struct stat sb;
	int fd;

	/* A link stays and is refused when attached (open_dst). */
	if (lstat(path, &sb) == 0)
		return 0;
	if (make_parents(path) != 0)
		return -1;
	if (dir)
		return mkdir(path, 0755);
	if ((fd = open(path,
	         O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC, 0644)) <
	    0)
		return -1;
	close(fd);
	return 0;
}

static int
populate_dev(struct view *v, int dev)
{
	static const char *const links[][2] = {
	    {"ptmx", "pts/ptmx"},
	    {"fd", "/proc/self/fd"},
	    {"stdin", "/proc/self/fd/0"},
	    {"stdout", "/proc/self/fd/1"},
	    {"stderr", "/proc/self/fd/2"},
	};
	size_t i;
	int fd;

	if (mkdirat(dev, "pts", 0755) != 0 || mkdirat(dev, "shm", 01777) != 0)
		return failed(v, "populate", "/dev");
	for (i = 0; i < sizeof(dev_nodes) / sizeof(dev_nodes[0]); i++) {
		if (v->dev[i] < 0)
			continue;
		if ((fd = openat(dev, dev_nodes[i],
		         O_CREAT | O_WRONLY | O_CLOEXEC, 0666)) < 0)
			return failed(v, "populate", "/dev");
		close(fd);
	}
	for (i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		if (symlinkat(links[i][1], dev, links[i][0]) != 0)
			return failed(v, "populate", "/dev");
	return 0;
}

static int
mount_dev(struct view *v)
{
	char path[64];
	size_t i;
	int dev, shm;

	if ((dev = tmpfs_new("0755", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC)) <
	    0)
		return failed(v, "create", "/dev");
	if (populate_dev(v, dev) != 0 || attach(dev, "/dev") != 0)
		return failed(v, "mount", "/dev");
	for (i = 0; i < sizeof(dev_nodes) / sizeof(dev_nodes[0]); i++) {
		if (v->dev[i] < 0)
			continue;
		snprintf(path, sizeof(path), "/dev/%s", dev_nodes[i]);
		if (attach(v->dev[i], path) != 0) {
			v->dev[i] = -1;
			return failed(v, "bind", path);
		}
		v->dev[i] = -1;
	}
	if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
	        "newinstance,ptmxmode=0666,mode=620") != 0)
		return failed(v, "mount", "/dev/pts");
	if ((shm = tmpfs_new("1777", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) <
	        0 ||
	    attach(shm, "/dev/shm") != 0)
		return failed(v, "mount", "/dev/shm");
	return 0;
}

/*
 * What in /proc writes to the host (sysctls, sysrq, interrupts, PCI),
 * bound over itself read-only: the mount refuses the write even where
 * Landlock is missing and the command is root.  An entry this kernel
 * lacks is not there to protect.
 */
static int
proc_readonly(struct view *v)
{
	size_t i;
	int t;

	for (i = 0; i < sizeof(proc_ro) / sizeof(proc_ro[0]); i++) {
		if ((t = tree_clone(proc_ro[i], 1, 1)) < 0) {
			if (errno == ENOENT)
				continue;
			return failed(v, "make read-only", proc_ro[i]);
		}
		if (attach_nofollow(t, proc_ro[i]) != 0)
			return failed(v, "make read-only", proc_ro[i]);
	}
	return 0;
}

static int hide(struct view *, const char *);

/*
 * The tool caches (MNT_CACHE), in the writable home: a cache whose mount
 * point cannot be made (a link or a file there, a read-only parent) is
 * left out, and the tool writes to the home's per-run layer instead.
 */
static void
mount_caches(struct view *v)
{
	struct mnt_op *op;
	size_t i;
	int t;

	for (i = 0; i < v->p->nops; i++) {
		op = &v->p->ops[i];
		if (op->kind != MNT_CACHE)
			continue;
		t = op->src != NULL
		    ? op->tree
		    : tmpfs_new("0755", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
		op->tree = -1;
		if (t >= 0 && mountpoint(op->dst, 1) != 0) {
			close(t);
			continue;
		}
		if (t >= 0)
			(void)attach_nofollow(t, op->dst);
	}
}

/*
 * The home: the overlay made in capture_home, or a fresh tmpfs; then the
 * caches in it.  Without the overlay (home_note) it stays as the root
 * copy has it: the host's, read-only.
 */
static int
mount_home(struct view *v)
{
	const char *home = v->p->home;
	int t, r;

	if (home == NULL)
		return 0;
	/* Read-only, as the root copy has it (home_note): no cache. */
	if (v->home < 0 && !v->p->home_fresh)
		return v->p->cache_root ? hide(v, v->p->cache_root) : 0;
	if (mountpoint(home, 1) != 0)
		return failed(v, "make a mount point at", home);
	if (v->p->home_fresh)
		t = tmpfs_new("0700", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	else
		t = v->home;
	v->home = -1;
	r = t < 0 ? -1 : attach_nofollow(t, home);
	if (r != 0)
		return failed(v, "mount the home at", home);
	/* Seen through the home's layer, before a cache bind covers it. */
	if (v->p->cache_root != NULL && hide(v, v->p->cache_root) != 0)
		return -1;
	mount_caches(v);
	return 0;
}

static int
mount_base(struct view *v)
{
	int tmp;

	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	        NULL) != 0)
		return failed(v, "mount", "/proc");
	if (proc_readonly(v) != 0 || mount_dev(v) != 0)
		return -1;
	if ((tmp = tmpfs_new("1777", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) <
	        0 ||
	    attach(tmp, "/tmp") != 0)
		return failed(v, "mount", "/tmp");
	if (mount_home(v) != 0)
		return -1;
	/* Under /tmp, the start directory needs a mount point again. */
	if (mountpoint(v->p->cwd, 1) != 0)
		return failed(v, "make a mount point at", v->p->cwd);
	if (attach_nofollow(v->cwd, v->p->cwd) != 0) {
		v->cwd = -1;
		return failed(v, "bind", v->p->cwd);
	}
	v->cwd = -1;
	return 0;
}

/*
 * DST appears empty: a read-only empty directory or file over it.  DST
 * was resolved outside (mnt_plan_add); it is attached through no link.
 * Skipped only when there is nothing to hide: the path does not exist,
 * a component is not a directory, it is a link to nothing, or a
 * directory on the way is closed to pinhole (EACCES: the command, the
 * same uid with no capability, cannot pass it or change its mode).
 * Anything else stops the run.
 */
static int
hide(struct view *v, const char *dst)
{
	struct stat sb;
	int fd, t;

	if ((fd = open_dst(dst)) < 0) {
		if (errno == ENOENT || errno == ENOTDIR || errno == EACCES)
			return 0;
		if (errno == ELOOP && stat(dst, &sb) != 0 && errno == ENOENT)
			return 0;
		/* ELOOP: a link appeared there since the plan. */
		return failed(v, "hide", dst);
	}
	if (fstat(fd, &sb) != 0) {
		close(fd);
		return failed(v, "hide", dst);
	}
	t = open_tree(v->empty, S_ISDIR(sb.st_mode) ? "dir" : "file",
	    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (t < 0 ||
	    move_mount(t, "", fd, "",
	        MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
		if (t >= 0)
			close(t);
		close(fd);
		return failed(v, "hide", dst);
	}
	close(t);
	close(fd);
	return 0;
}

static int
user_step(struct view *v, struct mnt_op *op)
{
	int t;

	switch (op->kind) {
	case MNT_BIND:
	case MNT_RO_BIND: {
		struct stat sb;

		if (fstat(op->tree, &sb) != 0)
			return failed(v, "bind", op->dst);
		if (mountpoint(op->dst, S_ISDIR(sb.st_mode)) != 0)
			return no_mountpoint(v,
			    op->kind == MNT_BIND ? "--bind" : "--ro-bind",
			    op->dst);
		if (attach_nofollow(op->tree, op->dst) != 0) {
			op->tree = -1;
			return failed(v, "bind", op->dst);
		}
		op->tree = -1;
		return 0;
	}
	case MNT_TMPFS:
		if (mountpoint(op->dst, 1) != 0)
			return no_mountpoint(v, "--tmpfs", op->dst);
		if ((t = tmpfs_new(
		         "0755", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) < 0 ||
		    attach_nofollow(t, op->dst) != 0)
			return failed(v, "mount a tmpfs at", op->dst);
		return 0;
	case MNT_HIDE:
	case MNT_FILE:
		return 0; /* after every bind: see mnt_apply */
	case MNT_CACHE:
		return 0; /* with the home: mount_home */
	}
	return 0;
}

/* Writes LEN bytes of DATA to NAME ("DIR/FILE" makes DIR) in tree T. */
static int
tree_write(int t, const char *name, const void *data, size_t len)
{
	char dir[NAME_MAX];
	const char *slash = strchr(name, '/');
	int fd, ok;

	if (slash != NULL) {
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - name), name);
		if (mkdirat(t, dir, 0755) != 0 && errno != EEXIST)
			return -1;
	}
	if ((fd = openat(
	         t, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0444)) < 0)
		return -1;
	ok = write(fd, data, len) == (ssize_t)len;
	close(fd);
	return ok ? 0 : -1;
}

/* A tree's files on a tmpfs of their own, read-only, at its destination. */
static int
put_tree(struct view *v, const struct mnt_op *op)
{
	struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY};
	size_t i;
	int t, r = -1;

	if ((t = tmpfs_new("0755",
	         MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)) < 0)
		return failed(v, "put files at", op->dst);
	for (i = 0; i < op->nfiles; i++)
		if (tree_write(t, op->files[i].name, op->files[i].data,
		        op->files[i].len) != 0)
			break;
	if (i == op->nfiles &&
	    mount_setattr(t, "", AT_EMPTY_PATH, &a, sizeof(a)) == 0 &&
	    mountpoint(op->dst, 1) == 0) {
		r = attach_nofollow(t, op->dst);
		t = -1;
	}
	if (r != 0)
		failed(v, "put files at", op->dst);
	if (t >= 0)
		close(t);
	return r;
}

/* OP's contents, read-only, at its destination. */
static int
put_file(struct view *v, const struct mnt_op *op)
{
	struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY};
	int t, fd, f = -1, r = -1, written;

	if (op->files != NULL)
		return put_tree(v, op);
	if ((t = tmpfs_new("0755",
	         MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)) <
	        0 ||
	    (fd = openat(t, "file", O_CREAT | O_WRONLY | O_CLOEXEC, 0444)) <
	        0) {
		failed(v, "put a file at", op->dst);
		goto out;
	}
	written = write(fd, op->data, op->len) == (ssize_t)op->len;
	close(fd); /* a mount with a file open for writing stays writable */
	if (!written ||
	    mount_setattr(t, "", AT_EMPTY_PATH, &a, sizeof(a)) != 0 ||
	    (f = open_tree(t, "file", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)) <
	        0 ||
	    mountpoint(op->dst, 0) != 0) {
		failed(v, "put a file at", op->dst);
		goto out;
	}
	r = attach_nofollow(f, op->dst);
	f = -1;
	if (r != 0)
		failed(v, "put a file at", op->dst);
out:
	if (f >= 0)
		close(f);
	if (t >= 0)
		close(t);
	return r;
}

/*
 * The git guards of writable bind DST, attached where they were copied
 * from; never through a symbolic link (one there now is not what was
 * copied).
 */
static int
protect_git(struct view *v, const char *dst, int *g)
{
	char path[PATH_MAX];
	struct stat sb;
	size_t i;

	for (i = 0; i < GIT_GUARDS; i++) {
		if (g[i] < 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dst, git_guards[i].name);
		if (lstat(path, &sb) != 0)
			return failed(v, "guard git's", path);
		if (S_ISLNK(sb.st_mode)) {
			errno = ELOOP;
			return failed(v, "guard git's", path);
		}
		if (attach(g[i], path) != 0) {
			g[i] = -1;
			return failed(v, "guard git's", path);
		}
		g[i] = -1;
	}
	return 0;
}

static int
finish(struct view *v)
{
	const struct mnt_plan *p = v->p;
	size_t i, g = 0;

	for (i = 0; i < p->nops; i++)
		if (p->ops[i].kind == MNT_FILE && put_file(v, &p->ops[i]) != 0)
			return -1;
	for (i = 0; i < p->nops; i++)
		if (p->ops[i].kind == MNT_HIDE && hide(v, p->ops[i].dst) != 0)
			return -1;
	if (protect_git(v, p->cwd, &v->git[g]) != 0)
		return -1;
	for (i = 0, g = GIT_GUARDS; i < p->nops; i++)
		if (p->ops[i].kind == MNT_BIND) {
			if (protect_git(v, p->ops[i].dst, &v->git[g]) != 0)
				return -1;
			g += GIT_GUARDS;
		}
	return 0;
}

static void
view_close(struct view *v)
{
	size_t i;

	if (v->root >= 0)
		close(v->root);
	if (v->cwd >= 0)
		close(v->cwd);
	if (v->empty >= 0)
		close(v->empty);
	if (v->home >= 0)
		close(v->home);
	for (i = 0; i < DEV_NODES_MAX; i++)
		if (v->dev[i] >= 0)
			close(v->dev[i]);
	for (i = 0; i < v->ngit; i++)
		if (v->git[i] >= 0)
			close(v->git[i]);
	free(v->git);
	for (i = 0; i < v->p->nops; i++)
		if (v->p->ops[i].tree >= 0) {
			close(v->p->ops[i].tree);
			v->p->ops[i].tree = -1;
		}
}

int
mnt_apply(const struct mnt_plan *p, char *err, size_t errlen)
{
	struct view v;
	size_t i;
	int r = -1;

	memset(&v, 0, sizeof(v));
	v.p = p;
	v.root = v.cwd = v.empty = v.home = -1;
	for (i = 0; i < DEV_NODES_MAX; i++)
		v.dev[i] = -1;
	v.err = err;
	v.errlen = errlen;
	/* Nothing done here may reach the host's mount namespace. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0) {
		failed(&v, "make private", "/");
		goto out;
	}
	if (capture(&v) != 0 || enter_root(&v) != 0 || mount_base(&v) != 0)
		goto out;
	for (i = 0; i < p->nops; i++)
		if (user_step(&v, &p->ops[i]) != 0)
			goto out;
	if (finish(&v) != 0)
		goto out;
	r = 0;
out:
	view_close(&v);
	return r;
}
