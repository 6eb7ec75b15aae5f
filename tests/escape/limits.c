/*
 * limits.c (probe_limits): tries to take more than --limit-pids and
 * --limit-memory allow, for escape_sandbox.sh.
 *
 *   probe_limits fork N    forks up to N children that wait until the
 *                          prober ends (a bounded fork bomb); prints
 *                          "fork: ok N" or "fork: refused ERRNO after K"
 *   probe_limits alloc MB  maps and touches MB MiB; prints "alloc: ok"
 *                          or "alloc: refused ERRNO"
 *
 * It decides nothing: the scenario does.  The children end on their own
 * when the prober exits (their pipe reaches end of file).
 */
#include <sys/mman.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int
bomb(long n)
{
	long k;
	pid_t c;
	int p[2];
	char b;

	if (pipe(p) != 0)
		return 1;
	for (k = 0; k < n; k++) {
		if ((c = fork()) < 0) {
			printf("fork: refused %s after %ld\n",
			    strerrorname_np(errno), k);
			return 0;
		}
		if (c == 0) {
			close(p[1]);
			(void)read(p[0], &b, 1);
			_exit(0);
		}
	}
	printf("fork: ok %ld\n", n);
	return 0;
}

static int
alloc(long mb)
{
	size_t len = (size_t)mb << 20;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED) {
		printf("alloc: refused %s\n", strerrorname_np(errno));
		return 0;
	}
	memset(m, 1, len);
	printf("alloc: ok\n");
	return 0;
}

int
main(int argc, char **argv)
{
	long n;

	if (argc != 3 || (n = atol(argv[2])) <= 0 || n > 100000) {
		fprintf(stderr, "usage: probe_limits fork N | alloc MB\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	if (strcmp(argv[1], "fork") == 0)
		return bomb(n);
	if (strcmp(argv[1], "alloc") == 0)
		return alloc(n);
	fprintf(stderr, "usage: probe_limits fork N | alloc MB\n");
	return 2;
}
