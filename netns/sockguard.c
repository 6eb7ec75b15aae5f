/*
 * sockguard.c: the supervisor of the command's socket addresses (see
 * sockguard.h for what it promises).
 *
 * Workers wait for notifications themselves (the kernel gives each
 * notification to one of them): no hand-off.  An emulated call may block
 * (a connect to a full backlog, a send to a full buffer), maybe on
 * another thread of the sandbox whose own call is queued here, so a
 * worker that takes a notification when no other waits starts one more,
 * up to WORKERS_MAX.  When a notification's target is interrupted (its ID
 * no longer valid) while its worker is blocked, the watcher interrupts
 * that worker with a signal (INTR_SIG, handled without SA_RESTART), so
 * nothing stays stuck.
 *
 * Each worker: pidfd of the target thread, pidfd_getfd of its socket,
 * one copy of the address, data and control from its memory
 * (process_vm_readv), and only then SECCOMP_IOCTL_NOTIF_ID_VALID: what
 * was read belongs to the target as it was when it made the call (its
 * PID was not reused).  From there on only the copies are used.
 */
#include <linux/seccomp.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <seccomp.h>

#define SOCKGUARD_INTERNAL
#include "netns/sockguard.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

#define WORKERS_MAX 64 /* calls answered at once */
#define DATA_MAX (256 * 1024) /* bytes of one emulated send */
#define CONTROL_MAX SOCKGUARD_CONTROL_MAX
#define MMSG_MAX 64 /* messages of one emulated sendmmsg */
#define WATCH_MS 100
#define INTR_SIG SIGURG

static atomic_int live; /* supervisors not yet freed */

enum op { OP_OTHER, OP_CONNECT, OP_SENDTO, OP_SENDMSG, OP_SENDMMSG, OP_SOCKET };

static const struct {
	const char *name;
	enum op op;
} ops[] = {
    {"connect", OP_CONNECT},
    {"sendto", OP_SENDTO},
    {"sendmsg", OP_SENDMSG},
    {"sendmmsg", OP_SENDMMSG},
    {"socket", OP_SOCKET},
};
#define NOPS (sizeof(ops) / sizeof(ops[0]))

/* One notification, as a worker needs it. */
struct call {
	uint64_t id;
	pid_t pid;
	uint32_t arch;
	enum op op;
	uint64_t args[6];
};

struct slot {
	struct sockguard *g;
	pthread_t t;
	int used; /* 0: free, 1: a worker waits, 2: it answers c */
	struct call c;
	char *data; /* DATA_MAX, kept between calls */
};

struct sockguard {
	int fd;
	struct sockguard_allow *allow;
	size_t nallow;
	struct seccomp_notif_sizes sizes;
	int native[NOPS]; /* the calls' numbers in the native ABI */
	int notes; /* where refused ICMP sockets are reported; -1 */
	atomic_int said[3]; /* reported: ICMP, ICMPv6, raw */
	pthread_mutex_t lock;
	unsigned idle; /* workers waiting for a notification */
	unsigned threads; /* alive, holding G; the last frees it */
	pthread_mutex_t recv_lock; /* one worker waits at a time */
	struct slot slots[WORKERS_MAX];
};

/* What a worker took from the target. */
struct target {
	pid_t pid;
	int pidfd, sock, cwd;
};

/* --- the decision ---------------------------------------------------------- */

int
sockguard_allow_path(const char *path, struct sockguard_allow *a)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return -1;
	if (!S_ISSOCK(st.st_mode)) {
		errno = ENOTSOCK;
		return -1;
	}
	a->dev = st.st_dev;
	a->ino = st.st_ino;
	return 0;
}

/* Does the dump in BUF (N bytes) name (KDEV, INO)?  1, 0, or -errno. */
static int
diag_scan(char *buf, size_t n, uint32_t kdev, uint64_t ino, int *done)
{
	struct nlmsghdr *h = (void *)buf;
	const struct unix_diag_vfs *v;
	struct rtattr *a;
	int len;

	for (; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type == NLMSG_DONE) {
			*done = 1;
			return 0;
		}
		if (h->nlmsg_type == NLMSG_ERROR)
			return -EPROTO;
		len = (int)(h->nlmsg_len -
		    NLMSG_LENGTH(sizeof(struct unix_diag_msg)));
		a = (void *)((char *)NLMSG_DATA(h) +
		    NLMSG_ALIGN(sizeof(struct unix_diag_msg)));
		for (; RTA_OK(a, len); a = RTA_NEXT(a, len)) {
			if (a->rta_type != UNIX_DIAG_VFS ||
			    RTA_PAYLOAD(a) < (int)sizeof(*v))
				continue;
			v = RTA_DATA(a);
			if (v->udiag_vfs_ino == ino && v->udiag_vfs_dev == kdev)
				return 1;
		}
	}
	return 0;
}

/*
 * unix_diag gives the kernel's own dev_t (MAJOR << 20 | MINOR), not the
 * encoding stat() returns.
 */
int
sockguard_diag_bound(dev_t dev, ino_t ino)
{
	struct {
		struct nlmsghdr h;
		struct unix_diag_req r;
	} req;
	uint32_t kdev = (major(dev) << 20) | minor(dev);
	long buf[8192 / sizeof(long)];
	int fd, done = 0, r = -EIO;
	ssize_t n;

	if ((fd = socket(
	         AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)) < 0)
		return -1;
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = sizeof(req);
	req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.r.sdiag_family = AF_UNIX;
	req.r.udiag_states = ~0U;
	req.r.udiag_show = UDIAG_SHOW_VFS;
	if (send(fd, &req, sizeof(req), 0) != (ssize_t)sizeof(req))
		goto out;
	r = 0;
	while (r == 0 && !done) {
		if ((n = recv(fd, buf, sizeof(buf), 0)) <= 0) {
			r = n < 0 ? -errno : -EPROTO;
			break;
		}
		r = diag_scan((char *)buf, (size_t)n, kdev, ino, &done);
	}
out:
	close(fd);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return r;
}

static int
allowed_inode(
    const struct sockguard_allow *allow, size_t nallow, const struct stat *st)
{
	size_t i;

	for (i = 0; i < nallow; i++)
		if (allow[i].dev == st->st_dev && allow[i].ino == st->st_ino)
			return 1;
	return sockguard_diag_bound(st->st_dev, st->st_ino);
}

int
sockguard_decide_unix(const struct sockguard_allow *allow, size_t nallow,
    int cwd, const struct sockaddr_un *sun, socklen_t len, int *pathfd)
{
	const size_t off = offsetof(struct sockaddr_un, sun_path);
	char path[sizeof(sun->sun_path) + 1];
	struct stat st;
	int fd, r;

	*pathfd = -1;
	if (len > sizeof(*sun))
		return EINVAL;
	if (len <= off || sun->sun_path[0] == '\0')
		return 0; /* unnamed, or abstract: this namespace's own */
	memcpy(path, sun->sun_path, len - off);
	path[len - off] = '\0';
	fd = openat(path[0] == '/' ? AT_FDCWD : cwd, path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
		r = ECONNREFUSED; /* what the kernel says for a plain file */
	else if ((r = allowed_inode(allow, nallow, &st)) == 1)
		r = 0;
	else
		r = r == 0 ? ECONNREFUSED : EACCES; /* no answer: fail closed */
	if (r == 0)
		*pathfd = fd;
	else
		close(fd);
	return r;
}

/* --- the target ------------------------------------------------------------ */

static int
peek(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = {buf, len}, r = {(void *)(uintptr_t)addr, len};

	if (len == 0)
		return 0;
	if (process_vm_readv(pid, &l, 1, &r, 1, 0) != (ssize_t)len)
		return errno == ESRCH || errno == EPERM ? errno : EFAULT;
	return 0;
}

static int
poke(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec l = {(void *)(uintptr_t)buf, len};
	struct iovec r = {(void *)(uintptr_t)addr, len};

	return process_vm_writev(pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0
	                                                               : EFAULT;
}

/* The target thread's pidfd and its socket.  0 or errno. */
static int
acquire(const struct call *c, struct target *t)
{
	struct stat st;

	t->pid = c->pid;
	t->pidfd = (int)syscall(SYS_pidfd_open, c->pid, PIDFD_THREAD);
	if (t->pidfd < 0 && errno == EINVAL)
		t->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
	if (t->pidfd < 0)
		return errno;
	/* EPERM: the target made itself undumpable; refused, not hung. */
	t->sock = (int)syscall(SYS_pidfd_getfd, t->pidfd, (int)c->args[0], 0);
	if (t->sock < 0)
		return errno;
	/* The kernel looks at the descriptor before the address. */
	if (fstat(t->sock, &st) != 0 || !S_ISSOCK(st.st_mode))
		return ENOTSOCK;
	return 0;
}

static void
release(struct target *t)
{
	if (t->cwd >= 0)
		close(t->cwd);
	if (t->sock >= 0)
		close(t->sock);
	if (t->pidfd >= 0)
		close(t->pidfd);
}

static int
still_waiting(const struct sockguard *g, const struct call *c)
{
	uint64_t id = c->id;

	return ioctl(g->fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

/*
 * The address a call names: read it (LEN bytes at ADDR), open the
 * target's working directory when a relative Unix path needs it, check
 * that the target still waits, decide, and rewrite a Unix path to the
 * file that was checked.  0 or errno; *PATHFD to close.
 */
static int
vet_addr(struct sockguard *g, const struct call *c, struct target *t,
    uint64_t addr, uint64_t len, struct sockaddr_storage *ss, socklen_t *sslen,
    int *pathfd)
{
	struct sockaddr_un *sun = (struct sockaddr_un *)ss;
	char proc[64];
	int e;

	*pathfd = -1;
	if (len > sizeof(*ss))
		return EINVAL;
	*sslen = (socklen_t)len;
	memset(ss, 0, sizeof(*ss));
	if ((e = peek(t->pid, addr, ss, len)) != 0)
		return e;
	if (len > offsetof(struct sockaddr_un, sun_path) &&
	    ss->ss_family == AF_UNIX && sun->sun_path[0] != '\0' &&
	    sun->sun_path[0] != '/' && t->cwd < 0) {
		snprintf(proc, sizeof(proc), "/proc/%d/cwd", (int)t->pid);
		if ((t->cwd = open(proc, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			return errno == ENOENT ? ESRCH : errno;
	}
	if (!still_waiting(g, c))
		return ESRCH;
	if (ss->ss_family != AF_UNIX)
		return 0;
	if ((e = sockguard_decide_unix(
	         g->allow, g->nallow, t->cwd, sun, *sslen, pathfd)) != 0 ||
	    *pathfd < 0)
		return e;
	memset(sun->sun_path, 0, sizeof(sun->sun_path));
	snprintf(
	    sun->sun_path, sizeof(sun->sun_path), "/proc/self/fd/%d", *pathfd);
	*sslen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
	    strlen(sun->sun_path) + 1);
	return 0;
}

/* --- the calls ------------------------------------------------------------- */

static int
do_connect(
    struct sockguard *g, const struct call *c, struct target *t, long *ret)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int pathfd, e;

	e = vet_addr(
	    g, c, t, c->args[1], (uint32_t)c->args[2], &ss, &len, &pathfd);
	if (e == 0)
		e = connect(t->sock, (struct sockaddr *)&ss, len) == 0 ? 0
		                                                       : errno;
	if (pathfd >= 0)
		close(pathfd);
	*ret = 0;
	return e;
}

/* A stream socket takes part of a long send; others need all of it. */
static int
clip(int sock, size_t *len)
{
	int type = 0;
	socklen_t tl = sizeof(type);

	if (*len <= DATA_MAX)
		return 0;
	if (getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &tl) != 0)
		return errno;
	if (type != SOCK_STREAM)
		return EMSGSIZE;
	*len = DATA_MAX;
	return 0;
}

static int
do_sendto(struct sockguard *g, const struct call *c, struct target *t,
    char *data, long *ret)
{
	struct sockaddr_storage ss;
	size_t len = c->args[2];
	socklen_t sslen;
	ssize_t n;
	int pathfd = -1, e;

	if ((e = clip(t->sock, &len)) != 0 ||
	    (e = peek(t->pid, c->args[1], data, len)) != 0)
		return e;
	e = vet_addr(
	    g, c, t, c->args[4], (uint32_t)c->args[5], &ss, &sslen, &pathfd);
	if (e == 0) {
		n = sendto(t->sock, data, len, (int)c->args[3] & ~MSG_ZEROCOPY,
		    (struct sockaddr *)&ss, sslen);
		e = n < 0 ? errno : 0;
		*ret = (long)n;
	}
	if (pathfd >= 0)
		close(pathfd);
	return e;
}

/* Gathers the target's iovecs (IOV, N) into DATA; *LEN their total. */
static int
gather(struct target *t, uint64_t iov, size_t n, char *data, size_t *len)
{
	struct iovec v[64];
	size_t i, k, total = 0, take;
	int e = 0;

	if (n > UIO_MAXIOV)
		return EMSGSIZE;
	for (i = 0; i < n && e == 0; i += k) {
		k = n - i < 64 ? n - i : 64;
		if ((e = peek(t->pid, iov + i * sizeof(*v), v, k * sizeof(*v))))
			break;
		for (size_t j = 0; j < k && e == 0; j++) {
			take = v[j].iov_len;
			if (take > DATA_MAX - total)
				take = DATA_MAX - total;
			e = peek(t->pid, (uintptr_t)v[j].iov_base, data + total,
			    take);
			total += take;
			if (take < v[j].iov_len)
				*len = SIZE_MAX; /* more than DATA_MAX */
		}
	}
	if (*len != SIZE_MAX)
		*len = total;
	return e;
}

/*
 * Control messages IN (INLEN bytes, the target's copy) into OUT
 * (CONTROL_MAX bytes, *OUTLEN used): the descriptors of SCM_RIGHTS are
 * replaced by GETFD's copies (recorded in FDS, *NFDS, for the caller to
 * close, also on failure), and SCM_CREDENTIALS are left out (the kernel
 * would refuse a PID that is not ours; a receiver asking for them gets
 * PID 1's).  Returns 0 or an errno value.
 */
int
sockguard_control(const void *in, size_t inlen, void *out, size_t *outlen,
    int *fds, int *nfds, int (*getfd)(void *, int), void *arg)
{
	struct msghdr m = {
	    .msg_control = (void *)(uintptr_t)in, .msg_controllen = inlen};
	struct cmsghdr *cm, *o;
	size_t n, i, at = 0;
	int *src, *dst;

	for (cm = CMSG_FIRSTHDR(&m); cm != NULL; cm = CMSG_NXTHDR(&m, cm)) {
		if (cm->cmsg_len < sizeof(*cm) ||
		    cm->cmsg_len >
		        inlen - (size_t)((const char *)cm - (const char *)in))
			return EINVAL;
		if (cm->cmsg_level == SOL_SOCKET &&
		    cm->cmsg_type == SCM_CREDENTIALS)
			continue;
		if (at + CMSG_ALIGN(cm->cmsg_len) > CONTROL_MAX)
			return ENOBUFS;
		o = (struct cmsghdr *)((char *)out + at);
		memcpy(o, cm, cm->cmsg_len);
		at += CMSG_ALIGN(cm->cmsg_len);
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		src = (int *)CMSG_DATA(cm);
		dst = (int *)CMSG_DATA(o);
		for (i = 0; i < n; i++) {
			if (*nfds >= CONTROL_MAX / (int)sizeof(int))
				return ETOOMANYREFS;
			if ((dst[i] = getfd(arg, src[i])) < 0)
				return errno;
			fds[(*nfds)++] = dst[i];
		}
	}
	*outlen = at;
	return 0;
}

static int
target_getfd(void *arg, int fd)
{
	const struct target *t = arg;

	return (int)syscall(SYS_pidfd_getfd, t->pidfd, fd, 0);
}

/*
 * One sendmsg: M is the target's msghdr, copied; FLAGS its flags.  Reads
 * what M points to, checks the target still waits, sends.
 */
static int
send_one(struct sockguard *g, const struct call *c, struct target *t,
    struct msghdr *m, int flags, char *data, long *ret)
{
	/* Aligned as struct cmsghdr, which they hold. */
	char inctl[CONTROL_MAX] __attribute__((aligned(8)));
	char outctl[CONTROL_MAX] __attribute__((aligned(8)));
	int fds[CONTROL_MAX / sizeof(int)], nfds = 0, pathfd = -1, e;
	struct sockaddr_storage ss;
	struct iovec iov;
	struct msghdr out;
	size_t len = 0, ctl = 0;
	ssize_t n;

	memset(&out, 0, sizeof(out));
	if (m->msg_controllen > CONTROL_MAX)
		return ENOBUFS;
	if ((e = gather(t, (uintptr_t)m->msg_iov, m->msg_iovlen, data, &len)))
		goto out;
	if (len == SIZE_MAX) {
		len = SIZE_MAX;
		if ((e = clip(t->sock, &len)) != 0)
			goto out;
	}
	if ((e = peek(t->pid, (uintptr_t)m->msg_control, inctl,
	         m->msg_controllen)) != 0)
		goto out;
	if ((e = sockguard_control(inctl, m->msg_controllen, outctl, &ctl, fds,
	         &nfds, target_getfd, t)) != 0)
		goto out;
	if (m->msg_name != NULL && m->msg_namelen > 0) {
		if ((e = vet_addr(g, c, t, (uintptr_t)m->msg_name,
		         m->msg_namelen, &ss, &out.msg_namelen, &pathfd)) != 0)
			goto out;
		out.msg_name = &ss;
	} else if (!still_waiting(g, c)) {
		e = ESRCH;
		goto out;
	}
	iov.iov_base = data;
	iov.iov_len = len;
	out.msg_iov = &iov;
	out.msg_iovlen = 1;
	out.msg_control = ctl > 0 ? outctl : NULL;
	out.msg_controllen = ctl;
	/* Zero-copy would pin DATA, which the next call reuses. */
	n = sendmsg(t->sock, &out, flags & ~MSG_ZEROCOPY);
	e = n < 0 ? errno : 0;
	*ret = (long)n;
out:
	while (nfds > 0)
		close(fds[--nfds]);
	if (pathfd >= 0)
		close(pathfd);
	return e;
}

static int
do_sendmsg(struct sockguard *g, const struct call *c, struct target *t,
    char *data, long *ret)
{
	struct msghdr m;
	int e;

	if ((e = peek(t->pid, c->args[1], &m, sizeof(m))) != 0)
		return e;
	return send_one(g, c, t, &m, (int)c->args[2], data, ret);
}

/* Sends up to MMSG_MAX messages; the count, or the first one's error. */
static int
do_sendmmsg(struct sockguard *g, const struct call *c, struct target *t,
    char *data, long *ret)
{
	struct mmsghdr mm[MMSG_MAX];
	size_t n = c->args[2] < MMSG_MAX ? c->args[2] : MMSG_MAX, i;
	uint64_t at;
	long sent;
	int e = 0;

	if ((e = peek(t->pid, c->args[1], mm, n * sizeof(mm[0]))) != 0)
		return e;
	for (i = 0; i < n; i++) {
		if ((e = send_one(g, c, t, &mm[i].msg_hdr, (int)c->args[3],
		         data, &sent)) != 0)
			break;
		mm[i].msg_len = (unsigned)sent;
		at = c->args[1] + i * sizeof(mm[0]) +
		    offsetof(struct mmsghdr, msg_len);
		(void)poke(t->pid, at, &mm[i].msg_len, sizeof(mm[i].msg_len));
	}
	*ret = (long)i;
	return i > 0 ? 0 : e;
}

/*
 * A socket() that asks for ICMP (seccomp.c's add_icmp): refused as the
 * kernel refuses it in the sandbox, never made; the first of each kind
 * reported on the notes socket, without waiting (a full socket loses
 * the report, never the answer).  Flags the kernel does not know make
 * EINVAL first, as there.
 */
static int
refuse_icmp(struct sockguard *g, const struct call *c)
{
	int type = (int)c->args[1], proto = (int)c->args[2], k;
	char note;
	int e;

	if (type & ~(0xf | SOCK_CLOEXEC | SOCK_NONBLOCK))
		return EINVAL;
	if ((type & 0xf) == SOCK_RAW) {
		note = SOCKGUARD_NOTE_RAW;
		k = 2;
		e = EPERM; /* no CAP_NET_RAW */
	} else {
		note = proto == IPPROTO_ICMPV6 ? SOCKGUARD_NOTE_ICMPV6
		                               : SOCKGUARD_NOTE_ICMP;
		k = proto == IPPROTO_ICMPV6;
		e = EACCES; /* ping_group_range "1 0" */
	}
	if (g->notes >= 0 && atomic_exchange(&g->said[k], 1) == 0)
		(void)send(g->notes, &note, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	return e;
}

/* The answer to C: *VAL, or an errno value. */
static int
answer(struct sockguard *g, const struct call *c, char *data, long *val)
{
	struct target t = {c->pid, -1, -1, -1};
	int e;

	*val = 0;
	if (c->op == OP_OTHER)
		return ENOSYS; /* sendmsg/sendmmsg of another ABI */
	if (c->op == OP_SOCKET)
		return refuse_icmp(g, c);
	if ((e = acquire(c, &t)) == 0)
		switch (c->op) {
		case OP_CONNECT:
			e = do_connect(g, c, &t, val);
			break;
		case OP_SENDTO:
			e = do_sendto(g, c, &t, data, val);
			break;
		case OP_SENDMSG:
			e = do_sendmsg(g, c, &t, data, val);
			break;
		default:
			e = do_sendmmsg(g, c, &t, data, val);
			break;
		}
	release(&t);
	return e;
}

/* --- the threads ----------------------------------------------------------- */

static void
respond(struct sockguard *g, uint64_t id, int err, long val)
{
	char buf[256] __attribute__((aligned(8)));
	struct seccomp_notif_resp *r = (void *)buf;

	memset(buf, 0, sizeof(buf));
	r->id = id;
	r->error = err != 0 ? -err : 0;
	r->val = err != 0 ? 0 : val;
	/* ENOENT: the target was interrupted, or is gone. */
	(void)ioctl(g->fd, SECCOMP_IOCTL_NOTIF_SEND, r);
}

/*
 * Which call NR of ARCH is.  By name: libseccomp gives i386's socket
 * calls pseudo numbers (their socketcall form) when asked by name.
 */
static enum op
op_of(const struct sockguard *g, uint32_t arch, int nr)
{
	int native = arch == seccomp_arch_native();
	char *name = native ? NULL : seccomp_syscall_resolve_num_arch(arch, nr);
	enum op op = OP_OTHER;
	size_t i;

	for (i = 0; i < NOPS && op == OP_OTHER; i++)
		if (native ? g->native[i] == nr
		           : name != NULL && strcmp(name, ops[i].name) == 0)
			op = ops[i].op;
	free(name);
	/* Another ABI's msghdr has another layout: not emulated. */
	if (!native && (op == OP_SENDMSG || op == OP_SENDMMSG))
		op = OP_OTHER;
	return op;
}

static int spawn(struct sockguard *g);

/*
 * Takes slot S for the notification REQ.  When no other worker is left
 * waiting, starts one more (up to WORKERS_MAX), so that a call that
 * blocks never keeps the next one from being answered.
 */
static void
take(struct sockguard *g, struct slot *s, const struct seccomp_notif *req)
{
	int more;

	s->c.id = req->id;
	s->c.pid = (pid_t)req->pid;
	s->c.arch = req->data.arch;
	s->c.op = op_of(g, req->data.arch, req->data.nr);
	memcpy(s->c.args, req->data.args, sizeof(s->c.args));
	pthread_mutex_lock(&g->lock);
	s->used = 2; /* busy */
	more = --g->idle == 0;
	pthread_mutex_unlock(&g->lock);
	if (more)
		(void)spawn(g);
}

static void
serve(struct sockguard *g, struct slot *s)
{
	sigset_t set;
	long val = 0;
	int e;

	sigemptyset(&set);
	sigaddset(&set, INTR_SIG);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	e = s->data == NULL ? ENOMEM : answer(g, &s->c, s->data, &val);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	respond(g, s->c.id, e, val);
	pthread_mutex_lock(&g->lock);
	s->used = 1;
	g->idle++;
	pthread_mutex_unlock(&g->lock);
}

/*
 * A worker: waits for a notification (several may wait; the kernel gives
 * each notification to one), answers it, and again, until no filtered
 * process is left (POLLHUP).
 */
static void
destroy(struct sockguard *g)
{
	size_t i;

	for (i = 0; i < WORKERS_MAX; i++)
		free(g->slots[i].data);
	close(g->fd);
	if (g->notes >= 0)
		close(g->notes);
	pthread_mutex_destroy(&g->lock);
	pthread_mutex_destroy(&g->recv_lock);
	free(g->allow);
	free(g);
	atomic_fetch_sub(&live, 1);
}

/* A thread (or the starter) is done with G; the last one frees it. */
static void
put(struct sockguard *g)
{
	int last;

	pthread_mutex_lock(&g->lock);
	last = --g->threads == 0;
	pthread_mutex_unlock(&g->lock);
	if (last)
		destroy(g);
}

/*
 * Waits for a notification and reads it into REQ: 1, 0 to try again, -1
 * when no filtered process is left (POLLHUP).  One worker at a time, so
 * that none waits in the ioctl for a notification another one took.
 */
static int
receive(struct sockguard *g, struct seccomp_notif *req)
{
	struct pollfd p = {g->fd, POLLIN, 0};

	if (poll(&p, 1, -1) < 0)
		return errno == EINTR ? 0 : -1;
	if (!(p.revents & POLLIN))
		return p.revents & (POLLHUP | POLLERR) ? -1 : 0;
	memset(req, 0, g->sizes.seccomp_notif);
	/* EINTR, ENOENT: the target went away before we read it. */
	return ioctl(g->fd, SECCOMP_IOCTL_NOTIF_RECV, req) == 0 ? 1 : 0;
}

/* A worker: waits for a notification, answers it, and again. */
static void *
worker(void *arg)
{
	struct slot *s = arg;
	struct sockguard *g = s->g;
	struct seccomp_notif *req = calloc(1, g->sizes.seccomp_notif);
	int r = req != NULL ? 0 : -1;

	while (r >= 0) {
		pthread_mutex_lock(&g->recv_lock);
		r = receive(g, req);
		pthread_mutex_unlock(&g->recv_lock);
		if (r == 1) {
			take(g, s, req);
			serve(g, s);
		}
	}
	free(req);
	pthread_mutex_lock(&g->lock);
	s->used = 0;
	g->idle--;
	pthread_mutex_unlock(&g->lock);
	put(g);
	return NULL;
}

/* Starts one more worker.  0, or -1 when at WORKERS_MAX or out of luck. */
static int
spawn(struct sockguard *g)
{
	struct slot *s = NULL;
	pthread_attr_t attr;
	size_t i;
	int e = -1;

	pthread_mutex_lock(&g->lock);
	for (i = 0; i < WORKERS_MAX && s == NULL; i++)
		if (g->slots[i].used == 0)
			s = &g->slots[i];
	if (s != NULL) {
		s->used = 1;
		g->idle++;
		g->threads++;
	}
	pthread_mutex_unlock(&g->lock);
	if (s == NULL)
		return -1;
	if (s->data == NULL)
		s->data = malloc(DATA_MAX);
	if (pthread_attr_init(&attr) == 0) {
		(void)pthread_attr_setdetachstate(
		    &attr, PTHREAD_CREATE_DETACHED);
		(void)pthread_attr_setstacksize(&attr, 256 * 1024);
		e = pthread_create(&s->t, &attr, worker, s);
		pthread_attr_destroy(&attr);
	}
	if (e != 0) {
		pthread_mutex_lock(&g->lock);
		s->used = 0;
		g->idle--;
		g->threads--; /* the caller holds G: never the last */
		pthread_mutex_unlock(&g->lock);
	}
	return e == 0 ? 0 : -1;
}

/* Interrupts the workers whose target no longer waits.  Returns how
 * many answer a call. */
static int
kick(struct sockguard *g)
{
	size_t i;
	int busy = 0;

	pthread_mutex_lock(&g->lock);
	for (i = 0; i < WORKERS_MAX; i++) {
		if (g->slots[i].used != 2)
			continue;
		busy++;
		if (!still_waiting(g, &g->slots[i].c))
			(void)pthread_kill(g->slots[i].t, INTR_SIG);
	}
	pthread_mutex_unlock(&g->lock);
	return busy;
}

/*
 * The watcher: every WATCH_MS, interrupts the workers whose target no
 * longer waits (a blocked connect or send then ends with EINTR), until
 * no filtered process is left and no worker is busy.
 */
static void *
watcher(void *arg)
{
	struct sockguard *g = arg;
	struct pollfd p = {g->fd, 0, 0};
	int hup = 0;

	/* After POLLHUP, poll would return at once: then a plain wait. */
	while (poll(hup ? NULL : &p, hup ? 0 : 1, WATCH_MS) >= 0 ||
	    errno == EINTR) {
		hup = hup || (p.revents & (POLLHUP | POLLERR));
		if (kick(g) == 0 && hup)
			break;
	}
	put(g);
	return NULL;
}

static void
on_intr(int sig)
{
	(void)sig;
}

int
sockguard_live(void)
{
	return atomic_load(&live);
}

int
sockguard_start(
    int listener, const struct sockguard_allow *allow, size_t nallow, int notes)
{
	struct sockguard *g = calloc(1, sizeof(*g));
	struct sigaction sa;
	pthread_t t;
	sigset_t set;
	int e = ENOMEM;

	if (g == NULL ||
	    (nallow > 0 && (g->allow = calloc(nallow, sizeof(*allow))) == NULL))
		goto fail;
	if (nallow > 0)
		memcpy(g->allow, allow, nallow * sizeof(*allow));
	g->nallow = nallow;
	g->fd = listener;
	g->notes = notes;
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &g->sizes) != 0 ||
	    g->sizes.seccomp_notif_resp > 256) {
		e = errno != 0 ? errno : ENOTSUP;
		goto fail;
	}
	for (size_t i = 0; i < WORKERS_MAX; i++)
		g->slots[i].g = g;
	for (size_t i = 0; i < NOPS; i++)
		g->native[i] = seccomp_syscall_resolve_name(ops[i].name);
	pthread_mutex_init(&g->lock, NULL);
	pthread_mutex_init(&g->recv_lock, NULL);
	g->threads = 1; /* ours, until the threads run */
	atomic_fetch_add(&live, 1);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_intr; /* no SA_RESTART: a blocked call ends */
	sigemptyset(&sa.sa_mask);
	sigemptyset(&set);
	sigaddset(&set, INTR_SIG);
	if (sigaction(INTR_SIG, &sa, NULL) != 0 ||
	    pthread_sigmask(SIG_BLOCK, &set, NULL) != 0) {
		e = errno;
		goto fail;
	}
	if (spawn(g) != 0) {
		e = EAGAIN;
		goto fail;
	}
	/* The watcher only helps: a worker runs already. */
	pthread_mutex_lock(&g->lock);
	g->threads++;
	pthread_mutex_unlock(&g->lock);
	if (pthread_create(&t, NULL, watcher, g) == 0)
		pthread_detach(t);
	else
		put(g);
	put(g);
	return 0;
fail:
	if (g != NULL && g->threads > 0) {
		put(g); /* nothing started: frees G, closes LISTENER */
		errno = e;
		return -1;
	}
	close(listener);
	if (notes >= 0)
		close(notes);
	if (g != NULL)
		free(g->allow);
	free(g);
	errno = e;
	return -1;
}
