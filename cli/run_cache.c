/*
 * run_cache.c: the sandbox's home and its tool caches, for pinhole run.
 *
 * The home is always writable inside and never written outside: the
 * host's $HOME under a per-run layer (netns/mount.c), or a fresh one when
 * the user has none.  The tool caches in it (netns/cache.c) are bound
 * from ${XDG_CACHE_HOME:-$HOME/.cache}/pinhole/KEY/NAME, KEY naming the
 * policy, so the next run with the same policy finds what this one
 * downloaded; --cache DIR puts them in DIR, --no-cache in fresh tmpfs.
 */
#include <sys/stat.h>

#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "cli/run.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "netns/cache.h"
#include "netns/env.h"
#include "netns/mount.h"

/* The home given to a sandbox whose user has none (in its own /tmp). */
#define FRESH_HOME "/tmp/pinhole-home"

/* A readable start for the key: the first policy's name, or what it is. */
static void
key_name(const char *const *policies, size_t n, const char *allow, char *out,
    size_t len)
{
	const char *base = n > 0 ? strrchr(policies[0], '/') : NULL;
	size_t i, k;

	base = n == 0 ? (allow != NULL ? "allow" : "none")
	              : (base != NULL ? base + 1 : policies[0]);
	k = strlen(base);
	if (k > 5 && strcmp(base + k - 5, ".conf") == 0)
		k -= 5;
	for (i = 0; i < k && i < 32 && i + 1 < len; i++)
		out[i] = (isalnum((unsigned char)base[i]) || base[i] == '-' ||
		             base[i] == '_' || (base[i] == '.' && i > 0))
		    ? base[i]
		    : '_';
	out[i] = '\0';
}

/*
 * run_cache_key's work; RESOLVE: the policies are files (by their real
 * paths), else names (a broker's) taken as they are.
 */
static int
cache_key(const char *const *policies, size_t n, int resolve, const char *allow,
    char *out, size_t len)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	char name[40], *real;
	size_t i;
	int ok;

	ok = ctx != NULL && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;
	for (i = 0; ok && i < n; i++) {
		/* The policy by its real path: the same file, the same key. */
		real = resolve ? realpath(policies[i], NULL) : NULL;
		ok = EVP_DigestUpdate(ctx, "p", 2) == 1 &&
		    EVP_DigestUpdate(ctx, real ? real : policies[i],
		        strlen(real ? real : policies[i]) + 1) == 1;
		free(real);
	}
	if (ok && allow != NULL)
		ok = EVP_DigestUpdate(ctx, "a", 2) == 1 &&
		    EVP_DigestUpdate(ctx, allow, strlen(allow) + 1) == 1;
	ok = ok && EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen >= 8;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return -1;
	key_name(policies, n, allow, name, sizeof(name));
	i = (size_t)snprintf(out, len, "%s-%02x%02x%02x%02x%02x%02x%02x%02x",
	    name, md[0], md[1], md[2], md[3], md[4], md[5], md[6], md[7]);
	return i < len ? 0 : -1;
}

int
run_cache_key(const char *const *policies, size_t n, const char *allow,
    char *out, size_t len)
{
	return cache_key(policies, n, 1, allow, out, len);
}

/*
 * Under a broker, -p is a name the broker resolves, never a file here:
 * the key is that name with the broker's socket (resolved), so a file of
 * that name in the start directory shares no caches with it.
 */
static int
broker_cache_key(const struct run *r, char *out, size_t len)
{
	char *real = realpath(r->broker, NULL);
	char *which = xasprintf("broker %s", real != NULL ? real : r->broker);
	int rc = cache_key(r->policies, 1, 0, which, out, len);

	free(which);
	free(real);
	return rc;
}

/*
 * A directory this user may read and search, resolved, other than "/";
 * else NULL (e.g. root's home seen from a user namespace of another uid).
 */
static char *
real_dir(const char *path)
{
	struct stat sb;
	char *real;

	if (path == NULL || path[0] != '/' ||
	    (real = realpath(path, NULL)) == NULL)
		return NULL;
	if (stat(real, &sb) != 0 || !S_ISDIR(sb.st_mode) ||
	    strcmp(real, "/") == 0 || access(real, R_OK | X_OK) != 0) {
		free(real);
		return NULL;
	}
	return real;
}

/*
 * The sandbox's home: its $HOME (the password database's home when HOME
 * is unset, and HOME set to it), or FRESH_HOME when that is no directory.
 * Returns the resolved path; *FRESH says which.
 */
static char *
choose_home(struct run *r, int *fresh)
{
	const char *h = env_get(r->env, "HOME");
	struct passwd *pw = NULL;
	char *real;

	if (h == NULL && (pw = getpwuid(getuid())) != NULL)
		h = pw->pw_dir;
	*fresh = (real = real_dir(h)) == NULL;
	if (*fresh) {
		real = xstrdup(FRESH_HOME);
		env_set(r->env, "HOME", FRESH_HOME);
	} else if (pw != NULL)
		env_set(r->env, "HOME", h);
	return real;
}

static const char *
get_env(void *arg, const char *name)
{
	return env_get(arg, name);
}

/*
 * The default cache directory's parent, as pinhole's own environment
 * names it: ${XDG_CACHE_HOME:-$HOME/.cache}/pinhole, or, with no usable
 * home, ${TMPDIR:-/tmp}/pinhole-UID/cache.  Made and opened into *FD
 * (every part pinhole makes 0700, its own and not a link); returns the
 * resolved path, or NULL (said).
 */
static char *
cache_parent(int *fd)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *tmp = getenv("TMPDIR");
	struct passwd *pw = getpwuid(getuid());
	char err[PATH_MAX + 64], *base = NULL, *real = NULL, *dir;
	int b = -1;

	*fd = -1;
	if (xdg != NULL && xdg[0] == '/')
		base = xstrdup(xdg);
	else if ((real = real_dir(getenv("HOME"))) != NULL ||
	    (pw != NULL && (real = real_dir(pw->pw_dir)) != NULL))
		base = xasprintf("%s/.cache", real);
	free(real);
	real = NULL;
	if (base != NULL && cache_mkdirs(base, err, sizeof(err)) == 0 &&
	    (real = realpath(base, NULL)) != NULL &&
	    (b = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0 &&
	    (*fd = cache_dir_open(b, "pinhole", 0, err, sizeof(err))) >= 0)
		dir = xasprintf("%s/pinhole", real);
	else {
		/* No usable home: a private directory of this uid's. */
		if (tmp == NULL || tmp[0] != '/')
			tmp = "/tmp";
		free(real);
		real = xasprintf("%s/pinhole-%u", tmp, (unsigned)getuid());
		if (b >= 0)
			close(b);
		if ((b = cache_dir_open(AT_FDCWD, real, 1, err, sizeof(err))) >=
		        0 &&
		    (*fd = cache_dir_open(b, "cache", 0, err, sizeof(err))) >=
		        0)
			dir = xasprintf("%s/cache", real);
		else {
			log_warnx("run: the tool cache: %s; the caches start "
			          "empty this time (--cache DIR chooses)",
			    err);
			dir = NULL;
		}
	}
	if (b >= 0)
		close(b);
	free(base);
	free(real);
	return dir;
}

/*
 * The run's cache directory, opened into *FD: --cache DIR, else KEY in
 * the default's parent (cache_parent).  *HIDE: what the sandbox must not
 * see (DIR, or the parent of every key).  Returns the resolved path, or
 * NULL (said).
 */
static char *
run_cache_dir(struct run *r, int *fd, char **hide)
{
	char err[PATH_MAX + 64], key[80], *parent, *dir = NULL;
	int p;

	*fd = -1;
	if (r->cache_dir != NULL) {
		if (cache_mkdirs(r->cache_dir, err, sizeof(err)) != 0 ||
		    (*fd = cache_dir_open(
		         AT_FDCWD, r->cache_dir, 0, err, sizeof(err))) < 0)
			log_warnx("run: --cache %s: %s", r->cache_dir, err);
		else if ((dir = realpath(r->cache_dir, NULL)) == NULL)
			log_warn("run: --cache %s", r->cache_dir);
		*hide = dir != NULL ? xstrdup(dir) : NULL;
		return dir;
	}
	if ((r->broker != NULL
	            ? broker_cache_key(r, key, sizeof(key))
	            : run_cache_key((const char *const *)r->policies,
	                  r->npolicies, r->allow, key, sizeof(key))) != 0)
		fatalx("run: the cache key");
	if ((parent = cache_parent(&p)) == NULL)
		return NULL;
	if ((*fd = cache_dir_open(p, key, 0, err, sizeof(err))) < 0)
		log_warnx("run: the tool cache in %s: %s; the caches start "
		          "empty this time (--cache DIR chooses)",
		    parent, err);
	else
		dir = xasprintf("%s/%s", parent, key);
	close(p);
	*hide = parent;
	return dir;
}

/*
 * Is PATH under one of the N caches of D?  Then a cache bind covers it
 * and the host's directory there is out of sight already; a hide there
 * would fall on the sandbox's own cache, where an earlier run could have
 * put a symbolic link that stops the view.
 */
static int
covered(const char *path, const struct cache_dir *d, size_t n)
{
	size_t i, len;

	for (i = 0; i < n; i++) {
		len = strlen(d[i].path);
		if (strncmp(path, d[i].path, len) == 0 &&
		    (path[len] == '/' || path[len] == '\0'))
			return 1;
	}
	return 0;
}

/* Cache I of D bound from DIR/NAME (DIR NULL: a fresh tmpfs). */
static int
add_cache(struct run *r, const struct cache_dir *d, const char *dir, int fd,
    char *err, size_t errlen)
{
	char *src = NULL;
	int c, rc;

	if (dir != NULL) {
		if ((c = cache_dir_open(fd, d->name, 0, err, errlen)) < 0)
			return -1;
		close(c);
		src = xasprintf("%s/%s", dir, d->name);
	}
	rc = mnt_plan_add(r->plan, MNT_CACHE, src, d->path, err, errlen);
	free(src);
	return rc;
}

int
run_plan_home(struct run *r)
{
	struct cache_dir d[CACHE_MAX];
	char err[PATH_MAX + 64], *home, *dir = NULL, *hide = NULL;
	size_t i, n = 0;
	int fresh, fd = -1, rc = -1;

	if (r->cache_dir != NULL && r->no_cache) {
		log_warnx("run: --cache and --no-cache: give one");
		return -1;
	}
	home = choose_home(r, &fresh);
	if (mnt_plan_set_home(r->plan, home, fresh, err, sizeof(err)) != 0)
		goto said;
	n = cache_paths(home, get_env, r->env, d);
	/* Not a guarantee: without the default cache, fresh ones (said). */
	if (!r->no_cache && (dir = run_cache_dir(r, &fd, &hide)) == NULL &&
	    r->cache_dir != NULL)
		goto out;
	for (i = 0; i < n; i++)
		if (add_cache(r, &d[i], dir, fd, err, sizeof(err)) != 0)
			goto said;
	/* Hidden before the caches are bound, and after them unless a
	 * cache covers it (the start directory or a bind may show it). */
	if (hide != NULL &&
	    (mnt_plan_cache_root(r->plan, hide, err, sizeof(err)) != 0 ||
	        (!covered(hide, d, n) &&
	            mnt_plan_add(
	                r->plan, MNT_HIDE, NULL, hide, err, sizeof(err)) != 0)))
		goto said;
	if (r->verbose)
		fprintf(stderr, "pinhole: home %s (%s), tool caches %s%s\n",
		    home, fresh ? "fresh" : "the host's under a per-run layer",
		    dir ? "in " : "", dir ? dir : "fresh");
	rc = 0;
	goto out;
said:
	log_warnx("run: the home %s: %s", home, err);
out:
	if (fd >= 0)
		close(fd);
	cache_paths_free(d, n);
	free(dir);
	free(hide);
	free(home);
	return rc;
}
