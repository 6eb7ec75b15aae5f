/*
 * seccomp.h: the sandboxed command's system call filter (libseccomp).
 *
 * A deny list on top of the namespaces and Landlock, not an allow list:
 * every call is allowed except the few that reach kernel attack surface
 * no build or agent needs (keyrings, BPF, perf, userfaultfd, modules,
 * kexec, io_uring, new user namespaces), or that escape the sandbox
 * through the terminal (TIOCSTI, TIOCLINUX).  Denied calls fail with
 * EPERM, except clone3, which fails with ENOSYS so that glibc falls back
 * to clone, whose flags the filter can see.  ptrace stays allowed, for
 * debuggers inside the sandbox.  Sockets: only AF_UNIX, AF_INET,
 * AF_INET6 and AF_NETLINK (route, sock_diag, uevent) can be made, others
 * fail with EAFNOSUPPORT (EPROTONOSUPPORT for other netlink protocols),
 * socketpair is AF_UNIX only, and i386's socketcall, whose arguments are
 * behind a pointer, fails with ENOSYS.
 */
#ifndef PH_SECCOMP_H
#define PH_SECCOMP_H

#include <stddef.h>

/*
 * Installs the filter in the calling thread, for it and the processes it
 * starts; other threads are not filtered, so call it before making any.
 * Sets PR_SET_NO_NEW_PRIVS.  Returns 0, or -1 with a one-line reason in
 * ERR; no filter is installed then.
 */
int sc_apply(char *err, size_t errlen);

/*
 * sc_apply, plus the calls that name a socket address (connect, sendto
 * with an address, sendmsg, sendmmsg) and the socket() calls that ask
 * for ICMP (a ping socket of AF_INET or AF_INET6, any raw socket of
 * them) sent to a supervisor by seccomp user notification (see
 * sockguard.h): *LISTENER receives the
 * notification descriptor, which must be handed to the supervisor before
 * the caller makes any such call, or the call waits forever.  Returns 0,
 * or -1 with the reason in ERR.
 */
int sc_apply_guarded(int *listener, char *err, size_t errlen);

/*
 * Returns the I-th of the denied calls as one short line, such as
 * "keyctl" or "ioctl TIOCSTI", for `pinhole doctor` and the manual; NULL
 * when I is past the end.
 */
const char *sc_denied(size_t i);

#endif /* PH_SECCOMP_H */
