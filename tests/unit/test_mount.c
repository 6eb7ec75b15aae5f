/*
 * test_mount.c: unit tests of netns/mount.c, the sandbox's mount view.
 *
 * The plan functions run in the test process on a mkdtemp tree under
 * /tmp (TOP):
 *
 *	a/		the start directory: a Git repository (.git/config,
 *			.git/HEAD, no hooks), sub/, secret/key, secret.txt,
 *			home/.ssh/id, home/.netrc
 *	ab/		a sibling whose name starts with "a"
 *	link		-> a
 *	ro/f		bound read-only
 *	rw/		bound read-write, a repository too (.git/config)
 *	nogit/		no repository; wt/ has a worktree's .git file
 *
 * mnt_apply runs for real in a grandchild: the child enters new user,
 * mount and PID namespaces and maps its uid and gid to themselves; its
 * child is PID 1 of the new namespace, which a fresh /proc needs.  That
 * grandchild builds the view and checks it; the first failed check ends
 * it with status 1 and one line on stderr, and the parent asserts 0.
 */
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/magic.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "netns/mount.h"
#include "tests/unit/fixture.h"

#define MAXDIRS 16

struct fixture {
	char top[PATH_MAX]; /* resolved */
};

/* The tree's top, for P(). */
static const char *topdir;

/* TOP/NAME of the scratch tree (fixture.h). */
#define P(name) fixture_path(name)

static int
setup(void **state)
{
	struct fixture *f;
	char tmpl[] = "/tmp/test_mount.XXXXXX", *real;

	if ((f = calloc(1, sizeof(*f))) == NULL || mkdtemp(tmpl) == NULL ||
	    (real = realpath(tmpl, NULL)) == NULL)
		return -1;
	/* Readable by all: the view checks run as whoever we are. */
	chmod(tmpl, 0755);
	snprintf(f->top, sizeof(f->top), "%s", real);
	free(real);
	topdir = f->top;
	fixture_tree_top(topdir);
	fixture_mkdir("a");
	fixture_mkdir("a/.git");
	fixture_mkfile("a/.git/config", "[core]\n");
	fixture_mkfile("a/.git/HEAD", "ref: refs/heads/main\n");
	fixture_mkdir("a/sub");
	fixture_mkdir("a/secret");
	fixture_mkfile("a/secret/key", "KEY");
	fixture_mkfile("a/secret.txt", "s3cret");
	fixture_mkdir("a/home");
	fixture_mkdir("a/home/.ssh");
	fixture_mkfile("a/home/.ssh/id", "ID");
	fixture_mkfile("a/home/.netrc", "machine x password y");
	fixture_mkdir("ab");
	assert_int_equal(symlink("a", P("link")), 0);
	fixture_mkdir("ro");
	fixture_mkfile("ro/f", "ro-data");
	fixture_mkdir("rw");
	fixture_mkdir("rw/.git");
	fixture_mkfile("rw/.git/config", "[core]\n");
	fixture_mkdir("nogit");
	fixture_mkdir("wt");
	fixture_mkfile("wt/.git", "gitdir: /elsewhere\n");
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	fixture_rmtree(f->top);
	free(f);
	topdir = NULL;
	return 0;
}

static int
is_dir(const char *path)
{
	struct stat sb;

	return lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static struct mnt_plan *
plan_at(const char *cwd)
{
	char err[512] = "";
	struct mnt_plan *p = mnt_plan_new(cwd, err, sizeof(err));

	if (p == NULL)
		fail_msg("mnt_plan_new %s: %s", cwd, err);
	return p;
}

static void
add(struct mnt_plan *p, enum mnt_kind kind, const char *src, const char *dst)
{
	char err[512] = "";

	if (mnt_plan_add(p, kind, src, dst, err, sizeof(err)) != 0)
		fail_msg("mnt_plan_add %s %s: %s", src ? src : "-",
		    dst ? dst : "-", err);
}

/* --- the plan ------------------------------------------------------------- */

/* "/" as the start directory would make the whole tree writable. */
static void
test_new_refuses_root(void **state)
{
	static const char *const roots[] = {"/", "//", "/tmp/..", "/./"};
	char err[512];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		err[0] = '\0';
		assert_null(mnt_plan_new(roots[i], err, sizeof(err)));
		assert_non_null(strstr(err, "start directory is /"));
	}
}

/* Shared directories, and what holds them, are refused; below: fine. */
static void
test_new_refuses_shared(void **state)
{
	static const char *const shared[] = {
	    "/tmp", "/tmp/", "/var/tmp", "/var", "/dev/shm", "/dev", "/run"};
	struct mnt_plan *p;
	char err[512];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(shared) / sizeof(shared[0]); i++) {
		err[0] = '\0';
		assert_null(mnt_plan_new(shared[i], err, sizeof(err)));
		assert_non_null(strstr(err, "every user and service shares"));
	}
	/* The fixture's directory lies below /tmp (or $TMPDIR). */
	assert_non_null(p = mnt_plan_new(topdir, err, sizeof(err)));
	mnt_plan_free(p);
}

static void
test_new_missing(void **state)
{
	char err[512] = "";

	(void)state;
	assert_null(mnt_plan_new(P("missing"), err, sizeof(err)));
	assert_non_null(strstr(err, P("missing")));
	assert_non_null(strstr(err, strerror(ENOENT)));
}

/* Symbolic links, "..", "." and relative paths: the resolved path. */
static void
test_new_resolves(void **state)
{
	struct mnt_plan *p;
	int here;

	(void)state;
	p = plan_at(P("link"));
	assert_string_equal(mnt_plan_cwd(p), P("a"));
	mnt_plan_free(p);
	p = plan_at(P("a/sub/../../link/./sub"));
	assert_string_equal(mnt_plan_cwd(p), P("a/sub"));
	mnt_plan_free(p);
	assert_true(
	    (here = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0);
	assert_int_equal(chdir(topdir), 0);
	p = mnt_plan_new("link", NULL, 0);
	assert_int_equal(fchdir(here), 0);
	close(here);
	assert_non_null(p);
	assert_string_equal(mnt_plan_cwd(p), P("a"));
	mnt_plan_free(p);
	mnt_plan_free(NULL);
}

static void
test_add_errors(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));
	char err[512];

	(void)state;
	err[0] = '\0';
	assert_int_equal(
	    mnt_plan_add(p, MNT_BIND, P("missing"), NULL, err, sizeof(err)),
	    -1);
	assert_non_null(strstr(err, P("missing")));
	assert_non_null(strstr(err, strerror(ENOENT)));
	err[0] = '\0';
	assert_int_equal(
	    mnt_plan_add(p, MNT_RO_BIND, P("missing"), "/x", err, sizeof(err)),
	    -1);
	assert_non_null(strstr(err, P("missing")));
	err[0] = '\0';
	assert_int_equal(
	    mnt_plan_add(p, MNT_BIND, P("rw"), "rel/dst", err, sizeof(err)),
	    -1);
	assert_non_null(strstr(err, "rel/dst"));
	err[0] = '\0';
	assert_int_equal(
	    mnt_plan_add(p, MNT_TMPFS, NULL, "scratch", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "scratch"));
	err[0] = '\0';
	assert_int_equal(
	    mnt_plan_add(p, MNT_HIDE, NULL, "", err, sizeof(err)), -1);
	err[0] = '\0';
	assert_int_equal(
	    mnt_plan_add(p, MNT_HIDE, NULL, NULL, err, sizeof(err)), -1);
	assert_true(err[0] != '\0');
	/* None of the refused steps made it in: nothing but the defaults. */
	assert_int_equal(mnt_plan_is_writable(p, P("rw")), 0);
	mnt_plan_free(p);
}

/* A missing path to hide is fine: it is skipped when applied. */
static void
test_add_accepts(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));
	char err[512] = "";

	(void)state;
	assert_int_equal(
	    mnt_plan_add(p, MNT_HIDE, NULL, P("a/nothere"), err, sizeof(err)),
	    0);
	assert_int_equal(
	    mnt_plan_add(p, MNT_TMPFS, NULL, "/opt/t", err, sizeof(err)), 0);
	assert_int_equal(
	    mnt_plan_add(p, MNT_RO_BIND, P("ro"), NULL, err, sizeof(err)), 0);
	assert_int_equal(
	    mnt_plan_add(p, MNT_BIND, P("rw"), "/opt/rw", err, sizeof(err)), 0);
	mnt_plan_free(p);
}

/* A mount of pinhole's own at a path meets the user's near it. */
static void
test_touches(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));

	(void)state;
	add(p, MNT_TMPFS, NULL, P("t"));
	add(p, MNT_BIND, P("rw"), "/opt/rw");
	assert_int_equal(mnt_plan_touches(p, P("t")), 1);
	assert_int_equal(mnt_plan_touches(p, P("t/lists")), 1); /* beneath */
	assert_int_equal(mnt_plan_touches(p, topdir), 1); /* holds them */
	assert_int_equal(mnt_plan_touches(p, "/opt/rw/x"), 1); /* a dst */
	assert_int_equal(mnt_plan_touches(p, P("a/sub")), 1); /* the cwd */
	/* A common prefix is not a parent; "/" holds all and counts not. */
	assert_int_equal(mnt_plan_touches(p, P("tt")), 0);
	assert_int_equal(mnt_plan_touches(p, P("rw")), 0); /* a bind's src */
	assert_int_equal(mnt_plan_touches(p, "/var/lib/apt/lists"), 0);
	assert_int_equal(mnt_plan_touches(p, "/"), 0);
	mnt_plan_free(p);
}

static void
test_is_writable(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));

	(void)state;
	add(p, MNT_BIND, P("rw"), NULL);
	add(p, MNT_RO_BIND, P("ro"), NULL);
	add(p, MNT_TMPFS, NULL, P("t"));
	add(p, MNT_HIDE, NULL, P("a/secret"));
	assert_int_equal(mnt_plan_is_writable(p, P("a")), 1);
	assert_int_equal(mnt_plan_is_writable(p, P("a/sub")), 1);
	assert_int_equal(mnt_plan_is_writable(p, P("a/sub/not/yet")), 1);
	/* A common prefix is not a parent. */
	assert_int_equal(mnt_plan_is_writable(p, P("ab")), 0);
	assert_int_equal(mnt_plan_is_writable(p, P("ab/x")), 0);
	assert_int_equal(mnt_plan_is_writable(p, P("a.b")), 0);
	assert_int_equal(mnt_plan_is_writable(p, topdir), 0);
	assert_int_equal(mnt_plan_is_writable(p, "/"), 0);
	assert_int_equal(mnt_plan_is_writable(p, "/tmp"), 0);
	assert_int_equal(mnt_plan_is_writable(p, "/etc/passwd"), 0);
	assert_int_equal(mnt_plan_is_writable(p, P("rw")), 1);
	assert_int_equal(mnt_plan_is_writable(p, P("rw/deep/file")), 1);
	assert_int_equal(mnt_plan_is_writable(p, P("rwx")), 0);
	assert_int_equal(mnt_plan_is_writable(p, P("ro")), 0);
	assert_int_equal(mnt_plan_is_writable(p, P("ro/f")), 0);
	/* A fresh tmpfs is no host directory. */
	assert_int_equal(mnt_plan_is_writable(p, P("t")), 0);
	mnt_plan_free(p);
}

/*
 * The home's per-run layer never reaches the host: not writable there;
 * a tool cache is (its source), a fresh one (--no-cache) is not.
 */
static void
test_is_writable_home_cache(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));
	char err[512] = "";

	(void)state;
	assert_int_equal(
	    mnt_plan_set_home(p, P("nogit"), 0, err, sizeof(err)), 0);
	assert_string_equal(mnt_plan_home(p), P("nogit"));
	assert_int_equal(mnt_plan_set_home(p, "/", 0, err, sizeof(err)), -1);
	assert_int_equal(mnt_plan_set_home(p, "rel", 1, err, sizeof(err)), -1);
	add(p, MNT_CACHE, P("rw"), P("nogit/.npm"));
	add(p, MNT_CACHE, NULL, P("nogit/.cache"));
	assert_int_equal(mnt_plan_is_writable(p, P("nogit")), 0);
	assert_int_equal(mnt_plan_is_writable(p, P("nogit/.bashrc")), 0);
	assert_int_equal(mnt_plan_is_writable(p, P("rw/x")), 1);
	assert_int_equal(mnt_plan_is_writable(p, P("nogit/.cache")), 0);
	assert_int_equal(mnt_plan_cache_root(p, P("ro"), err, sizeof(err)), 0);
	assert_int_equal(mnt_plan_cache_root(p, "rel", err, sizeof(err)), -1);
	mnt_plan_free(p);
}

/* Every entry on the way to a file is checked, symlinks and all. */
static void
test_path_reachable(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));
	char where[512], cwd[PATH_MAX];
	size_t i;
	static const struct {
		const char *path;
		int want;
		const char *where; /* beneath topdir */
	} c[] = {
	    {"ro/f", 0, NULL},
	    {"ro", 0, NULL},
	    {"ro/missing", 0, NULL},
	    {"a", 1, "a"},
	    {"a/secret.txt", 1, "a/secret.txt"},
	    {"a/strict.conf", 1, "a/strict.conf"}, /* missing, still in a */
	    {"link/sub", 1, "a/sub"}, /* link -> a */
	    {"ro/in-a", 1, "a/secret.txt"}, /* ro/in-a -> ../a/secret.txt */
	    {"a/out", 1, "a/out"}, /* a/out -> ../ro/f: retargetable */
	    {"ro/via/f", 1, "a/out2"}, /* ro/via -> ../a/out2 -> ../ro */
	    {"ro/./f", 0, NULL},
	    {"ro/../ro/f", 0, NULL},
	    {"rw/x", 1, "rw/x"},
	    {"rwlink", 1, "rw"}, /* rwlink -> rw: the file is the bind */
	    {"loop", -1, NULL},
	};

	(void)state;
	assert_int_equal(symlink("../a/secret.txt", P("ro/in-a")), 0);
	assert_int_equal(symlink("../ro/f", P("a/out")), 0);
	assert_int_equal(symlink("../ro", P("a/out2")), 0);
	assert_int_equal(symlink("../a/out2", P("ro/via")), 0);
	assert_int_equal(symlink("rw", P("rwlink")), 0);
	assert_int_equal(symlink("loop", P("loop")), 0);
	add(p, MNT_BIND, P("rw"), NULL);
	add(p, MNT_RO_BIND, P("ro"), NULL);
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		where[0] = '\0';
		if (mnt_plan_path_reachable(
		        p, P(c[i].path), where, sizeof(where)) != c[i].want ||
		    (c[i].where != NULL && strcmp(where, P(c[i].where)) != 0))
			fail_msg("%s: want %d %s, got %s", c[i].path, c[i].want,
			    c[i].where ? c[i].where : "-", where);
	}
	assert_int_equal(
	    mnt_plan_path_reachable(p, "/etc/passwd", where, sizeof(where)), 0);
	assert_int_equal(
	    mnt_plan_path_reachable(p, "/", where, sizeof(where)), 0);
	/* Relative paths are the current directory's. */
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(P("a")), 0);
	assert_int_equal(
	    mnt_plan_path_reachable(p, "strict.conf", where, sizeof(where)), 1);
	assert_int_equal(
	    mnt_plan_path_reachable(p, "../ro/f", where, sizeof(where)), 0);
	assert_int_equal(chdir(cwd), 0);
	mnt_plan_free(p);
}

/* A bind elsewhere: the host path (its source) is what is writable. */
static void
test_is_writable_moved_bind(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));

	(void)state;
	add(p, MNT_BIND, P("link"), "/opt/x");
	add(p, MNT_BIND, P("rw"), "/opt/rw");
	assert_int_equal(mnt_plan_is_writable(p, P("rw/f")), 1);
	assert_int_equal(mnt_plan_is_writable(p, "/opt/rw"), 0);
	assert_int_equal(mnt_plan_is_writable(p, "/opt/rw/f"), 0);
	/* The source was resolved: the link's target is the bind. */
	assert_int_equal(mnt_plan_is_writable(p, P("a/sub")), 1);
	mnt_plan_free(p);
}

/* A bind of "/" makes everything writable. */
static void
test_is_writable_root_bind(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));

	(void)state;
	add(p, MNT_BIND, "/", "/host");
	assert_int_equal(mnt_plan_is_writable(p, "/etc/passwd"), 1);
	assert_int_equal(mnt_plan_is_writable(p, "/"), 1);
	mnt_plan_free(p);
}

struct dirlist {
	char *dirs[MAXDIRS];
	size_t n;
};

static void
collect(void *arg, const char *path)
{
	struct dirlist *l = arg;

	if (l->n < MAXDIRS)
		l->dirs[l->n] = strdup(path);
	l->n++;
}

static void
test_writable_dirs(void **state)
{
	struct mnt_plan *p = plan_at(P("link"));
	struct dirlist l;
	const char *want[6];
	size_t i;

	(void)state;
	memset(&l, 0, sizeof(l));
	add(p, MNT_RO_BIND, P("ro"), NULL);
	add(p, MNT_BIND, P("rw"), NULL);
	add(p, MNT_HIDE, NULL, P("a/secret"));
	add(p, MNT_TMPFS, NULL, "/opt/t");
	add(p, MNT_BIND, P("nogit"), "/opt/ng");
	want[0] = P("a");
	want[1] = "/tmp";
	want[2] = "/dev/shm";
	want[3] = P("rw");
	want[4] = "/opt/t";
	want[5] = "/opt/ng";
	mnt_plan_writable_dirs(p, collect, &l);
	assert_int_equal(l.n, 6);
	for (i = 0; i < l.n; i++) {
		assert_string_equal(l.dirs[i], want[i]);
		free(l.dirs[i]);
	}
	mnt_plan_free(p);
}

/* Without any step: the start directory, /tmp and /dev/shm. */
static void
test_writable_dirs_default(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));
	struct dirlist l;
	size_t i;

	(void)state;
	memset(&l, 0, sizeof(l));
	mnt_plan_writable_dirs(p, collect, &l);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.dirs[0], P("a"));
	assert_string_equal(l.dirs[1], "/tmp");
	assert_string_equal(l.dirs[2], "/dev/shm");
	for (i = 0; i < l.n; i++)
		free(l.dirs[i]);
	mnt_plan_free(p);
}

static void
test_prepare_git(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));
	char err[512] = "";

	(void)state;
	add(p, MNT_BIND, P("rw"), NULL);
	add(p, MNT_BIND, P("nogit"), NULL);
	add(p, MNT_BIND, P("wt"), NULL);
	assert_false(fixture_exists(P("a/.git/hooks")));
	assert_int_equal(mnt_plan_prepare_git(p, err, sizeof(err)), 0);
	assert_true(is_dir(P("a/.git/hooks")));
	assert_true(is_dir(P("rw/.git/hooks")));
	/* No repository: nothing made.  A worktree's .git file stays. */
	assert_false(fixture_exists(P("nogit/.git")));
	assert_false(is_dir(P("wt/.git")));
	/* Again: the hooks are there already, which is fine. */
	assert_int_equal(mnt_plan_prepare_git(p, err, sizeof(err)), 0);
	mnt_plan_free(p);
}

/* A read-only bind is not written to, so its hooks need no cover. */
static void
test_prepare_git_ro_bind(void **state)
{
	struct mnt_plan *p = plan_at(P("nogit"));
	char err[512] = "";

	(void)state;
	add(p, MNT_RO_BIND, P("rw"), NULL);
	assert_int_equal(mnt_plan_prepare_git(p, err, sizeof(err)), 0);
	assert_false(fixture_exists(P("rw/.git/hooks")));
	mnt_plan_free(p);
}

static void
test_prepare_git_allowed(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));
	char err[512] = "";

	(void)state;
	add(p, MNT_BIND, P("rw"), NULL);
	mnt_plan_allow_git_config(p);
	assert_int_equal(mnt_plan_prepare_git(p, err, sizeof(err)), 0);
	assert_false(fixture_exists(P("a/.git/hooks")));
	assert_false(fixture_exists(P("rw/.git/hooks")));
	mnt_plan_free(p);
}

/* --- the view (in new namespaces) ----------------------------------------- */

static void
write_proc(const char *name, const char *text)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/self/%s", name);
	CHECK((fd = open(path, O_WRONLY | O_CLOEXEC)) >= 0);
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
}

/*
 * Builds PLAN's view in PID 1 of new namespaces and runs CHECKS there,
 * unless EXPECT_ERR is set: then mnt_apply must fail with that text in
 * its reason.  Returns the grandchild's wait status, through the child.
 */
static int
in_view(
    const struct mnt_plan *plan, void (*checks)(void), const char *expect_err)
{
	char map[64], err[1024] = "";
	uid_t uid = geteuid();
	gid_t gid = getegid();
	pid_t pid, g;
	int w;

	fflush(NULL);
	if ((pid = fork()) < 0)
		return -1;
	if (pid == 0) {
		CHECK(unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID) == 0);
		write_proc("setgroups", "deny");
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid,
		    (unsigned)uid);
		write_proc("uid_map", map);
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid,
		    (unsigned)gid);
		write_proc("gid_map", map);
		CHECK((g = fork()) >= 0);
		if (g == 0) {
			CHECK(getpid() == 1);
			if (expect_err != NULL) {
				CHECK(mnt_apply(plan, err, sizeof(err)) == -1);
				if (strstr(err, expect_err) == NULL) {
					fprintf(stderr, "reason: %s\n", err);
					_exit(1);
				}
				_exit(0);
			}
			if (mnt_apply(plan, err, sizeof(err)) != 0) {
				fprintf(stderr, "mnt_apply: %s\n", err);
				_exit(2);
			}
			checks();
			_exit(0);
		}
		CHECK(waitpid(g, &w, 0) == g);
		_exit(WIFEXITED(w) ? WEXITSTATUS(w) : 128 + WTERMSIG(w));
	}
	while (waitpid(pid, &w, 0) < 0)
		if (errno != EINTR)
			return -1;
	return w;
}

static void
assert_view(const struct mnt_plan *plan, void (*checks)(void))
{
	int w = in_view(plan, checks, NULL);

	assert_true(WIFEXITED(w));
	assert_int_equal(WEXITSTATUS(w), 0);
}

/* Creating a file at PATH fails with ERR. */
static int
create_fails(const char *path, int err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	if (fd >= 0) {
		close(fd);
		unlink(path);
		errno = 0;
		return 0;
	}
	return errno == err;
}

/* Creating and writing a file at PATH works. */
static int
create_works(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	int r;

	if (fd < 0)
		return 0;
	r = write(fd, "w", 1) == 1;
	close(fd);
	return r;
}

/* The names in directory PATH, but . and .., sorted, comma-separated. */
static char *
list_dir(const char *path, char *buf, size_t len)
{
	struct dirent **names;
	int i, n;

	buf[0] = '\0';
	CHECK((n = scandir(path, &names, NULL, alphasort)) >= 0);
	for (i = 0; i < n; i++) {
		if (strcmp(names[i]->d_name, ".") != 0 &&
		    strcmp(names[i]->d_name, "..") != 0) {
			if (buf[0] != '\0')
				strncat(buf, ",", len - strlen(buf) - 1);
			strncat(buf, names[i]->d_name, len - strlen(buf) - 1);
		}
		free(names[i]);
	}
	free(names);
	return buf;
}

static int
fs_type(const char *path, long magic)
{
	struct statfs sf;

	return statfs(path, &sf) == 0 && (long)sf.f_type == magic;
}

static int
file_is(const char *path, const char *text)
{
	char buf[256];
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	return n == (ssize_t)strlen(text) && memcmp(buf, text, (size_t)n) == 0;
}

/* The root and what is mounted under it are read-only. */
static void
check_root_ro(void)
{
	struct statvfs sv;

	CHECK(statvfs("/", &sv) == 0 && (sv.f_flag & ST_RDONLY) != 0);
	CHECK(statvfs("/usr", &sv) == 0 && (sv.f_flag & ST_RDONLY) != 0);
	CHECK(mkdir("/usr/pinhole-test", 0755) == -1 && errno == EROFS);
	CHECK(create_fails("/etc/pinhole-test", EROFS));
	if (is_dir("/var/tmp"))
		CHECK(create_fails("/var/tmp/pinhole-test", EROFS));
}

/* A minimal /dev: these nodes (those the host has), pts, shm, links. */
static void
check_dev(void)
{
	static const char *const nodes[] = {
	    "full",
	    "null",
	    "random",
	    "tty",
	    "urandom",
	    "zero",
	};
	char want[256] = "", got[256];
	const char *names[32];
	size_t i, n = 0, j;
	char zero[4] = {1, 1, 1, 1}, link[64];
	ssize_t ln;
	int fd;

	/* The host's /dev is hidden by now: what it had shows in the view. */
	for (i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		char path[64];
		struct stat sb;

		snprintf(path, sizeof(path), "/dev/%s", nodes[i]);
		if (stat(path, &sb) == 0) {
			CHECK(S_ISCHR(sb.st_mode));
			names[n++] = nodes[i];
		}
	}
	CHECK(n >= 5); /* everything but perhaps tty */
	names[n++] = "fd";
	names[n++] = "ptmx";
	names[n++] = "pts";
	names[n++] = "shm";
	names[n++] = "stderr";
	names[n++] = "stdin";
	names[n++] = "stdout";
	/* Sorted as alphasort would (all lower case, C locale). */
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			const char *t = names[j];

			names[j] = names[j - 1];
			names[j - 1] = t;
		}
	for (i = 0; i < n; i++) {
		if (i > 0)
			strcat(want, ",");
		strcat(want, names[i]);
	}
	list_dir("/dev", got, sizeof(got));
	if (strcmp(got, want) != 0)
		fprintf(stderr, "/dev: %s\nwant: %s\n", got, want);
	CHECK(strcmp(got, want) == 0);
	CHECK(fs_type("/dev", TMPFS_MAGIC));
	CHECK(fs_type("/dev/pts", DEVPTS_SUPER_MAGIC));
	CHECK(fs_type("/dev/shm", TMPFS_MAGIC));
	CHECK((fd = open("/dev/null", O_WRONLY | O_CLOEXEC)) >= 0);
	CHECK(write(fd, "x", 1) == 1);
	close(fd);
	CHECK((fd = open("/dev/zero", O_RDONLY | O_CLOEXEC)) >= 0);
	CHECK(read(fd, zero, sizeof(zero)) == sizeof(zero));
	CHECK(memcmp(zero, "\0\0\0\0", 4) == 0);
	close(fd);
	CHECK((fd = open("/dev/full", O_WRONLY | O_CLOEXEC)) >= 0);
	CHECK(write(fd, "x", 1) == -1 && errno == ENOSPC);
	close(fd);
	/* A private devpts: its ptmx gives a new terminal. */
	CHECK((fd = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)) >= 0);
	close(fd);
	CHECK(create_works("/dev/shm/pinhole-test"));
	CHECK((ln = readlink("/dev/fd", link, sizeof(link) - 1)) > 0);
	link[ln] = '\0';
	CHECK(strcmp(link, "/proc/self/fd") == 0);
	CHECK(is_dir("/dev/fd/"));
}

/* A fresh proc for the new PID namespace: PID 1 is us, and alone. */
static void
check_proc(void)
{
	char self[32] = "", got[256];
	ssize_t n;

	CHECK(fs_type("/proc", PROC_SUPER_MAGIC));
	CHECK(is_dir("/proc/1"));
	CHECK((n = readlink("/proc/self", self, sizeof(self) - 1)) > 0);
	self[n] = '\0';
	CHECK(strcmp(self, "1") == 0);
	list_dir("/proc", got, sizeof(got));
	/* Digits first in the C locale: "1," and no other PID. */
	CHECK(strncmp(got, "1,", 2) == 0);
	CHECK(got[2] < '0' || got[2] > '9');
}

/*
 * In /proc/self/mountinfo, every mount is read-only but those meant to
 * be writable: the start directory, /tmp, /proc, /dev and its nodes,
 * a repository's .git pinned in place, and WRITABLE (NULL-terminated).
 */
static void
check_mounts_ro(const char *const *writable)
{
	char line[4096], mnt[PATH_MAX], opts[256];
	size_t i;
	int ok, n = 0;
	FILE *f;

	CHECK((f = fopen("/proc/self/mountinfo", "re")) != NULL);
	while (fgets(line, sizeof(line), f) != NULL) {
		CHECK(sscanf(line, "%*s %*s %*s %*s %4095s %255s", mnt, opts) ==
		    2);
		n++;
		if (strncmp(opts, "ro", 2) == 0 &&
		    (opts[2] == ',' || opts[2] == '\0'))
			continue;
		ok = strcmp(mnt, "/tmp") == 0 || strcmp(mnt, "/proc") == 0 ||
		    strcmp(mnt, "/dev") == 0 || strncmp(mnt, "/dev/", 5) == 0 ||
		    (strlen(mnt) > 5 &&
		        strcmp(mnt + strlen(mnt) - 5, "/.git") == 0);
		for (i = 0; !ok && writable[i] != NULL; i++)
			ok = strcmp(mnt, writable[i]) == 0;
		if (!ok)
			fprintf(stderr, "writable mount: %s", line);
		CHECK(ok);
	}
	fclose(f);
	CHECK(n > 5);
}

/* The host's /tmp is gone: TOP holds only the mount points made. */
static void
check_tmp(const char *want_top)
{
	char got[1024];

	CHECK(fs_type("/tmp", TMPFS_MAGIC));
	list_dir(topdir, got, sizeof(got));
	if (strcmp(got, want_top) != 0)
		fprintf(stderr, "%s: %s\n", topdir, got);
	CHECK(strcmp(got, want_top) == 0);
	CHECK(!fixture_exists(P("ab")));
	CHECK(create_works("/tmp/pinhole-test"));
	CHECK(unlink("/tmp/pinhole-test") == 0);
}

/* .git/hooks and .git/config of repository DIR are read-only. */
static void
check_git_protected(const char *dir)
{
	char path[PATH_MAX + 64];
	int fd;

	snprintf(path, sizeof(path), "%s/.git/hooks/pre-commit", dir);
	CHECK(create_fails(path, EROFS));
	snprintf(path, sizeof(path), "%s/.git/config", dir);
	CHECK(file_is(path, "[core]\n"));
	CHECK(open(path, O_WRONLY | O_APPEND | O_CLOEXEC) == -1 &&
	    errno == EROFS);
	/* The rest of .git stays writable: git must still work. */
	snprintf(path, sizeof(path), "%s/.git/index", dir);
	CHECK(create_works(path));
	CHECK(unlink(path) == 0);
	snprintf(path, sizeof(path), "%s/.git/config.lock", dir);
	CHECK((fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0);
	close(fd);
	CHECK(unlink(path) == 0);
}

static void
check_full_view(void)
{
	const char *const writable[] = {P("a"), P("rw"), P("t"), NULL};
	char got[256];
	int fd;

	check_root_ro();
	check_dev();
	check_proc();
	check_tmp("a,ro,rw,t");
	check_mounts_ro(writable);
	/* The start directory is the host's, read-write. */
	CHECK(file_is(P("a/.git/HEAD"), "ref: refs/heads/main\n"));
	CHECK(create_works(P("a/from-view")));
	CHECK(mkdir(P("a/sub/d"), 0755) == 0);
	/* Hidden: an empty directory, an empty file, both read-only. */
	CHECK(strcmp(list_dir(P("a/secret"), got, sizeof(got)), "") == 0);
	CHECK(!fixture_exists(P("a/secret/key")));
	CHECK(create_fails(P("a/secret/new"), EROFS));
	CHECK(file_is(P("a/secret.txt"), ""));
	CHECK(open(P("a/secret.txt"), O_WRONLY | O_CLOEXEC) == -1 &&
	    errno == EROFS);
	/* Not there: skipped, and still not there. */
	CHECK(!fixture_exists(P("a/nothere")));
	/* What mnt_plan_hide_defaults names under HOME. */
	CHECK(strcmp(list_dir(P("a/home/.ssh"), got, sizeof(got)), "") == 0);
	CHECK(file_is(P("a/home/.netrc"), ""));
	/* The read-only bind: readable, not writable. */
	CHECK(file_is(P("ro/f"), "ro-data"));
	CHECK(create_fails(P("ro/new"), EROFS));
	CHECK(open(P("ro/f"), O_WRONLY | O_CLOEXEC) == -1 && errno == EROFS);
	/* The read-write bind, and the tmpfs. */
	CHECK(create_works(P("rw/from-view")));
	CHECK(fs_type(P("t"), TMPFS_MAGIC));
	CHECK(strcmp(list_dir(P("t"), got, sizeof(got)), "") == 0);
	CHECK(create_works(P("t/x")));
	check_git_protected(P("a"));
	check_git_protected(P("rw"));
	/* The start directory is where the view's writes land. */
	CHECK((fd = open(P("a"), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0);
	close(fd);
}

static void
test_apply(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));
	char err[512] = "";

	(void)state;
	add(p, MNT_RO_BIND, P("ro"), NULL);
	add(p, MNT_BIND, P("rw"), NULL);
	add(p, MNT_TMPFS, NULL, P("t"));
	add(p, MNT_HIDE, NULL, P("a/secret"));
	add(p, MNT_HIDE, NULL, P("a/secret.txt"));
	add(p, MNT_HIDE, NULL, P("a/nothere"));
	assert_int_equal(mnt_plan_hide_defaults(p, P("a/home"),
	                     "/nonexistent-root", err, sizeof(err)),
	    0);
	assert_int_equal(mnt_plan_prepare_git(p, err, sizeof(err)), 0);
	assert_view(p, check_full_view);
	/* What the view wrote is on the host; what it hid is untouched. */
	assert_true(fixture_exists(P("a/from-view")));
	assert_true(is_dir(P("a/sub/d")));
	assert_true(fixture_exists(P("rw/from-view")));
	assert_true(file_is(P("a/secret/key"), "KEY"));
	assert_true(file_is(P("a/secret.txt"), "s3cret"));
	assert_false(fixture_exists(P("ro/new")));
	assert_false(fixture_exists(P("t")));
	mnt_plan_free(p);
}

/* --allow-git-config: hooks and config are as writable as the rest. */
static void
check_git_allowed(void)
{
	int fd;

	CHECK(create_works(P("a/.git/hooks/pre-commit")));
	CHECK((fd = open(
	           P("a/.git/config"), O_WRONLY | O_APPEND | O_CLOEXEC)) >= 0);
	close(fd);
}

static void
test_apply_git_allowed(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));

	(void)state;
	assert_int_equal(mkdir(P("a/.git/hooks"), 0755), 0);
	mnt_plan_allow_git_config(p);
	assert_view(p, check_git_allowed);
	assert_true(fixture_exists(P("a/.git/hooks/pre-commit")));
	mnt_plan_free(p);
}

/*
 * The hooks are read-only wherever they are reached from: moving .git
 * aside and making a new one must not give the sandbox a hooks
 * directory that the host's next git command would run.
 */
static void
check_git_not_replaceable(void)
{
	if (rename(P("a/.git"), P("a/.git-moved")) != 0)
		return; /* refused: the hooks stay covered */
	CHECK(mkdir(P("a/.git"), 0755) == 0);
	CHECK(mkdir(P("a/.git/hooks"), 0755) == 0);
	CHECK(create_fails(P("a/.git/hooks/pre-commit"), EROFS));
}

static void
test_apply_git_not_replaceable(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));
	char err[512] = "";

	(void)state;
	assert_int_equal(mnt_plan_prepare_git(p, err, sizeof(err)), 0);
	assert_view(p, check_git_not_replaceable);
	assert_false(fixture_exists(P("a/.git/hooks/pre-commit")));
	mnt_plan_free(p);
}

/*
 * A start directory outside /tmp: /tmp is then a fresh, empty tmpfs.
 * /var/tmp is the one place outside /tmp that nobody may write to.
 */
static char vartmp[PATH_MAX];

static void
check_tmp_empty(void)
{
	char got[256];
	const char *const writable[] = {vartmp, NULL};

	CHECK(fs_type("/tmp", TMPFS_MAGIC));
	CHECK(strcmp(list_dir("/tmp", got, sizeof(got)), "") == 0);
	CHECK(create_works("/tmp/x"));
	check_mounts_ro(writable);
	CHECK(chdir(vartmp) == 0);
	CHECK(create_works("in-cwd"));
}

static void
test_apply_tmp_empty(void **state)
{
	char tmpl[] = "/var/tmp/test_mount.XXXXXX", *real, path[PATH_MAX + 16];
	struct mnt_plan *p;
	int w, made;

	(void)state;
	if (mkdtemp(tmpl) == NULL) {
		print_message("skipped: cannot make a directory in /var/tmp: "
		              "%s\n",
		    strerror(errno));
		skip();
	}
	assert_non_null(real = realpath(tmpl, NULL));
	snprintf(vartmp, sizeof(vartmp), "%s", real);
	free(real);
	p = plan_at(vartmp);
	w = in_view(p, check_tmp_empty, NULL);
	mnt_plan_free(p);
	/* Cleaned up before asserting: /var/tmp is no teardown's. */
	snprintf(path, sizeof(path), "%s/in-cwd", vartmp);
	made = unlink(path) == 0;
	rmdir(vartmp);
	assert_true(WIFEXITED(w));
	assert_int_equal(WEXITSTATUS(w), 0);
	assert_true(made);
}

/* The home inside: writable, its cache bound, the cache root hidden. */
static void
check_home(void)
{
	char got[256];

	CHECK(create_works(P("nogit/new.txt")));
	CHECK(mkdir(P("nogit/.config"), 0755) == 0);
	CHECK(create_works(P("nogit/.npm/entry")));
	CHECK(
	    strcmp(list_dir(P("nogit/cacheroot"), got, sizeof(got)), "") == 0);
	CHECK(create_works(P("nogit/tmpfs/made/f"))); /* --tmpfs in it */
}

/*
 * The home (under /tmp here, which the view replaces) gets a per-run
 * layer: what is written there is gone after, but for the tool cache,
 * which lands in its source; mount points are made in the layer.
 */
static void
test_apply_home(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));
	char err[512] = "";

	(void)state;
	fixture_mkdir("nogit/cacheroot");
	fixture_mkfile("nogit/cacheroot/k", "kept");
	assert_int_equal(
	    mnt_plan_set_home(p, P("nogit"), 0, err, sizeof(err)), 0);
	assert_int_equal(
	    mnt_plan_cache_root(p, P("nogit/cacheroot"), err, sizeof(err)), 0);
	add(p, MNT_CACHE, P("rw"), P("nogit/.npm"));
	add(p, MNT_TMPFS, NULL, P("nogit/tmpfs/made"));
	assert_view(p, check_home);
	assert_true(fixture_exists(P("rw/entry")));
	assert_false(fixture_exists(P("nogit/new.txt")));
	assert_false(fixture_exists(P("nogit/.config")));
	assert_false(fixture_exists(P("nogit/.npm")));
	assert_false(fixture_exists(P("nogit/tmpfs")));
	assert_true(fixture_exists(P("nogit/cacheroot/k")));
	mnt_plan_free(p);
}

/*
 * A destination that cannot be made, since it lies in a read-only part
 * of the view (here a read-only bind, so that a broken view cannot
 * write to the host's own tree): the reason names it.
 */
static void
test_apply_bad_destination(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));
	int w;

	(void)state;
	add(p, MNT_RO_BIND, P("ro"), NULL);
	add(p, MNT_RO_BIND, P("nogit"), P("ro/new/x"));
	w = in_view(p, NULL, P("ro/new/x"));
	assert_true(WIFEXITED(w));
	assert_int_equal(WEXITSTATUS(w), 0);
	assert_false(fixture_exists(P("ro/new")));
	mnt_plan_free(p);
}

/* A bind source that went away between plan and view: the reason. */
static void
test_apply_source_gone(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));
	int w;

	(void)state;
	add(p, MNT_BIND, P("nogit"), NULL);
	assert_int_equal(rmdir(P("nogit")), 0);
	w = in_view(p, NULL, P("nogit"));
	assert_true(WIFEXITED(w));
	assert_int_equal(WEXITSTATUS(w), 0);
	mnt_plan_free(p);
}

/*
 * A git guard that cannot apply stops the view, naming it: a symbolic
 * link (dangling or not) is never followed nor left out.
 */
static void
test_apply_git_guard_symlink(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));
	char err[512] = "", want[PATH_MAX + 64];
	int w;

	(void)state;
	assert_int_equal(symlink(P("nowhere"), P("a/.git/hooks")), 0);
	assert_int_equal(mnt_plan_prepare_git(p, err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "git guard %s: a symbolic link",
	    P("a/.git/hooks"));
	w = in_view(p, NULL, want);
	assert_true(WIFEXITED(w));
	assert_int_equal(WEXITSTATUS(w), 0);
	assert_int_equal(unlink(P("a/.git/hooks")), 0);
	assert_int_equal(rename(P("a/.git/config"), P("a/config-real")), 0);
	assert_int_equal(symlink("../config-real", P("a/.git/config")), 0);
	snprintf(want, sizeof(want), "git guard %s: a symbolic link",
	    P("a/.git/config"));
	w = in_view(p, NULL, want);
	assert_true(WIFEXITED(w));
	assert_int_equal(WEXITSTATUS(w), 0);
	mnt_plan_free(p);
}

/* --- the start directory and the home ---------------------------------- */

static void
test_check_home(void **state)
{
	struct mnt_plan *p;
	char err[1024];

	(void)state;
	fixture_mkdir("a/home/proj");
	/* The home itself, and a directory holding it. */
	p = plan_at(P("a/home"));
	err[0] = '\0';
	assert_int_equal(
	    mnt_plan_check_home(p, P("a/home"), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "~/.bashrc"));
	assert_non_null(strstr(err, "--bind"));
	/* Named through a link, the same home. */
	assert_int_equal(symlink("a/home", P("homelink")), 0);
	assert_int_equal(
	    mnt_plan_check_home(p, P("homelink"), err, sizeof(err)), -1);
	mnt_plan_free(p);
	p = plan_at(P("a"));
	assert_int_equal(
	    mnt_plan_check_home(p, P("a/home"), err, sizeof(err)), -1);
	/* --bind of the start directory: on purpose. */
	add(p, MNT_BIND, P("a"), NULL);
	assert_int_equal(
	    mnt_plan_check_home(p, P("a/home"), err, sizeof(err)), 0);
	mnt_plan_free(p);
	/* A project inside the home, a sibling, no home: fine. */
	p = plan_at(P("a/home/proj"));
	assert_int_equal(
	    mnt_plan_check_home(p, P("a/home"), err, sizeof(err)), 0);
	assert_int_equal(mnt_plan_check_home(p, NULL, err, sizeof(err)), 0);
	assert_int_equal(
	    mnt_plan_check_home(p, "relative", err, sizeof(err)), 0);
	assert_int_equal(
	    mnt_plan_check_home(p, P("missing"), err, sizeof(err)), 0);
	mnt_plan_free(p);
	p = plan_at(P("ab"));
	assert_int_equal(mnt_plan_check_home(p, P("a"), err, sizeof(err)), 0);
	mnt_plan_free(p);
}

/* --- hidden by default: one check per entry of the table ----------------- */

/*
 * Each entry is made in a fake home (TOP/a/h) or root (TOP/a/r) holding
 * "SECRET" (a directory: a file "key" in it, and for ~/.gnupg the
 * agent's socket too); a glob gets two matches and one near miss.
 */
#define HIDDEN_MAX 64
static char hidden_made[HIDDEN_MAX][PATH_MAX + 64];
static int hidden_dir[HIDDEN_MAX];
static size_t nhidden_made;
static char near_miss[PATH_MAX + 64];

static void
mkdirs_for(const char *path)
{
	char buf[PATH_MAX], *q;

	snprintf(buf, sizeof(buf), "%s", path);
	for (q = buf + strlen(topdir) + 1; (q = strchr(q, '/')) != NULL; q++) {
		*q = '\0';
		(void)mkdir(buf, 0755);
		*q = '/';
	}
}

static void
put_secret(const char *path, int dir)
{
	char key[PATH_MAX + 8];
	int fd;

	mkdirs_for(path);
	if (dir) {
		assert_int_equal(mkdir(path, 0700), 0);
		snprintf(key, sizeof(key), "%s/key", path);
		path = key;
	}
	assert_true((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	                 0600)) >= 0);
	assert_int_equal(write(fd, "SECRET", 6), 6);
	close(fd);
}

/* A listening Unix socket at PATH (left behind as a socket file). */
static void
put_socket(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	assert_true(strlen(path) < sizeof(sa.sun_path));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_true((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
}

static void
make_hidden_entries(void)
{
	char path[PATH_MAX], sock[PATH_MAX + 16];
	const char *e;
	size_t i;
	int dir;

	nhidden_made = 0;
	for (i = 0; (e = mnt_hidden_at(i)) != NULL; i++) {
		assert_true(nhidden_made + 2 <= HIDDEN_MAX);
		/* Directories by convention have no dot-suffix file name. */
		dir = strstr(e, ".ssh") || strstr(e, ".aws") ||
		    strstr(e, "gnupg") || strstr(e, ".config/") ||
		    strstr(e, ".kube") || strstr(e, ".azure");
		if (strncmp(e, "~/", 2) == 0)
			snprintf(
			    path, sizeof(path), "%s/a/h/%s", topdir, e + 2);
		else if (strstr(e, "%u") != NULL) /* the caller's uid */
			snprintf(path, sizeof(path), "%s/a/r%.*s%u%s", topdir,
			    (int)(strstr(e, "%u") - e), e, (unsigned)getuid(),
			    strstr(e, "%u") + 2);
		else
			snprintf(path, sizeof(path), "%s/a/r%s", topdir, e);
		if (strchr(path, '*') != NULL) {
			/* A glob (etc/ssh/...): two keys; the .pub stays. */
			char *star = strchr(path, '*'), pre[PATH_MAX / 2];

			snprintf(
			    pre, sizeof(pre), "%.*s", (int)(star - path), path);
			snprintf(hidden_made[nhidden_made], PATH_MAX + 64,
			    "%sssh_host_rsa%s", pre, star + 1);
			put_secret(hidden_made[nhidden_made], 0);
			hidden_dir[nhidden_made++] = 0;
			snprintf(hidden_made[nhidden_made], PATH_MAX + 64,
			    "%sssh_host_ed25519%s", pre, star + 1);
			put_secret(hidden_made[nhidden_made], 0);
			hidden_dir[nhidden_made++] = 0;
			snprintf(near_miss, sizeof(near_miss),
			    "%sssh_host_rsa%s.pub", pre, star + 1);
			put_secret(near_miss, 0);
			continue;
		}
		snprintf(hidden_made[nhidden_made], sizeof(hidden_made[0]),
		    "%s", path);
		put_secret(path, dir);
		if (strstr(e, "gnupg") != NULL) {
			snprintf(sock, sizeof(sock), "%s/S.gpg-agent", path);
			put_socket(sock);
		}
		hidden_dir[nhidden_made++] = dir;
	}
}

static void
check_hidden_entries(void)
{
	char got[256];
	size_t i;

	for (i = 0; i < nhidden_made; i++) {
		if (hidden_dir[i]) {
			list_dir(hidden_made[i], got, sizeof(got));
			if (got[0] != '\0')
				fprintf(
				    stderr, "%s: %s\n", hidden_made[i], got);
			CHECK(got[0] == '\0');
		} else {
			if (!file_is(hidden_made[i], ""))
				fprintf(
				    stderr, "%s not empty\n", hidden_made[i]);
			CHECK(file_is(hidden_made[i], ""));
		}
	}
	/* What the glob does not match stays. */
	CHECK(file_is(near_miss, "SECRET"));
}

static void
test_apply_hidden_defaults(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));
	char err[512] = "", home[PATH_MAX], root[PATH_MAX];

	(void)state;
	make_hidden_entries();
	/* Every entry of the table, and the glob's two. */
	assert_int_equal(nhidden_made, mnt_hidden_count() + 1);
	/* In the start directory: the rest of /tmp is not in the view. */
	snprintf(home, sizeof(home), "%s/a/h", topdir);
	snprintf(root, sizeof(root), "%s/a/r", topdir);
	assert_int_equal(
	    mnt_plan_hide_defaults(p, home, root, err, sizeof(err)), 0);
	assert_view(p, check_hidden_entries);
	mnt_plan_free(p);
}

/* The entries the issue names are in the table. */
static void
test_hidden_table(void **state)
{
	static const char *const want[] = {
	    "~/.ssh",
	    "~/.aws",
	    "~/.gnupg",
	    "~/.netrc",
	    "~/.vault-token",
	    "~/.cargo/credentials.toml",
	    "~/.cargo/credentials",
	    "~/.config/gcloud",
	    "~/.azure",
	    "~/.pgpass",
	    "~/.my.cnf",
	    "~/.config/hub",
	    "~/.terraform.d/credentials.tfrc.json",
	    "/run/user/%u/gnupg",
	    "/etc/shadow",
	    "/etc/gshadow",
	    "/etc/ssh/*_key",
	};
	size_t i, k;
	int found;

	(void)state;
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		for (k = 0, found = 0; mnt_hidden_at(k) != NULL; k++)
			found |= strcmp(mnt_hidden_at(k), want[i]) == 0;
		if (!found)
			fail_msg("%s is not hidden by default", want[i]);
	}
	assert_null(mnt_hidden_at(mnt_hidden_count()));
}

/* --- /proc ---------------------------------------------------------------- */

/* Read-only by its mount: EROFS, whatever Landlock would say. */
static void
check_proc_ro(void)
{
	static const char *const ro[] = {
	    "/proc/sys", "/proc/irq", "/proc/bus", "/proc/sysrq-trigger"};
	struct statvfs sv;
	size_t i;
	int fd;

	for (i = 0; i < sizeof(ro) / sizeof(ro[0]); i++) {
		if (!fixture_exists(ro[i]))
			continue;
		CHECK(statvfs(ro[i], &sv) == 0 && (sv.f_flag & ST_RDONLY) != 0);
	}
	/* Opened, never written: on a broken view this is the host's. */
	fd = open("/proc/sys/kernel/core_pattern", O_WRONLY | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	/* Not root: the file's mode may say no first. */
	CHECK(fd == -1 &&
	    (errno == EROFS || (geteuid() != 0 && errno == EACCES)));
	/* The rest of /proc is as before. */
	CHECK(statvfs("/proc", &sv) == 0 && (sv.f_flag & ST_RDONLY) == 0);
	CHECK(file_is("/proc/self/comm", "test_mount\n") ||
	    fixture_exists("/proc/self/comm"));
}

static void
test_apply_proc_ro(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));

	(void)state;
	assert_view(p, check_proc_ro);
	mnt_plan_free(p);
}

/* --- hides and binds through links ---------------------------------------- */

/* A hidden link hides its target as the host sees it. */
static void
check_link_target_hidden(void)
{
	CHECK(file_is(P("ro/real-secret"), ""));
	CHECK(file_is(P("a/secret-link"), ""));
	CHECK(file_is(P("ro/f"), "ro-data"));
}

static void
test_apply_hide_link(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));

	(void)state;
	fixture_mkfile("ro/real-secret", "SECRET");
	assert_int_equal(symlink("../ro/real-secret", P("a/secret-link")), 0);
	add(p, MNT_RO_BIND, P("ro"), NULL);
	/* And a dangling one: nothing to hide, no failure. */
	assert_int_equal(symlink("../nowhere", P("a/dangling")), 0);
	add(p, MNT_HIDE, NULL, P("a/secret-link"));
	add(p, MNT_HIDE, NULL, P("a/dangling"));
	assert_view(p, check_link_target_hidden);
	assert_true(file_is(P("ro/real-secret"), "SECRET"));
	mnt_plan_free(p);
}

/* A link planted on the way after the plan: the run stops, saying so. */
static void
test_apply_hide_link_planted(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));
	int w;

	(void)state;
	add(p, MNT_HIDE, NULL, P("a/secret/key"));
	assert_int_equal(rename(P("a/secret"), P("a/secret2")), 0);
	assert_int_equal(symlink("secret2", P("a/secret")), 0);
	w = in_view(p, NULL, "hide");
	assert_true(WIFEXITED(w));
	assert_int_equal(WEXITSTATUS(w), 0);
	mnt_plan_free(p);
}

struct roots {
	char seen[4][2][PATH_MAX];
	int n;
};

static int
note_root(void *arg, const char *inside, const char *host)
{
	struct roots *r = arg;

	snprintf(r->seen[r->n][0], PATH_MAX, "%s", inside);
	snprintf(r->seen[r->n][1], PATH_MAX, "%s", host);
	return ++r->n > 3 ? -1 : 0;
}

/* The sweep's roots: the start directory, then writable binds only. */
static void
test_git_roots(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));
	struct roots r;

	(void)state;
	add(p, MNT_RO_BIND, P("ro"), NULL);
	add(p, MNT_BIND, P("rw"), "/opt/rw");
	add(p, MNT_TMPFS, NULL, P("t"));
	memset(&r, 0, sizeof(r));
	assert_int_equal(mnt_plan_git_roots(p, note_root, &r), 0);
	assert_int_equal(r.n, 2);
	assert_string_equal(r.seen[0][0], P("a"));
	assert_string_equal(r.seen[0][1], P("a"));
	assert_string_equal(r.seen[1][0], "/opt/rw");
	assert_string_equal(r.seen[1][1], P("rw"));
	memset(&r, 0, sizeof(r));
	mnt_plan_allow_git_config(p);
	assert_int_equal(mnt_plan_git_roots(p, note_root, &r), 0);
	assert_int_equal(r.n, 0);
	mnt_plan_free(p);
}

/* A bind's destination that is a link: refused, not followed. */
static void
test_apply_bind_dst_link(void **state)
{
	struct mnt_plan *p = plan_at(P("a"));
	int w;

	(void)state;
	assert_int_equal(symlink("../ab", P("a/dst")), 0);
	add(p, MNT_RO_BIND, P("ro"), P("a/dst"));
	w = in_view(p, NULL, P("a/dst"));
	assert_true(WIFEXITED(w));
	assert_int_equal(WEXITSTATUS(w), 0);
	mnt_plan_free(p);
	/* Dangling: not created through the link either. */
	p = plan_at(P("a"));
	assert_int_equal(symlink("../made-here", P("a/dst2")), 0);
	add(p, MNT_TMPFS, NULL, P("a/dst2"));
	w = in_view(p, NULL, P("a/dst2"));
	assert_true(WIFEXITED(w));
	assert_int_equal(WEXITSTATUS(w), 0);
	assert_false(fixture_exists(P("made-here")));
	mnt_plan_free(p);
}

/*
 * Behind a directory pinhole may not search (another user's, 0700), a
 * hidden path is skipped: the command, the same uid with no capability,
 * cannot reach it either, nor change the directory's mode.  Needs root
 * to make a directory of another owner.
 */
static void
check_closed(void)
{
	CHECK(open(P("a/closed/secret"), O_RDONLY | O_CLOEXEC) == -1 &&
	    errno == EACCES);
	CHECK(chmod(P("a/closed"), 0755) == -1);
}

static void
test_apply_hide_eacces(void **state)
{
	struct mnt_plan *p;

	(void)state;
	if (geteuid() != 0) {
		print_message("skipped: needs root to make a directory of "
		              "another owner (runs as root in CI)\n");
		skip();
	}
	fixture_mkdir("a/closed");
	fixture_mkfile("a/closed/secret", "SECRET");
	assert_int_equal(chown(P("a/closed/secret"), 12345, 12345), 0);
	assert_int_equal(chown(P("a/closed"), 12345, 12345), 0);
	assert_int_equal(chmod(P("a/closed"), 0700), 0);
	p = plan_at(P("a"));
	add(p, MNT_HIDE, NULL, P("a/closed/secret"));
	assert_view(p, check_closed);
	mnt_plan_free(p);
}

#define T(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_new_refuses_root),
	    T(test_new_refuses_shared),
	    T(test_new_missing),
	    T(test_new_resolves),
	    T(test_add_errors),
	    T(test_add_accepts),
	    T(test_is_writable),
	    T(test_touches),
	    T(test_is_writable_home_cache),
	    T(test_apply_home),
	    T(test_path_reachable),
	    T(test_is_writable_moved_bind),
	    T(test_is_writable_root_bind),
	    T(test_writable_dirs),
	    T(test_writable_dirs_default),
	    T(test_prepare_git),
	    T(test_prepare_git_ro_bind),
	    T(test_prepare_git_allowed),
	    T(test_apply),
	    T(test_apply_git_allowed),
	    T(test_apply_git_not_replaceable),
	    T(test_apply_tmp_empty),
	    T(test_apply_bad_destination),
	    T(test_apply_source_gone),
	    T(test_apply_git_guard_symlink),
	    T(test_git_roots),
	    T(test_check_home),
	    T(test_hidden_table),
	    T(test_apply_hidden_defaults),
	    T(test_apply_proc_ro),
	    T(test_apply_hide_link),
	    T(test_apply_hide_link_planted),
	    T(test_apply_bind_dst_link),
	    T(test_apply_hide_eacces),
	};

	return cmocka_run_group_tests_name("mount", tests, NULL, NULL);
}
