/*
 * test_hostinfo.c: unit tests of netns/hostinfo.c, in children: the
 * hostname in new user and UTS namespaces, and the command line the
 * kernel shows for a process that changed its own.
 */
#include <sys/wait.h>

#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "netns/hostinfo.h"

static char **test_argv;

static int
child_status(pid_t pid)
{
	int w;

	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &w, 0), pid);
	assert_true(WIFEXITED(w));
	return WEXITSTATUS(w);
}

static void
test_uts(void **state)
{
	char host[256], before[256], err[256];
	pid_t pid;
	int st;

	(void)state;
	assert_int_equal(gethostname(before, sizeof(before)), 0);
	fflush(NULL);
	if ((pid = fork()) == 0) {
		if (unshare(CLONE_NEWUSER | CLONE_NEWUTS) != 0)
			_exit(77);
		if (hostinfo_uts(err, sizeof(err)) != 0 ||
		    gethostname(host, sizeof(host)) != 0 ||
		    strcmp(host, "pinhole") != 0 ||
		    getdomainname(host, sizeof(host)) != 0 ||
		    strcmp(host, "(none)") != 0)
			_exit(1);
		_exit(0);
	}
	if ((st = child_status(pid)) == 77) {
		print_message("skipped: no user namespace here\n");
		skip();
	}
	assert_int_equal(st, 0);
	/* The host's stays. */
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	assert_string_equal(host, before);
}

/* /proc/self/cmdline: "pinhole-init" and NULs only; comm the same. */
static void
test_title(void **state)
{
	char buf[8192], err[256];
	ssize_t n, i;
	pid_t pid;
	int fd;

	(void)state;
	/* The test's own argv holds a recognisable word. */
	assert_non_null(test_argv[1]);
	assert_string_equal(test_argv[1], "policy-path-secret");
	fflush(NULL);
	if ((pid = fork()) == 0) {
		if (hostinfo_title(err, sizeof(err)) != 0)
			_exit(1);
		if ((fd = open("/proc/self/cmdline", O_RDONLY)) < 0)
			_exit(2);
		n = read(fd, buf, sizeof(buf));
		close(fd);
		if (n < 13 || memcmp(buf, "pinhole-init", 13) != 0)
			_exit(3);
		for (i = 13; i < n; i++)
			if (buf[i] != '\0')
				_exit(4);
		if ((fd = open("/proc/self/comm", O_RDONLY)) < 0)
			_exit(5);
		n = read(fd, buf, sizeof(buf));
		close(fd);
		if (n != 13 || memcmp(buf, "pinhole-init\n", 13) != 0)
			_exit(6);
		_exit(0);
	}
	assert_int_equal(child_status(pid), 0);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_uts),
	    cmocka_unit_test(test_title),
	};

	/* Re-run with a word in argv for test_title to look for. */
	if (argc < 2 || strcmp(argv[1], "policy-path-secret") != 0) {
		char *again[] = {argv[0], "policy-path-secret", NULL};

		execv("/proc/self/exe", again);
		return 1;
	}
	test_argv = argv;
	return cmocka_run_group_tests_name("hostinfo", tests, NULL, NULL);
}
