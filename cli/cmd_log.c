/*
 * cmd_log.c: pinhole log.  Reads an audit log (a file, or standard
 * input) up to its current end and prints the reviewer's view of it:
 * denied requests first, then a per-host table, then totals.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/log.h"
#include "audit/logprint.h"
#include "audit/logview.h"

static void
log_usage(FILE *f)
{
	fprintf(f,
	    "usage: pinhole log [--denied] [--host HOST]... [--json] "
	    "[FILE]\n\n"
	    "Reviews an audit log (FILE, or standard input when FILE is "
	    "absent or -):\nthe denied requests first, each with the allow "
	    "line that would permit it,\nthen requests and bytes per host, "
	    "then totals.  Malformed lines are reported\non stderr as "
	    "FILE:LINE: and skipped; a last line without a newline (a "
	    "writer\nin mid-append) is ignored.\n\n"
	    "      --denied      print only the denied requests\n"
	    "      --host HOST   only records for HOST (repeatable; any "
	    "case)\n"
	    "      --json        one JSON object: denied, hosts, totals\n"
	    "  -h, --help        this text\n\n"
	    "Exit status: 0 done, 1 the log cannot be read, 2 usage "
	    "error.\n");
}

/* Reads NAME ("-": standard input) into LV; 0, or -1 with a message. */
static int
read_log(struct logview *lv, const char *name)
{
	FILE *in = stdin;
	int ret = -1;

	if (strcmp(name, "-") != 0 && (in = fopen(name, "r")) == NULL) {
		log_warn("log: cannot open %s", name);
		goto out;
	}
	if (logview_read(lv, in, in == stdin ? "<stdin>" : name, stderr) != 0) {
		log_warn("log: cannot read %s",
		    in == stdin ? "standard input" : name);
		goto out;
	}
	ret = 0;
out:
	if (in != NULL && in != stdin)
		fclose(in);
	return ret;
}

int
cmd_log(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"denied", no_argument, NULL, 'd'},
	    {"help", no_argument, NULL, 'h'},
	    {"host", required_argument, NULL, 'H'},
	    {"json", no_argument, NULL, 'j'},
	    {NULL, 0, NULL, 0},
	};
	struct logprint_opts o = {0, 0};
	struct logview *lv;
	int ch, status = CLI_EXIT_USAGE;

	if ((lv = logview_new()) == NULL)
		fatal("logview_new");
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'd':
			o.denied_only = 1;
			break;
		case 'h':
			log_usage(stdout);
			status = 0;
			goto out;
		case 'H':
			if (logview_filter_host(lv, optarg) != 0)
				fatal("logview_filter_host");
			break;
		case 'j':
			o.json = 1;
			break;
		default:
			log_usage(stderr);
			goto out;
		}
	}
	if (argc - optind > 1) {
		log_warnx("log: one FILE at most");
		log_usage(stderr);
		goto out;
	}
	status = 1;
	if (read_log(lv, optind < argc ? argv[optind] : "-") != 0)
		goto out;
	if (logprint_view(lv, stdout, &o) != 0)
		log_warn("log: cannot write the review");
	else
		status = 0;
out:
	logview_free(lv);
	return status;
}
