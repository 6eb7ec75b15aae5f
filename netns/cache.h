/*
 * cache.h: the tool caches of the sandbox's home, kept from one run to
 * the next in a directory of the user's that the sandbox never sees.
 *
 * The list (cache_paths) is where the tools write what they download:
 * npm, the XDG cache (pip, go-build, yarn, ...), cargo's registry and git
 * checkouts, Go's module cache, Maven, Gradle, pnpm and Yarn Berry; the
 * variables that move them are honoured.  Each is bound in the sandbox
 * from a directory of the same name under the cache directory
 * (cache_prepare), so the host's own caches are never written.
 */
#ifndef PH_CACHE_H
#define PH_CACHE_H

#include <stddef.h>

#define CACHE_MAX 16

struct cache_dir {
	const char *name; /* the directory under the cache: "npm" */
	char *path; /* where the tool looks, absolute, in the sandbox */
};

/*
 * Fills OUT (CACHE_MAX entries) with the caches of home HOME (absolute),
 * GET (with ARG) giving the sandbox's variables: one set to an absolute
 * path moves its cache (npm_config_cache, XDG_CACHE_HOME, CARGO_HOME,
 * GOMODCACHE, GOPATH's first entry, GRADLE_USER_HOME, XDG_DATA_HOME), a
 * relative one is ignored.  A cache lying inside another is left out (the
 * outer one holds it).  Returns the count; free with cache_paths_free.
 */
size_t
cache_paths(const char *home, const char *(*get)(void *arg, const char *name),
    void *arg, struct cache_dir *out);
void cache_paths_free(struct cache_dir *, size_t n);

/* mkdir -p PATH, new directories 0700.  Returns 0, or -1 with ERR. */
int cache_mkdirs(const char *path, char *err, size_t errlen);

/*
 * NAME in directory AT (AT_FDCWD: NAME is a path), made 0700 if missing
 * and opened with no symbolic link followed as its last component: it
 * must be a real directory owned by the caller.  One that exists open to
 * others is made 0700, or, with STRICT (a directory pinhole shares with
 * others of its files, such as the private log's), refused.  Returns its
 * descriptor, or -1 with ERR.
 */
int
cache_dir_open(int at, const char *name, int strict, char *err, size_t errlen);

#endif /* PH_CACHE_H */
