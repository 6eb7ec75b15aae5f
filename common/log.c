/*
 * log.c: stderr diagnostics.  One fprintf per line so that lines from
 * several processes sharing stderr do not interleave mid-line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static const char *log_progname = "pinhole";
static int log_level;

static void vlog(int with_errno, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

void
log_init(const char *progname, int verbose)
{
	if (progname != NULL)
		log_progname = progname;
	log_level = verbose;
}

int
log_verbose(void)
{
	return log_level;
}

static void
vlog(int with_errno, const char *fmt, va_list ap)
{
	char msg[1024];
	int saved = errno;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (with_errno)
		fprintf(
		    stderr, "%s: %s: %s\n", log_progname, msg, strerror(saved));
	else
		fprintf(stderr, "%s: %s\n", log_progname, msg);
	errno = saved;
}

void
log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(1, fmt, ap);
	va_end(ap);
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(0, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	if (log_level < 1)
		return;
	va_start(ap, fmt);
	vlog(0, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	if (log_level < 2)
		return;
	va_start(ap, fmt);
	vlog(0, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(1, fmt, ap);
	va_end(ap);
	exit(LOG_EXIT_FAILURE);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(0, fmt, ap);
	va_end(ap);
	exit(LOG_EXIT_FAILURE);
}
