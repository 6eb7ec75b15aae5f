/*
 * test_stdio.c: unit tests of netns/stdio.c, what may be the command's
 * standard input, output and error.  Each case runs in a child whose
 * descriptor 0, 1 or 2 is set up first; the child ends with 0 when
 * stdio_check decided as expected (and with the reason on the parent's
 * stderr when not).
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "netns/stdio.h"

enum kind {
	K_CLOSED,
	K_DIR,
	K_OPATH_FILE,
	K_OPATH_DIR,
	K_DEVNULL,
	K_PIPE,
	K_SOCKET,
	K_FILE,
	K_DEVICE, /* a device that is neither a terminal nor /dev/null & co */
};

/* Puts a descriptor of KIND at TARGET.  Returns 0, or -1 (no such). */
static int
make(enum kind k, int target)
{
	int fd = -1, p[2];

	switch (k) {
	case K_CLOSED:
		close(target);
		return 0;
	case K_DIR:
		fd = open("/", O_RDONLY | O_DIRECTORY);
		break;
	case K_OPATH_FILE:
		fd = open("/etc/passwd", O_PATH);
		break;
	case K_OPATH_DIR:
		fd = open("/", O_PATH);
		break;
	case K_DEVNULL:
		fd = open("/dev/null", O_RDWR);
		break;
	case K_PIPE:
		if (pipe(p) != 0)
			return -1;
		fd = p[0];
		break;
	case K_SOCKET:
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, p) != 0)
			return -1;
		fd = p[0];
		break;
	case K_FILE:
		fd = open("/etc/passwd", O_RDONLY);
		break;
	case K_DEVICE:
		/* /dev/mem, kmsg, loop-control: whichever this host has. */
		if ((fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK)) < 0 &&
		    (fd = open("/dev/loop-control", O_RDONLY)) < 0)
			fd = open("/dev/mem", O_RDONLY);
		break;
	}
	if (fd < 0)
		return -1;
	if (fd != target && (dup2(fd, target) != target || close(fd) != 0))
		return -1;
	return 0;
}

/*
 * In a child: KIND at TARGET, then stdio_check must return WANT, with
 * WHY in the reason when it fails.  Returns the child's status, 77 when
 * this host cannot make KIND.
 */
static int
run_case(enum kind k, int target, int want, const char *why)
{
	char err[512] = "";
	struct stat sb, null;
	pid_t pid;
	int w, r, keep;

	fflush(NULL);
	if ((pid = fork()) == 0) {
		keep = dup(2);
		if (make(k, target) != 0)
			_exit(77);
		r = stdio_check(err, sizeof(err));
		if (r != want || (why != NULL && strstr(err, why) == NULL)) {
			dprintf(keep, "fd %d kind %d: got %d (%s)\n", target,
			    (int)k, r, err);
			_exit(1);
		}
		/* A closed one is /dev/null now. */
		if (k == K_CLOSED &&
		    (fstat(target, &sb) != 0 || stat("/dev/null", &null) != 0 ||
		        sb.st_rdev != null.st_rdev))
			_exit(2);
		_exit(0);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &w, 0), pid);
	assert_true(WIFEXITED(w));
	return WEXITSTATUS(w);
}

static void
test_refused(void **state)
{
	static const struct {
		enum kind k;
		const char *why;
	} cases[] = {
	    {K_DIR, "is a directory"},
	    {K_OPATH_FILE, "O_PATH"},
	    {K_OPATH_DIR, "O_PATH"},
	};
	static const char *const names[] = {
	    "standard input",
	    "standard output",
	    "standard error",
	};
	char why[128];
	size_t i;
	int fd;

	(void)state;
	for (fd = 0; fd < 3; fd++)
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			snprintf(why, sizeof(why), "%s is %s", names[fd],
			    cases[i].k == K_DIR ? "a directory"
			                        : "an O_PATH descriptor");
			assert_int_equal(run_case(cases[i].k, fd, -1, why), 0);
		}
}

static void
test_accepted(void **state)
{
	static const enum kind ok[] = {
	    K_CLOSED,
	    K_DEVNULL,
	    K_PIPE,
	    K_SOCKET,
	    K_FILE,
	};
	size_t i;
	int fd;

	(void)state;
	for (fd = 0; fd < 3; fd++)
		for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
			assert_int_equal(run_case(ok[i], fd, 0, NULL), 0);
}

/* All three closed: each becomes /dev/null, in place. */
static void
test_all_closed(void **state)
{
	struct stat sb, null;
	pid_t pid;
	int w, fd, lowest;

	(void)state;
	fflush(NULL);
	if ((pid = fork()) == 0) {
		/* The lowest free descriptor above 2, to see nothing leaks. */
		if ((lowest = fcntl(0, F_DUPFD, 3)) < 0 || close(lowest) != 0)
			_exit(4);
		close(0);
		close(1);
		close(2);
		if (stdio_check(NULL, 0) != 0 || stat("/dev/null", &null) != 0)
			_exit(1);
		for (fd = 0; fd < 3; fd++)
			if (fstat(fd, &sb) != 0 || sb.st_rdev != null.st_rdev)
				_exit(2);
		/* Nothing more was left open. */
		if ((fd = fcntl(0, F_DUPFD, 3)) != lowest)
			_exit(3);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &w, 0), pid);
	assert_true(WIFEXITED(w));
	assert_int_equal(WEXITSTATUS(w), 0);
}

static void
test_other_device(void **state)
{
	int r;

	(void)state;
	r = run_case(K_DEVICE, 0, -1, "standard input is a device");
	if (r == 77) {
		print_message("skipped: no /dev/kmsg, /dev/loop-control or "
		              "/dev/mem to open here\n");
		skip();
	}
	assert_int_equal(r, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_accepted),
	    cmocka_unit_test(test_all_closed),
	    cmocka_unit_test(test_other_device),
	};

	return cmocka_run_group_tests_name("stdio", tests, NULL, NULL);
}
