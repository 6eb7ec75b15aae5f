/*
 * run_apt.c: apt inside `pinhole run`, with no option (see run.h).
 *
 * apt as root runs its download methods as the _apt user (setgroups,
 * setuid), which a user namespace that maps one uid cannot do ("setgroups
 * 65534 failed"); and it writes its lists and its cache under /var, which
 * the sandbox sees read-only.  So, where the host has apt:
 *
 *   - a fresh tmpfs over /var/lib/apt/lists and /var/cache/apt (each one
 *     that exists, unless the user's own mounts are there): apt makes the
 *     partial/ directories in them itself, the host's are never written,
 *     and a run starts with no lists (apt-get update first);
 *   - APT_CONFIG names a read-only file pinhole writes: the user's own
 *     APT_CONFIG first (#include: apt reads it first, as without pinhole),
 *     then APT::Sandbox::User "root" (the sandbox's root, which holds no
 *     privilege on the host) and, when the sandbox trusts more than the
 *     system (a rule intercepts, or `trust` lines),
 *     Acquire::https::CaInfo naming the bundle that holds the run CA.
 *
 * apt's http and https methods take the proxy from http_proxy and
 * https_proxy, which the sandbox has.  Nothing here is secret.
 */
#include <sys/stat.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/run.h"
#include "common/log.h"
#include "netns/env.h"
#include "netns/mount.h"

/* Where the sandbox finds pinhole's apt configuration. */
#define APT_CONF_INSIDE "/tmp/.pinhole-apt.conf"

/* What apt writes on apt-get update and download; the host's stay. */
static const char *const apt_dirs[] = {
    "/var/lib/apt/lists",
    "/var/cache/apt",
};

/*
 * A fresh tmpfs over the host's directory DIR.  Returns 1 when planned,
 * 0 when there is no such directory or the user's mounts are near it (a
 * --bind or --tmpfs of their own wins), -1 on an error (said).
 */
static int
fresh_dir(struct run *r, const char *dir)
{
	char real[PATH_MAX], err[PATH_MAX + 64];
	struct stat st;

	if (realpath(dir, real) == NULL || stat(real, &st) != 0 ||
	    !S_ISDIR(st.st_mode) || mnt_plan_touches(r->plan, real))
		return 0;
	if (mnt_plan_add(r->plan, MNT_TMPFS, NULL, real, err, sizeof(err)) !=
	    0) {
		log_warnx("run: apt: %s", err);
		return -1;
	}
	return 1;
}

/*
 * The user's APT_CONFIG as an #include line's path, absolute (apt reads
 * a relative one from the start directory, which is the current one
 * unless --chdir).  NULL when none, or when apt could not read it
 * (quotes and line ends cannot be written in apt's syntax: said).
 */
static char *
user_config(const struct run *r)
{
	const char *v = env_get(r->env, "APT_CONFIG");
	char *path;

	if (v == NULL || v[0] == '\0')
		return NULL;
	if (strpbrk(v, "\"\n\r") != NULL) {
		log_warnx("run: apt: APT_CONFIG %s is left out: apt cannot "
		          "include a path with a quote or a line end",
		    v);
		return NULL;
	}
	if (v[0] == '/' || (path = realpath(v, NULL)) == NULL)
		path = strdup(v);
	return path;
}

/* The configuration file's text, to free; NULL when out of memory. */
static char *
apt_config(const struct run *r, size_t *len)
{
	char *text = NULL, *user = user_config(r);
	FILE *f;

	if ((f = open_memstream(&text, len)) == NULL)
		goto out;
	fputs("// pinhole run: apt in the sandbox (pinhole(1), ENVIRONMENT)\n",
	    f);
	if (user != NULL)
		fprintf(f, "#include \"%s\";\n", user);
	fputs("APT::Sandbox::User \"root\";\n", f);
	if (r->trust_file != NULL)
		fprintf(f, "Acquire::https::CaInfo \"%s\";\n", r->trust_file);
	if (fclose(f) != 0) {
		free(text);
		text = NULL;
	}
out:
	free(user);
	return text;
}

int
run_apt_setup(struct run *r)
{
	char err[PATH_MAX + 64], *text;
	size_t i, len = 0;
	int any = 0, rc;

	for (i = 0; i < sizeof(apt_dirs) / sizeof(apt_dirs[0]); i++) {
		if ((rc = fresh_dir(r, apt_dirs[i])) < 0)
			return -1;
		any |= rc;
	}
	if (!any)
		return 0; /* no apt here, or the user arranged it */
	if ((text = apt_config(r, &len)) == NULL) {
		log_warnx("run: apt: out of memory");
		return -1;
	}
	rc = mnt_plan_add_file(
	    r->plan, APT_CONF_INSIDE, text, len, err, sizeof(err));
	free(text);
	if (rc != 0) {
		log_warnx("run: apt: %s", err);
		return -1;
	}
	return env_set(r->env, "APT_CONFIG", APT_CONF_INSIDE);
}
