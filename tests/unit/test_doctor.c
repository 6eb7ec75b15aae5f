/*
 * test_doctor.c: unit tests of netns/doctor.c, the kernel probes of
 * pinhole doctor.
 *
 * The kernel probes run for real: this machine has every layer, as root
 * and as uid 65534, so each must say "yes".  The policy probes and the
 * printers are tested in test_doctor_policy.c.
 */
#include <sys/prctl.h>
#include <sys/types.h>

#include <errno.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define DOCTOR_INTERNAL
#include "netns/doctor.h"
#include "tests/unit/fixture.h"

#define NITEMS(a) (sizeof(a) / sizeof((a)[0]))

/* Every kernel probe, alone: each works on this machine. */
static void
test_probes_yes(void **state)
{
	struct doctor_result r;
	size_t i;

	(void)state;
	for (i = 0; i < FIXTURE_KERNEL_FEATURES; i++) {
		memset(&r, 0xa5, sizeof(r));
		assert_int_equal(
		    doctor_probe(fixture_kernel_features[i], &r), 0);
		assert_string_equal(r.feature, fixture_kernel_features[i]);
		fixture_doctor_yes(&r);
	}
	assert_int_equal(doctor_probe("nonesuch", &r), -1);
	assert_int_equal(doctor_probe("secrets", &r), -1);
}

static void
test_probe_details(void **state)
{
	struct doctor_result r;

	(void)state;
	assert_int_equal(doctor_probe("namespaces", &r), 0);
	assert_string_equal(r.detail, "mount, pid, net, ipc, uts");
	assert_int_equal(doctor_probe("network", &r), 0);
	assert_non_null(strstr(r.detail, "ENETUNREACH"));
	assert_int_equal(doctor_probe("capture", &r), 0);
	assert_int_equal(r.status, DOCTOR_YES);
	assert_int_equal(r.required, 0);
	assert_non_null(strstr(r.detail, "sees 192.0.2.1"));
	assert_int_equal(doctor_probe("landlock", &r), 0);
	assert_int_equal(strncmp(r.detail, "ABI ", 4), 0);
	assert_non_null(strstr(r.detail, "net (4)"));
}

/*
 * doctor_run: the seven kernel rows in order, and nothing
 * of what the probes did shows in this process.
 */
static void
test_run_no_leak(void **state)
{
	struct doctor_result res[DOCTOR_NKERNEL];
	char before[64], after[64];
	ssize_t n;
	size_t i, rows;

	(void)state;
	n = readlink("/proc/self/ns/user", before, sizeof(before) - 1);
	assert_true(n > 0);
	before[n] = '\0';
	rows = doctor_run(res, DOCTOR_NKERNEL);
	assert_int_equal(rows, FIXTURE_KERNEL_FEATURES);
	for (i = 0; i < rows; i++) {
		assert_string_equal(res[i].feature, fixture_kernel_features[i]);
		assert_string_equal(
		    doctor_feature(i), fixture_kernel_features[i]);
		fixture_doctor_yes(&res[i]);
	}
	assert_int_equal(doctor_exit_status(res, rows), 0);
	n = readlink("/proc/self/ns/user", after, sizeof(after) - 1);
	assert_true(n > 0);
	after[n] = '\0';
	assert_string_equal(before, after);
	assert_int_equal(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), 0);
	assert_int_equal(prctl(PR_GET_SECCOMP, 0, 0, 0, 0), 0);
	assert_int_equal(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 1);
	assert_null(doctor_feature(100));
}

/* Child bodies for test_in_child. */
static void
child_answers(struct doctor_result *r, void *arg)
{
	doctor_verdict(r, DOCTOR_PARTIAL, "do this", "%s", (const char *)arg);
}

static void
child_hangs(struct doctor_result *r, void *arg)
{
	(void)r;
	(void)arg;
	pause();
}

static void
child_dies(struct doctor_result *r, void *arg)
{
	(void)r;
	(void)arg;
	raise(SIGKILL);
}

static void
child_exits(struct doctor_result *r, void *arg)
{
	(void)r;
	(void)arg;
	_exit(3);
}

/* A child's answer comes back; a child that gives none says how it ended. */
static void
test_in_child(void **state)
{
	struct doctor_result r = {"x", 1, DOCTOR_YES, "", ""};

	(void)state;
	doctor_in_child(child_answers, "half of it", &r, 5000);
	assert_int_equal(r.status, DOCTOR_PARTIAL);
	assert_string_equal(r.detail, "half of it");
	assert_string_equal(r.advice, "do this");
	assert_string_equal(r.feature, "x");
	doctor_in_child(child_hangs, NULL, &r, 300);
	assert_int_equal(r.status, DOCTOR_NO);
	assert_string_equal(r.detail, "no answer within 300 ms");
	doctor_in_child(child_dies, NULL, &r, 5000);
	assert_non_null(strstr(r.detail, "the probe died of signal 9"));
	doctor_in_child(child_exits, NULL, &r, 5000);
	assert_string_equal(r.detail, "the probe exited with status 3");
}

/* The facts about a failed user namespace, and the advice they get. */
static void
test_userns_advice(void **state)
{
	static const struct {
		struct doctor_userns_facts
		    f; /* max, clone, aa, sc, ct, root, err */
		const char *want;
	} cases[] = {
	    {{0, -1, -1, 0, 0, 0, ENOSPC}, "user.max_user_namespaces > 0"},
	    {{0, 1, 0, 0, 0, 1, ENOSPC}, "user.max_user_namespaces > 0"},
	    {{12, -1, -1, 0, 0, 0, ENOSPC}, "all 12 user namespaces"},
	    {{100, 0, -1, 0, 0, 0, EPERM},
	        "sysctl kernel.unprivileged_userns_clone=1"},
	    {{100, -1, 1, 0, 0, 0, EPERM},
	        "kernel.apparmor_restrict_unprivileged_userns=0"},
	    {{100, -1, 1, 0, 0, 0, EPERM}, "'userns,'"},
	    {{100, 0, 1, 0, 0, 0, EPERM}, "unprivileged_userns_clone=1"},
	    {{100, -1, -1, 2, 1, 0, EPERM},
	        "--security-opt seccomp=unconfined or a profile that allows "
	        "unshare/clone with CLONE_NEWUSER"},
	    {{100, -1, -1, 2, 0, 1, EPERM}, "Docker's default profile"},
	    {{100, -1, -1, 0, 1, 0, EPERM}, "an outer seccomp filter"},
	    {{100, -1, -1, 0, 0, 0, EPERM}, "a seccomp filter, an LSM"},
	    /* Root is not held back by either sysctl. */
	    {{100, 0, 1, 2, 1, 1, EPERM}, "an outer seccomp filter"},
	    {{-1, -1, -1, 0, 0, 0, EINVAL}, "CONFIG_USER_NS"},
	    {{100, -1, -1, 0, 0, 0, EUSERS}, "nested 32 deep"},
	    {{100, -1, -1, 0, 0, 0, ENOMEM}, "unexpected error"},
	};
	char buf[256];
	size_t i;

	(void)state;
	for (i = 0; i < NITEMS(cases); i++) {
		memset(buf, 'x', sizeof(buf));
		doctor_userns_advice(&cases[i].f, buf, sizeof(buf));
		assert_non_null(memchr(buf, '\0', sizeof(buf)));
		if (strstr(buf, cases[i].want) == NULL)
			fail_msg("case %zu: want \"%s\" in \"%s\"", i,
			    cases[i].want, buf);
	}
}

/*
 * The apparmor row against fake /proc and securityfs files: absent or 0
 * is not restricted; 1 says whether a profile called pinhole is listed,
 * and a list it cannot read is said so (partial), never guessed.
 */
static void
test_apparmor(void **state)
{
	static const struct {
		const char *restrict_text, *profiles; /* NULL: no such file */
		enum doctor_status want;
		const char *detail;
	} cases[] = {
	    {NULL, NULL, DOCTOR_YES, "not restricted (no kernel.apparmor_"},
	    {"0\n", "pinhole (unconfined)\n", DOCTOR_YES,
	        "not restricted (kernel.apparmor_restrict_unprivileged_userns "
	        "is 0)"},
	    {"1\n", "chrome (unconfined)\npinhole (unconfined)\n", DOCTOR_YES,
	        "restricted; profile pinhole is loaded"},
	    {"1\n", "pinholes (enforce)\nx pinhole (enforce)\n", DOCTOR_NO,
	        "restricted; no profile pinhole is loaded"},
	    {"1\n", "", DOCTOR_NO, "no profile pinhole is loaded"},
	    {"1\n", NULL, DOCTOR_PARTIAL, "cannot tell whether profile "},
	};
	char dir[256], rpath[300], ppath[300];
	struct doctor_result r;
	size_t i;

	(void)state;
	assert_int_equal(fixture_tmpdir(dir, sizeof(dir), "aa"), 0);
	for (i = 0; i < NITEMS(cases); i++) {
		snprintf(rpath, sizeof(rpath), "%s/restrict%zu", dir, i);
		snprintf(ppath, sizeof(ppath), "%s/profiles%zu", dir, i);
		if (cases[i].restrict_text != NULL)
			fixture_write_file(rpath, cases[i].restrict_text);
		if (cases[i].profiles != NULL)
			fixture_write_file(ppath, cases[i].profiles);
		memset(&r, 0, sizeof(r));
		r.feature = "apparmor";
		doctor_apparmor_check(&r, rpath, ppath);
		fixture_doctor_well_formed(&r);
		if (r.status != cases[i].want ||
		    strstr(r.detail, cases[i].detail) == NULL)
			fail_msg("case %zu: %s: %s", i,
			    doctor_status_name(r.status), r.detail);
		if (r.status == DOCTOR_NO)
			assert_non_null(strstr(r.advice, "apparmor_parser -r"));
	}
	assert_int_equal(fixture_rmtree(dir), 0);
	/* This machine (Debian): the row says yes, not restricted. */
	assert_int_equal(doctor_probe("apparmor", &r), 0);
	assert_int_equal(r.required, 0);
	assert_non_null(strstr(r.detail, "not restricted"));
}

static void
test_status_names(void **state)
{
	(void)state;
	assert_string_equal(doctor_status_name(DOCTOR_YES), "yes");
	assert_string_equal(doctor_status_name(DOCTOR_PARTIAL), "partial");
	assert_string_equal(doctor_status_name(DOCTOR_NO), "no");
	assert_int_equal(doctor_exit_status(fixture_doctor_fake, 1), 0);
	assert_int_equal(
	    doctor_exit_status(fixture_doctor_fake, FIXTURE_DOCTOR_FAKE), 1);
	assert_int_equal(doctor_exit_status(NULL, 0), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_probes_yes),
	    cmocka_unit_test(test_probe_details),
	    cmocka_unit_test(test_run_no_leak),
	    cmocka_unit_test(test_in_child),
	    cmocka_unit_test(test_userns_advice),
	    cmocka_unit_test(test_apparmor),
	    cmocka_unit_test(test_status_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
