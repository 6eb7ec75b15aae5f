/*
 * test_sockguard.c: unit tests of netns/sockguard.c.
 *
 * "Inside" is this process's network namespace; "the host" is played by
 * a child in a network namespace of its own (unshare(CLONE_NEWNET), with
 * a user namespace when unprivileged), which binds a socket in a shared
 * temporary directory.  The emulation tests run a child under the
 * guarded filter (sc_apply_guarded) with this process as its supervisor.
 */
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define SOCKGUARD_INTERNAL
#include "netns/seccomp.h"
#include "netns/sockguard.h"
#include "tests/unit/fixture.h"

static char dir[64];
static pid_t host_pid = -1;
static int host_ok;

static socklen_t
mkaddr(struct sockaddr_un *a, const char *path)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path, sizeof(a->sun_path), "%s", path);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
	    strlen(path) + 1);
}

static int
bound(int type, const char *path)
{
	struct sockaddr_un a;
	socklen_t len = mkaddr(&a, path);
	int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);

	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, len) != 0 ||
	    (type != SOCK_DGRAM && listen(fd, 64) != 0))
		return -1;
	return fd;
}

/* The host: a child in another network namespace bound to DIR/host.sock. */
static void
start_host(void)
{
	char path[128];
	int p[2], fd;
	char c = 0;

	snprintf(path, sizeof(path), "%s/host.sock", dir);
	assert_int_equal(pipe(p), 0);
	fflush(NULL);
	if ((host_pid = fork()) == 0) {
		close(p[0]);
		if (unshare(CLONE_NEWNET) != 0 &&
		    unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0)
			_exit(1);
		if ((fd = bound(SOCK_STREAM, path)) < 0)
			_exit(2);
		(void)!write(p[1], "k", 1);
		pause();
		_exit(0);
	}
	close(p[1]);
	host_ok = read(p[0], &c, 1) == 1 && c == 'k';
	close(p[0]);
	if (!host_ok)
		fprintf(stderr,
		    "test_sockguard: NOTE: no network namespace here: the "
		    "host-socket checks fail\n");
}

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_sockguard.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	chmod(dir, 0755);
	start_host();
	return 0;
}

static int
teardown(void **state)
{
	char cmd[128];
	int st;

	(void)state;
	/* Each supervisor frees itself once its child is gone (LSan). */
	for (st = 0; st < 500 && sockguard_live() > 0; st++)
		usleep(10000);
	if (sockguard_live() > 0)
		fprintf(stderr, "test_sockguard: %d supervisors still alive\n",
		    sockguard_live());
	if (host_pid > 0) {
		kill(host_pid, SIGKILL);
		waitpid(host_pid, &st, 0);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void
path_in(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static void
test_allow_path(void **state)
{
	struct sockguard_allow a;
	struct stat st;
	char p[128];
	int fd;

	(void)state;
	path_in(p, sizeof(p), "allow.sock");
	assert_true((fd = bound(SOCK_STREAM, p)) >= 0);
	assert_int_equal(sockguard_allow_path(p, &a), 0);
	assert_int_equal(stat(p, &st), 0);
	assert_true(a.dev == st.st_dev && a.ino == st.st_ino);
	assert_int_equal(sockguard_allow_path(dir, &a), -1);
	assert_int_equal(errno, ENOTSOCK);
	path_in(p, sizeof(p), "nothere.sock");
	assert_int_equal(sockguard_allow_path(p, &a), -1);
	assert_int_equal(errno, ENOENT);
	close(fd);
}

/* unix_diag names the sockets of this namespace, and no other. */
static void
test_diag(void **state)
{
	struct stat st;
	char p[128];
	int fd;

	(void)state;
	path_in(p, sizeof(p), "diag.sock");
	assert_true((fd = bound(SOCK_STREAM, p)) >= 0);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(sockguard_diag_bound(st.st_dev, st.st_ino), 1);
	/* The same inode number on another device is another file. */
	assert_int_equal(sockguard_diag_bound(st.st_dev + 1, st.st_ino), 0);
	close(fd);
	/* The file stays, bound by nothing. */
	assert_int_equal(sockguard_diag_bound(st.st_dev, st.st_ino), 0);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(sockguard_diag_bound(st.st_dev, st.st_ino), 0);
	path_in(p, sizeof(p), "host.sock");
	assert_true(host_ok);
	assert_int_equal(stat(p, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(sockguard_diag_bound(st.st_dev, st.st_ino), 0);
}

/*
 * decide(PATH) with DIR as the working directory.  When allowed, *INO is
 * the inode of the descriptor it gives (0: none).
 */
static int
decide(const struct sockguard_allow *al, size_t n, const char *path, ino_t *ino)
{
	struct sockaddr_un a;
	socklen_t len = mkaddr(&a, path);
	struct stat st;
	int cwd = open(dir, O_PATH | O_DIRECTORY), fd, r;

	r = sockguard_decide_unix(al, n, cwd, &a, len, &fd);
	*ino = 0;
	if (r == 0 && fd >= 0) {
		if (fstat(fd, &st) == 0)
			*ino = st.st_ino;
		close(fd);
	}
	close(cwd);
	return r;
}

static void
test_decide(void **state)
{
	struct sockguard_allow al;
	struct sockaddr_un a;
	char p[128], hp[128];
	int fd, pathfd, cwd;
	struct stat st;
	ino_t same;

	(void)state;
	path_in(p, sizeof(p), "in.sock");
	path_in(hp, sizeof(hp), "host.sock");
	assert_true((fd = bound(SOCK_STREAM, p)) >= 0);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(decide(NULL, 0, p, &same), 0);
	assert_true(same == st.st_ino); /* the file that was checked */
	assert_int_equal(decide(NULL, 0, "in.sock", &same), 0); /* relative */
	assert_true(same == st.st_ino);
	assert_int_equal(decide(NULL, 0, hp, &same), ECONNREFUSED);
	assert_int_equal(decide(NULL, 0, "host.sock", &same), ECONNREFUSED);
	assert_int_equal(decide(NULL, 0, "nothere.sock", &same), ENOENT);
	assert_int_equal(decide(NULL, 0, dir, &same), ECONNREFUSED);
	/* --unix-socket: that one passes. */
	assert_int_equal(sockguard_allow_path(hp, &al), 0);
	assert_int_equal(decide(&al, 1, hp, &same), 0);
	/* Abstract and unnamed: this namespace's own, as they are. */
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	memcpy(a.sun_path, "\0abs", 4);
	assert_int_equal(
	    sockguard_decide_unix(NULL, 0, -1, &a,
	        offsetof(struct sockaddr_un, sun_path) + 4, &pathfd),
	    0);
	assert_int_equal(pathfd, -1);
	assert_int_equal(sockguard_decide_unix(
	                     NULL, 0, -1, &a, sizeof(sa_family_t), &pathfd),
	    0);
	assert_int_equal(pathfd, -1);
	assert_int_equal(
	    sockguard_decide_unix(NULL, 0, -1, &a, sizeof(a) + 1, &pathfd),
	    EINVAL);
	/* A path that fills sun_path with no NUL: read as 108 bytes. */
	memset(a.sun_path, 'x', sizeof(a.sun_path));
	assert_true((cwd = open(dir, O_PATH | O_DIRECTORY)) >= 0);
	assert_int_equal(
	    sockguard_decide_unix(NULL, 0, cwd, &a, sizeof(a), &pathfd),
	    ENOENT);
	close(cwd);
	close(fd);
}

/* --- emulation: a child under the guarded filter ------------------------ */

#define CHILD_FAIL 250

/*
 * Runs FN(ARG) under the guarded filter with this process supervising,
 * its notes on NOTES (taken over; -1: none).
 */
static int
guarded_notes(int (*fn)(const char *), const char *arg,
    const struct sockguard_allow *al, size_t nal, int notes)
{
	int sv[2], n = -1, pidfd, lfd, st, e = 0;
	char err[256];
	pid_t pid;

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	fflush(NULL);
	if ((pid = fork()) == 0) {
		fixture_child_signals();
		close(sv[0]);
		if (sc_apply_guarded(&n, err, sizeof(err)) != 0 ||
		    send(sv[1], &n, sizeof(n), 0) != sizeof(n) ||
		    recv(sv[1], &e, sizeof(e), 0) != sizeof(e) || e != 0)
			_exit(CHILD_FAIL);
		close(n);
		_exit(fn(arg));
	}
	close(sv[1]);
	assert_int_equal(recv(sv[0], &n, sizeof(n), 0), sizeof(n));
	assert_true((pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) >= 0);
	assert_true((lfd = (int)syscall(SYS_pidfd_getfd, pidfd, n, 0)) >= 0);
	assert_int_equal(sockguard_start(lfd, al, nal, notes), 0);
	assert_int_equal(send(sv[0], &e, sizeof(e), 0), sizeof(e));
	close(sv[0]);
	close(pidfd);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_not_equal(WEXITSTATUS(st), CHILD_FAIL);
	return WEXITSTATUS(st);
}

static int
guarded(int (*fn)(const char *), const char *arg,
    const struct sockguard_allow *al, size_t nal)
{
	return guarded_notes(fn, arg, al, nal, -1);
}

static int
child_connect(const char *path)
{
	struct sockaddr_un a;
	socklen_t len = mkaddr(&a, path);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	return connect(fd, (struct sockaddr *)&a, len) == 0 ? 0 : errno;
}

static int
child_connect_inet(const char *port)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)atoi(port));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 ? 0 : errno;
}

static void
test_emulated_connect(void **state)
{
	struct sockguard_allow al;
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	char p[128], hp[128], port[16];
	int fd, l;

	(void)state;
	path_in(p, sizeof(p), "c.sock");
	path_in(hp, sizeof(hp), "host.sock");
	assert_true((fd = bound(SOCK_STREAM, p)) >= 0);
	assert_int_equal(guarded(child_connect, p, NULL, 0), 0);
	assert_int_equal(guarded(child_connect, hp, NULL, 0), ECONNREFUSED);
	assert_int_equal(sockguard_allow_path(hp, &al), 0);
	/* Allowed, but the host's socket is in another namespace: */
	assert_int_equal(guarded(child_connect, hp, &al, 1), 0);
	close(fd);
	assert_int_equal(guarded(child_connect, p, NULL, 0), ECONNREFUSED);
	/* Other families: made by the supervisor on the child's socket. */
	assert_true((l = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 8), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &alen), 0);
	snprintf(port, sizeof(port), "%u", ntohs(a.sin_port));
	assert_int_equal(guarded(child_connect_inet, port, NULL, 0), 0);
	close(l);
	assert_int_equal(
	    guarded(child_connect_inet, port, NULL, 0), ECONNREFUSED);
}

/* sendto, sendmsg and sendmmsg of datagrams to PATH. */
static int
child_dgrams(const char *path)
{
	struct sockaddr_un a;
	socklen_t len = mkaddr(&a, path);
	struct iovec iov[2] = {{"ab", 2}, {"cd", 2}};
	struct mmsghdr mm[3];
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0), i;

	if (sendto(fd, "one", 3, 0, (struct sockaddr *)&a, len) != 3)
		return errno;
	memset(mm, 0, sizeof(mm));
	for (i = 0; i < 3; i++) {
		mm[i].msg_hdr.msg_name = &a;
		mm[i].msg_hdr.msg_namelen = len;
		mm[i].msg_hdr.msg_iov = iov;
		mm[i].msg_hdr.msg_iovlen = 2;
	}
	if (sendmsg(fd, &mm[0].msg_hdr, 0) != 4)
		return errno;
	if (sendmmsg(fd, mm, 3, 0) != 3)
		return errno;
	for (i = 0; i < 3; i++)
		if (mm[i].msg_len != 4)
			return EBADMSG;
	return 0;
}

static void
test_emulated_dgrams(void **state)
{
	char p[128], buf[16];
	int fd, n;

	(void)state;
	path_in(p, sizeof(p), "d.sock");
	assert_true((fd = bound(SOCK_DGRAM, p)) >= 0);
	assert_int_equal(guarded(child_dgrams, p, NULL, 0), 0);
	assert_int_equal(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), 3);
	assert_memory_equal(buf, "one", 3);
	for (n = 0; n < 4; n++) {
		assert_int_equal(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), 4);
		assert_memory_equal(buf, "abcd", 4);
	}
	assert_int_equal(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), -1);
	close(fd);
	/* A datagram socket bound by nothing in this namespace. */
	assert_int_equal(guarded(child_dgrams, p, NULL, 0), ECONNREFUSED);
}

/*
 * Over a socketpair: a descriptor (SCM_RIGHTS) arrives and works; 1 MiB
 * through sendmsg arrives whole, in order (a stream send may be short).
 */
static int
child_pair(const char *arg)
{
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	static char big[1 << 20], back[1 << 20];
	struct msghdr m;
	struct iovec iov;
	struct cmsghdr *cm;
	int sv[2], p[2], got, i;
	size_t off = 0, in = 0;
	ssize_t n;
	char c;

	(void)arg;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 || pipe(p) != 0)
		return errno;
	memset(&m, 0, sizeof(m));
	c = 'f';
	iov.iov_base = &c;
	iov.iov_len = 1;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.b;
	m.msg_controllen = sizeof(u.b);
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &p[1], sizeof(int));
	if (sendmsg(sv[0], &m, 0) != 1)
		return errno;
	iov.iov_base = &c;
	if (recvmsg(sv[1], &m, 0) != 1 || (cm = CMSG_FIRSTHDR(&m)) == NULL)
		return EPROTO;
	memcpy(&got, CMSG_DATA(cm), sizeof(int));
	if (write(got, "z", 1) != 1 || read(p[0], &c, 1) != 1 || c != 'z')
		return EPROTO;
	for (i = 0; i < (int)sizeof(big); i++)
		big[i] = (char)(i * 7);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	while (in < sizeof(back)) {
		memset(&m, 0, sizeof(m));
		iov.iov_base = big + off;
		iov.iov_len = sizeof(big) - off;
		m.msg_iov = &iov;
		m.msg_iovlen = off < sizeof(big) ? 1 : 0;
		if (off < sizeof(big) && (n = sendmsg(sv[0], &m, 0)) > 0)
			off += (size_t)n;
		else if (off < sizeof(big) && errno != EAGAIN)
			return errno;
		if ((n = recv(sv[1], back + in, sizeof(back) - in,
		         MSG_DONTWAIT)) > 0)
			in += (size_t)n;
	}
	return memcmp(big, back, sizeof(big)) == 0 ? 0 : EBADMSG;
}

static void
test_emulated_pair(void **state)
{
	(void)state;
	assert_int_equal(guarded(child_pair, NULL, NULL, 0), 0);
}

/* A bad descriptor, a bad address: the kernel's own answers. */
static int
child_bad(const char *arg)
{
	struct sockaddr_un a;
	socklen_t len = mkaddr(&a, "/x");
	int p[2];

	(void)arg;
	if (connect(999, (struct sockaddr *)&a, len) == 0 || errno != EBADF)
		return 1;
	if (pipe(p) != 0 || connect(p[0], (struct sockaddr *)&a, len) == 0 ||
	    errno != ENOTSOCK)
		return 2;
	if (connect(socket(AF_UNIX, SOCK_STREAM, 0), (void *)8, len) == 0 ||
	    errno != EFAULT)
		return 3;
	if (connect(socket(AF_UNIX, SOCK_STREAM, 0), (struct sockaddr *)&a,
	        1000) == 0 ||
	    errno != EINVAL)
		return 4;
	return 0;
}

static void
test_emulated_errors(void **state)
{
	(void)state;
	assert_int_equal(guarded(child_bad, NULL, NULL, 0), 0);
}

/* socket(FAMILY, TYPE, PROTO): 0 (closed again) or its errno. */
static int
sock_err(int family, int type, int proto)
{
	int fd = socket(family, type, proto);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

/*
 * The ICMP sockets fail as in the sandbox, whatever this host allows
 * (ping_group_range, root's CAP_NET_RAW), twice each; every other
 * socket is the kernel's: a ping protocol with another type or family
 * gets the kernel's EPROTONOSUPPORT.  Returns 0 or the failed check.
 */
static int
child_icmp(const char *unused)
{
	static const struct {
		int family, type, proto, err;
	} c[] = {
	    {AF_INET, SOCK_DGRAM, IPPROTO_ICMP, EACCES},
	    {AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_ICMP, EACCES},
	    {AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK, IPPROTO_ICMPV6, EACCES},
	    {AF_INET, SOCK_RAW, IPPROTO_ICMP, EPERM},
	    {AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW, EPERM},
	    {AF_INET6, SOCK_RAW, IPPROTO_ICMPV6, EPERM},
	    {AF_INET6, SOCK_RAW, IPPROTO_UDP, EPERM},
	    {AF_INET, SOCK_RAW | 0x1000, IPPROTO_ICMP, EINVAL},
	    {AF_INET, SOCK_STREAM, IPPROTO_ICMP, EPROTONOSUPPORT},
	    {AF_INET6, SOCK_DGRAM, IPPROTO_ICMP, EPROTONOSUPPORT},
	    {AF_INET, SOCK_DGRAM, 0, 0},
	    {AF_INET6, SOCK_STREAM, 0, 0},
	    {AF_UNIX, SOCK_STREAM, 0, 0},
	};
	size_t i;

	(void)unused;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (sock_err(c[i].family, c[i].type, c[i].proto) != c[i].err ||
		    sock_err(c[i].family, c[i].type, c[i].proto) != c[i].err)
			return (int)i + 1;
	return 0;
}

/* Refused as in the sandbox, each kind said once on the notes. */
static void
test_icmp(void **state)
{
	char got[8];
	int np[2];
	ssize_t n;

	(void)state;
	assert_int_equal(
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, np), 0);
	assert_int_equal(guarded_notes(child_icmp, NULL, NULL, 0, np[1]), 0);
	assert_int_equal(recv(np[0], got, sizeof(got), 0), 1);
	assert_int_equal(got[0], SOCKGUARD_NOTE_ICMP);
	assert_int_equal(recv(np[0], got, sizeof(got), 0), 1);
	assert_int_equal(got[0], SOCKGUARD_NOTE_ICMPV6);
	assert_int_equal(recv(np[0], got, sizeof(got), 0), 1);
	assert_int_equal(got[0], SOCKGUARD_NOTE_RAW);
	n = recv(np[0], got, sizeof(got), 0);
	assert_true(n == 0 || (n < 0 && errno == EAGAIN));
	close(np[0]);
	/* Without notes: refused all the same. */
	assert_int_equal(guarded(child_icmp, NULL, NULL, 0), 0);
}

/*
 * A thread blocked in an emulated sendmsg (a full buffer) while another
 * makes a supervised call: answered by another worker, no deadlock.
 */
static int pair[2];
static atomic_int sending;

static void *
blocked_sender(void *arg)
{
	static char big[1 << 20];
	struct iovec iov = {big, sizeof(big)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	size_t off = 0;
	ssize_t n;

	(void)arg;
	atomic_store(&sending, 1);
	while (off < sizeof(big)) {
		iov.iov_base = big + off;
		iov.iov_len = sizeof(big) - off;
		if ((n = sendmsg(pair[0], &m, 0)) <= 0)
			return (void *)1;
		off += (size_t)n;
	}
	close(pair[0]);
	return NULL;
}

static int
child_blocked(const char *arg)
{
	static char buf[1 << 16];
	struct iovec iov = {"x", 1};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	int other[2];
	size_t total = 0;
	void *ret = NULL;
	pthread_t t;
	ssize_t n;

	(void)arg;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0 ||
	    socketpair(AF_UNIX, SOCK_DGRAM, 0, other) != 0 ||
	    pthread_create(&t, NULL, blocked_sender, NULL) != 0)
		return 1;
	while (!atomic_load(&sending))
		;
	if (sendmsg(other[0], &m, 0) != 1)
		return 2;
	while ((n = read(pair[1], buf, sizeof(buf))) > 0)
		total += (size_t)n;
	pthread_join(t, &ret);
	return ret == NULL && total == 1 << 20 ? 0 : 3;
}

static void
test_blocked_worker(void **state)
{
	(void)state;
	assert_int_equal(guarded(child_blocked, NULL, NULL, 0), 0);
}

static void
on_alarm(int sig)
{
	(void)sig;
}

/*
 * A connect that blocks (the listener's backlog is full) is interrupted
 * by the target's own signal: EINTR, as without the supervisor, and the
 * supervisor answers the next call.
 */
static int
child_interrupted(const char *path)
{
	struct sigaction sa;
	struct sockaddr_un a;
	socklen_t len = mkaddr(&a, path);
	int fd, i, e;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm; /* no SA_RESTART */
	sigaction(SIGALRM, &sa, NULL);
	for (i = 0; i < 64; i++) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (connect(fd, (struct sockaddr *)&a, len) != 0)
			break;
	}
	if (i == 64 || errno != EAGAIN)
		return 1;
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	alarm(1);
	e = connect(fd, (struct sockaddr *)&a, len) == 0 ? 0 : errno;
	if (e != EINTR)
		return 2;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	return connect(fd, (struct sockaddr *)&a, len) != 0 && errno == EAGAIN
	    ? 0
	    : 3;
}

static void
test_interrupted(void **state)
{
	char p[128];
	int l;

	(void)state;
	path_in(p, sizeof(p), "full.sock");
	assert_true((l = bound(SOCK_STREAM, p)) >= 0);
	assert_int_equal(listen(l, 0), 0);
	assert_int_equal(guarded(child_interrupted, p, NULL, 0), 0);
	close(l);
}

#if defined(__x86_64__) && defined(__LP64__)
/*
 * The i386 ABI: socketcall(SYS_CONNECT) fails with ENOSYS (its arguments
 * are out of the filter's sight); the direct connect is emulated like the
 * native one; sendmsg, whose msghdr has another layout, is ENOSYS.
 */
static int
child_i386(const char *path)
{
	struct sockaddr_un *a = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	unsigned int *v;
	socklen_t len;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	if (a == MAP_FAILED)
		return 10;
	len = mkaddr(a, path);
	v = (unsigned int *)((char *)a + 128);
	v[0] = (unsigned)fd;
	v[1] = (unsigned)(uintptr_t)a;
	v[2] = len;
	if (fixture_int80(102, 3, (long)v, 0) != -ENOSYS)
		return 11;
	if (fixture_int80(362, fd, (long)a, len) != 0)
		return 12;
	if (fixture_int80(370, fd, (long)v, 0) != -ENOSYS)
		return 13;
	mkaddr(a, "/proc/self/cwd/../nothere");
	if (fixture_int80(362, socket(AF_UNIX, SOCK_STREAM, 0), (long)a, len) !=
	    -ENOENT)
		return 14;
	return 0;
}

/* 0 when int $0x80 kills the caller here too (no i386 ABI). */
static int
child_i386_absent(const char *unused)
{
	(void)unused;
	return fixture_i386_abi() == 0 ? 0 : 1;
}
#endif

static void
test_i386(void **state)
{
	(void)state;
#if defined(__x86_64__) && defined(__LP64__)
	char p[128];
	int fd, abi = fixture_i386_abi();

	assert_int_not_equal(abi, -1);
	if (abi == 0) {
		/* No i386 ABI: check it is as absent under the guarded
		 * filter, and say so. */
		assert_int_equal(guarded(child_i386_absent, NULL, NULL, 0), 0);
		fprintf(stderr,
		    "%s: " FIXTURE_I386_ABSENT "; checked that it kills the "
		    "caller under the guarded filter too, instead of the "
		    "i386 calls\n",
		    __func__);
		return;
	}
	path_in(p, sizeof(p), "i386.sock");
	assert_true((fd = bound(SOCK_STREAM, p)) >= 0);
	assert_int_equal(guarded(child_i386, p, NULL, 0), 0);
	close(fd);
#else
	fprintf(stderr, "%s: skipped: x86_64 only\n", __func__);
	skip();
#endif
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_allow_path),
	    cmocka_unit_test(test_diag),
	    cmocka_unit_test(test_decide),
	    cmocka_unit_test(test_emulated_connect),
	    cmocka_unit_test(test_emulated_dgrams),
	    cmocka_unit_test(test_emulated_pair),
	    cmocka_unit_test(test_emulated_errors),
	    cmocka_unit_test(test_icmp),
	    cmocka_unit_test(test_i386),
	    cmocka_unit_test(test_blocked_worker),
	    cmocka_unit_test(test_interrupted),
	};

	return cmocka_run_group_tests_name("sockguard", tests, setup, teardown);
}
