/*
 * escape.c: the prober of the escape_*.sh scenarios for the classes that
 * hold today (namespaces, capabilities, mounts, raw sockets and netlink,
 * ptrace, TIOCSTI, hidden files, refused system calls, signals and
 * abstract sockets).  Run inside `pinhole run`, it tries one way out per
 * attempt and prints one line for each:
 *
 *	NAME: got through [DETAIL]
 *	NAME: refused ERRNO-NAME	(EPERM, EACCES, ... or EMPTY)
 *
 * and decides nothing: the scenario decides which answer is right.  A few
 * subcommands observe instead ("NAME: VALUE"), and two run outside to
 * set up a target (abstract-listen, sysv-make).
 *
 * usage: probe_escape SUBCOMMAND [ARG...] [SUBCOMMAND [ARG...]]...
 *
 * Built for x86_64 it also makes i386 calls from a 64-bit process
 * (int $0x80, the "*32" attempts), which meet the filter's i386 rules;
 * built with -m32 (probe_escape32) every attempt is an i386 program's.
 */
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/securebits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include "i386abi.h"
#endif

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

/* i386 call numbers (arch/x86/entry/syscalls/syscall_32.tbl). */
#define I386_IOCTL 54
#define I386_UNSHARE 310
#define I386_KEYCTL 288
#define I386_PERF_EVENT_OPEN 336
#define I386_NAME_TO_HANDLE_AT 341
#define I386_OPEN_BY_HANDLE_AT 342
#define I386_BPF 357
#define I386_USERFAULTFD 374
#define I386_IO_URING_SETUP 425
#define I386_CLONE3 435
#define I386_SOCKET 359
/* x32: bit 30 set, and x32's own ioctl number. */
#define X32_BIT 0x40000000L
#define X32_IOCTL 514

/* Scratch memory below 4 GiB, for pointers given to i386 calls. */
static char *low;

struct attempt {
	const char *name;
	int nargs;
	void (*fn)(char **);
};

/* --- reporting ------------------------------------------------------------ */

static const char *
errname(int e)
{
	const char *n = strerrorname_np(e);

	return n != NULL ? n : "EUNKNOWN";
}

/* R is a call's result (-1 with errno for a refusal). */
static void
report(const char *name, long r)
{
	if (r == -1)
		printf("%s: refused %s\n", name, errname(errno));
	else
		printf("%s: got through\n", name);
	fflush(stdout);
}

static void
report_err(const char *name, int e)
{
	if (e == 0)
		printf("%s: got through\n", name);
	else
		printf("%s: refused %s\n", name, errname(e));
	fflush(stdout);
}

static char *
label(const char *a, const char *b)
{
	static char buf[512];

	snprintf(buf, sizeof(buf), "%s:%s", a, b);
	return buf;
}

#if defined(__x86_64__)
/* An i386 system call from this 64-bit process. */
static long
i386_call(long nr, long a, long b, long c, long d, long e)
{
	long r;

	/* Arguments in ebx, ecx, edx, esi, edi; r8-r11 come back zeroed. */
	__asm__ volatile("int $0x80"
	                 : "=a"(r)
	                 : "a"(nr), "b"(a), "c"(b), "d"(c), "S"(d), "D"(e)
	                 : "memory", "r8", "r9", "r10", "r11");
	return r;
}
#define HAVE_I386_CALL 1

/* For raw syscall returns that are -errno (int $0x80). */
static void
report_neg(const char *name, long r)
{
	if (r < 0 && r > -4096)
		printf("%s: refused %s\n", name, errname((int)-r));
	else
		printf("%s: got through\n", name);
	fflush(stdout);
}
#endif

/* --- namespaces and processes --------------------------------------------- */

static void
a_kill(char **av)
{
	report(label("kill", av[0]), kill((pid_t)atol(av[0]), atoi(av[1])));
}

static void
a_sethostname(char **av)
{
	(void)av;
	report("sethostname", sethostname("escaped", 7));
}

static void
a_setns(char **av)
{
	int fd = open(av[0], O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		report(label("setns", av[0]), -1);
		return;
	}
	report(label("setns", av[0]), setns(fd, 0));
	close(fd);
}

static void
a_sysv(char **av)
{
	key_t key = (key_t)strtol(av[0], NULL, 0);

	report("shmget", shmget(key, 0, 0));
	report("msgget", msgget(key, 0));
	report("semget", semget(key, 0, 0));
}

static void
a_shmat(char **av)
{
	void *p = shmat(atoi(av[0]), NULL, SHM_RDONLY);

	report("shmat", p == (void *)-1 ? -1 : 0);
}

/* Outside: the SysV objects a_sysv looks for. */
static void
a_sysv_make(char **av)
{
	key_t key = (key_t)strtol(av[0], NULL, 0);
	int m = shmget(key, 4096, IPC_CREAT | 0600);

	printf("sysv-make: shm %d msg %d sem %d\n", m,
	    msgget(key, IPC_CREAT | 0600), semget(key, 1, IPC_CREAT | 0600));
}

static void
a_sysv_rm(char **av)
{
	key_t key = (key_t)strtol(av[0], NULL, 0);
	int id;

	if ((id = shmget(key, 0, 0)) >= 0)
		(void)shmctl(id, IPC_RMID, NULL);
	if ((id = msgget(key, 0)) >= 0)
		(void)msgctl(id, IPC_RMID, NULL);
	if ((id = semget(key, 0, 0)) >= 0)
		(void)semctl(id, 0, IPC_RMID);
}

/* --- capabilities ---------------------------------------------------------- */

static void
a_caps(char **av)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	int held, c, bounding;

	(void)av;
	if (syscall(SYS_capget, &h, d) != 0) {
		report("caps-held", -1);
		return;
	}
	held = (d[0].effective | d[1].effective | d[0].permitted |
	           d[1].permitted | d[0].inheritable | d[1].inheritable) != 0;
	if (held)
		printf("caps-held: got through eff %08x%08x prm %08x%08x "
		       "euid %d\n",
		    d[1].effective, d[0].effective, d[1].permitted,
		    d[0].permitted, (int)geteuid());
	else
		printf("caps-held: refused NONE\n");
	for (c = 0, bounding = 0; c < 64; c++)
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1)
			bounding++;
	if (bounding > 0)
		printf("bounding-held: got through %d\n", bounding);
	else
		printf("bounding-held: refused NONE\n");
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_SYS_ADMIN, 0, 0) ==
	    1)
		printf("ambient-held: got through\n");
	else
		printf("ambient-held: refused NONE\n");
	fflush(stdout);
}

static void
a_capset(char **av)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];

	(void)av;
	memset(d, 0xff, sizeof(d));
	report("capset-all", syscall(SYS_capset, &h, d));
	memset(d, 0, sizeof(d));
	d[CAP_TO_INDEX(CAP_SYS_ADMIN)].inheritable = CAP_TO_MASK(CAP_SYS_ADMIN);
	report("capset-inheritable", syscall(SYS_capset, &h, d));
	report("ambient-raise",
	    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN, 0, 0));
	report("securebits-clear", prctl(PR_SET_SECUREBITS, 0, 0, 0, 0));
	report("keepcaps-set", prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0));
	report("no-new-privs-clear", prctl(PR_SET_NO_NEW_PRIVS, 0, 0, 0, 0));
	printf("securebits: %d\n", prctl(PR_GET_SECUREBITS, 0, 0, 0, 0));
	printf("no-new-privs: %d\n", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
}

/* Things only a capability allows, on a file in the work directory. */
static void
a_privileged(char **av)
{
	uid_t other = getuid() == 0 ? 1 : 0;

	report("setuid-other", setuid(other));
	report("setgid-other", setgid(other));
	report("setgroups", setgroups(0, NULL));
	report("chown-other", chown(av[0], other, (gid_t)-1));
	report("mknod-mem", mknod("escape-mem", S_IFCHR | 0666, makedev(1, 1)));
	report("setpriority-raise", setpriority(PRIO_PROCESS, 0, -20));
}

/* --- mounts ------------------------------------------------------------------ */

static void
a_remount(char **av)
{
	struct mount_attr a = {.attr_clr = MOUNT_ATTR_RDONLY};

	report(label("remount-rw", av[0]),
	    mount(NULL, av[0], NULL, MS_REMOUNT | MS_BIND, NULL));
	report(label("setattr-rw", av[0]),
	    syscall(SYS_mount_setattr, AT_FDCWD, av[0], 0, &a, sizeof(a)));
}

static void
a_umount(char **av)
{
	report(label("umount", av[0]), umount2(av[0], MNT_DETACH));
}

static void
a_mount(char **av)
{
	report(label("mount-tmpfs", av[0]),
	    mount("escape", av[0], "tmpfs", 0, NULL));
	report(
	    label("mount-bind", av[0]), mount("/", av[0], NULL, MS_BIND, NULL));
	report("fsopen-tmpfs", syscall(SYS_fsopen, "tmpfs", 0));
	report("open-tree-clone", syscall(SYS_open_tree, AT_FDCWD, "/", 1));
	report("move-mount",
	    syscall(SYS_move_mount, AT_FDCWD, av[0], AT_FDCWD, "/", 0));
}

static void
a_pivot(char **av)
{
	(void)av;
	report("pivot-root", syscall(SYS_pivot_root, ".", "."));
	report("chroot", chroot("."));
}

static void
a_create(char **av)
{
	int fd = open(av[0], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	report(label("create", av[0]), fd);
	if (fd >= 0)
		close(fd);
}

static void
a_write(char **av)
{
	int fd = open(av[0], O_WRONLY | O_APPEND | O_CLOEXEC);

	report(label("write", av[0]), fd);
	if (fd >= 0)
		close(fd);
}

/* Reading: "got through" when any byte comes, else "refused EMPTY". */
static void
report_read(const char *name, int fd)
{
	char buf[256];
	ssize_t n;

	if (fd < 0) {
		report(name, -1);
		return;
	}
	n = read(fd, buf, sizeof(buf));
	if (n > 0)
		printf("%s: got through %zd bytes\n", name, n);
	else if (n == 0)
		printf("%s: refused EMPTY\n", name);
	else
		printf("%s: refused %s\n", name, errname(errno));
	fflush(stdout);
}

static void
a_read(char **av)
{
	int fd = open(av[0], O_RDONLY | O_CLOEXEC);

	report_read(label("read", av[0]), fd);
	if (fd >= 0)
		close(fd);
}

/*
 * The ways around a mount over a file that need no privilege: the same
 * path through /proc/self/root and /proc/self/cwd, its directory opened
 * first and the name looked up from there, and an O_PATH descriptor
 * reopened through /proc/self/fd.
 */
static void
a_unhide(char **av)
{
	char path[4096], *dir, *base;
	int fd, dfd;

	snprintf(path, sizeof(path), "/proc/self/root%s", av[0]);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	report_read(label("unhide-proc-root", av[0]), fd);
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "%s", av[0]);
	base = strrchr(path, '/');
	if (base == NULL || base == path)
		return;
	*base++ = '\0';
	dir = path;
	if ((dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		fd = openat(dfd, base, O_RDONLY | O_CLOEXEC);
		report_read(label("unhide-openat", av[0]), fd);
		if (fd >= 0)
			close(fd);
		close(dfd);
	}
	if ((fd = open(av[0], O_PATH | O_CLOEXEC)) >= 0) {
		char via[64];
		int fd2;

		snprintf(via, sizeof(via), "/proc/self/fd/%d", fd);
		fd2 = open(via, O_RDONLY | O_CLOEXEC);
		report_read(label("unhide-proc-fd", av[0]), fd2);
		if (fd2 >= 0)
			close(fd2);
		close(fd);
	}
	report(label("unhide-umount", av[0]), umount2(av[0], MNT_DETACH));
}

/* --- handles, user namespaces and the other refused calls ---------------- */

static void
a_handles(char **av)
{
	struct file_handle *h = (struct file_handle *)low;
	int mnt = -1, r;

	h->handle_bytes = 128;
	r = name_to_handle_at(AT_FDCWD, av[0], h, &mnt, 0);
	report("name-to-handle-at", r);
	if (r != 0) {
		/* A handle made up: the refusal comes before its contents. */
		h->handle_bytes = 8;
		h->handle_type = 1;
		memset(h->f_handle, 0, 8);
	}
	mnt = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = open_by_handle_at(mnt, h, O_RDONLY);
	report("open-by-handle-at", r);
	if (r >= 0)
		close(r);
	if (mnt >= 0)
		close(mnt);
}

static void
a_newuser(char **av)
{
	struct clone_args {
		uint64_t flags, pidfd, child_tid, parent_tid, exit_signal,
		    stack, stack_size, tls;
	} *ca = (struct clone_args *)low;
	long r;

	(void)av;
	r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	if (r == 0)
		_exit(0);
	if (r > 0)
		(void)waitpid((pid_t)r, NULL, 0);
	report("clone-newuser", r);
	memset(ca, 0, sizeof(*ca));
	ca->flags = CLONE_NEWUSER;
	ca->exit_signal = SIGCHLD;
	r = syscall(SYS_clone3, ca, sizeof(*ca));
	if (r == 0)
		_exit(0);
	if (r > 0)
		(void)waitpid((pid_t)r, NULL, 0);
	report("clone3-newuser", r);
	/* Other namespaces need CAP_SYS_ADMIN in ours, which none has. */
	report("unshare-net", unshare(CLONE_NEWNET));
	report("unshare-mount", unshare(CLONE_NEWNS));
	/* Last: once through, this process is in a namespace of its own. */
	report("unshare-user-mount", unshare(CLONE_NEWUSER | CLONE_NEWNS));
	report("unshare-user", unshare(CLONE_NEWUSER));
}

/* perf_event_attr's first fields: a software clock on this process. */
struct perf_attr {
	uint32_t type, size;
	uint64_t config, sample, sample_type, read_format, flags;
	char rest[96];
};

static void
a_syscalls(char **av)
{
	struct perf_attr *pa = (struct perf_attr *)low;
	char *p = low + 1024;
	long r;

	(void)av;
	r = syscall(SYS_keyctl, 0 /* GET_KEYRING_ID */, -3 /* session */, 0);
	report("keyctl", r);
	report("add-key",
	    syscall(SYS_add_key, "user", "escape", "x", 1, -3 /* session */));
	report("request-key",
	    syscall(SYS_request_key, "user", "escape", NULL, -3));
	/* BPF_MAP_CREATE of a 1-entry array: the simplest bpf(2) request. */
	memset(p, 0, 128);
	((uint32_t *)p)[0] = 2; /* BPF_MAP_TYPE_ARRAY */
	((uint32_t *)p)[1] = 4;
	((uint32_t *)p)[2] = 4;
	((uint32_t *)p)[3] = 1;
	report("bpf", syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, p, 72));
	memset(pa, 0, sizeof(*pa));
	pa->type = 1; /* PERF_TYPE_SOFTWARE */
	pa->size = sizeof(*pa);
	pa->config = 0; /* PERF_COUNT_SW_CPU_CLOCK */
	pa->flags = (1ULL << 5) | (1ULL << 6); /* exclude kernel, hv */
	report(
	    "perf-event-open", syscall(SYS_perf_event_open, pa, 0, -1, -1, 0));
	/* UFFD_USER_MODE_ONLY: what an unprivileged caller may ask for. */
	report("userfaultfd", syscall(SYS_userfaultfd, O_CLOEXEC | 1));
	memset(p, 0, 120);
	report("io-uring-setup", syscall(SYS_io_uring_setup, 1, p));
	report("io-uring-enter", syscall(SYS_io_uring_enter, 0, 0, 0, 0, 0, 0));
	report("io-uring-register", syscall(SYS_io_uring_register, 0, 0, 0, 0));
}

#ifdef HAVE_I386_CALL
/* The same calls through the i386 ABI of this 64-bit process. */
static void
a_syscalls32(char **av)
{
	struct perf_attr *pa = (struct perf_attr *)low;
	long p = (long)(uintptr_t)(low + 1024);

	(void)av;
	if (!i386_abi())
		return;
	report_neg("i386:unshare-user",
	    i386_call(I386_UNSHARE, CLONE_NEWUSER, 0, 0, 0, 0));
	memset(low + 2048, 0, 64);
	((uint64_t *)(low + 2048))[0] = CLONE_NEWUSER;
	((uint64_t *)(low + 2048))[4] = SIGCHLD;
	report_neg("i386:clone3",
	    i386_call(I386_CLONE3, (long)(uintptr_t)(low + 2048), 64, 0, 0, 0));
	report_neg("i386:keyctl", i386_call(I386_KEYCTL, 0, -3, 0, 0, 0));
	memset(low + 1024, 0, 128);
	((uint32_t *)(low + 1024))[0] = 2;
	((uint32_t *)(low + 1024))[1] = 4;
	((uint32_t *)(low + 1024))[2] = 4;
	((uint32_t *)(low + 1024))[3] = 1;
	report_neg("i386:bpf", i386_call(I386_BPF, 0, p, 72, 0, 0));
	memset(pa, 0, sizeof(*pa));
	pa->type = 1;
	pa->size = sizeof(*pa);
	pa->flags = (1ULL << 5) | (1ULL << 6);
	report_neg("i386:perf-event-open",
	    i386_call(I386_PERF_EVENT_OPEN, (long)(uintptr_t)pa, 0, -1, -1, 0));
	report_neg("i386:userfaultfd",
	    i386_call(I386_USERFAULTFD, O_CLOEXEC | 1, 0, 0, 0, 0));
	memset(low + 1024, 0, 120);
	report_neg("i386:io-uring-setup",
	    i386_call(I386_IO_URING_SETUP, 1, p, 0, 0, 0));
	((uint32_t *)(low + 1024))[0] = 128;
	report_neg("i386:name-to-handle-at",
	    i386_call(I386_NAME_TO_HANDLE_AT, AT_FDCWD, (long)(uintptr_t) "/",
	        p, (long)(uintptr_t)(low + 3000), 0));
	report_neg("i386:open-by-handle-at",
	    i386_call(I386_OPEN_BY_HANDLE_AT, AT_FDCWD, p, O_RDONLY, 0, 0));
}
#endif

#ifdef HAVE_I386_CALL
/* Only says whether there is an i386 ABI (the scenarios ask outside). */
static void
a_i386_abi(char **av)
{
	(void)av;
	i386_abi();
}
#endif

/* --- raw sockets, netlink, routes ------------------------------------------ */

static void
try_socket(const char *name, int family, int type, int proto)
{
	int s = socket(family, type | SOCK_CLOEXEC, proto);

	report(name, s);
	if (s >= 0)
		close(s);
}

static void
a_raw(char **av)
{
	(void)av;
	try_socket("raw-inet", AF_INET, SOCK_RAW, IPPROTO_ICMP);
	try_socket("raw-inet-tcp", AF_INET, SOCK_RAW, IPPROTO_TCP);
	try_socket("raw-inet6", AF_INET6, SOCK_RAW, IPPROTO_ICMPV6);
	try_socket("packet-raw", AF_PACKET, SOCK_RAW, htons(0x0003));
	try_socket("packet-dgram", AF_PACKET, SOCK_DGRAM, htons(0x0003));
	try_socket("inet-packet", AF_INET, SOCK_PACKET, htons(0x0003));
	/* ICMP echo without privilege: ping_group_range of a new network
	 * namespace is "1 0", nobody's. */
	try_socket("ping-inet", AF_INET, SOCK_DGRAM, IPPROTO_ICMP);
	try_socket("ping-inet6", AF_INET6, SOCK_DGRAM, IPPROTO_ICMPV6);
}

#ifdef HAVE_I386_CALL
/* The raw and ping sockets through the i386 ABI's direct socket call. */
static void
a_raw32(char **av)
{
	long r;

	(void)av;
	if (!i386_abi())
		return;
	r = i386_call(I386_SOCKET, AF_INET, SOCK_RAW, IPPROTO_ICMP, 0, 0);
	report_neg("i386:raw-inet", r);
	if (r >= 0)
		close((int)r);
	r = i386_call(I386_SOCKET, AF_INET, SOCK_DGRAM, IPPROTO_ICMP, 0, 0);
	report_neg("i386:ping-inet", r);
	if (r >= 0)
		close((int)r);
}
#endif

static void
a_ifaces(char **av)
{
	struct if_nameindex *ni = if_nameindex(), *i;

	(void)av;
	printf("ifaces:");
	for (i = ni; i != NULL && i->if_index != 0; i++)
		printf(" %s", i->if_name);
	printf("\n");
	fflush(stdout);
	if (ni != NULL)
		if_freenameindex(ni);
}

/* Appends attribute TYPE to the message in BUF. */
static void
rta_put(struct nlmsghdr *n, unsigned short type, const void *data, size_t len)
{
	struct rtattr *a =
	    (struct rtattr *)((char *)n + NLMSG_ALIGN(n->nlmsg_len));

	a->rta_type = type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	if (len > 0)
		memcpy(RTA_DATA(a), data, len);
	n->nlmsg_len = NLMSG_ALIGN(n->nlmsg_len) + RTA_ALIGN(a->rta_len);
}

/* Sends request N and returns the kernel's answer: 0 or an errno. */
static int
nl_talk(struct nlmsghdr *n)
{
	struct sockaddr_nl k = {.nl_family = AF_NETLINK};
	char buf[4096];
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	int s, e;
	ssize_t got;

	if ((s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)) <
	    0)
		return errno;
	n->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	n->nlmsg_seq = 1;
	if (sendto(s, n, n->nlmsg_len, 0, (struct sockaddr *)&k, sizeof(k)) < 0)
		e = errno;
	else if ((got = recv(s, buf, sizeof(buf), 0)) < (ssize_t)sizeof(*h))
		e = got < 0 ? errno : EPROTO;
	else if (h->nlmsg_type == NLMSG_ERROR)
		e = -((struct nlmsgerr *)NLMSG_DATA(h))->error;
	else
		e = EPROTO;
	close(s);
	return e;
}

static void
a_netlink(char **av)
{
	union {
		struct nlmsghdr n;
		char buf[1024];
	} m;
	struct rtmsg *rt;
	struct ifaddrmsg *ifa;
	struct ifinfomsg *ifi;
	struct rtattr *info;
	uint32_t lo = if_nametoindex("lo"), test_net;

	(void)av;
	inet_pton(AF_INET, "192.0.2.1", &test_net); /* TEST-NET-1 */
	memset(&m, 0, sizeof(m));
	m.n.nlmsg_len = NLMSG_LENGTH(sizeof(*rt));
	m.n.nlmsg_type = RTM_NEWROUTE;
	m.n.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	rt = NLMSG_DATA(&m.n);
	rt->rtm_family = AF_INET;
	rt->rtm_table = RT_TABLE_MAIN;
	rt->rtm_protocol = RTPROT_BOOT;
	rt->rtm_scope = RT_SCOPE_LINK;
	rt->rtm_type = RTN_UNICAST;
	rta_put(&m.n, RTA_OIF, &lo, sizeof(lo));
	report_err("route-add-default", nl_talk(&m.n));

	memset(&m, 0, sizeof(m));
	m.n.nlmsg_len = NLMSG_LENGTH(sizeof(*ifa));
	m.n.nlmsg_type = RTM_NEWADDR;
	m.n.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	ifa = NLMSG_DATA(&m.n);
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = 32;
	ifa->ifa_index = lo;
	rta_put(&m.n, IFA_LOCAL, &test_net, 4);
	rta_put(&m.n, IFA_ADDRESS, &test_net, 4);
	report_err("addr-add", nl_talk(&m.n));

	memset(&m, 0, sizeof(m));
	m.n.nlmsg_len = NLMSG_LENGTH(sizeof(*ifi));
	m.n.nlmsg_type = RTM_NEWLINK;
	m.n.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	ifi = NLMSG_DATA(&m.n);
	ifi->ifi_family = AF_UNSPEC;
	rta_put(&m.n, IFLA_IFNAME, "escape0", 8);
	info = (struct rtattr *)((char *)&m.n + NLMSG_ALIGN(m.n.nlmsg_len));
	rta_put(&m.n, IFLA_LINKINFO, NULL, 0);
	rta_put(&m.n, IFLA_INFO_KIND, "veth", 5);
	info->rta_len =
	    (unsigned short)((char *)&m.n + m.n.nlmsg_len - (char *)info);
	report_err("link-add", nl_talk(&m.n));

	memset(&m, 0, sizeof(m));
	m.n.nlmsg_len = NLMSG_LENGTH(sizeof(*ifi));
	m.n.nlmsg_type = RTM_NEWLINK;
	ifi = NLMSG_DATA(&m.n);
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = (int)lo;
	ifi->ifi_change = IFF_UP;
	ifi->ifi_flags = 0;
	report_err("link-set-down", nl_talk(&m.n));
}

/* connect(2) to IP PORT (v4 or v6); prints how long the answer took. */
static void
a_connect(char **av)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
	struct timespec t0, t1;
	socklen_t len;
	int s, r, e;
	long ms;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, av[0], &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)atoi(av[1]));
		len = sizeof(*a4);
	} else if (inet_pton(AF_INET6, av[0], &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)atoi(av[1]));
		len = sizeof(*a6);
	} else {
		fprintf(stderr, "connect: bad address %s\n", av[0]);
		exit(2);
	}
	if ((s = socket(ss.ss_family,
	         SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0) {
		report(label("connect", av[0]), -1);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = connect(s, (struct sockaddr *)&ss, len);
	e = errno;
	/* Bounded: a SYN that goes nowhere must not hang the scenario. */
	if (r != 0 && e == EINPROGRESS) {
		struct pollfd p = {.fd = s, .events = POLLOUT};
		socklen_t elen = sizeof(e);

		if (poll(&p, 1, 3000) != 1)
			e = ETIMEDOUT;
		else if (getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &elen) != 0)
			e = errno;
		r = e == 0 ? 0 : -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 +
	    (t1.tv_nsec - t0.tv_nsec) / 1000000;
	errno = e;
	report(label("connect", av[0]), r);
	printf("connect-ms: %ld\n", ms);
	close(s);
}

static void
a_udp(char **av)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	a.sin_port = htons((uint16_t)atoi(av[1]));
	if (s < 0 || inet_pton(AF_INET, av[0], &a.sin_addr) != 1) {
		report(label("udp-send", av[0]), -1);
		return;
	}
	report(label("udp-send", av[0]),
	    sendto(s, "x", 1, 0, (struct sockaddr *)&a, sizeof(a)));
	close(s);
}

/* --- ptrace and other processes' memory -------------------------------- */

static void
a_ptrace(char **av)
{
	pid_t pid = (pid_t)atol(av[0]);
	struct iovec local, remote;
	char buf[64], path[64];
	int fd, pfd;
	long r;

	r = ptrace(PTRACE_ATTACH, pid, 0, 0);
	report(label("ptrace-attach", av[0]), r);
	if (r == 0) {
		/* Let it go again: a tracee left stopped hangs the run. */
		(void)waitpid(pid, NULL, __WALL);
		(void)ptrace(PTRACE_DETACH, pid, 0, 0);
		(void)kill(pid, SIGCONT);
	}
	r = ptrace(PTRACE_SEIZE, pid, 0, 0);
	report(label("ptrace-seize", av[0]), r);
	if (r == 0)
		(void)ptrace(PTRACE_DETACH, pid, 0, 0);
	local.iov_base = buf;
	local.iov_len = sizeof(buf);
	remote.iov_base = (void *)0x400000;
	remote.iov_len = sizeof(buf);
	r = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	/* Past the permission check, a bad address says EFAULT. */
	if (r < 0 && errno != EPERM && errno != EACCES && errno != ESRCH)
		r = 0;
	report(label("process-vm-readv", av[0]), r);
	snprintf(path, sizeof(path), "/proc/%s/mem", av[0]);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	report(label("open-mem", av[0]), fd);
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "/proc/%s/environ", av[0]);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	report_read(label("read-environ", av[0]), fd);
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "/proc/%s/root/", av[0]);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	report(label("open-root", av[0]), fd);
	if (fd >= 0)
		close(fd);
	pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	r = pfd < 0 ? -1 : syscall(SYS_pidfd_getfd, pfd, 0, 0);
	report(label("pidfd-getfd", av[0]), r);
	if (r >= 0)
		close((int)r);
	if (pfd >= 0)
		close(pfd);
}

/* --- terminals ------------------------------------------------------------ */

/* ioctl(FD, REQ, ARG) through the native, i386 and x32 ABIs. */
static void
tty_calls(const char *what, int fd, unsigned long req, void *arg)
{
	char name[64];

	snprintf(name, sizeof(name), "%s", what);
	report(name, syscall(SYS_ioctl, fd, req, arg));
	/* The kernel reads 32 bits: bits above must not slip it through. */
#if ULONG_MAX > 0xffffffffUL
	snprintf(name, sizeof(name), "%s-high-bits", what);
	report(name, syscall(SYS_ioctl, fd, req | (1UL << 63), arg));
#endif
#ifdef HAVE_I386_CALL
	snprintf(name, sizeof(name), "i386:%s", what);
	if (i386_abi())
		report_neg(name,
		    i386_call(
		        I386_IOCTL, fd, (long)req, (long)(uintptr_t)arg, 0, 0));
	snprintf(name, sizeof(name), "x32:%s", what);
	report(name, syscall(X32_BIT | X32_IOCTL, fd, req, arg));
#endif
}

/*
 * TIOCSTI and TIOCLINUX on a terminal that is this process's controlling
 * one: a new pty, in a new session.  Without the filter TIOCSTI would
 * succeed there (no privilege needed on one's own terminal), and so show
 * that the refusal is the filter's.  Then the same on FD (the scenario's
 * stdin) when it is given.
 */
static void
a_tty(char **av)
{
	char *c = low + 512;
	int m, s = -1;
	pid_t pid;

	c[0] = 'x';
	c[1] = 0;
	fflush(stdout);
	if ((pid = fork()) == 0) {
		if (setsid() < 0 || (m = posix_openpt(O_RDWR | O_NOCTTY)) < 0 ||
		    grantpt(m) != 0 || unlockpt(m) != 0 ||
		    (s = open(ptsname(m), O_RDWR)) < 0 ||
		    ioctl(s, TIOCSCTTY, 0) != 0) {
			printf("tty-setup: refused %s\n", errname(errno));
			_exit(0);
		}
		tty_calls("tiocsti", s, TIOCSTI, c);
		c[0] = 12; /* TIOCL_GETSHIFTSTATE: harmless */
		tty_calls("tioclinux", s, TIOCLINUX, c);
		fflush(stdout);
		_exit(0);
	}
	if (pid > 0)
		(void)waitpid(pid, NULL, 0);
	if (strcmp(av[0], "-") != 0) {
		int fd = atoi(av[0]);

		c[0] = 'x';
		tty_calls("stdin-tiocsti", fd, TIOCSTI, c);
		c[0] = 12;
		tty_calls("stdin-tioclinux", fd, TIOCLINUX, c);
	}
}

/* --- signals and abstract sockets ------------------------------------------ */

static socklen_t
abstract_addr(struct sockaddr_un *a, const char *name)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "%s", name);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
	    strlen(name));
}

static void
a_abstract_connect(char **av)
{
	struct sockaddr_un a;
	socklen_t len = abstract_addr(&a, av[0]);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	report(label("abstract-connect", av[0]),
	    s < 0 ? -1 : connect(s, (struct sockaddr *)&a, len));
	if (s >= 0)
		close(s);
}

/* Listens on abstract NAME, says so in READY, accepts for 60 s at most. */
static void
a_abstract_listen(char **av)
{
	struct sockaddr_un a;
	socklen_t len = abstract_addr(&a, av[0]);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), c, fd;

	alarm(60);
	if (s < 0 || bind(s, (struct sockaddr *)&a, len) != 0 ||
	    listen(s, 8) != 0) {
		report("abstract-listen", -1);
		exit(1);
	}
	if ((fd = open(av[1], O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0)
		close(fd);
	for (;;)
		if ((c = accept(s, NULL, NULL)) >= 0) {
			(void)send(c, "escaped\n", 8, MSG_NOSIGNAL);
			close(c);
		}
}

/* Waits (bounded) for PATH to exist: "wait-file: ok" or "timeout". */
static void
a_wait_file(char **av)
{
	struct timespec d = {0, 10 * 1000 * 1000};
	int i, n = atoi(av[1]) * 100;

	for (i = 0; i < n && access(av[0], F_OK) != 0; i++)
		nanosleep(&d, NULL);
	printf("wait-file: %s\n", access(av[0], F_OK) == 0 ? "ok" : "timeout");
	fflush(stdout);
}

/* --- the table ------------------------------------------------------------ */

static const struct attempt attempts[] = {
    {"kill", 2, a_kill},
    {"sethostname", 0, a_sethostname},
    {"setns", 1, a_setns},
    {"sysv", 1, a_sysv},
    {"shmat", 1, a_shmat},
    {"sysv-make", 1, a_sysv_make},
    {"sysv-rm", 1, a_sysv_rm},
    {"caps", 0, a_caps},
    {"capset", 0, a_capset},
    {"privileged", 1, a_privileged},
    {"remount", 1, a_remount},
    {"umount", 1, a_umount},
    {"mount", 1, a_mount},
    {"pivot", 0, a_pivot},
    {"create", 1, a_create},
    {"write", 1, a_write},
    {"read", 1, a_read},
    {"unhide", 1, a_unhide},
    {"handles", 1, a_handles},
    {"newuser", 0, a_newuser},
    {"syscalls", 0, a_syscalls},
#ifdef HAVE_I386_CALL
    {"syscalls32", 0, a_syscalls32},
    {"i386-abi", 0, a_i386_abi},
#endif
    {"raw", 0, a_raw},
#ifdef HAVE_I386_CALL
    {"raw32", 0, a_raw32},
#endif
    {"ifaces", 0, a_ifaces},
    {"netlink", 0, a_netlink},
    {"connect", 2, a_connect},
    {"udp", 2, a_udp},
    {"ptrace", 1, a_ptrace},
    {"tty", 1, a_tty},
    {"abstract-connect", 1, a_abstract_connect},
    {"abstract-listen", 2, a_abstract_listen},
    {"wait-file", 2, a_wait_file},
};

#define NATTEMPTS (sizeof(attempts) / sizeof(attempts[0]))

static const struct attempt *
lookup(const char *name)
{
	size_t i;

	for (i = 0; i < NATTEMPTS; i++)
		if (strcmp(attempts[i].name, name) == 0)
			return &attempts[i];
	return NULL;
}

int
main(int argc, char **argv)
{
	const struct attempt *a;
	int i = 1;

	if (argc < 2) {
		fprintf(stderr, "usage: %s SUBCOMMAND [ARG...]...\n", argv[0]);
		return 2;
	}
	low = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS
#ifdef MAP_32BIT
	        | MAP_32BIT
#endif
	    ,
	    -1, 0);
	if (low == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	while (i < argc) {
		if ((a = lookup(argv[i])) == NULL || i + a->nargs >= argc) {
			fprintf(stderr,
			    "%s: unknown subcommand or missing "
			    "arguments: %s\n",
			    argv[0], argv[i]);
			return 2;
		}
		a->fn(argv + i + 1);
		i += 1 + a->nargs;
	}
	return 0;
}
