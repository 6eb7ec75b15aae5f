/*
 * test_sandbox.c: unit tests of netns/sandbox.c, the launcher of
 * `pinhole run`.
 *
 * Each case starts a real sandbox (user, mount, PID, network, IPC and
 * UTS namespaces, Landlock, seccomp) whose start directory is a mkdtemp
 * directory under /tmp (DIR), and runs a small shell command in it.
 * What the command finds out it writes to files in DIR, which the test
 * reads once the sandbox has ended.  The end is waited for on a pidfd of
 * the sandbox's PID 1, with a time limit, and then sbx_reap() must
 * report it: nothing sleeps.  sbx_shed(), which cannot be undone, and
 * sbx_free() of a running sandbox, which could block, run in a forked
 * child of the test.
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "netns/caps.h"
#include "netns/gitguard.h"
#include "netns/landlock.h"
#include "netns/mount.h"
#include "netns/net.h"
#define SBX_INTERNAL
#include "netns/sandbox.h"
#include "proxy/dnsstub.h"
#include "tests/unit/fixture.h"

#define LIMIT_MS 10000 /* how long a sandbox may take to end */

struct fixture {
	char dir[PATH_MAX]; /* resolved */
	struct mnt_plan *plan;
	char *envp[3];
	struct sbx_config c;
};

static int
setup(void **state)
{
	struct fixture *f;
	char tmpl[] = "/tmp/test_sandbox.XXXXXX", *real;

	if ((f = calloc(1, sizeof(*f))) == NULL || mkdtemp(tmpl) == NULL ||
	    (real = realpath(tmpl, NULL)) == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s", real);
	free(real);
	if ((f->plan = mnt_plan_new(f->dir, NULL, 0)) == NULL)
		return -1;
	f->envp[0] = "PATH=/usr/bin:/bin";
	f->envp[1] = NULL;
	f->c.plan = f->plan;
	f->c.envp = f->envp;
	sigemptyset(&f->c.mask);
	/* Not to be seen inside: the command gets envp, not environ. */
	setenv("PH_TEST_SECRET", "leaked", 1);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	fixture_rmtree(f->dir);
	mnt_plan_free(f->plan);
	unsetenv("PH_TEST_SECRET");
	free(f);
	return 0;
}

/* DIR/NAME, in a static buffer of two. */
static const char *
in_dir(const struct fixture *f, const char *name)
{
	static char buf[2][PATH_MAX + 64];
	static unsigned next;
	char *b = buf[next++ % 2];

	snprintf(b, sizeof(buf[0]), "%s/%s", f->dir, name);
	return b;
}

/* The contents of DIR/NAME, NUL-terminated, in BUF; "" if missing. */
static const char *
read_back(const struct fixture *f, const char *name, char *buf, size_t len)
{
	ssize_t n = 0;
	int fd;

	buf[0] = '\0';
	if ((fd = open(in_dir(f, name), O_RDONLY | O_CLOEXEC)) >= 0) {
		n = read(fd, buf, len - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* Starts ARGV in the sandbox; fails the test if it does not start. */
static struct sbx *
start(struct fixture *f, char *const *argv)
{
	char err[512] = "";
	struct sbx *s;

	f->c.argv = argv;
	if ((s = sbx_start(&f->c, err, sizeof(err))) == NULL)
		fail_msg("sbx_start: %s", err);
	return s;
}

static void
wait_exec_ok(struct sbx *s)
{
	char err[512] = "";

	if (sbx_wait_exec(s, err, sizeof(err)) != 0)
		fail_msg("sbx_wait_exec: %s", err);
}

/* Waits (LIMIT_MS at most) for the sandbox to end; returns its status. */
static int
wait_end(struct sbx *s)
{
	struct pollfd pfd;
	int status = -1, pidfd;

	pidfd = (int)syscall(SYS_pidfd_open, sbx_pid(s), 0);
	assert_true(pidfd >= 0);
	pfd.fd = pidfd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, LIMIT_MS), 1);
	close(pidfd);
	assert_int_equal(sbx_reap(s, &status), 1);
	return status;
}

/* FD listens on ADDR port 3128 and is close-on-exec. */
static void
assert_listener(int fd, int family, const char *addr)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char buf[INET6_ADDRSTRLEN] = "";
	int on = 0;
	socklen_t olen = sizeof(on);

	assert_true(fd >= 0);
	assert_true((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
	assert_int_equal(
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &olen), 0);
	assert_int_equal(on, 1);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
	assert_int_equal(ss.ss_family, family);
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf));
		assert_int_equal(ntohs(sin->sin_port), NET_PROXY_PORT);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &sin6->sin6_addr, buf, sizeof(buf));
		assert_int_equal(ntohs(sin6->sin6_port), NET_PROXY_PORT);
	}
	assert_string_equal(buf, addr);
}

/* The engine's end of the supervisor's notes: AF_UNIX, SOCK_SEQPACKET. */
static int
is_notes(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int type = 0;
	socklen_t tl = sizeof(type);

	return getsockname(fd, (struct sockaddr *)&ss, &len) == 0 &&
	    ss.ss_family == AF_UNIX &&
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 &&
	    type == SOCK_SEQPACKET;
}

static void
test_exit_status(void **state)
{
	struct fixture *f = *state;
	char *argv[] = {"/bin/sh", "-c", "exit 4", NULL};
	struct sbx *s = start(f, argv);
	int status = -1;

	assert_true(sbx_pid(s) > 0);
	assert_true(sbx_nlisteners(s) >= 1);
	assert_true(sbx_nlisteners(s) <= NET_FDS_MAX + 1);
	assert_listener(sbx_listener(s, 0), AF_INET, "127.0.0.1");
	/* [::1]:3128 when the kernel has IPv6; then the DNS stub's */
	if (!dnsstub_is_stub_fd(sbx_listener(s, 1)))
		assert_listener(sbx_listener(s, 1), AF_INET6, "::1");
	/* The last: the supervisor's notes (sockguard.h) */
	assert_true(dnsstub_is_stub_fd(sbx_listener(s, sbx_nlisteners(s) - 2)));
	assert_true(is_notes(sbx_listener(s, sbx_nlisteners(s) - 1)));
	assert_int_equal(sbx_listener(s, sbx_nlisteners(s)), -1);
	wait_exec_ok(s);
	assert_int_equal(wait_end(s), 4);
	/* Reaped once: asked again, the same answer. */
	assert_int_equal(sbx_reap(s, &status), 1);
	sbx_free(s);
}

/*
 * Starts ARGV with descriptor FD as its descriptor TARGET (0, 1): only
 * stdin, stdout and stderr go into the sandbox, and they are copied at
 * the start, so ours are put back right after.
 */
static struct sbx *
start_with(struct fixture *f, char *const *argv, int fd, int target)
{
	struct sbx *s;
	int saved;

	fflush(NULL);
	assert_true((saved = fcntl(target, F_DUPFD_CLOEXEC, 10)) >= 0);
	assert_int_equal(dup2(fd, target), target);
	s = start(f, argv);
	assert_int_equal(dup2(saved, target), target);
	close(saved);
	return s;
}

/* While the command runs, sbx_reap says so without waiting. */
static void
test_reap_while_running(void **state)
{
	struct fixture *f = *state;
	char *argv[] = {"/bin/sh", "-c", "read x", NULL};
	struct sbx *s;
	int status = -1, p[2];

	/* The command reads its stdin, our pipe: it ends when we write. */
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	s = start_with(f, argv, p[0], 0);
	close(p[0]);
	wait_exec_ok(s);
	assert_int_equal(sbx_reap(s, &status), 0);
	assert_int_equal(status, -1);
	assert_int_equal(write(p[1], "\n", 1), 1);
	close(p[1]);
	assert_int_equal(wait_end(s), 0);
	sbx_free(s);
}

static void
test_not_found(void **state)
{
	struct fixture *f = *state;
	char *abs[] = {"/nonexistent/pinhole-cmd", NULL};
	char *rel[] = {"pinhole-no-such-command", NULL};
	struct sbx *s;

	s = start(f, abs);
	wait_exec_ok(s);
	assert_int_equal(wait_end(s), 127);
	sbx_free(s);
	/* Searched for in the PATH of envp: not there either. */
	s = start(f, rel);
	wait_exec_ok(s);
	assert_int_equal(wait_end(s), 127);
	sbx_free(s);
}

static void
test_not_executable(void **state)
{
	struct fixture *f = *state;
	char *argv[] = {"./data", NULL};
	struct sbx *s;
	int fd;

	fd = open(in_dir(f, "data"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	s = start(f, argv);
	wait_exec_ok(s);
	assert_int_equal(wait_end(s), 126);
	sbx_free(s);
}

/* Setting up fails: the reason names the directory, the status is 125. */
static void
test_setup_fails(void **state)
{
	struct fixture *f = *state;
	char *argv[] = {"/bin/sh", "-c", "exit 0", NULL};
	char err[512] = "";
	struct sbx *s;

	f->c.chdir = "/nonexistent-dir";
	s = start(f, argv);
	assert_int_equal(sbx_wait_exec(s, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/nonexistent-dir"));
	assert_int_equal(wait_end(s), 125);
	sbx_free(s);
}

/* A --chdir that exists: the command starts there. */
static void
test_chdir(void **state)
{
	struct fixture *f = *state;
	char *argv[] = {"/bin/sh", "-c", "[ \"$(pwd)\" = /usr ]", NULL};
	struct sbx *s;

	f->c.chdir = "/usr";
	s = start(f, argv);
	wait_exec_ok(s);
	assert_int_equal(wait_end(s), 0);
	sbx_free(s);
}

/* A connection from inside reaches the listener the parent holds. */
static void
connect_from_inside(struct fixture *f, const char *addr, int listener)
{
	char script[128], buf[16] = "";
	char *argv[] = {"/bin/bash", "-c", script, NULL};
	struct pollfd pfd;
	struct sbx *s;
	ssize_t n;
	int afd;

	snprintf(script, sizeof(script), "echo hi >/dev/tcp/%s/%d", addr,
	    NET_PROXY_PORT);
	s = start(f, argv);
	wait_exec_ok(s);
	if (listener >= sbx_nlisteners(s)) {
		sbx_free(s);
		print_message("skipped: no IPv6 listener\n");
		skip();
	}
	pfd.fd = sbx_listener(s, listener);
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, LIMIT_MS), 1);
	afd = accept4(sbx_listener(s, listener), NULL, NULL, SOCK_CLOEXEC);
	assert_true(afd >= 0);
	n = read(afd, buf, sizeof(buf) - 1);
	assert_int_equal(n, 3);
	assert_memory_equal(buf, "hi\n", 3);
	close(afd);
	assert_int_equal(wait_end(s), 0);
	sbx_free(s);
	(void)f;
}

static void
test_connect_inside(void **state)
{
	if (access("/bin/bash", X_OK) != 0) {
		print_message("skipped: no /bin/bash for /dev/tcp\n");
		skip();
	}
	connect_from_inside(*state, "127.0.0.1", 0);
}

static void
test_connect_inside_v6(void **state)
{
	if (access("/bin/bash", X_OK) != 0) {
		print_message("skipped: no /bin/bash for /dev/tcp\n");
		skip();
	}
	connect_from_inside(*state, "::1", 1);
}

/*
 * What the command sees: only envp, the start directory, the caller's
 * uid, PID 2 under PID 1, only lo, and a /tmp of its own.
 */
static void
test_inside(void **state)
{
	struct fixture *f = *state;
	char *argv[] = {"/bin/sh", "-c",
	    "env >env.out; pwd >pwd.out; id -u >uid.out; echo $$ >pid.out; "
	    "cut -d: -f1 /proc/net/dev | tail -n +3 | tr -d ' ' >net.out; "
	    "ls /tmp | wc -l >tmp.out",
	    NULL};
	char buf[4096], want[PATH_MAX + 2];
	struct sbx *s;

	s = start(f, argv);
	wait_exec_ok(s);
	assert_int_equal(wait_end(s), 0);
	sbx_free(s);
	read_back(f, "env.out", buf, sizeof(buf));
	assert_non_null(strstr(buf, "PATH=/usr/bin:/bin\n"));
	assert_null(strstr(buf, "PH_TEST_SECRET"));
	assert_null(strstr(buf, "HOME="));
	snprintf(want, sizeof(want), "%s\n", f->dir);
	assert_string_equal(read_back(f, "pwd.out", buf, sizeof(buf)), want);
	snprintf(want, sizeof(want), "%u\n", (unsigned)getuid());
	assert_string_equal(read_back(f, "uid.out", buf, sizeof(buf)), want);
	assert_string_equal(read_back(f, "pid.out", buf, sizeof(buf)), "2\n");
	assert_string_equal(read_back(f, "net.out", buf, sizeof(buf)), "lo\n");
	/* The start directory's mount point chain under the fresh /tmp. */
	assert_string_equal(read_back(f, "tmp.out", buf, sizeof(buf)), "1\n");
}

/*
 * The command itself (cp, reading its own status; a shell would reset
 * its mask): no capabilities, no_new_privs, seccomp, the mask given.
 */
static void
test_command_state(void **state)
{
	struct fixture *f = *state;
	char *argv[] = {"/bin/cp", "/proc/self/status", "status.out", NULL};
	char buf[4096];
	struct sbx *s;

	sigaddset(&f->c.mask, SIGUSR1);
	s = start(f, argv);
	wait_exec_ok(s);
	assert_int_equal(wait_end(s), 0);
	sbx_free(s);
	read_back(f, "status.out", buf, sizeof(buf));
	assert_non_null(strstr(buf, "CapEff:\t0000000000000000\n"));
	assert_non_null(strstr(buf, "CapPrm:\t0000000000000000\n"));
	assert_non_null(strstr(buf, "CapBnd:\t0000000000000000\n"));
	assert_non_null(strstr(buf, "CapAmb:\t0000000000000000\n"));
	assert_non_null(strstr(buf, "NoNewPrivs:\t1\n"));
	assert_non_null(strstr(buf, "Seccomp:\t2\n"));
	/* SIGUSR1 (10) is bit 9; nothing ignored, nothing caught by us. */
	assert_non_null(strstr(buf, "SigBlk:\t0000000000000200\n"));
	assert_non_null(strstr(buf, "SigIgn:\t0000000000000000\n"));
}

/* The signal mask is the one given, not the caller's. */
static void
test_mask_not_inherited(void **state)
{
	struct fixture *f = *state;
	char *argv[] = {"/bin/cp", "/proc/self/status", "status.out", NULL};
	sigset_t block, old;
	char buf[4096];
	struct sbx *s;

	sigemptyset(&block);
	sigaddset(&block, SIGUSR2);
	assert_int_equal(sigprocmask(SIG_BLOCK, &block, &old), 0);
	s = start(f, argv);
	assert_int_equal(sigprocmask(SIG_SETMASK, &old, NULL), 0);
	wait_exec_ok(s);
	assert_int_equal(wait_end(s), 0);
	sbx_free(s);
	read_back(f, "status.out", buf, sizeof(buf));
	assert_non_null(strstr(buf, "SigBlk:\t0000000000000000\n"));
}

/*
 * sbx_free ends everything inside, the command's own children too.  It
 * runs in a child of the test, so that an sbx_free that waits forever
 * fails the test (the child is killed, and the sandbox with it) rather
 * than hanging it.
 */
static void child_free(struct fixture *f, int out) __attribute__((noreturn));

static void
child_free(struct fixture *f, int out)
{
	char *argv[] = {"/bin/sh", "-c", "sleep 1000 & sleep 1000", NULL};
	char err[512] = "";
	struct sbx *s;

	/* The write end is the stdout of everything inside. */
	CHECK(dup2(out, 1) == 1);
	close(out);
	f->c.argv = argv;
	CHECK((s = sbx_start(&f->c, err, sizeof(err))) != NULL);
	close(1);
	CHECK(sbx_wait_exec(s, err, sizeof(err)) == 0);
	sbx_free(s);
	_exit(0);
}

static void
test_free_ends_all(void **state)
{
	struct fixture *f = *state;
	struct pollfd pfd;
	pid_t pid;
	int p[2], w, r;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	fflush(NULL);
	assert_true((pid = fork()) >= 0);
	if (pid == 0) {
		close(p[0]);
		child_free(f, p[1]);
	}
	close(p[1]);
	/* Every holder of the write end has ended: end of file. */
	pfd.fd = p[0];
	pfd.events = POLLIN;
	r = poll(&pfd, 1, LIMIT_MS);
	if (r != 1)
		kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &w, 0), pid);
	close(p[0]);
	assert_int_equal(r, 1);
	assert_true((pfd.revents & POLLHUP) != 0);
	assert_true(WIFEXITED(w));
	assert_int_equal(WEXITSTATUS(w), 0);
}

/* Only stdin, stdout and stderr go in, whatever else the caller had. */
static void
test_no_fd_leaks_in(void **state)
{
	struct fixture *f = *state;
	char *argv[] = {"/bin/sh", "-c", "ls /proc/self/fd >fds.out", NULL};
	char buf[256];
	struct sbx *s;
	int fd;

	/* Not close-on-exec: a directory outside the view. */
	assert_true((fd = open("/", O_RDONLY | O_DIRECTORY)) >= 0);
	s = start(f, argv);
	close(fd);
	wait_exec_ok(s);
	assert_int_equal(wait_end(s), 0);
	sbx_free(s);
	/* 3 is the directory ls reads. */
	assert_string_equal(
	    read_back(f, "fds.out", buf, sizeof(buf)), "0\n1\n2\n3\n");
}

/*
 * A signal sent to PID 1 with kill(), as pinhole run forwards one, is
 * passed on to the command: sleep, exec'd with the default SIGTERM,
 * dies of it, and that is the sandbox's status.  Were it not passed on,
 * the wait would run out of time.
 */
static void
test_sigterm_forwarded(void **state)
{
	struct fixture *f = *state;
	char *argv[] = {"/bin/sleep", "1000", NULL};
	struct sbx *s;

	s = start(f, argv);
	wait_exec_ok(s);
	assert_int_equal(kill(sbx_pid(s), SIGTERM), 0);
	assert_int_equal(wait_end(s), 128 + SIGTERM);
	sbx_free(s);
}

/* An index out of range gives no descriptor, whatever its sign. */
static void
test_listener_range(void **state)
{
	struct fixture *f = *state;
	char *argv[] = {"/bin/sh", "-c", "exit 0", NULL};
	struct sbx *s;
	int past, max, neg;

	s = start(f, argv);
	/* Asked while the handle still holds its socket to the sandbox. */
	past = sbx_listener(s, sbx_nlisteners(s));
	max = sbx_listener(s, SBX_LISTENERS_MAX);
	neg = sbx_listener(s, -1);
	wait_exec_ok(s);
	assert_int_equal(wait_end(s), 0);
	sbx_free(s);
	assert_int_equal(past, -1);
	assert_int_equal(max, -1);
	assert_int_equal(neg, -1);
}

/* After sbx_release_listeners, the listeners outlive the handle. */
static void
test_release_listeners(void **state)
{
	struct fixture *f = *state;
	char *argv[] = {"/bin/sh", "-c", "exit 0", NULL};
	int fds[SBX_LISTENERS_MAX], n, i;
	struct sbx *s;

	s = start(f, argv);
	n = sbx_nlisteners(s);
	assert_true(n > 0 && n <= SBX_LISTENERS_MAX);
	for (i = 0; i < n; i++)
		fds[i] = sbx_listener(s, i);
	sbx_release_listeners(s);
	wait_exec_ok(s);
	assert_int_equal(wait_end(s), 0);
	sbx_free(s);
	for (i = 0; i < n; i++) {
		assert_true(fcntl(fds[i], F_GETFD) >= 0);
		close(fds[i]);
	}
}

/* Without release, sbx_free closes them. */
static void
test_free_closes_listeners(void **state)
{
	struct fixture *f = *state;
	char *argv[] = {"/bin/sh", "-c", "exit 0", NULL};
	int fd;
	struct sbx *s;

	s = start(f, argv);
	fd = sbx_listener(s, 0);
	wait_exec_ok(s);
	assert_int_equal(wait_end(s), 0);
	sbx_free(s);
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	assert_int_equal(errno, EBADF);
	sbx_free(NULL);
}

/*
 * The start directory is a repository: the command must not be able to
 * leave a hook that the user's next git command would run, not even by
 * moving .git aside and making a new one.
 */
static void
test_git_hooks_stay_closed(void **state)
{
	struct fixture *f = *state;
	char *argv[] = {"/bin/sh", "-c",
	    "echo x >.git/hooks/pre-commit 2>/dev/null && exit 3; "
	    "echo x >>.git/config 2>/dev/null && exit 4; "
	    "mv .git .git-moved 2>/dev/null || exit 0; "
	    "mkdir -p .git/hooks && echo x >.git/hooks/pre-commit",
	    NULL};
	char err[256] = "";
	struct sbx *s;
	int fd;

	assert_int_equal(mkdir(in_dir(f, ".git"), 0755), 0);
	fd = open(
	    in_dir(f, ".git/config"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(mnt_plan_prepare_git(f->plan, err, sizeof(err)), 0);
	s = start(f, argv);
	wait_exec_ok(s);
	wait_end(s);
	sbx_free(s);
	assert_int_equal(access(in_dir(f, ".git/hooks/pre-commit"), F_OK), -1);
}

/* How many entries of DIR have a name that starts with PREFIX. */
static int
count_prefixed(const char *dir, const char *prefix)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

/*
 * Nor by pointing git elsewhere: a .git/commondir file makes git take
 * its hooks and config from the directory it names (gitrepository-
 * layout(5)), which the command could fill as it likes.
 */
static void
test_git_commondir_closed(void **state)
{
	struct fixture *f = *state;
	char *argv[] = {"/bin/sh", "-c",
	    "mkdir -p evil/hooks && echo x >evil/hooks/pre-commit && "
	    "echo \"$PWD/evil\" >.git/commondir",
	    NULL};
	char err[256] = "";
	struct sbx *s;
	int fd;

	assert_int_equal(mkdir(in_dir(f, ".git"), 0755), 0);
	fd = open(
	    in_dir(f, ".git/config"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(mnt_plan_prepare_git(f->plan, err, sizeof(err)), 0);
	s = start(f, argv);
	wait_exec_ok(s);
	assert_int_equal(wait_end(s), 0);
	sbx_free(s);
	/*
	 * A file may always be made in a writable .git; what counts is that
	 * it is gone before git runs outside again: PID 1 moves it aside,
	 * under a name of its own making, once the rest of the sandbox is
	 * gone (netns/gitguard.c).
	 */
	assert_int_equal(access(in_dir(f, ".git/commondir"), F_OK), -1);
	assert_int_equal(
	    count_prefixed(in_dir(f, ".git"), "commondir.pinhole-quarantine-"),
	    1);
}

/*
 * A plant the sweep cannot reach (past its depth bound) makes the run's
 * status GITGUARD_EXIT, though the command exited 0.
 */
static void
test_git_sweep_fails(void **state)
{
	struct fixture *f = *state;
	char *argv[] = {"/bin/sh", "-c",
	    "d=.; i=0; while [ $i -lt 260 ]; do d=$d/d; i=$((i + 1)); done; "
	    "mkdir -p $d && echo 'gitdir: /x' >$d/.git",
	    NULL};
	struct sbx *s;

	s = start(f, argv);
	wait_exec_ok(s);
	assert_int_equal(wait_end(s), GITGUARD_EXIT);
	sbx_free(s);
}

/* --- sbx_shed ------------------------------------------------------------ */

static int
readable(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/*
 * The proxy's shedding, in a child since it cannot be undone: no
 * capability, no_new_privs; with Landlock, reading only the system's
 * paths and the extra ones, and writing nowhere.
 */
static void
child_shed(const struct fixture *f, int landlock)
{
	const char *extra[] = {in_dir(f, "allowed")};
	char report[512] = "";

	if (sbx_shed(extra, 1, landlock, report, sizeof(report)) != 0) {
		fprintf(stderr, "sbx_shed: %s\n", report);
		_exit(2);
	}
	CHECK(caps_any() == 0);
	CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1);
	CHECK(readable("/etc/passwd"));
	CHECK(readable(in_dir(f, "allowed/file")));
	if (!landlock || ll_abi() == 0) {
		CHECK(readable(in_dir(f, "outside")));
		_exit(0);
	}
	CHECK(!readable(in_dir(f, "outside")) && errno == EACCES);
	CHECK(open(in_dir(f, "allowed/file"), O_WRONLY | O_CLOEXEC) == -1 &&
	    errno == EACCES);
	CHECK(open(in_dir(f, "allowed/new"), O_WRONLY | O_CREAT | O_CLOEXEC,
	          0644) == -1);
	_exit(0);
}

static void
run_shed(const struct fixture *f, int landlock)
{
	pid_t pid;
	int fd, w;

	assert_int_equal(mkdir(in_dir(f, "allowed"), 0755), 0);
	fd = open(
	    in_dir(f, "allowed/file"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	fd = open(in_dir(f, "outside"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	fflush(NULL);
	assert_true((pid = fork()) >= 0);
	if (pid == 0)
		child_shed(f, landlock);
	assert_int_equal(waitpid(pid, &w, 0), pid);
	assert_true(WIFEXITED(w));
	assert_int_equal(WEXITSTATUS(w), 0);
}

static void
test_shed(void **state)
{
	if (ll_abi() == 0)
		print_message("note: no Landlock here: only the capability "
		              "part is checked\n");
	run_shed(*state, 1);
}

static void
test_shed_no_landlock(void **state)
{
	run_shed(*state, 0);
}

/*
 * What the command learns of the host: the hostname is "pinhole", PID
 * 1's command line and name "pinhole-init" (not the test's argv), and
 * the limits of the config hold: RLIMIT_NPROC and RLIMIT_AS as asked.
 * The command's own argv and start directory survive PID 1's new title.
 */
static void
test_identity_and_limits(void **state)
{
	struct fixture *f = *state;
	char *argv[] = {"/bin/sh", "-c",
	    "hostname >host; tr '\\0' '|' </proc/1/cmdline >cmdline; "
	    "cat /proc/1/comm >comm; "
	    "grep -E 'Max (processes|address space)' /proc/self/limits "
	    ">limits; echo \"$0 $1\" >args; pwd >pwd",
	    "arg0-kept", "arg1-kept", NULL};
	char buf[1024], want[PATH_MAX + 8];
	struct sbx *s;

	f->c.limit_pids = 77;
	f->c.limit_memory = 512ULL << 20;
	f->c.chdir = f->dir;
	s = start(f, argv);
	wait_exec_ok(s);
	assert_int_equal(wait_end(s), 0);
	sbx_free(s);
	assert_string_equal(
	    read_back(f, "host", buf, sizeof(buf)), "pinhole\n");
	assert_non_null(
	    strstr(read_back(f, "cmdline", buf, sizeof(buf)), "pinhole-init|"));
	assert_null(strstr(buf, "test_sandbox"));
	assert_string_equal(
	    read_back(f, "comm", buf, sizeof(buf)), "pinhole-init\n");
	read_back(f, "limits", buf, sizeof(buf));
	assert_non_null(strstr(buf, "Max processes             77"));
	assert_non_null(strstr(buf, "Max address space         536870912"));
	assert_string_equal(
	    read_back(f, "args", buf, sizeof(buf)), "arg0-kept arg1-kept\n");
	snprintf(want, sizeof(want), "%s\n", f->dir);
	assert_string_equal(read_back(f, "pwd", buf, sizeof(buf)), want);
}

/* What one listener from the sandbox is, by getsockname (as run_engine.c). */
enum kind { K_RAW, K_NOTES, K_DNS, K_PROXY, K_SOCKS, K_CAPTURE, K_OTHER };

static enum kind
kind_of(int fd, unsigned *port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	socklen_t len = sizeof(ss);
	int loop, any;

	int type = -1;
	socklen_t tlen = sizeof(type);

	assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
	assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen), 0);
	if (type == SOCK_RAW)
		return K_RAW;
	if (is_notes(fd))
		return K_NOTES;
	if (ss.ss_family == AF_INET) {
		*port = ntohs(sin->sin_port);
		loop = sin->sin_addr.s_addr == htonl(INADDR_LOOPBACK);
		any = sin->sin_addr.s_addr == htonl(INADDR_ANY);
	} else {
		*port = ntohs(sin6->sin6_port);
		loop = IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr);
		any = IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr);
	}
	if (*port == NET_DNS_PORT && any)
		return K_DNS;
	if (loop)
		return *port == NET_PROXY_PORT ? K_PROXY
		    : *port == NET_SOCKS_PORT  ? K_SOCKS
		                               : K_OTHER;
	return any ? K_CAPTURE : K_OTHER;
}

/*
 * Capture: the loopback listeners, the DNS stub on the wildcard, one
 * wildcard listener per port (not 53, 1080, 3128), the refusals' raw
 * sockets (2 per family); many more than one message carries.
 */
static void
test_capture_listeners(void **state)
{
	struct fixture *f = *state;
	char *argv[] = {"/bin/sh", "-c", "exit 0", NULL};
	uint16_t ports[306];
	unsigned counts[K_OTHER + 1] = {0}, port, lo = ~0u, hi = 0;
	size_t i, n = 0;
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unsigned loops = fd >= 0 ? 2 : 1;
	struct sbx *s;
	enum kind k;

	if (fd >= 0)
		close(fd);
	ports[n++] = 22;
	ports[n++] = 53;
	ports[n++] = 80;
	ports[n++] = 443;
	ports[n++] = 1080;
	ports[n++] = 3128;
	for (i = 0; i < 300; i++)
		ports[n++] = (uint16_t)(20000 + i);
	f->c.capture = 1;
	f->c.capture_ports = ports;
	f->c.ncapture_ports = n;
	s = start(f, argv);
	assert_int_equal(
	    sbx_nlisteners(s), 2 * loops + 2 + 303 + 2 * loops + 1);
	for (i = 0; i < (size_t)sbx_nlisteners(s); i++) {
		k = kind_of(sbx_listener(s, (int)i), &port);
		counts[k]++;
		if (k == K_CAPTURE) {
			lo = port < lo ? port : lo;
			hi = port > hi ? port : hi;
		}
	}
	assert_int_equal(counts[K_RAW], 2 * loops);
	assert_int_equal(counts[K_NOTES], 1);
	assert_int_equal(counts[K_DNS], 2);
	assert_int_equal(counts[K_PROXY], loops);
	assert_int_equal(counts[K_SOCKS], loops);
	assert_int_equal(counts[K_CAPTURE], 303);
	assert_int_equal(counts[K_OTHER], 0);
	assert_int_equal(lo, 22);
	assert_int_equal(hi, 20299);
	wait_exec_ok(s);
	assert_int_equal(wait_end(s), 0);
	sbx_free(s);
}

/* Without capture: loopback only, no raw socket. */
static void
test_no_capture_listeners(void **state)
{
	struct fixture *f = *state;
	char *argv[] = {"/bin/sh", "-c", "exit 0", NULL};
	unsigned port;
	struct sbx *s;
	enum kind k;
	int i;

	s = start(f, argv);
	for (i = 0; i < sbx_nlisteners(s); i++) {
		k = kind_of(sbx_listener(s, i), &port);
		if (k == K_OTHER)
			assert_int_equal(port, NET_DNS_PORT); /* loopback */
		else
			assert_true(
			    k == K_PROXY || k == K_SOCKS || k == K_NOTES);
	}
	wait_exec_ok(s);
	assert_int_equal(wait_end(s), 0);
	sbx_free(s);
}

/* --- the listener handoff, as a PID 1 may send it -------------------------- */

/* Sends 'F' + TOTAL with N descriptors of /dev/null (N may be 0). */
static void
send_f(int sock, uint32_t total, int n)
{
	char msg[5] = {'F'}, cbuf[CMSG_SPACE(sizeof(int) * 16)];
	struct iovec iov = {msg, sizeof(msg)};
	struct msghdr m;
	struct cmsghdr *c;
	int fds[16], i;

	assert_true(n <= 16);
	memcpy(msg + 1, &total, 4);
	memset(&m, 0, sizeof(m));
	memset(cbuf, 0, sizeof(cbuf));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	for (i = 0; i < n; i++)
		assert_true(
		    (fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0);
	if (n > 0) {
		m.msg_control = cbuf;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)n);
	}
	assert_int_equal(sendmsg(sock, &m, 0), 5);
	for (i = 0; i < n; i++)
		close(fds[i]);
}

/* Open descriptors of this process. */
static int
open_fds(void)
{
	struct dirent *de;
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1;
}

/* SCRIPT sends; the launcher's side takes it, or refuses saying WANT. */
static void
handoff(void (*script)(int), int nwant, const char *want)
{
	char err[256] = "";
	int sp[2], before = open_fds();
	struct sbx *s;

	assert_int_equal(
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	script(sp[1]);
	close(sp[1]);
	s = sbx_test_listeners(sp[0], err, sizeof(err));
	if (want == NULL) {
		assert_non_null(s);
		assert_int_equal(sbx_nlisteners(s), nwant);
		sbx_free(s);
	} else {
		assert_null(s);
		assert_non_null(strstr(err, want));
	}
	/* Whatever came is closed, taken or refused. */
	assert_int_equal(open_fds(), before);
}

static void
batches_ok(int sock)
{
	send_f(sock, 20, 8);
	send_f(sock, 20, 8);
	send_f(sock, 20, 4);
}

static void
total_changes(int sock)
{
	send_f(sock, 20, 8);
	send_f(sock, 21, 8);
}

static void
past_total(int sock)
{
	send_f(sock, 10, 8);
	send_f(sock, 10, 8);
}

static void
total_zero(int sock)
{
	send_f(sock, 0, 1);
}

static void
total_too_big(int sock)
{
	send_f(sock, SBX_LISTENERS_MAX + 1, 8);
}

static void
no_fds(int sock)
{
	send_f(sock, 3, 0);
}

static void
too_many_at_once(int sock)
{
	send_f(sock, 16, 16); /* more than NET_FDS_MAX: cut short */
}

static void
short_then_end(int sock)
{
	send_f(sock, 10, 8);
}

static void
said_why(int sock)
{
	send_f(sock, 10, 8);
	assert_int_equal(send(sock, "Eno room", 8, 0), 8);
}

static void
test_handoff_checked(void **state)
{
	(void)state;
	handoff(batches_ok, 20, NULL);
	handoff(total_changes, 0, "malformed list of listeners");
	handoff(past_total, 0, "malformed list of listeners");
	handoff(total_zero, 0, "malformed list of listeners");
	handoff(total_too_big, 0, "malformed list of listeners");
	handoff(no_fds, 0, "malformed list of listeners");
	handoff(too_many_at_once, 0, "malformed list of listeners");
	handoff(short_then_end, 0, "end of file");
	handoff(said_why, 0, "no room");
}

#define T(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_exit_status),
	    T(test_identity_and_limits),
	    T(test_reap_while_running),
	    T(test_not_found),
	    T(test_not_executable),
	    T(test_setup_fails),
	    T(test_chdir),
	    T(test_connect_inside),
	    T(test_connect_inside_v6),
	    T(test_inside),
	    T(test_command_state),
	    T(test_mask_not_inherited),
	    T(test_free_ends_all),
	    T(test_no_fd_leaks_in),
	    T(test_sigterm_forwarded),
	    T(test_listener_range),
	    T(test_release_listeners),
	    T(test_free_closes_listeners),
	    T(test_capture_listeners),
	    T(test_no_capture_listeners),
	    cmocka_unit_test(test_handoff_checked),
	    T(test_git_hooks_stay_closed),
	    T(test_git_commondir_closed),
	    T(test_git_sweep_fails),
	    T(test_shed),
	    T(test_shed_no_landlock),
	};

	return cmocka_run_group_tests_name("sandbox", tests, NULL, NULL);
}
