/*
 * limits.c: the sandbox's process and memory limits.
 *
 * A fork bomb inside must stop long before the host's limits: the PID
 * namespace's own pid_max is the one bound that holds for root as well
 * (RLIMIT_NPROC never binds uid 0 of the host's user namespace, and a
 * root run maps to it).  After a wrap the kernel hands out pids from
 * LIMITS_PID_RESERVED up only, so pid_max is the limit plus that: at
 * most N + 299 processes, and never fewer than N free slots.
 */
#include <sys/resource.h>
#include <sys/utsname.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ph_err.h"
#include "netns/limits.h"

#define PIDS_MAX 4194304UL /* the kernel's PID_MAX_LIMIT on 64 bits */

int
limits_parse_size(const char *s, unsigned long long *out)
{
	static const char units[] = "KMGT";
	unsigned long long v;
	const char *u;
	char *end;
	int shift = 0;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || v == 0)
		return -1;
	if (*end != '\0') {
		if ((u = strchr(units, end[0] & ~0x20)) == NULL)
			return -1;
		shift = 10 * (int)(u - units + 1);
		end++;
		if (strcmp(end, "") != 0 && strcmp(end, "B") != 0 &&
		    strcmp(end, "iB") != 0)
			return -1;
	} else if (strcmp(end, "") != 0)
		return -1;
	if (v > (ULLONG_MAX >> shift))
		return -1;
	*out = v << shift;
	return 0;
}

int
limits_parse_pids(const char *s, unsigned long *out)
{
	unsigned long v;
	char *end;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v == 0 || v > PIDS_MAX)
		return -1;
	*out = v;
	return 0;
}

int
limits_pidns_max(void)
{
	struct utsname u;
	unsigned major_, minor_;

	if (uname(&u) != 0 || sscanf(u.release, "%u.%u", &major_, &minor_) != 2)
		return 0;
	return major_ > 6 || (major_ == 6 && minor_ >= 14);
}

/* The PID namespace's pid_max, through the host's /proc (see above). */
static int
set_pid_max(unsigned long pids)
{
	char buf[32];
	int fd, n, r = -1;

	n = snprintf(buf, sizeof(buf), "%lu\n", pids + LIMITS_PID_RESERVED);
	if ((fd = open("/proc/sys/kernel/pid_max", O_WRONLY | O_CLOEXEC)) < 0)
		return -1;
	if (write(fd, buf, (size_t)n) == n)
		r = 0;
	close(fd);
	return r;
}

/* Lowers resource RES to V (soft and hard); never raises it. */
static int
lower(int res, rlim_t v)
{
	struct rlimit rl;

	if (getrlimit(res, &rl) != 0)
		return -1;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < v)
		v = rl.rlim_max;
	rl.rlim_cur = rl.rlim_max = v;
	return setrlimit(res, &rl);
}

static int
apply_pids(unsigned long pids, char *report, size_t reportlen, char *err,
    size_t errlen)
{
	int ns = limits_pidns_max();

	if (lower(RLIMIT_NPROC, (rlim_t)pids) != 0) {
		ph_errf(err, errlen, "RLIMIT_NPROC: %s", strerror(errno));
		return -1;
	}
	if (ns && set_pid_max(pids) != 0) {
		ph_errf(err, errlen, "pid_max of the PID namespace: %s",
		    strerror(errno));
		return -1;
	}
	if (ns)
		ph_errf(report, reportlen,
		    "pids: %lu (RLIMIT_NPROC%s), at most %lu in the PID "
		    "namespace (its pid_max)",
		    pids, getuid() == 0 ? ", which does not bind root" : "",
		    pids + LIMITS_PID_RESERVED - 1);
	else
		ph_errf(report, reportlen,
		    "pids: %lu (RLIMIT_NPROC)%s; this kernel has no pid_max "
		    "per PID namespace (Linux 6.14)",
		    pids,
		    getuid() == 0 ? ", which does not bind root: no pids limit"
		                  : "");
	return 0;
}

int
limits_apply_pids(const struct limits *l, char *report, size_t reportlen,
    char *err, size_t errlen)
{
	char pids[192] = "pids: no limit", mem[96] = "memory: no limit";

	if (l->pids > 0 &&
	    apply_pids(l->pids, pids, sizeof(pids), err, errlen) != 0)
		return -1;
	if (l->memory > 0)
		ph_errf(mem, sizeof(mem),
		    "memory: %llu MiB per process (RLIMIT_AS)",
		    l->memory >> 20);
	ph_errf(report, reportlen, "limits: %s; %s", pids, mem);
	return 0;
}

int
limits_apply_memory(const struct limits *l, char *err, size_t errlen)
{
	if (l->memory > 0 && lower(RLIMIT_AS, (rlim_t)l->memory) != 0) {
		ph_errf(err, errlen, "RLIMIT_AS: %s", strerror(errno));
		return -1;
	}
	return 0;
}
