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
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/fd.h"
#include "common/log.h"
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
};

/* One load: where messages go, and how long a helper may take. */
struct load_ctx {
	secret_report_fn *report;
	void *arg;
	int timeout_ms;
};

/* How reading a helper's output ended. */
enum helper_read {
	HELPER_EOF,
	HELPER_TOO_LONG,
	HELPER_TIMEOUT,
	HELPER_READ_ERROR,
};

/* What running a helper gave. */
struct helper_run {
	enum helper_read how;
	int read_errno; /* for HELPER_READ_ERROR */
	int exec_errno; /* non-zero if execvp failed */
	int status; /* from waitpid */
	int wait_errno; /* non-zero if waitpid failed */
	size_t len; /* bytes of output read */
};

static void say(const struct load_ctx *, const struct secret *, const char *,
    ...) __attribute__((format(printf, 3, 4)));

struct secret_store *
secret_store_new(void)
{
	struct secret_store *st;

	st = xcalloc(1, sizeof(*st));
	st->exec_timeout_ms = SECRET_EXEC_TIMEOUT_MS;
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

/*
 * What FD (opened from the secret's path) really is, after any symlinks:
 * the file must be regular, owned by us or root, readable by its owner
 * alone.
 */
enum secret_file
secret_file_check(int fd, struct stat *sb)
{
	mode_t mode;

	if (fstat(fd, sb) == -1)
		return SECRET_FILE_STAT;
	mode = sb->st_mode & 07777;
	if (!S_ISREG(sb->st_mode))
		return SECRET_FILE_NOT_REGULAR;
	if (sb->st_uid != getuid() && sb->st_uid != 0)
		return SECRET_FILE_OWNER;
	if ((mode & (S_IRWXG | S_IRWXO)) != 0 || (mode & S_IRUSR) == 0)
		return SECRET_FILE_MODE;
	return SECRET_FILE_OK;
}

/* secret_file_check, with the reason reported.  0 or a PH_ERR_* code. */
static int
check_file(const struct load_ctx *ctx, const struct secret *s, int fd)
{
	const char *path = s->argv[0];
	struct stat sb;

	switch (secret_file_check(fd, &sb)) {
	case SECRET_FILE_OK:
		return 0;
	case SECRET_FILE_STAT:
		say(ctx, s, "cannot stat %s: %s", path, strerror(errno));
		return PH_ERR_SYSTEM;
	case SECRET_FILE_NOT_REGULAR:
		say(ctx, s, "%s is %s; it must be a regular file", path,
		    file_kind(sb.st_mode));
		return PH_ERR_INVALID;
	case SECRET_FILE_OWNER:
		say(ctx, s,
		    "%s is owned by uid %u; it must be owned by you (uid %u) "
		    "or root",
		    path, (unsigned)sb.st_uid, (unsigned)getuid());
		return PH_ERR_PERM;
	case SECRET_FILE_MODE:
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

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * In the child: stdin /dev/null, stdout OUT, stderr inherited, ERRFD as
 * fd 3 (close-on-exec, to report an exec failure), nothing else open.
 * Only async-signal-safe calls from here on.  close_range needs Linux 5.9;
 * Landlock already needs 5.13.
 */
static void __attribute__((noreturn))
helper_child(char *const argv[], int devnull, int out, int errfd)
{
	struct sigaction sa;
	sigset_t none;
	int e;

	/* Move all three above fd 3 first so no dup2 clobbers another. */
	if ((devnull = fcntl(devnull, F_DUPFD, 4)) == -1 ||
	    (out = fcntl(out, F_DUPFD, 4)) == -1 ||
	    (errfd = fcntl(errfd, F_DUPFD, 4)) == -1 ||
	    dup2(devnull, STDIN_FILENO) == -1 ||
	    dup2(out, STDOUT_FILENO) == -1 || dup2(errfd, 3) == -1 ||
	    fcntl(3, F_SETFD, FD_CLOEXEC) == -1 || close_range(4, ~0U, 0) == -1)
		_exit(127);
	/* Do not hand our signal mask or an ignored SIGPIPE to the helper. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	(void)sigaction(SIGPIPE, &sa, NULL);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	execvp(argv[0], argv);
	e = errno;
	/* If this fails too, the parent still sees exit status 127. */
	(void)!write(3, &e, sizeof(e));
	_exit(127);
}

/*
 * Reads the helper's stdout from FD into P until EOF, until more than
 * RAW_MAX bytes came, or until the deadline passes.
 */
static void
helper_read(int fd, uint8_t *p, int timeout_ms, struct helper_run *hr)
{
	int64_t deadline = now_ms() + timeout_ms, left;
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	ssize_t n;

	for (;;) {
		if (hr->len == READ_CAP) {
			hr->how = HELPER_TOO_LONG;
			return;
		}
		if ((left = deadline - now_ms()) <= 0) {
			hr->how = HELPER_TIMEOUT;
			return;
		}
		if ((n = poll(&pfd, 1, (int)left)) <= 0) {
			if (n == 0 || errno == EINTR)
				continue;
			break;
		}
		n = read(fd, p + hr->len, READ_CAP - hr->len);
		if (n == -1 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		hr->len += (size_t)n;
	}
	hr->how = n == 0 ? HELPER_EOF : HELPER_READ_ERROR;
	if (n == -1)
		hr->read_errno = errno;
}

/* Reports how the helper ended; returns 0 if it ran, exited 0, printed. */
static int
helper_verdict(const struct load_ctx *ctx, const struct secret *s,
    const struct helper_run *hr)
{
	const char *h = s->argv[0];

	if (hr->wait_errno != 0) {
		say(ctx, s, "waitpid: %s", strerror(hr->wait_errno));
		return PH_ERR_SYSTEM;
	}
	if (hr->exec_errno != 0) {
		say(ctx, s, "cannot run helper %s: %s", h,
		    strerror(hr->exec_errno));
		return errno_code(hr->exec_errno);
	}
	switch (hr->how) {
	case HELPER_TIMEOUT:
		say(ctx, s, "helper %s did not finish within %d ms; killed it",
		    h, ctx->timeout_ms);
		return PH_ERR_TIMEOUT;
	case HELPER_TOO_LONG:
		say(ctx, s,
		    "output of helper %s is longer than %d bytes; killed it", h,
		    SECRET_MAX_LEN);
		return PH_ERR_TOO_LONG;
	case HELPER_READ_ERROR:
		say(ctx, s, "cannot read output of helper %s: %s", h,
		    strerror(hr->read_errno));
		return PH_ERR_SYSTEM;
	case HELPER_EOF:
		break;
	}
	if (WIFSIGNALED(hr->status)) {
		say(ctx, s, "helper %s was killed by signal %d (%s)", h,
		    WTERMSIG(hr->status), strsignal(WTERMSIG(hr->status)));
		return PH_ERR_SYSTEM;
	}
	if (WEXITSTATUS(hr->status) != 0) {
		say(ctx, s, "helper %s exited with status %d", h,
		    WEXITSTATUS(hr->status));
		return PH_ERR_SYSTEM;
	}
	if (hr->len == 0) {
		say(ctx, s,
		    "helper %s exited with status 0 but printed nothing", h);
		return PH_ERR_INVALID;
	}
	return 0;
}

/*
 * Collects a started helper: reads its output, kills it unless it closed
 * stdout, waits for it, and picks up an execvp errno from ERRFD.
 */
static void
helper_collect(pid_t pid, int outfd, int errfd, uint8_t *p, int timeout_ms,
    struct helper_run *hr)
{
	helper_read(outfd, p, timeout_ms, hr);
	if (hr->how != HELPER_EOF)
		(void)kill(pid, SIGKILL);
	while (waitpid(pid, &hr->status, 0) == -1) {
		if (errno != EINTR) {
			hr->wait_errno = errno;
			return;
		}
	}
	/* The child is gone, so every write end is closed: no blocking. */
	if (read(errfd, &hr->exec_errno, sizeof(hr->exec_errno)) !=
	    (ssize_t)sizeof(hr->exec_errno))
		hr->exec_errno = 0;
}

static void
close_pair(int fds[2])
{
	if (fds[0] != -1)
		close(fds[0]);
	if (fds[1] != -1)
		close(fds[1]);
	fds[0] = fds[1] = -1;
}

/*
 * Runs the helper with its stdout read into P.  Returns 0 with *LEN set,
 * or a PH_ERR_* code having reported why (*LEN still counts the bytes
 * written to P).  ERRP is a close-on-exec pipe: the child writes errno to
 * it if execvp fails, and a successful exec closes it.
 */
static int
run_helper(const struct load_ctx *ctx, const struct secret *s, uint8_t *p,
    size_t *len, int devnull)
{
	int outp[2] = {-1, -1}, errp[2] = {-1, -1};
	struct helper_run hr = {.how = HELPER_EOF};
	int r = PH_ERR_SYSTEM;
	pid_t pid;

	if (pipe2(outp, O_CLOEXEC) == -1 || pipe2(errp, O_CLOEXEC) == -1) {
		say(ctx, s, "pipe: %s", strerror(errno));
		goto out;
	}
	if ((pid = fork()) == -1) {
		say(ctx, s, "fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		helper_child(s->argv, devnull, outp[1], errp[1]);
	close(outp[1]);
	close(errp[1]);
	outp[1] = errp[1] = -1;
	helper_collect(pid, outp[0], errp[0], p, ctx->timeout_ms, &hr);
	r = helper_verdict(ctx, s, &hr);
out:
	*len = hr.len;
	close_pair(outp);
	close_pair(errp);
	return r;
}

static int
load_exec(const struct load_ctx *ctx, struct secret *s)
{
	uint8_t *p;
	size_t maplen, len = 0;
	int devnull, r;

	/* Opened here, so that the child has nothing left that can fail. */
	if ((devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1) {
		say(ctx, s, "cannot open /dev/null: %s", strerror(errno));
		return PH_ERR_SYSTEM;
	}
	if ((p = region_new(READ_CAP, &maplen)) == NULL) {
		say(ctx, s, "cannot map memory: %s", strerror(errno));
		r = PH_ERR_SYSTEM;
		goto out;
	}
	if ((r = run_helper(ctx, s, p, &len, devnull)) != 0) {
		region_free(p, maplen, len);
		goto out;
	}
	r = finish_value(ctx, s, p, maplen, len);
out:
	close(devnull);
	return r;
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
	struct load_ctx ctx = {report, arg, st->exec_timeout_ms};
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
