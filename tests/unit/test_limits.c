/*
 * test_limits.c: unit tests of netns/limits.c.  The parsers are table
 * driven; limits_apply_pids runs for real in PID 1 of new user and PID
 * namespaces (as pinhole run's PID 1 does), where a bounded fork bomb
 * must stop at the limit and the host's pid_max must stay as it was.
 */
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
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

#include "netns/limits.h"

static void
test_parse_size(void **state)
{
	static const struct {
		const char *in;
		int ok;
		unsigned long long want;
	} cases[] = {
	    {"1", 1, 1}, {"4096", 1, 4096}, {"64K", 1, 64ULL << 10},
	    {"64k", 1, 64ULL << 10}, {"512M", 1, 512ULL << 20},
	    {"512MB", 1, 512ULL << 20}, {"512MiB", 1, 512ULL << 20},
	    {"2G", 1, 2ULL << 30}, {"1T", 1, 1ULL << 40}, {"0", 0, 0},
	    {"0M", 0, 0}, {"", 0, 0}, {"M", 0, 0}, {"-1", 0, 0}, {" 1", 0, 0},
	    {"1 M", 0, 0}, {"1X", 0, 0}, {"1MM", 0, 0}, {"1Mb", 0, 0},
	    {"99999999999999999999", 0, 0},
	    {"17179869184G", 0, 0}, /* 2^64: overflows */
	};
	unsigned long long v;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v = 0;
		if (limits_parse_size(cases[i].in, &v) !=
		    (cases[i].ok ? 0 : -1))
			fail_msg("'%s': wrong verdict", cases[i].in);
		if (cases[i].ok && v != cases[i].want)
			fail_msg("'%s': %llu", cases[i].in, v);
	}
	assert_int_equal(limits_parse_size(NULL, &v), -1);
}

static void
test_parse_pids(void **state)
{
	static const struct {
		const char *in;
		int ok;
		unsigned long want;
	} cases[] = {
	    {"1", 1, 1},
	    {"64", 1, 64},
	    {"4096", 1, 4096},
	    {"4194304", 1, 4194304},
	    {"4194305", 0, 0},
	    {"0", 0, 0},
	    {"", 0, 0},
	    {"-5", 0, 0},
	    {"5x", 0, 0},
	    {"none", 0, 0},
	};
	unsigned long v;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v = 0;
		if (limits_parse_pids(cases[i].in, &v) !=
		    (cases[i].ok ? 0 : -1))
			fail_msg("'%s': wrong verdict", cases[i].in);
		if (cases[i].ok && v != cases[i].want)
			fail_msg("'%s': %lu", cases[i].in, v);
	}
}

static long
host_pid_max(void)
{
	char buf[32] = "";
	int fd = open("/proc/sys/kernel/pid_max", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, buf, sizeof(buf) - 1) < 0)
			buf[0] = '\0';
		close(fd);
	}
	return atol(buf);
}

/* Writes TEXT to /proc/self/NAME; exits 90 on failure. */
static void
write_proc(const char *name, const char *text)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/self/%s", name);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0 ||
	    write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		_exit(90);
	close(fd);
}

/*
 * In new user and PID namespaces, PID 1 applies L and forks children
 * that wait on a pipe, up to TRIES; returns how many it got (-1 when the
 * namespaces could not be made), through the exit status.
 */
static int
bomb(const struct limits *l, int tries)
{
	char map[64], report[320], err[256];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	pid_t pid, g;
	int w, p[2];

	fflush(NULL);
	if ((pid = fork()) == 0) {
		if (unshare(CLONE_NEWUSER | CLONE_NEWPID) != 0)
			_exit(91);
		write_proc("setgroups", "deny");
		snprintf(map, sizeof(map), "%u %u 1\n", uid, uid);
		write_proc("uid_map", map);
		snprintf(map, sizeof(map), "%u %u 1\n", gid, gid);
		write_proc("gid_map", map);
		if ((g = fork()) == 0) {
			int n = 0;
			pid_t c;

			if (limits_apply_pids(l, report, sizeof(report), err,
			        sizeof(err)) != 0) {
				fprintf(stderr, "limits_apply_pids: %s\n", err);
				_exit(92);
			}
			if (pipe(p) != 0)
				_exit(93);
			for (n = 0; n < tries; n++) {
				if ((c = fork()) < 0)
					break;
				if (c == 0) {
					char b;

					close(p[1]);
					(void)read(p[0], &b, 1);
					_exit(0);
				}
			}
			/* PID 1 exits: the kernel kills the rest. */
			_exit(n > 250 ? 250 : n);
		}
		if (g < 0 || waitpid(g, &w, 0) != g)
			_exit(94);
		_exit(WIFEXITED(w) ? WEXITSTATUS(w) : 95);
	}
	if (pid < 0 || waitpid(pid, &w, 0) != pid || !WIFEXITED(w))
		return -1;
	return WEXITSTATUS(w);
}

/* The bomb stops at the limit, and the host's pid_max stays. */
static void
test_apply_pids(void **state)
{
	struct limits l = {40, 0};
	long before = host_pid_max();
	int got;

	(void)state;
	got = bomb(&l, 1000);
	if (got >= 90 && got <= 95) {
		print_message("skipped: no user namespace here (%d)\n", got);
		skip();
	}
	if (geteuid() != 0)
		/*
		 * RLIMIT_NPROC counts the user in the new user namespace:
		 * the child that made it and PID 1 are two of the 40.
		 */
		assert_int_equal(got, 38);
	else if (limits_pidns_max())
		/* Root: only pid_max binds (pids 2 .. 339). */
		assert_true(got > 39 && got < 340);
	else
		print_message("root on a kernel without a per-namespace "
		              "pid_max: no pids limit (%d forks)\n",
		    got);
	assert_int_equal(host_pid_max(), before);
}

/* Without a limit the same bomb gets further (up to the cap of 250). */
static void
test_apply_none(void **state)
{
	struct limits l = {0, 0};
	int got;

	(void)state;
	got = bomb(&l, 100);
	if (got >= 90 && got <= 95) {
		print_message("skipped: no user namespace here (%d)\n", got);
		skip();
	}
	assert_int_equal(got, 100);
}

/* Built with AddressSanitizer? */
static int
sanitized(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	return 1;
#endif
#endif
	return 0;
}

/* RLIMIT_AS: a mapping above the limit fails, one below works. */
static void
test_apply_memory(void **state)
{
	struct limits l = {0, 64ULL << 20};
	char report[320] = "", err[256] = "";
	pid_t pid;
	int w;

	(void)state;
	if (sanitized()) {
		print_message("skipped: AddressSanitizer's shadow memory "
		              "cannot live under RLIMIT_AS\n");
		skip();
	}
	fflush(NULL);
	if ((pid = fork()) == 0) {
		void *big, *small;

		if (limits_apply_pids(
		        &l, report, sizeof(report), err, sizeof(err)) != 0 ||
		    strstr(report, "memory: 64 MiB per process") == NULL ||
		    limits_apply_memory(&l, err, sizeof(err)) != 0)
			_exit(1);
		big = mmap(NULL, 128ULL << 20, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		small = mmap(NULL, 1ULL << 20, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		_exit(
		    big == MAP_FAILED && errno == ENOMEM && small != MAP_FAILED
		        ? 0
		        : 2);
	}
	assert_int_equal(waitpid(pid, &w, 0), pid);
	assert_true(WIFEXITED(w));
	assert_int_equal(WEXITSTATUS(w), 0);
}

/* A limit is never raised: a lower hard limit stays. */
static void
test_apply_never_raises(void **state)
{
	struct limits l = {0, 64ULL << 20};
	char err[256];
	struct rlimit rl;
	pid_t pid;
	int w;

	(void)state;
	fflush(NULL);
	if ((pid = fork()) == 0) {
		rl.rlim_cur = rl.rlim_max = 32ULL << 20;
		if (setrlimit(RLIMIT_AS, &rl) != 0)
			_exit(1);
		if (limits_apply_memory(&l, err, sizeof(err)) != 0 ||
		    getrlimit(RLIMIT_AS, &rl) != 0 ||
		    rl.rlim_max != 32ULL << 20)
			_exit(2);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &w, 0), pid);
	assert_true(WIFEXITED(w));
	assert_int_equal(WEXITSTATUS(w), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_size),
	    cmocka_unit_test(test_parse_pids),
	    cmocka_unit_test(test_apply_pids),
	    cmocka_unit_test(test_apply_none),
	    cmocka_unit_test(test_apply_memory),
	    cmocka_unit_test(test_apply_never_raises),
	};

	return cmocka_run_group_tests_name("limits", tests, NULL, NULL);
}
