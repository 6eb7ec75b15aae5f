/*
 * test_seccomp.c: unit tests of netns/seccomp.c.
 *
 * A filter cannot be removed, so every probe runs in a forked child,
 * either under the filter (FILTERED) or, as a control, without it (BARE).
 * A probe makes one call and returns its errno, or 0 when it succeeded;
 * the child exits with that and the parent asserts on it.  The controls
 * show that the errno a filtered call gets comes from the filter: the
 * kernel alone answers something else.  Calls are made with arguments
 * that would do no harm even if the filter let them through.
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/netlink.h>

#include <cmocka.h>
#include <seccomp.h>

#include "netns/seccomp.h"
#include "tests/unit/fixture.h"

#define BARE 0
#define FILTERED 1
/* Exit statuses of a child that could not run its probe. */
#define ST_APPLY 251
#define ST_SETUP 252

#define KEYCTL_GET_KEYRING_ID 0
#define KEY_SPEC_SESSION_KEYRING (-3)
#define ADDR_NO_RANDOMIZE 0x0040000
#define READ_IMPLIES_EXEC 0x0400000
#define X32_SYSCALL_BIT 0x40000000UL

/* The first fields of struct clone_args, CLONE_ARGS_SIZE_VER0. */
struct clone_args0 {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal;
	uint64_t stack, stack_size, tls;
};

/* 0 when CALL succeeded, else its errno. */
#define ERR(call) ((call) == -1 ? errno : 0)

/*
 * Runs PROBE(ARG) in a child, under the filter when FILTER, and returns
 * the child's exit status: the probe's errno, or 0.
 */
static int
run(int filter, int (*probe)(long), long arg)
{
	char err[256];
	pid_t pid;
	int st;

	fflush(NULL);
	assert_true((pid = fork()) != -1);
	if (pid == 0) {
		fixture_child_signals();
		if (filter && sc_apply(err, sizeof(err)) != 0) {
			fprintf(stderr, "child: %s\n", err);
			_exit(ST_APPLY);
		}
		_exit(probe(arg));
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		fail_msg("the child was killed by signal %d", WTERMSIG(st));
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == ST_APPLY || WEXITSTATUS(st) == ST_SETUP)
		fail_msg("the child could not run its probe, see above");
	return WEXITSTATUS(st);
}

/*
 * Makes a new session whose controlling terminal is a fresh pty.
 * Returns the pty's slave side, or ends the child.
 */
static int
pty_ctty(void)
{
	char name[64];
	int m, s;

	if ((m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)) == -1 ||
	    grantpt(m) == -1 || unlockpt(m) == -1 ||
	    ptsname_r(m, name, sizeof(name)) != 0 || setsid() == -1 ||
	    (s = open(name, O_RDWR | O_CLOEXEC)) == -1) {
		fprintf(stderr, "child: pty: %s\n", strerror(errno));
		_exit(ST_SETUP);
	}
	return s;
}

/* TIOCSTI on our own terminal, with ARG in the request's high bits. */
static int
probe_tiocsti(long arg)
{
	unsigned long req = TIOCSTI | ((unsigned long)arg << 32);
	char c = 'x';
	int fd = pty_ctty();

	return ERR(syscall(SYS_ioctl, fd, req, &c));
}

static int
probe_tioclinux(long arg)
{
	char sub = 0;
	int fd = pty_ctty();

	(void)arg;
	return ERR(ioctl(fd, TIOCLINUX, &sub));
}

static int
probe_tiocgwinsz(long arg)
{
	struct winsize ws;
	int fd = pty_ctty();

	(void)arg;
	return ERR(ioctl(fd, TIOCGWINSZ, &ws));
}

/* Any call, by number, with every argument -1 (harmless for each). */
static int
probe_syscall(long nr)
{
	return ERR(syscall(nr, -1L, -1L, -1L, -1L, -1L, -1L));
}

/* init_module with a length of 0 (ENOEXEC); -1 would vmalloc it. */
static int
probe_init_module(long nr)
{
	return ERR(syscall(nr, 0L, 0L, 0L));
}

static int
probe_keyctl(long arg)
{
	(void)arg;
	return ERR(syscall(
	    SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
}

/* An unknown BPF command: EINVAL from the kernel, whoever asks. */
static int
probe_bpf(long arg)
{
	char attr[64] = {0};

	(void)arg;
	return ERR(syscall(SYS_bpf, 0x7fff, attr, sizeof(attr)));
}

static int
probe_unshare(long flags)
{
	return ERR(unshare((int)flags));
}

/* Ends a child that a raw clone made, or waits for it.  0 or errno. */
static int
reap(long pid)
{
	int st;

	if (pid == 0)
		_exit(0);
	if (pid == -1)
		return errno;
	if (waitpid((pid_t)pid, &st, 0) == -1)
		return errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : EIO;
}

static int
probe_clone(long flags)
{
	return reap(syscall(SYS_clone, flags | SIGCHLD, 0L, 0L, 0L, 0L));
}

static int
probe_clone3(long arg)
{
	struct clone_args0 ca;

	(void)arg;
	memset(&ca, 0, sizeof(ca));
	ca.exit_signal = SIGCHLD;
	return reap(syscall(SYS_clone3, &ca, sizeof(ca)));
}

static int
probe_fork(long arg)
{
	pid_t pid;
	int st;

	(void)arg;
	if ((pid = fork()) == 0)
		_exit(7);
	if (pid == -1 || waitpid(pid, &st, 0) == -1)
		return errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 7 ? 0 : EIO;
}

static void *
thread_main(void *arg)
{
	return arg;
}

/* glibc tries clone3 first and falls back to clone on ENOSYS. */
static int
probe_thread(long arg)
{
	static int token;
	pthread_t t;
	void *ret = NULL;
	int e;

	(void)arg;
	if ((e = pthread_create(&t, NULL, thread_main, &token)) != 0)
		return e;
	if ((e = pthread_join(t, &ret)) != 0)
		return e;
	return ret == &token ? 0 : EIO;
}

static int
probe_ptrace(long arg)
{
	pid_t pid;
	int st;

	(void)arg;
	if ((pid = fork()) == 0)
		_exit(ptrace(PTRACE_TRACEME, 0, NULL, NULL) == -1 ? errno : 0);
	if (pid == -1 || waitpid(pid, &st, 0) == -1)
		return errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : EIO;
}

static int
probe_personality(long v)
{
	long r = syscall(SYS_personality, (unsigned long)v);
	int e = errno;

	if (r != -1)
		syscall(SYS_personality, 0UL);
	return r == -1 ? e : 0;
}

/* Checks personality(V): allowed for 0, 8, 0xffffffff (low 32 bits). */
static int
check_personality(uint64_t v)
{
	uint32_t lo = (uint32_t)v;
	int allowed = lo == 0 || lo == 8 || lo == 0xffffffff;
	int e = probe_personality((long)v);

	if (allowed ? e == 0 : e == EPERM)
		return 0;
	fprintf(stderr, "child: personality(0x%llx): %s\n",
	    (unsigned long long)v, e != 0 ? strerror(e) : "allowed");
	return 1;
}

/* A cyclic run of LEN set bits starting at bit START. */
static uint32_t
run_of_bits(unsigned start, unsigned len)
{
	uint32_t v = 0;
	unsigned i;

	for (i = 0; i < len; i++)
		v |= 1U << ((start + i) % 32);
	return v;
}

/*
 * Every value with one or two bits set, their complements, every cyclic
 * run of set bits, and some of them with bits above 32 set.
 */
static int
probe_personality_sweep(long arg)
{
	uint64_t hi = 1ULL << 32;
	uint32_t m;
	unsigned a, b;
	int bad = 0;

	(void)arg;
	bad |= check_personality(0) | check_personality(0xffffffff);
	bad |= check_personality(hi) | check_personality(hi | 8);
	for (a = 0; a < 32 && !bad; a++)
		for (b = a; b < 32 && !bad; b++) {
			m = (1U << a) | (1U << b);
			bad |= check_personality(m);
			bad |= check_personality((uint32_t)~m);
			bad |= check_personality(hi | m);
		}
	for (a = 0; a < 32 && !bad; a++)
		for (b = 1; b < 32 && !bad; b++)
			bad |= check_personality(run_of_bits(a, b));
	return bad ? EBADMSG : 0;
}

#if defined(__x86_64__) && defined(__LP64__)
#define I386_GETPID 20
#define I386_SOCKETCALL 102
#define I386_SOCKET 359
#define I386_SOCKETPAIR 360
#define X86_64_SOCKET 41
#define SYS_SOCKET_SUB 1
#define I386_KEYCTL 288
#define X86_64_KEYCTL 250

static int
probe_int80_getpid(long arg)
{
	long r = fixture_int80(I386_GETPID, 0, 0, 0);

	(void)arg;
	return r == getpid() ? 0 : (int)-r;
}

/* 0 when int $0x80 kills the caller here too (no i386 ABI). */
static int
probe_int80_absent(long arg)
{
	(void)arg;
	return fixture_i386_abi() == 0 ? 0 : 1;
}

/*
 * 1 when there is an i386 ABI to check; 0 when the kernel has none, after
 * checking that it is as absent under the filter as without (said, so
 * that the i386 checks are never dropped silently).
 */
static int
i386_abi_checked(const char *test)
{
	int abi = fixture_i386_abi();

	assert_int_not_equal(abi, -1);
	if (abi == 0) {
		assert_int_equal(run(FILTERED, probe_int80_absent, 0), 0);
		fprintf(stderr,
		    "%s: " FIXTURE_I386_ABSENT "; checked that it kills the "
		    "caller under the filter too, instead of the i386 calls\n",
		    test);
	}
	return abi;
}

static int
probe_int80_keyctl(long arg)
{
	long r = fixture_int80(
	    I386_KEYCTL, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);

	(void)arg;
	return r < 0 ? (int)-r : 0;
}

/*
 * socketcall(SYS_SOCKET, {FAMILY, SOCK_STREAM, 0}), the i386 way; the
 * vector must lie below 4 GiB for a 32-bit pointer to reach it.
 */
static int
probe_int80_socketcall(long family)
{
	unsigned int *args = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	long r;

	if (args == MAP_FAILED)
		return ST_SETUP;
	args[0] = (unsigned int)family;
	args[1] = SOCK_STREAM;
	args[2] = 0;
	r = fixture_int80(I386_SOCKETCALL, SYS_SOCKET_SUB, (long)args, 0);

	if (r >= 0)
		close((int)r);
	return r < 0 ? (int)-r : 0;
}

/* The direct i386 socket call (Linux 4.3), musl's and newer glibc's. */
static int
probe_int80_socket(long family)
{
	long r = fixture_int80(I386_SOCKET, family, SOCK_STREAM, 0);

	if (r >= 0)
		close((int)r);
	return r < 0 ? (int)-r : 0;
}

static int
probe_int80_socketpair(long family)
{
	long r = fixture_int80(I386_SOCKETPAIR, family, SOCK_STREAM, 0);

	return r < 0 ? (int)-r : 0; /* a NULL vector: EFAULT past the filter */
}

/* This kernel may have no x32: the filter answers before it does. */
static int
probe_x32_socket(long family)
{
	return ERR(syscall(
	    X32_SYSCALL_BIT | X86_64_SOCKET, family, (long)SOCK_STREAM, 0L));
}

static int
probe_x32_keyctl(long arg)
{
	(void)arg;
	return ERR(syscall(X32_SYSCALL_BIT | X86_64_KEYCTL,
	    KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
}
#endif

/* socket(FAMILY, SOCK_STREAM or SOCK_DGRAM, 0); closes what it made. */
static int
probe_socket(long family)
{
	int fd = (int)syscall(SYS_socket, family, SOCK_STREAM, 0L);

	if (fd == -1 && errno == ESOCKTNOSUPPORT)
		fd = (int)syscall(SYS_socket, family, SOCK_DGRAM, 0L);
	if (fd == -1 && (errno == ESOCKTNOSUPPORT || errno == EPROTOTYPE))
		fd = (int)syscall(SYS_socket, family, SOCK_SEQPACKET, 0L);
	if (fd == -1)
		return errno;
	close(fd);
	return 0;
}

static int
probe_netlink(long proto)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, (int)proto);

	if (fd == -1)
		return errno;
	close(fd);
	return 0;
}

static int
probe_socketpair(long family)
{
	int sv[2];

	if (syscall(SYS_socketpair, family, SOCK_STREAM, 0L, sv) == -1)
		return errno;
	close(sv[0]);
	close(sv[1]);
	return 0;
}

/*
 * Every family number up to 300, with and without high bits, under the
 * filter: only the four it names get past it, and only with the high 32
 * bits clear (no C library sets them; the filter refuses what it cannot
 * read as the kernel does).  Never connects anything.
 */
static int
probe_family_sweep(long arg)
{
	long f, hi;
	int e, bad = 0;

	(void)arg;
	for (f = 0; f < 300 && !bad; f++)
		for (hi = 0; hi <= 1 && !bad; hi++) {
			e = probe_socket(f | (hi << 32));
			if (hi == 0 &&
			    (f == AF_UNIX || f == AF_INET || f == AF_INET6 ||
			        f == AF_NETLINK))
				bad = e != 0;
			else
				bad = e != EAFNOSUPPORT;
			if (bad)
				fprintf(stderr,
				    "child: socket(%ld|%ld<<32): %s\n", f, hi,
				    e != 0 ? strerror(e) : "made");
		}
	return bad ? EBADMSG : 0;
}

static void
test_tiocsti(void **state)
{
	int bare = run(BARE, probe_tiocsti, 0);

	(void)state;
	/* Alone, the kernel allows it (or says EIO: legacy_tiocsti=0). */
	if (bare != 0 && bare != EIO)
		fail_msg(
		    "control: TIOCSTI without the filter: %s", strerror(bare));
	assert_int_equal(run(FILTERED, probe_tiocsti, 0), EPERM);
	assert_int_equal(run(FILTERED, probe_tiocgwinsz, 0), 0);
}

/* The kernel reads the request as 32 bits; so does the filter. */
static void
test_tiocsti_high_bits(void **state)
{
	int bare = run(BARE, probe_tiocsti, 1);

	(void)state;
	if (bare != 0 && bare != EIO)
		fail_msg("control: TIOCSTI | 1 << 32 without the filter: %s",
		    strerror(bare));
	assert_int_equal(run(FILTERED, probe_tiocsti, 1), EPERM);
	assert_int_equal(run(FILTERED, probe_tiocsti, 0xffffffff), EPERM);
}

static void
test_tioclinux(void **state)
{
	(void)state;
	assert_int_not_equal(run(BARE, probe_tioclinux, 0), EPERM);
	assert_int_equal(run(FILTERED, probe_tioclinux, 0), EPERM);
}

static void
test_keyctl(void **state)
{
	(void)state;
	assert_int_not_equal(run(BARE, probe_keyctl, 0), EPERM);
	assert_int_equal(run(FILTERED, probe_keyctl, 0), EPERM);
}

static void
test_bpf(void **state)
{
	(void)state;
	assert_int_equal(run(BARE, probe_bpf, 0), EINVAL);
	assert_int_equal(run(FILTERED, probe_bpf, 0), EPERM);
}

static void
test_newuser(void **state)
{
	int bare = run(BARE, probe_unshare, CLONE_NEWUSER);

	(void)state;
	if (bare != 0)
		fprintf(stderr,
		    "%s: note: the kernel itself refuses a user namespace "
		    "here (%s)\n",
		    __func__, strerror(bare));
	assert_int_equal(run(FILTERED, probe_unshare, CLONE_NEWUSER), EPERM);
	assert_int_equal(
	    run(FILTERED, probe_unshare, CLONE_NEWUSER | CLONE_NEWNS), EPERM);
	assert_int_equal(run(FILTERED, probe_clone, CLONE_NEWUSER), EPERM);
	/* Other flags pass: the kernel decides. */
	assert_int_equal(run(FILTERED, probe_unshare, 0), 0);
	assert_int_equal(run(FILTERED, probe_clone, 0), 0);
}

static void
test_clone3(void **state)
{
	(void)state;
	assert_int_equal(run(BARE, probe_clone3, 0), 0);
	assert_int_equal(run(FILTERED, probe_clone3, 0), ENOSYS);
}

/* What must keep working: fork, threads (clone3 falls back), ptrace. */
static void
test_still_allowed(void **state)
{
	(void)state;
	assert_int_equal(run(FILTERED, probe_fork, 0), 0);
	assert_int_equal(run(FILTERED, probe_thread, 0), 0);
	assert_int_equal(run(FILTERED, probe_ptrace, 0), 0);
}

static void
test_personality(void **state)
{
	(void)state;
	assert_int_equal(run(BARE, probe_personality, ADDR_NO_RANDOMIZE), 0);
	assert_int_equal(
	    run(FILTERED, probe_personality, ADDR_NO_RANDOMIZE), EPERM);
	assert_int_equal(
	    run(FILTERED, probe_personality, READ_IMPLIES_EXEC), EPERM);
	assert_int_equal(run(FILTERED, probe_personality, 8), 0);
	assert_int_equal(run(FILTERED, probe_personality, 0xffffffff), 0);
	assert_int_equal(run(FILTERED, probe_personality_sweep, 0), 0);
}

/* The denied calls of DESIGN.md, and the errno each gets. */
static const struct {
	const char *name;
	int err;
} denied[] = {
    {"keyctl", EPERM},
    {"add_key", EPERM},
    {"request_key", EPERM},
    {"bpf", EPERM},
    {"perf_event_open", EPERM},
    {"userfaultfd", EPERM},
    {"kexec_load", EPERM},
    {"kexec_file_load", EPERM},
    {"init_module", EPERM},
    {"finit_module", EPERM},
    {"delete_module", EPERM},
    {"acct", EPERM},
    {"swapon", EPERM},
    {"swapoff", EPERM},
    {"reboot", EPERM},
    {"open_by_handle_at", EPERM},
    {"name_to_handle_at", EPERM},
    {"lookup_dcookie", EPERM},
    {"io_uring_setup", EPERM},
    {"io_uring_enter", EPERM},
    {"io_uring_register", EPERM},
    {"clone3", ENOSYS},
};

static void
test_denied_calls(void **state)
{
	size_t i;
	int nr, got;

	(void)state;
	for (i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
		nr = seccomp_syscall_resolve_name(denied[i].name);
		if (nr < 0) {
			fprintf(stderr,
			    "%s: note: no %s on this architecture\n", __func__,
			    denied[i].name);
			continue;
		}
		got = run(FILTERED,
		    strcmp(denied[i].name, "init_module") == 0
		        ? probe_init_module
		        : probe_syscall,
		    nr);
		if (got != denied[i].err)
			fail_msg("%s: got %s, want %s", denied[i].name,
			    strerror(got), strerror(denied[i].err));
	}
}

/* sc_denied() names each of them, and ends with NULL. */
static void
test_denied_list(void **state)
{
	size_t i, j, n;
	int found;

	(void)state;
	for (n = 0; sc_denied(n) != NULL; n++)
		assert_null(strchr(sc_denied(n), '\n'));
	assert_true(n > sizeof(denied) / sizeof(denied[0]));
	for (i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
		for (found = 0, j = 0; j < n && !found; j++)
			found = strncmp(sc_denied(j), denied[i].name,
			            strlen(denied[i].name)) == 0;
		if (!found)
			fail_msg("sc_denied() lacks %s", denied[i].name);
	}
	assert_null(sc_denied(n + 1));
}

/* i386 and x32 calls from a 64-bit process meet the same rules. */
static void
test_other_abis(void **state)
{
	(void)state;
#if defined(__x86_64__) && defined(__LP64__)
	assert_int_equal(run(FILTERED, probe_x32_keyctl, 0), EPERM);
	if (!i386_abi_checked(__func__))
		return;
	assert_int_equal(run(FILTERED, probe_int80_getpid, 0), 0);
	assert_int_not_equal(run(BARE, probe_int80_keyctl, 0), EPERM);
	assert_int_equal(run(FILTERED, probe_int80_keyctl, 0), EPERM);
#else
	fprintf(stderr, "%s: skipped: x86_64 only\n", __func__);
	skip();
#endif
}

/* Only AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK sockets. */
static void
test_families(void **state)
{
	(void)state;
	assert_int_equal(run(FILTERED, probe_socket, AF_VSOCK), EAFNOSUPPORT);
	assert_int_equal(run(FILTERED, probe_socket, AF_PACKET), EAFNOSUPPORT);
	assert_int_equal(run(FILTERED, probe_socket, AF_ALG), EAFNOSUPPORT);
	/* Control: the kernel itself has AF_ALG here, or says so. */
	assert_int_not_equal(run(BARE, probe_socket, AF_NETLINK), EAFNOSUPPORT);
	assert_int_equal(run(FILTERED, probe_socket, AF_UNIX), 0);
	assert_int_equal(run(FILTERED, probe_socket, AF_INET), 0);
	assert_int_equal(run(FILTERED, probe_socket, AF_INET6), 0);
	assert_int_equal(run(FILTERED, probe_family_sweep, 0), 0);
}

static void
test_netlink_protocols(void **state)
{
	(void)state;
	assert_int_equal(run(BARE, probe_netlink, NETLINK_ROUTE), 0);
	assert_int_equal(run(FILTERED, probe_netlink, NETLINK_ROUTE), 0);
	assert_int_equal(run(FILTERED, probe_netlink, NETLINK_SOCK_DIAG), 0);
	assert_int_equal(
	    run(FILTERED, probe_netlink, NETLINK_KOBJECT_UEVENT), 0);
	assert_int_not_equal(
	    run(BARE, probe_netlink, NETLINK_AUDIT), EPROTONOSUPPORT);
	assert_int_equal(
	    run(FILTERED, probe_netlink, NETLINK_AUDIT), EPROTONOSUPPORT);
	assert_int_equal(
	    run(FILTERED, probe_netlink, NETLINK_XFRM), EPROTONOSUPPORT);
	assert_int_equal(
	    run(FILTERED, probe_netlink, NETLINK_GENERIC), EPROTONOSUPPORT);
	assert_int_equal(run(FILTERED, probe_netlink, NETLINK_ROUTE | 1L << 8),
	    EPROTONOSUPPORT);
	assert_int_equal(run(FILTERED, probe_netlink, 16), EPROTONOSUPPORT);
	assert_int_equal(run(FILTERED, probe_netlink, -1), EPROTONOSUPPORT);
}

static void
test_socketpair(void **state)
{
	(void)state;
	assert_int_equal(run(FILTERED, probe_socketpair, AF_UNIX), 0);
	assert_int_equal(
	    run(FILTERED, probe_socketpair, AF_UNIX | 1L << 32), EAFNOSUPPORT);
	assert_int_equal(run(BARE, probe_socketpair, AF_INET), EOPNOTSUPP);
	assert_int_equal(
	    run(FILTERED, probe_socketpair, AF_INET), EAFNOSUPPORT);
	assert_int_equal(
	    run(FILTERED, probe_socketpair, AF_VSOCK), EAFNOSUPPORT);
	assert_int_equal(
	    run(FILTERED, probe_socketpair, AF_UNIX | 1L << 8), EAFNOSUPPORT);
}

/*
 * i386: socketcall(2) hides its arguments, so it fails with ENOSYS; the
 * direct calls meet the same family rules as the native ones.
 */
static void
test_families_other_abis(void **state)
{
	(void)state;
#if defined(__x86_64__) && defined(__LP64__)
	assert_int_equal(
	    run(FILTERED, probe_x32_socket, AF_VSOCK), EAFNOSUPPORT);
	if (!i386_abi_checked(__func__))
		return;
	assert_int_equal(run(BARE, probe_int80_socketcall, AF_UNIX), 0);
	assert_int_equal(
	    run(FILTERED, probe_int80_socketcall, AF_UNIX), ENOSYS);
	assert_int_equal(
	    run(FILTERED, probe_int80_socketcall, AF_VSOCK), ENOSYS);
	assert_int_equal(run(FILTERED, probe_int80_socket, AF_UNIX), 0);
	assert_int_equal(run(FILTERED, probe_int80_socket, AF_INET), 0);
	assert_int_equal(
	    run(FILTERED, probe_int80_socket, AF_VSOCK), EAFNOSUPPORT);
	assert_int_equal(
	    run(FILTERED, probe_int80_socket, AF_PACKET), EAFNOSUPPORT);
	assert_int_equal(
	    run(FILTERED, probe_int80_socketpair, AF_INET), EAFNOSUPPORT);
	assert_int_equal(
	    run(FILTERED, probe_int80_socketpair, AF_UNIX), EFAULT);
#else
	fprintf(stderr, "%s: skipped: x86_64 only\n", __func__);
	skip();
#endif
}

/* Filters stack: applying twice is fine. */
static int
probe_apply_again(long arg)
{
	char err[256];

	(void)arg;
	if (sc_apply(err, sizeof(err)) != 0)
		return EIO;
	return probe_keyctl(0);
}

static void
test_apply_twice(void **state)
{
	(void)state;
	assert_int_equal(run(FILTERED, probe_apply_again, 0), EPERM);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tiocsti),
	    cmocka_unit_test(test_tiocsti_high_bits),
	    cmocka_unit_test(test_tioclinux),
	    cmocka_unit_test(test_keyctl),
	    cmocka_unit_test(test_bpf),
	    cmocka_unit_test(test_newuser),
	    cmocka_unit_test(test_clone3),
	    cmocka_unit_test(test_still_allowed),
	    cmocka_unit_test(test_personality),
	    cmocka_unit_test(test_denied_calls),
	    cmocka_unit_test(test_denied_list),
	    cmocka_unit_test(test_other_abis),
	    cmocka_unit_test(test_apply_twice),
	    cmocka_unit_test(test_families),
	    cmocka_unit_test(test_netlink_protocols),
	    cmocka_unit_test(test_socketpair),
	    cmocka_unit_test(test_families_other_abis),
	};

	return cmocka_run_group_tests_name("seccomp", tests, NULL, NULL);
}
