/*
 * cmd_check.c: pinhole check.  All -p files form one policy (as for
 * `pinhole run`); each positional FILE is checked as a policy of its own.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/log.h"
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
	    "other FILE\nis checked as a policy of its own.  Errors and "
	    "warnings go to stderr as\nFILE:LINE:COL: message.\n\n"
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
	if (!o->quiet && r == 0)
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
