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
#include "tests/unit/fixture.h"

#define QUARANTINE ".pinhole-quarantine-"

struct fixture {
	char top[PATH_MAX];
	struct gitguard *g;
	char said[8192]; /* every line the sweep said, "W " or "F " first */
	int fails;
};

/* TOP/NAME of the scratch tree (fixture.h). */
#define P(name) fixture_path(name)

static void
append(const char *name, const char *text)
{
	int fd = open(P(name), O_WRONLY | O_APPEND | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
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
	if (fixture_exists(P(path)))
		fail_msg("%s is still there", path);
	if (quarantined(dir, name)[0] == '\0')
		fail_msg("%s was not moved aside", path);
}

static void
assert_kept(const char *path)
{
	if (!fixture_exists(P(path)))
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
	fixture_tree_top(f->top);
	fixture_mkdir(".git");
	fixture_mkfile(".git/HEAD", "ref: refs/heads/main\n");
	fixture_mkfile(".git/config", "[core]\n");
	fixture_mkfile(".git/index", "DIRC");
	fixture_mkdir(".git/hooks");
	fixture_mkdir(".git/objects");
	fixture_mkdir(".git/refs");
	fixture_mkdir(".git/info");
	fixture_mkfile(".git/info/exclude", "# nothing\n");
	fixture_mkdir(".git/modules");
	fixture_mkdir(".git/modules/m");
	fixture_mkfile(".git/modules/m/HEAD", "ref: refs/heads/main\n");
	fixture_mkfile(".git/modules/m/config", "[core]\n");
	fixture_mkdir(".git/modules/m/hooks");
	fixture_mkdir(".git/worktrees");
	fixture_mkdir("old");
	fixture_mkdir("old/.git");
	fixture_mkfile("old/.git/HEAD", "ref: refs/heads/main\n");
	fixture_mkfile("old/.git/config", "[core]\n");
	fixture_mkdir("old/.git/hooks");
	fixture_mkfile("old/.git/hooks/pre-commit.sample", "#!/bin/sh\n");
	fixture_mkdir("mod");
	fixture_mkdir("mod/.git");
	fixture_mkfile("mod/.git/HEAD", "ref: refs/heads/main\n");
	fixture_mkfile("mod/.git/config", "[core]\n");
	fixture_mkdir("mod/.git/hooks");
	fixture_mkfile("mod/.git/hooks/pre-commit", "#!/bin/sh\n");
	fixture_mkdir("sub");
	fixture_mkfile("sub/.git", "gitdir: ../.git/modules/m\n");
	fixture_mkdir("src");
	fixture_mkfile("src/main.c", "int main(void) { return 0; }\n");
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
	fixture_mkfile("src/new.c", "\n");
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
	fixture_mkfile(".git/commondir", "../evil\n");
	fixture_mkfile(".git/config.worktree", "[core]\n\tfsmonitor = evil\n");
	fixture_mkfile(".git/objects/ab", "blob");
	fixture_mkfile(".git/hooks/pre-commit", "#!/bin/sh\nevil\n");
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
	fixture_mkdir("vendor");
	fixture_mkdir("vendor/lib");
	fixture_mkdir("vendor/lib/.git");
	fixture_mkfile("vendor/lib/.git/HEAD", "ref: refs/heads/main\n");
	fixture_mkfile(
	    "vendor/lib/.git/config", "[core]\n\tfsmonitor = evil\n");
	fixture_mkdir("vendor/lib/.git/hooks");
	fixture_mkfile("vendor/lib/.git/hooks/pre-commit", "evil");
	fixture_mkdir("vendor/lib/.git/objects");
	fixture_mkdir("deep");
	fixture_mkdir("deep/er");
	fixture_mkfile("deep/er/.git", "gitdir: ../../elsewhere\n");
	fixture_mkfile("deep/.GIT", "gitdir: ../elsewhere\n");
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
	fixture_mkdir("src/b");
	fixture_mkfile("src/b/HEAD", "ref: refs/heads/main\n");
	fixture_mkdir("src/b/objects");
	fixture_mkdir("src/b/refs");
	fixture_mkfile("src/b/config", "[core]\n\tfsmonitor = evil\n");
	fixture_mkdir("src/b/hooks");
	fixture_mkfile("src/b/hooks/post-checkout", "#!/bin/sh\nevil\n");
	fixture_mkdir("src/b/refs/.git");
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
	fixture_mkdir("c1");
	fixture_mkdir("c1/.git");
	fixture_mkdir("c1/.git/objects");
	fixture_mkdir("c1/.git/refs");
	fixture_mkdir("c1/.git/hooks");
	fixture_mkfile("c1/.git/HEAD", "ref: refs/heads/main\n");
	fixture_mkfile("c1/.git/hooks/pre-commit.sample", "#!/bin/sh\n");
	fixture_mkfile("c1/.git/hooks/update.sample", "#!/bin/sh\n");
	fixture_mkdir("c2");
	fixture_mkdir("c2/.git");
	fixture_mkdir("c2/.git/objects");
	fixture_mkdir("c2/.git/refs");
	fixture_mkdir("c2/.git/hooks");
	fixture_mkfile("c2/.git/HEAD", "ref: refs/heads/main\n");
	fixture_mkfile("c2/.git/hooks/pre-commit.sample", "#!/bin/sh\n");
	fixture_mkdir("c2/.git/hooks/x.sample");
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
	fixture_mkdir("src/w");
	fixture_mkfile("src/w/HEAD", "ref: refs/heads/main\n");
	fixture_mkfile("src/w/commondir", "../../evil\n");
	fixture_mkfile("src/w/config.worktree", "[core]\n\tpager = evil\n");
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
	fixture_mkfile(".git/modules/m/hooks/post-checkout", "evil");
	fixture_mkdir(".git/modules/a");
	fixture_mkdir(".git/modules/a/b");
	fixture_mkfile(".git/modules/a/b/HEAD", "ref: refs/heads/main\n");
	fixture_mkfile(".git/modules/a/b/config", "[core]\n");
	fixture_mkdir(".git/worktrees/w");
	fixture_mkfile(".git/worktrees/w/HEAD", "ref: refs/heads/w\n");
	fixture_mkfile(".git/worktrees/w/commondir", "../..\n");
	fixture_mkfile(".git/worktrees/w/gitdir", "/elsewhere/.git\n");
	fixture_mkfile(".git/worktrees/w/config.worktree", "[core]\n");
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

	fixture_mkdir("stash");
	fixture_mkdir("stash/x");
	fixture_mkfile("stash/x/HEAD", "ref: refs/heads/main\n");
	fixture_mkfile("stash/x/config", "[core]\n\tfsmonitor = evil\n");
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
	fixture_mkfile("mod/.git/commondir", "../evil\n");
	fixture_mkdir("mod/.git/commondir.pinhole-quarantine");
	fixture_mkfile("mod/.git/commondir.pinhole-quarantine/x", "full");
	fixture_mkdir("mod/.git/commondir.pinhole-quarantine-0000000000000000");
	fixture_mkfile(
	    "mod/.git/commondir.pinhole-quarantine-0000000000000000/x", "full");
	assert_int_equal(sweep(f), 0);
	assert_false(fixture_exists(P("mod/.git/commondir")));
	/*
	 * The old fixed name is an unknown name: aside too.  The forged new
	 * form stays (git never reads it) and took nothing's place.
	 */
	assert_false(
	    fixture_exists(P("mod/.git/commondir.pinhole-quarantine")));
	assert_true(fixture_exists(
	    P("mod/.git/commondir.pinhole-quarantine-0000000000000000/x")));
	snprintf(
	    first, sizeof(first), "%s", quarantined("mod/.git", "commondir"));
	assert_true(first[0] != '\0');
	assert_string_not_equal(
	    first, "commondir.pinhole-quarantine-0000000000000000");
	/* A second plant gets another name. */
	fixture_mkfile("mod/.git/commondir", "../evil\n");
	assert_int_equal(sweep(f), 0);
	assert_false(fixture_exists(P("mod/.git/commondir")));
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
	fixture_mkdir(path);
	for (i = 0; i < 6; i++) {
		strcat(path, "/d");
		fixture_mkdir(path);
	}
	strcat(path, "/.git");
	fixture_mkfile(path, "gitdir: /evil\n");
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

	fixture_mkdir("closed");
	assert_int_equal(chmod(P("closed"), 0600), 0);
	start_run(f);
	fixture_mkdir("locked");
	fixture_mkdir("locked/r");
	fixture_mkfile("locked/r/.git", "gitdir: /evil\n");
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
	fixture_mkdir("n");
	fixture_mkdir("n/.git");
	fixture_mkfile("n/.git/config", "[core]\n\tfsmonitor = evil\n");
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
