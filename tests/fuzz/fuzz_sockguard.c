/*
 * fuzz_sockguard.c: libFuzzer target for netns/sockguard.c's reading of
 * the control messages of a sendmsg the sandbox makes (the supervisor
 * copies them out of the sandbox's memory and rebuilds them).
 *
 * The input is the control buffer, at most SOCKGUARD_CONTROL_MAX bytes
 * as send_one allows.  Descriptors are "taken" by a stand-in that hands
 * back numbers from 1000 up (nothing is opened or closed).
 *
 * Checks: the output fits its buffer and every message in it is whole;
 * no SCM_CREDENTIALS survives; each SCM_RIGHTS descriptor in the output
 * is one the stand-in handed out, and their count is *nfds.  A violation
 * abort()s.
 *
 *	./fuzz_sockguard -max_total_time=60 tests/fuzz/corpus/sockguard
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SOCKGUARD_INTERNAL
#include "netns/sockguard.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define FD_BASE 1000

static int handed;

static int
fake_getfd(void *arg, int fd)
{
	(void)arg;
	if (fd < 0) {
		errno = EBADF;
		return -1;
	}
	return FD_BASE + handed++;
}

static void
check(int ok)
{
	if (!ok)
		abort();
}

/* Walks OUT (LEN bytes) as the kernel would; returns the fds seen. */
static int
walk(void *out, size_t len)
{
	struct msghdr m = {.msg_control = out, .msg_controllen = len};
	struct cmsghdr *cm;
	size_t n, i;
	int fd, seen = 0;

	for (cm = CMSG_FIRSTHDR(&m); cm != NULL; cm = CMSG_NXTHDR(&m, cm)) {
		check(cm->cmsg_len >= sizeof(*cm));
		check((char *)cm + cm->cmsg_len <= (char *)out + len);
		check(!(cm->cmsg_level == SOL_SOCKET &&
		    cm->cmsg_type == SCM_CREDENTIALS));
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			memcpy(
			    &fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
			check(fd >= FD_BASE && fd < FD_BASE + handed);
			seen++;
		}
	}
	return seen;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static union {
		char b[SOCKGUARD_CONTROL_MAX];
		struct cmsghdr align;
	} in, out;
	int fds[SOCKGUARD_CONTROL_MAX / sizeof(int)], nfds = 0, r;
	size_t outlen = 0;

	if (size > sizeof(in.b))
		return 0;
	memcpy(in.b, data, size);
	handed = 0;
	memset(out.b, 0xa5, sizeof(out.b));
	r = sockguard_control(
	    in.b, size, out.b, &outlen, fds, &nfds, fake_getfd, NULL);
	check(nfds == handed);
	if (r != 0)
		return 0;
	check(outlen <= sizeof(out.b));
	check(walk(out.b, outlen) == nfds);
	return 0;
}
