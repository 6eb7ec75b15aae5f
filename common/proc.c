/*
 * proc.c: a helper with a pipe, a deadline, its whole process tree killed
 * and reaped at the end.
 *
 * Three processes: the caller, a supervisor S it forks, and the helper H
 * that S forks.  S is a child subreaper, so every descendant of H that
 * loses its parent is re-parented to S, not to init: S can find them all
 * (as its children, in /proc) however they detach (setsid, double fork).
 * H runs in its own process group, so one kill() reaches the usual case.
 *
 * The caller reads H's output directly from a pipe; S tells the caller
 * when H exited (over a control pipe) without reaping it, so that H's pid,
 * which is also its group id, cannot be reused before the group is
 * killed.  The caller closes the "go" pipe when it is done (or dies): S
 * then kills H's group and every process below it, reaps them, sends a
 * last message with counts and exits.  S blocks every signal: a SIGINT or
 * SIGTERM meant for pinhole does not stop the cleanup.
 *
 * The caller may be one thread among others, so S and H call only
 * async-signal-safe functions (no malloc, no stdio) before exec.
 */
#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/proc.h"

/* What the supervisor tells the caller. */
enum msg_kind {
	MSG_EXITED = 1, /* H exited (code, signo, exec_err) */
	MSG_FINAL, /* cleanup done (killed, survivors) */
	MSG_FAILED, /* S could not start H (err) */
};

struct msg {
	int kind;
	int code;
	int signo;
	int err;
	unsigned killed;
	unsigned survivors;
};

/* One entry of getdents64, as the kernel lays it out. */
struct dent64 {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
send_msg(int fd, const struct msg *m)
{
	/* Smaller than PIPE_BUF: written whole or not at all. */
	while (write(fd, m, sizeof(*m)) == -1 && errno == EINTR)
		;
}

/* Closes every descriptor except those in KEEP (ascending, n > 0). */
static void
close_others(const int *keep, size_t n)
{
	unsigned lo = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if ((unsigned)keep[i] > lo)
			(void)close_range(lo, (unsigned)keep[i] - 1, 0);
		lo = (unsigned)keep[i] + 1;
	}
	(void)close_range(lo, ~0U, 0);
}

/* Sorts a handful of descriptors, in place. */
static void
sort_fds(int *fds, size_t n)
{
	size_t i, j;
	int t;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && fds[j - 1] > fds[j]; j--) {
			t = fds[j];
			fds[j] = fds[j - 1];
			fds[j - 1] = t;
		}
}

/*
 * In H: its own group, stdin DEVNULL, stdout OUT, stderr inherited, ERRFD
 * as fd 3 (close-on-exec, for an exec failure), nothing else open, every
 * signal at its default, none blocked; then exec, or SPEC->fn.
 */
static void __attribute__((noreturn))
helper_exec(const struct proc_spec *spec, int devnull, int out, int errfd)
{
	struct sigaction sa;
	sigset_t none;
	int e, sig;

	(void)setpgid(0, 0);
	/* If S is killed, H goes too; its descendants are S's to find. */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	/* Move all three above fd 3 first so no dup2 clobbers another. */
	if ((devnull = fcntl(devnull, F_DUPFD, 4)) == -1 ||
	    (out = fcntl(out, F_DUPFD, 4)) == -1 ||
	    (errfd = fcntl(errfd, F_DUPFD, 4)) == -1 ||
	    dup2(devnull, STDIN_FILENO) == -1 ||
	    dup2(out, STDOUT_FILENO) == -1 || dup2(errfd, 3) == -1 ||
	    fcntl(3, F_SETFD, FD_CLOEXEC) == -1 || close_range(4, ~0U, 0) == -1)
		_exit(127);
	/* Ignored signals survive exec: give the helper the defaults. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (sig = 1; sig < NSIG; sig++)
		(void)sigaction(sig, &sa, NULL);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	if (spec->fn != NULL) {
		/* No exec to report; FN's children must not hold fd 3. */
		close(3);
		spec->fn(spec->arg);
		_exit(0);
	}
	execvpe(spec->argv[0], spec->argv, spec->envp);
	e = errno;
	(void)!write(3, &e, sizeof(e));
	_exit(127);
}

/* Parses a decimal pid; -1 if NAME is not one. */
static pid_t
parse_pid(const char *name)
{
	pid_t v = 0;

	if (*name == '\0')
		return -1;
	for (; *name != '\0'; name++) {
		if (*name < '0' || *name > '9' || v > 100000000)
			return -1;
		v = v * 10 + (*name - '0');
	}
	return v;
}

/* The parent pid in /proc/PID/stat (DFD is /proc), or -1. */
static pid_t
ppid_of(int dfd, const char *pid)
{
	char path[48] = "", buf[512];
	const char *p = NULL;
	ssize_t n, i;
	pid_t v = 0;
	int fd;

	if (strlen(pid) > 20)
		return -1;
	strcpy(path, pid);
	strcat(path, "/stat");
	if ((fd = openat(dfd, path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* "pid (comm) S ppid ...": comm may hold ')' and spaces. */
	for (i = n - 1; i >= 0; i--)
		if (buf[i] == ')') {
			p = buf + i;
			break;
		}
	if (p == NULL || strlen(p) < 5)
		return -1;
	for (p += 4; *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (*p - '0');
	return v;
}

/*
 * SIGKILLs every process whose parent is S; returns how many there were.
 * Without /proc, only the group kill applies (returns 0).
 */
static unsigned
kill_children(void)
{
	char buf[4096];
	struct dent64 *d;
	pid_t self = getpid(), pid;
	unsigned found = 0;
	ssize_t n, off;
	int dfd;

	if ((dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return 0;
	while ((n = getdents64(dfd, buf, sizeof(buf))) > 0)
		for (off = 0; off < n; off += d->reclen) {
			d = (struct dent64 *)(buf + off);
			if ((pid = parse_pid(d->name)) > 0 &&
			    ppid_of(dfd, d->name) == self) {
				found++;
				(void)kill(pid, SIGKILL);
			}
		}
	close(dfd);
	return found;
}

static void
drain(int sfd)
{
	struct signalfd_siginfo si;

	while (read(sfd, &si, sizeof(si)) > 0)
		;
}

/*
 * In S, until the caller closes GOR: tells the caller when H exits, with
 * the errno of a failed exec read from ERRFD, leaving H a zombie.
 */
static void
watch(pid_t pid, int gor, int sfd, int errfd, int ctlw)
{
	struct pollfd pfd[2] = {{gor, POLLIN, 0}, {sfd, POLLIN, 0}};
	struct msg m = {.kind = MSG_EXITED};
	siginfo_t si;
	int exited = 0;

	for (;;) {
		if (poll(pfd, exited ? 1 : 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (pfd[0].revents != 0)
			return;
		if (exited || pfd[1].revents == 0)
			continue;
		drain(sfd);
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)pid, &si,
		        WEXITED | WNOHANG | WNOWAIT) != 0 ||
		    si.si_pid != pid)
			continue;
		exited = 1;
		if (si.si_code == CLD_EXITED)
			m.code = si.si_status;
		else
			m.signo = si.si_status;
		/* H is gone, so was its copy of the write end. */
		if (read(errfd, &m.err, sizeof(m.err)) !=
		    (ssize_t)sizeof(m.err))
			m.err = 0;
		send_msg(ctlw, &m);
	}
}

/*
 * In S: kills H's group, then every process left below S, until none is
 * left or PROC_REAP_MS passed.  H's pid is still unreaped here, so the
 * group id cannot name another group.
 */
static void
finish(pid_t pid, int sfd, int ctlw)
{
	struct msg m = {.kind = MSG_FINAL};
	struct pollfd pfd = {sfd, POLLIN, 0};
	int64_t deadline = now_ms() + PROC_REAP_MS, left;
	unsigned found;
	pid_t w;
	int st;

	(void)kill(-pid, SIGKILL);
	(void)kill(pid, SIGKILL);
	for (;;) {
		while ((w = waitpid(-1, &st, WNOHANG)) > 0)
			if (w != pid && WIFSIGNALED(st) &&
			    WTERMSIG(st) == SIGKILL)
				m.killed++;
		if (w == -1 && errno == ECHILD)
			break;
		found = kill_children();
		if ((left = deadline - now_ms()) <= 0) {
			m.survivors = found > 0 ? found : 1;
			break;
		}
		if (poll(&pfd, 1, (int)left) > 0)
			drain(sfd);
	}
	send_msg(ctlw, &m);
}

/* S: starts H, reports, cleans up.  Never returns. */
static void __attribute__((noreturn)) supervise(
    const struct proc_spec *spec, int devnull, int outw, int gor, int ctlw)
{
	struct msg m = {.kind = MSG_FAILED};
	int keep[] = {0, 1, 2, devnull, outw, gor, ctlw};
	int errp[2] = {-1, -1}, sfd = -1;
	sigset_t all, chld;
	pid_t pid = -1;

	sigfillset(&all);
	(void)sigprocmask(SIG_SETMASK, &all, NULL);
	/* Copies of the caller's sockets would keep its peers waiting. */
	sort_fds(keep, sizeof(keep) / sizeof(keep[0]));
	close_others(keep, sizeof(keep) / sizeof(keep[0]));
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == -1 ||
	    (sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK)) == -1 ||
	    pipe2(errp, O_CLOEXEC) == -1 || (pid = fork()) == -1) {
		m.err = errno;
		send_msg(ctlw, &m);
		_exit(1);
	}
	if (pid == 0)
		helper_exec(spec, devnull, outw, errp[1]);
	/* Both sides set the group, so neither can act before it exists. */
	(void)setpgid(pid, pid);
	close(outw);
	close(errp[1]);
	watch(pid, gor, sfd, errp[0], ctlw);
	finish(pid, sfd, ctlw);
	_exit(0);
}

/* Takes one message from S; returns 0, or -1 if S is gone. */
static int
take_msg(int ctlr, struct proc_result *res)
{
	struct msg m;
	ssize_t n;

	while ((n = read(ctlr, &m, sizeof(m))) == -1 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(m))
		return -1;
	switch (m.kind) {
	case MSG_EXITED:
		res->exited = 1;
		res->code = m.code;
		res->signo = m.signo;
		if (m.err != 0 && res->end == PROC_DONE) {
			res->end = PROC_EXEC_FAILED;
			res->err = m.err;
		}
		break;
	case MSG_FINAL:
		res->killed = m.killed;
		res->survivors = m.survivors;
		break;
	default:
		if (res->end == PROC_DONE) {
			res->end = PROC_SYSTEM;
			res->err = m.err;
		}
		break;
	}
	return 0;
}

static int64_t
min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* Reads output from OUTR into SPEC->out; returns 1 at end of output. */
static int
take_output(const struct proc_spec *spec, int outr, struct proc_result *res)
{
	ssize_t n;

	n = read(outr, spec->out + res->len, spec->cap - res->len);
	if (n > 0)
		res->len += (size_t)n;
	else if (n == 0)
		return 1;
	else if (errno != EINTR && errno != EAGAIN) {
		res->end = PROC_SYSTEM;
		res->err = errno;
	}
	return 0;
}

/*
 * The caller's side: output and exit, under one deadline; after either,
 * the other within the grace.  Sets res->end unless it is still
 * PROC_DONE-to-be.
 */
static void
collect(
    const struct proc_spec *spec, int outr, int ctlr, struct proc_result *res)
{
	int grace = spec->grace_ms > 0 ? spec->grace_ms : PROC_GRACE_MS;
	int64_t deadline = now_ms() + spec->timeout_ms, until = deadline;
	int64_t left;
	struct pollfd pfd[3];
	int eof = 0, n, i;

	res->end = PROC_DONE;
	for (;;) {
		if (res->end != PROC_DONE || (eof && res->exited))
			return;
		if (res->len == spec->cap) {
			res->end = PROC_TOO_LONG;
			return;
		}
		if ((left = until - now_ms()) <= 0) {
			res->end = until < deadline
			    ? eof ? PROC_LINGERED : PROC_HELD_OPEN
			    : PROC_TIMEOUT;
			return;
		}
		n = 0;
		if (!eof)
			pfd[n++] = (struct pollfd){outr, POLLIN, 0};
		if (!res->exited)
			pfd[n++] = (struct pollfd){ctlr, POLLIN, 0};
		if (spec->cancel_fd >= 0)
			pfd[n++] = (struct pollfd){spec->cancel_fd, POLLIN, 0};
		if (poll(pfd, (nfds_t)n, (int)left) == -1) {
			if (errno == EINTR)
				continue;
			res->end = PROC_SYSTEM;
			res->err = errno;
			return;
		}
		for (i = 0; i < n && res->end == PROC_DONE; i++) {
			if (pfd[i].revents == 0)
				continue;
			if (pfd[i].fd == spec->cancel_fd)
				res->end = PROC_CANCELLED;
			else if (pfd[i].fd == outr) {
				if (take_output(spec, outr, res) == 1) {
					eof = 1;
					until =
					    min64(deadline, now_ms() + grace);
				}
			} else if (take_msg(ctlr, res) != 0) {
				res->end = PROC_SYSTEM;
				res->err = ECHILD;
			} else
				until = min64(deadline, now_ms() + grace);
		}
	}
}

static void
close_fd(int *fd)
{
	if (*fd != -1)
		close(*fd);
	*fd = -1;
}

int
proc_run(const struct proc_spec *spec, struct proc_result *res)
{
	int outp[2] = {-1, -1}, gop[2] = {-1, -1}, ctlp[2] = {-1, -1};
	int devnull = -1, st;
	pid_t sup;

	memset(res, 0, sizeof(*res));
	res->end = PROC_SYSTEM;
	if ((devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1 ||
	    pipe2(outp, O_CLOEXEC) == -1 || pipe2(gop, O_CLOEXEC) == -1 ||
	    pipe2(ctlp, O_CLOEXEC) == -1 || (sup = fork()) == -1) {
		res->err = errno;
		goto out;
	}
	if (sup == 0)
		supervise(spec, devnull, outp[1], gop[0], ctlp[1]);
	close_fd(&outp[1]);
	close_fd(&gop[0]);
	close_fd(&ctlp[1]);
	collect(spec, outp[0], ctlp[0], res);
	/* Writers now get EPIPE; S kills and reaps, then closes ctl. */
	close_fd(&outp[0]);
	close_fd(&gop[1]);
	while (take_msg(ctlp[0], res) == 0)
		;
	while (waitpid(sup, &st, 0) == -1 && errno == EINTR)
		;
out:
	close_fd(&devnull);
	close_fd(&outp[0]);
	close_fd(&outp[1]);
	close_fd(&gop[0]);
	close_fd(&gop[1]);
	close_fd(&ctlp[0]);
	close_fd(&ctlp[1]);
	return res->end == PROC_DONE && res->exited && res->signo == 0 &&
	        res->code == 0
	    ? 0
	    : -1;
}
