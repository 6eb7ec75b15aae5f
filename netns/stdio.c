/*
 * stdio.c: standard input, output and error of the sandboxed command.
 */
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "common/ph_err.h"
#include "netns/stdio.h"

static const char *const names[] = {
    "standard input",
    "standard output",
    "standard error",
};

/* A closed descriptor FD becomes /dev/null. */
static int
fill(int fd)
{
	int n = open("/dev/null", (fd == 0 ? O_RDONLY : O_WRONLY));

	if (n < 0)
		return -1;
	if (n != fd) {
		if (dup2(n, fd) != fd) {
			close(n);
			return -1;
		}
		close(n);
	}
	return 0;
}

/* The memory devices that hold nothing of the host: null, zero, ... */
static int
harmless_device(dev_t rdev)
{
	unsigned minor_ = minor(rdev);

	return major(rdev) == 1 &&
	    (minor_ == 3 || minor_ == 5 || minor_ == 7 || minor_ == 8 ||
	        minor_ == 9);
}

/* What descriptor FD is, when it may not go in; NULL when it may. */
static const char *
refusal(int fd, int flags, const struct stat *sb)
{
	if (flags & O_PATH)
		return "an O_PATH descriptor";
	switch (sb->st_mode & S_IFMT) {
	case S_IFREG:
	case S_IFIFO:
	case S_IFSOCK:
		return NULL;
	case S_IFCHR:
		return isatty(fd) || harmless_device(sb->st_rdev) ? NULL
		                                                  : "a device";
	case S_IFDIR:
		return "a directory";
	default:
		return "neither a file, a pipe, a socket nor a terminal";
	}
}

int
stdio_check(char *err, size_t errlen)
{
	struct stat sb;
	const char *why;
	int fd, flags;

	for (fd = 0; fd < 3; fd++) {
		if ((flags = fcntl(fd, F_GETFL)) < 0 && errno == EBADF) {
			if (fill(fd) != 0) {
				ph_errf(err, errlen,
				    "%s is closed, and /dev/null: %s",
				    names[fd], strerror(errno));
				return -1;
			}
			continue;
		}
		if (flags < 0 || fstat(fd, &sb) != 0) {
			ph_errf(
			    err, errlen, "%s: %s", names[fd], strerror(errno));
			return -1;
		}
		if ((why = refusal(fd, flags, &sb)) != NULL) {
			ph_errf(err, errlen,
			    "%s is %s, which would give the sandbox a way "
			    "around its mount view; give a file, a pipe or a "
			    "terminal",
			    names[fd], why);
			return -1;
		}
	}
	return 0;
}
