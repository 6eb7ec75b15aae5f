/*
 * doctor_policy.h: pinhole doctor's rows beyond the kernel: whether the
 * policy loads, its secrets load and its audit log can be written.
 */
#ifndef PH_DOCTOR_POLICY_H
#define PH_DOCTOR_POLICY_H

#include <stddef.h>

#include "netns/doctor.h"
#include "policy/policy.h"

/* Most rows doctor_policy_run() fills: the kernel's plus three of policy. */
#define DOCTOR_MAX (DOCTOR_NKERNEL + 3)

struct doctor_policy_opts {
	const char *const *policy; /* -p files, NULL: no policy rows */
	size_t npolicy;
	const char *log; /* --log; NULL: the policy's log line */
	policy_diag_fn *diag; /* receives the policy's diagnostics */
	void *diag_arg;
};

/*
 * Runs the kernel probes (doctor_run), then the policy, secrets and log
 * probes that OPTS calls for, in that order, and fills up to MAX entries
 * of RES.  A probe that needs a policy that did not load is not tried
 * and says so.  Returns the number of rows filled.
 */
size_t doctor_policy_run(
    const struct doctor_policy_opts *, struct doctor_result *res, size_t max);

#endif /* PH_DOCTOR_POLICY_H */
