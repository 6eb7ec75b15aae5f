/*
 * env.h: the sandbox's environment.  It starts empty but for the names
 * DESIGN.md keeps (PATH, HOME, USER, LOGNAME, TERM, LANG, LC_*, TZ); then
 * come --keep-env, --setenv and --unsetenv in the order given, and last
 * the proxy variables, which nothing may override.
 */
#ifndef PH_ENV_H
#define PH_ENV_H

#include <stddef.h>

struct env;

/* An environment holding the kept names of FROM (e.g. environ). */
struct env *env_new(char *const *from);
void env_free(struct env *);

/* Sets NAME to VALUE (replacing).  Returns 0, or -1 on a bad name. */
int env_set(struct env *, const char *name, const char *value);

/* Copies NAME from FROM when it is there.  Returns 1 if copied, else 0. */
int env_keep(struct env *, char *const *from, const char *name);

/* Removes NAME. */
void env_unset(struct env *, const char *name);

/* The value of NAME, or NULL. */
const char *env_get(const struct env *, const char *name);

/*
 * Sets http_proxy, https_proxy, HTTP_PROXY, HTTPS_PROXY to
 * http://127.0.0.1:PORT, no_proxy/NO_PROXY to the sandbox's own
 * loopback names, and NODE_USE_ENV_PROXY to 1 (Node reads them only then).
 */
void env_set_proxy(struct env *, unsigned port);

/* The NULL-terminated NAME=VALUE vector (owned by the env). */
char **env_vector(const struct env *);

/* 1 when NAME is a valid variable name (no '=', not empty). */
int env_name_ok(const char *name);

#endif /* PH_ENV_H */
