/*
 * cli.h: the subcommands.  Each is a thin layer over the modules: parse
 * its options, call into policy/ (and later proxy/, netns/), print.
 */
#ifndef PH_CLI_H
#define PH_CLI_H

struct policy_diag;

/* Exit status for usage errors (bad options, missing arguments). */
#define CLI_EXIT_USAGE 2

int cmd_check(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_log(int argc, char **argv);
int cmd_proxy(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_doctor(int argc, char **argv);

/*
 * Prints one policy diagnostic to stderr as FILE:LINE:COL: message
 * (after "pinhole: " where ARG's tagged is set: run's stderr is the
 * command's too, and each line of pinhole's says whose it is).
 */
void cli_print_diag(void *arg, const struct policy_diag *);

/* Counts of what cli_print_diag printed (ARG points to one). */
struct cli_diag_count {
	unsigned errors, warnings;
	int quiet_warnings;
	int tagged; /* "pinhole: " before FILE */
};

#endif
