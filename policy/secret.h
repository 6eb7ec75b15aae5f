/*
 * secret.h: the secrets store.
 *
 * A policy names secrets ("secret NAME file PATH | env VAR | exec CMD ARG..."):
 * the parser defines them here without reading anything, so that `pinhole
 * check` and `pinhole explain` never touch a value.  secret_store_load()
 * reads every value once, at start, before any sandbox exists.
 *
 * Values live in their own mmap'd pages marked MADV_DONTDUMP (and mlock'd
 * where allowed), are never copied into messages, and are wiped with
 * explicit_bzero when the store is freed.  Error messages name the secret
 * and the reason, never the value.
 */
#ifndef PH_SECRET_H
#define PH_SECRET_H

#include <stddef.h>
#include <stdint.h>

/* Largest secret value accepted, in bytes. */
#define SECRET_MAX_LEN 65536
/* Default time an exec helper may take, in milliseconds. */
#define SECRET_EXEC_TIMEOUT_MS 10000
/* Most variables an exec rule may pass to its helper ("exec env A,B"). */
#define SECRET_EXEC_ENV_MAX 32

enum secret_source {
	SECRET_FILE, /* argv[0]: path (already resolved by the parser) */
	SECRET_ENV, /* argv[0]: environment variable of pinhole itself */
	SECRET_EXEC, /* argv: helper and its arguments, run without a shell */
};

struct secret;
struct secret_store;

/*
 * Called once per secret that fails to load, with a one-line message such
 * as "secret gh-token: /etc/pinhole/gh-token is mode 0644; it must be 0600
 * or 0400".  The message never contains the value.
 */
typedef void secret_report_fn(void *arg, const char *msg);

/* Returns a new empty store; never NULL (calls fatal on ENOMEM). */
struct secret_store *secret_store_new(void);

/* Wipes every value and frees the store.  NULL does nothing. */
void secret_store_free(struct secret_store *);

/*
 * Defines secret NAME.  argv/argc are copied.  Returns 0, PH_ERR_EXISTS if
 * NAME is already defined, or PH_ERR_INVALID if argc does not fit the
 * source (FILE and ENV take exactly one word, EXEC at least one).
 */
int secret_store_define(struct secret_store *, const char *name,
    enum secret_source, const char *const *argv, size_t argc);

/* Returns the secret called NAME, or NULL. */
struct secret *secret_store_find(const struct secret_store *, const char *name);

/* Returns the number of secrets defined. */
size_t secret_store_count(const struct secret_store *);

/* Returns the i-th secret in definition order (i < count), or NULL. */
struct secret *secret_store_get(const struct secret_store *, size_t i);

/*
 * Sets the time an exec helper may take before it is killed (ms).
 * Default SECRET_EXEC_TIMEOUT_MS.
 */
void secret_store_set_exec_timeout(struct secret_store *, int ms);

/*
 * Names the variables of pinhole's environment that S's helper gets on top
 * of PATH, HOME and LANG (copied).  Returns 0, or PH_ERR_INVALID if S is
 * not an exec secret, a name is not a variable name, or there are more
 * than SECRET_EXEC_ENV_MAX.
 */
int secret_set_exec_env(struct secret *s, const char *const *names, size_t n);

/* Returns the names secret_set_exec_env gave S, and sets *N. */
const char *const *secret_exec_env(const struct secret *s, size_t *n);

/*
 * Makes a load stop soon after FD becomes readable (-1: never): a running
 * helper is killed and every secret not yet loaded fails.  For a reload
 * that runs in a thread while the daemon shuts down.
 */
void secret_store_set_cancel_fd(struct secret_store *, int fd);

/*
 * Reads every value not yet loaded.  Rules:
 *  - file: opened read-only; must be a regular file whose mode has no
 *    group or other bits (0600 or 0400) and whose owner is the real uid or
 *    root; the message says which rule failed and how to fix it.
 *  - env: from pinhole's own environment; unset or empty is an error.
 *  - exec: run once with proc_run (common/proc.h): no shell, stdin
 *    /dev/null, stdout captured (at most SECRET_MAX_LEN), stderr
 *    inherited, its own process group below a subreaper, one deadline
 *    for its output and its exit, everything it started killed at the
 *    end; environment PATH, HOME, LANG and the variables the rule names
 *    (secret_set_exec_env), never an env secret's variable.  A non-zero
 *    exit, a signal, a timeout, output still open or a helper still
 *    running after the grace, or empty output is an error.
 * For all three, one trailing "\n" (or "\r\n") is removed; an empty value,
 * a value over SECRET_MAX_LEN, or one containing NUL, CR, LF or another
 * control character (it would split an HTTP header) is an error.
 * Every failing secret is reported through REPORT; loading goes on with the
 * next one.  Returns 0 when all loaded, else PH_ERR_NOT_FOUND, PH_ERR_PERM,
 * ... of the first failure.  Also marks the process not dumpable.
 */
int
secret_store_load(struct secret_store *, secret_report_fn *report, void *arg);

/* Returns the secret's name. */
const char *secret_name(const struct secret *);

/* Returns the secret's source. */
enum secret_source secret_source(const struct secret *);

/* Returns the first word of its definition (path, variable or helper). */
const char *secret_origin(const struct secret *);

/* Returns the value and sets *len, or NULL if not loaded. */
const uint8_t *secret_value(const struct secret *, size_t *len);

/*
 * Marks the secret as referenced by a rule; secret_used() tells the second
 * pass of the parser which secrets no rule uses.
 */
void secret_mark_used(struct secret *);
int secret_used(const struct secret *);

#endif
