/*
 * test_landlock.c: unit tests of netns/landlock.c.
 *
 * A Landlock domain is per process and cannot be left, so every case
 * runs in a forked child that applies a ruleset and then checks what it
 * may and may not do.  The first failed check ends the child with status
 * 1 and one line on stderr naming the check; the parent asserts status 0.
 * Files live in a mkdtemp directory under $TMPDIR (or /tmp):
 *
 *	w/		writable in LL_SANDBOX cases; f, sub1/f, sub2/
 *	o/		outside every rule; existing, target
 *	r/		readable in LL_PROXY cases; file
 *
 * On a kernel without Landlock every case is skipped with the reason;
 * cases that need a newer ABI than the kernel's say which.
 */
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <cmocka.h>

#define LL_INTERNAL
#include "netns/landlock.h"
#include "tests/unit/fixture.h"

struct fixture {
	char dir[PATH_MAX];
	int abi;
	int lfd; /* the parent's abstract Unix listener, or -1 */
	struct sockaddr_un sun;
	socklen_t sunlen;
};

/* TOP/NAME of the scratch tree (fixture.h). */
#define P(name) fixture_path(name)

/* 0 when CALL succeeded, else its errno. */
#define ERR(call) ((call) == -1 ? errno : 0)
/* In a child: EXPR, an errno or 0, must be WANT, or the child ends. */
#define EXPECT(expr, want) expect(__LINE__, #expr, (expr), (want))

static void
expect(int line, const char *what, int got, int want)
{
	if (got == want)
		return;
	fprintf(stderr, "child, line %d: %s: got %s, want %s\n", line, what,
	    got != 0 ? strerror(got) : "success",
	    want != 0 ? strerror(want) : "success");
	_exit(1);
}

/* In a child: ends it unless the report REP contains WANT. */
static void
expect_report(int line, const char *rep, const char *want)
{
	if (strstr(rep, want) != NULL)
		return;
	fprintf(stderr, "child, line %d: report \"%s\" lacks \"%s\"\n", line,
	    rep, want);
	_exit(1);
}

/* Opens PATH with FLAGS and closes it.  Returns 0 or the errno. */
static int
try_open(const char *path, int flags)
{
	int fd;

	if ((fd = open(path, flags | O_CLOEXEC, 0600)) == -1)
		return errno;
	close(fd);
	return 0;
}

/* Opens PATH with FLAGS and writes S.  Returns 0 or the errno. */
static int
try_write(const char *path, int flags, const char *s)
{
	ssize_t n;
	int fd, e = 0;

	if ((fd = open(path, flags | O_CLOEXEC, 0600)) == -1)
		return errno;
	if ((n = write(fd, s, strlen(s))) == -1)
		e = errno;
	else if ((size_t)n != strlen(s))
		e = EIO;
	close(fd);
	return e;
}

/* Returns 0 when PATH holds exactly S, else the errno or EBADMSG. */
static int
try_read(const char *path, const char *s)
{
	char buf[256];
	ssize_t n;
	int fd, e = 0;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return errno;
	if ((n = read(fd, buf, sizeof(buf) - 1)) == -1)
		e = errno;
	else {
		buf[n] = '\0';
		e = strcmp(buf, s) == 0 ? 0 : EBADMSG;
	}
	close(fd);
	return e;
}

/* Connects to the parent's abstract listener.  Returns 0 or the errno. */
static int
try_connect(const struct fixture *f)
{
	int fd, e = 0;

	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return errno;
	if (connect(fd, (const struct sockaddr *)&f->sun, f->sunlen) == -1)
		e = errno;
	close(fd);
	return e;
}

/* In a child: applies R, ending the child when that fails. */
static void
apply(struct ll_rules *r, char *report, size_t len)
{
	if (r == NULL) {
		fprintf(stderr, "child: ll_new: %s\n", strerror(errno));
		_exit(1);
	}
	if (ll_apply(r, report, len) != 0) {
		fprintf(stderr, "child: ll_apply: %s\n", report);
		_exit(1);
	}
	ll_free(r);
}

/* Runs FN(F, ARG) in a child and asserts that it ended with status 0. */
static void
run(void (*fn)(struct fixture *, int), struct fixture *f, int arg)
{
	pid_t pid;
	int st;

	fflush(NULL);
	assert_true((pid = fork()) != -1);
	if (pid == 0) {
		fn(f, arg);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("the child failed (wait status 0x%x), see above", st);
}

/* Skips the calling test, saying why, unless the kernel has ABI MIN. */
static void
need_abi(const struct fixture *f, int min, const char *test)
{
	if (f->abi >= min)
		return;
	if (f->abi == 0)
		fprintf(stderr,
		    "%s: skipped: this kernel has no Landlock, or has it "
		    "disabled\n",
		    test);
	else
		fprintf(stderr,
		    "%s: skipped: needs Landlock ABI %d, the kernel has %d\n",
		    test, min, f->abi);
	skip();
}

static void
make_file(const char *path, const char *s)
{
	assert_int_equal(try_write(path, O_WRONLY | O_CREAT | O_TRUNC, s), 0);
}

static int
setup(void **state)
{
	struct fixture *f;
	const char *dirs[] = {"w", "w/sub1", "w/sub2", "o", "r"};
	size_t i;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return -1;
	f->lfd = -1;
	f->abi = ll_abi();
	if (fixture_tmpdir(f->dir, sizeof(f->dir), "test_landlock") != 0)
		return -1;
	fixture_tree_top(f->dir);
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (mkdir(P(dirs[i]), 0700) == -1)
			return -1;
	make_file(P("w/f"), "f\n");
	make_file(P("w/sub1/f"), "f\n");
	make_file(P("o/existing"), "other\n");
	make_file(P("o/target"), "");
	make_file(P("r/file"), "hello\n");
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	if (f->lfd != -1)
		close(f->lfd);
	fixture_rmtree(f->dir);
	free(f);
	return 0;
}

/* The parent listens on an abstract Unix socket, outside any domain. */
static void
listen_abstract(struct fixture *f)
{
	int n;

	memset(&f->sun, 0, sizeof(f->sun));
	f->sun.sun_family = AF_UNIX;
	n = snprintf(f->sun.sun_path + 1, sizeof(f->sun.sun_path) - 1,
	    "pinhole-test-landlock-%ld", (long)getpid());
	f->sunlen =
	    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(f->lfd != -1);
	assert_int_equal(
	    bind(f->lfd, (const struct sockaddr *)&f->sun, f->sunlen), 0);
	assert_int_equal(listen(f->lfd, 8), 0);
}

/* LL_SANDBOX with w/ writable, and the ABI of the kernel unless ABI. */
static struct ll_rules *
sandbox_rules(int abi)
{
	struct ll_rules *r;

	r = abi > 0 ? ll_new_abi(LL_SANDBOX, abi) : ll_new(LL_SANDBOX);
	if (r != NULL && ll_allow(r, P("w"), LL_WRITE) != 0) {
		fprintf(stderr, "child: ll_allow: %s\n", strerror(errno));
		_exit(1);
	}
	return r;
}

static void
child_report(struct fixture *f, int arg)
{
	char report[256], want[32];

	(void)arg;
	apply(sandbox_rules(0), report, sizeof(report));
	snprintf(want, sizeof(want), "landlock: ABI %d, ", f->abi);
	expect_report(__LINE__, report, want);
	expect_report(__LINE__, report, "writes limited to 1 path (0 skipped)");
	if (f->abi >= 6)
		expect_report(
		    __LINE__, report, "scoped: abstract-unix-socket, signal");
}

static void
test_report(void **state)
{
	struct fixture *f = *state;

	need_abi(f, 1, __func__);
	run(child_report, f, 0);
}

static void
child_sandbox_writes(struct fixture *f, int arg)
{
	char report[256];

	(void)f;
	(void)arg;
	apply(sandbox_rules(0), report, sizeof(report));
	/* Beneath w/: everything. */
	EXPECT(try_write(P("w/new"), O_WRONLY | O_CREAT, "new\n"), 0);
	EXPECT(try_write(P("w/f"), O_WRONLY | O_TRUNC, "g\n"), 0);
	EXPECT(ERR(mkdir(P("w/d"), 0700)), 0);
	EXPECT(ERR(rmdir(P("w/d"))), 0);
	EXPECT(ERR(symlink("f", P("w/sym"))), 0);
	EXPECT(ERR(unlink(P("w/new"))), 0);
	/* Elsewhere: no writing of any kind. */
	EXPECT(try_open(P("o/new"), O_WRONLY | O_CREAT), EACCES);
	EXPECT(try_open(P("o/existing"), O_WRONLY), EACCES);
	EXPECT(try_open(P("o/existing"), O_RDWR), EACCES);
	EXPECT(ERR(mkdir(P("o/d"), 0700)), EACCES);
	EXPECT(ERR(mkfifo(P("o/fifo"), 0600)), EACCES);
	EXPECT(ERR(symlink("existing", P("o/sym"))), EACCES);
	EXPECT(ERR(unlink(P("o/existing"))), EACCES);
	/* But reading goes on everywhere. */
	EXPECT(try_read(P("o/existing"), "other\n"), 0);
	EXPECT(try_open("/", O_RDONLY | O_DIRECTORY), 0);
}

static void
test_sandbox_writes(void **state)
{
	struct fixture *f = *state;

	need_abi(f, 1, __func__);
	run(child_sandbox_writes, f, 0);
	fixture_tree_top(f->dir);
	assert_int_equal(try_read(P("o/existing"), "other\n"), 0);
	assert_int_equal(try_read(P("w/f"), "g\n"), 0);
}

static void
child_sandbox_truncate(struct fixture *f, int arg)
{
	char report[256];

	(void)f;
	(void)arg;
	apply(sandbox_rules(0), report, sizeof(report));
	EXPECT(ERR(truncate(P("o/existing"), 0)), EACCES);
	EXPECT(ERR(truncate(P("w/f"), 0)), 0);
}

static void
test_sandbox_truncate(void **state)
{
	struct fixture *f = *state;

	need_abi(f, 3, __func__);
	run(child_sandbox_truncate, f, 0);
	assert_int_equal(try_read(P("o/existing"), "other\n"), 0);
}

/* Renaming and linking out of w/, or into it, is refused (REFER). */
static void
child_sandbox_refer(struct fixture *f, int arg)
{
	char report[256];

	(void)f;
	(void)arg;
	apply(sandbox_rules(0), report, sizeof(report));
	EXPECT(ERR(rename(P("w/f"), P("o/f"))), EACCES);
	EXPECT(ERR(link(P("w/f"), P("o/f"))), EACCES);
	EXPECT(ERR(rename(P("o/existing"), P("w/existing"))), EACCES);
	/*
	 * w/ may make files and link needs no right on the source's
	 * directory, so what is missing is REFER on o/: EXDEV, not EACCES.
	 */
	EXPECT(ERR(link(P("o/existing"), P("w/existing"))), EXDEV);
	/* Between two directories beneath w/ it works. */
	EXPECT(ERR(rename(P("w/sub1/f"), P("w/sub2/f"))), 0);
	EXPECT(ERR(link(P("w/sub2/f"), P("w/sub1/g"))), 0);
	EXPECT(try_read(P("w/f"), "f\n"), 0);
}

static void
test_sandbox_refer(void **state)
{
	struct fixture *f = *state;

	need_abi(f, 2, __func__);
	run(child_sandbox_refer, f, 0);
	assert_int_equal(access(P("o/f"), F_OK), -1);
	assert_int_equal(access(P("w/existing"), F_OK), -1);
}

/* ARG: 0 no device rule, 1 /dev/null allowed, 2 /dev allowed. */
static void
child_sandbox_dev(struct fixture *f, int arg)
{
	struct ll_rules *r = sandbox_rules(0);
	struct termios t;
	char report[256];
	int fd;

	if (r == NULL ||
	    (arg > 0 && ll_allow(r, arg == 1 ? "/dev/null" : "/dev", LL_DEV)))
		_exit(2);
	apply(r, report, sizeof(report));
	EXPECT(try_open("/dev/null", O_WRONLY), arg > 0 ? 0 : EACCES);
	EXPECT(try_open("/dev/zero", O_WRONLY), arg > 1 ? 0 : EACCES);
	/* Reading is not restricted, ioctl on devices is (ABI 5). */
	if ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
		_exit(3);
	if (f->abi >= 5)
		EXPECT(ERR(ioctl(fd, TCGETS, &t)), arg > 0 ? ENOTTY : EACCES);
	close(fd);
}

static void
test_sandbox_dev(void **state)
{
	struct fixture *f = *state;

	need_abi(f, 1, __func__);
	run(child_sandbox_dev, f, 0);
	run(child_sandbox_dev, f, 1);
	run(child_sandbox_dev, f, 2);
}

/* ARG: the mode.  Only LL_SANDBOX scopes abstract sockets and signals. */
static void
child_scopes(struct fixture *f, int arg)
{
	struct ll_rules *r = ll_new((enum ll_mode)arg);
	char report[256];
	int want = arg == LL_SANDBOX ? EPERM : 0;
	pid_t pid;

	EXPECT(try_connect(f), 0);
	EXPECT(ERR(kill(getppid(), 0)), 0);
	apply(r, report, sizeof(report));
	EXPECT(try_connect(f), want);
	EXPECT(ERR(kill(getppid(), 0)), want);
	/* Within the domain signals still go. */
	EXPECT(ERR(kill(getpid(), 0)), 0);
	if ((pid = fork()) == 0) {
		pause();
		_exit(0);
	}
	EXPECT(pid == -1 ? errno : 0, 0);
	EXPECT(ERR(kill(pid, SIGKILL)), 0);
	EXPECT(ERR(waitpid(pid, NULL, 0)), 0);
}

static void
test_scopes(void **state)
{
	struct fixture *f = *state;

	need_abi(f, 6, __func__);
	listen_abstract(f);
	run(child_scopes, f, LL_SANDBOX);
	run(child_scopes, f, LL_PROXY);
}

/*
 * LL_SCOPE (the sandbox's PID 1): the parent's abstract socket is out of
 * reach, files are not restricted, and an abstract socket made in a
 * nested domain (the command's) is reached, as PID 1's Unix socket
 * supervisor must reach the command's.
 */
static void
child_scope_pid1(struct fixture *f, int arg)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	char report[256], c;
	socklen_t len;
	int up[2], down[2], fd, n, st = 0;
	pid_t pid;

	(void)arg;
	apply(ll_new(LL_SCOPE), report, sizeof(report));
	expect_report(__LINE__, report, "PID 1 scoped: abstract-unix-socket");
	EXPECT(try_connect(f), EPERM);
	EXPECT(try_write(P("o/scope-new"), O_WRONLY | O_CREAT, "x\n"), 0);
	n = snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1,
	    "pinhole-test-landlock-nested-%ld", (long)getpid());
	len =
	    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	EXPECT(ERR(pipe(up)), 0);
	EXPECT(ERR(pipe(down)), 0);
	if ((pid = fork()) == 0) {
		/* The command: its own domain, nested, and a listener. */
		close(up[0]);
		close(down[1]);
		apply(sandbox_rules(0), report, sizeof(report));
		/* PID 1's layer leaves renames to this one (no EXDEV). */
		if (f->abi >= 2 &&
		    (rename(P("w/sub1/f"), P("w/sub2/f")) != 0 ||
		        rename(P("w/sub2/f"), P("w/sub1/f")) != 0)) {
			fprintf(stderr, "child: rename: %s\n", strerror(errno));
			_exit(1);
		}
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd == -1 || bind(fd, (struct sockaddr *)&sun, len) != 0 ||
		    listen(fd, 1) != 0 || write(up[1], "r", 1) != 1)
			_exit(1);
		/* Until the parent is done (or gone: end of file). */
		(void)!read(down[0], &c, 1);
		_exit(0);
	}
	EXPECT(pid == -1 ? errno : 0, 0);
	close(up[1]);
	close(down[0]);
	EXPECT(read(up[0], &c, 1) == 1 ? 0 : EIO, 0);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	EXPECT(ERR(connect(fd, (struct sockaddr *)&sun, len)), 0);
	close(fd);
	close(down[1]);
	close(up[0]);
	EXPECT(ERR(waitpid(pid, &st, 0)), 0);
	EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : EIO, 0);
}

static void
test_scope_pid1(void **state)
{
	struct fixture *f = *state;

	need_abi(f, 6, __func__);
	listen_abstract(f);
	run(child_scope_pid1, f, 0);
}

static void
child_proxy(struct fixture *f, int arg)
{
	struct ll_rules *r = ll_new(LL_PROXY);
	char report[256];

	(void)arg;
	if (r == NULL || ll_allow(r, P("r"), LL_READ) != 0 ||
	    ll_allow(r, P("o/target"), LL_WRITE) != 0)
		_exit(2);
	apply(r, report, sizeof(report));
	expect_report(__LINE__, report, "file access limited to 2 paths");
	EXPECT(try_read(P("r/file"), "hello\n"), 0);
	EXPECT(try_open(P("r"), O_RDONLY | O_DIRECTORY), 0);
	EXPECT(try_open(P("r/file"), O_WRONLY), EACCES);
	EXPECT(try_open(P("r/new"), O_WRONLY | O_CREAT), EACCES);
	/* Outside the rules, even reading is refused. */
	EXPECT(try_open(P("o/existing"), O_RDONLY), EACCES);
	EXPECT(try_open("/", O_RDONLY | O_DIRECTORY), EACCES);
	EXPECT(try_open(P("o/new"), O_WRONLY | O_CREAT), EACCES);
	/* The one writable file can be written, not read. */
	if (f->abi >= 3)
		EXPECT(try_open(P("o/target"), O_WRONLY | O_TRUNC), 0);
	EXPECT(try_write(P("o/target"), O_WRONLY | O_APPEND, "more\n"), 0);
	EXPECT(try_open(P("o/target"), O_RDONLY), EACCES);
}

static void
test_proxy(void **state)
{
	struct fixture *f = *state;

	need_abi(f, 1, __func__);
	run(child_proxy, f, 0);
	assert_int_equal(try_read(P("o/target"), "more\n"), 0);
	assert_int_equal(access(P("o/new"), F_OK), -1);
}

/*
 * Every LL_* bit on a file, a directory and a device node: the rights
 * that only directories take are dropped, or the kernel says EINVAL.
 */
static void
child_all_bits(struct fixture *f, int arg)
{
	struct ll_rules *r = ll_new((enum ll_mode)arg);
	const char *paths[] = {P("o/existing"), P("r"), "/dev/null"};
	unsigned all = LL_READ | LL_WRITE | LL_EXEC | LL_DEV;
	char report[256];
	size_t i;

	(void)f;
	for (i = 0; r != NULL && i < 3; i++)
		if (ll_allow(r, paths[i], all) != 0)
			_exit(2);
	apply(r, report, sizeof(report));
	expect_report(__LINE__, report, "limited to 3 paths (0 skipped)");
	EXPECT(try_write(paths[0], O_RDWR | O_APPEND, "x"), 0);
	EXPECT(try_open(P("r/new"), O_WRONLY | O_CREAT), 0);
}

static void
test_all_bits(void **state)
{
	struct fixture *f = *state;

	need_abi(f, 1, __func__);
	run(child_all_bits, f, LL_SANDBOX);
	run(child_all_bits, f, LL_PROXY);
}

static void
child_missing(struct fixture *f, int arg)
{
	struct ll_rules *r = sandbox_rules(0);
	char report[256];

	(void)f;
	(void)arg;
	if (ll_allow(r, "/nonexistent-pinhole/x", LL_WRITE) != 0 ||
	    ll_allow(r, P("o/existing/x"), LL_WRITE) != 0)
		_exit(2);
	apply(r, report, sizeof(report));
	expect_report(__LINE__, report, "limited to 1 path (2 skipped)");
	EXPECT(try_open(P("w/new"), O_WRONLY | O_CREAT), 0);
	EXPECT(try_open(P("o/new"), O_WRONLY | O_CREAT), EACCES);
}

static void
test_missing_skipped(void **state)
{
	struct fixture *f = *state;

	need_abi(f, 1, __func__);
	run(child_missing, f, 0);
}

/* A path that cannot be opened fails ll_apply, which restricts nothing. */
static void
child_unreachable(struct fixture *f, int arg)
{
	struct ll_rules *r = sandbox_rules(0);
	char report[256];

	(void)f;
	(void)arg;
	if (r == NULL || ll_allow(r, P("o/locked/in"), LL_WRITE) != 0)
		_exit(2);
	EXPECT(ll_apply(r, report, sizeof(report)) == -1 ? 0 : EINVAL, 0);
	expect_report(__LINE__, report, "o/locked/in: open: ");
	expect_report(__LINE__, report, strerror(EACCES));
	ll_free(r);
	EXPECT(try_open(P("o/new"), O_WRONLY | O_CREAT), 0);
}

static void
test_unreachable_fails(void **state)
{
	struct fixture *f = *state;

	need_abi(f, 1, __func__);
	if (geteuid() == 0) {
		fprintf(stderr,
		    "%s: skipped: root searches any directory; the uid "
		    "65534 run covers it\n",
		    __func__);
		skip();
	}
	assert_int_equal(mkdir(P("o/locked"), 0700), 0);
	assert_int_equal(mkdir(P("o/locked/in"), 0700), 0);
	assert_int_equal(chmod(P("o/locked"), 0), 0);
	run(child_unreachable, f, 0);
	assert_int_equal(chmod(P("o/locked"), 0700), 0);
}

/*
 * ARG: an ABI older than the kernel's, or the same.  The rights and
 * scopes that ABI lacks are left out (and the kernel takes the ruleset),
 * the others are enforced.
 */
static void
child_older_abi(struct fixture *f, int abi)
{
	char report[256], want[32];

	(void)f;
	apply(sandbox_rules(abi), report, sizeof(report));
	snprintf(want, sizeof(want), "landlock: ABI %d, ", abi);
	expect_report(__LINE__, report, want);
	EXPECT(try_open(P("w/new"), O_WRONLY | O_CREAT), 0);
	EXPECT(try_open(P("o/new"), O_WRONLY | O_CREAT), EACCES);
	EXPECT(ERR(truncate(P("o/existing"), 6)), abi >= 3 ? EACCES : 0);
	EXPECT(ERR(kill(getppid(), 0)), abi >= 6 ? EPERM : 0);
	/* ABI 1 has no REFER: no rename across directories at all. */
	EXPECT(ERR(rename(P("w/sub1/f"), P("w/sub2/f"))), abi >= 2 ? 0 : EXDEV);
}

static void
child_older_abi_proxy(struct fixture *f, int abi)
{
	struct ll_rules *r = ll_new_abi(LL_PROXY, abi);
	char report[256];

	(void)f;
	if (r == NULL || ll_allow(r, P("r"), LL_READ | LL_WRITE) != 0)
		_exit(2);
	apply(r, report, sizeof(report));
	EXPECT(try_read(P("r/file"), "hello\n"), 0);
	EXPECT(try_open(P("r/new"), O_WRONLY | O_CREAT), 0);
	EXPECT(try_open(P("o/existing"), O_RDONLY), EACCES);
}

static void
test_older_abis(void **state)
{
	struct fixture *f = *state;
	int abi;

	need_abi(f, 1, __func__);
	for (abi = 1; abi <= f->abi; abi++) {
		run(child_older_abi, f, abi);
		assert_int_equal(
		    rename(P("w/sub2/f"), P("w/sub1/f")), abi >= 2 ? 0 : -1);
		assert_int_equal(unlink(P("w/new")), 0);
		run(child_older_abi_proxy, f, abi);
		assert_int_equal(unlink(P("r/new")), 0);
	}
}

/* Without Landlock, ll_apply succeeds, says so, and restricts nothing. */
static void
child_unavailable(struct fixture *f, int arg)
{
	char report[256];
	struct ll_rules *r = ll_new_abi(LL_SANDBOX, 0);

	(void)f;
	(void)arg;
	if (r == NULL || ll_allow(r, P("w"), LL_WRITE) != 0)
		_exit(2);
	apply(r, report, sizeof(report));
	expect_report(__LINE__, report, "landlock: not available (");
	expect_report(__LINE__, report, "the mount view still applies");
	EXPECT(try_open(P("o/new"), O_WRONLY | O_CREAT), 0);
}

static void
test_unavailable(void **state)
{
	struct fixture *f = *state;

	run(child_unavailable, f, 0);
	assert_int_equal(unlink(P("o/new")), 0);
}

/* A short report buffer is cut, and none at all is fine. */
static void
child_short_report(struct fixture *f, int arg)
{
	struct ll_rules *r = sandbox_rules(0);
	char report[8];

	(void)f;
	(void)arg;
	memset(report, 'x', sizeof(report));
	if (r == NULL || ll_apply(r, report, sizeof(report)) != 0)
		_exit(2);
	EXPECT(strlen(report) == sizeof(report) - 1 ? 0 : EINVAL, 0);
	/* A second, stacked domain, reported nowhere. */
	if (ll_apply(r, NULL, 0) != 0)
		_exit(3);
	ll_free(r);
}

static void
test_short_report(void **state)
{
	struct fixture *f = *state;

	need_abi(f, 1, __func__);
	run(child_short_report, f, 1);
}

static void
test_allow_invalid(void **state)
{
	struct ll_rules *r = ll_new(LL_SANDBOX);

	(void)state;
	assert_non_null(r);
	errno = 0;
	assert_int_equal(ll_allow(r, "/", 0), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(ll_allow(r, "/", LL_DEV << 1), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(ll_allow(r, "/", LL_READ), 0);
	ll_free(r);
	ll_free(NULL);
}

/* ll_abi() agrees with the kernel's own answer. */
static void
test_abi(void **state)
{
	struct fixture *f = *state;
	FILE *fp;
	char lsm[512] = "";

	if ((fp = fopen("/sys/kernel/security/lsm", "r")) != NULL) {
		if (fgets(lsm, sizeof(lsm), fp) == NULL)
			lsm[0] = '\0';
		fclose(fp);
	}
	need_abi(f, 1, __func__);
	if (lsm[0] != '\0' && strstr(lsm, "landlock") == NULL)
		fail_msg("ABI %d but landlock is not in lsm: %s", f->abi, lsm);
}

#define T(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_abi),
	    T(test_report),
	    T(test_sandbox_writes),
	    T(test_sandbox_truncate),
	    T(test_sandbox_refer),
	    T(test_sandbox_dev),
	    T(test_scopes),
	    T(test_scope_pid1),
	    T(test_proxy),
	    T(test_all_bits),
	    T(test_missing_skipped),
	    T(test_unreachable_fails),
	    T(test_older_abis),
	    T(test_unavailable),
	    T(test_short_report),
	    T(test_allow_invalid),
	};

	return cmocka_run_group_tests_name("landlock", tests, NULL, NULL);
}
