/*
 * cmd_doctor.c: pinhole doctor.  Tries each layer of the sandbox (netns/
 * doctor.c does, in child processes) and prints which work here and what
 * to do where one does not (cli/doctor_print.c); with -p, also whether the
 * policy, its secrets and its log would let pinhole run start
 * (cli/doctor_policy.c).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/doctor_policy.h"
#include "cli/doctor_print.h"
#include "common/log.h"

static void
doctor_usage(FILE *f)
{
	fprintf(f,
	    "usage: pinhole doctor [-p POLICY]... [--log FILE] [--json]\n\n"
	    "Tries each layer of the sandbox in a child process, in the "
	    "order a failure\nwould show: user namespace, AppArmor's "
	    "restriction of it (Ubuntu) and pinhole's\nprofile, the other "
	    "namespaces, network namespace and lo, mounts (fresh\n/proc, "
	    "read-only view of /), Landlock, seccomp; then, with -p,\nthe "
	    "policy, its secrets (loaded, never printed) and its audit "
	    "log.  Prints\na table: feature, whether it works, why not, "
	    "what to do.\n\n"
	    "  -p, --policy FILE  also check this policy (repeatable: the "
	    "files form one\n"
	    "                     policy, as for pinhole run)\n"
	    "      --log FILE     the audit log to check, instead of the "
	    "policy's\n"
	    "      --json         print a JSON array of {feature, status, "
	    "detail, advice}\n"
	    "  -h, --help         this text\n\n"
	    "Exit status: 0 pinhole can run here (Landlock or seccomp may be "
	    "missing),\n1 a required layer does not work, 2 usage error.\n");
}

static int
print_report(const struct doctor_result *res, size_t n, int json)
{
	if (json)
		return doctor_print_json(stdout, res, n);
	doctor_print_context(stdout);
	fputc('\n', stdout);
	return doctor_print_table(stdout, res, n);
}

int
cmd_doctor(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"json", no_argument, NULL, 'j'},
	    {"log", required_argument, NULL, 'l'},
	    {"policy", required_argument, NULL, 'p'},
	    {NULL, 0, NULL, 0},
	};
	struct doctor_result res[DOCTOR_MAX];
	struct cli_diag_count dc = {0, 0, 0, 0};
	struct doctor_policy_opts o = {NULL, 0, NULL, cli_print_diag, &dc};
	const char **pfiles = calloc(argc, sizeof(*pfiles));
	size_t n;
	int ch, json = 0, status = CLI_EXIT_USAGE;

	if (pfiles == NULL)
		fatal("calloc");
	while ((ch = getopt_long(argc, argv, "hp:", opts, NULL)) != -1) {
		switch (ch) {
		case 'h':
			doctor_usage(stdout);
			status = 0;
			goto out;
		case 'j':
			json = 1;
			break;
		case 'l':
			o.log = optarg;
			break;
		case 'p':
			pfiles[o.npolicy++] = optarg;
			break;
		default:
			doctor_usage(stderr);
			goto out;
		}
	}
	if (optind < argc) {
		log_warnx("doctor: unexpected argument '%s'", argv[optind]);
		doctor_usage(stderr);
		goto out;
	}
	o.policy = pfiles;
	n = doctor_policy_run(&o, res, DOCTOR_MAX);
	status = doctor_exit_status(res, n);
	if (print_report(res, n, json) != 0 || fflush(stdout) != 0) {
		log_warn("doctor: cannot write the report");
		status = 1;
	}
out:
	free(pfiles);
	return status;
}
