/*
 * fixture.c: the shared helpers of the unit tests (see fixture.h).
 */
#include <sys/stat.h>

#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy/policy.h"
#include "policy/secret.h"
#include "tests/unit/fixture.h"

int
fixture_tmpdir(char *dir, size_t len, const char *name)
{
	const char *tmp = getenv("TMPDIR");
	int n;

	n = snprintf(dir, len, "%s/%s.XXXXXX",
	    tmp != NULL && *tmp != '\0' ? tmp : "/tmp", name);
	if (n < 0 || (size_t)n >= len)
		return -1;
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int
rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	chmod(path, 0700);
	return remove(path);
}

int
fixture_rmtree(const char *dir)
{
	return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void
fixture_write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	if (fp == NULL || fputs(text, fp) == EOF || fclose(fp) != 0)
		fail_msg("cannot write %s", path);
}

static void
on_diag(void *arg, const struct policy_diag *d)
{
	size_t *nerr = arg;

	if (d->warning)
		return;
	(*nerr)++;
	fprintf(stderr, "  %s:%u:%u: %s\n", d->file ? d->file : "-", d->line,
	    d->col, d->msg);
}

static void
on_report(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "  %s\n", msg);
}

struct policy *
fixture_policy(const char *text, int secrets)
{
	struct policy *p = NULL;
	size_t nerr = 0;

	if (policy_load_string(
	        "p.conf", text, strlen(text), on_diag, &nerr, &p) != 0 ||
	    nerr != 0)
		fail_msg("policy does not load:\n%s", text);
	if (secrets &&
	    secret_store_load(policy_secrets(p), on_report, NULL) != 0)
		fail_msg("secrets do not load:\n%s", text);
	return p;
}
