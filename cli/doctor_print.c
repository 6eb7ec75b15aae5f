/*
 * doctor_print.c: pinhole doctor's report, as a table for people and as
 * JSON for programs.  The rows come from netns/doctor.c (the kernel) and
 * cli/doctor_policy.c (the policy, its secrets, its log); nothing here
 * probes, except the few lines of context above the table.
 */
#include <sys/types.h>
#include <sys/utsname.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/doctor_print.h"
#include "common/ph_err.h"
#include "netns/cgroup.h"

/* Widest the wrapped detail and advice columns get, together. */
#define TEXT_WIDTH 70
#define ADVICE_WIDTH 34

/*
 * Whether pinhole run can give the sandbox a cgroup of its own, per
 * controller: then --limit-pids and --limit-memory bind it whole.
 */
static void
print_cgroup(FILE *f)
{
	struct cgroup_where w;
	int c, n = 0;

	cgroup_find_self(&w);
	fprintf(f, "cgroup:");
	for (c = 0; c < CGROUP_NCTRL; c++)
		if (w.version[c] != 0)
			fprintf(f, "%s %s in v%d %s", n++ ? ";" : "",
			    cgroup_ctrl_name(c), w.version[c], w.dir[c]);
	for (c = 0; c < CGROUP_NCTRL; c++)
		if (w.version[c] == 0)
			fprintf(f, "%s no %s cgroup (%s)", n++ ? ";" : "",
			    cgroup_ctrl_name(c), w.why[c]);
	fprintf(f, "%s\n",
	    w.version[CGROUP_PIDS] == 0 && w.version[CGROUP_MEMORY] == 0
	        ? ": the limits are rlimits only"
	        : "");
}

void
doctor_print_context(FILE *f)
{
	struct utsname u;
	const char *box = doctor_container();
	uid_t uid = getuid();

	if (uname(&u) == 0)
		fprintf(f, "kernel: %s %s\n", u.sysname, u.release);
	fprintf(f, "user: uid %u%s\n", (unsigned)uid,
	    uid == 0 ? " (root)" : " (not root: unprivileged user namespaces)");
	fprintf(f, "container: %s\n", box != NULL ? box : "none detected");
	print_cgroup(f);
}

/*
 * Cuts the next line of at most W columns from *S, at a space when there
 * is one; sets *SEG to its start, advances *S past it and returns its
 * length.
 */
static int
next_line(const char **s, int w, const char **seg)
{
	const char *p = *s;
	int len = (int)strlen(p), cut = w;

	*seg = p;
	if (len <= w)
		cut = len;
	else {
		while (cut > 0 && p[cut] != ' ')
			cut--;
		if (cut == 0) /* one long word: break it */
			cut = w;
	}
	for (*s = p + cut; **s == ' '; (*s)++)
		continue;
	return cut;
}

/* Prints one row, each cell wrapped to its width in W. */
static void
print_row(FILE *f, const char *const cells[4], const int w[4])
{
	const char *left[4], *seg;
	char line[512];
	size_t end;
	int i, len, more = 1;

	memcpy(left, cells, sizeof(left));
	while (more) {
		line[0] = '\0';
		for (i = 0; i < 4; i++) {
			len = next_line(&left[i], w[i], &seg);
			ph_catf(line, sizeof(line), "%-*.*s%s", w[i], len, seg,
			    i < 3 ? "  " : "");
		}
		end = strlen(line); /* no trailing spaces */
		while (end > 0 && line[end - 1] == ' ')
			end--;
		fprintf(f, "%.*s\n", (int)end, line);
		more = *left[0] || *left[1] || *left[2] || *left[3];
	}
}

static int
widest(
    const struct doctor_result *res, size_t n, size_t field, int min, int max)
{
	const char *s;
	size_t i;
	int w = min;

	for (i = 0; i < n; i++) {
		s = field == 0   ? res[i].feature
		    : field == 1 ? doctor_status_name(res[i].status)
		    : field == 2 ? res[i].detail
		                 : res[i].advice;
		if ((int)strlen(s) > w)
			w = (int)strlen(s);
	}
	return w < max ? w : max;
}

/* One line: can pinhole run here, and without what. */
static void
print_verdict(FILE *f, const struct doctor_result *res, size_t n)
{
	char bad[128] = "", missing[128] = "";
	char *to;
	size_t i;

	for (i = 0; i < n; i++) {
		if (res[i].status == DOCTOR_YES)
			continue;
		to = res[i].required ? bad : missing;
		ph_catf(to, sizeof(bad), "%s%s", to[0] != '\0' ? ", " : "",
		    res[i].feature);
	}
	if (bad[0] != '\0')
		fprintf(f, "pinhole cannot run here; failing: %s\n", bad);
	else if (missing[0] != '\0')
		fprintf(f, "pinhole can run here, partially; missing: %s\n",
		    missing);
	else
		fprintf(f, "pinhole can run here; every layer works\n");
}

int
doctor_print_table(FILE *f, const struct doctor_result *res, size_t n)
{
	static const char *const head[4] = {
	    "FEATURE", "WORKS", "DETAIL", "WHAT TO DO"};
	const char *cells[4];
	int w[4];
	size_t i;

	w[0] = widest(res, n, 0, (int)strlen(head[0]), 32);
	w[1] = widest(res, n, 1, (int)strlen(head[1]), 16);
	w[3] = widest(res, n, 3, (int)strlen(head[3]), ADVICE_WIDTH);
	/* Detail gets what advice leaves: all of it when all works. */
	w[2] = widest(res, n, 2, (int)strlen(head[2]), TEXT_WIDTH - w[3]);
	print_row(f, head, w);
	for (i = 0; i < n; i++) {
		cells[0] = res[i].feature;
		cells[1] = doctor_status_name(res[i].status);
		cells[2] = res[i].detail;
		cells[3] = res[i].advice;
		print_row(f, cells, w);
	}
	fputc('\n', f);
	print_verdict(f, res, n);
	return ferror(f) ? -1 : 0;
}

/* S as a JSON string; bytes that are not UTF-8 would make it NULL. */
static json_t *
jstr(const char *s)
{
	char buf[256];
	size_t i;
	json_t *j;

	if ((j = json_string(s)) != NULL)
		return j;
	snprintf(buf, sizeof(buf), "%s", s);
	for (i = 0; buf[i] != '\0'; i++)
		if ((unsigned char)buf[i] > 0x7e)
			buf[i] = '?';
	return json_string(buf);
}

int
doctor_print_json(FILE *f, const struct doctor_result *res, size_t n)
{
	json_t *arr, *o;
	size_t i;
	int ret = -1;

	if ((arr = json_array()) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		o = json_pack("{s:s, s:s, s:o, s:o}", "feature", res[i].feature,
		    "status", doctor_status_name(res[i].status), "detail",
		    jstr(res[i].detail), "advice", jstr(res[i].advice));
		if (o == NULL || json_array_append_new(arr, o) != 0)
			goto out;
	}
	if (json_dumpf(arr, f, JSON_INDENT(2)) != 0)
		goto out;
	fputc('\n', f);
	ret = ferror(f) ? -1 : 0;
out:
	json_decref(arr);
	return ret;
}
