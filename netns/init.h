/*
 * init.h: PID 1 of the sandbox.  It starts the command, reaps every
 * process that ends in the namespace, passes on the signals pinhole run
 * forwards (not those the terminal already sent the command), and exits
 * with the command's status; the kernel then ends whatever is left.
 */
#ifndef PH_INIT_H
#define PH_INIT_H

#include <sys/types.h>

#include <signal.h>

/*
 * Blocks the signals init handles (and forwards) and returns a signalfd
 * for them, or -1.  Call before forking the command, so none is lost;
 * OLD receives the previous mask for the command to restore.
 */
int init_signals(sigset_t *old);

/*
 * Runs PID 1's loop on SFD (from init_signals) until CMD ends; returns
 * the command's status as a shell reports it: the exit code, or 128+N
 * when signal N killed it.
 */
int init_loop(int sfd, pid_t cmd);

/* The status of a waitpid() result, as init_loop returns it. */
int init_status(int wstatus);

/*
 * Kills every other process of the PID namespace (the caller is its PID
 * 1) and reaps them all, so that nothing inside outlives the check that
 * follows.
 */
void init_kill_all(void);

/* Resets every signal to its default disposition, and the mask to OLD. */
void init_reset_signals(const sigset_t *old);

#endif /* PH_INIT_H */
