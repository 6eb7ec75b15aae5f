/*
 * test_gitguard.c: unit tests of netns/gitguard.c, the post-run sweep of
 * git plants, on a mkdtemp tree under /tmp (TOP, one writable root).
 *
 * "Before the run" is what the fixture makes; then the clock is moved
 * past it (a bounded wait until a new file's ctime is later than the
 * last one made) and that instant is given to gitguard_set_since; what a
 * test makes after that is "planted".  The top .git is not a mount point
 * here, so a plant directly in it makes the whole .git count as new (as
 * a .git made or renamed during a run does); the pinned case, where only
 * what changed counts, is run for real by escape_git.sh.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "netns/gitguard.h"

#define QUARANTINE ".pinhole-quarantine-"

struct fixture {
	char top[PATH_MAX];
	struct gitguard *g;
	char said[8192]; /* every line the sweep said, "W " or "F " first */
	int fails;
};

static const char *topdir;
static char pathbuf[16][PATH_MAX + 64];
static unsigned pathnext;

static const char *
P(const char *name)
{
	char *b = pathbuf[pathnext++ % 16];

	snprintf(b, sizeof(pathbuf[0]), "%s/%s", topdir, name);
	return b;
}

static void
make_dir(const char *name)
{
	assert_int_equal(mkdir(P(name), 0755), 0);
}

static void
make_file(const char *name, const char *text)
{
	int fd = open(P(name), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void
append(const char *name, const char *text)
{
	int fd = open(P(name), O_WRONLY | O_APPEND | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static int
exists(const char *path)
{
	struct stat sb;

	return lstat(path, &sb) == 0;
}

/* The one entry of DIR named NAME.pinhole-quarantine-<16 hex>, or "". */
static const char *
quarantined(const char *dir, const char *name)
{
	static char found[NAME_MAX + 1];
	size_t n = strlen(name), q = strlen(QUARANTINE), k;
	struct dirent *de;
	DIR *d = opendir(P(dir));
	int hits = 0;

	found[0] = '\0';
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		const char *s = de->d_name;

		if (strncmp(s, name, n) != 0 || strncmp(s + n, QUARANTINE, q))
			continue;
		s += n + q;
		for (k = 0; s[k] != '\0'; k++)
			if (!((s[k] >= '0' && s[k] <= '9') ||
			        (s[k] >= 'a' && s[k] <= 'f')))
				break;
		/* ...but the one test_unforgeable_names forges */
		if (k == 16 && s[k] == '\0' &&
		    strcmp(s, "0000000000000000") != 0) {
			snprintf(found, sizeof(found), "%s", de->d_name);
			hits++;
		}
	}
	closedir(d);
	assert_true(hits <= 1);
	return found;
}

/* NAME in DIR was moved aside (and only once). */
static void
assert_moved(const char *dir, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (exists(P(path)))
		fail_msg("%s is still there", path);
	if (quarantined(dir, name)[0] == '\0')
		fail_msg("%s was not moved aside", path);
}

static void
assert_kept(const char *path)
{
	if (!exists(P(path)))
		fail_msg("%s was moved", path);
}

static int
rm_one(const char *path, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb;
	(void)flag;
	(void)f;
	chmod(path, 0700);
	return remove(path);
}

/*
 * A repository at TOP (HEAD, config, hooks/, objects/, refs/, info/,
 * modules/m with a submodule's git directory, index), a nested one at
 * old/ that the tests leave alone, and one at mod/ that a test changes.
 */
static int
setup(void **state)
{
	struct fixture *f;
	char tmpl[] = "/tmp/test_gitguard.XXXXXX", *real;

	if ((f = calloc(1, sizeof(*f))) == NULL || mkdtemp(tmpl) == NULL ||
	    (real = realpath(tmpl, NULL)) == NULL)
		return -1;
	snprintf(f->top, sizeof(f->top), "%s", real);
	free(real);
	topdir = f->top;
	make_dir(".git");
	make_file(".git/HEAD", "ref: refs/heads/main\n");
	make_file(".git/config", "[core]\n");
	make_file(".git/index", "DIRC");
	make_dir(".git/hooks");
	make_dir(".git/objects");
	make_dir(".git/refs");
	make_dir(".git/info");
	make_file(".git/info/exclude", "# nothing\n");
	make_dir(".git/modules");
	make_dir(".git/modules/m");
	make_file(".git/modules/m/HEAD", "ref: refs/heads/main\n");
	make_file(".git/modules/m/config", "[core]\n");
	make_dir(".git/modules/m/hooks");
	make_dir(".git/worktrees");
	make_dir("old");
	make_dir("old/.git");
	make_file("old/.git/HEAD", "ref: refs/heads/main\n");
	make_file("old/.git/config", "[core]\n");
	make_dir("old/.git/hooks");
	make_file("old/.git/hooks/pre-commit.sample", "#!/bin/sh\n");
	make_dir("mod");
	make_dir("mod/.git");
	make_file("mod/.git/HEAD", "ref: refs/heads/main\n");
	make_file("mod/.git/config", "[core]\n");
	make_dir("mod/.git/hooks");
	make_file("mod/.git/hooks/pre-commit", "#!/bin/sh\n");
	make_dir("sub");
	make_file("sub/.git", "gitdir: ../.git/modules/m\n");
	make_dir("src");
	make_file("src/main.c", "int main(void) { return 0; }\n");
	f->g = gitguard_new();
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	gitguard_free(f->g);
	nftw(f->top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

/* From now on, what changes counts as planted. */
static void
start_run(struct fixture *f)
{
	struct timespec last, now, ms = {0, 1000000};
	struct stat sb;
	char err[256];
	int fd, i;

	assert_int_equal(
	    gitguard_add_root(f->g, f->top, f->top, err, sizeof(err)), 0);
	assert_int_equal(stat(P("src/main.c"), &sb), 0);
	last = sb.st_ctim;
	fd = open(P("clock"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	for (i = 0; i < 5000; i++) {
		assert_int_equal(fchmod(fd, i % 2 ? 0644 : 0600), 0);
		assert_int_equal(fstat(fd, &sb), 0);
		now = sb.st_ctim;
		if (now.tv_sec > last.tv_sec ||
		    (now.tv_sec == last.tv_sec && now.tv_nsec > last.tv_nsec))
			break;
		nanosleep(&ms, NULL);
	}
	close(fd);
	assert_true(i < 5000);
	assert_int_equal(unlink(P("clock")), 0);
	gitguard_set_since(f->g, &now);
}

static void
said(void *arg, int fail, const char *msg)
{
	struct fixture *f = arg;
	size_t n = strlen(f->said);

	snprintf(
	    f->said + n, sizeof(f->said) - n, "%s %s\n", fail ? "F" : "W", msg);
	f->fails += fail;
}

static int
sweep(struct fixture *f)
{
	f->said[0] = '\0';
	f->fails = 0;
	return gitguard_sweep(f->g, said, f);
}

/* Nothing planted: nothing moved, nothing said. */
static void
test_quiet_run(void **state)
{
	struct fixture *f = *state;

	start_run(f);
	make_file("src/new.c", "\n");
	append("src/main.c", "/* edited */\n");
	assert_int_equal(sweep(f), 0);
	assert_string_equal(f->said, "");
	assert_kept(".git/config");
	assert_kept(".git/hooks");
	assert_kept("mod/.git/config");
	assert_kept("sub/.git");
}

/*
 * The top .git changed (not pinned here): what git runs code from goes,
 * whatever its age; what git runs nothing from stays.
 */
static void
test_top_plants(void **state)
{
	struct fixture *f = *state;

	start_run(f);
	make_file(".git/commondir", "../evil\n");
	make_file(".git/config.worktree", "[core]\n\tfsmonitor = evil\n");
	make_file(".git/objects/ab", "blob");
	make_file(".git/hooks/pre-commit", "#!/bin/sh\nevil\n");
	append(".git/index", "more");
	assert_int_equal(sweep(f), 0);
	assert_moved(".git", "commondir");
	assert_moved(".git", "config.worktree");
	assert_moved(".git", "config");
	assert_moved(".git", "hooks");
	assert_kept(".git/HEAD");
	assert_kept(".git/index");
	assert_kept(".git/objects/ab");
	assert_kept(".git/info/exclude");
	assert_kept("old/.git/config");
	assert_int_equal(f->fails, 0);
	assert_non_null(strstr(f->said, "/.git/commondir is new"));
}

/* A new nested repository, as vendor/lib/.git with a gitlink. */
static void
test_nested_new(void **state)
{
	struct fixture *f = *state;

	start_run(f);
	make_dir("vendor");
	make_dir("vendor/lib");
	make_dir("vendor/lib/.git");
	make_file("vendor/lib/.git/HEAD", "ref: refs/heads/main\n");
	make_file("vendor/lib/.git/config", "[core]\n\tfsmonitor = evil\n");
	make_dir("vendor/lib/.git/hooks");
	make_file("vendor/lib/.git/hooks/pre-commit", "evil");
	make_dir("vendor/lib/.git/objects");
	make_dir("deep");
	make_dir("deep/er");
	make_file("deep/er/.git", "gitdir: ../../elsewhere\n");
	make_file("deep/.GIT", "gitdir: ../elsewhere\n");
	assert_int_equal(symlink("../mod/.git", P("src/.git")), 0);
	assert_int_equal(sweep(f), 0);
	assert_moved("vendor/lib/.git", "config");
	assert_moved("vendor/lib/.git", "hooks");
	assert_kept("vendor/lib/.git/HEAD");
	assert_kept("vendor/lib/.git/objects");
	assert_moved("deep/er", ".git");
	assert_moved("deep", ".GIT");
	assert_moved("src", ".git");
	assert_kept("old/.git/config");
	assert_kept("old/.git/hooks/pre-commit.sample");
	assert_kept("mod/.git/config");
}

/* An old nested repository: only what changed goes. */
static void
test_nested_changed(void **state)
{
	struct fixture *f = *state;

	start_run(f);
	append("mod/.git/config", "[core]\n\tpager = evil\n");
	append("mod/.git/hooks/pre-commit", "evil\n");
	assert_int_equal(sweep(f), 0);
	assert_moved("mod/.git", "config");
	assert_moved("mod/.git", "hooks");
	assert_kept("mod/.git/HEAD");
	assert_kept("old/.git/config");
	assert_kept("old/.git/hooks");
}

/* A bare repository made in the tree: git run in it reads its config. */
static void
test_bare_new(void **state)
{
	struct fixture *f = *state;

	start_run(f);
	make_dir("src/b");
	make_file("src/b/HEAD", "ref: refs/heads/main\n");
	make_dir("src/b/objects");
	make_dir("src/b/refs");
	make_file("src/b/config", "[core]\n\tfsmonitor = evil\n");
	make_dir("src/b/hooks");
	make_file("src/b/hooks/post-checkout", "#!/bin/sh\nevil\n");
	make_dir("src/b/refs/.git");
	assert_int_equal(sweep(f), 0);
	assert_moved("src/b", "config");
	assert_moved("src/b", "hooks");
	assert_kept("src/b/HEAD");
	assert_kept("src/b/refs/.git");
}

/*
 * A new repository's hooks/ that holds only git's *.sample templates runs
 * nothing and stays; one sample that is not a regular file, or any other
 * name, and hooks/ goes aside whole.
 */
static void
test_hooks_samples(void **state)
{
	struct fixture *f = *state;

	start_run(f);
	make_dir("c1");
	make_dir("c1/.git");
	make_dir("c1/.git/objects");
	make_dir("c1/.git/refs");
	make_dir("c1/.git/hooks");
	make_file("c1/.git/HEAD", "ref: refs/heads/main\n");
	make_file("c1/.git/hooks/pre-commit.sample", "#!/bin/sh\n");
	make_file("c1/.git/hooks/update.sample", "#!/bin/sh\n");
	make_dir("c2");
	make_dir("c2/.git");
	make_dir("c2/.git/objects");
	make_dir("c2/.git/refs");
	make_dir("c2/.git/hooks");
	make_file("c2/.git/HEAD", "ref: refs/heads/main\n");
	make_file("c2/.git/hooks/pre-commit.sample", "#!/bin/sh\n");
	make_dir("c2/.git/hooks/x.sample");
	assert_int_equal(sweep(f), 0);
	assert_kept("c1/.git/hooks/pre-commit.sample");
	assert_kept("c1/.git/hooks/update.sample");
	assert_moved("c2/.git", "hooks");
}

/* HEAD and commondir are enough for git to take a directory as one. */
static void
test_bare_commondir(void **state)
{
	struct fixture *f = *state;

	start_run(f);
	make_dir("src/w");
	make_file("src/w/HEAD", "ref: refs/heads/main\n");
	make_file("src/w/commondir", "../../evil\n");
	make_file("src/w/config.worktree", "[core]\n\tpager = evil\n");
	assert_int_equal(sweep(f), 0);
	assert_moved("src/w", "commondir");
	assert_moved("src/w", "config.worktree");
	assert_kept("src/w/HEAD");
}

/*
 * A submodule's git directory (modules/m) and a linked worktree's
 * (worktrees/w), reached through modules/ and worktrees/.
 */
static void
test_modules_worktrees(void **state)
{
	struct fixture *f = *state;

	start_run(f);
	append(".git/modules/m/config", "[core]\n\tfsmonitor = evil\n");
	make_file(".git/modules/m/hooks/post-checkout", "evil");
	make_dir(".git/modules/a");
	make_dir(".git/modules/a/b");
	make_file(".git/modules/a/b/HEAD", "ref: refs/heads/main\n");
	make_file(".git/modules/a/b/config", "[core]\n");
	make_dir(".git/worktrees/w");
	make_file(".git/worktrees/w/HEAD", "ref: refs/heads/w\n");
	make_file(".git/worktrees/w/commondir", "../..\n");
	make_file(".git/worktrees/w/gitdir", "/elsewhere/.git\n");
	make_file(".git/worktrees/w/config.worktree", "[core]\n");
	assert_int_equal(sweep(f), 0);
	assert_moved(".git/modules/m", "config");
	assert_moved(".git/modules/m", "hooks");
	assert_kept(".git/modules/m/HEAD");
	assert_moved(".git/modules/a/b", "config");
	assert_kept(".git/modules/a/b/HEAD");
	assert_moved(".git/worktrees/w", "commondir");
	assert_moved(".git/worktrees/w", "gitdir");
	assert_moved(".git/worktrees/w", "config.worktree");
	assert_kept(".git/worktrees/w/HEAD");
	/* The old top config did not change, and .git did not either. */
	assert_kept(".git/config");
	assert_kept(".git/hooks");
}

/*
 * A directory renamed into place is new, and so is what it holds, old
 * as that is (a file planted by an earlier run under another name).
 */
static void
test_renamed_into_place(void **state)
{
	struct fixture *f = *state;

	make_dir("stash");
	make_dir("stash/x");
	make_file("stash/x/HEAD", "ref: refs/heads/main\n");
	make_file("stash/x/config", "[core]\n\tfsmonitor = evil\n");
	start_run(f);
	assert_int_equal(rename(P("stash/x"), P(".git/modules/x")), 0);
	assert_int_equal(sweep(f), 0);
	assert_moved(".git/modules/x", "config");
	assert_kept(".git/modules/x/HEAD");
}

/*
 * Quarantine names are made at random: what the sandbox made under the
 * old fixed name, or under a name of the new form, blocks nothing.
 */
static void
test_unforgeable_names(void **state)
{
	struct fixture *f = *state;
	char first[NAME_MAX + 1];

	start_run(f);
	make_file("mod/.git/commondir", "../evil\n");
	make_dir("mod/.git/commondir.pinhole-quarantine");
	make_file("mod/.git/commondir.pinhole-quarantine/x", "full");
	make_dir("mod/.git/commondir.pinhole-quarantine-0000000000000000");
	make_file(
	    "mod/.git/commondir.pinhole-quarantine-0000000000000000/x", "full");
	assert_int_equal(sweep(f), 0);
	assert_false(exists(P("mod/.git/commondir")));
	/*
	 * The old fixed name is an unknown name: aside too.  The forged new
	 * form stays (git never reads it) and took nothing's place.
	 */
	assert_false(exists(P("mod/.git/commondir.pinhole-quarantine")));
	assert_true(exists(
	    P("mod/.git/commondir.pinhole-quarantine-0000000000000000/x")));
	snprintf(
	    first, sizeof(first), "%s", quarantined("mod/.git", "commondir"));
	assert_true(first[0] != '\0');
	assert_string_not_equal(
	    first, "commondir.pinhole-quarantine-0000000000000000");
	/* A second plant gets another name. */
	make_file("mod/.git/commondir", "../evil\n");
	assert_int_equal(sweep(f), 0);
	assert_false(exists(P("mod/.git/commondir")));
	assert_int_equal(f->fails, 0);
	/* What was moved aside is not moved again (its ctime is new). */
	assert_int_equal(sweep(f), 0);
	assert_string_equal(f->said, "");
}

/* Past a bound, the sweep fails and says where: never a silent pass. */
static void
test_depth_bound(void **state)
{
	struct fixture *f = *state;
	char path[PATH_MAX] = "d";
	int i;

	start_run(f);
	gitguard_set_limits(f->g, 4, GITGUARD_ENTRIES_MAX);
	make_dir(path);
	for (i = 0; i < 6; i++) {
		strcat(path, "/d");
		make_dir(path);
	}
	strcat(path, "/.git");
	make_file(path, "gitdir: /evil\n");
	assert_int_equal(sweep(f), -1);
	assert_true(f->fails >= 1);
	assert_non_null(strstr(f->said, "F more than 4 directories deep"));
}

static void
test_entries_bound(void **state)
{
	struct fixture *f = *state;

	start_run(f);
	gitguard_set_limits(f->g, GITGUARD_DEPTH_MAX, 10);
	assert_int_equal(sweep(f), -1);
	assert_non_null(strstr(f->said, "F more than 10 entries"));
}

/*
 * A plant that cannot be read (root reads anything: checked by uid).  An
 * old directory that nobody may search is no failure: nothing in it can
 * have changed.
 */
static void
test_unreadable(void **state)
{
	struct fixture *f = *state;

	make_dir("closed");
	assert_int_equal(chmod(P("closed"), 0600), 0);
	start_run(f);
	make_dir("locked");
	make_dir("locked/r");
	make_file("locked/r/.git", "gitdir: /evil\n");
	assert_int_equal(chmod(P("locked"), 0), 0);
	if (geteuid() == 0) {
		/* CAP_DAC_OVERRIDE: the sweep reads it and moves it. */
		assert_int_equal(sweep(f), 0);
		assert_int_equal(chmod(P("locked"), 0755), 0);
		assert_moved("locked/r", ".git");
		return;
	}
	assert_int_equal(sweep(f), -1);
	assert_non_null(strstr(f->said, "F cannot read"));
	assert_non_null(strstr(f->said, "/locked"));
	assert_null(strstr(f->said, "/closed"));
	assert_int_equal(chmod(P("locked"), 0755), 0);
}

/* A new .git that cannot be read goes aside whole: neutralised. */
static void
test_unreadable_dotgit(void **state)
{
	struct fixture *f = *state;

	start_run(f);
	make_dir("n");
	make_dir("n/.git");
	make_file("n/.git/config", "[core]\n\tfsmonitor = evil\n");
	assert_int_equal(chmod(P("n/.git"), 0), 0);
	assert_int_equal(sweep(f), 0);
	assert_int_equal(f->fails, 0);
	if (geteuid() == 0) {
		assert_moved("n/.git", "config");
		return;
	}
	assert_moved("n", ".git");
}

/* A root that is gone: said, not a crash. */
static void
test_add_root_missing(void **state)
{
	struct fixture *f = *state;
	char err[256];

	assert_int_equal(
	    gitguard_add_root(f->g, P("nowhere"), "nowhere", err, sizeof(err)),
	    -1);
	assert_non_null(strstr(err, "nowhere"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_quiet_run, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_top_plants, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_nested_new, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_nested_changed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bare_new, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_hooks_samples, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_bare_commondir, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_modules_worktrees, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_renamed_into_place, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_unforgeable_names, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_depth_bound, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_entries_bound, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unreadable, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_unreadable_dotgit, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_add_root_missing, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
