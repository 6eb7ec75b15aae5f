/*
 * test_proc.c: unit tests of common/proc.c, helpers with a pipe, one
 * deadline, and their whole process tree killed and reaped.
 *
 * Hostile helpers are small sh scripts.  A helper that leaves a process
 * behind writes that process's pid to a marker file first (and waits for
 * it to be there, so no test depends on timing); after proc_run the test
 * checks that the pid is gone.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/proc.h"
#include "tests/unit/fixture.h"

#define CAP 65536

static char marker[PATH_MAX];
static uint8_t buf[2 * 1024 * 1024];

static char *const minimal_env[] = {"PATH=/usr/bin:/bin", NULL};

/* Runs sh -c SCRIPT with $M the marker path; returns proc_run's result. */
static int
run_sh(const char *script, int timeout_ms, int grace_ms, size_t cap,
    struct proc_result *res, int64_t *elapsed)
{
	static char scr[4096];
	char mk[PATH_MAX + 8];
	char *env[] = {"PATH=/usr/bin:/bin", mk, NULL};
	char *argv[] = {"sh", "-c", scr, NULL};
	struct proc_spec spec = {
	    .argv = argv,
	    .envp = env,
	    .timeout_ms = timeout_ms,
	    .grace_ms = grace_ms,
	    .cancel_fd = -1,
	    .out = buf,
	    .cap = cap,
	};
	int64_t t0 = fixture_now_ms();
	int r;

	snprintf(mk, sizeof(mk), "M=%s", marker);
	assert_true(strlen(script) < sizeof(scr));
	strcpy(scr, script);
	r = proc_run(&spec, res);
	if (elapsed != NULL)
		*elapsed = fixture_now_ms() - t0;
	return r;
}

/* The pid the helper wrote to the marker, which must exist. */
static pid_t
marker_pid(void)
{
	FILE *f = fopen(marker, "r");
	long pid = 0;

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld", &pid), 1);
	fclose(f);
	assert_true(pid > 1);
	return (pid_t)pid;
}

/* After proc_run returned, the marker's process no longer exists. */
static void
assert_gone(pid_t pid)
{
	errno = 0;
	assert_int_equal(kill(pid, 0), -1);
	assert_int_equal(errno, ESRCH);
}

static int
setup(void **state)
{
	const char *t = getenv("TMPDIR");

	(void)state;
	snprintf(marker, sizeof(marker), "%s/test_proc.%ld.pid",
	    t != NULL && *t != '\0' ? t : "/tmp", (long)getpid());
	unlink(marker);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	unlink(marker);
	return 0;
}

static void
test_output_and_status(void **state)
{
	struct proc_result res;

	(void)state;
	assert_int_equal(run_sh("printf hello", 5000, 0, CAP, &res, NULL), 0);
	assert_int_equal(res.end, PROC_DONE);
	assert_int_equal(res.len, 5);
	assert_memory_equal(buf, "hello", 5);
	assert_true(res.exited);
	assert_int_equal(res.code, 0);
	assert_int_equal(res.killed, 0);
	assert_int_equal(res.survivors, 0);
}

static void
test_exit_status(void **state)
{
	struct proc_result res;

	(void)state;
	assert_int_equal(
	    run_sh("echo x; exit 3", 5000, 0, CAP, &res, NULL), -1);
	assert_int_equal(res.end, PROC_DONE);
	assert_true(res.exited);
	assert_int_equal(res.code, 3);
	assert_int_equal(res.signo, 0);
}

static void
test_signal(void **state)
{
	struct proc_result res;

	(void)state;
	assert_int_equal(run_sh("kill -9 $$", 5000, 0, CAP, &res, NULL), -1);
	assert_int_equal(res.end, PROC_DONE);
	assert_true(res.exited);
	assert_int_equal(res.signo, SIGKILL);
}

static void
test_exec_failed(void **state)
{
	char *argv[] = {"/nonexistent/helper", NULL};
	struct proc_spec spec = {.argv = argv,
	    .envp = minimal_env,
	    .timeout_ms = 5000,
	    .cancel_fd = -1,
	    .out = buf,
	    .cap = CAP};
	struct proc_result res;

	(void)state;
	assert_int_equal(proc_run(&spec, &res), -1);
	assert_int_equal(res.end, PROC_EXEC_FAILED);
	assert_int_equal(res.err, ENOENT);
}

/* The deadline holds for a helper that neither prints nor exits. */
static void
test_deadline(void **state)
{
	struct proc_result res;
	int64_t ms;

	(void)state;
	assert_int_equal(run_sh("echo $$ >\"$M.t\"; mv \"$M.t\" \"$M\"; "
	                        "exec sleep 60",
	                     300, 0, CAP, &res, &ms),
	    -1);
	assert_int_equal(res.end, PROC_TIMEOUT);
	assert_true(ms >= 300);
	assert_true(ms < 300 + PROC_REAP_MS);
	assert_gone(marker_pid());
}

/*
 * Prints, closes its stdout, keeps running: killed after the grace, well
 * before the deadline, and the run fails.
 */
static void
test_closes_stdout_and_sleeps(void **state)
{
	struct proc_result res;
	int64_t ms;

	(void)state;
	assert_int_equal(run_sh("echo value; exec >&-; echo $$ >\"$M.t\"; "
	                        "mv \"$M.t\" \"$M\"; exec sleep 60",
	                     10000, 200, CAP, &res, &ms),
	    -1);
	assert_int_equal(res.end, PROC_LINGERED);
	assert_int_equal(res.len, 6);
	assert_true(ms >= 200);
	assert_true(ms < 5000);
	assert_gone(marker_pid());
}

/*
 * A grandchild in a session of its own (setsid) keeps stdout open after
 * the helper exits: the group kill cannot reach it, the subreaper does.
 */
static void
test_setsid_grandchild_holds_stdout(void **state)
{
	struct proc_result res;
	int64_t ms;

	(void)state;
	assert_int_equal(
	    run_sh("setsid sh -c 'echo $$ >\"$M.t\"; mv \"$M.t\" \"$M\"; "
	           "exec sleep 60' & "
	           "while [ ! -s \"$M\" ]; do :; done; echo value",
	        10000, 200, CAP, &res, &ms),
	    -1);
	assert_int_equal(res.end, PROC_HELD_OPEN);
	assert_true(res.exited);
	assert_int_equal(res.code, 0);
	assert_true(ms < 5000);
	assert_true(res.killed >= 1);
	assert_int_equal(res.survivors, 0);
	assert_gone(marker_pid());
}

/* A grandchild in the helper's group that holds stdout: group kill. */
static void
test_grandchild_in_group_holds_stdout(void **state)
{
	struct proc_result res;
	int64_t ms;

	(void)state;
	assert_int_equal(run_sh("sh -c 'echo $$ >\"$M.t\"; mv \"$M.t\" "
	                        "\"$M\"; exec sleep 60' & "
	                        "while [ ! -s \"$M\" ]; do :; done; echo v",
	                     400, 0, CAP, &res, &ms),
	    -1);
	assert_true(res.end == PROC_HELD_OPEN || res.end == PROC_TIMEOUT);
	assert_true(ms < 400 + PROC_REAP_MS);
	assert_gone(marker_pid());
}

/*
 * A daemon the helper detached (double fork, setsid, stdout elsewhere) does
 * not hold the run up, but does not outlive it either.
 */
static void
test_detached_daemon_killed(void **state)
{
	struct proc_result res;

	(void)state;
	assert_int_equal(
	    run_sh("(setsid sh -c 'echo $$ >\"$M.t\"; mv \"$M.t\" \"$M\"; "
	           "exec sleep 60' >/dev/null &) ; "
	           "while [ ! -s \"$M\" ]; do :; done; echo value",
	        10000, 0, CAP, &res, NULL),
	    0);
	assert_int_equal(res.end, PROC_DONE);
	assert_int_equal(res.len, 6);
	assert_true(res.killed >= 1);
	assert_gone(marker_pid());
}

static void
test_large_output(void **state)
{
	struct proc_result res;

	(void)state;
	assert_int_equal(run_sh("head -c 1500000 /dev/zero", 10000, 0,
	                     sizeof(buf), &res, NULL),
	    0);
	assert_int_equal(res.len, 1500000);
	/* More than the buffer: stopped, killed. */
	assert_int_equal(
	    run_sh("exec cat /dev/zero", 10000, 0, 1000, &res, NULL), -1);
	assert_int_equal(res.end, PROC_TOO_LONG);
	assert_int_equal(res.len, 1000);
}

/* The helper sees exactly the environment it is given. */
static void
test_environment_is_given(void **state)
{
	char *argv[] = {"env", NULL};
	char *env[] = {"PATH=/usr/bin:/bin", "HOME=/nowhere", NULL};
	struct proc_spec spec = {.argv = argv,
	    .envp = env,
	    .timeout_ms = 5000,
	    .cancel_fd = -1,
	    .out = buf,
	    .cap = CAP};
	const char *want = "PATH=/usr/bin:/bin\nHOME=/nowhere\n";
	struct proc_result res;

	(void)state;
	assert_int_equal(setenv("PH_TEST_PROC_LEAK", "leak", 1), 0);
	assert_int_equal(proc_run(&spec, &res), 0);
	assert_int_equal(res.len, strlen(want));
	assert_memory_equal(buf, want, strlen(want));
	unsetenv("PH_TEST_PROC_LEAK");
}

/* Ignored signals and a blocked mask are not handed on. */
static void
test_signals_reset(void **state)
{
	struct proc_result res;
	sigset_t set, old;

	(void)state;
	signal(SIGTERM, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, &old);
	assert_int_equal(
	    run_sh("kill -TERM $$; sleep 5", 5000, 0, CAP, &res, NULL), -1);
	sigprocmask(SIG_SETMASK, &old, NULL);
	signal(SIGTERM, SIG_DFL);
	assert_int_equal(res.signo, SIGTERM);
}

/* Readability of cancel_fd stops the run at once. */
static void
test_cancel(void **state)
{
	char *argv[] = {"sh", "-c",
	    "echo $$ >\"$M.t\"; mv \"$M.t\" \"$M\"; exec sleep 60", NULL};
	char mk[PATH_MAX + 8];
	char *env[] = {"PATH=/usr/bin:/bin", mk, NULL};
	struct proc_spec spec = {.argv = argv,
	    .envp = env,
	    .timeout_ms = 10000,
	    .out = buf,
	    .cap = CAP};
	struct proc_result res;
	int p[2];
	int64_t t0;

	(void)state;
	snprintf(mk, sizeof(mk), "M=%s", marker);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	spec.cancel_fd = p[0];
	t0 = fixture_now_ms();
	assert_int_equal(proc_run(&spec, &res), -1);
	assert_int_equal(res.end, PROC_CANCELLED);
	assert_true(fixture_now_ms() - t0 < 5000);
	close(p[0]);
	close(p[1]);
	/* It may have been killed before it wrote the marker. */
	if (access(marker, F_OK) == 0)
		assert_gone(marker_pid());
}

/* No zombie or child is left to the caller. */
static void
test_nothing_left_to_reap(void **state)
{
	struct proc_result res;

	(void)state;
	(void)run_sh("sleep 60 & sleep 60 & echo v", 300, 0, CAP, &res, NULL);
	errno = 0;
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

/* A function helper: writes, or forks a grandchild that holds stdout. */
static void
fn_helper(void *arg)
{
	const char *what = arg;
	char tmp[PATH_MAX + 8];
	FILE *f;

	if (strcmp(what, "write") == 0) {
		(void)!write(STDOUT_FILENO, "from fn", 7);
	} else if (strcmp(what, "crash") == 0) {
		raise(SIGKILL);
	} else if (strcmp(what, "hold") == 0 && fork() == 0) {
		/* Written whole, then renamed: the marker is never half there. */
		snprintf(tmp, sizeof(tmp), "%s.t", marker);
		if ((f = fopen(tmp, "w")) != NULL) {
			fprintf(f, "%ld", (long)getpid());
			fclose(f);
			rename(tmp, marker);
		}
		pause();
		_exit(0);
	} else if (strcmp(what, "hold") == 0) {
		while (access(marker, F_OK) != 0)
			usleep(1000);
	}
}

static int
run_fn(const char *what, int timeout_ms, struct proc_result *res)
{
	struct proc_spec spec = {
	    .fn = fn_helper,
	    .arg = (void *)(uintptr_t)what,
	    .timeout_ms = timeout_ms,
	    .grace_ms = 200,
	    .cancel_fd = -1,
	    .out = buf,
	    .cap = CAP,
	};

	return proc_run(&spec, res);
}

/*
 * A function instead of a program: its output and exit as a program's,
 * and whatever it leaves behind is killed the same way.
 */
static void
test_function_helper(void **state)
{
	struct proc_result res;

	(void)state;
	assert_int_equal(run_fn("write", 5000, &res), 0);
	assert_int_equal(res.end, PROC_DONE);
	assert_int_equal(res.len, 7);
	assert_memory_equal(buf, "from fn", 7);
	assert_int_equal(res.code, 0);

	assert_int_equal(run_fn("crash", 5000, &res), -1);
	assert_true(res.exited);
	assert_int_equal(res.signo, SIGKILL);

	assert_int_equal(run_fn("hold", 5000, &res), -1);
	assert_int_equal(res.end, PROC_HELD_OPEN);
	assert_true(res.exited);
	assert_int_equal(res.code, 0);
	assert_gone(marker_pid());
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_output_and_status),
	    T(test_exit_status),
	    T(test_signal),
	    T(test_exec_failed),
	    T(test_deadline),
	    T(test_closes_stdout_and_sleeps),
	    T(test_setsid_grandchild_holds_stdout),
	    T(test_grandchild_in_group_holds_stdout),
	    T(test_detached_daemon_killed),
	    T(test_large_output),
	    T(test_environment_is_given),
	    T(test_signals_reset),
	    T(test_cancel),
	    T(test_nothing_left_to_reap),
	    T(test_function_helper),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
