/*
 * secret.c: the secrets store.
 *
 * Each value lives in its own anonymous mapping, marked MADV_DONTDUMP and
 * mlock'd before the first byte is written, so that it never reaches a core
 * file and (where RLIMIT_MEMLOCK allows) never reaches swap.  Files and
 * helper output are read straight into that mapping; the unused tail pages
 * are then unmapped, so there is no intermediate buffer to forget to wipe.
 *
 * Nothing here ever formats a value: every message names the secret and
 * where it came from (path, variable, helper), and says what is wrong.
 */
#include <sys/types.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fd.h"
#include "common/log.h"
#include "common/proc.h"
#include "common/secfile.h"
#include "common/ph_err.h"
#include "common/xmalloc.h"
#include "policy/secret.h"

/*
 * Raw input may carry a trailing "\r\n" on top of a value of
 * SECRET_MAX_LEN bytes; one byte more than that proves it is too long.
 */
#define RAW_MAX (SECRET_MAX_LEN + 2)
#define READ_CAP (RAW_MAX + 1)

struct secret {
	char *name;
	enum secret_source source;
	char **argv; /* argc words and a NULL, as execvp wants */
	size_t argc;
	char **env; /* exec: variables the helper also gets */
	size_t nenv;
	uint8_t *value; /* mapping of maplen bytes, or NULL if not loaded */
	size_t len;
	size_t maplen;
	int used;
};

/*
 * Secrets are few (a handful per policy) and looked up by name only while
 * parsing, so a linear search over an array in definition order is both
 * fast enough and the simplest thing that keeps that order.  The array
 * holds pointers so that a struct secret * stays valid as it grows.
 */
struct secret_store {
	struct secret **secrets;
	size_t count;
	size_t cap;
	int exec_timeout_ms;
	int cancel_fd;
};

/* One load: where messages go, and how long a helper may take. */
struct load_ctx {
	secret_report_fn *report;
	void *arg;
	int timeout_ms;
	int cancel_fd;
	const struct secret_store *st;
};

static void say(const struct load_ctx *, const struct secret *, const char *,
    ...) __attribute__((format(printf, 3, 4)));

struct secret_store *
secret_store_new(void)
{
	struct secret_store *st;

	st = xcalloc(1, sizeof(*st));
	st->exec_timeout_ms = SECRET_EXEC_TIMEOUT_MS;
	st->cancel_fd = -1;
	return st;
}

static size_t
page_round(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (n + pg - 1) / pg * pg;
}

/*
 * Returns a fresh mapping of at least SIZE bytes, excluded from core dumps
 * and locked if the limit allows, or NULL with errno set.
 */
static uint8_t *
region_new(size_t size, size_t *maplen)
{
	void *p;

	*maplen = page_round(size);
	p = mmap(NULL, *maplen, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* Both are best effort: a value is still usable without them. */
	(void)madvise(p, *maplen, MADV_DONTDUMP);
	(void)mlock(p, *maplen);
	return p;
}

/* Wipes the first DIRTY bytes (the only ones ever written) and unmaps. */
static void
region_free(uint8_t *p, size_t maplen, size_t dirty)
{
	if (p == NULL)
		return;
	explicit_bzero(p, dirty);
	(void)munmap(p, maplen);
}

/* Unmaps the pages past LEN bytes, which were never written or are wiped. */
static void
region_trim(uint8_t *p, size_t *maplen, size_t len)
{
	size_t keep = page_round(len);

	if (keep < *maplen) {
		(void)munmap(p + keep, *maplen - keep);
		*maplen = keep;
	}
	/* Locking the smaller region may succeed where the whole failed. */
	(void)mlock(p, *maplen);
}

static void
secret_free(struct secret *s)
{
	size_t i;

	if (s == NULL)
		return;
	region_free(s->value, s->maplen, s->maplen);
	for (i = 0; i < s->argc; i++)
		free(s->argv[i]);
	free(s->argv);
	for (i = 0; i < s->nenv; i++)
		free(s->env[i]);
	free(s->env);
	free(s->name);
	free(s);
}

void
secret_store_free(struct secret_store *st)
{
	size_t i;

	if (st == NULL)
		return;
	for (i = 0; i < st->count; i++)
		secret_free(st->secrets[i]);
	free(st->secrets);
	free(st);
}

static int
argc_fits(enum secret_source source, size_t argc)
{
	switch (source) {
	case SECRET_FILE:
	case SECRET_ENV:
		return argc == 1;
	case SECRET_EXEC:
		return argc >= 1;
	}
	return 0;
}

static int
define_valid(const char *name, enum secret_source source,
    const char *const *argv, size_t argc)
{
	size_t i;

	if (name == NULL || *name == '\0' || argv == NULL ||
	    !argc_fits(source, argc))
		return 0;
	for (i = 0; i < argc; i++)
		if (argv[i] == NULL)
			return 0;
	/* An empty path, variable or helper name can never work. */
	return *argv[0] != '\0';
}

int
secret_store_define(struct secret_store *st, const char *name,
    enum secret_source source, const char *const *argv, size_t argc)
{
	struct secret *s;
	size_t i;

	if (!define_valid(name, source, argv, argc))
		return PH_ERR_INVALID;
	if (secret_store_find(st, name) != NULL)
		return PH_ERR_EXISTS;
	if (st->count == st->cap) {
		st->cap = st->cap == 0 ? 8 : st->cap * 2;
		st->secrets =
		    xreallocarray(st->secrets, st->cap, sizeof(*st->secrets));
	}
	s = xcalloc(1, sizeof(*s));
	s->name = xstrdup(name);
	s->source = source;
	s->argc = argc;
	s->argv = xcalloc(argc + 1, sizeof(*s->argv));
	for (i = 0; i < argc; i++)
		s->argv[i] = xstrdup(argv[i]);
	st->secrets[st->count++] = s;
	return 0;
}

struct secret *
secret_store_find(const struct secret_store *st, const char *name)
{
	size_t i;

	for (i = 0; i < st->count; i++)
		if (strcmp(st->secrets[i]->name, name) == 0)
			return st->secrets[i];
	return NULL;
}

size_t
secret_store_count(const struct secret_store *st)
{
	return st->count;
}

struct secret *
secret_store_get(const struct secret_store *st, size_t i)
{
	if (i >= st->count)
		return NULL;
	return st->secrets[i];
}

void
secret_store_set_exec_timeout(struct secret_store *st, int ms)
{
	/* The parser checks the range; anything else is a caller bug. */
	if (ms <= 0)
		fatalx_f("invalid exec timeout %d ms", ms);
	st->exec_timeout_ms = ms;
}

const char *const *
secret_exec_env(const struct secret *s, size_t *n)
{
	*n = s->nenv;
	return (const char *const *)s->env;
}

void
secret_store_set_cancel_fd(struct secret_store *st, int fd)
{
	st->cancel_fd = fd;
}

/* A POSIX variable name: a letter or '_', then letters, digits, '_'. */
static int
env_name_ok(const char *n)
{
	size_t i;

	if (n == NULL || !(isalpha((unsigned char)n[0]) || n[0] == '_'))
		return 0;
	for (i = 1; n[i] != '\0'; i++)
		if (!isalnum((unsigned char)n[i]) && n[i] != '_')
			return 0;
	return 1;
}

int
secret_set_exec_env(struct secret *s, const char *const *names, size_t n)
{
	size_t i;

	if (s->source != SECRET_EXEC || n > SECRET_EXEC_ENV_MAX)
		return PH_ERR_INVALID;
	for (i = 0; i < n; i++)
		if (!env_name_ok(names[i]))
			return PH_ERR_INVALID;
	for (i = 0; i < s->nenv; i++)
		free(s->env[i]);
	free(s->env);
	s->env = xcalloc(n + 1, sizeof(*s->env));
	for (i = 0; i < n; i++)
		s->env[i] = xstrdup(names[i]);
	s->nenv = n;
	return 0;
}

/* Reports "secret NAME: <message>"; callers never pass a value. */
static void
say(const struct load_ctx *ctx, const struct secret *s, const char *fmt, ...)
{
	va_list ap;
	char *msg, *line;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) == -1)
		fatal_f("vasprintf");
	va_end(ap);
	line = xasprintf("secret %s: %s", s->name, msg);
	if (ctx->report != NULL)
		ctx->report(ctx->arg, line);
	else
		log_warnx("%s", line);
	free(line);
	free(msg);
}

/* Names where a value came from, for messages: path, $VAR or helper. */
static char *
describe(const struct secret *s)
{
	switch (s->source) {
	case SECRET_FILE:
		return xstrdup(s->argv[0]);
	case SECRET_ENV:
		return xasprintf("$%s", s->argv[0]);
	case SECRET_EXEC:
		return xasprintf("output of helper %s", s->argv[0]);
	}
	return xstrdup("?");
}

/* Removes exactly one trailing "\n" or "\r\n"; returns the new length. */
static size_t
strip_newline(const uint8_t *p, size_t len)
{
	if (len > 0 && p[len - 1] == '\n') {
		len--;
		if (len > 0 && p[len - 1] == '\r')
			len--;
	}
	return len;
}

/* Returns 1 if P holds a byte that could split an HTTP header line. */
static int
has_control(const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] < 0x20 || p[i] == 0x7f)
			return 1;
	return 0;
}

/*
 * Takes the RAW bytes just read into mapping P and either keeps them as
 * S's value or wipes and unmaps them.  Returns 0 or a PH_ERR_* code.
 */
static int
finish_value(const struct load_ctx *ctx, struct secret *s, uint8_t *p,
    size_t maplen, size_t raw)
{
	size_t len = strip_newline(p, raw);
	char *what = describe(s);
	int r = PH_ERR_INVALID;

	if (len == 0) {
		say(ctx, s, "%s is empty", what);
		goto fail;
	}
	if (len > SECRET_MAX_LEN) {
		say(ctx, s, "%s is longer than %d bytes", what, SECRET_MAX_LEN);
		r = PH_ERR_TOO_LONG;
		goto fail;
	}
	if (has_control(p, len)) {
		say(ctx, s,
		    "%s contains a control character (a secret is one line; "
		    "only one trailing newline is removed)",
		    what);
		r = PH_ERR_NUL;
		goto fail;
	}
	/* The stripped newline sits in the page we keep: wipe it. */
	explicit_bzero(p + len, raw - len);
	region_trim(p, &maplen, len);
	s->value = p;
	s->len = len;
	s->maplen = maplen;
	free(what);
	return 0;
fail:
	region_free(p, maplen, raw);
	free(what);
	return r;
}

/* Maps an errno from open or exec to the closest PH_ERR_* code. */
static int
errno_code(int e)
{
	switch (e) {
	case ENOENT:
	case ENOTDIR:
		return PH_ERR_NOT_FOUND;
	case EACCES:
	case EPERM:
		return PH_ERR_PERM;
	default:
		return PH_ERR_SYSTEM;
	}
}

static const char *
file_kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device";
	return "not a regular file";
}

/* secfile_check, with the reason reported.  0 or a PH_ERR_* code. */
static int
check_file(const struct load_ctx *ctx, const struct secret *s, int fd)
{
	const char *path = s->argv[0];
	struct stat sb;

	switch (secfile_check(fd, &sb)) {
	case SECFILE_OK:
		return 0;
	case SECFILE_STAT:
		say(ctx, s, "cannot stat %s: %s", path, strerror(errno));
		return PH_ERR_SYSTEM;
	case SECFILE_NOT_REGULAR:
		say(ctx, s, "%s is %s; it must be a regular file", path,
		    file_kind(sb.st_mode));
		return PH_ERR_INVALID;
	case SECFILE_OWNER:
		say(ctx, s,
		    "%s is owned by uid %u; it must be owned by you (uid %u) "
		    "or root",
		    path, (unsigned)sb.st_uid, (unsigned)getuid());
		return PH_ERR_PERM;
	case SECFILE_MODE:
		break;
	}
	say(ctx, s, "%s is mode %04o; it must be 0600 or 0400 (chmod 600 %s)",
	    path, (unsigned)(sb.st_mode & 07777), path);
	return PH_ERR_PERM;
}

static int
load_file(const struct load_ctx *ctx, struct secret *s)
{
	const char *path = s->argv[0];
	uint8_t *p = NULL;
	size_t maplen = 0;
	ssize_t n;
	int fd, r;

	/* O_NONBLOCK: a FIFO must be refused by check_file, not hang here. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd == -1) {
		r = errno_code(errno);
		say(ctx, s, "cannot open %s: %s", path, strerror(errno));
		return r;
	}
	if ((r = check_file(ctx, s, fd)) != 0)
		goto out;
	if ((p = region_new(READ_CAP, &maplen)) == NULL) {
		say(ctx, s, "cannot map memory: %s", strerror(errno));
		r = PH_ERR_SYSTEM;
		goto out;
	}
	if ((n = fd_read_all(fd, p, READ_CAP)) == -1) {
		say(ctx, s, "cannot read %s: %s", path, strerror(errno));
		region_free(p, maplen, READ_CAP);
		r = PH_ERR_SYSTEM;
		goto out;
	}
	r = finish_value(ctx, s, p, maplen, (size_t)n);
out:
	close(fd);
	return r;
}

static int
load_env(const struct load_ctx *ctx, struct secret *s)
{
	const char *v = getenv(s->argv[0]);
	uint8_t *p;
	size_t len, maplen;

	if (v == NULL) {
		say(ctx, s, "environment variable %s is not set", s->argv[0]);
		return PH_ERR_NOT_FOUND;
	}
	if ((len = strlen(v)) == 0) {
		say(ctx, s, "environment variable %s is empty", s->argv[0]);
		return PH_ERR_INVALID;
	}
	/* Checked before copying, so that the mapping stays small. */
	if (len > RAW_MAX) {
		say(ctx, s, "$%s is longer than %d bytes", s->argv[0],
		    SECRET_MAX_LEN);
		return PH_ERR_TOO_LONG;
	}
	if ((p = region_new(len, &maplen)) == NULL) {
		say(ctx, s, "cannot map memory: %s", strerror(errno));
		return PH_ERR_SYSTEM;
	}
	memcpy(p, v, len);
	return finish_value(ctx, s, p, maplen, len);
}

/* Returns 1 if NAME is the variable of an env secret in the store. */
static const struct secret *
env_secret_of(const struct secret_store *st, const char *name)
{
	size_t i;

	for (i = 0; i < st->count; i++)
		if (st->secrets[i]->source == SECRET_ENV &&
		    strcmp(st->secrets[i]->argv[0], name) == 0)
			return st->secrets[i];
	return NULL;
}

/* Adds NAME=value from pinhole's environment to ENV, if it is set. */
static void
env_add(char **env, size_t *n, const char *name)
{
	const char *v = getenv(name);

	if (v != NULL)
		env[(*n)++] = xasprintf("%s=%s", name, v);
}

static void
env_free(char **env)
{
	size_t i;

	for (i = 0; env[i] != NULL; i++)
		free(env[i]);
	free(env);
}

/*
 * The helper's whole environment: PATH, HOME, LANG and the variables its
 * rule names, never one that holds an env secret (the base three are
 * left out then; a named one is an error).  NULL after reporting.
 */
static char **
helper_env(const struct load_ctx *ctx, const struct secret *s)
{
	static const char *const base[] = {"PATH", "HOME", "LANG"};
	const struct secret *held;
	char **env = xcalloc(3 + s->nenv + 1, sizeof(*env));
	size_t i, n = 0;

	for (i = 0; i < 3; i++)
		if (env_secret_of(ctx->st, base[i]) == NULL)
			env_add(env, &n, base[i]);
	for (i = 0; i < s->nenv; i++) {
		if ((held = env_secret_of(ctx->st, s->env[i])) != NULL) {
			say(ctx, s,
			    "the helper's environment names %s, which holds "
			    "secret %s; a helper never gets an env secret",
			    s->env[i], held->name);
			env_free(env);
			return NULL;
		}
		env_add(env, &n, s->env[i]);
	}
	return env;
}

/* Reports how a run that did not succeed ended; returns a PH_ERR_* code. */
static int
exec_failure(const struct load_ctx *ctx, const struct secret *s,
    const struct proc_result *res)
{
	const char *h = s->argv[0];
	int grace = PROC_GRACE_MS;

	switch (res->end) {
	case PROC_EXEC_FAILED:
		say(ctx, s, "cannot run helper %s: %s", h, strerror(res->err));
		return errno_code(res->err);
	case PROC_SYSTEM:
		say(ctx, s, "cannot run helper %s: %s", h, strerror(res->err));
		return PH_ERR_SYSTEM;
	case PROC_TIMEOUT:
		say(ctx, s,
		    "helper %s did not finish within %d ms; killed it and "
		    "everything it started",
		    h, ctx->timeout_ms);
		return PH_ERR_TIMEOUT;
	case PROC_LINGERED:
		say(ctx, s,
		    "helper %s closed its output but did not exit within %d "
		    "ms; killed it and everything it started",
		    h, grace);
		return PH_ERR_TIMEOUT;
	case PROC_HELD_OPEN:
		say(ctx, s,
		    "helper %s exited, but a process it started kept its "
		    "output open for %d ms; killed them",
		    h, grace);
		return PH_ERR_TIMEOUT;
	case PROC_TOO_LONG:
		say(ctx, s,
		    "output of helper %s is longer than %d bytes; killed it", h,
		    SECRET_MAX_LEN);
		return PH_ERR_TOO_LONG;
	case PROC_CANCELLED:
		say(ctx, s, "helper %s: cancelled (pinhole is stopping)", h);
		return PH_ERR_SYSTEM;
	case PROC_DONE:
		break;
	}
	if (res->signo != 0) {
		say(ctx, s, "helper %s was killed by signal %d (%s)", h,
		    res->signo, strsignal(res->signo));
		return PH_ERR_SYSTEM;
	}
	say(ctx, s, "helper %s exited with status %d", h, res->code);
	return PH_ERR_SYSTEM;
}

/* Runs the helper with its stdout read into P; 0 with *LEN set, or why. */
static int
run_helper(
    const struct load_ctx *ctx, const struct secret *s, uint8_t *p, size_t *len)
{
	struct proc_spec spec = {
	    .argv = s->argv,
	    .timeout_ms = ctx->timeout_ms,
	    .cancel_fd = ctx->cancel_fd,
	    .out = p,
	    .cap = READ_CAP,
	};
	struct proc_result res;
	char **env;
	int r;

	*len = 0;
	if ((env = helper_env(ctx, s)) == NULL)
		return PH_ERR_INVALID;
	spec.envp = env;
	r = proc_run(&spec, &res);
	env_free(env);
	*len = res.len;
	if (res.survivors > 0)
		log_warnx("secret %s: %u process%s started by helper %s could "
		          "not be killed",
		    s->name, res.survivors, res.survivors == 1 ? "" : "es",
		    s->argv[0]);
	if (r != 0)
		return exec_failure(ctx, s, &res);
	if (res.killed > 0)
		log_info("secret %s: killed %u process%s helper %s left "
		         "running",
		    s->name, res.killed, res.killed == 1 ? "" : "es",
		    s->argv[0]);
	if (res.len == 0) {
		say(ctx, s,
		    "helper %s exited with status 0 but printed nothing",
		    s->argv[0]);
		return PH_ERR_INVALID;
	}
	return 0;
}

static int
load_exec(const struct load_ctx *ctx, struct secret *s)
{
	uint8_t *p;
	size_t maplen, len = 0;
	int r;

	if ((p = region_new(READ_CAP, &maplen)) == NULL) {
		say(ctx, s, "cannot map memory: %s", strerror(errno));
		return PH_ERR_SYSTEM;
	}
	if ((r = run_helper(ctx, s, p, &len)) != 0) {
		region_free(p, maplen, len);
		return r;
	}
	return finish_value(ctx, s, p, maplen, len);
}

static int
load_one(const struct load_ctx *ctx, struct secret *s)
{
	switch (s->source) {
	case SECRET_FILE:
		return load_file(ctx, s);
	case SECRET_ENV:
		return load_env(ctx, s);
	case SECRET_EXEC:
		return load_exec(ctx, s);
	}
	return PH_ERR_INTERNAL;
}

int
secret_store_load(struct secret_store *st, secret_report_fn *report, void *arg)
{
	struct load_ctx ctx = {
	    report, arg, st->exec_timeout_ms, st->cancel_fd, st};
	size_t i;
	int r, first = 0;

	/*
	 * Before the first value is in memory: no core file, and no ptrace
	 * by other processes of the same user.
	 */
	if (st->count > 0 && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		fatal_f("prctl(PR_SET_DUMPABLE)");
	for (i = 0; i < st->count; i++) {
		if (st->secrets[i]->value != NULL)
			continue;
		if ((r = load_one(&ctx, st->secrets[i])) != 0 && first == 0)
			first = r;
	}
	return first;
}

const char *
secret_name(const struct secret *s)
{
	return s->name;
}

enum secret_source
secret_source(const struct secret *s)
{
	return s->source;
}

const char *
secret_origin(const struct secret *s)
{
	return s->argv[0];
}

const uint8_t *
secret_value(const struct secret *s, size_t *len)
{
	if (len != NULL)
		*len = s->value != NULL ? s->len : 0;
	return s->value;
}

void
secret_mark_used(struct secret *s)
{
	s->used = 1;
}

int
secret_used(const struct secret *s)
{
	return s->used;
}
