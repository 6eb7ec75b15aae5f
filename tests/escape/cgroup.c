/*
 * cgroup.c (probe_cgroup): tries to take more memory than the sandbox's
 * cgroup allows, and to raise or leave that cgroup, for escape_cgroup.sh.
 *
 *   probe_cgroup hog MB N  N children, one after the other, each maps and
 *                          touches MB MiB and holds it until all have
 *                          tried; prints "hog: held H of N, killed K"
 *                          (K: ended by a signal, as the OOM killer does)
 *   probe_cgroup bomb K    K forkers, each forking until refused (at most
 *                          100000), all holding until every forker has
 *                          reported; prints "bomb: K forkers held T"
 *                          (T processes alive at once besides them)
 *   probe_cgroup raise     finds its own cgroup (a pinhole-* directory
 *                          under /sys/fs/cgroup whose cgroup.procs lists
 *                          it) and tries to write its limit files and
 *                          to move itself to the parent; prints
 *                          "found DIR", then "write FILE: ok" or
 *                          "write FILE: refused ERRNO" per attempt, or
 *                          "raise: no cgroup found"
 *
 * It decides nothing: the scenario does.
 */
#include <sys/mman.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HOG_MAX 16

/* A child: touches MB MiB, says so with one byte on FD, holds until EOF. */
static void __attribute__((noreturn)) hog_child(long mb, int fd, int hold)
{
	size_t len = (size_t)mb << 20;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char b;

	if (m == MAP_FAILED)
		_exit(3);
	memset(m, 1, len);
	if (write(fd, "y", 1) != 1)
		_exit(4);
	(void)read(hold, &b, 1);
	_exit(0);
}

static int
hog(long mb, long n)
{
	int hold[2], rep[2], held = 0, killed = 0, w;
	pid_t kids[HOG_MAX];
	long i;
	char b;

	if (n > HOG_MAX || pipe(hold) != 0)
		return 1;
	for (i = 0; i < n; i++) {
		if (pipe(rep) != 0 || (kids[i] = fork()) < 0)
			return 1;
		if (kids[i] == 0) {
			close(hold[1]);
			close(rep[0]);
			hog_child(mb, rep[1], hold[0]);
		}
		close(rep[1]);
		/* One byte: it holds MB MiB; end of file: it died trying. */
		while (read(rep[0], &b, 1) < 0 && errno == EINTR)
			;
		close(rep[0]);
	}
	close(hold[1]); /* all have tried: let go */
	for (i = 0; i < n; i++) {
		while (waitpid(kids[i], &w, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(w) && WEXITSTATUS(w) == 0)
			held++;
		else if (WIFSIGNALED(w))
			killed++;
	}
	printf("hog: held %d of %ld, killed %d\n", held, n, killed);
	return 0;
}

/* A forker: forks holders until refused, reports how many on FD. */
static void __attribute__((noreturn)) forker(int fd, int hold)
{
	long k;
	pid_t c;
	char b;

	for (k = 0; k < 100000; k++) {
		if ((c = fork()) < 0)
			break;
		if (c == 0) {
			close(fd); /* the end of file of the reports */
			(void)read(hold, &b, 1);
			_exit(0);
		}
	}
	if (write(fd, &k, sizeof(k)) != sizeof(k))
		_exit(4);
	close(fd);
	(void)read(hold, &b, 1);
	_exit(0);
}

static int
bomb(long n)
{
	int hold[2], rep[2];
	long i, k, total = 0;
	pid_t c;

	if (pipe(hold) != 0 || pipe(rep) != 0)
		return 1;
	for (i = 0; i < n; i++) {
		if ((c = fork()) < 0)
			break;
		if (c == 0) {
			close(hold[1]);
			close(rep[0]);
			forker(rep[1], hold[0]);
		}
	}
	close(rep[1]);
	for (k = 0; read(rep[0], &k, sizeof(k)) == sizeof(k); k = 0)
		total += k;
	close(hold[1]); /* every forker reported, or died: let go */
	while (wait(NULL) > 0 || errno == EINTR)
		;
	printf("bomb: %ld forkers held %ld\n", i, total);
	return 0;
}

/* Whether DIR/cgroup.procs lists this process. */
static int
lists_me(const char *dir)
{
	char path[PATH_MAX + 16], line[32];
	int r = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	while (!r && fgets(line, sizeof(line), f) != NULL)
		r = atol(line) == (long)getpid();
	fclose(f);
	return r;
}

/* A pinhole-* directory under DIR (depth bounded) that holds this one. */
static int
find(const char *dir, int depth, char *out, size_t len)
{
	char sub[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int r = 0;

	if (depth > 4 || (d = opendir(dir)) == NULL)
		return 0;
	while (!r && (e = readdir(d)) != NULL) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", dir,
		        e->d_name) >= sizeof(sub))
			continue;
		if (strncmp(e->d_name, "pinhole-", 8) == 0 && lists_me(sub)) {
			snprintf(out, len, "%s", sub);
			r = 1;
		} else
			r = find(sub, depth + 1, out, len);
	}
	closedir(d);
	return r;
}

static void
try_write(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX + 32];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((fd = open(path, O_WRONLY)) < 0) {
		if (errno != ENOENT)
			printf("write %s: refused %s\n", name,
			    strerrorname_np(errno));
		return;
	}
	if (write(fd, text, strlen(text)) < 0)
		printf("write %s: refused %s\n", name, strerrorname_np(errno));
	else
		printf("write %s: ok\n", name);
	close(fd);
}

static int
raise_limits(void)
{
	static const char *const v1[] = {"pids", "memory", "unified"};
	static const char *const v2[] = {""};
	/* cgroup v2 alone is mounted at /sys/fs/cgroup itself. */
	int pure = access("/sys/fs/cgroup/cgroup.procs", F_OK) == 0;
	const char *const *hier = pure ? v2 : v1;
	size_t i, nh = pure ? 1 : 3;
	char dir[PATH_MAX], top[64], me[32];
	int found = 0;

	snprintf(me, sizeof(me), "%d\n", (int)getpid());
	for (i = 0; i < nh; i++) {
		snprintf(top, sizeof(top), "/sys/fs/cgroup%s%s",
		    hier[i][0] ? "/" : "", hier[i]);
		if (!find(top, 0, dir, sizeof(dir)))
			continue;
		found = 1;
		printf("found %s\n", dir);
		try_write(dir, "pids.max", "max\n");
		try_write(dir, "memory.limit_in_bytes", "-1\n");
		try_write(dir, "memory.memsw.limit_in_bytes", "-1\n");
		try_write(dir, "memory.max", "max\n");
		*strrchr(dir, '/') = '\0';
		try_write(dir, "cgroup.procs", me);
	}
	if (!found)
		printf("raise: no cgroup found\n");
	return 0;
}

int
main(int argc, char **argv)
{
	long mb, n;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 2 && strcmp(argv[1], "raise") == 0)
		return raise_limits();
	if (argc == 3 && strcmp(argv[1], "bomb") == 0 &&
	    (n = atol(argv[2])) > 0 && n <= HOG_MAX)
		return bomb(n);
	if (argc == 4 && strcmp(argv[1], "hog") == 0 &&
	    (mb = atol(argv[2])) > 0 && mb < 4096 && (n = atol(argv[3])) > 0 &&
	    n <= HOG_MAX)
		return hog(mb, n);
	fprintf(stderr, "usage: probe_cgroup hog MB N | bomb K | raise\n");
	return 2;
}
