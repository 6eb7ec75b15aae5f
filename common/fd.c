/*
 * fd.c: descriptor helpers (see fd.h).
 */
#include <errno.h>
#include <unistd.h>

#include "common/fd.h"

ssize_t
fd_read_all(int fd, void *p, size_t cap)
{
	char *buf = p;
	size_t len = 0;
	ssize_t n;

	while (len < cap) {
		n = read(fd, buf + len, cap - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	return (ssize_t)len;
}
