/*
 * test_cgroup.c: unit tests of netns/cgroup.c.  The parsers are table
 * driven; the choice of v1 or v2, the files written and the removal run
 * against a fake cgroup tree in a temporary directory (the module takes
 * the mount points from the mountinfo text it is given).  A real cgroup v2
 * with pids and memory delegated is tried too when this machine has one;
 * when it has none, a loud line says so.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "netns/cgroup.h"

static char root[PATH_MAX];

/* --- helpers ------------------------------------------------------------- */

static void
mkdirs(const char *rel)
{
	char path[PATH_MAX * 2], *p;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (p = path + strlen(root) + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
		*p = '/';
	}
	assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

static void
put(const char *rel, const char *text)
{
	char path[PATH_MAX * 2];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void
get(const char *rel, char *buf, size_t len)
{
	char path[PATH_MAX * 2];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	buf[0] = '\0';
	if ((f = fopen(path, "r")) == NULL)
		fail_msg("%s: %s", path, strerror(errno));
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static int
exists(const char *rel)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return access(path, F_OK) == 0;
}

static void
rm(const char *rel)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(unlink(path), 0);
}

/* A mountinfo text with ROOT's v1 pids and memory and its cgroup2. */
static char *
fake_mountinfo(void)
{
	char *mi = NULL;

	assert_true(asprintf(&mi,
	                "22 1 0:20 / / rw,relatime - ext4 /dev/vda rw\n"
	                "30 22 0:26 / %s/pids rw,relatime shared:9 - cgroup "
	                "cgroup rw,pids\n"
	                "31 22 0:27 / %s/mem\\040ory rw,relatime - cgroup "
	                "cgroup rw,memory\n"
	                "32 22 0:28 / %s/unified rw,relatime - cgroup2 "
	                "cgroup2 rw,nsdelegate\n",
	                root, root, root) > 0);
	return mi;
}

static int
setup(void **state)
{
	char tmpl[] = "/tmp/test_cgroup.XXXXXX";

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	snprintf(root, sizeof(root), "%s", tmpl);
	return 0;
}

static int
teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

/* --- parsing ------------------------------------------------------------- */

static void
test_proc_path(void **state)
{
	static const char text[] = "12:pids:/user.slice/u.scope\n"
	                           "4:cpu,cpuacct:/a\n"
	                           "3:name=systemd:/sys\n"
	                           "2:memory:/with:colon\n"
	                           "1:blkio:relative\n"
	                           "0::/user.slice/app.scope\n";
	static const struct {
		const char *ctrl, *want; /* want NULL: -1 */
	} cases[] = {
	    {"pids", "/user.slice/u.scope"},
	    {"cpu", "/a"},
	    {"cpuacct", "/a"},
	    {"memory", "/with:colon"},
	    {"blkio", NULL}, /* not absolute */
	    {"systemd", NULL}, /* "name=systemd" is no controller */
	    {"cpuset", NULL},
	    {"pid", NULL},
	    {NULL, "/user.slice/app.scope"},
	};
	char out[PATH_MAX];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = cgroup_proc_path(text, cases[i].ctrl, out, sizeof(out));

		if (cases[i].want == NULL) {
			assert_int_equal(r, -1);
			continue;
		}
		assert_int_equal(r, 0);
		assert_string_equal(out, cases[i].want);
	}
	assert_int_equal(cgroup_proc_path("0::/a/../b\n", NULL, out, 64), -1);
	assert_int_equal(cgroup_proc_path("0::/a/..", NULL, out, 64), -1);
	assert_int_equal(cgroup_proc_path("0::/abc", NULL, out, 4), -1);
	assert_int_equal(cgroup_proc_path("", NULL, out, 64), -1);
	assert_int_equal(cgroup_proc_path("0:/x", NULL, out, 64), -1);
	assert_int_equal(cgroup_proc_path("0::/", NULL, out, 64), 0);
	assert_string_equal(out, "/");
}

static void
test_mount_dir(void **state)
{
	static const char mi[] =
	    "22 1 0:20 / / rw - ext4 /dev/vda rw\n"
	    "30 22 0:26 / /sys/fs/cgroup/pids rw shared:9 master:2 - cgroup "
	    "cgroup rw,pids\n"
	    "31 22 0:27 /docker/abc /sys/fs/cgroup/mem\\040x rw - cgroup "
	    "cgroup rw,memory,memsw\n"
	    "32 22 0:28 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
	    "33 22 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup "
	    "rw,cpu,cpuacct\n"
	    "34 22 0:30 / /broken rw cgroup\n";
	static const struct {
		const char *ctrl, *path, *want;
	} cases[] = {
	    {"pids", "/", "/sys/fs/cgroup/pids"},
	    {"pids", "/a/b", "/sys/fs/cgroup/pids/a/b"},
	    {"memory", "/docker/abc", "/sys/fs/cgroup/mem x"},
	    {"memory", "/docker/abc/x", "/sys/fs/cgroup/mem x/x"},
	    {"memory", "/docker/abcd", NULL}, /* not under the root */
	    {"memory", "/other", NULL},
	    {NULL, "/u.slice", "/sys/fs/cgroup/unified/u.slice"},
	    {"cpuacct", "/z", "/sys/fs/cgroup/cpu/z"},
	    {"freezer", "/", NULL},
	    {"cgroup", "/", NULL},
	};
	char out[PATH_MAX];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = cgroup_mount_dir(
		    mi, cases[i].ctrl, cases[i].path, out, sizeof(out));

		if (cases[i].want == NULL) {
			assert_int_equal(r, -1);
			continue;
		}
		assert_int_equal(r, 0);
		assert_string_equal(out, cases[i].want);
	}
	assert_int_equal(cgroup_mount_dir("", NULL, "/", out, 64), -1);
}

/* --- choosing ------------------------------------------------------------ */

/* A delegated v2 cgroup u.scope, controllers CTRLS enabled below: SUB. */
static void
fake_v2(const char *ctrls, const char *sub, int procs)
{
	mkdirs("unified/user.slice/u.scope");
	put("unified/user.slice/u.scope/cgroup.type",
	    "domain\n"); /* not root */
	put("unified/user.slice/u.scope/cgroup.controllers", ctrls);
	put("unified/user.slice/u.scope/cgroup.subtree_control", sub);
	if (procs)
		put("unified/user.slice/u.scope/cgroup.procs", "");
}

static void
test_find_v2(void **state)
{
	static const char proc[] = "0::/user.slice/u.scope\n";
	char *mi = fake_mountinfo(), dir[PATH_MAX * 2], me[32];
	struct cgroup_where w;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/unified/user.slice/u.scope", root);
	snprintf(me, sizeof(me), "%d\n", (int)getpid());
	/* Other processes in it: it can give no child a controller. */
	fake_v2("cpu memory pids\n", "\n", 0);
	put("unified/user.slice/u.scope/cgroup.procs", "1\n");
	cgroup_find(proc, mi, &w);
	assert_int_equal(w.version[CGROUP_PIDS], 0);
	assert_int_equal(w.version[CGROUP_MEMORY], 0);
	assert_non_null(strstr(w.why[CGROUP_PIDS], "besides pinhole"));
	assert_non_null(strstr(w.why[CGROUP_MEMORY], "besides pinhole"));
	/* pinhole alone: both, once it moves into a leaf. */
	put("unified/user.slice/u.scope/cgroup.procs", me);
	cgroup_find(proc, mi, &w);
	assert_int_equal(w.version[CGROUP_PIDS], 2);
	assert_string_equal(w.dir[CGROUP_PIDS], dir);
	assert_int_equal(w.version[CGROUP_MEMORY], 2);
	assert_string_equal(w.dir[CGROUP_MEMORY], dir);
	assert_true(w.move[CGROUP_PIDS] && w.move[CGROUP_MEMORY]);
	/* Not in cgroup.controllers: not delegated; no v1 either. */
	fake_v2("cpu\n", "\n", 1);
	cgroup_find(proc, mi, &w);
	assert_int_equal(w.version[CGROUP_PIDS], 0);
	assert_non_null(strstr(w.why[CGROUP_PIDS], "cgroup.controllers"));
	assert_non_null(strstr(w.why[CGROUP_PIDS], "no v1 pids"));
	/* No cgroup.procs to write: not delegated. */
	rm("unified/user.slice/u.scope/cgroup.procs");
	fake_v2("memory pids\n", "\n", 0);
	cgroup_find(proc, mi, &w);
	assert_int_equal(w.version[CGROUP_PIDS], 0);
	assert_non_null(strstr(w.why[CGROUP_PIDS], "cgroup.procs"));
	/* A cgroup namespace's root ("/" too, but with a cgroup.type): no. */
	mkdirs("unified");
	put("unified/cgroup.type", "domain\n");
	put("unified/cgroup.controllers", "memory pids\n");
	put("unified/cgroup.subtree_control", "");
	put("unified/cgroup.procs", "1\n2\n");
	cgroup_find("0::/\n", mi, &w);
	assert_int_equal(w.version[CGROUP_PIDS], 0);
	assert_int_equal(w.version[CGROUP_MEMORY], 0);
	rm("unified/cgroup.type");
	/* The root cgroup may hold processes and enable both. */
	cgroup_find("0::/\n", mi, &w);
	assert_int_equal(w.version[CGROUP_PIDS], 2);
	assert_int_equal(w.version[CGROUP_MEMORY], 2);
	assert_false(w.move[CGROUP_MEMORY]);
	snprintf(dir, sizeof(dir), "%s/unified", root);
	assert_string_equal(w.dir[CGROUP_MEMORY], dir);
	free(mi);
}

static void
test_find_v1(void **state)
{
	static const char proc[] = "8:pids:/\n4:memory:/a/b\n0::/\n";
	char *mi = fake_mountinfo(), dir[PATH_MAX * 2];
	struct cgroup_where w;

	(void)state;
	mkdirs("pids");
	put("pids/cgroup.procs", "");
	mkdirs("mem ory/a/b");
	put("mem ory/a/b/cgroup.procs", "");
	mkdirs("unified");
	put("unified/cgroup.controllers", "\n");
	cgroup_find(proc, mi, &w);
	assert_int_equal(w.version[CGROUP_PIDS], 1);
	snprintf(dir, sizeof(dir), "%s/pids", root);
	assert_string_equal(w.dir[CGROUP_PIDS], dir);
	assert_int_equal(w.version[CGROUP_MEMORY], 1);
	snprintf(dir, sizeof(dir), "%s/mem ory/a/b", root);
	assert_string_equal(w.dir[CGROUP_MEMORY], dir);
	/* Hybrid: pids in v2 wins over v1. */
	put("unified/cgroup.controllers", "pids\n");
	put("unified/cgroup.subtree_control", "");
	put("unified/cgroup.procs", "");
	cgroup_find(proc, mi, &w);
	assert_int_equal(w.version[CGROUP_PIDS], 2);
	assert_int_equal(w.version[CGROUP_MEMORY], 1);
	/* No writable cgroup.procs in the memory hierarchy: none. */
	rm("mem ory/a/b/cgroup.procs");
	cgroup_find(proc, mi, &w);
	assert_int_equal(w.version[CGROUP_MEMORY], 0);
	assert_non_null(strstr(w.why[CGROUP_MEMORY], "cgroup.procs"));
	free(mi);
}

/* --- making and removing -------------------------------------------------- */

/* A child that waits: what cgroup_remove must kill. */
static pid_t
sleeper(void)
{
	pid_t pid;

	if ((pid = fork()) == 0) {
		pause();
		_exit(0);
	}
	assert_true(pid > 0);
	return pid;
}

static void
reaped_by_sigkill(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGKILL);
}

static void
test_create_v1(void **state)
{
	static const char proc[] = "8:pids:/\n4:memory:/a/b\n0::/\n";
	char *mi = fake_mountinfo(), buf[256], err[PATH_MAX + 64];
	struct cgroup_where w;
	struct cgroup *cg;
	pid_t child;

	(void)state;
	mkdirs("pids/run-1"); /* stale and empty: replaced */
	put("pids/cgroup.procs", "");
	mkdirs("mem ory/a/b");
	put("mem ory/a/b/cgroup.procs", "");
	cgroup_find(proc, mi, &w);
	assert_non_null(
	    cg = cgroup_create(&w, "run-1", 100, 64 << 20, err, sizeof(err)));
	assert_true(cgroup_has(cg, CGROUP_PIDS));
	assert_true(cgroup_has(cg, CGROUP_MEMORY));
	get("pids/run-1/pids.max", buf, sizeof(buf));
	assert_string_equal(buf, "100\n");
	get("mem ory/a/b/run-1/memory.limit_in_bytes", buf, sizeof(buf));
	assert_string_equal(buf, "67108864\n");
	/* No swap accounting here: no memsw file made. */
	assert_false(exists("mem ory/a/b/run-1/memory.memsw.limit_in_bytes"));
	cgroup_describe(cg, &w, buf, sizeof(buf));
	assert_non_null(strstr(buf, "v1 pids in "));
	assert_non_null(strstr(buf, "v1 memory in "));
	child = sleeper();
	assert_int_equal(cgroup_attach(cg, child, err, sizeof(err)), 0);
	snprintf(err, sizeof(err), "%d\n", (int)child);
	get("pids/run-1/cgroup.procs", buf, sizeof(buf));
	assert_string_equal(buf, err);
	/* Not empty (a fake tree's files): killed, then ENOTEMPTY. */
	assert_int_equal(cgroup_remove(cg, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "run-1: Directory not empty"));
	reaped_by_sigkill(child);
	rm("pids/run-1/pids.max");
	rm("pids/run-1/cgroup.procs");
	rm("mem ory/a/b/run-1/memory.limit_in_bytes");
	rm("mem ory/a/b/run-1/cgroup.procs");
	assert_int_equal(cgroup_remove(cg, err, sizeof(err)), 0);
	assert_false(exists("pids/run-1"));
	assert_false(exists("mem ory/a/b/run-1"));
	cgroup_free(cg); /* removed already: nothing to do */
	free(mi);
}

/* v1 pids and memory mounted together: one directory holds both. */
static void
test_create_v1_comounted(void **state)
{
	char *mi = NULL, buf[PATH_MAX * 2], err[PATH_MAX + 64];
	struct cgroup_where w;
	struct cgroup *cg;

	(void)state;
	assert_true(asprintf(&mi,
	                "30 22 0:26 / %s/both rw - cgroup cgroup "
	                "rw,memory,pids\n",
	                root) > 0);
	mkdirs("both/x");
	put("both/x/cgroup.procs", "");
	cgroup_find("3:memory,pids:/x\n", mi, &w);
	assert_int_equal(w.version[CGROUP_PIDS], 1);
	assert_int_equal(w.version[CGROUP_MEMORY], 1);
	assert_non_null(
	    cg = cgroup_create(&w, "c", 7, 1 << 20, err, sizeof(err)));
	get("both/x/c/pids.max", buf, sizeof(buf));
	assert_string_equal(buf, "7\n");
	get("both/x/c/memory.limit_in_bytes", buf, sizeof(buf));
	assert_string_equal(buf, "1048576\n");
	cgroup_describe(cg, &w, buf, sizeof(buf));
	assert_non_null(strstr(buf, "v1 pids and memory in "));
	rm("both/x/c/pids.max");
	rm("both/x/c/memory.limit_in_bytes");
	cgroup_free(cg);
	assert_false(exists("both/x/c"));
	free(mi);
}

/* A stale directory that is not empty cannot be replaced: the run fails. */
static void
test_create_stale(void **state)
{
	static const char proc[] = "4:memory:/\n0::/\n";
	char *mi = fake_mountinfo(), err[PATH_MAX + 64];
	struct cgroup_where w;

	(void)state;
	mkdirs("mem ory/run-2");
	put("mem ory/cgroup.procs", "");
	put("mem ory/run-2/memory.limit_in_bytes", "max\n");
	cgroup_find(proc, mi, &w);
	assert_null(cgroup_create(&w, "run-2", 0, 1 << 20, err, sizeof(err)));
	assert_non_null(strstr(err, "run-2: Directory not empty"));
	free(mi);
}

/* The root cgroup: no move; controllers enabled only when off. */
static void
test_create_v2(void **state)
{
	char *mi = fake_mountinfo(), buf[PATH_MAX * 3], err[PATH_MAX + 64];
	struct cgroup_where w;
	struct cgroup *cg;

	(void)state;
	mkdirs("unified");
	put("unified/cgroup.controllers", "memory pids\n");
	put("unified/cgroup.subtree_control", "memory pids\n");
	put("unified/cgroup.procs", "1\n");
	cgroup_find("0::/\n", mi, &w);
	assert_non_null(
	    cg = cgroup_create(&w, "r", 64, 32 << 20, err, sizeof(err)));
	assert_false(exists("unified/r-run"));
	get("unified/cgroup.subtree_control", buf, sizeof(buf));
	assert_string_equal(buf, "memory pids\n");
	get("unified/r/pids.max", buf, sizeof(buf));
	assert_string_equal(buf, "64\n");
	get("unified/r/memory.max", buf, sizeof(buf));
	assert_string_equal(buf, "33554432\n");
	/* No swap accounting here: no memory.swap.max made. */
	assert_false(exists("unified/r/memory.swap.max"));
	cgroup_describe(cg, &w, buf, sizeof(buf));
	assert_non_null(strstr(buf, "v2 pids and memory in "));
	assert_null(strstr(buf, "waits in"));
	rm("unified/r/pids.max");
	rm("unified/r/memory.max");
	cgroup_free(cg); /* removes it */
	assert_false(exists("unified/r"));
	/* pids off: "+pids" is written; disabled again after the run. */
	put("unified/cgroup.subtree_control", "memory\n");
	assert_non_null(cg = cgroup_create(&w, "r", 64, 0, err, sizeof(err)));
	assert_false(cgroup_has(cg, CGROUP_MEMORY));
	get("unified/cgroup.subtree_control", buf, sizeof(buf));
	assert_memory_equal(buf, "+pids", 5);
	rm("unified/r/pids.max");
	cgroup_free(cg);
	assert_false(exists("unified/r"));
	get("unified/cgroup.subtree_control", buf, sizeof(buf));
	assert_memory_equal(buf, "-pids", 5);
	free(mi);
}

/*
 * pinhole run alone in its delegated v2 cgroup: it moves into NAME-run,
 * enables memory, and after the run disables it, moves back and removes
 * the leaf.
 */
static void
test_create_v2_move(void **state)
{
	static const char proc[] = "0::/user.slice/u.scope\n";
	char *mi = fake_mountinfo(), buf[PATH_MAX * 3], me[32],
	     err[PATH_MAX + 64];
	struct cgroup_where w;
	struct cgroup *cg;

	(void)state;
	snprintf(me, sizeof(me), "%d\n", (int)getpid());
	fake_v2("memory pids\n", "pids\n", 0);
	put("unified/user.slice/u.scope/cgroup.procs", me);
	cgroup_find(proc, mi, &w); /* a thread root: no domain child */
	assert_int_equal(w.version[CGROUP_PIDS], 0);
	assert_non_null(strstr(w.why[CGROUP_PIDS], "has controllers on"));
	put("unified/user.slice/u.scope/cgroup.subtree_control", "\n");
	put("unified/user.slice/u.scope/cgroup.procs", "1\n"); /* not alone */
	cgroup_find(proc, mi, &w);
	assert_int_equal(w.version[CGROUP_MEMORY], 0);
	assert_non_null(strstr(w.why[CGROUP_MEMORY], "besides pinhole"));
	put("unified/user.slice/u.scope/cgroup.procs", me);
	cgroup_find(proc, mi, &w);
	assert_int_equal(w.version[CGROUP_MEMORY], 2);
	assert_true(w.move[CGROUP_MEMORY]);
	assert_true(w.move[CGROUP_PIDS]);
	assert_non_null(
	    cg = cgroup_create(&w, "m", 64, 8 << 20, err, sizeof(err)));
	get("unified/user.slice/u.scope/m-run/cgroup.procs", buf, sizeof(buf));
	assert_string_equal(buf, me);
	get("unified/user.slice/u.scope/cgroup.subtree_control", buf,
	    sizeof(buf));
	assert_string_equal(buf, "+memory"); /* "+pids", then this over it */
	get("unified/user.slice/u.scope/m/memory.max", buf, sizeof(buf));
	assert_string_equal(buf, "8388608\n");
	cgroup_describe(cg, &w, buf, sizeof(buf));
	assert_non_null(strstr(buf, "v2 pids and memory in "));
	assert_non_null(strstr(buf, "; pinhole run waits in "));
	rm("unified/user.slice/u.scope/m/memory.max");
	rm("unified/user.slice/u.scope/m/pids.max");
	rm("unified/user.slice/u.scope/m-run/cgroup.procs");
	put("unified/user.slice/u.scope/cgroup.procs", "");
	assert_int_equal(cgroup_remove(cg, err, sizeof(err)), 0);
	assert_false(exists("unified/user.slice/u.scope/m"));
	assert_false(exists("unified/user.slice/u.scope/m-run"));
	get("unified/user.slice/u.scope/cgroup.subtree_control", buf,
	    sizeof(buf));
	assert_string_equal(buf, "-memory"); /* "-pids", then this */
	get("unified/user.slice/u.scope/cgroup.procs", buf, sizeof(buf));
	assert_string_equal(buf, me);
	cgroup_free(cg);
	/* The leaf cannot be made: nothing is left enabled or made. */
	put("unified/user.slice/u.scope/cgroup.subtree_control", "");
	put("unified/user.slice/u.scope/cgroup.procs", me);
	mkdirs("unified/user.slice/u.scope/m-run");
	put("unified/user.slice/u.scope/m-run/stale", "");
	assert_null(cgroup_create(&w, "m", 64, 8 << 20, err, sizeof(err)));
	assert_non_null(strstr(err, "m-run: Directory not empty"));
	get("unified/user.slice/u.scope/cgroup.subtree_control", buf,
	    sizeof(buf));
	assert_string_equal(buf, ""); /* nothing left enabled */
	assert_false(exists("unified/user.slice/u.scope/m"));
	free(mi);
}

static void
test_create_none(void **state)
{
	char buf[512], err[64];
	struct cgroup_where w;
	struct cgroup *cg;

	(void)state;
	cgroup_find("0::/\n", "", &w);
	assert_int_equal(w.version[CGROUP_PIDS], 0);
	assert_non_null(cg = cgroup_create(&w, "x", 10, 0, err, sizeof(err)));
	assert_false(cgroup_has(cg, CGROUP_PIDS));
	cgroup_describe(cg, &w, buf, sizeof(buf));
	assert_non_null(strstr(buf, "no pids cgroup (v2: not mounted"));
	assert_null(strstr(buf, "memory")); /* not asked */
	assert_int_equal(cgroup_attach(cg, getpid(), err, sizeof(err)), 0);
	assert_int_equal(cgroup_keep(cg, err, sizeof(err)), 0);
	cgroup_free(cg);
	cgroup_free(NULL);
}

/* The keeper removes the cgroup once cgroup_free lets it. */
static void
test_keeper(void **state)
{
	static const char proc[] = "8:pids:/\n0::/\n";
	char *mi = fake_mountinfo(), err[PATH_MAX + 64];
	struct cgroup_where w;
	struct cgroup *cg;

	(void)state;
	mkdirs("pids");
	put("pids/cgroup.procs", "");
	cgroup_find(proc, mi, &w);
	assert_non_null(cg = cgroup_create(&w, "k", 5, 0, err, sizeof(err)));
	assert_int_equal(cgroup_keep(cg, err, sizeof(err)), 0);
	rm("pids/k/pids.max");
	assert_true(exists("pids/k"));
	cgroup_free(cg);
	assert_false(exists("pids/k"));
	free(mi);
}

/* --- real cgroups, where this machine lets the caller make them ----------- */

/* The file NAME of the run's cgroup for C, read for real. */
static void
real_get(const struct cgroup_where *w, enum cgroup_ctrl c, const char *run,
    const char *name, char *buf, size_t len)
{
	char path[PATH_MAX * 2];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s/%s", w->dir[c], run, name);
	buf[0] = '\0';
	if ((f = fopen(path, "r")) == NULL)
		return;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* The limits as the kernel took them, and the removal with a process in. */
static void
real_cgroup(const struct cgroup_where *w)
{
	char err[PATH_MAX + 64], name[32], buf[64], path[PATH_MAX * 2];
	struct cgroup *cg;
	pid_t child;

	snprintf(name, sizeof(name), "test-cgroup-%d", (int)getpid());
	assert_non_null(
	    cg = cgroup_create(w, name, 8, 64 << 20, err, sizeof(err)));
	if (w->version[CGROUP_PIDS] != 0) {
		real_get(w, CGROUP_PIDS, name, "pids.max", buf, sizeof(buf));
		assert_string_equal(buf, "8\n");
	}
	if (w->version[CGROUP_MEMORY] == 1) {
		real_get(w, CGROUP_MEMORY, name, "memory.limit_in_bytes", buf,
		    sizeof(buf));
		assert_string_equal(buf, "67108864\n");
		real_get(w, CGROUP_MEMORY, name, "memory.memsw.limit_in_bytes",
		    buf, sizeof(buf));
		assert_true(buf[0] == '\0' || strcmp(buf, "67108864\n") == 0);
	} else if (w->version[CGROUP_MEMORY] == 2) {
		real_get(
		    w, CGROUP_MEMORY, name, "memory.max", buf, sizeof(buf));
		assert_string_equal(buf, "67108864\n");
	}
	child = sleeper();
	assert_int_equal(cgroup_attach(cg, child, err, sizeof(err)), 0);
	assert_int_equal(cgroup_remove(cg, err, sizeof(err)), 0);
	reaped_by_sigkill(child);
	snprintf(path, sizeof(path), "%s/%s",
	    w->dir[w->version[CGROUP_PIDS] ? CGROUP_PIDS : CGROUP_MEMORY],
	    name);
	assert_int_equal(access(path, F_OK), -1);
	cgroup_free(cg);
}

static void
test_real(void **state)
{
	struct cgroup_where w;
	int c, v2 = 0, any = 0;

	(void)state;
	cgroup_find_self(&w);
	for (c = 0; c < CGROUP_NCTRL; c++) {
		any |= w.version[c] != 0;
		v2 |= w.version[c] == 2;
		if (w.version[c] == 0)
			fprintf(stderr,
			    "test_cgroup: CANNOT TEST a real %s "
			    "cgroup here: %s\n",
			    cgroup_ctrl_name(c), w.why[c]);
	}
	if (!v2)
		fprintf(stderr,
		    "test_cgroup: CANNOT TEST cgroup v2 limits for real: no "
		    "delegated cgroup v2 with pids or memory here; they are "
		    "tested on the fake tree only\n");
	if (!any)
		skip();
	real_cgroup(&w);
}

/* Writes TEXT to PATH for real.  Returns 0 or -1. */
static int
real_put(const char *path, const char *text)
{
	int fd, r = -1;

	if ((fd = open(path, O_WRONLY)) < 0)
		return -1;
	if (write(fd, text, strlen(text)) == (ssize_t)strlen(text))
		r = 0;
	close(fd);
	return r;
}

/*
 * The v2 move on a real cgroup2 even without pids or memory in it: this
 * process alone in a cgroup T moves into T/NAME-run; enabling pids then
 * fails (no such controller in v2 here), and the undo must bring it back
 * to T and remove the leaf.
 */
static void
test_real_v2_move(void **state)
{
	char *mi = NULL, mount[PATH_MAX - 64], t[PATH_MAX], me[32], buf[256];
	char err[PATH_MAX + 64], want[PATH_MAX + 64];
	struct cgroup_where w;
	FILE *f;
	size_t n;

	(void)state;
	memset(&w, 0, sizeof(w));
	f = fopen("/proc/self/mountinfo", "r");
	if (f != NULL) {
		mi = calloc(1, 1 << 20);
		n = fread(mi, 1, (1 << 20) - 1, f);
		mi[n] = '\0';
		fclose(f);
	}
	snprintf(me, sizeof(me), "%d\n", (int)getpid());
	if (mi == NULL ||
	    cgroup_mount_dir(mi, NULL, "/", mount, sizeof(mount)) != 0 ||
	    access(mount, W_OK) != 0 ||
	    snprintf(t, sizeof(t), "%s/test-cgroup-%d", mount, (int)getpid()) <
	        0 ||
	    mkdir(t, 0755) != 0) {
		fprintf(stderr,
		    "test_cgroup: CANNOT TEST the v2 move for real: "
		    "no writable cgroup2 mount here\n");
		free(mi);
		skip();
	}
	free(mi);
	snprintf(want, sizeof(want), "%s/cgroup.procs", t);
	if (real_put(want, me) != 0) {
		fprintf(stderr,
		    "test_cgroup: CANNOT TEST the v2 move for real: "
		    "%s: %s\n",
		    want, strerror(errno));
		(void)rmdir(t);
		skip();
	}
	w.version[CGROUP_PIDS] = 2;
	w.move[CGROUP_PIDS] = 1;
	snprintf(w.dir[CGROUP_PIDS], sizeof(w.dir[CGROUP_PIDS]), "%s", t);
	assert_null(cgroup_create(&w, "m", 8, 0, err, sizeof(err)));
	assert_non_null(strstr(err, "cgroup.subtree_control"));
	f = fopen("/proc/self/cgroup", "r");
	assert_non_null(f);
	while (
	    fgets(buf, sizeof(buf), f) != NULL && strncmp(buf, "0::", 3) != 0)
		;
	fclose(f);
	snprintf(want, sizeof(want), "/test-cgroup-%d\n", (int)getpid());
	assert_string_equal(buf + 3, want); /* back in T, not in T/m-run */
	snprintf(want, sizeof(want), "%s/m-run", t);
	assert_int_equal(access(want, F_OK), -1);
	snprintf(want, sizeof(want), "%s/cgroup.procs", mount);
	assert_int_equal(real_put(want, me), 0); /* home again */
	assert_int_equal(rmdir(t), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_proc_path),
	    cmocka_unit_test(test_mount_dir),
	    cmocka_unit_test_setup_teardown(test_find_v2, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_find_v1, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_create_v1, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_create_v1_comounted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_create_stale, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_create_v2, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_create_v2_move, setup, teardown),
	    cmocka_unit_test(test_create_none),
	    cmocka_unit_test_setup_teardown(test_keeper, setup, teardown),
	    cmocka_unit_test(test_real),
	    cmocka_unit_test(test_real_v2_move),
	};

	return cmocka_run_group_tests_name("cgroup", tests, NULL, NULL);
}
