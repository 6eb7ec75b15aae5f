/*
 * test_run_opts.c: unit tests of cli/run_opts.c, pinhole run's command
 * line: --workers (its default, its bounds, its refusals, with --broker
 * and PINHOLE_BROKER), the command after "--" or without it, and the
 * help text naming the option.
 */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/run.h"
#include "netns/env.h"
#include "netns/mount.h"
#include "proxy/proxy.h"
#include "tests/unit/fixture.h"

#define ARGS_MAX 16

static char dir[256]; /* the scratch directory: the run's start directory */

/* A run as cmd_run.c makes it before reading the options. */
static void
run_init(struct run *r)
{
	char err[512];

	memset(r, 0, sizeof(*r));
	r->plan = mnt_plan_new(dir, err, sizeof(err));
	if (r->plan == NULL)
		fail_msg("mnt_plan_new %s: %s", dir, err);
	assert_non_null(r->env = env_new(environ));
	r->sfd = r->esock = -1;
}

static void
run_fini(struct run *r)
{
	mnt_plan_free(r->plan);
	env_free(r->env);
	free(r->allow);
}

/*
 * run_parse_opts on "run" and the NULL-ended words after it; its result,
 * R filled.
 */
static int
parse(struct run *r, ...)
{
	static char *argv[ARGS_MAX + 1];
	va_list ap;
	int argc = 0;
	char *w;

	argv[argc++] = (char *)"run";
	va_start(ap, r);
	while ((w = va_arg(ap, char *)) != NULL && argc < ARGS_MAX)
		argv[argc++] = w;
	va_end(ap);
	argv[argc] = NULL;
	run_init(r);
	return run_parse_opts(r, argc, argv);
}

static int
setup(void **state)
{
	(void)state;
	unsetenv("PINHOLE_BROKER");
	return 0;
}

static int
group_setup(void **state)
{
	(void)state;
	return fixture_tmpdir(dir, sizeof(dir), "run_opts");
}

static int
group_teardown(void **state)
{
	(void)state;
	return fixture_rmtree(dir);
}

static void
test_workers_default(void **state)
{
	struct run r;

	(void)state;
	assert_int_equal(parse(&r, "--", "true", NULL), 0);
	assert_int_equal(r.workers, run_workers_default());
	assert_string_equal(r.argv[0], "true");
	run_fini(&r);
	/* Without "--": the first word that is not an option. */
	assert_int_equal(parse(&r, "-v", "true", "x", NULL), 0);
	assert_int_equal(r.workers, run_workers_default());
	assert_string_equal(r.argv[1], "x");
	run_fini(&r);
}

/* The default is the CPUs the process may use, at most 8. */
static void
test_workers_cpus(void **state)
{
	cpu_set_t all, one;
	struct run r;
	int cpu = 0, n;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
	n = CPU_COUNT(&all);
	assert_int_equal(run_workers_default(),
	    n < RUN_WORKERS_DEFAULT_MAX ? (unsigned)n
	                                : RUN_WORKERS_DEFAULT_MAX);
	/* Under an affinity of one CPU (taskset -c N): one loop. */
	while (!CPU_ISSET(cpu, &all))
		cpu++;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	assert_int_equal(run_workers_default(), 1);
	assert_int_equal(parse(&r, "--", "true", NULL), 0);
	assert_int_equal(r.workers, 1);
	run_fini(&r);
	assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
}

static void
test_workers_given(void **state)
{
	static const struct {
		const char *arg;
		unsigned want;
	} ok[] = {{"1", 1}, {"2", 2}, {"16", 16}, {"007", 7},
	    {"256", PROXY_GROUP_MAX}};
	struct run r;
	size_t i;

	(void)state;
	assert_int_equal(PROXY_GROUP_MAX, 256);
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(
		    parse(&r, "--workers", ok[i].arg, "--", "true", NULL), 0);
		assert_int_equal(r.workers, ok[i].want);
		run_fini(&r);
	}
	/* With other options around it; the last one given counts. */
	assert_int_equal(parse(&r, "-v", "--workers", "3", "--no-capture",
	                     "--workers", "4", "--", "sh", NULL),
	    0);
	assert_int_equal(r.workers, 4);
	assert_true(r.verbose && r.no_capture);
	run_fini(&r);
}

static void
test_workers_refused(void **state)
{
	static const char *const bad[] = {"0", "257", "999", "x", "", "2x",
	    "-1", "+2", " 2", "2 ", "0x2", "1e2", "99999999999999999999999"};
	struct run r;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(
		    parse(&r, "--workers", bad[i], "--", "true", NULL), -1);
		run_fini(&r);
	}
	/* No value: "--" starts the command, and nothing is not one. */
	assert_int_equal(parse(&r, "--workers", "--", "true", NULL), -1);
	run_fini(&r);
	assert_int_equal(parse(&r, "--workers", NULL), -1);
	run_fini(&r);
}

static void
test_workers_not_with_broker(void **state)
{
	struct run r;

	(void)state;
	assert_int_equal(parse(&r, "--broker", "/run/b.sock", "--workers", "2",
	                     "--", "true", NULL),
	    -1);
	run_fini(&r);
	/* Even one: a broker's engine has its loop, not the user's. */
	assert_int_equal(parse(&r, "--workers", "1", "--broker", "/run/b.sock",
	                     "--", "true", NULL),
	    -1);
	run_fini(&r);
	/* The broker named by the environment: the same. */
	setenv("PINHOLE_BROKER", "/run/b.sock", 1);
	assert_int_equal(parse(&r, "--workers", "2", "--", "true", NULL), -1);
	run_fini(&r);
	assert_int_equal(parse(&r, "--", "true", NULL), 0);
	assert_string_equal(r.broker, "/run/b.sock");
	assert_int_equal(r.workers, 1);
	run_fini(&r);
	unsetenv("PINHOLE_BROKER");
	assert_int_equal(
	    parse(&r, "--broker", "/run/b.sock", "--", "true", NULL), 0);
	run_fini(&r);
}

/* --help names the option and its bounds. */
static void
test_help(void **state)
{
	char path[300], text[8192];
	struct run r;
	FILE *f;
	size_t n;
	int out;

	(void)state;
	snprintf(path, sizeof(path), "%s/help", dir);
	fflush(stdout);
	assert_true((out = dup(STDOUT_FILENO)) >= 0);
	assert_non_null(freopen(path, "w", stdout));
	assert_int_equal(parse(&r, "--help", NULL), 1);
	fflush(stdout);
	assert_true(dup2(out, STDOUT_FILENO) == STDOUT_FILENO);
	(void)close(out);
	run_fini(&r);
	assert_non_null(f = fopen(path, "r"));
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	assert_non_null(strstr(text, "--workers N"));
	assert_non_null(strstr(text, "(1-256;"));
	assert_non_null(strstr(text, "default the CPUs, at most 8"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_workers_default, setup),
	    cmocka_unit_test_setup(test_workers_cpus, setup),
	    cmocka_unit_test_setup(test_workers_given, setup),
	    cmocka_unit_test_setup(test_workers_refused, setup),
	    cmocka_unit_test_setup(test_workers_not_with_broker, setup),
	    cmocka_unit_test_setup(test_help, setup),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
