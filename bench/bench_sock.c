/*
 * bench_sock.c: what the socket supervisor costs a command, run inside
 * `pinhole run` (and bare, to compare).  bench/bench_sock.sh runs it.
 *
 *   bench_sock connect N     N connect()s to a Unix listener bound here
 *   bench_sock sendmsg MIB   MIB MiB through a stream socketpair by
 *                            sendmsg() of 64 KiB (every one emulated)
 *   bench_sock send MIB      the same by send() (never trapped)
 *
 * Prints one line: the name, the count, the seconds, and per call (us)
 * or throughput (MiB/s).
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (64 * 1024)

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
bench_connect(long n)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	socklen_t len;
	double t0;
	long i;
	int l, fd;

	snprintf(a.sun_path, sizeof(a.sun_path), "bench.sock");
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
	    strlen(a.sun_path) + 1);
	unlink(a.sun_path);
	if ((l = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 ||
	    bind(l, (struct sockaddr *)&a, len) != 0 || listen(l, 16) != 0)
		return 1;
	t0 = now();
	for (i = 0; i < n; i++) {
		if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 ||
		    connect(fd, (struct sockaddr *)&a, len) != 0)
			return 1;
		close(fd);
		close(accept(l, NULL, NULL));
	}
	t0 = now() - t0;
	printf("connect %ld %.3f s %.1f us/call\n", n, t0, t0 / n * 1e6);
	unlink(a.sun_path);
	return 0;
}

static void *
drain(void *arg)
{
	static char buf[CHUNK];
	int fd = *(int *)arg;

	while (read(fd, buf, sizeof(buf)) > 0)
		;
	return NULL;
}

static int
bench_bulk(int use_sendmsg, long mib)
{
	static char buf[CHUNK];
	struct iovec iov = {buf, sizeof(buf)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	long total = mib << 20, done = 0;
	pthread_t t;
	double t0;
	ssize_t n;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 ||
	    pthread_create(&t, NULL, drain, &sv[1]) != 0)
		return 1;
	t0 = now();
	while (done < total) {
		n = use_sendmsg ? sendmsg(sv[0], &m, 0)
		                : send(sv[0], buf, sizeof(buf), 0);
		if (n <= 0)
			return 1;
		done += n;
	}
	close(sv[0]);
	pthread_join(t, NULL);
	t0 = now() - t0;
	printf("%s %ld MiB %.3f s %.0f MiB/s\n",
	    use_sendmsg ? "sendmsg" : "send", mib, t0, mib / t0);
	return 0;
}

int
main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 0;

	if (argc == 3 && strcmp(argv[1], "connect") == 0)
		return bench_connect(n);
	if (argc == 3 && strcmp(argv[1], "sendmsg") == 0)
		return bench_bulk(1, n);
	if (argc == 3 && strcmp(argv[1], "send") == 0)
		return bench_bulk(0, n);
	fprintf(
	    stderr, "usage: bench_sock connect N | sendmsg MIB | send MIB\n");
	return 2;
}
