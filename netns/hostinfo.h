/*
 * hostinfo.h: what the sandbox learns about the host from its own PID 1
 * and UTS namespace.  The hostname and domain name are neutral, and PID
 * 1's command line (pinhole run's, with the policy's path) and name read
 * "pinhole-init".  The per-run /etc/machine-id is a file of the mount
 * plan (cli/run_setup.c).
 */
#ifndef PH_HOSTINFO_H
#define PH_HOSTINFO_H

#include <stddef.h>

#define HOSTINFO_HOSTNAME "pinhole"
#define HOSTINFO_TITLE "pinhole-init"

/*
 * In the sandbox's new UTS namespace: hostname "pinhole", domain name
 * "(none)".  Returns 0, or -1 with ERR.
 */
int hostinfo_uts(char *err, size_t errlen);

/*
 * Overwrites the calling process's command line (the argument strings
 * the kernel shows in /proc/PID/cmdline) with HOSTINFO_TITLE and its
 * name with the same.  Every pointer into those strings (argv) is
 * garbage afterwards: copy what is still needed first.  Returns 0, or
 * -1 with ERR.
 */
int hostinfo_title(char *err, size_t errlen);

#endif /* PH_HOSTINFO_H */
