/*
 * cache.c: the tool caches of the sandbox's home (cache.h).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ph_err.h"
#include "common/xmalloc.h"
#include "netns/cache.h"

/*
 * Where each tool keeps its downloads: up to two variables that move it
 * (an absolute path, then SUFFIX added), the first set wins, and the
 * place in the home otherwise.
 */
static const struct {
	const char *name;
	struct {
		const char *var, *suffix;
	} by[2];
	const char *in_home;
} caches[] = {
    {"npm", {{"npm_config_cache", ""}, {"NPM_CONFIG_CACHE", ""}}, ".npm"},
    {"xdg-cache", {{"XDG_CACHE_HOME", ""}, {NULL, NULL}}, ".cache"},
    {"cargo-registry", {{"CARGO_HOME", "/registry"}, {NULL, NULL}},
        ".cargo/registry"},
    {"cargo-git", {{"CARGO_HOME", "/git"}, {NULL, NULL}}, ".cargo/git"},
    {"go-mod", {{"GOMODCACHE", ""}, {"GOPATH", "/pkg/mod"}}, "go/pkg/mod"},
    {"go-build", {{"GOCACHE", ""}, {NULL, NULL}}, NULL},
    {"m2", {{NULL, NULL}, {NULL, NULL}}, ".m2/repository"},
    {"gradle-caches", {{"GRADLE_USER_HOME", "/caches"}, {NULL, NULL}},
        ".gradle/caches"},
    {"gradle-dists", {{"GRADLE_USER_HOME", "/wrapper/dists"}, {NULL, NULL}},
        ".gradle/wrapper/dists"},
    {"pnpm", {{"XDG_DATA_HOME", "/pnpm"}, {NULL, NULL}}, ".local/share/pnpm"},
    {"yarn-berry", {{NULL, NULL}, {NULL, NULL}}, ".yarn/berry/cache"},
};
#define CACHES (sizeof(caches) / sizeof(caches[0]))

/* Is PATH DIR or beneath it? */
static int
beneath(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 &&
	    (path[n] == '\0' || path[n] == '/');
}

/*
 * Entry I's path: from the first of its variables set to an absolute
 * path (GOPATH: its first entry), else in HOME; NULL: none.
 */
static char *
cache_path(size_t i, const char *home, const char *(*get)(void *, const char *),
    void *arg)
{
	const char *v;
	size_t k, len;

	for (k = 0; k < 2 && caches[i].by[k].var != NULL; k++) {
		v = get(arg, caches[i].by[k].var);
		if (v == NULL || v[0] != '/')
			continue;
		len = strcspn(v, ":"); /* GOPATH is a list */
		while (len > 1 && v[len - 1] == '/')
			len--;
		return xasprintf("%.*s%s", (int)len, v, caches[i].by[k].suffix);
	}
	if (caches[i].in_home == NULL)
		return NULL;
	return xasprintf(
	    "%s%s%s", home, strcmp(home, "/") ? "/" : "", caches[i].in_home);
}

/* Is entry I of OUT (N entries) the same as or inside another? */
static int
covered(const struct cache_dir *out, size_t n, size_t i)
{
	size_t k;

	for (k = 0; k < n; k++)
		if (k != i && beneath(out[i].path, out[k].path) &&
		    (strcmp(out[i].path, out[k].path) != 0 || k < i))
			return 1;
	return 0;
}

size_t
cache_paths(const char *home, const char *(*get)(void *, const char *),
    void *arg, struct cache_dir *out)
{
	size_t i, n = 0, k = 0;
	int drop[CACHE_MAX];
	char *path;

	for (i = 0; i < CACHES && n < CACHE_MAX; i++) {
		if ((path = cache_path(i, home, get, arg)) == NULL)
			continue;
		out[n].name = caches[i].name;
		out[n++].path = path;
	}
	/* Nested ones out, in place: marked first, then dropped. */
	for (i = 0; i < n; i++)
		drop[i] = covered(out, n, i);
	for (i = 0; i < n; i++) {
		if (drop[i])
			free(out[i].path);
		else
			out[k++] = out[i];
	}
	return k;
}

void
cache_paths_free(struct cache_dir *d, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(d[i].path);
		d[i].path = NULL;
	}
}

int
cache_mkdirs(const char *path, char *err, size_t errlen)
{
	char buf[PATH_MAX], *p;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		ph_errf(err, errlen, "%s: %s", path, strerror(ENAMETOOLONG));
		return -1;
	}
	for (p = buf + 1;; p++) {
		p = strchr(p, '/');
		if (p != NULL)
			*p = '\0';
		if (mkdir(buf, 0700) != 0 && errno != EEXIST) {
			ph_errf(err, errlen, "%s: %s", buf, strerror(errno));
			return -1;
		}
		if (p == NULL)
			break;
		*p = '/';
	}
	return 0;
}

int
cache_dir_open(int at, const char *name, int strict, char *err, size_t errlen)
{
	struct stat sb;
	int fd;

	if (mkdirat(at, name, 0700) != 0 && errno != EEXIST) {
		ph_errf(err, errlen, "%s: %s", name, strerror(errno));
		return -1;
	}
	if ((fd = openat(at, name,
	         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		ph_errf(err, errlen, "%s: %s", name,
		    errno == ELOOP || errno == ENOTDIR
		        ? "not a directory (a symbolic link?)"
		        : strerror(errno));
		return -1;
	}
	if (fstat(fd, &sb) != 0 ||
	    (sb.st_uid == getuid() && !strict && (sb.st_mode & 07777) != 0700 &&
	        fchmod(fd, 0700) != 0)) {
		ph_errf(err, errlen, "%s: %s", name, strerror(errno));
		close(fd);
		return -1;
	}
	if (sb.st_uid == getuid() && strict && (sb.st_mode & 077) != 0) {
		ph_errf(err, errlen, "%s: open to others (mode %o)", name,
		    (unsigned)(sb.st_mode & 07777));
		close(fd);
		return -1;
	}
	if (sb.st_uid != getuid()) {
		ph_errf(err, errlen, "%s: owned by uid %u, not by uid %u", name,
		    (unsigned)sb.st_uid, (unsigned)getuid());
		close(fd);
		return -1;
	}
	return fd;
}
