/*
 * init.c: the sandbox's PID 1.
 *
 * A PID namespace's init gets only the signals it handles, so the ones to
 * forward are blocked and read from a signalfd (a blocked signal is never
 * ignored).  A signal the terminal sent (si_code SI_KERNEL: ^C, ^\) has
 * reached the command already, which shares the terminal's process
 * group: passing it on would deliver it twice.  Signals sent with kill(),
 * by pinhole run on behalf of a user or a supervisor, are passed on.
 */
#include <sys/signalfd.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "netns/init.h"

static const int forwarded[] = {
    SIGINT,
    SIGTERM,
    SIGHUP,
    SIGQUIT,
    SIGUSR1,
    SIGUSR2,
};

int
init_signals(sigset_t *old)
{
	sigset_t set;
	size_t i;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	for (i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(&set, forwarded[i]);
	if (sigprocmask(SIG_BLOCK, &set, old) != 0)
		return -1;
	return signalfd(-1, &set, SFD_CLOEXEC);
}

int
init_status(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return 125;
}

/* Reaps what ended; returns 1 with *STATUS set once CMD has. */
static int
reap(pid_t cmd, int *status)
{
	pid_t pid;
	int w, done = 0;

	while ((pid = waitpid(-1, &w, WNOHANG)) > 0)
		if (pid == cmd) {
			*status = init_status(w);
			done = 1;
		}
	return done;
}

int
init_loop(int sfd, pid_t cmd)
{
	struct signalfd_siginfo si;
	ssize_t n;
	int status = 125;

	/* The command may have ended before the first read. */
	if (reap(cmd, &status))
		return status;
	for (;;) {
		n = read(sfd, &si, sizeof(si));
		if (n < 0 && errno == EINTR)
			continue;
		if (n != sizeof(si))
			break; /* cannot happen; the kernel ends the rest */
		if (si.ssi_signo == SIGCHLD) {
			if (reap(cmd, &status))
				break;
		} else if (si.ssi_code != SI_KERNEL)
			(void)kill(cmd, (int)si.ssi_signo);
	}
	return status;
}

void
init_kill_all(void)
{
	int w;

	(void)kill(-1, SIGKILL);
	while (waitpid(-1, &w, 0) > 0 || errno == EINTR)
		;
}

void
init_reset_signals(const sigset_t *old)
{
	struct sigaction sa;
	int sig;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (sig = 1; sig < NSIG; sig++)
		(void)sigaction(sig, &sa, NULL); /* EINVAL for KILL, STOP */
	sigprocmask(SIG_SETMASK, old, NULL);
}
