/*
 * test_cache.c: unit tests of netns/cache.c (the tool caches of the
 * sandbox's home: the list, the directories) and of the cache key of
 * cli/run_cache.c.
 */
#include <sys/stat.h>

#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/run.h"
#include "netns/cache.h"

/* A NULL-terminated list of NAME, VALUE pairs. */
static const char *
get(void *arg, const char *name)
{
	const char **v = arg;

	for (; v[0] != NULL; v += 2)
		if (strcmp(v[0], name) == 0)
			return v[1];
	return NULL;
}

/* The path of cache NAME in D (N entries), or NULL. */
static const char *
path_of(const struct cache_dir *d, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(d[i].name, name) == 0)
			return d[i].path;
	return NULL;
}

static void
test_paths_default(void **state)
{
	static const char *none[] = {NULL};
	static const char *const want[][2] = {
	    {"npm", "/h/.npm"},
	    {"xdg-cache", "/h/.cache"},
	    {"cargo-registry", "/h/.cargo/registry"},
	    {"cargo-git", "/h/.cargo/git"},
	    {"go-mod", "/h/go/pkg/mod"},
	    {"m2", "/h/.m2/repository"},
	    {"gradle-caches", "/h/.gradle/caches"},
	    {"gradle-dists", "/h/.gradle/wrapper/dists"},
	    {"pnpm", "/h/.local/share/pnpm"},
	    {"yarn-berry", "/h/.yarn/berry/cache"},
	};
	struct cache_dir d[CACHE_MAX];
	size_t i, n;

	(void)state;
	n = cache_paths("/h", get, (void *)none, d);
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	for (i = 0; i < n; i++) {
		assert_string_equal(d[i].name, want[i][0]);
		assert_string_equal(d[i].path, want[i][1]);
	}
	cache_paths_free(d, n);
}

static void
test_paths_variables(void **state)
{
	static const char *vars[] = {
	    "NPM_CONFIG_CACHE",
	    "/c/npm2", /* the lower-case one wins */
	    "npm_config_cache",
	    "/c/npm",
	    "XDG_CACHE_HOME",
	    "/c/xdg/",
	    "CARGO_HOME",
	    "/c/cargo",
	    "GOPATH",
	    "/c/gp1:/c/gp2",
	    "GRADLE_USER_HOME",
	    "relative/is/ignored",
	    "XDG_DATA_HOME",
	    "/c/data",
	    "GOCACHE",
	    "/c/gobuild",
	    NULL,
	};
	struct cache_dir d[CACHE_MAX];
	size_t n;

	(void)state;
	n = cache_paths("/h", get, (void *)vars, d);
	assert_string_equal(path_of(d, n, "npm"), "/c/npm");
	assert_string_equal(path_of(d, n, "xdg-cache"), "/c/xdg");
	assert_string_equal(
	    path_of(d, n, "cargo-registry"), "/c/cargo/registry");
	assert_string_equal(path_of(d, n, "cargo-git"), "/c/cargo/git");
	assert_string_equal(path_of(d, n, "go-mod"), "/c/gp1/pkg/mod");
	assert_string_equal(path_of(d, n, "go-build"), "/c/gobuild");
	assert_string_equal(
	    path_of(d, n, "gradle-caches"), "/h/.gradle/caches");
	assert_string_equal(path_of(d, n, "pnpm"), "/c/data/pnpm");
	cache_paths_free(d, n);
}

/* GOMODCACHE beats GOPATH; a cache inside another one is left out. */
static void
test_paths_nested(void **state)
{
	static const char *vars[] = {
	    "GOPATH",
	    "/c/gp",
	    "GOMODCACHE",
	    "/h/.cache/gomod",
	    "npm_config_cache",
	    "/h/.cache/npm",
	    "GOCACHE",
	    "/h/.cache/go-build",
	    NULL,
	};
	struct cache_dir d[CACHE_MAX];
	size_t n;

	(void)state;
	n = cache_paths("/h", get, (void *)vars, d);
	assert_string_equal(path_of(d, n, "xdg-cache"), "/h/.cache");
	assert_null(path_of(d, n, "go-mod"));
	assert_null(path_of(d, n, "npm"));
	assert_null(path_of(d, n, "go-build"));
	assert_int_equal(n, 8);
	cache_paths_free(d, n);
}

static void
test_key(void **state)
{
	const char *a[] = {"/nonexistent/dir/GitHub.conf"};
	const char *b[] = {"/nonexistent/dir/other.conf"};
	const char *odd[] = {"/x/.hidden name;rm.conf"};
	char k1[80], k2[80], k3[80];

	(void)state;
	assert_int_equal(run_cache_key(a, 1, NULL, k1, sizeof(k1)), 0);
	assert_int_equal(run_cache_key(a, 1, NULL, k2, sizeof(k2)), 0);
	assert_string_equal(k1, k2); /* stable */
	assert_int_equal(strlen(k1), strlen("GitHub-") + 16);
	assert_int_equal(strncmp(k1, "GitHub-", 7), 0);
	assert_int_equal(run_cache_key(b, 1, NULL, k2, sizeof(k2)), 0);
	assert_string_not_equal(k1 + 7, k2 + 6); /* the path counts */
	assert_int_equal(
	    run_cache_key(a, 1, "allow x.test\n", k3, sizeof(k3)), 0);
	assert_string_not_equal(k1, k3); /* and the rules */
	assert_int_equal(
	    run_cache_key(NULL, 0, "allow x.test\n", k3, sizeof(k3)), 0);
	assert_int_equal(strncmp(k3, "allow-", 6), 0);
	assert_int_equal(run_cache_key(NULL, 0, NULL, k3, sizeof(k3)), 0);
	assert_int_equal(strncmp(k3, "none-", 5), 0);
	/* A name is only letters, digits, '-', '_' and inner dots. */
	assert_int_equal(run_cache_key(odd, 1, NULL, k3, sizeof(k3)), 0);
	assert_int_equal(strncmp(k3, "_hidden_name_rm-", 16), 0);
	assert_int_equal(run_cache_key(a, 1, NULL, k3, 10), -1);
}

static void
test_dir_open(void **state)
{
	char top[] = "/tmp/test_cache.XXXXXX", path[PATH_MAX], err[256];
	struct stat sb;
	int fd, d;

	(void)state;
	assert_non_null(mkdtemp(top));
	snprintf(path, sizeof(path), "%s/a/b/c", top);
	assert_int_equal(cache_mkdirs(path, err, sizeof(err)), 0);
	assert_int_equal(cache_mkdirs(path, err, sizeof(err)), 0);
	chmod(path, 0755);
	assert_true(
	    (fd = cache_dir_open(AT_FDCWD, path, 0, err, sizeof(err))) >= 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0700); /* made private */
	assert_true((d = cache_dir_open(fd, "npm", 0, err, sizeof(err))) >= 0);
	close(d);
	assert_int_equal(symlinkat("/tmp", fd, "link"), 0);
	assert_int_equal(cache_dir_open(fd, "link", 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "symbolic link"));
	/* Strict: one open to others is refused, not made private. */
	assert_int_equal(mkdirat(fd, "shared", 0700), 0);
	assert_int_equal(fchmodat(fd, "shared", 0755, 0), 0);
	assert_int_equal(cache_dir_open(fd, "shared", 1, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "open to others"));
	assert_true(
	    (d = cache_dir_open(fd, "shared", 0, err, sizeof(err))) >= 0);
	close(d);
	close(fd);
	snprintf(path, sizeof(path), "rm -rf '%s'", top);
	assert_int_equal(system(path), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_paths_default),
	    cmocka_unit_test(test_paths_variables),
	    cmocka_unit_test(test_paths_nested),
	    cmocka_unit_test(test_key),
	    cmocka_unit_test(test_dir_open),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
