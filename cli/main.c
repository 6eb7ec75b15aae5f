/*
 * main.c: global options and subcommand dispatch.  New subcommands (run,
 * proxy, log, learn, doctor) slot into cmds[].
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/log.h"
#include "policy/policy.h"

struct cmd {
	const char *name;
	int (*fn)(int, char **);
	const char *summary;
};

static const struct cmd cmds[] = {
    {"run", cmd_run, "run a command in the sandbox"},
    {"check", cmd_check, "validate policy files"},
    {"explain", cmd_explain, "show how a policy decides a URL or HOST:PORT"},
    {"log", cmd_log, "review an audit log: per host, denied first"},
    {"proxy", cmd_proxy, "run the egress proxy (no sandbox)"},
    {"doctor", cmd_doctor, "which kernel features work here, and what to do"},
};

static void
usage(FILE *f)
{
	size_t i;

	fprintf(f,
	    "usage: pinhole [-v] COMMAND [OPTIONS] [ARGS]\n"
	    "       pinhole --help | --version\n\n"
	    "Runs commands in a sandbox whose only way to the network is a "
	    "policy-enforcing\negress proxy.  Commands:\n");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-9s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f,
	    "\n'pinhole COMMAND --help' describes a command; see also "
	    "pinhole(1) and pinhole.conf(5).\n");
}

void
cli_print_diag(void *arg, const struct policy_diag *d)
{
	struct cli_diag_count *c = arg;
	const char *tag = c != NULL && c->tagged ? "pinhole: " : "";

	if (c != NULL) {
		if (d->warning)
			c->warnings++;
		else
			c->errors++;
		if (d->warning && c->quiet_warnings)
			return;
	}
	if (d->file == NULL)
		fprintf(stderr, "pinhole: %s%s\n",
		    d->warning ? "warning: " : "", d->msg);
	else if (d->line == 0)
		fprintf(stderr, "%s%s: %s%s\n", tag, d->file,
		    d->warning ? "warning: " : "", d->msg);
	else
		fprintf(stderr, "%s%s:%u:%u: %s%s\n", tag, d->file, d->line,
		    d->col, d->warning ? "warning: " : "", d->msg);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {"verbose", no_argument, NULL, 'v'},
	    {NULL, 0, NULL, 0},
	};
	int ch, verbose = 0;
	size_t i;

	/* Stop at the first non-option: the subcommand parses the rest. */
	while ((ch = getopt_long(argc, argv, "+hVv", opts, NULL)) != -1) {
		switch (ch) {
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("pinhole %s\n", PINHOLE_VERSION);
			return 0;
		case 'v':
			verbose++;
			break;
		default:
			usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	log_init("pinhole", verbose);
	if (optind >= argc) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(argv[optind], cmds[i].name) == 0) {
			argv += optind;
			argc -= optind;
			optind = 0; /* reset getopt for the subcommand */
			return cmds[i].fn(argc, argv);
		}
	if (strcmp(argv[optind], "help") == 0) {
		usage(stdout);
		return 0;
	}
	log_warnx("unknown command '%s'; see 'pinhole --help'", argv[optind]);
	return CLI_EXIT_USAGE;
}
