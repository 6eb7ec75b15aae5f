/*
 * sandbox.c: the launcher.  One SOCK_SEQPACKET pair joins pinhole run and
 * the sandbox; its messages, in order:
 *
 *   init -> run      'R'              ready for its uid/gid maps
 *   run -> init      'G'              the uid/gid maps are written, and
 *                                     init is in the run's cgroup
 *   init -> run      'F' total        + SCM_RIGHTS: the listeners, in
 *                                     batches of at most NET_FDS_MAX,
 *                                     each saying the total (uint32,
 *                                     1..SBX_LISTENERS_MAX), until it
 *                                     is reached; the last one is
 *                                     the engine's end of the notes
 *                                     pair (sockguard.h)
 *   init or command  'E' + text       setting up failed (exit 125)
 *
 * then end of file, once the command has been executed (its end of the
 * pair is close-on-exec) or has failed.  Nothing here knows HTTP.
 *
 * uid and gid map the caller to itself.  As root, too, the command runs in
 * the user namespace with every capability dropped, securebits locked and
 * no_new_privs, so nothing inside can undo the mount view.
 */
#define SBX_INTERNAL

#include <linux/capability.h>
#include <linux/close_range.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ph_err.h"
#include "common/xmalloc.h"
#include "netns/caps.h"
#include "netns/cgroup.h"
#include "netns/gitguard.h"
#include "netns/hostinfo.h"
#include "netns/init.h"
#include "netns/landlock.h"
#include "netns/limits.h"
#include "netns/mount.h"
#include "netns/net.h"
#include "netns/sandbox.h"
#include "netns/seccomp.h"
#include "netns/sockguard.h"

#define NS_FLAGS                                                               \
	(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |           \
	    CLONE_NEWIPC | CLONE_NEWUTS)
#define MSG_MAX 512

struct sbx {
	pid_t pid;
	int sock;
	int *fds; /* SBX_LISTENERS_MAX */
	int nfds;
	uint32_t total; /* announced by the first 'F' */
	int reaped;
	struct cgroup *cg; /* the run's cgroup; its keeper removes it */
};

extern char **environ;

/* --- inside --------------------------------------------------------------- */

/* Tells pinhole run why setting up failed, and gives up (status 125). */
static void child_fail(int, const char *, ...)
    __attribute__((noreturn, format(printf, 2, 3)));

static void
child_fail(int sock, const char *fmt, ...)
{
	char msg[MSG_MAX];
	va_list ap;
	int n;

	msg[0] = 'E';
	va_start(ap, fmt);
	n = vsnprintf(msg + 1, sizeof(msg) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(msg) - 1)
		n = sizeof(msg) - 2;
	(void)send(sock, msg, (size_t)n + 1, MSG_NOSIGNAL);
	_exit(125);
}

static void
allow_write(void *arg, const char *path)
{
	(void)ll_allow(arg, path, LL_WRITE);
}

/* Landlock: writes only where the mount view is writable. */
static void
apply_landlock(const struct sbx_config *c, int sock)
{
	static const char *const devs[] = {
	    "/dev/null",
	    "/dev/zero",
	    "/dev/full",
	    "/dev/random",
	    "/dev/urandom",
	    "/dev/tty",
	    "/dev/ptmx",
	    "/dev/pts",
	};
	struct ll_rules *r;
	char report[256];
	size_t i;

	if ((r = ll_new(LL_SANDBOX)) == NULL)
		child_fail(sock, "landlock: out of memory");
	mnt_plan_writable_dirs(c->plan, allow_write, r);
	for (i = 0; i < sizeof(devs) / sizeof(devs[0]); i++)
		(void)ll_allow(r, devs[i], LL_DEV);
	if (ll_apply(r, report, sizeof(report)) != 0)
		child_fail(sock, "%s", report);
	if (c->verbose)
		fprintf(stderr, "pinhole: %s\n", report);
	ll_free(r);
}

/*
 * Hands the filter's notification descriptor to PID 1 (by number, over
 * GSOCK: PID 1 takes it with pidfd_getfd, since sendmsg is supervised
 * already) and waits until the supervisor runs, so that no supervised
 * call is ever made with nobody to answer it.
 */
static void
hand_listener(int gsock, int listener, int sock)
{
	int e = EPIPE;

	if (send(gsock, &listener, sizeof(listener), MSG_NOSIGNAL) !=
	        (ssize_t)sizeof(listener) ||
	    recv(gsock, &e, sizeof(e), 0) != (ssize_t)sizeof(e) || e != 0)
		child_fail(sock, "the socket supervisor did not start: %s",
		    strerror(e));
	close(listener);
	close(gsock);
}

/*
 * The file execvp(NAME) would have run: NAME when it has a slash, else
 * the first executable NAME along PATH (an empty entry: the current
 * directory).  Returns it, in BUF when searched, or NULL.
 */
static const char *
exec_file(const char *name, char *buf, size_t len)
{
	const char *p = getenv("PATH"), *end;
	int n;

	if (strchr(name, '/') != NULL)
		return name;
	for (p = p != NULL ? p : "/bin:/usr/bin";; p = end + 1) {
		end = strchrnul(p, ':');
		n = end == p
		    ? snprintf(buf, len, "./%s", name)
		    : snprintf(buf, len, "%.*s/%s", (int)(end - p), p, name);
		if (n > 0 && (size_t)n < len && access(buf, X_OK) == 0)
			return buf;
		if (*end == '\0')
			return NULL;
	}
}

/*
 * The command could not be executed (E).  A program that needs the file
 * capability cap_net_raw (iputils ping) fails so before it asks for any
 * socket, since the sandbox grants no file capability: said, and told
 * to the engine as a raw socket the supervisor refused (NOTES, the
 * supervisor's, as sockguard.h), so that the run's log has it too.
 */
static void
exec_failed(const struct sbx_config *c, int notes, int e)
{
	char buf[PATH_MAX + 1];
	const char *f =
	    e == EPERM ? exec_file(c->argv[0], buf, sizeof(buf)) : NULL;
	char note = SOCKGUARD_NOTE_RAW;

	if (f != NULL && caps_file_has(f, CAP_NET_RAW)) {
		(void)send(notes, &note, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
		fprintf(stderr,
		    "pinhole: %s: %s: it needs the file capability "
		    "cap_net_raw, which the sandbox never grants (no ICMP, no "
		    "raw socket)\n",
		    c->argv[0], strerror(e));
	} else
		fprintf(stderr, "pinhole: %s: %s\n", c->argv[0], strerror(e));
}

/* The command: no privilege, its own signals, then exec. */
static void __attribute__((noreturn))
command_main(const struct sbx_config *c, int sock, int gsock, int notes)
{
	const char *dir = c->chdir ? c->chdir : mnt_plan_cwd(c->plan);
	char err[256];
	int e, listener;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
		child_fail(sock, "prctl: %s", strerror(errno));
	init_reset_signals(&c->mask);
	if (chdir(dir) != 0)
		child_fail(
		    sock, "cannot change to %s: %s", dir, strerror(errno));
	if (caps_drop_all(err, sizeof(err)) != 0)
		child_fail(sock, "dropping capabilities: %s", err);
	if (sc_apply_guarded(&listener, err, sizeof(err)) != 0)
		child_fail(sock, "%s", err);
	hand_listener(gsock, listener, sock);
	if (c->verbose)
		fprintf(stderr,
		    "pinhole: seccomp: filter on, socket addresses "
		    "supervised\n");
	apply_landlock(c, sock);
	/*
	 * Only stdin, stdout and stderr go in: a descriptor inherited from
	 * whoever started pinhole (a directory, a socket) would be a way
	 * around the mount view and the network namespace.
	 */
	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
		child_fail(sock, "close_range: %s", strerror(errno));
	if (limits_apply_memory(
	        &(struct limits){0, c->limit_memory}, err, sizeof(err)) != 0)
		child_fail(sock, "%s", err);
	/* execvp searches the PATH of the environment it runs with. */
	environ = c->envp;
	execvp(c->argv[0], c->argv);
	e = errno;
	exec_failed(c, notes, e);
	_exit(e == ENOENT || e == ENOTDIR ? 127 : 126);
}

/* Sends the N descriptors of FDS in batches, each message 'F' + N. */
static int
send_listeners(int sock, const int *fds, int n)
{
	char msg[1 + sizeof(uint32_t)] = {'F'};
	uint32_t total = (uint32_t)n;
	char cbuf[CMSG_SPACE(sizeof(int) * NET_FDS_MAX)];
	struct iovec iov = {msg, sizeof(msg)};
	struct msghdr m;
	struct cmsghdr *c;
	int i, k;

	memcpy(msg + 1, &total, sizeof(total));
	for (i = 0; i < n; i += k) {
		k = n - i < NET_FDS_MAX ? n - i : NET_FDS_MAX;
		memset(cbuf, 0, sizeof(cbuf));
		memset(&m, 0, sizeof(m));
		m.msg_iov = &iov;
		m.msg_iovlen = 1;
		m.msg_control = cbuf;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)k);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)k);
		memcpy(CMSG_DATA(c), fds + i, sizeof(int) * (size_t)k);
		if (sendmsg(sock, &m, MSG_NOSIGNAL) != (ssize_t)sizeof(msg))
			return -1;
	}
	return 0;
}

/*
 * The listeners PID 1 makes, in FDS (SBX_LISTENERS_MAX): the proxy's and
 * SOCKS's on loopback; the DNS stub's (on the wildcard under capture,
 * else on loopback); under capture the capture listeners and the
 * refusals' raw sockets (net.h).  Returns how many, one less than SBX_LISTENERS_MAX at most
 * (child_network adds one); a failure ends PID 1.
 */
static int
make_listeners(const struct sbx_config *c, int sock, int *fds)
{
	size_t nports = c->ncapture_ports;
	char err[256];
	int n, m;

	if ((n = net_listen_loopback(NET_PROXY_PORT, fds, err, sizeof(err))) <
	        0 ||
	    (m = net_listen_loopback(
	         NET_SOCKS_PORT, fds + n, err, sizeof(err))) < 0)
		child_fail(sock, "%s", err);
	n += m;
	m = c->capture
	    ? net_listen_dns_any(
	          fds + n, SBX_LISTENERS_MAX - n, err, sizeof(err))
	    : net_listen_dns(fds + n, SBX_LISTENERS_MAX - n, err, sizeof(err));
	if (m < 0)
		child_fail(sock, "%s", err);
	n += m;
	if (!c->capture)
		return n;
	if (nports > SBX_CAPTURE_MAX)
		nports = SBX_CAPTURE_MAX;
	if ((m = net_listen_capture(c->capture_ports, nports, fds + n,
	         SBX_LISTENERS_MAX - 5 - n, err, sizeof(err))) < 0)
		child_fail(sock, "%s", err);
	n += m;
	if ((m = net_refusal_sockets(
	         fds + n, SBX_LISTENERS_MAX - 1 - n, err, sizeof(err))) < 0)
		child_fail(sock, "%s", err);
	return n + m;
}

/*
 * Loopback up, the capture routes before any listener (a wildcard
 * listener is no use without them), then the listeners out, the last
 * one the engine's end of the supervisor's notes (sockguard.h: the
 * refused ICMP sockets), an AF_UNIX SOCK_SEQPACKET pair.  Returns PID
 * 1's end, non-blocking.
 */
static int
child_network(const struct sbx_config *c, int sock)
{
	int *fds = xcalloc(SBX_LISTENERS_MAX, sizeof(*fds)), n, i, np[2];
	char err[256];

	if (net_lo_up(err, sizeof(err)) != 0 ||
	    (c->capture && net_capture_routes(err, sizeof(err)) != 0))
		child_fail(sock, "%s", err);
	n = make_listeners(c, sock, fds);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK,
	        0, np) != 0)
		child_fail(sock, "socketpair: %s", strerror(errno));
	fds[n++] = np[1];
	if (send_listeners(sock, fds, n) != 0)
		child_fail(
		    sock, "passing the listeners out: %s", strerror(errno));
	for (i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
	return np[0];
}

static void
git_say(void *arg, int fail, const char *msg)
{
	(void)arg;
	fprintf(stderr, "pinhole: git guard: %s%s\n",
	    fail ? "cannot neutralise: " : "", msg);
}

struct git_roots {
	struct gitguard *gg;
	char *err;
	size_t errlen;
};

static int
git_root(void *arg, const char *inside, const char *host)
{
	struct git_roots *r = arg;

	return gitguard_add_root(r->gg, inside, host, r->err, r->errlen);
}

/*
 * After the command and everything it started are gone: git plants are
 * moved aside, and when one cannot be, the run's status says so.
 */
static int
git_sweep(struct gitguard *gg, int status)
{
	if (gitguard_sweep(gg, git_say, NULL) == 0)
		return status;
	fprintf(stderr,
	    "pinhole: git guard: planted git files may remain (see above); "
	    "exit status %d instead of the command's %d\n",
	    GITGUARD_EXIT, status);
	return GITGUARD_EXIT;
}

/* A heap copy of ARGV: the strings it points into are about to go. */
static char **
copy_argv(char *const *argv)
{
	size_t i, n = 0;
	char **v;

	while (argv[n] != NULL)
		n++;
	v = xcalloc(n + 1, sizeof(*v));
	for (i = 0; i < n; i++)
		v[i] = xstrdup(argv[i]);
	return v;
}

/*
 * What the sandbox learns of the host: a neutral hostname, PID 1's
 * command line (pinhole run's, with the policy path) a plain name, and
 * the limits, set here while the host's /proc is still mounted.
 * Returns C, or a copy of it whose strings survive the new title.
 */
static const struct sbx_config *
sandbox_identity(const struct sbx_config *c, int sock)
{
	static struct sbx_config own;
	struct limits l = {c->limit_pids, c->limit_memory};
	char err[256], report[320];

	if (hostinfo_uts(err, sizeof(err)) != 0 ||
	    limits_apply_pids(&l, report, sizeof(report), err, sizeof(err)) !=
	        0)
		child_fail(sock, "%s", err);
	if (c->verbose)
		fprintf(stderr, "pinhole: %s\n", report);
	own = *c;
	own.argv = copy_argv(c->argv);
	own.chdir = c->chdir ? xstrdup(c->chdir) : NULL;
	if (hostinfo_title(err, sizeof(err)) != 0)
		child_fail(sock, "%s", err);
	return &own;
}

/*
 * PID 1's side of hand_listener: takes the command's notification
 * descriptor and starts the supervisor, then says so (0 or an errno).
 * Nothing to do when the command failed before (end of file).
 */
static void
start_guard(const struct sbx_config *c, int gsock, pid_t cmd, int notes)
{
	int n, pidfd, fd = -1, e = 0;

	if (recv(gsock, &n, sizeof(n), 0) != (ssize_t)sizeof(n)) {
		close(notes);
		return;
	}
	if ((pidfd = (int)syscall(SYS_pidfd_open, cmd, 0)) < 0 ||
	    (fd = (int)syscall(SYS_pidfd_getfd, pidfd, n, 0)) < 0) {
		e = errno;
		close(notes);
	} else if (sockguard_start(fd, c->unix_allow, c->nunix_allow, notes) !=
	    0)
		e = errno != 0 ? errno : EIO;
	if (pidfd >= 0)
		close(pidfd);
	(void)send(gsock, &e, sizeof(e), MSG_NOSIGNAL);
}

/*
 * PID 1 makes the command's connections to Unix sockets (sockguard.c):
 * its own Landlock domain, with the command's nested in it, keeps those
 * to abstract sockets (and its signals) inside, as the command's would
 * be.  Before the fork, while PID 1 has one thread.
 */
static void
scope_pid1(const struct sbx_config *c, int sock)
{
	struct ll_rules *r;
	char report[256];

	if ((r = ll_new(LL_SCOPE)) == NULL)
		child_fail(sock, "landlock: out of memory");
	if (ll_apply(r, report, sizeof(report)) != 0)
		child_fail(sock, "%s", report);
	if (c->verbose)
		fprintf(stderr, "pinhole: %s\n", report);
	ll_free(r);
}

/*
 * Now that PID 1 is in the run's cgroup: a cgroup namespace rooted there,
 * so /proc/self/cgroup inside says "/" and nothing of the host's tree.
 * Not a bound (the sandbox sees /sys read-only): a kernel without it
 * (before 4.6) or out of cgroup namespaces only loses the hiding.
 */
static void
own_cgroup_ns(const struct sbx_config *c)
{
	if (unshare(CLONE_NEWCGROUP) != 0 && c->verbose)
		fprintf(stderr,
		    "pinhole: cgroup namespace: %s; /proc/self/cgroup shows "
		    "the host's path\n",
		    strerror(errno));
}

static void __attribute__((noreturn))
child_main(const struct sbx_config *c, int sock)
{
	char go, err[512];
	struct git_roots gr = {NULL, err, sizeof(err)};
	sigset_t old;
	pid_t cmd;
	int sfd, status, gp[2], notes;

	/* When pinhole run dies, so does the whole namespace. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
		_exit(125);
	/*
	 * An undumpable caller would make us undumpable too: then
	 * /proc/PID/uid_map is root's, which an unprivileged pinhole run
	 * cannot write.  pinhole run's launcher holds no secret (its engine
	 * does), and PID 1 turns it off again before the command exists.
	 */
	(void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (send(sock, "R", 1, MSG_NOSIGNAL) != 1)
		_exit(125);
	if (recv(sock, &go, 1, 0) != 1 || go != 'G')
		_exit(125); /* pinhole run is gone, or gave up */
	own_cgroup_ns(c);
	notes = child_network(c, sock);
	c = sandbox_identity(c, sock);
	if (mnt_apply(c->plan, err, sizeof(err)) != 0)
		child_fail(sock, "%s", err);
	if (mnt_home_note() != NULL)
		fprintf(stderr, "pinhole: %s; see pinhole doctor\n",
		    mnt_home_note());
	/* The roots are opened now: the command could move a path later. */
	gr.gg = gitguard_new();
	if (mnt_plan_git_roots(c->plan, git_root, &gr) != 0)
		child_fail(sock, "%s", err);
	if ((sfd = init_signals(&old)) < 0)
		child_fail(sock, "signalfd: %s", strerror(errno));
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, gp) != 0)
		child_fail(sock, "socketpair: %s", strerror(errno));
	scope_pid1(c, sock);
	if ((cmd = fork()) < 0)
		child_fail(sock, "fork: %s", strerror(errno));
	if (cmd == 0) {
		close(sfd);
		close(gp[0]);
		command_main(c, sock, gp[1], notes); /* notes: close-on-exec */
	}
	close(sock);
	close(gp[1]);
	(void)prctl(PR_SET_NAME, "pinhole-init", 0, 0, 0);
	/* PID 1 needs nothing either; not dumpable: the command can't trace it. */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* Before the supervisor's threads: capabilities are per thread. */
	(void)caps_drop_all(err, sizeof(err));
	start_guard(c, gp[0], cmd, notes);
	close(gp[0]);
	status = init_loop(sfd, cmd);
	/* Nothing left running may plant a file after the check. */
	init_kill_all();
	_exit(git_sweep(gr.gg, status));
}

/* --- outside -------------------------------------------------------------- */

int
sbx_shed(const char *const *extra, size_t nextra, int landlock, char *report,
    size_t reportlen)
{
	/* /proc/self: its own; glibc and the sanitizers read it. */
	static const char *const readable[] = {
	    "/etc",
	    "/usr/share/ca-certificates",
	    "/usr/local/share/ca-certificates",
	    "/usr/lib",
	    "/lib",
	    "/proc/self",
	};
	struct ll_rules *ll = NULL;
	char err[256];
	size_t i;
	int r = -1;

	/* Undumpable already if it holds secrets (secret_store_load). */
	if (caps_drop_all(err, sizeof(err)) != 0) {
		ph_errf(report, reportlen, "%s", err);
		goto out;
	}
	if (!landlock) {
		ph_errf(report, reportlen, "capabilities dropped; no Landlock");
		r = 0;
		goto out;
	}
	if ((ll = ll_new(LL_PROXY)) == NULL) {
		ph_errf(report, reportlen, "landlock: out of memory");
		goto out;
	}
	for (i = 0; i < sizeof(readable) / sizeof(readable[0]); i++)
		(void)ll_allow(ll, readable[i], LL_READ);
	for (i = 0; i < nextra; i++)
		(void)ll_allow(ll, extra[i], LL_READ);
	r = ll_apply(ll, report, reportlen);
out:
	ll_free(ll);
	return r;
}

static int
write_file(pid_t pid, const char *name, const char *text)
{
	char path[64];
	int fd, r = -1;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		return -1;
	if (write(fd, text, strlen(text)) == (ssize_t)strlen(text))
		r = 0;
	close(fd);
	return r;
}

/* Does the caller's user namespace deny setgroups already? */
static int
setgroups_denied(void)
{
	char buf[16] = "";
	FILE *f = fopen("/proc/self/setgroups", "re");

	if (f != NULL) {
		if (fgets(buf, sizeof(buf), f) == NULL)
			buf[0] = '\0';
		fclose(f);
	}
	errno = EPERM;
	return strncmp(buf, "deny", 4) == 0;
}

/* The caller's uid and gid, each mapped to itself. */
static int
write_maps(pid_t pid, char *err, size_t errlen)
{
	char map[64];

	/*
	 * Unprivileged, setgroups must go before gid_map; root loses it too.
	 * Nested in a user namespace that denies it already, the file cannot
	 * be written, and need not be.
	 */
	if (write_file(pid, "setgroups", "deny") != 0 &&
	    !(errno == EPERM && setgroups_denied())) {
		ph_errf(err, errlen, "setgroups: %s", strerror(errno));
		return -1;
	}
	snprintf(map, sizeof(map), "%u %u 1\n", getuid(), getuid());
	if (write_file(pid, "uid_map", map) != 0) {
		ph_errf(err, errlen, "uid_map: %s", strerror(errno));
		return -1;
	}
	snprintf(map, sizeof(map), "%u %u 1\n", getgid(), getgid());
	if (write_file(pid, "gid_map", map) != 0) {
		ph_errf(err, errlen, "gid_map: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Adds the descriptors of MSG to S's listeners; TOTAL is what the
 * message announced.  Returns 0, or -1 when they do not fit what was
 * announced (all of this message's closed).
 */
static int
take_listeners(struct sbx *s, struct msghdr *msg, uint32_t total)
{
	struct cmsghdr *cm;
	int fd[NET_FDS_MAX], n = 0, i, bad = (msg->msg_flags & MSG_CTRUNC) != 0;

	for (cm = CMSG_FIRSTHDR(msg); cm != NULL; cm = CMSG_NXTHDR(msg, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			for (i = 0; i <
			     (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			     i++)
				if (n < NET_FDS_MAX)
					memcpy(&fd[n++],
					    CMSG_DATA(cm) + i * sizeof(int),
					    sizeof(int));
	if (total == 0 || total > SBX_LISTENERS_MAX ||
	    (s->total != 0 && total != s->total) || n == 0 ||
	    (uint32_t)(s->nfds + n) > total)
		bad = 1;
	for (i = 0; i < n; i++)
		if (bad)
			close(fd[i]);
		else
			s->fds[s->nfds++] = fd[i];
	if (!bad)
		s->total = total;
	return bad ? -1 : 0;
}

/*
 * Reads one message: *TYPE its first byte ('F', 'E'), its text in BUF;
 * an 'F''s descriptors go to S.  Returns 1, 0 at end of file, -1 on
 * error (an 'F' that is malformed: *TYPE is then '?').
 */
static int
recv_msg(struct sbx *s, char *type, char *buf, size_t len)
{
	char data[MSG_MAX + 1];
	char cbuf[CMSG_SPACE(sizeof(int) * NET_FDS_MAX)];
	struct iovec iov = {data, MSG_MAX};
	struct msghdr msg;
	struct cmsghdr *cm;
	uint32_t total = 0;
	ssize_t n;
	int i;

	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof(cbuf);
	do
		n = recvmsg(s->sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return (int)n;
	data[n] = '\0';
	*type = data[0];
	if (*type == 'F' && n == 1 + (ssize_t)sizeof(total)) {
		memcpy(&total, data + 1, sizeof(total));
		if (take_listeners(s, &msg, total) == 0)
			return 1;
	}
	/* Descriptors anywhere else are not ours to keep. */
	for (cm = CMSG_FIRSTHDR(&msg); total == 0 && cm != NULL;
	     cm = CMSG_NXTHDR(&msg, cm))
		for (i = 0; cm->cmsg_level == SOL_SOCKET &&
		     cm->cmsg_type == SCM_RIGHTS &&
		     i < (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		     i++) {
			int fd;

			memcpy(
			    &fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
			close(fd);
		}
	if (*type == 'F') {
		*type = '?';
		return -1;
	}
	snprintf(buf, len, "%s", data + 1);
	return 1;
}

/*
 * The run's cgroup, when a limit is asked and a cgroup can be made (else
 * the rlimits are the only limits, and -v says so), and its keeper.
 */
static int
make_cgroup(struct sbx *s, const struct sbx_config *c, char *err, size_t errlen)
{
	struct cgroup_where w;
	char name[32], what[2 * PATH_MAX + 600];

	unsigned long pids = c->pids_cgroup ? c->limit_pids : 0;

	if (pids == 0 && c->limit_memory == 0)
		return 0;
	cgroup_find_self(&w);
	snprintf(name, sizeof(name), "pinhole-%d", (int)getpid());
	if ((s->cg = cgroup_create(&w, name, pids, c->limit_memory, what,
	         sizeof(what))) == NULL ||
	    cgroup_keep(s->cg, what, sizeof(what)) != 0) {
		ph_errf(err, errlen,
		    "%s (--limit-pids none without --limit-memory makes no "
		    "cgroup)",
		    what);
		return -1;
	}
	if (c->verbose) {
		cgroup_describe(s->cg, &w, what, sizeof(what));
		fprintf(stderr, "pinhole: cgroup: %s%s\n", what,
		    cgroup_has(s->cg, CGROUP_PIDS) ||
		            cgroup_has(s->cg, CGROUP_MEMORY)
		        ? ""
		        : "; the limits are the rlimits only");
	}
	return 0;
}

/*
 * PID 1 ended before it said why: a signal did it (the memory limit's
 * OOM kill of a cgroup, a crash).  The one line says which.
 */
static void
ended_at_start(
    struct sbx *s, const struct sbx_config *c, char *err, size_t errlen)
{
	pid_t p;
	int w = 0;

	while ((p = waitpid(s->pid, &w, 0)) < 0 && errno == EINTR)
		;
	if (p == s->pid)
		s->reaped = 1;
	if (p == s->pid && WIFSIGNALED(w))
		ph_errf(err, errlen,
		    "the sandbox ended at start (signal %d, %s%s)", WTERMSIG(w),
		    strsignal(WTERMSIG(w)),
		    c->limit_memory ? ": --limit-memory too small?" : "");
	else
		ph_errf(err, errlen, "the sandbox ended at start");
}

/*
 * The listeners, in 'F' batches until their total came.  Returns 1, 0
 * when PID 1 ended without a word, or -1 with the reason in ERR (its
 * own, or a malformed list: every descriptor of it closed by sbx_free).
 */
static int
recv_listeners(struct sbx *s, char *err, size_t errlen)
{
	char type = 0, msg[MSG_MAX];
	int r;

	do
		r = recv_msg(s, &type, msg, sizeof(msg));
	while (r > 0 && type == 'F' && (uint32_t)s->nfds < s->total);
	if (r > 0 && type == 'F')
		return 1;
	if (r > 0 && type == 'E')
		ph_errf(err, errlen, "%s", msg);
	else if (type == '?' || r > 0)
		ph_errf(err, errlen,
		    "the sandbox sent a malformed list of listeners");
	else
		return 0;
	return -1;
}

struct sbx *
sbx_test_listeners(int sock, char *err, size_t errlen)
{
	struct sbx *s = xcalloc(1, sizeof(*s));

	s->pid = -1;
	s->sock = sock;
	s->fds = xcalloc(SBX_LISTENERS_MAX, sizeof(*s->fds));
	if (recv_listeners(s, err, errlen) == 1)
		return s;
	if (err[0] == '\0')
		ph_errf(err, errlen, "end of file");
	sbx_free(s);
	return NULL;
}

struct sbx *
sbx_start(const struct sbx_config *c, char *err, size_t errlen)
{
	struct sbx *s = xcalloc(1, sizeof(*s));
	char type = 0;
	int sp[2] = {-1, -1}, r;

	s->pid = -1;
	s->sock = -1;
	s->fds = xcalloc(SBX_LISTENERS_MAX, sizeof(*s->fds));
	if (make_cgroup(s, c, err, errlen) != 0)
		goto fail;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0) {
		ph_errf(err, errlen, "socketpair: %s", strerror(errno));
		goto fail;
	}
	s->sock = sp[0];
	fflush(NULL); /* nothing buffered is written twice */
	s->pid = (pid_t)syscall(
	    SYS_clone, NS_FLAGS | SIGCHLD, NULL, NULL, NULL, NULL);
	if (s->pid < 0) {
		ph_errf(err, errlen, "cannot create the namespaces: %s",
		    strerror(errno));
		goto fail;
	}
	if (s->pid == 0) {
		close(sp[0]);
		child_main(c, sp[1]);
	}
	close(sp[1]);
	sp[1] = -1;
	if (recv(s->sock, &type, 1, 0) != 1 || type != 'R') {
		ph_errf(err, errlen, "the sandbox ended at start");
		goto fail;
	}
	/* Before 'G': PID 1 has forked nothing yet. */
	if ((s->cg != NULL && cgroup_attach(s->cg, s->pid, err, errlen) != 0) ||
	    write_maps(s->pid, err, errlen) != 0)
		goto fail;
	if (send(s->sock, "G", 1, MSG_NOSIGNAL) != 1) {
		ph_errf(err, errlen, "the sandbox ended at start");
		goto fail;
	}
	if ((r = recv_listeners(s, err, errlen)) <= 0) {
		if (r == 0)
			ended_at_start(s, c, err, errlen);
		goto fail;
	}
	return s;
fail:
	if (sp[1] >= 0)
		close(sp[1]);
	sbx_free(s);
	return NULL;
}

int
sbx_listener(const struct sbx *s, int i)
{
	return i >= 0 && i < s->nfds ? s->fds[i] : -1;
}

int
sbx_nlisteners(const struct sbx *s)
{
	return s->nfds;
}

void
sbx_release_listeners(struct sbx *s)
{
	s->nfds = 0;
}

int
sbx_wait_exec(struct sbx *s, char *err, size_t errlen)
{
	char type = 0, msg[MSG_MAX];
	int r;

	r = recv_msg(s, &type, msg, sizeof(msg));
	close(s->sock);
	s->sock = -1;
	if (r == 0)
		return 0;
	ph_errf(err, errlen, "%s",
	    r > 0 && type == 'E' ? msg : "lost touch with the sandbox");
	return -1;
}

pid_t
sbx_pid(const struct sbx *s)
{
	return s->pid;
}

int
sbx_reap(struct sbx *s, int *status)
{
	int w;
	pid_t r;

	if (s->reaped)
		return 1;
	do
		r = waitpid(s->pid, &w, WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return 0;
	if (r < 0)
		return -1;
	s->reaped = 1;
	*status = init_status(w);
	return 1;
}

void
sbx_free(struct sbx *s)
{
	int i, w;

	if (s == NULL)
		return;
	if (s->pid > 0 && !s->reaped) {
		kill(s->pid, SIGKILL);
		while (waitpid(s->pid, &w, 0) < 0 && errno == EINTR)
			;
	}
	if (s->sock >= 0)
		close(s->sock);
	for (i = 0; i < s->nfds; i++)
		close(s->fds[i]);
	free(s->fds);
	/* PID 1 is reaped: its namespace's processes are gone. */
	cgroup_free(s->cg);
	free(s);
}
