/*
 * cmd_check.c: pinhole check.  All -p files form one policy (as for
 * `pinhole run`); each positional FILE is checked as a policy of its own.
 * A broker's configuration (broker blocks, policy/grant.h) is checked,
 * then each policy it grants is loaded from its files as the broker will.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/log.h"
#include "policy/grant.h"
#include "policy/policy.h"
#include "proxy/ca.h"

struct check_opts {
	int quiet;
	int secrets;
};

static void
check_usage(FILE *f)
{
	fprintf(f,
	    "usage: pinhole check [-q] [--secrets] [-p FILE]... "
	    "[FILE]...\n\n"
	    "Validates policies.  All -p files together form one policy; each "
	    "other FILE\nis checked as a policy of its own.  A broker's "
	    "configuration (broker blocks)\nis checked with every policy it "
	    "grants.  Errors and warnings go to stderr as\nFILE:LINE:COL: "
	    "message.\n\n"
	    "  -p, --policy FILE  add FILE to the combined policy "
	    "(repeatable)\n"
	    "  -q, --quiet        print errors only: no warnings, no summary\n"
	    "      --secrets      also load every secret (file permissions, "
	    "env, exec\n"
	    "                     helpers); values are never printed\n"
	    "  -h, --help         this text\n\n"
	    "Exit status: 0 clean or warnings only, 1 errors, 2 usage "
	    "error.\n");
}

static void
secret_report(void *arg, const char *msg)
{
	unsigned *n = arg;

	(*n)++;
	log_warnx("%s", msg);
}

/*
 * Each `trust` file holds PEM certificates and nothing else (read as
 * `pinhole run` reads them).  Returns the number of bad ones, said as
 * FILE:LINE:COL: errors.
 */
static unsigned
check_trust(const struct policy *p, struct cli_diag_count *c)
{
	const struct policy_trust *t;
	char err[512], *pem;
	unsigned bad = 0;
	size_t i;

	for (i = 0; (t = policy_trust_at(p, i)) != NULL; i++) {
		if (ca_read_certs(t->path, &pem, err, sizeof(err)) >= 0) {
			free(pem);
			continue;
		}
		fprintf(stderr, "%s:%u:%u: trust %s: %s\n", t->file, t->line,
		    t->col, t->path, err);
		c->errors++;
		bad++;
	}
	return bad;
}

/*
 * Loads each policy the broker blocks of P grant (its diagnostics as
 * usual), its trust files and, with --secrets, its secrets.  A failure is
 * said at the policy's `policy` line.  Returns how many failed.
 */
static unsigned
check_granted(const struct policy *p, struct cli_diag_count *c,
    const struct check_opts *o, unsigned *bad_secrets)
{
	const struct grant_set *g = policy_grants(p);
	struct policy *q;
	const char *const *files, *where;
	unsigned failed = 0, line;
	size_t i, n;
	int r;

	for (i = 0; i < grant_count(g); i++) {
		files = grant_files(g, i, &n);
		where = grant_where(g, i, &line);
		q = NULL;
		r = policy_load(files, n, cli_print_diag, c, &q);
		if (r == 0 && policy_grants(q) != NULL) {
			fprintf(stderr,
			    "%s:%u: policy %s: its files are a broker "
			    "configuration (broker blocks), not a policy\n",
			    where, line, grant_name(g, i));
			r = -1;
		} else if (r != 0) {
			fprintf(stderr,
			    "%s:%u: policy %s: its files do not load (the "
			    "errors above)\n",
			    where, line, grant_name(g, i));
		}
		if (r == 0 && check_trust(q, c) != 0)
			r = -1;
		if (r == 0 && o->secrets)
			secret_store_load(
			    policy_secrets(q), secret_report, bad_secrets);
		if (r != 0) {
			c->errors++;
			failed++;
		}
		policy_free(q);
	}
	return failed;
}

/* The summary of a broker's configuration that checked out. */
static void
granted_summary(const char *name, const struct policy *p,
    const struct cli_diag_count *c, const struct check_opts *o, unsigned bad)
{
	size_t np = grant_count(policy_grants(p));
	size_t ns = secret_store_count(policy_secrets(p));

	printf("%s: %s, broker configuration, %zu polic%s (all load), %zu "
	       "secret%s, %u warning%s%s\n",
	    name, bad ? "secrets failed" : "ok", np, np == 1 ? "y" : "ies", ns,
	    ns == 1 ? "" : "s", c->warnings, c->warnings == 1 ? "" : "s",
	    o->secrets && !bad ? ", secrets loaded" : "");
}

/* Checks one policy made of FILES; returns 0 when it has no errors. */
static int
check_one(const char *const *files, size_t n, const char *name,
    const struct check_opts *o)
{
	struct cli_diag_count c = {0, 0, o->quiet, 0};
	struct policy *p = NULL;
	unsigned bad = 0;
	int r;

	r = policy_load(files, n, cli_print_diag, &c, &p);
	if (r == 0 && check_trust(p, &c) != 0)
		r = -1;
	if (r == 0 && o->secrets)
		secret_store_load(policy_secrets(p), secret_report, &bad);
	if (r == 0 && policy_grants(p) != NULL &&
	    check_granted(p, &c, o, &bad) != 0)
		r = -1;
	if (!o->quiet && r == 0 && policy_grants(p) != NULL)
		granted_summary(name, p, &c, o, bad);
	else if (!o->quiet && r == 0)
		printf("%s: %s, %zu rule%s, %zu secret%s, %u warning%s%s\n",
		    name, bad ? "secrets failed" : "ok", policy_rule_count(p),
		    policy_rule_count(p) == 1 ? "" : "s",
		    secret_store_count(policy_secrets(p)),
		    secret_store_count(policy_secrets(p)) == 1 ? "" : "s",
		    c.warnings, c.warnings == 1 ? "" : "s",
		    o->secrets && !bad ? ", secrets loaded" : "");
	else if (!o->quiet)
		printf("%s: %u error%s, %u warning%s\n", name, c.errors,
		    c.errors == 1 ? "" : "s", c.warnings,
		    c.warnings == 1 ? "" : "s");
	policy_free(p);
	return r != 0 || bad != 0;
}

static char *
join_names(const char *const *files, size_t n)
{
	size_t i, len = 1;
	char *s;

	for (i = 0; i < n; i++)
		len += strlen(files[i]) + 3;
	s = calloc(1, len);
	for (i = 0; s != NULL && i < n; i++) {
		if (i > 0)
			strcat(s, " + ");
		strcat(s, files[i]);
	}
	return s;
}

int
cmd_check(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"policy", required_argument, NULL, 'p'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"secrets", no_argument, NULL, 'S'},
	    {NULL, 0, NULL, 0},
	};
	struct check_opts o = {0, 0};
	const char **pfiles = calloc(argc, sizeof(*pfiles));
	size_t np = 0;
	char *name;
	int ch, i, failed = 0, status = CLI_EXIT_USAGE;

	if (pfiles == NULL)
		fatal("calloc");
	while ((ch = getopt_long(argc, argv, "hp:q", opts, NULL)) != -1) {
		switch (ch) {
		case 'h':
			check_usage(stdout);
			status = 0;
			goto out;
		case 'p':
			pfiles[np++] = optarg;
			break;
		case 'q':
			o.quiet = 1;
			break;
		case 'S':
			o.secrets = 1;
			break;
		default:
			check_usage(stderr);
			goto out;
		}
	}
	if (np == 0 && optind == argc) {
		log_warnx("check: no policy given; use -p FILE or FILE");
		check_usage(stderr);
		goto out;
	}
	if (np > 0) {
		name = join_names(pfiles, np);
		failed |= check_one(pfiles, np, name ? name : "policy", &o);
		free(name);
	}
	for (i = optind; i < argc; i++)
		failed |=
		    check_one((const char *const *)&argv[i], 1, argv[i], &o);
	status = failed ? 1 : 0;
out:
	free(pfiles);
	return status;
}
