/*
 * test_secret.c: unit tests of policy/secret.c, the secrets store.
 *
 * Every message reported by a load goes through collect(), which fails the
 * test if it holds VALUE: whatever goes wrong, a value never reaches a
 * message.  Files live in a mkdtemp directory under $TMPDIR (or /tmp) that
 * the group teardown removes.
 */
#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/ph_err.h"
#include "common/xmalloc.h"
#include "policy/secret.h"
#include "tests/unit/fixture.h"

/* Distinctive, so that strstr finds it in any message that leaks it. */
#define VALUE "pH-s3cr3t-Zq9x"
#define MAXMSG 16
#define MAXPATHS 8
/* An uid that is neither root nor, in the unprivileged run, ours. */
#define OTHER_UID 65534

struct fixture {
	struct secret_store *st;
	char *msgs[MAXMSG];
	size_t nmsgs;
	char *paths[MAXPATHS];
	size_t npaths;
};

static char tmpdir[PATH_MAX];

/* The report callback: checks each message and keeps a copy. */
static void
collect(void *arg, const char *msg)
{
	struct fixture *f = arg;

	assert_null(strstr(msg, VALUE));
	assert_null(strchr(msg, '\n'));
	assert_int_equal(strncmp(msg, "secret ", 7), 0);
	assert_true(f->nmsgs < MAXMSG);
	f->msgs[f->nmsgs++] = xstrdup(msg);
}

static int
group_setup(void **state)
{
	(void)state;
	return fixture_tmpdir(tmpdir, sizeof(tmpdir), "test_secret");
}

static int
group_teardown(void **state)
{
	(void)state;
	return fixture_rmtree(tmpdir);
}

static int
setup(void **state)
{
	struct fixture *f;

	f = xcalloc(1, sizeof(*f));
	f->st = secret_store_new();
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;
	size_t i;

	secret_store_free(f->st);
	for (i = 0; i < f->nmsgs; i++)
		free(f->msgs[i]);
	for (i = 0; i < f->npaths; i++)
		free(f->paths[i]);
	free(f);
	/*
	 * A load made us undumpable; LeakSanitizer needs to ptrace us at
	 * exit, which an unprivileged non-dumpable process forbids.
	 */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	return 0;
}

/* Returns a path in the temp dir, freed at teardown. */
static const char *
tpath(struct fixture *f, const char *name)
{
	assert_true(f->npaths < MAXPATHS);
	f->paths[f->npaths] = xasprintf("%s/%s", tmpdir, name);
	return f->paths[f->npaths++];
}

/* Creates file NAME holding LEN bytes of DATA with MODE; returns path. */
static const char *
mkfile(struct fixture *f, const char *name, const void *data, size_t len,
    mode_t mode)
{
	const char *path = tpath(f, name);
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_int_not_equal(fd, -1);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	/* fchmod, not the open mode, so the umask does not interfere. */
	assert_int_equal(fchmod(fd, mode), 0);
	assert_int_equal(close(fd), 0);
	return path;
}

static const char *
mkfile_str(struct fixture *f, const char *name, const char *s, mode_t mode)
{
	return mkfile(f, name, s, strlen(s), mode);
}

/* Defines NAME from a NULL-terminated list of words. */
static int
define(struct fixture *f, const char *name, enum secret_source src, ...)
{
	const char *argv[8];
	size_t argc = 0;
	va_list ap;

	va_start(ap, src);
	while ((argv[argc] = va_arg(ap, const char *)) != NULL)
		assert_true(++argc < 8);
	va_end(ap);
	return secret_store_define(f->st, name, src, argv, argc);
}

static int
load(struct fixture *f)
{
	return secret_store_load(f->st, collect, f);
}

static void
assert_value(struct fixture *f, const char *name, const char *want)
{
	struct secret *s = secret_store_find(f->st, name);
	const uint8_t *v;
	size_t len;

	assert_non_null(s);
	v = secret_value(s, &len);
	assert_non_null(v);
	assert_int_equal(len, strlen(want));
	assert_memory_equal(v, want, len);
}

static void
assert_unloaded(struct fixture *f, const char *name)
{
	struct secret *s = secret_store_find(f->st, name);
	size_t len = 1;

	assert_non_null(s);
	assert_null(secret_value(s, &len));
	assert_int_equal(len, 0);
}

/* Asserts that message I exists and contains every string given. */
static void
assert_msg(struct fixture *f, size_t i, ...)
{
	const char *want;
	va_list ap;

	assert_true(i < f->nmsgs);
	va_start(ap, i);
	while ((want = va_arg(ap, const char *)) != NULL) {
		if (strstr(f->msgs[i], want) == NULL)
			fail_msg(
			    "message \"%s\" lacks \"%s\"", f->msgs[i], want);
	}
	va_end(ap);
}

/* Loads the one secret defined; asserts R and a single message. */
static void
load_fails(struct fixture *f, int r)
{
	assert_int_equal(load(f), r);
	assert_int_equal(f->nmsgs, 1);
	assert_unloaded(f, "tok");
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* file */

static void
test_file_0600_ok(void **state)
{
	struct fixture *f = *state;
	const char *p = mkfile_str(f, "f0600", VALUE, 0600);

	assert_int_equal(define(f, "tok", SECRET_FILE, p, NULL), 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->nmsgs, 0);
	assert_value(f, "tok", VALUE);
}

static void
test_file_0400_ok(void **state)
{
	struct fixture *f = *state;
	const char *p = mkfile_str(f, "f0400", VALUE "\n", 0400);

	assert_int_equal(define(f, "tok", SECRET_FILE, p, NULL), 0);
	assert_int_equal(load(f), 0);
	assert_value(f, "tok", VALUE);
}

static void
test_file_0640_refused(void **state)
{
	struct fixture *f = *state;
	const char *p = mkfile_str(f, "f0640", VALUE, 0640);

	assert_int_equal(define(f, "tok", SECRET_FILE, p, NULL), 0);
	load_fails(f, PH_ERR_PERM);
	assert_msg(f, 0, "secret tok: ", p, "is mode 0640", "0600 or 0400",
	    "chmod 600", NULL);
}

static void
test_file_0604_refused(void **state)
{
	struct fixture *f = *state;
	const char *p = mkfile_str(f, "f0604", VALUE, 0604);

	assert_int_equal(define(f, "tok", SECRET_FILE, p, NULL), 0);
	load_fails(f, PH_ERR_PERM);
	assert_msg(f, 0, "is mode 0604", "0600", NULL);
}

static void
test_file_0200_refused(void **state)
{
	struct fixture *f = *state;
	const char *p = mkfile_str(f, "f0200", VALUE, 0200);

	/* Root opens it and the mode check refuses; others get EACCES. */
	assert_int_equal(define(f, "tok", SECRET_FILE, p, NULL), 0);
	load_fails(f, PH_ERR_PERM);
	if (getuid() == 0)
		assert_msg(f, 0, "is mode 0200", "0600 or 0400", NULL);
	else
		assert_msg(f, 0, "cannot open", "Permission denied", NULL);
}

static void
test_file_other_owner_refused(void **state)
{
	struct fixture *f = *state;
	const char *p;
	char uid[32];

	if (getuid() != 0) {
		fprintf(stderr,
		    "test_file_other_owner_refused: skipped: "
		    "needs root to chown a file to uid %d\n",
		    OTHER_UID);
		skip();
	}
	p = mkfile_str(f, "fother", VALUE, 0600);
	assert_int_equal(chown(p, OTHER_UID, OTHER_UID), 0);
	assert_int_equal(define(f, "tok", SECRET_FILE, p, NULL), 0);
	load_fails(f, PH_ERR_PERM);
	snprintf(uid, sizeof(uid), "owned by uid %d", OTHER_UID);
	assert_msg(f, 0, p, uid, "must be owned by you (uid 0) or root", NULL);
}

static void
test_file_directory_refused(void **state)
{
	struct fixture *f = *state;
	const char *p = tpath(f, "dir");

	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(define(f, "tok", SECRET_FILE, p, NULL), 0);
	load_fails(f, PH_ERR_INVALID);
	assert_msg(f, 0, p, "is a directory", "regular file", NULL);
}

static void
test_file_missing(void **state)
{
	struct fixture *f = *state;
	const char *p = tpath(f, "missing");

	assert_int_equal(define(f, "tok", SECRET_FILE, p, NULL), 0);
	load_fails(f, PH_ERR_NOT_FOUND);
	assert_msg(f, 0, "secret tok: cannot open ", p,
	    ": No such file or directory", NULL);
}

static void
test_file_symlink_followed(void **state)
{
	struct fixture *f = *state;
	const char *p = mkfile_str(f, "target", VALUE, 0600);
	const char *l = tpath(f, "link");

	/* The checks apply to the file the link leads to. */
	assert_int_equal(symlink(p, l), 0);
	assert_int_equal(define(f, "tok", SECRET_FILE, l, NULL), 0);
	assert_int_equal(load(f), 0);
	assert_value(f, "tok", VALUE);
}

/* value rules, common to all sources */

static void
test_one_newline_stripped(void **state)
{
	struct fixture *f = *state;
	const char *p1 = mkfile_str(f, "nl1", VALUE "\n", 0600);
	const char *p2 = mkfile_str(f, "nl2", VALUE "\n\n", 0600);

	assert_int_equal(define(f, "one", SECRET_FILE, p1, NULL), 0);
	assert_int_equal(define(f, "two", SECRET_FILE, p2, NULL), 0);
	/* Only one newline goes: the second is a control character. */
	assert_int_equal(load(f), PH_ERR_NUL);
	assert_value(f, "one", VALUE);
	assert_int_equal(f->nmsgs, 1);
	assert_msg(f, 0, "secret two: ", "contains a control character", NULL);
}

static void
test_crlf_stripped(void **state)
{
	struct fixture *f = *state;
	const char *p = mkfile_str(f, "crlf", VALUE "\r\n", 0600);
	const char *cr = mkfile_str(f, "cr", VALUE "\r", 0600);

	assert_int_equal(define(f, "tok", SECRET_FILE, p, NULL), 0);
	assert_int_equal(define(f, "cr", SECRET_FILE, cr, NULL), 0);
	/* A lone trailing CR is not a line end: refused. */
	assert_int_equal(load(f), PH_ERR_NUL);
	assert_value(f, "tok", VALUE);
	assert_unloaded(f, "cr");
}

static void
test_embedded_newline_refused(void **state)
{
	struct fixture *f = *state;
	const char *p = mkfile_str(f, "emb", VALUE "\n" VALUE "\n", 0600);

	assert_int_equal(define(f, "tok", SECRET_FILE, p, NULL), 0);
	load_fails(f, PH_ERR_NUL);
	assert_msg(f, 0, p, "contains a control character", NULL);
}

static void
test_control_chars_refused(void **state)
{
	static const char bad[] = {'\0', '\t', '\r', 0x1b, 0x7f};
	struct fixture *f = *state;
	char data[64], name[16];
	const char *p;
	size_t i;

	for (i = 0; i < sizeof(bad); i++) {
		snprintf(data, sizeof(data), "%s?%s", VALUE, VALUE);
		data[strlen(VALUE)] = bad[i];
		snprintf(name, sizeof(name), "ctl%zu", i);
		p = mkfile(f, name, data, 2 * strlen(VALUE) + 1, 0600);
		assert_int_equal(define(f, name, SECRET_FILE, p, NULL), 0);
	}
	assert_int_equal(load(f), PH_ERR_NUL);
	assert_int_equal(f->nmsgs, sizeof(bad));
}

static void
test_high_bytes_allowed(void **state)
{
	struct fixture *f = *state;
	const char *p = mkfile_str(f, "utf8", "caf\xc3\xa9", 0600);

	assert_int_equal(define(f, "tok", SECRET_FILE, p, NULL), 0);
	assert_int_equal(load(f), 0);
	assert_value(f, "tok", "caf\xc3\xa9");
}

static void
test_empty_refused(void **state)
{
	struct fixture *f = *state;
	const char *p0 = mkfile_str(f, "empty", "", 0600);
	const char *p1 = mkfile_str(f, "emptynl", "\n", 0600);

	assert_int_equal(define(f, "e0", SECRET_FILE, p0, NULL), 0);
	assert_int_equal(define(f, "e1", SECRET_FILE, p1, NULL), 0);
	assert_int_equal(load(f), PH_ERR_INVALID);
	assert_int_equal(f->nmsgs, 2);
	assert_msg(f, 0, "secret e0: ", p0, "is empty", NULL);
	assert_msg(f, 1, "secret e1: ", p1, "is empty", NULL);
}

static void
test_max_len(void **state)
{
	struct fixture *f = *state;
	char *buf = xmalloc(SECRET_MAX_LEN + 2);
	const char *ok, *big;
	size_t len;

	memset(buf, 'a', SECRET_MAX_LEN + 2);
	buf[SECRET_MAX_LEN] = '\r';
	buf[SECRET_MAX_LEN + 1] = '\n';
	ok = mkfile(f, "max", buf, SECRET_MAX_LEN + 2, 0600);
	buf[SECRET_MAX_LEN] = 'a';
	big = mkfile(f, "big", buf, SECRET_MAX_LEN + 1, 0600);
	free(buf);
	assert_int_equal(define(f, "max", SECRET_FILE, ok, NULL), 0);
	assert_int_equal(define(f, "big", SECRET_FILE, big, NULL), 0);
	assert_int_equal(load(f), PH_ERR_TOO_LONG);
	assert_int_equal(f->nmsgs, 1);
	assert_msg(f, 0, "secret big: ", "longer than 65536 bytes", NULL);
	/* At most SECRET_MAX_LEN, after removing the line end. */
	assert_non_null(secret_value(secret_store_find(f->st, "max"), &len));
	assert_int_equal(len, SECRET_MAX_LEN);
	assert_unloaded(f, "big");
}

/* env */

static void
test_env_ok(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(setenv("PH_TEST_SECRET", VALUE "\n", 1), 0);
	assert_int_equal(
	    define(f, "tok", SECRET_ENV, "PH_TEST_SECRET", NULL), 0);
	assert_int_equal(load(f), 0);
	assert_value(f, "tok", VALUE);
	unsetenv("PH_TEST_SECRET");
}

static void
test_env_unset(void **state)
{
	struct fixture *f = *state;

	unsetenv("PH_TEST_UNSET");
	assert_int_equal(
	    define(f, "tok", SECRET_ENV, "PH_TEST_UNSET", NULL), 0);
	load_fails(f, PH_ERR_NOT_FOUND);
	assert_msg(f, 0, "secret tok: ", "PH_TEST_UNSET", "not set", NULL);
}

static void
test_env_empty(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(setenv("PH_TEST_EMPTY", "", 1), 0);
	assert_int_equal(
	    define(f, "tok", SECRET_ENV, "PH_TEST_EMPTY", NULL), 0);
	load_fails(f, PH_ERR_INVALID);
	assert_msg(f, 0, "PH_TEST_EMPTY", "empty", NULL);
	unsetenv("PH_TEST_EMPTY");
}

/* exec */

static void
test_exec_echo_ok(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(
	    define(f, "tok", SECRET_EXEC, "/bin/echo", VALUE, NULL), 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->nmsgs, 0);
	assert_value(f, "tok", VALUE);
}

static void
test_exec_printf_ok(void **state)
{
	struct fixture *f = *state;
	int r;

	/* No shell: "%s" and the spaces reach printf as they are. */
	r = define(f, "tok", SECRET_EXEC, "/usr/bin/printf", "%s\r\n",
	    VALUE " with spaces", NULL);
	assert_int_equal(r, 0);
	assert_int_equal(load(f), 0);
	assert_value(f, "tok", VALUE " with spaces");
}

static void
test_exec_path_search(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(define(f, "tok", SECRET_EXEC, "echo", VALUE, NULL), 0);
	assert_int_equal(load(f), 0);
	assert_value(f, "tok", VALUE);
}

static void
test_exec_false(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(define(f, "tok", SECRET_EXEC, "/bin/false", NULL), 0);
	load_fails(f, PH_ERR_SYSTEM);
	assert_msg(f, 0, "secret tok: ", "helper /bin/false",
	    "exited with status 1", NULL);
}

static void
test_exec_status_not_output(void **state)
{
	struct fixture *f = *state;
	int r;

	/* It printed the value, then failed: the value is not reported. */
	r = define(f, "tok", SECRET_EXEC, "/bin/sh", "-c",
	    "echo " VALUE "; exit 3", NULL);
	assert_int_equal(r, 0);
	load_fails(f, PH_ERR_SYSTEM);
	assert_msg(f, 0, "helper /bin/sh", "exited with status 3", NULL);
}

static void
test_exec_signal(void **state)
{
	struct fixture *f = *state;
	int r;

	r = define(
	    f, "tok", SECRET_EXEC, "/bin/sh", "-c", "kill -KILL $$", NULL);
	assert_int_equal(r, 0);
	load_fails(f, PH_ERR_SYSTEM);
	assert_msg(f, 0, "helper /bin/sh", "killed by signal 9", NULL);
}

static void
test_exec_empty_output(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(define(f, "tok", SECRET_EXEC, "/bin/true", NULL), 0);
	load_fails(f, PH_ERR_INVALID);
	assert_msg(
	    f, 0, "helper /bin/true", "status 0", "printed nothing", NULL);
}

static void
test_exec_newline_only(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(define(f, "tok", SECRET_EXEC, "/bin/echo", NULL), 0);
	load_fails(f, PH_ERR_INVALID);
	assert_msg(f, 0, "helper /bin/echo", "is empty", NULL);
}

static void
test_exec_timeout(void **state)
{
	struct fixture *f = *state;
	double t0;

	secret_store_set_exec_timeout(f->st, 200);
	assert_int_equal(
	    define(f, "tok", SECRET_EXEC, "/bin/sleep", "5", NULL), 0);
	t0 = now();
	load_fails(f, PH_ERR_TIMEOUT);
	/* Not a timing test: only that it did not wait for sleep to end. */
	assert_true(now() - t0 < 4.0);
	assert_msg(f, 0, "helper /bin/sleep", "200 ms", NULL);
}

static void
test_exec_timeout_partial_output(void **state)
{
	struct fixture *f = *state;
	int r;

	secret_store_set_exec_timeout(f->st, 200);
	r = define(f, "tok", SECRET_EXEC, "/bin/sh", "-c",
	    "echo " VALUE "; exec sleep 5", NULL);
	assert_int_equal(r, 0);
	load_fails(f, PH_ERR_TIMEOUT);
}

static void
test_exec_nonexistent(void **state)
{
	struct fixture *f = *state;
	char *path;
	int r;

	assert_int_equal(
	    define(f, "abs", SECRET_EXEC, "/nonexistent/ph-helper", NULL), 0);
	assert_int_equal(
	    define(f, "rel", SECRET_EXEC, "ph-no-such-helper", NULL), 0);
	/*
	 * A PATH entry we may not search turns execvp's ENOENT into EACCES
	 * (as with root's PATH under setpriv): search readable dirs only.
	 */
	path = xstrdup(getenv("PATH") != NULL ? getenv("PATH") : "");
	assert_int_equal(setenv("PATH", "/usr/bin:/bin", 1), 0);
	r = load(f);
	assert_int_equal(setenv("PATH", path, 1), 0);
	free(path);
	assert_int_equal(r, PH_ERR_NOT_FOUND);
	assert_int_equal(f->nmsgs, 2);
	assert_msg(f, 0, "secret abs: ", "/nonexistent/ph-helper",
	    "No such file or directory", NULL);
	assert_msg(f, 1, "secret rel: ", "ph-no-such-helper",
	    "No such file or directory", NULL);
}

static void
test_exec_too_large(void **state)
{
	struct fixture *f = *state;
	int r;

	/* yes never ends: refused as too long, or at worst by timeout. */
	secret_store_set_exec_timeout(f->st, 3000);
	assert_int_equal(
	    define(f, "tok", SECRET_EXEC, "/usr/bin/yes", VALUE, NULL), 0);
	r = load(f);
	assert_true(r == PH_ERR_TOO_LONG || r == PH_ERR_TIMEOUT);
	assert_int_equal(f->nmsgs, 1);
	assert_unloaded(f, "tok");
	assert_msg(f, 0, "helper /usr/bin/yes", NULL);
}

static void
test_exec_stdio(void **state)
{
	struct fixture *f = *state;
	int fd, hi, r;

	/* An fd without close-on-exec that the helper must not see. */
	fd = open("/dev/null", O_RDONLY);
	assert_int_not_equal(fd, -1);
	hi = fcntl(fd, F_DUPFD, 20);
	assert_int_equal(hi, 20);
	r = define(
	    f, "in", SECRET_EXEC, "/bin/readlink", "/proc/self/fd/0", NULL);
	assert_int_equal(r, 0);
	r = define(f, "fds", SECRET_EXEC, "/bin/sh", "-c",
	    "if [ -e /proc/self/fd/20 ]; then echo open; else echo closed; fi",
	    NULL);
	assert_int_equal(r, 0);
	assert_int_equal(load(f), 0);
	close(hi);
	close(fd);
	assert_value(f, "in", "/dev/null");
	assert_value(f, "fds", "closed");
}

/*
 * Prints its value, closes stdout and keeps running: killed after the
 * grace, long before the 10 s deadline, and the secret fails.
 */
static void
test_exec_closes_stdout_and_runs(void **state)
{
	struct fixture *f = *state;
	double t0;

	assert_int_equal(define(f, "tok", SECRET_EXEC, "/bin/sh", "-c",
	                     "echo " VALUE "; exec >&-; exec sleep 60", NULL),
	    0);
	t0 = now();
	load_fails(f, PH_ERR_TIMEOUT);
	assert_true(now() - t0 < 5.0);
	assert_unloaded(f, "tok");
	assert_msg(f, 0, "helper /bin/sh", "closed its output", "killed", NULL);
}

/* A grandchild in its own session holds stdout after the helper exits. */
static void
test_exec_grandchild_holds_stdout(void **state)
{
	struct fixture *f = *state;
	double t0;

	assert_int_equal(define(f, "tok", SECRET_EXEC, "/bin/sh", "-c",
	                     "setsid sleep 60 & echo " VALUE, NULL),
	    0);
	t0 = now();
	load_fails(f, PH_ERR_TIMEOUT);
	assert_true(now() - t0 < 5.0);
	assert_msg(f, 0, "helper /bin/sh", "kept its output open", NULL);
}

/*
 * Splits the comma-separated list of variable names the helper printed
 * and checks it holds exactly the names in WANT.
 */
static void
assert_env_names(
    struct fixture *f, const char *name, const char *const *want, size_t nwant)
{
	struct secret *s = secret_store_find(f->st, name);
	char buf[1024], *tok, *save = NULL;
	const uint8_t *v;
	size_t len, i, seen = 0;

	assert_non_null(s);
	v = secret_value(s, &len);
	assert_non_null(v);
	assert_true(len < sizeof(buf));
	memcpy(buf, v, len);
	buf[len] = '\0';
	for (tok = strtok_r(buf, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < nwant; i++)
			if (strcmp(tok, want[i]) == 0)
				break;
		if (i == nwant)
			fail_msg("the helper got variable %s", tok);
		seen++;
	}
	assert_int_equal(seen, nwant);
}

/*
 * The helper gets PATH, HOME, LANG and what its rule names; not the rest
 * of pinhole's environment, and never an env secret's variable.
 */
static void
test_exec_env_minimal(void **state)
{
	static const char *const want[] = {
	    "PATH", "HOME", "LANG", "PH_ALLOWED"};
	static const char *const names[] = {"PH_ALLOWED", "PH_UNSET_VAR"};
	struct fixture *f = *state;

	assert_int_equal(setenv("HOME", "/nowhere", 1), 0);
	assert_int_equal(setenv("LANG", "C.UTF-8", 1), 0);
	assert_int_equal(setenv("PH_ALLOWED", "yes", 1), 0);
	assert_int_equal(setenv("PH_OTHER", "leak", 1), 0);
	assert_int_equal(setenv("PH_TEST_ENV_SECRET", VALUE, 1), 0);
	assert_int_equal(
	    define(f, "envtok", SECRET_ENV, "PH_TEST_ENV_SECRET", NULL), 0);
	assert_int_equal(
	    define(f, "names", SECRET_EXEC, "awk",
	        "BEGIN { for (k in ENVIRON) printf \"%s,\", k }", NULL),
	    0);
	assert_int_equal(
	    secret_set_exec_env(secret_store_find(f->st, "names"), names, 2),
	    0);
	assert_int_equal(load(f), 0);
	assert_env_names(f, "names", want, 4);
	unsetenv("PH_ALLOWED");
	unsetenv("PH_OTHER");
	unsetenv("PH_TEST_ENV_SECRET");
}

/* A rule that names an env secret's variable for its helper fails. */
static void
test_exec_env_names_env_secret(void **state)
{
	static const char *const names[] = {"PH_TEST_ENV_SECRET"};
	struct fixture *f = *state;

	assert_int_equal(setenv("PH_TEST_ENV_SECRET", VALUE, 1), 0);
	assert_int_equal(
	    define(f, "envtok", SECRET_ENV, "PH_TEST_ENV_SECRET", NULL), 0);
	assert_int_equal(
	    define(f, "tok", SECRET_EXEC, "/bin/echo", "x", NULL), 0);
	assert_int_equal(
	    secret_set_exec_env(secret_store_find(f->st, "tok"), names, 1), 0);
	load_fails(f, PH_ERR_INVALID);
	assert_unloaded(f, "tok");
	assert_msg(f, 0, "secret tok: ", "PH_TEST_ENV_SECRET", "envtok", NULL);
	unsetenv("PH_TEST_ENV_SECRET");
}

static void
test_exec_env_invalid(void **state)
{
	static const char *const bad[] = {"A=B"};
	static const char *const digit[] = {"1A"};
	static const char *const ok[] = {"_A1"};
	struct fixture *f = *state;
	size_t i;
	const char *many_ok[SECRET_EXEC_ENV_MAX + 1];

	for (i = 0; i <= SECRET_EXEC_ENV_MAX; i++)
		many_ok[i] = "A";
	assert_int_equal(define(f, "tok", SECRET_EXEC, "/bin/echo", NULL), 0);
	assert_int_equal(define(f, "file", SECRET_FILE, "/x", NULL), 0);
	assert_int_equal(
	    secret_set_exec_env(secret_store_find(f->st, "tok"), bad, 1),
	    PH_ERR_INVALID);
	assert_int_equal(
	    secret_set_exec_env(secret_store_find(f->st, "tok"), digit, 1),
	    PH_ERR_INVALID);
	assert_int_equal(secret_set_exec_env(secret_store_find(f->st, "tok"),
	                     many_ok, SECRET_EXEC_ENV_MAX + 1),
	    PH_ERR_INVALID);
	assert_int_equal(
	    secret_set_exec_env(secret_store_find(f->st, "file"), ok, 1),
	    PH_ERR_INVALID);
	assert_int_equal(
	    secret_set_exec_env(secret_store_find(f->st, "tok"), ok, 1), 0);
}

/* A readable cancel descriptor stops a slow helper at once. */
static void
test_exec_cancel(void **state)
{
	struct fixture *f = *state;
	int p[2];
	double t0;

	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	secret_store_set_cancel_fd(f->st, p[0]);
	assert_int_equal(
	    define(f, "tok", SECRET_EXEC, "/bin/sleep", "60", NULL), 0);
	t0 = now();
	assert_int_not_equal(load(f), 0);
	assert_true(now() - t0 < 5.0);
	assert_msg(f, 0, "helper /bin/sleep", "cancelled", NULL);
	close(p[0]);
	close(p[1]);
}

/* store */

static void
test_define(void **state)
{
	struct fixture *f = *state;
	const char *two[] = {"a", "b"};

	assert_int_equal(define(f, "tok", SECRET_FILE, "/x", NULL), 0);
	assert_int_equal(
	    define(f, "tok", SECRET_ENV, "X", NULL), PH_ERR_EXISTS);
	assert_int_equal(secret_store_define(f->st, "f2", SECRET_FILE, two, 2),
	    PH_ERR_INVALID);
	assert_int_equal(secret_store_define(f->st, "e2", SECRET_ENV, two, 2),
	    PH_ERR_INVALID);
	assert_int_equal(secret_store_define(f->st, "f0", SECRET_FILE, two, 0),
	    PH_ERR_INVALID);
	assert_int_equal(define(f, "e0", SECRET_ENV, NULL), PH_ERR_INVALID);
	assert_int_equal(define(f, "x0", SECRET_EXEC, NULL), PH_ERR_INVALID);
	assert_int_equal(define(f, "", SECRET_ENV, "X", NULL), PH_ERR_INVALID);
	assert_int_equal(
	    define(f, "nopath", SECRET_FILE, "", NULL), PH_ERR_INVALID);
	assert_int_equal(
	    secret_store_define(f->st, "x2", SECRET_EXEC, two, 2), 0);
	assert_int_equal(secret_store_count(f->st), 2);
}

static void
test_accessors(void **state)
{
	struct fixture *f = *state;
	char words[2][8] = {"/bin/x", "arg"};
	const char *argv[2] = {words[0], words[1]};
	struct secret *s;
	char name[8];
	size_t i;

	assert_int_equal(secret_store_count(f->st), 0);
	assert_null(secret_store_get(f->st, 0));
	assert_int_equal(define(f, "b", SECRET_FILE, "/p", NULL), 0);
	assert_int_equal(define(f, "a", SECRET_ENV, "VAR", NULL), 0);
	assert_int_equal(
	    secret_store_define(f->st, "c", SECRET_EXEC, argv, 2), 0);
	/* argv is copied: the caller's words may change afterwards. */
	memset(words, 0, sizeof(words));
	for (i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "g%zu", i);
		assert_int_equal(define(f, name, SECRET_ENV, "V", NULL), 0);
	}
	assert_int_equal(secret_store_count(f->st), 23);
	/* Definition order, not name order. */
	assert_string_equal(secret_name(secret_store_get(f->st, 0)), "b");
	assert_string_equal(secret_name(secret_store_get(f->st, 1)), "a");
	assert_string_equal(secret_name(secret_store_get(f->st, 22)), "g19");
	assert_null(secret_store_get(f->st, 23));
	assert_null(secret_store_find(f->st, "nope"));
	s = secret_store_find(f->st, "c");
	/* Pointers stay valid as the store grows. */
	assert_ptr_equal(s, secret_store_get(f->st, 2));
	assert_int_equal(secret_source(s), SECRET_EXEC);
	assert_string_equal(secret_origin(s), "/bin/x");
	assert_string_equal(
	    secret_origin(secret_store_find(f->st, "a")), "VAR");
	assert_null(secret_value(s, NULL));
	assert_int_equal(secret_used(s), 0);
	secret_mark_used(s);
	assert_int_equal(secret_used(s), 1);
	assert_int_equal(secret_used(secret_store_find(f->st, "a")), 0);
}

static void
test_load_continues(void **state)
{
	struct fixture *f = *state;
	const char *bad = mkfile_str(f, "bad", VALUE, 0644);
	const char *good = mkfile_str(f, "good", VALUE, 0600);

	unsetenv("PH_TEST_UNSET");
	assert_int_equal(define(f, "bad", SECRET_FILE, bad, NULL), 0);
	assert_int_equal(define(f, "good", SECRET_FILE, good, NULL), 0);
	assert_int_equal(
	    define(f, "env", SECRET_ENV, "PH_TEST_UNSET", NULL), 0);
	assert_int_equal(
	    define(f, "x", SECRET_EXEC, "/bin/echo", "x", NULL), 0);
	/* The first failure's code, and every failure reported in order. */
	assert_int_equal(load(f), PH_ERR_PERM);
	assert_int_equal(f->nmsgs, 2);
	assert_msg(f, 0, "secret bad: ", NULL);
	assert_msg(f, 1, "secret env: ", NULL);
	assert_value(f, "good", VALUE);
	assert_value(f, "x", "x");
	assert_unloaded(f, "bad");
}

static void
test_load_twice(void **state)
{
	struct fixture *f = *state;
	const char *p = mkfile_str(f, "twice", VALUE, 0600);

	assert_int_equal(define(f, "tok", SECRET_FILE, p, NULL), 0);
	assert_int_equal(load(f), 0);
	/* Loaded values are not read again. */
	assert_int_equal(unlink(p), 0);
	assert_int_equal(load(f), 0);
	assert_value(f, "tok", VALUE);
	assert_int_equal(f->nmsgs, 0);
}

static void
test_no_value_in_messages(void **state)
{
	struct fixture *f = *state;
	char *big;

	big = xmalloc(SECRET_MAX_LEN + 100);
	memset(big, 'x', SECRET_MAX_LEN + 100);
	memcpy(big, VALUE, strlen(VALUE));
	define(f, "mode", SECRET_FILE, mkfile_str(f, "m", VALUE, 0644), NULL);
	define(f, "nl", SECRET_FILE,
	    mkfile_str(f, "nl", VALUE "\n" VALUE, 0600), NULL);
	define(f, "big", SECRET_FILE,
	    mkfile(f, "big", big, SECRET_MAX_LEN + 100, 0600), NULL);
	free(big);
	assert_int_equal(setenv("PH_TEST_CTL", VALUE "\x01", 1), 0);
	define(f, "env", SECRET_ENV, "PH_TEST_CTL", NULL);
	define(
	    f, "pf", SECRET_EXEC, "/usr/bin/printf", VALUE "\\n" VALUE, NULL);
	define(f, "exit", SECRET_EXEC, "/bin/sh", "-c",
	    "echo " VALUE "; exit 2", NULL);
	define(f, "yes", SECRET_EXEC, "/usr/bin/yes", VALUE, NULL);
	assert_int_equal(secret_store_count(f->st), 7);
	/* collect() fails the test if any message holds VALUE. */
	assert_int_not_equal(load(f), 0);
	assert_int_equal(f->nmsgs, 7);
	unsetenv("PH_TEST_CTL");
}

static void
test_not_dumpable(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(setenv("PH_TEST_SECRET", VALUE, 1), 0);
	assert_int_equal(
	    define(f, "tok", SECRET_ENV, "PH_TEST_SECRET", NULL), 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
	unsetenv("PH_TEST_SECRET");
}

/*
 * Finds the /proc/self/smaps entry holding P: returns its size in bytes
 * and whether its VmFlags has "dd" (MADV_DONTDUMP).
 */
static size_t
smaps_entry(const void *p, int *dontdump)
{
	uintptr_t a = (uintptr_t)p, lo = 0, hi = 0, x, y;
	char line[512];
	int in = 0;
	FILE *fp;

	fp = fopen("/proc/self/smaps", "r");
	assert_non_null(fp);
	*dontdump = 0;
	while (fgets(line, sizeof(line), fp) != NULL) {
		/* Field lines ("Size:", "VmFlags:") never scan as a range. */
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &x, &y) == 2) {
			in = a >= x && a < y;
			if (in) {
				lo = x;
				hi = y;
			}
		} else if (in && strncmp(line, "VmFlags:", 8) == 0)
			*dontdump = strstr(line, " dd") != NULL;
	}
	fclose(fp);
	return hi - lo;
}

static void
test_value_pages(void **state)
{
	struct fixture *f = *state;
	const char *p = mkfile_str(f, "pages", VALUE, 0600);
	const uint8_t *v;
	int dd;

	assert_int_equal(define(f, "tok", SECRET_FILE, p, NULL), 0);
	assert_int_equal(load(f), 0);
	v = secret_value(secret_store_find(f->st, "tok"), NULL);
	/* Its own mapping, trimmed to one page, excluded from dumps. */
	assert_int_equal(smaps_entry(v, &dd), (size_t)sysconf(_SC_PAGESIZE));
	assert_int_equal(dd, 1);
}

static void
test_store_free(void **state)
{
	struct fixture *f = *state;
	const char *p = mkfile_str(f, "free", VALUE, 0600);

	/* Values and definitions freed without leaks (ASan checks). */
	secret_store_free(NULL);
	assert_int_equal(define(f, "a", SECRET_FILE, p, NULL), 0);
	assert_int_equal(
	    define(f, "b", SECRET_EXEC, "/bin/echo", "b", NULL), 0);
	assert_int_equal(define(f, "c", SECRET_FILE, "/nonexistent", NULL), 0);
	assert_int_not_equal(load(f), 0);
	secret_store_free(f->st);
	f->st = secret_store_new();
}

#define T(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_file_0600_ok),
	    T(test_file_0400_ok),
	    T(test_file_0640_refused),
	    T(test_file_0604_refused),
	    T(test_file_0200_refused),
	    T(test_file_other_owner_refused),
	    T(test_file_directory_refused),
	    T(test_file_missing),
	    T(test_file_symlink_followed),
	    T(test_one_newline_stripped),
	    T(test_crlf_stripped),
	    T(test_embedded_newline_refused),
	    T(test_control_chars_refused),
	    T(test_high_bytes_allowed),
	    T(test_empty_refused),
	    T(test_max_len),
	    T(test_env_ok),
	    T(test_env_unset),
	    T(test_env_empty),
	    T(test_exec_echo_ok),
	    T(test_exec_printf_ok),
	    T(test_exec_path_search),
	    T(test_exec_false),
	    T(test_exec_status_not_output),
	    T(test_exec_signal),
	    T(test_exec_empty_output),
	    T(test_exec_newline_only),
	    T(test_exec_timeout),
	    T(test_exec_timeout_partial_output),
	    T(test_exec_nonexistent),
	    T(test_exec_too_large),
	    T(test_exec_stdio),
	    T(test_exec_closes_stdout_and_runs),
	    T(test_exec_grandchild_holds_stdout),
	    T(test_exec_env_minimal),
	    T(test_exec_env_names_env_secret),
	    T(test_exec_env_invalid),
	    T(test_exec_cancel),
	    T(test_define),
	    T(test_accessors),
	    T(test_load_continues),
	    T(test_load_twice),
	    T(test_no_value_in_messages),
	    T(test_not_dumpable),
	    T(test_value_pages),
	    T(test_store_free),
	};

	return cmocka_run_group_tests_name(
	    "secret", tests, group_setup, group_teardown);
}
