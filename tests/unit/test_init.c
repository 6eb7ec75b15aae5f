/*
 * test_init.c: unit tests of netns/init.c, the sandbox's PID 1.
 *
 * Wait statuses come from real children that exit or are killed.  The
 * loop runs in a forked "init" child, which blocks signals and becomes a
 * child subreaper, standing in for PID 1 of a namespace: orphans are
 * reparented to it as they would be to PID 1.  The init child ends with
 * init_loop's result, or with 200 + n when its own check n failed; the
 * parent asserts on that status.  Nothing waits by sleeping: the command
 * says it is ready through a pipe, and a process's end is seen through a
 * pipe's end of file or a pidfd.
 */
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
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

#include <cmocka.h>

#include "netns/init.h"
#include "tests/unit/fixture.h"

#define LIMIT_S 10 /* how long an init child may take, at most */

/* In the init child: ends it with status 200 + N when C is false. */
#define INIT_CHECK(n, c)                                                       \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "%s:%d: %s (errno: %s)\n", __FILE__,   \
			    __LINE__, #c, strerror(errno));                    \
			_exit(200 + (n));                                      \
		}                                                              \
	} while (0)

static pid_t
xfork(void)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	return pid;
}

/* Waits for PID (not reaped yet); returns its raw wait status. */
static int
wait_for(pid_t pid, int flags)
{
	int w = -1;

	while (waitpid(pid, &w, flags) < 0)
		if (errno != EINTR) {
			fail_msg("waitpid %d: %s", (int)pid, strerror(errno));
			break;
		}
	return w;
}

/* The exit code of a child ended by the init-side code, asserted. */
static int
exit_code(pid_t pid)
{
	int w = wait_for(pid, 0);

	if (WIFSIGNALED(w) && WTERMSIG(w) == SIGALRM)
		fail_msg("the init child ran out of time (%d s)", LIMIT_S);
	assert_true(WIFEXITED(w));
	return WEXITSTATUS(w);
}

/* --- init_status ---------------------------------------------------------- */

static int
status_of_exit(int code)
{
	pid_t pid = xfork();

	if (pid == 0)
		_exit(code);
	return wait_for(pid, 0);
}

static int
status_of_signal(int sig)
{
	pid_t pid = xfork();

	if (pid == 0) {
		signal(sig, SIG_DFL);
		raise(sig);
		_exit(99);
	}
	return wait_for(pid, 0);
}

static void
test_status_exit(void **state)
{
	(void)state;
	assert_int_equal(init_status(status_of_exit(0)), 0);
	assert_int_equal(init_status(status_of_exit(3)), 3);
	assert_int_equal(init_status(status_of_exit(125)), 125);
	assert_int_equal(init_status(status_of_exit(128)), 128);
	assert_int_equal(init_status(status_of_exit(255)), 255);
}

static void
test_status_signal(void **state)
{
	(void)state;
	assert_int_equal(init_status(status_of_signal(SIGKILL)), 137);
	assert_int_equal(init_status(status_of_signal(SIGTERM)), 143);
	assert_int_equal(init_status(status_of_signal(SIGINT)), 130);
	assert_int_equal(init_status(status_of_signal(SIGHUP)), 129);
	assert_int_equal(init_status(status_of_signal(SIGUSR1)), 128 + SIGUSR1);
	assert_int_equal(
	    init_status(status_of_signal(SIGRTMIN + 1)), 128 + SIGRTMIN + 1);
}

/* A stopped child is no end: the status is pinhole's own, 125. */
static void
test_status_stopped(void **state)
{
	pid_t pid = xfork();
	int w;

	(void)state;
	if (pid == 0) {
		raise(SIGSTOP);
		_exit(0);
	}
	w = wait_for(pid, WUNTRACED);
	assert_true(WIFSTOPPED(w));
	assert_int_equal(init_status(w), 125);
	kill(pid, SIGKILL);
	w = wait_for(pid, 0);
	assert_int_equal(init_status(w), 137);
}

/* --- init_signals --------------------------------------------------------- */

/* The set init blocks and reads: SIGCHLD and the forwarded ones. */
static void
child_signals(void)
{
	static const int handled[] = {
	    SIGCHLD,
	    SIGINT,
	    SIGTERM,
	    SIGHUP,
	    SIGQUIT,
	    SIGUSR1,
	    SIGUSR2,
	};
	sigset_t old, now, before;
	size_t i;
	int sfd;

	sigemptyset(&before);
	sigaddset(&before, SIGALRM);
	CHECK(sigprocmask(SIG_SETMASK, &before, NULL) == 0);
	CHECK((sfd = init_signals(&old)) >= 0);
	CHECK((fcntl(sfd, F_GETFD) & FD_CLOEXEC) != 0);
	/* OLD is the mask from before, for the command to restore. */
	CHECK(sigismember(&old, SIGALRM) == 1);
	CHECK(sigismember(&old, SIGTERM) == 0);
	CHECK(sigprocmask(SIG_SETMASK, NULL, &now) == 0);
	for (i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
		CHECK(sigismember(&now, handled[i]) == 1);
	CHECK(sigismember(&now, SIGALRM) == 1);
	CHECK(sigismember(&now, SIGPIPE) == 0);
	close(sfd);
}

static void
test_signals(void **state)
{
	pid_t pid = xfork();

	(void)state;
	if (pid == 0) {
		child_signals();
		_exit(0);
	}
	assert_int_equal(exit_code(pid), 0);
}

/* --- init_loop ------------------------------------------------------------ */

/*
 * The init child: blocks its signals, becomes a subreaper, forks the
 * command that runs CMD(ARG) and loops.  BEFORE (may be NULL) runs in
 * the init child between the fork and the loop.  After the loop, every
 * process of the command's must have been reaped: nothing is left to
 * wait for.  Ends with init_loop's result.
 */
struct scenario {
	void (*cmd)(void *arg);
	void (*before)(pid_t cmd, void *arg);
	int *ready; /* a pipe, or NULL: ARG of CMD and BEFORE */
};

static void init_child(const struct scenario *sc) __attribute__((noreturn));

static void
init_child(const struct scenario *sc)
{
	sigset_t old;
	pid_t cmd;
	int sfd, r, w;

	/*
	 * A bound, not a synchronisation: a loop that never ends would hang
	 * the test, so SIGALRM (not one init blocks) ends it as a failure.
	 */
	alarm(LIMIT_S);
	INIT_CHECK(1, prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0);
	INIT_CHECK(2, (sfd = init_signals(&old)) >= 0);
	INIT_CHECK(3, (cmd = fork()) >= 0);
	if (cmd == 0) {
		/* And the command does not outlive a failed init child. */
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		close(sfd);
		init_reset_signals(&old);
		sc->cmd(sc->ready);
		_exit(99);
	}
	if (sc->before != NULL)
		sc->before(cmd, sc->ready);
	r = init_loop(sfd, cmd);
	/* The command was reaped, and so was everything else that ended. */
	INIT_CHECK(4, waitpid(-1, &w, WNOHANG) == -1 && errno == ECHILD);
	INIT_CHECK(5, kill(cmd, 0) == -1 && errno == ESRCH);
	_exit(r);
}

/*
 * Runs SC in an init child; returns the init child's exit code.  The
 * parent closes its ends of the ready pipe, so that a command that dies
 * before it writes leaves end of file, not a hang.
 */
static int
run_init(const struct scenario *sc)
{
	pid_t pid = xfork();

	if (pid == 0)
		init_child(sc);
	if (sc->ready != NULL) {
		close(sc->ready[0]);
		close(sc->ready[1]);
	}
	return exit_code(pid);
}

static void
cmd_exit5(void *arg)
{
	(void)arg;
	_exit(5);
}

static void
test_loop_exit(void **state)
{
	struct scenario sc = {cmd_exit5, NULL, NULL};

	(void)state;
	assert_int_equal(run_init(&sc), 5);
}

/* The command ended before the loop's first read: still its status. */
static void
before_wait_end(pid_t cmd, void *arg)
{
	siginfo_t si;

	(void)arg;
	memset(&si, 0, sizeof(si));
	INIT_CHECK(10, waitid(P_PID, (id_t)cmd, &si, WEXITED | WNOWAIT) == 0);
	INIT_CHECK(11, si.si_pid == cmd);
}

static void
test_loop_exit_early(void **state)
{
	struct scenario sc = {cmd_exit5, before_wait_end, NULL};

	(void)state;
	assert_int_equal(run_init(&sc), 5);
}

static void
cmd_exit0(void *arg)
{
	(void)arg;
	_exit(0);
}

static void
test_loop_exit_zero(void **state)
{
	struct scenario sc = {cmd_exit0, NULL, NULL};

	(void)state;
	assert_int_equal(run_init(&sc), 0);
}

/* The command's signals are the default ones again: SIGTERM kills it. */
static void
cmd_sigterm(void *arg)
{
	(void)arg;
	kill(getpid(), SIGTERM);
	_exit(98); /* SIGTERM blocked or ignored */
}

static void
test_loop_killed(void **state)
{
	struct scenario sc = {cmd_sigterm, NULL, NULL};

	(void)state;
	assert_int_equal(run_init(&sc), 143);
}

/*
 * An orphan: the command forks a middle process, which forks a
 * grandchild and exits, so the grandchild is reparented to the init
 * child.  The grandchild waits for end of file on a pipe the command
 * then closes, and the command waits on a pidfd until the grandchild
 * has ended (a zombie of init's) before it exits itself.  init_loop must
 * reap the grandchild, which init_child checks (ECHILD).
 */
static void
cmd_orphan(void *arg)
{
	struct pollfd pfd;
	pid_t mid, grand;
	int p[2], q[2], pidfd, w;
	char c;

	(void)arg;
	CHECK(pipe2(p, O_CLOEXEC) == 0 && pipe2(q, O_CLOEXEC) == 0);
	CHECK((mid = fork()) >= 0);
	if (mid == 0) {
		CHECK((grand = fork()) >= 0);
		if (grand == 0) {
			close(p[1]);
			while (read(p[0], &c, 1) > 0)
				;
			_exit(0);
		}
		/* Tell the command who the grandchild is, then orphan it. */
		CHECK(write(q[1], &grand, sizeof(grand)) == sizeof(grand));
		_exit(0);
	}
	CHECK(waitpid(mid, &w, 0) == mid && WIFEXITED(w));
	CHECK(read(q[0], &grand, sizeof(grand)) == sizeof(grand));
	/* Reparented to init (the subreaper), not to us. */
	CHECK((pidfd = (int)syscall(SYS_pidfd_open, grand, 0)) >= 0);
	close(p[1]); /* the grandchild's end of file */
	pfd.fd = pidfd;
	pfd.events = POLLIN;
	CHECK(poll(&pfd, 1, 10000) == 1);
	_exit(7);
}

static void
test_loop_reaps_orphan(void **state)
{
	struct scenario sc = {cmd_orphan, NULL, NULL};

	(void)state;
	/* 204: the grandchild was left a zombie. */
	assert_int_equal(run_init(&sc), 7);
}

/*
 * Many orphans ending together: their SIGCHLDs merge into one or a few
 * reads, and every one must still be reaped.
 */
static void
cmd_many_orphans(void *arg)
{
	struct pollfd pfd[16];
	pid_t mid, grand[16];
	int p[2], q[2], w;
	size_t i, n = sizeof(grand) / sizeof(grand[0]);
	char c;

	(void)arg;
	CHECK(pipe2(p, O_CLOEXEC) == 0 && pipe2(q, O_CLOEXEC) == 0);
	CHECK((mid = fork()) >= 0);
	if (mid == 0) {
		for (i = 0; i < n; i++) {
			CHECK((grand[i] = fork()) >= 0);
			if (grand[i] == 0) {
				close(p[1]);
				while (read(p[0], &c, 1) > 0)
					;
				_exit(0);
			}
		}
		CHECK(write(q[1], grand, sizeof(grand)) == sizeof(grand));
		_exit(0);
	}
	CHECK(waitpid(mid, &w, 0) == mid);
	CHECK(read(q[0], grand, sizeof(grand)) == sizeof(grand));
	for (i = 0; i < n; i++) {
		pfd[i].fd = (int)syscall(SYS_pidfd_open, grand[i], 0);
		CHECK(pfd[i].fd >= 0);
		pfd[i].events = POLLIN;
	}
	close(p[1]);
	for (i = 0; i < n; i++)
		CHECK(poll(&pfd[i], 1, 10000) == 1);
	_exit(8);
}

static void
test_loop_reaps_many(void **state)
{
	struct scenario sc = {cmd_many_orphans, NULL, NULL};

	(void)state;
	assert_int_equal(run_init(&sc), 8);
}

/*
 * Forwarding: the command catches SIGTERM and SIGINT.  It exits 9 on
 * SIGTERM, or 10 if a SIGINT came first; it tells the parent it is
 * ready by writing a byte on the pipe in ARG.
 */
static volatile sig_atomic_t saw_int;

static void
on_int(int sig)
{
	(void)sig;
	saw_int = 1;
}

static void
on_term(int sig)
{
	(void)sig;
	_exit(saw_int ? 10 : 9);
}

static void
cmd_catch(void *arg)
{
	const int *ready = arg;
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	CHECK(sigaction(SIGTERM, &sa, NULL) == 0);
	/*
	 * With both pending, the kernel stacks both handlers and the one
	 * for SIGTERM would run first: SIGTERM waits while on_int runs.
	 */
	sa.sa_handler = on_int;
	sigaddset(&sa.sa_mask, SIGTERM);
	CHECK(sigaction(SIGINT, &sa, NULL) == 0);
	CHECK(write(ready[1], "r", 1) == 1);
	for (;;)
		pause();
}

/* kill() from outside to init: passed on to the command. */
static void
test_loop_forwards(void **state)
{
	int ready[2];
	struct scenario sc = {cmd_catch, NULL, ready};
	pid_t pid;
	char c;

	(void)state;
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	pid = xfork();
	if (pid == 0) {
		close(ready[0]);
		init_child(&sc);
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	/* Blocked in init since before the fork: read there, not lost. */
	assert_int_equal(kill(pid, SIGTERM), 0);
	assert_int_equal(exit_code(pid), 9);
}

/*
 * A signal from the terminal (si_code SI_KERNEL) reached the command
 * already and is not passed on; one sent with kill() is.  The init child
 * queues itself a SIGINT as the kernel would send it, then a SIGTERM
 * with kill(); SIGINT is read first (lower number).  Forwarded by
 * mistake, it would reach the command before the SIGTERM: status 10.
 */
static void
before_terminal_int(pid_t cmd, void *arg)
{
	const int *ready = arg;
	siginfo_t si;
	char c;

	(void)cmd;
	close(ready[1]);
	INIT_CHECK(20, read(ready[0], &c, 1) == 1);
	memset(&si, 0, sizeof(si));
	si.si_signo = SIGINT;
	si.si_code = SI_KERNEL;
	INIT_CHECK(
	    21, syscall(SYS_rt_sigqueueinfo, getpid(), SIGINT, &si) == 0);
	INIT_CHECK(22, kill(getpid(), SIGTERM) == 0);
}

static void
test_loop_terminal_not_forwarded(void **state)
{
	int ready[2];
	struct scenario sc = {cmd_catch, before_terminal_int, ready};

	(void)state;
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	assert_int_equal(run_init(&sc), 9);
}

/* The same SIGINT sent with kill() is passed on: status 10. */
static void
before_user_int(pid_t cmd, void *arg)
{
	const int *ready = arg;
	char c;

	(void)cmd;
	close(ready[1]);
	INIT_CHECK(20, read(ready[0], &c, 1) == 1);
	INIT_CHECK(21, kill(getpid(), SIGINT) == 0);
	INIT_CHECK(22, kill(getpid(), SIGTERM) == 0);
}

static void
test_loop_user_int_forwarded(void **state)
{
	int ready[2];
	struct scenario sc = {cmd_catch, before_user_int, ready};

	(void)state;
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	assert_int_equal(run_init(&sc), 10);
}

/* --- init_reset_signals --------------------------------------------------- */

static void
on_any(int sig)
{
	(void)sig;
}

static int
disposition_is_default(int sig)
{
	struct sigaction sa;

	return sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL;
}

static void
child_reset(void)
{
	struct sigaction sa;
	sigset_t block, old, now;

	/* What a parent may leave behind: ignored, caught, blocked. */
	CHECK(signal(SIGPIPE, SIG_IGN) != SIG_ERR);
	CHECK(signal(SIGHUP, SIG_IGN) != SIG_ERR);
	CHECK(signal(SIGRTMIN + 2, SIG_IGN) != SIG_ERR);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_any;
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	CHECK(sigaction(SIGTERM, &sa, NULL) == 0);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR2);
	sigaddset(&block, SIGTERM);
	CHECK(sigprocmask(SIG_SETMASK, &block, NULL) == 0);
	/* The command's mask: SIGQUIT only. */
	sigemptyset(&old);
	sigaddset(&old, SIGQUIT);
	init_reset_signals(&old);
	CHECK(disposition_is_default(SIGPIPE));
	CHECK(disposition_is_default(SIGHUP));
	CHECK(disposition_is_default(SIGUSR1));
	CHECK(disposition_is_default(SIGTERM));
	CHECK(disposition_is_default(SIGRTMIN + 2));
	CHECK(disposition_is_default(SIGRTMAX));
	CHECK(sigprocmask(SIG_SETMASK, NULL, &now) == 0);
	CHECK(sigismember(&now, SIGQUIT) == 1);
	CHECK(sigismember(&now, SIGUSR2) == 0);
	CHECK(sigismember(&now, SIGTERM) == 0);
	CHECK(sigismember(&now, SIGPIPE) == 0);
	/* Default again for real: a SIGPIPE now ends the process. */
	signal(SIGPIPE, SIG_DFL);
}

static void
test_reset(void **state)
{
	pid_t pid = xfork();

	(void)state;
	if (pid == 0) {
		child_reset();
		_exit(0);
	}
	assert_int_equal(exit_code(pid), 0);
}

/* The ignored SIGPIPE is default again: writing to a closed pipe kills. */
static void
test_reset_sigpipe_kills(void **state)
{
	sigset_t none;
	pid_t pid = xfork();
	int p[2], w;

	(void)state;
	if (pid == 0) {
		signal(SIGPIPE, SIG_IGN);
		sigemptyset(&none);
		init_reset_signals(&none);
		if (pipe(p) != 0)
			_exit(2);
		close(p[0]);
		(void)write(p[1], "x", 1);
		_exit(3); /* still ignored */
	}
	w = wait_for(pid, 0);
	assert_true(WIFSIGNALED(w));
	assert_int_equal(WTERMSIG(w), SIGPIPE);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_status_exit),
	    cmocka_unit_test(test_status_signal),
	    cmocka_unit_test(test_status_stopped),
	    cmocka_unit_test(test_signals),
	    cmocka_unit_test(test_loop_exit),
	    cmocka_unit_test(test_loop_exit_early),
	    cmocka_unit_test(test_loop_exit_zero),
	    cmocka_unit_test(test_loop_killed),
	    cmocka_unit_test(test_loop_reaps_orphan),
	    cmocka_unit_test(test_loop_reaps_many),
	    cmocka_unit_test(test_loop_forwards),
	    cmocka_unit_test(test_loop_terminal_not_forwarded),
	    cmocka_unit_test(test_loop_user_int_forwarded),
	    cmocka_unit_test(test_reset),
	    cmocka_unit_test(test_reset_sigpipe_kills),
	};

	return cmocka_run_group_tests_name("init", tests, NULL, NULL);
}
