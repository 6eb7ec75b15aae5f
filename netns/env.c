/*
 * env.c: building the sandbox's environment as a NAME=VALUE vector.
 *
 * Start-up code: allocation failures are fatal (xmalloc).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "netns/env.h"

struct env {
	char **v; /* NULL-terminated */
	size_t n, cap;
};

/* Kept from the caller's environment unless asked otherwise. */
static const char *const kept[] = {
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "TERM",
    "LANG",
    "TZ",
};

static int
kept_name(const char *entry)
{
	size_t i, len = strcspn(entry, "=");

	if (strncmp(entry, "LC_", 3) == 0)
		return 1;
	for (i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		if (strlen(kept[i]) == len && strncmp(entry, kept[i], len) == 0)
			return 1;
	return 0;
}

/* Index of NAME in E, or -1. */
static long
find(const struct env *e, const char *name)
{
	size_t i, len = strlen(name);

	for (i = 0; i < e->n; i++)
		if (strncmp(e->v[i], name, len) == 0 && e->v[i][len] == '=')
			return (long)i;
	return -1;
}

static void
put(struct env *e, char *entry)
{
	size_t len = strcspn(entry, "=");
	char *name = xstrndup(entry, len);
	long i = find(e, name);

	free(name);
	if (i >= 0) {
		free(e->v[i]);
		e->v[i] = entry;
		return;
	}
	if (e->n + 2 > e->cap) {
		e->cap = e->cap ? e->cap * 2 : 16;
		e->v = xreallocarray(e->v, e->cap, sizeof(*e->v));
	}
	e->v[e->n++] = entry;
	e->v[e->n] = NULL;
}

int
env_name_ok(const char *name)
{
	return name[0] != '\0' && strchr(name, '=') == NULL;
}

struct env *
env_new(char *const *from)
{
	struct env *e = xcalloc(1, sizeof(*e));

	e->cap = 16;
	e->v = xcalloc(e->cap, sizeof(*e->v));
	for (; from != NULL && *from != NULL; from++)
		if (strchr(*from, '=') != NULL && kept_name(*from))
			put(e, xstrdup(*from));
	return e;
}

void
env_free(struct env *e)
{
	size_t i;

	if (e == NULL)
		return;
	for (i = 0; i < e->n; i++)
		free(e->v[i]);
	free(e->v);
	free(e);
}

int
env_set(struct env *e, const char *name, const char *value)
{
	if (!env_name_ok(name))
		return -1;
	put(e, xasprintf("%s=%s", name, value));
	return 0;
}

int
env_keep(struct env *e, char *const *from, const char *name)
{
	size_t len = strlen(name);

	for (; from != NULL && *from != NULL; from++)
		if (strncmp(*from, name, len) == 0 && (*from)[len] == '=') {
			put(e, xstrdup(*from));
			return 1;
		}
	return 0;
}

void
env_unset(struct env *e, const char *name)
{
	long i = find(e, name);

	if (i < 0)
		return;
	/* The value may be a secret's (run_setup.c): no copy in freed heap. */
	explicit_bzero(e->v[i], strlen(e->v[i]));
	free(e->v[i]);
	memmove(&e->v[i], &e->v[i + 1], (e->n - (size_t)i) * sizeof(*e->v));
	e->n--;
}

const char *
env_get(const struct env *e, const char *name)
{
	long i = find(e, name);

	return i < 0 ? NULL : e->v[i] + strlen(name) + 1;
}

void
env_set_proxy(struct env *e, unsigned port)
{
	static const char *const names[] = {
	    "http_proxy",
	    "https_proxy",
	    "HTTP_PROXY",
	    "HTTPS_PROXY",
	};
	char url[64];
	size_t i;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u", port);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		env_set(e, names[i], url);
	/* all_proxy would route other schemes to an HTTP proxy: not ours. */
	env_unset(e, "all_proxy");
	env_unset(e, "ALL_PROXY");
	env_set(e, "no_proxy", "localhost,127.0.0.1,::1");
	env_set(e, "NO_PROXY", "localhost,127.0.0.1,::1");
	/* Node >= 22.21 / 24.5: fetch and http(s) honour the ones above. */
	env_set(e, "NODE_USE_ENV_PROXY", "1");
}

char **
env_vector(const struct env *e)
{
	return e->v;
}
