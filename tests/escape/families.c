/*
 * families.c: the prober of escape_families.sh.  Tries to make a socket
 * of every family the sandbox must refuse, and of those it must allow,
 * natively and (on x86_64) through the i386 and x32 ABIs.  Never
 * connects anything: vsock in particular is only created.
 *
 * Prints one line per attempt: "NAME: ok", or "NAME: refused ERRNO-NAME".
 */
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <linux/netlink.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const struct {
	const char *name;
	int family, type, proto;
} tries[] = {
    {"unix", AF_UNIX, SOCK_STREAM, 0},
    {"inet", AF_INET, SOCK_STREAM, 0},
    {"inet6", AF_INET6, SOCK_STREAM, 0},
    {"netlink-route", AF_NETLINK, SOCK_RAW, NETLINK_ROUTE},
    {"netlink-uevent", AF_NETLINK, SOCK_RAW, NETLINK_KOBJECT_UEVENT},
    {"netlink-sock-diag", AF_NETLINK, SOCK_RAW, NETLINK_SOCK_DIAG},
    {"netlink-audit", AF_NETLINK, SOCK_RAW, NETLINK_AUDIT},
    {"netlink-xfrm", AF_NETLINK, SOCK_RAW, NETLINK_XFRM},
    {"netlink-generic", AF_NETLINK, SOCK_RAW, NETLINK_GENERIC},
    {"netlink-netfilter", AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER},
    {"vsock", AF_VSOCK, SOCK_STREAM, 0},
    {"bluetooth", AF_BLUETOOTH, SOCK_RAW, 0},
    {"alg", AF_ALG, SOCK_SEQPACKET, 0},
    {"can", AF_CAN, SOCK_RAW, 0},
    {"xdp", AF_XDP, SOCK_RAW, 0},
    {"key", AF_KEY, SOCK_RAW, 2},
    {"packet", AF_PACKET, SOCK_RAW, 0},
    {"packet-dgram", AF_PACKET, SOCK_DGRAM, 0},
    {"tipc", AF_TIPC, SOCK_RDM, 0},
    {"rds", AF_RDS, SOCK_SEQPACKET, 0},
    {"appletalk", AF_APPLETALK, SOCK_DGRAM, 0},
    {"x25", AF_X25, SOCK_SEQPACKET, 0},
    {"ax25", AF_AX25, SOCK_SEQPACKET, 0},
    {"llc", AF_LLC, SOCK_DGRAM, 0},
    {"qipcrtr", AF_QIPCRTR, SOCK_DGRAM, 0},
    {"smc", AF_SMC, SOCK_STREAM, 0},
    {"mctp", 45, SOCK_DGRAM, 0},
    {"kcm", AF_KCM, SOCK_DGRAM, 0},
    {"ib", AF_IB, SOCK_STREAM, 0},
    {"nfc", AF_NFC, SOCK_SEQPACKET, 0},
    {"ieee802154", AF_IEEE802154, SOCK_DGRAM, 0},
    {"phonet", AF_PHONET, SOCK_DGRAM, 0},
    {"caif", AF_CAIF, SOCK_SEQPACKET, 0},
    {"pppox", AF_PPPOX, SOCK_STREAM, 0},
    {"rxrpc", AF_RXRPC, SOCK_DGRAM, 2},
};

static void
report(const char *abi, const char *name, long r)
{
	if (r >= 0) {
		printf("%s%s: ok\n", abi, name);
		close((int)r);
	} else
		printf(
		    "%s%s: refused %s\n", abi, name, strerrorname_np((int)-r));
}

static long
native(int family, int type, int proto)
{
	long r = syscall(SYS_socket, family, type | SOCK_CLOEXEC, proto);

	return r < 0 ? -errno : r;
}

#if defined(__x86_64__) && defined(__LP64__)
#include "i386abi.h"

static long
int80(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile("int $0x80"
	                 : "=a"(ret)
	                 : "a"(nr), "b"(a), "c"(b), "d"(c)
	                 : "memory", "r8", "r9", "r10", "r11");
	return ret;
}

/* socketcall(SYS_SOCKET, v): the vector must lie below 4 GiB. */
static long
i386_socketcall(int family, int type, int proto)
{
	unsigned int *v = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);

	if (v == MAP_FAILED)
		return -errno;
	v[0] = (unsigned int)family;
	v[1] = (unsigned int)type;
	v[2] = (unsigned int)proto;
	return int80(102, 1, (long)v, 0);
}

static void
other_abis(void)
{
	size_t i;

	/* x32 (bit 30): often compiled out; the filter answers first. */
	report("x32 ", "vsock",
	    syscall(0x40000000L | 41, AF_VSOCK, SOCK_STREAM, 0) < 0 ? -errno
	                                                            : 0);
	if (!i386_abi())
		return;
	for (i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		report("i386 ", tries[i].name,
		    int80(359, tries[i].family, tries[i].type, tries[i].proto));
		report("i386-socketcall ", tries[i].name,
		    i386_socketcall(
		        tries[i].family, tries[i].type, tries[i].proto));
	}
}
#else
static void
other_abis(void)
{
	printf("i386: absent\n");
}
#endif

int
main(void)
{
	int sv[2];
	size_t i;

	for (i = 0; i < sizeof(tries) / sizeof(tries[0]); i++)
		report("", tries[i].name,
		    native(tries[i].family, tries[i].type, tries[i].proto));
	report("", "socketpair-unix",
	    socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 ? sv[0] : -errno);
	report("", "socketpair-inet",
	    socketpair(AF_INET, SOCK_STREAM, 0, sv) == 0 ? sv[0] : -errno);
	other_abis();
	return 0;
}
