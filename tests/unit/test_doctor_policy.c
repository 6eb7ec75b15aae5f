/*
 * test_doctor_policy.c: unit tests of cli/doctor_policy.c and
 * cli/doctor_print.c, the policy rows of pinhole doctor and its printers.
 *
 * The kernel probes run for real before the policy rows: this machine has
 * every layer, as root and as uid 65534, so each must say "yes".  Policy
 * files live in a mkdtemp directory under $TMPDIR (or /tmp) that the
 * group teardown removes.  The printers are fed a fabricated set of
 * results and read back through open_memstream.
 */
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "cli/doctor_policy.h"
#include "cli/doctor_print.h"
#include "tests/unit/fixture.h"

#define NITEMS(a) (sizeof(a) / sizeof((a)[0]))
/* Distinctive, so that strstr finds it wherever it leaks. */
#define VALUE "pH-d0ct0r-Zq9x"

static char tmpdir[PATH_MAX];

static int
group_setup(void **state)
{
	(void)state;
	return fixture_tmpdir(tmpdir, sizeof(tmpdir), "test_doctor_policy");
}

static int
group_teardown(void **state)
{
	(void)state;
	return fixture_rmtree(tmpdir);
}

/* Writes TEXT to tmpdir/NAME with MODE; returns the path (static). */
static const char *
put_file(const char *name, const char *text, mode_t mode)
{
	static char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	if ((f = fopen(path, "w")) == NULL)
		fail_msg("%s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

/* The row for FEATURE in RES, or a test failure. */
static const struct doctor_result *
row(const struct doctor_result *res, size_t n, const char *feature)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(res[i].feature, feature) == 0)
			return &res[i];
	fail_msg("no row %s", feature);
	return NULL;
}

/* Runs doctor with the policy at PATH (and LOG); returns the row count. */
static size_t
run_policy(const char *path, const char *log, struct doctor_result *res)
{
	const char *files[1] = {path};
	struct doctor_policy_opts o = {files, 1, log, NULL, NULL};
	size_t n;

	n = doctor_policy_run(&o, res, DOCTOR_MAX);
	assert_int_equal(n, DOCTOR_MAX);
	return n;
}

static void
assert_no_value(const struct doctor_result *res, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		assert_null(strstr(res[i].detail, VALUE));
		assert_null(strstr(res[i].advice, VALUE));
	}
}

/* A secret file of mode 0644 is refused, and says so; 0600 loads. */
static void
test_policy_secret_mode(void **state)
{
	struct doctor_result res[DOCTOR_MAX];
	char conf[PATH_MAX + 64], log[PATH_MAX + 64], text[PATH_MAX * 3];
	const struct doctor_result *r;
	struct stat sb;
	size_t n;

	(void)state;
	snprintf(log, sizeof(log), "%s/egress.jsonl", tmpdir);
	put_file("tok", VALUE "\n", 0644);
	snprintf(text, sizeof(text),
	    "log %s\nsecret tok file %s/tok\n"
	    "allow api.test:443 { inject bearer tok }\n",
	    log, tmpdir);
	snprintf(conf, sizeof(conf), "%s", put_file("mode.conf", text, 0644));
	n = run_policy(conf, NULL, res);
	fixture_doctor_yes(row(res, n, "policy"));
	r = row(res, n, "secrets");
	assert_int_equal(r->status, DOCTOR_NO);
	assert_non_null(strstr(r->detail, "secret tok: "));
	assert_non_null(strstr(r->detail, "is mode 0644"));
	assert_true(r->advice[0] != '\0');
	r = row(res, n, "log");
	fixture_doctor_yes(r);
	assert_non_null(strstr(r->detail, "will be created"));
	/* Checking the log created nothing. */
	assert_int_equal(stat(log, &sb), -1);
	assert_int_equal(doctor_exit_status(res, n), 1);
	assert_no_value(res, n);

	put_file("tok", VALUE "\n", 0600);
	n = run_policy(conf, NULL, res);
	r = row(res, n, "secrets");
	fixture_doctor_yes(r);
	assert_string_equal(r->detail, "1 loaded: tok");
	assert_int_equal(doctor_exit_status(res, n), 0);
	assert_no_value(res, n);
	assert_int_equal(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 1);
}

static void
count_diag(void *arg, const struct policy_diag *d)
{
	unsigned *n = arg;

	(void)d;
	(*n)++;
}

/* A policy with errors: its diagnostics reach DIAG; the rest waits. */
static void
test_policy_errors(void **state)
{
	struct doctor_result res[DOCTOR_MAX];
	const char *files[1];
	unsigned ndiag = 0;
	struct doctor_policy_opts o = {files, 1, NULL, count_diag, &ndiag};
	const struct doctor_result *r;
	size_t n;

	(void)state;
	files[0] = put_file("bad.conf", "alow pypi.org\n", 0644);
	n = doctor_policy_run(&o, res, DOCTOR_MAX);
	assert_int_equal(ndiag, 1);
	r = row(res, n, "policy");
	assert_int_equal(r->status, DOCTOR_NO);
	assert_string_equal(r->detail, "1 error, 0 warnings");
	r = row(res, n, "secrets");
	assert_int_equal(r->status, DOCTOR_NO);
	assert_string_equal(r->detail, "not tried: the policy has errors");
	assert_int_equal(row(res, n, "log")->status, DOCTOR_NO);
	assert_int_equal(doctor_exit_status(res, n), 1);
}

/* --log: an existing file is left as it was; a missing directory fails. */
static void
test_log_paths(void **state)
{
	struct doctor_result res[DOCTOR_MAX];
	struct doctor_policy_opts o = {NULL, 0, NULL, NULL, NULL};
	char missing[PATH_MAX + 64];
	const struct doctor_result *r;
	struct stat sb;
	size_t n;

	(void)state;
	o.log = put_file("old.jsonl", "{}\n", 0600);
	n = doctor_policy_run(&o, res, DOCTOR_MAX);
	assert_int_equal(n, FIXTURE_KERNEL_FEATURES + 1);
	r = row(res, n, "log");
	fixture_doctor_yes(r);
	assert_non_null(strstr(r->detail, "is writable"));
	assert_int_equal(stat(o.log, &sb), 0);
	assert_int_equal(sb.st_size, 3);

	snprintf(missing, sizeof(missing), "%s/no/such/dir/x.jsonl", tmpdir);
	o.log = missing;
	n = doctor_policy_run(&o, res, DOCTOR_MAX);
	r = row(res, n, "log");
	assert_int_equal(r->status, DOCTOR_NO);
	assert_non_null(strstr(r->detail, "No such file or directory"));
	assert_int_equal(strncmp(r->advice, "mkdir -p ", 9), 0);
	assert_int_equal(doctor_exit_status(res, n), 1);

	/* pinhole run refuses a log on stderr: the command writes there. */
	o.log = "stderr";
	n = doctor_policy_run(&o, res, DOCTOR_MAX);
	r = row(res, n, "log");
	assert_int_equal(r->status, DOCTOR_NO);
	assert_non_null(strstr(r->detail, "refuses an audit log on stderr"));
	assert_int_equal(doctor_exit_status(res, n), 1);
}

/* Prints FAKE (its first N rows) with FN; returns the text (free it). */
static char *
printed(int (*fn)(FILE *, const struct doctor_result *, size_t), size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	assert_non_null(f = open_memstream(&buf, &len));
	assert_int_equal(fn(f, fixture_doctor_fake, n), 0);
	fclose(f);
	return buf;
}

/* The column where WORD starts in LINE. */
static int
column(const char *line, const char *word)
{
	const char *p = strstr(line, word);

	assert_non_null(p);
	return (int)(p - line);
}

/* The index of the line that starts with WORD. */
static int
line_of(char *const *lines, int n, const char *word)
{
	int i;

	for (i = 0; i < n; i++)
		if (strncmp(lines[i], word, strlen(word)) == 0)
			return i;
	fail_msg("no line starts with %s", word);
	return -1;
}

static void
test_table(void **state)
{
	char *text = printed(doctor_print_table, FIXTURE_DOCTOR_FAKE);
	char *lines[32], *save = NULL, *l;
	int n = 0, cw, cd, ca, i, u, k;

	(void)state;
	for (l = strtok_r(text, "\n", &save); l != NULL && n < 32;
	     l = strtok_r(NULL, "\n", &save))
		lines[n++] = l;
	assert_int_equal(column(lines[0], "FEATURE"), 0);
	cw = column(lines[0], "WORKS");
	cd = column(lines[0], "DETAIL");
	ca = column(lines[0], "WHAT TO DO");
	assert_true(cw < cd && cd < ca);
	u = line_of(lines, n, "userns ");
	assert_int_equal(column(lines[u], "yes"), cw);
	assert_int_equal(column(lines[u], "unshare("), cd);
	k = line_of(lines, n, "network ");
	assert_int_equal(column(lines[k], "no "), cw);
	assert_int_equal(column(lines[k], "bringing lo up"), cd);
	assert_int_equal(column(lines[k], "an outer"), ca);
	/* Long cells wrap, and go on in their own columns. */
	assert_int_equal(column(lines[k + 1], "not permitted"), cd);
	assert_int_equal(column(lines[k + 2], "socket(AF_NETLINK)"), ca);
	assert_int_equal(strspn(lines[k + 2], " "), ca);
	k = line_of(lines, n, "landlock ");
	assert_int_equal(column(lines[k], "partial"), cw);
	assert_int_equal(column(lines[k], "boot with"), ca);
	for (i = 0; i < n; i++) {
		assert_true(lines[i][strlen(lines[i]) - 1] != ' ');
		assert_true(strlen(lines[i]) <= 100);
	}
	assert_string_equal(
	    lines[n - 1], "pinhole cannot run here; failing: network");
	free(text);

	text = printed(doctor_print_table, 1);
	assert_non_null(strstr(text, "every layer works"));
	free(text);
}

static void
test_verdict_partial(void **state)
{
	struct doctor_result res[2];
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	memcpy(&res[0], &fixture_doctor_fake[0], sizeof(res[0]));
	memcpy(&res[1], &fixture_doctor_fake[2], sizeof(res[1]));
	assert_int_equal(doctor_exit_status(res, 2), 0);
	assert_non_null(f = open_memstream(&buf, &len));
	assert_int_equal(doctor_print_table(f, res, 2), 0);
	fclose(f);
	assert_non_null(
	    strstr(buf, "pinhole can run here, partially; missing: landlock"));
	free(buf);
}

static void
test_json(void **state)
{
	static const char *const keys[] = {
	    "feature", "status", "detail", "advice"};
	char *text = printed(doctor_print_json, FIXTURE_DOCTOR_FAKE);
	json_error_t jerr;
	json_t *arr, *o;
	size_t i, k;

	(void)state;
	arr = json_loads(text, 0, &jerr);
	if (arr == NULL)
		fail_msg("not JSON: %s", jerr.text);
	assert_true(json_is_array(arr));
	assert_int_equal(json_array_size(arr), FIXTURE_DOCTOR_FAKE);
	for (i = 0; i < FIXTURE_DOCTOR_FAKE; i++) {
		o = json_array_get(arr, i);
		assert_int_equal(json_object_size(o), NITEMS(keys));
		for (k = 0; k < NITEMS(keys); k++)
			assert_true(
			    json_is_string(json_object_get(o, keys[k])));
		assert_string_equal(
		    json_string_value(json_object_get(o, "feature")),
		    fixture_doctor_fake[i].feature);
		assert_string_equal(
		    json_string_value(json_object_get(o, "status")),
		    doctor_status_name(fixture_doctor_fake[i].status));
		assert_string_equal(
		    json_string_value(json_object_get(o, "detail")),
		    fixture_doctor_fake[i].detail);
		assert_string_equal(
		    json_string_value(json_object_get(o, "advice")),
		    fixture_doctor_fake[i].advice);
	}
	assert_string_equal(json_string_value(json_object_get(
	                        json_array_get(arr, 1), "status")),
	    "no");
	json_decref(arr);
	free(text);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_policy_secret_mode),
	    cmocka_unit_test(test_policy_errors),
	    cmocka_unit_test(test_log_paths),
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_verdict_partial),
	    cmocka_unit_test(test_json),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
