/*
 * doctor.c: the kernel probes of pinhole doctor (the policy's are in
 * cli/doctor_policy.c, the printers in cli/doctor_print.c).
 *
 * Every kernel probe runs in a forked child: whatever namespace it enters,
 * filter it installs or mount it makes dies with the child, and the
 * doctor process itself stays as it was.  The child sends one struct
 * doctor_result back on its standard output (less than PIPE_BUF, so one
 * atomic write).  common/proc.c runs it: the pipe, the deadline, and the
 * kill and reaping of whatever the child left.
 */
#include <sys/types.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/landlock.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <seccomp.h>

#include "common/ph_err.h"
#include "common/proc.h"
#define DOCTOR_INTERNAL
#include "netns/doctor.h"
#include "netns/net.h"

#define NITEMS(a) (sizeof(a) / sizeof((a)[0]))

/* Where the mount probe puts its tmpfs, in its own mount namespace. */
#define PROBE_DIR "/tmp"
/* The errno of the seccomp trial filter: acct() never returns it. */
#define PROBE_ERRNO EKEYREJECTED

#define ADVICE_SECCOMP_USERNS                                                  \
	"an outer seccomp filter refuses it (Docker's default profile "        \
	"does): run the container with --security-opt seccomp=unconfined "     \
	"or a profile that allows unshare/clone with CLONE_NEWUSER"
#define ADVICE_OUTER_EPERM                                                     \
	"an outer seccomp filter or LSM refuses it; in a container, run it "   \
	"with --security-opt seccomp=unconfined or a profile that allows it"
#define ADVICE_PROC_MASKED                                                     \
	"the /proc already mounted has paths covered (containers mask some); " \
	"run the container with --security-opt systempaths=unconfined"
#define ADVICE_OLD_KERNEL                                                      \
	"use Linux 5.12 or later: the mount view needs open_tree (5.2) "       \
	"and mount_setattr (5.12)"

struct probe {
	const char *name;
	int required;
	int needs_userns; /* tried only when the user namespace probe said yes */
	doctor_child_fn *fn;
};

static doctor_child_fn probe_userns, probe_apparmor, probe_namespaces,
    probe_network, probe_capture, probe_mounts, probe_landlock, probe_seccomp;

/* In running order: the order a failure would show at start-up. */
static const struct probe probes[] = {
    {"userns", 1, 0, probe_userns},
    {"apparmor", 0, 0, probe_apparmor},
    {"namespaces", 1, 1, probe_namespaces},
    {"network", 1, 1, probe_network},
    {"capture", 0, 1, probe_capture},
    {"mounts", 1, 1, probe_mounts},
    {"landlock", 0, 0, probe_landlock},
    {"seccomp", 0, 0, probe_seccomp},
};

void
doctor_verdict(struct doctor_result *r, enum doctor_status st,
    const char *advice, const char *fmt, ...)
{
	va_list ap;

	r->status = st;
	va_start(ap, fmt);
	vsnprintf(r->detail, sizeof(r->detail), fmt, ap);
	va_end(ap);
	doctor_advise(r, "%s", advice);
}

void
doctor_advise(struct doctor_result *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->advice, sizeof(r->advice), fmt, ap);
	va_end(ap);
}

/* Reads the integer in PATH (a sysctl); -1 when it is absent. */
static int
read_int(const char *path)
{
	char buf[32];
	ssize_t n;
	int fd, v = -1;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	if ((n = read(fd, buf, sizeof(buf) - 1)) > 0) {
		buf[n] = '\0';
		v = (int)strtol(buf, NULL, 10);
	}
	close(fd);
	return v;
}

/* Writes S to PATH.  Returns 0, or -1 with errno set. */
static int
write_file(const char *path, const char *s)
{
	size_t len = strlen(s);
	int fd, saved, ret = -1;

	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	if (write(fd, s, len) == (ssize_t)len)
		ret = 0;
	saved = errno;
	close(fd);
	errno = saved;
	return ret;
}

const char *
doctor_container(void)
{
	static const struct {
		const char *word, *says;
	} hints[] = {
	    {"docker", "docker (/proc/1/cgroup)"},
	    {"kubepods", "kubernetes (/proc/1/cgroup)"},
	    {"libpod", "podman (/proc/1/cgroup)"},
	    {"containerd", "containerd (/proc/1/cgroup)"},
	    {"lxc", "lxc (/proc/1/cgroup)"},
	};
	char buf[2048];
	const char *says = NULL;
	ssize_t n;
	size_t i;
	int fd;

	if (access("/.dockerenv", F_OK) == 0)
		return "docker (/.dockerenv)";
	if (access("/run/.containerenv", F_OK) == 0)
		return "podman (/run/.containerenv)";
	if ((fd = open("/proc/1/cgroup", O_RDONLY | O_CLOEXEC)) == -1)
		return NULL;
	if ((n = read(fd, buf, sizeof(buf) - 1)) > 0) {
		buf[n] = '\0';
		for (i = 0; says == NULL && i < NITEMS(hints); i++)
			if (strstr(buf, hints[i].word) != NULL)
				says = hints[i].says;
	}
	close(fd);
	return says;
}

/*
 * In a probe's child: sends R to the caller and exits.  One write of less
 * than PIPE_BUF: the caller gets all of R or nothing.
 */
static void __attribute__((noreturn)) answer(const struct doctor_result *r)
{
	ssize_t n = write(STDOUT_FILENO, r, sizeof(*r));

	_exit(n == (ssize_t)sizeof(*r) ? 0 : 1);
}

struct call {
	doctor_child_fn *fn;
	void *arg;
	struct doctor_result *r;
};

/* The child's side of doctor_in_child, run by proc_run. */
static void
call_probe(void *arg)
{
	struct call *c = arg;

	c->fn(c->r, c->arg);
	answer(c->r);
}

/* Says how a probe's child ended without an answer: SIGNO, or CODE. */
static void
ended(struct doctor_result *r, int signo, int code)
{
	if (signo != 0)
		doctor_verdict(r, DOCTOR_NO, "",
		    "the probe died of signal %d (%s)", signo,
		    strsignal(signo));
	else
		doctor_verdict(
		    r, DOCTOR_NO, "", "the probe exited with status %d", code);
}

/* Says why a child gave no answer, from how proc_run saw it end. */
static void
no_answer(struct doctor_result *r, const struct proc_result *pr, int ms)
{
	if (pr->end == PROC_SYSTEM)
		doctor_verdict(r, DOCTOR_NO, "", "running the probe: %s",
		    strerror(pr->err));
	else if (!pr->exited)
		doctor_verdict(r, DOCTOR_NO, "", "no answer within %d ms", ms);
	else
		ended(r, pr->signo, pr->code);
}

void
doctor_in_child(doctor_child_fn *fn, void *arg, struct doctor_result *r, int ms)
{
	/* One byte more than an answer: a whole answer is not TOO_LONG. */
	uint8_t buf[sizeof(struct doctor_result) + 1];
	struct doctor_result got;
	struct call c = {fn, arg, r};
	struct proc_spec spec = {
	    .fn = call_probe,
	    .arg = &c,
	    .timeout_ms = ms,
	    .cancel_fd = -1,
	    .out = buf,
	    .cap = sizeof(buf),
	};
	struct proc_result pr;

	(void)proc_run(&spec, &pr);
	if (pr.len != sizeof(got)) {
		no_answer(r, &pr, ms);
		return;
	}
	memcpy(&got, buf, sizeof(got));
	r->status = got.status <= DOCTOR_NO ? got.status : DOCTOR_NO;
	memcpy(r->detail, got.detail, sizeof(r->detail) - 1);
	memcpy(r->advice, got.advice, sizeof(r->advice) - 1);
}

/* --- user namespace ------------------------------------------------------ */

/*
 * Enters a new user namespace in which the caller is uid and gid 0,
 * mapped to its own.  Returns 0, or -1 with errno set and *STEP naming
 * what failed.
 */
static int
enter_userns(const char **step)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int ret = -1;

	*step = "unshare(CLONE_NEWUSER)";
	if (unshare(CLONE_NEWUSER) == -1)
		goto out;
	/* Kernels before 3.19 have no setgroups file and need no "deny". */
	*step = "writing /proc/self/setgroups";
	if (write_file("/proc/self/setgroups", "deny") == -1 && errno != ENOENT)
		goto out;
	*step = "writing /proc/self/uid_map";
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	if (write_file("/proc/self/uid_map", map) == -1)
		goto out;
	*step = "writing /proc/self/gid_map";
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
	if (write_file("/proc/self/gid_map", map) == -1)
		goto out;
	ret = 0;
out:
	return ret;
}

void
doctor_userns_advice(const struct doctor_userns_facts *f, char *buf, size_t len)
{
	if (f->max_user_namespaces == 0)
		snprintf(buf, len,
		    "set user.max_user_namespaces > 0 "
		    "(sysctl -w user.max_user_namespaces=10000)");
	else if (f->err == ENOSPC)
		snprintf(buf, len,
		    "all %d user namespaces allowed are in use: raise "
		    "user.max_user_namespaces",
		    f->max_user_namespaces);
	else if (!f->root && f->unprivileged_userns_clone == 0)
		snprintf(buf, len,
		    "sysctl kernel.unprivileged_userns_clone=1 (this kernel "
		    "keeps user namespaces to root)");
	else if (!f->root && f->apparmor_restrict == 1)
		snprintf(buf, len,
		    "AppArmor restricts unprivileged user namespaces: give "
		    "pinhole a profile with the 'userns,' rule, or sysctl "
		    "kernel.apparmor_restrict_unprivileged_userns=0");
	else if (f->err == EPERM && (f->seccomp_mode == 2 || f->container))
		snprintf(buf, len, "%s", ADVICE_SECCOMP_USERNS);
	else if (f->err == EPERM)
		snprintf(buf, len,
		    "something above pinhole refuses it (a seccomp filter, an "
		    "LSM, a chroot); in a container, %s",
		    "run it with --security-opt seccomp=unconfined");
	else if (f->err == EINVAL)
		snprintf(buf, len,
		    "use a kernel built with user namespaces (CONFIG_USER_NS)");
	else if (f->err == EUSERS)
		snprintf(buf, len,
		    "user namespaces are nested 32 deep already: run pinhole "
		    "from an outer one");
	else
		snprintf(buf, len, "unexpected error: %s", strerror(f->err));
}

static void
userns_facts(struct doctor_userns_facts *f, int err)
{
	f->max_user_namespaces = read_int("/proc/sys/user/max_user_namespaces");
	f->unprivileged_userns_clone =
	    read_int("/proc/sys/kernel/unprivileged_userns_clone");
	f->apparmor_restrict =
	    read_int("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
	f->seccomp_mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
	f->container = doctor_container() != NULL;
	f->root = geteuid() == 0;
	f->err = err;
}

static void
probe_userns(struct doctor_result *r, void *arg)
{
	struct doctor_userns_facts f;
	const char *step;

	(void)arg;
	if (enter_userns(&step) == 0) {
		doctor_verdict(r, DOCTOR_YES, "",
		    "unshare(CLONE_NEWUSER) and uid/gid maps work");
		return;
	}
	userns_facts(&f, errno);
	doctor_verdict(r, DOCTOR_NO, "", "%s: %s", step, strerror(f.err));
	doctor_userns_advice(&f, r->advice, sizeof(r->advice));
}

/* --- the other namespaces ------------------------------------------------ */

static const struct ns_kind {
	const char *name;
	int flag;
	const char *sysctl; /* user.max_<sysctl>_namespaces */
	const char *config;
} ns_kinds[] = {
    {"mount", CLONE_NEWNS, "mnt", "CONFIG_NAMESPACES"},
    {"pid", CLONE_NEWPID, "pid", "CONFIG_PID_NS"},
    {"net", CLONE_NEWNET, "net", "CONFIG_NET_NS"},
    {"ipc", CLONE_NEWIPC, "ipc", "CONFIG_IPC_NS"},
    {"uts", CLONE_NEWUTS, "uts", "CONFIG_UTS_NS"},
};

static void
ns_advice(const struct ns_kind *k, int err, char *buf, size_t len)
{
	char path[64];

	snprintf(
	    path, sizeof(path), "/proc/sys/user/max_%s_namespaces", k->sysctl);
	if (err == ENOSPC)
		snprintf(buf, len, "raise user.max_%s_namespaces (now %d)",
		    k->sysctl, read_int(path));
	else if (err == EINVAL)
		snprintf(buf, len, "use a kernel built with %s", k->config);
	else if (err == EPERM)
		snprintf(buf, len, "%s", ADVICE_OUTER_EPERM);
	else
		snprintf(buf, len, "unexpected error: %s", strerror(err));
}

static void
probe_namespaces(struct doctor_result *r, void *arg)
{
	char failed[sizeof(r->detail)] = "";
	const struct ns_kind *first = NULL;
	const char *step;
	size_t i, nbad = 0;
	int err = 0;

	(void)arg;
	if (enter_userns(&step) == -1) {
		doctor_verdict(
		    r, DOCTOR_NO, "", "%s: %s", step, strerror(errno));
		return;
	}
	for (i = 0; i < NITEMS(ns_kinds); i++) {
		if (unshare(ns_kinds[i].flag) == 0)
			continue;
		if (nbad++ == 0) {
			first = &ns_kinds[i];
			err = errno;
		}
		ph_catf(failed, sizeof(failed), "%s%s: %s",
		    nbad > 1 ? "; " : "", ns_kinds[i].name, strerror(errno));
	}
	if (first == NULL) {
		doctor_verdict(r, DOCTOR_YES, "", "mount, pid, net, ipc, uts");
		return;
	}
	doctor_verdict(r, nbad < NITEMS(ns_kinds) ? DOCTOR_PARTIAL : DOCTOR_NO,
	    "", "%s", failed);
	ns_advice(first, err, r->advice, sizeof(r->advice));
}

/* --- network namespace --------------------------------------------------- */

/* Listens on 127.0.0.1 and connects to it.  Returns 0, or -1 and WHY. */
static int
loopback_roundtrip(char *why, size_t len)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sin);
	int l = -1, s = -1, ret = -1;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    bind(l, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(l, 1) == -1 ||
	    getsockname(l, (struct sockaddr *)&sin, &sl) == -1) {
		snprintf(
		    why, len, "listening on 127.0.0.1: %s", strerror(errno));
		goto out;
	}
	/* The backlog completes the handshake: no accept() needed. */
	if ((s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    connect(s, (struct sockaddr *)&sin, sl) == -1) {
		snprintf(why, len, "connecting to 127.0.0.1:%u: %s",
		    ntohs(sin.sin_port), strerror(errno));
		goto out;
	}
	ret = 0;
out:
	if (l != -1)
		close(l);
	if (s != -1)
		close(s);
	return ret;
}

/*
 * Checks that 192.0.2.1 (TEST-NET-1) is unreachable at once: the
 * namespace has no route, so no packet leaves.  Returns 0, or -1 and WHY.
 */
static int
outside_unreachable(char *why, size_t len)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	int s, ret = -1;

	sin.sin_port = htons(9);
	sin.sin_addr.s_addr = htonl(0xc0000201);
	if ((s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	         0)) == -1) {
		snprintf(why, len, "socket: %s", strerror(errno));
		return -1;
	}
	if (connect(s, (struct sockaddr *)&sin, sizeof(sin)) == 0)
		snprintf(why, len, "192.0.2.1:9 is reachable: a route leaves");
	else if (errno != ENETUNREACH)
		snprintf(why, len,
		    "connecting to 192.0.2.1:9 gave %s, not ENETUNREACH",
		    strerror(errno));
	else
		ret = 0;
	close(s);
	return ret;
}

static void
probe_network(struct doctor_result *r, void *arg)
{
	char why[200];
	const char *step;

	(void)arg;
	if (enter_userns(&step) == -1)
		doctor_verdict(
		    r, DOCTOR_NO, "", "%s: %s", step, strerror(errno));
	else if (unshare(CLONE_NEWNET) == -1)
		doctor_verdict(r, DOCTOR_NO,
		    errno == EPERM ? ADVICE_OUTER_EPERM : "",
		    "unshare(CLONE_NEWNET): %s", strerror(errno));
	else if (net_lo_up(why, sizeof(why)) == -1)
		doctor_verdict(r, DOCTOR_NO,
		    "an outer seccomp filter or LSM may refuse netlink "
		    "sockets: allow socket(AF_NETLINK)",
		    "bringing lo up: %s", why);
	else if (loopback_roundtrip(why, sizeof(why)) == -1 ||
	    outside_unreachable(why, sizeof(why)) == -1)
		doctor_verdict(r, DOCTOR_NO, "", "%s", why);
	else
		doctor_verdict(r, DOCTOR_YES, "",
		    "lo up; 127.0.0.1 listener accepts; 192.0.2.1 unreachable "
		    "(ENETUNREACH)");
}

/* --- capture ------------------------------------------------------------- */

#define CAPTURE_PORT 9 /* discard: what the listener takes does not matter */

/*
 * With the local routes up, a wildcard listener on CAPTURE_PORT accepts
 * a connection to 192.0.2.1 (TEST-NET-1, answered inside) and the
 * accepted socket's local address is 192.0.2.1.  Returns 0, or -1 and
 * WHY.
 */
static int
capture_roundtrip(char *why, size_t len)
{
	static const uint16_t port = CAPTURE_PORT;
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	const uint8_t *a = NULL;
	int l = -1, s = -1, c = -1, ret = -1;

	sin.sin_port = htons(CAPTURE_PORT);
	sin.sin_addr.s_addr = htonl(0xc0000201);
	if (net_capture_routes(why, len) != 0 ||
	    net_listen_capture(&port, 1, &l, 1, why, len) != 1)
		goto out;
	if ((s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    connect(s, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    (c = accept4(l, NULL, NULL, SOCK_CLOEXEC)) == -1 ||
	    getsockname(c, (struct sockaddr *)&ss, &sl) == -1) {
		snprintf(why, len, "connecting to 192.0.2.1:%u: %s",
		    CAPTURE_PORT, strerror(errno));
		goto out;
	}
	/* 192.0.2.1, or ::ffff:192.0.2.1 on the dual-stack listener. */
	if (ss.ss_family == AF_INET)
		a = (const uint8_t *)&((struct sockaddr_in *)&ss)->sin_addr;
	else if (ss.ss_family == AF_INET6)
		a = ((struct sockaddr_in6 *)&ss)->sin6_addr.s6_addr + 12;
	if (a == NULL || memcmp(a, "\xc0\x00\x02\x01", 4) != 0)
		snprintf(
		    why, len, "the accepted connection does not say 192.0.2.1");
	else
		ret = 0;
out:
	if (l != -1)
		close(l);
	if (s != -1)
		close(s);
	if (c != -1)
		close(c);
	return ret;
}

/*
 * Capture (pinhole run without --no-capture): the local routes for every
 * address and a wildcard listener that sees where a connection went.
 */
static void
probe_capture(struct doctor_result *r, void *arg)
{
	char why[200];
	const char *step;

	(void)arg;
	if (enter_userns(&step) == -1)
		doctor_verdict(
		    r, DOCTOR_NO, "", "%s: %s", step, strerror(errno));
	else if (unshare(CLONE_NEWNET) == -1 ||
	    net_lo_up(why, sizeof(why)) == -1)
		doctor_verdict(r, DOCTOR_NO, "",
		    "no network namespace with lo (see the network row)");
	else if (capture_roundtrip(why, sizeof(why)) == -1)
		doctor_verdict(r, DOCTOR_NO,
		    "pinhole run fails at start unless given --no-capture "
		    "(programs that ignore the proxy variables then get "
		    "ENETUNREACH)",
		    "%s", why);
	else
		doctor_verdict(r, DOCTOR_YES, "",
		    "local routes for every address; a listener on port %u "
		    "accepts a connection to 192.0.2.1:%u and sees 192.0.2.1",
		    CAPTURE_PORT, CAPTURE_PORT);
}

/* --- mounts -------------------------------------------------------------- */

/*
 * Binds the fresh proc's sys over itself read-only, as the mount view
 * does, and checks that the mount says so.  Returns 0, or -1 with errno.
 */
static int
proc_sys_readonly(void)
{
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
	struct statvfs sv;
	int t, ret = -1;

	t = open_tree(AT_FDCWD, PROBE_DIR "/proc/sys",
	    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (t == -1)
		return -1;
	if (mount_setattr(t, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
	        sizeof(attr)) == 0 &&
	    move_mount(t, "", AT_FDCWD, PROBE_DIR "/proc/sys",
	        MOVE_MOUNT_F_EMPTY_PATH) == 0) {
		if (statvfs(PROBE_DIR "/proc/sys", &sv) == 0 &&
		    (sv.f_flag & ST_RDONLY) != 0)
			ret = 0;
		else
			errno = EPERM; /* still writable: not what run needs */
	}
	close(t);
	return ret;
}

/*
 * Mounts a fresh proc on a fresh tmpfs, as PID 1 of a new pid namespace,
 * and checks that its /proc/self is 1.  Returns 0, or -1 with R filled.
 */
static int
fresh_proc(struct doctor_result *r)
{
	char self[16] = "";
	const char *what;
	int err;

	what = "making / private";
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
		goto fail;
	what = "mounting a tmpfs on " PROBE_DIR;
	if (mount("tmpfs", PROBE_DIR, "tmpfs", MS_NOSUID | MS_NODEV,
	        "mode=0755") == -1)
		goto fail;
	what = "mkdir " PROBE_DIR "/proc";
	if (mkdir(PROBE_DIR "/proc", 0555) == -1)
		goto fail;
	what = "mounting proc";
	if (mount("proc", PROBE_DIR "/proc", "proc",
	        MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == -1)
		goto fail;
	what = "reading /proc/self";
	if (readlink(PROBE_DIR "/proc/self", self, sizeof(self) - 1) == -1)
		goto fail;
	if (strcmp(self, "1") != 0) {
		doctor_verdict(r, DOCTOR_NO, "",
		    "the fresh /proc/self is %s, not 1: the pid namespace "
		    "is not its own",
		    self);
		return -1;
	}
	/* The view binds /proc/sys over itself read-only (no Landlock needed). */
	what = "binding /proc/sys read-only";
	if (proc_sys_readonly() == -1)
		goto fail;
	return 0;
fail:
	err = errno;
	doctor_verdict(r, DOCTOR_NO, "", "%s: %s", what, strerror(err));
	if (err == EPERM) /* proc is refused where /proc is masked */
		doctor_advise(r, "%s",
		    strcmp(what, "mounting proc") == 0 ? ADVICE_PROC_MASKED
		                                       : ADVICE_OUTER_EPERM);
	return -1;
}

#define ADVICE_OVERLAY                                                         \
	"use Linux 5.11 or later with CONFIG_OVERLAY_FS, which can mount "     \
	"an overlayfs in a user namespace (userxattr, and user.* attributes "  \
	"on tmpfs: 6.6)"

/*
 * The home's per-run layer as the mount view makes it (mount.c
 * capture_home): an overlayfs with userxattr, its layers on the probe's
 * tmpfs, and a file written through it lands in the upper layer.
 * Returns 0, or -1 with errno.
 */
static int
overlay_works(void)
{
	int fs, mnt = -1, fd;

	if ((mkdir(PROBE_DIR "/l", 0755) != 0 ||
	        mkdir(PROBE_DIR "/u", 0755) != 0 ||
	        mkdir(PROBE_DIR "/w", 0755) != 0) ||
	    (fs = fsopen("overlay", FSOPEN_CLOEXEC)) < 0)
		return -1;
	if (fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir", PROBE_DIR "/l", 0) ==
	        0 &&
	    fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", PROBE_DIR "/u", 0) ==
	        0 &&
	    fsconfig(fs, FSCONFIG_SET_STRING, "workdir", PROBE_DIR "/w", 0) ==
	        0 &&
	    fsconfig(fs, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) == 0 &&
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
		mnt = fsmount(fs, FSMOUNT_CLOEXEC, 0);
	close(fs);
	if (mnt < 0)
		return -1;
	fd = openat(mnt, "f", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	close(mnt);
	if (fd < 0)
		return -1;
	close(fd);
	return access(PROBE_DIR "/u/f", F_OK);
}

/* Clones / as the mount view does and makes the clone read-only. */
static void
readonly_view(struct doctor_result *r)
{
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
	int fd;

	fd = open_tree(
	    AT_FDCWD, "/", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (fd == -1)
		doctor_verdict(r, DOCTOR_PARTIAL,
		    errno == ENOSYS ? ADVICE_OLD_KERNEL : "",
		    "fresh /proc works; "
		    "open_tree(OPEN_TREE_CLONE|AT_RECURSIVE) "
		    "of /: %s",
		    strerror(errno));
	else if (mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
	             sizeof(attr)) == -1)
		doctor_verdict(r, DOCTOR_PARTIAL,
		    errno == ENOSYS ? ADVICE_OLD_KERNEL : "",
		    "fresh /proc works; mount_setattr(MOUNT_ATTR_RDONLY): %s",
		    strerror(errno));
	else if (overlay_works() != 0)
		/* run works without it: its home stays read-only, said. */
		doctor_verdict(r, DOCTOR_YES, ADVICE_OVERLAY,
		    "fresh /proc as PID 1, its sys read-only; / cloned "
		    "read-only (open_tree, mount_setattr); but overlayfs in "
		    "a user namespace: %s, so the sandbox's home stays "
		    "read-only, with no tool cache",
		    strerror(errno));
	else
		doctor_verdict(r, DOCTOR_YES, "",
		    "fresh /proc as PID 1, its sys read-only; / cloned "
		    "read-only (open_tree, mount_setattr); the home's "
		    "writable layer (overlayfs, userxattr)");
	if (fd != -1)
		close(fd);
}

static void
pid1_mounts(struct doctor_result *r)
{
	if (fresh_proc(r) == 0)
		readonly_view(r);
}

/*
 * Forks the PID 1 of the pid namespace just entered, which answers for
 * the probe; R says why when it cannot.  doctor_in_child's deadline
 * bounds the wait.
 */
static void
pid1_answers(struct doctor_result *r)
{
	pid_t pid;
	int status = 0;

	if ((pid = fork()) == -1) {
		doctor_verdict(r, DOCTOR_NO, "", "fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		pid1_mounts(r);
		answer(r);
	}
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		continue;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		_exit(0); /* its answer is the probe's */
	ended(
	    r, WIFSIGNALED(status) ? WTERMSIG(status) : 0, WEXITSTATUS(status));
}

static void
probe_mounts(struct doctor_result *r, void *arg)
{
	const char *step;

	(void)arg;
	if (enter_userns(&step) == -1)
		doctor_verdict(
		    r, DOCTOR_NO, "", "%s: %s", step, strerror(errno));
	else if (unshare(CLONE_NEWNS | CLONE_NEWPID) == -1)
		doctor_verdict(r, DOCTOR_NO,
		    errno == EPERM ? ADVICE_OUTER_EPERM : "",
		    "unshare(CLONE_NEWNS|CLONE_NEWPID): %s", strerror(errno));
	else
		pid1_answers(r);
}

/* --- Landlock ------------------------------------------------------------ */

/* What each ABI version brought beyond filesystem rules (1-3). */
/* --- AppArmor's restriction of user namespaces (Ubuntu 23.10+) ----------- */

#define APPARMOR_RESTRICT                                                      \
	"/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
#define APPARMOR_PROFILES "/sys/kernel/security/apparmor/profiles"
#define ADVICE_APPARMOR_LOAD                                                   \
	"load the profile (the .deb does): cp "                                \
	"/usr/share/pinhole/apparmor/usr.bin.pinhole /etc/apparmor.d/ && "     \
	"apparmor_parser -r /etc/apparmor.d/usr.bin.pinhole"

/*
 * Whether PROFILES (the kernel's list, one "NAME (MODE)" a line) holds a
 * profile called pinhole.  Returns 1 or 0, or -1 with errno set when the
 * list cannot be read (absent, or readable only by root).
 */
static int
profile_loaded(const char *profiles)
{
	static const char name[] = "pinhole ";
	char *line = NULL;
	size_t cap = 0;
	FILE *f;
	int found = 0;

	if ((f = fopen(profiles, "re")) == NULL)
		return -1;
	while (!found && getline(&line, &cap, f) != -1)
		found = strncmp(line, name, sizeof(name) - 1) == 0;
	free(line);
	fclose(f);
	return found;
}

void
doctor_apparmor_check(
    struct doctor_result *r, const char *restrict_path, const char *profiles)
{
	int restricted = read_int(restrict_path), loaded;

	if (restricted != 1) {
		doctor_verdict(r, DOCTOR_YES, "",
		    restricted == -1 ? "not restricted (no %s)"
		                     : "not restricted (%s is 0)",
		    "kernel.apparmor_restrict_unprivileged_userns");
		return;
	}
	loaded = profile_loaded(profiles);
	if (loaded == 1)
		doctor_verdict(r, DOCTOR_YES, "",
		    "user namespaces restricted; profile pinhole is loaded");
	else if (loaded == 0)
		doctor_verdict(r, DOCTOR_NO, ADVICE_APPARMOR_LOAD,
		    "user namespaces restricted; no profile pinhole is loaded");
	else
		doctor_verdict(r, DOCTOR_PARTIAL,
		    "as root, pinhole doctor (or aa-status) tells; the userns "
		    "row says whether they work",
		    "user namespaces restricted; cannot tell whether profile "
		    "pinhole is loaded: %s: %s",
		    profiles, strerror(errno));
}

static void
probe_apparmor(struct doctor_result *r, void *arg)
{
	(void)arg;
	doctor_apparmor_check(r, APPARMOR_RESTRICT, APPARMOR_PROFILES);
}

static const char *const landlock_adds[] = {
    NULL, NULL, NULL, NULL, "net", "ioctl", "scopes", "logging"};

/* The active LSMs as the lsm= boot parameter lists them, or "...". */
static void
lsm_list(char *buf, size_t len)
{
	ssize_t n = -1;
	int fd;

	if ((fd = open("/sys/kernel/security/lsm", O_RDONLY | O_CLOEXEC)) !=
	    -1) {
		n = read(fd, buf, len - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (buf[0] == '\0')
		snprintf(buf, len, "...");
}

static void
landlock_missing(struct doctor_result *r, int err)
{
	char lsm[128];

	if (err == EOPNOTSUPP) {
		lsm_list(lsm, sizeof(lsm));
		doctor_verdict(r, DOCTOR_NO, "",
		    "Landlock is built in but not enabled at boot; writes are "
		    "stopped by the read-only mounts alone");
		doctor_advise(r,
		    "boot with lsm=%s,landlock (pinhole runs without it)", lsm);
	} else if (err == ENOSYS)
		doctor_verdict(r, DOCTOR_NO,
		    "use Linux 5.13+ built with CONFIG_SECURITY_LANDLOCK=y "
		    "(pinhole runs without it)",
		    "this kernel has no Landlock (ENOSYS); writes are stopped "
		    "by the read-only mounts alone");
	else
		doctor_verdict(r, DOCTOR_NO,
		    err == EPERM ? ADVICE_OUTER_EPERM : "",
		    "landlock_create_ruleset: %s", strerror(err));
}

/*
 * Restricts the caller with a ruleset that handles directory reads and
 * allows none, then checks that "/" cannot be listed.  Returns 0, or -1
 * with R filled.
 */
static int
landlock_enforces(struct doctor_result *r)
{
	struct landlock_ruleset_attr attr = {
	    .handled_access_fs = LANDLOCK_ACCESS_FS_READ_DIR};
	const char *what;
	int fd = -1, dfd = -1, ret = -1;

	what = "landlock_create_ruleset";
	if ((fd = (int)syscall(
	         SYS_landlock_create_ruleset, &attr, sizeof(attr), 0)) == -1)
		goto fail;
	what = "prctl(PR_SET_NO_NEW_PRIVS)";
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		goto fail;
	what = "landlock_restrict_self";
	if (syscall(SYS_landlock_restrict_self, fd, 0) == -1)
		goto fail;
	if ((dfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1 ||
	    errno != EACCES) {
		doctor_verdict(r, DOCTOR_PARTIAL, "",
		    "a ruleset loads but does not apply: / can still be read");
		goto out;
	}
	ret = 0;
	goto out;
fail:
	doctor_verdict(r, DOCTOR_PARTIAL,
	    errno == EPERM ? ADVICE_OUTER_EPERM : "", "%s: %s", what,
	    strerror(errno));
out:
	if (fd != -1)
		close(fd);
	if (dfd != -1)
		close(dfd);
	return ret;
}

static void
probe_landlock(struct doctor_result *r, void *arg)
{
	long abi;
	size_t i;
	int newer = 0;

	(void)arg;
	abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
	    LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 1) {
		landlock_missing(r, abi == 0 ? EOPNOTSUPP : errno);
		return;
	}
	if (landlock_enforces(r) == -1)
		return;
	doctor_verdict(r, DOCTOR_YES, "", "ABI %ld: filesystem", abi);
	for (i = 1; i < NITEMS(landlock_adds); i++) {
		if (landlock_adds[i] == NULL)
			continue;
		if ((long)i <= abi)
			ph_catf(r->detail, sizeof(r->detail), ", %s (%zu)",
			    landlock_adds[i], i);
		else if (!newer++)
			ph_catf(r->detail, sizeof(r->detail),
			    "; newer kernels add %s (%zu)", landlock_adds[i],
			    i);
	}
}

/* --- seccomp ------------------------------------------------------------- */

/*
 * Installs a filter that allows everything but acct(), and checks that
 * acct() then fails with the filter's errno.  Returns 0, or -1 with R
 * filled.
 */
static int
seccomp_trial(struct doctor_result *r)
{
	scmp_filter_ctx sc;
	int rc, ret = -1;

	if ((sc = seccomp_init(SCMP_ACT_ALLOW)) == NULL) {
		doctor_verdict(r, DOCTOR_NO, "", "seccomp_init failed");
		return -1;
	}
	/* Raw errors from the kernel, not libseccomp's -ECANCELED. */
	(void)seccomp_attr_set(sc, SCMP_FLTATR_API_SYSRAWRC, 1);
	if ((rc = seccomp_rule_add(
	         sc, SCMP_ACT_ERRNO(PROBE_ERRNO), SCMP_SYS(acct), 0)) < 0 ||
	    (rc = seccomp_load(sc)) < 0) {
		doctor_verdict(r, DOCTOR_NO,
		    rc == -EINVAL ? "use a kernel built with "
		                    "CONFIG_SECCOMP_FILTER"
		                  : ADVICE_OUTER_EPERM,
		    "loading a filter: %s", strerror(-rc));
		goto out;
	}
	/* "/" is a directory: acct() can only fail, filtered or not. */
	if (syscall(SYS_acct, "/") != -1 || errno != PROBE_ERRNO) {
		doctor_verdict(r, DOCTOR_NO, "",
		    "a filter loads but does not apply: acct() gave %s",
		    strerror(errno));
		goto out;
	}
	ret = 0;
out:
	seccomp_release(sc);
	return ret;
}

static void
probe_seccomp(struct doctor_result *r, void *arg)
{
	const struct scmp_version *v = seccomp_version();
	int mode;

	(void)arg;
	if ((mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0)) == -1) {
		doctor_verdict(r, DOCTOR_NO,
		    "use a kernel built with CONFIG_SECCOMP_FILTER",
		    "prctl(PR_GET_SECCOMP): %s", strerror(errno));
		return;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		doctor_verdict(r, DOCTOR_NO, "",
		    "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
		return;
	}
	if (seccomp_trial(r) == -1)
		return;
	doctor_verdict(r, DOCTOR_YES, "",
	    "a filter loads and applies (libseccomp %u.%u.%u)%s", v->major,
	    v->minor, v->micro,
	    mode == 2 ? "; an outer filter is in place too" : "");
}

/* --- running ------------------------------------------------------------- */

/* Replaces control bytes: details quote paths, and go to terminals. */
static void
printable(char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

void
doctor_printable(struct doctor_result *r)
{
	printable(r->detail);
	printable(r->advice);
}

void
doctor_append(struct doctor_result *r, const char *fmt, ...)
{
	size_t off = strlen(r->detail);
	va_list ap;

	va_start(ap, fmt);
	if (off + 1 < sizeof(r->detail))
		vsnprintf(r->detail + off, sizeof(r->detail) - off, fmt, ap);
	va_end(ap);
}

static void
run_one(const struct probe *p, int userns_ok, struct doctor_result *r)
{
	memset(r, 0, sizeof(*r));
	r->feature = p->name;
	r->required = p->required;
	if (p->needs_userns && !userns_ok)
		doctor_verdict(r, DOCTOR_NO, "make user namespaces work first",
		    "not tried: user namespaces do not work");
	else
		doctor_in_child(p->fn, NULL, r, DOCTOR_TIMEOUT_MS);
	doctor_printable(r);
}

size_t
doctor_run(struct doctor_result *res, size_t max)
{
	size_t i, n = 0;
	int userns_ok = 1;

	for (i = 0; i < NITEMS(probes) && n < max; i++) {
		run_one(&probes[i], userns_ok, &res[n]);
		if (probes[i].fn == probe_userns)
			userns_ok = res[n].status == DOCTOR_YES;
		n++;
	}
	return n;
}

int
doctor_probe(const char *name, struct doctor_result *res)
{
	size_t i;

	for (i = 0; i < NITEMS(probes); i++)
		if (strcmp(probes[i].name, name) == 0) {
			run_one(&probes[i], 1, res);
			return 0;
		}
	return -1;
}

const char *
doctor_feature(size_t i)
{
	return i < NITEMS(probes) ? probes[i].name : NULL;
}

const char *
doctor_status_name(enum doctor_status st)
{
	switch (st) {
	case DOCTOR_YES:
		return "yes";
	case DOCTOR_PARTIAL:
		return "partial";
	default:
		return "no";
	}
}

int
doctor_exit_status(const struct doctor_result *res, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (res[i].required && res[i].status != DOCTOR_YES)
			return 1;
	return 0;
}
