/*
 * seccomp.c: the sandboxed command's system call filter, built with
 * libseccomp: default allow, and a table of calls that fail instead.
 *
 * Other system call ABIs.  A 64-bit x86 process can still make i386
 * calls (int $0x80) and x32 calls (numbers with bit 30 set); each has its
 * own numbers, so a filter written for x86_64 alone does not see them as
 * the calls it names.  libseccomp sends such calls to the bad-arch
 * action, which kills, and that would also kill every 32-bit program run
 * in the sandbox.  So the build architecture's compatible ABIs are added
 * to the filter with the same rules (libseccomp maps each name to each
 * ABI's number, and leaves out calls an ABI does not have), and anything
 * else still meets the bad-arch action, set here to kill the process.
 */
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include <linux/netlink.h>
#include <netinet/in.h>

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <seccomp.h>

#include "seccomp.h"

/* The argument that holds clone's flags: s390 swaps the first two. */
#if defined(__s390__) || defined(__s390x__)
#define CLONE_FLAGS_ARG 1
#else
#define CLONE_FLAGS_ARG 0
#endif

enum kind {
	ALWAYS, /* whatever the arguments */
	IOCTL, /* ioctl with request ARG */
	NEWUSER, /* with CLONE_NEWUSER among the flags */
	PERSONALITY, /* other than 0, PER_LINUX32 and the query */
	FAMILY, /* socket: a family other than those of families[] */
	NLPROTO, /* socket(AF_NETLINK): a protocol not in nlprotos[] */
	PAIR, /* socketpair: a family other than AF_UNIX */
};

struct deny {
	const char *name;
	enum kind kind;
	int err;
	unsigned long arg;
	const char *desc; /* for sc_denied(); NULL: NAME */
};

/*
 * ioctl requests are compared on 32 bits: the kernel reads them as an
 * unsigned int, so bits above that must not let one through.  TIOCSTI and
 * TIOCLINUX have the same numbers on the compatible ABIs added below.
 */
static const struct deny denies[] = {
    {"ioctl", IOCTL, EPERM, TIOCSTI, "ioctl TIOCSTI"},
    {"ioctl", IOCTL, EPERM, TIOCLINUX, "ioctl TIOCLINUX"},
    {"clone", NEWUSER, EPERM, 0, "clone CLONE_NEWUSER"},
    {"unshare", NEWUSER, EPERM, 0, "unshare CLONE_NEWUSER"},
    /* Its flags are behind a pointer, out of a filter's sight. */
    {"clone3", ALWAYS, ENOSYS, 0, "clone3 (ENOSYS)"},
    {"personality", PERSONALITY, EPERM, 0,
        "personality other than 0, 8, 0xffffffff"},
    {"keyctl", ALWAYS, EPERM, 0, NULL},
    {"add_key", ALWAYS, EPERM, 0, NULL},
    {"request_key", ALWAYS, EPERM, 0, NULL},
    {"bpf", ALWAYS, EPERM, 0, NULL},
    {"perf_event_open", ALWAYS, EPERM, 0, NULL},
    {"userfaultfd", ALWAYS, EPERM, 0, NULL},
    /* io_uring does its work out of seccomp's sight. */
    {"io_uring_setup", ALWAYS, EPERM, 0, NULL},
    {"io_uring_enter", ALWAYS, EPERM, 0, NULL},
    {"io_uring_register", ALWAYS, EPERM, 0, NULL},
    {"kexec_load", ALWAYS, EPERM, 0, NULL},
    {"kexec_file_load", ALWAYS, EPERM, 0, NULL},
    {"init_module", ALWAYS, EPERM, 0, NULL},
    {"finit_module", ALWAYS, EPERM, 0, NULL},
    {"delete_module", ALWAYS, EPERM, 0, NULL},
    {"acct", ALWAYS, EPERM, 0, NULL},
    {"swapon", ALWAYS, EPERM, 0, NULL},
    {"swapoff", ALWAYS, EPERM, 0, NULL},
    {"reboot", ALWAYS, EPERM, 0, NULL},
    {"open_by_handle_at", ALWAYS, EPERM, 0, NULL},
    {"name_to_handle_at", ALWAYS, EPERM, 0, NULL},
    {"lookup_dcookie", ALWAYS, EPERM, 0, NULL},
    {"socket", FAMILY, EAFNOSUPPORT, 0,
        "socket other than AF_UNIX, AF_INET, AF_INET6, AF_NETLINK "
        "(EAFNOSUPPORT)"},
    {"socket", NLPROTO, EPROTONOSUPPORT, 0,
        "socket AF_NETLINK other than ROUTE, SOCK_DIAG, KOBJECT_UEVENT "
        "(EPROTONOSUPPORT)"},
    {"socketpair", PAIR, EAFNOSUPPORT, 0,
        "socketpair other than AF_UNIX (EAFNOSUPPORT)"},
    /* i386: its arguments are behind a pointer, out of a filter's sight. */
    {"socketcall", ALWAYS, ENOSYS, 0, "socketcall (i386, ENOSYS)"},
};

/*
 * The socket families the command may use: the network namespace scopes
 * each of them (its own lo, its own Unix sockets, its own routes).  Every
 * other family is refused: vsock's port table is the host's, and the rest
 * (Bluetooth, ALG, CAN, XDP, KEY, PACKET, TIPC, RDS...) are kernel attack
 * surface no build needs.
 */
static const uint32_t families[] = {
    AF_UNIX, AF_INET, AF_INET6, AF_NETLINK}; /* sorted */
static const uint32_t pair_families[] = {AF_UNIX};

/*
 * Netlink protocols: routes and links (ip, getifaddrs), sock_diag (ss;
 * it lists the namespace's own sockets only) and uevents (udev clients).
 * Not audit, xfrm, netfilter, generic netlink and the rest.
 */
static const uint32_t nlprotos[] = {
    NETLINK_ROUTE, NETLINK_SOCK_DIAG, NETLINK_KOBJECT_UEVENT}; /* sorted */

#define NDENIES (sizeof(denies) / sizeof(denies[0]))

/* The ABIs a process of the build architecture can also call through. */
static const uint32_t compat_arches[] = {
#if defined(__x86_64__) && defined(__LP64__)
    SCMP_ARCH_X86, SCMP_ARCH_X32,
#elif defined(__aarch64__)
    SCMP_ARCH_ARM,
#endif
    SCMP_ARCH_NATIVE, /* the end */
};

const char *
sc_denied(size_t i)
{
	if (i >= NDENIES)
		return NULL;
	return denies[i].desc != NULL ? denies[i].desc : denies[i].name;
}

/*
 * personality(2) is allowed for 0 (PER_LINUX), 8 (PER_LINUX32) and the
 * query 0xffffffff, and refused for the rest, which turn off address
 * randomisation (ADDR_NO_RANDOMIZE) or make data executable
 * (READ_IMPLIES_EXEC) for the next program.  The kernel reads 32 bits.
 *
 * A libseccomp rule compares an argument once, so "none of three values"
 * is a union of rules "bit S set and bit C clear".  A 32-bit value other
 * than 0 and 0xffffffff has a set bit I whose next bit I+1 (cyclically)
 * is clear, and one rule per I catches it; but not for I = 3, since 8 is
 * bit 3 alone.  Values caught by no other rule then have their set bits
 * in one cyclic run ending at bit 3: 8, or a longer run, which has bit 2
 * set and bit 4 clear, the rule that stands in for I = 3.
 */
static int
add_personality(scmp_filter_ctx ctx, uint32_t act, int nr)
{
	uint32_t set, clear;
	unsigned i;
	int r = 0;

	for (i = 0; i < 32 && r == 0; i++) {
		set = 1U << (i == 3 ? 2 : i);
		clear = 1U << ((i + 1) % 32);
		r = seccomp_rule_add(ctx, act, nr, 1,
		    SCMP_A0(SCMP_CMP_MASKED_EQ, set | clear, set));
	}
	return r;
}

static int
in_set(uint32_t v, const uint32_t *set, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (set[i] == v)
			return 1;
	return 0;
}

/*
 * Adds rules that take ACT when argument ARG is none of the N values of
 * SET (sorted, small), and, when PRE is not NULL, PRE holds too.  "None
 * of" is a union of rules: one for values above the largest, one per
 * value below it that is not in SET.  The comparisons are on 64 bits:
 * the kernel reads an int, and a value with any of the high 32 bits set
 * (which no C library passes) is refused, whatever its low bits say.
 */
static int
add_not_in(scmp_filter_ctx ctx, uint32_t act, int nr, unsigned arg,
    const uint32_t *set, size_t n, const struct scmp_arg_cmp *pre)
{
	struct scmp_arg_cmp c[2];
	unsigned npre = pre != NULL ? 1 : 0;
	uint32_t v, max = set[n - 1];
	int r;

	if (pre != NULL)
		c[0] = *pre;
	c[npre] = SCMP_CMP(arg, SCMP_CMP_GT, max, 0);
	r = seccomp_rule_add_array(ctx, act, nr, npre + 1, c);
	for (v = 0; v < max && r == 0; v++) {
		if (in_set(v, set, n))
			continue;
		c[npre] = SCMP_CMP(arg, SCMP_CMP_EQ, v, 0);
		r = seccomp_rule_add_array(ctx, act, nr, npre + 1, c);
	}
	return r;
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Adds the rules for D, call number NR.  Returns 0 or -errno. */
static int
add_rules(scmp_filter_ctx ctx, const struct deny *d, int nr)
{
	uint32_t act = SCMP_ACT_ERRNO((uint32_t)d->err);
	unsigned flags_arg =
	    strcmp(d->name, "clone") == 0 ? CLONE_FLAGS_ARG : 0;
	int r = -EINVAL;

	switch (d->kind) {
	case ALWAYS:
		r = seccomp_rule_add(ctx, act, nr, 0);
		break;
	case IOCTL:
		r = seccomp_rule_add(ctx, act, nr, 1,
		    SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffff, d->arg));
		break;
	case NEWUSER:
		r = seccomp_rule_add(ctx, act, nr, 1,
		    SCMP_CMP(flags_arg, SCMP_CMP_MASKED_EQ, CLONE_NEWUSER,
		        CLONE_NEWUSER));
		break;
	case PERSONALITY:
		r = add_personality(ctx, act, nr);
		break;
	case FAMILY:
		r = add_not_in(
		    ctx, act, nr, 0, families, NELEM(families), NULL);
		break;
	case NLPROTO:
		r = add_not_in(ctx, act, nr, 2, nlprotos, NELEM(nlprotos),
		    &SCMP_A0(SCMP_CMP_EQ, AF_NETLINK, 0));
		break;
	case PAIR:
		r = add_not_in(
		    ctx, act, nr, 0, pair_families, NELEM(pair_families), NULL);
		break;
	}
	return r;
}

/* Adds the rules for D.  Returns 0, or -1 with the reason in ERR. */
static int
add_deny(scmp_filter_ctx ctx, const struct deny *d, char *err, size_t len)
{
	int nr, r;

	if ((nr = seccomp_syscall_resolve_name(d->name)) == __NR_SCMP_ERROR) {
		snprintf(err, len, "seccomp: %s: unknown to this libseccomp",
		    d->name);
		return -1;
	}
	if ((r = add_rules(ctx, d, nr)) != 0) {
		snprintf(err, len, "seccomp: rule for %s: %s",
		    sc_denied((size_t)(d - denies)), strerror(-r));
		return -1;
	}
	return 0;
}

/*
 * Adds the compatible ABIs and makes any other kill the process.  Before
 * Linux 4.14 there is no killing a process, and libseccomp refuses the
 * action: then the default, killing the thread, stays.  Returns 0 or -1.
 */
static int
add_arches(scmp_filter_ctx ctx, char *err, size_t len)
{
	size_t i;
	int r = 0;

	for (i = 0; compat_arches[i] != SCMP_ARCH_NATIVE && r == 0; i++)
		if ((r = seccomp_arch_add(ctx, compat_arches[i])) == -EEXIST)
			r = 0;
	if (r != 0) {
		snprintf(err, len, "seccomp: adding an ABI: %s", strerror(-r));
		return -1;
	}
	(void)seccomp_attr_set(
	    ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	return 0;
}

/*
 * The sockets that would carry ICMP: a ping socket (SOCK_DGRAM with
 * IPPROTO_ICMP, or IPPROTO_ICMPV6 for AF_INET6) and any raw socket of
 * AF_INET or AF_INET6.  The kernel refuses them all in the sandbox (no
 * CAP_NET_RAW; ping_group_range "1 0"), before anything is sent, so
 * nothing would tell the run's log; the supervisor refuses them the same
 * way and reports them.  The type is compared on its low 4 bits
 * (SOCK_CLOEXEC, SOCK_NONBLOCK may be or-ed in), the protocol on 32 (the
 * kernel reads an int).  Every other socket() stays in the kernel.
 */
static int
add_icmp(scmp_filter_ctx ctx)
{
	static const struct {
		uint32_t family, type, proto; /* proto ~0: any */
	} socks[] = {
	    {AF_INET, SOCK_DGRAM, IPPROTO_ICMP},
	    {AF_INET6, SOCK_DGRAM, IPPROTO_ICMPV6},
	    {AF_INET, SOCK_RAW, ~0U},
	    {AF_INET6, SOCK_RAW, ~0U},
	};
	struct scmp_arg_cmp c[3];
	size_t i;
	int r = 0;

	for (i = 0; i < NELEM(socks) && r == 0; i++) {
		c[0] = SCMP_A0(SCMP_CMP_EQ, socks[i].family, 0);
		c[1] = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, socks[i].type);
		c[2] = SCMP_A2(SCMP_CMP_MASKED_EQ, 0xffffffff, socks[i].proto);
		r = seccomp_rule_add_array(ctx, SCMP_ACT_NOTIFY,
		    SCMP_SYS(socket), socks[i].proto == ~0U ? 2 : 3, c);
	}
	return r;
}

/*
 * The calls the supervisor (sockguard.c) answers: every connect, every
 * sendto that names an address (send() and sendto(..., NULL, 0) stay
 * untrapped), every sendmsg and sendmmsg (their address is behind a
 * pointer), and the sockets of add_icmp.
 */
static int
add_notify(scmp_filter_ctx ctx, char *err, size_t len)
{
	int r;

	r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(connect), 0);
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(sendto), 1,
		    SCMP_A4(SCMP_CMP_NE, 0, 0));
	if (r == 0)
		r = seccomp_rule_add(
		    ctx, SCMP_ACT_NOTIFY, SCMP_SYS(sendmsg), 0);
	if (r == 0)
		r = seccomp_rule_add(
		    ctx, SCMP_ACT_NOTIFY, SCMP_SYS(sendmmsg), 0);
	if (r == 0)
		r = add_icmp(ctx);
	if (r != 0)
		snprintf(err, len, "seccomp: the supervised calls: %s",
		    strerror(-r));
	return r == 0 ? 0 : -1;
}

static int
apply(int *listener, char *err, size_t errlen)
{
	scmp_filter_ctx ctx;
	size_t i;
	int r, ret = -1;

	if ((ctx = seccomp_init(SCMP_ACT_ALLOW)) == NULL) {
		snprintf(err, errlen, "seccomp: cannot make a filter");
		return -1;
	}
	if (add_arches(ctx, err, errlen) == -1)
		goto out;
	for (i = 0; i < NDENIES; i++)
		if (add_deny(ctx, &denies[i], err, errlen) == -1)
			goto out;
	if (listener != NULL && add_notify(ctx, err, errlen) == -1)
		goto out;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		snprintf(err, errlen, "seccomp: prctl(PR_SET_NO_NEW_PRIVS): %s",
		    strerror(errno));
		goto out;
	}
	if ((r = seccomp_load(ctx)) != 0) {
		snprintf(err, errlen, "seccomp: loading the filter: %s",
		    strerror(-r));
		goto out;
	}
	if (listener != NULL && (*listener = seccomp_notify_fd(ctx)) < 0) {
		snprintf(err, errlen, "seccomp: no notification descriptor");
		goto out;
	}
	ret = 0;
out:
	seccomp_release(ctx);
	return ret;
}

int
sc_apply(char *err, size_t errlen)
{
	return apply(NULL, err, errlen);
}

int
sc_apply_guarded(int *listener, char *err, size_t errlen)
{
	return apply(listener, err, errlen);
}
