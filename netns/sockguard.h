/*
 * sockguard.h: the supervisor of the command's socket addresses.
 *
 * The command's seccomp filter (seccomp.c, sc_apply_guarded) sends every
 * connect(), every sendto() with an address, and every sendmsg() and
 * sendmmsg() here, by seccomp user notification.  The supervisor runs in
 * the sandbox's PID 1, which shares the command's mount, network and PID
 * namespaces and root.  It never lets the kernel re-run the call
 * (SECCOMP_USER_NOTIF_FLAG_CONTINUE would re-read an address another
 * thread can change, and an fd number another thread can dup2 over); it
 * emulates it instead: it takes the command's socket itself
 * (pidfd_getfd), copies the address and data once from the command's
 * memory, decides on its copy, makes the call on that socket and hands
 * back the result.
 *
 * The decision: a Unix socket address with a path is allowed only when
 * the file it names is a socket bound by a socket of the sandbox's own
 * network namespace (the kernel's sock_diag lists them with the inode
 * each is bound to), or one of the sockets the user named (--unix-socket);
 * the call then goes through /proc/self/fd/N of the file that was
 * checked, so what was checked is what is reached.  Refused: ECONNREFUSED.
 * Abstract and unnamed Unix addresses, and every other family, are scoped
 * to the sandbox's network namespace already and pass.
 *
 * The socket() calls that ask for ICMP (seccomp.c) are never made: each
 * gets the error the kernel gives the command (EACCES for a ping socket:
 * the namespace's ping_group_range is "1 0"; EPERM for a raw socket: no
 * CAP_NET_RAW), and the first of each kind is reported as one byte
 * (enum sockguard_note) on the notes socket, so that the run's log says
 * a program tried ICMP, which otherwise leaves no trace.
 */
#ifndef PH_SOCKGUARD_H
#define PH_SOCKGUARD_H

#include <sys/types.h>

#include <stddef.h>

struct sockguard;

/* A socket file the user allows (--unix-socket), as stat() sees it. */
struct sockguard_allow {
	dev_t dev;
	ino_t ino;
};

/* The bytes of the notes socket: which kind of ICMP socket was refused. */
enum sockguard_note {
	SOCKGUARD_NOTE_ICMP = 'I', /* a ping socket, IPv4 */
	SOCKGUARD_NOTE_ICMPV6 = '6', /* a ping socket, IPv6 */
	SOCKGUARD_NOTE_RAW = 'R', /* a raw socket, IPv4 or IPv6 */
};

/*
 * Starts the supervisor on LISTENER (the filter's notification fd, which
 * it takes over) in threads of the caller, with the NALLOW sockets of
 * ALLOW let through too, and NOTES (-1: none; taken over, non-blocking
 * or not: it is written with MSG_DONTWAIT, one byte at most once per
 * kind) where the refused ICMP sockets are reported.  Call with
 * capabilities dropped (they are per thread).  Returns 0, or -1 with
 * errno set (LISTENER and NOTES closed).  It runs until no filtered
 * process is left, then frees itself.
 */
int sockguard_start(int listener, const struct sockguard_allow *allow,
    size_t nallow, int notes);

/*
 * Records PATH (stat, following links) as a socket to allow.  Returns 0,
 * or -1 with errno (ENOTSOCK when PATH is no socket).
 */
int sockguard_allow_path(const char *path, struct sockguard_allow *a);

#ifdef SOCKGUARD_INTERNAL
#include <sys/socket.h>
#include <sys/un.h>

/* How many supervisors have not yet freed themselves. */
int sockguard_live(void);

#define SOCKGUARD_CONTROL_MAX 4096 /* SCM_MAX_FD (253) descriptors fit */

/*
 * The control messages of an emulated sendmsg: IN (INLEN bytes, the
 * sandbox's, aligned as struct cmsghdr) copied into OUT (CONTROL_MAX
 * bytes, aligned; *OUTLEN used) with each SCM_RIGHTS descriptor replaced
 * by GETFD(ARG, fd) (recorded in FDS, CONTROL_MAX / sizeof(int) of them,
 * *NFDS, to close, also on failure) and SCM_CREDENTIALS left out.
 * Returns 0 or an errno value.
 */
int sockguard_control(const void *in, size_t inlen, void *out, size_t *outlen,
    int *fds, int *nfds, int (*getfd)(void *, int), void *arg);

/*
 * Is the file (DEV, INO), as fstat() reports it, bound by a Unix socket
 * of the caller's network namespace?  1 yes, 0 no, -1 with errno.
 */
int sockguard_diag_bound(dev_t dev, ino_t ino);

/*
 * Decides a Unix address SUN of LEN bytes, whose relative path is
 * resolved from the directory CWD.  Returns 0 when allowed, with *PATHFD
 * an O_PATH descriptor of the socket file to reach (or -1: abstract or
 * unnamed, reach it as it is), or an errno value (ECONNREFUSED, ENOENT...).
 */
int sockguard_decide_unix(const struct sockguard_allow *allow, size_t nallow,
    int cwd, const struct sockaddr_un *sun, socklen_t len, int *pathfd);
#endif

#endif /* PH_SOCKGUARD_H */
