/*
 * hostinfo.c: a neutral hostname and PID 1's plain command line.
 */
#include <sys/prctl.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/ph_err.h"
#include "netns/hostinfo.h"

int
hostinfo_uts(char *err, size_t errlen)
{
	if (sethostname(HOSTINFO_HOSTNAME, strlen(HOSTINFO_HOSTNAME)) != 0 ||
	    setdomainname("(none)", 6) != 0) {
		ph_errf(err, errlen, "hostname: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Where the argument strings lie: fields 48 and 49 of /proc/self/stat
 * (arg_start, arg_end), counted after the name in parentheses, which
 * may hold anything.
 */
static int
arg_area(unsigned long *start, unsigned long *end)
{
	char buf[2048], *p;
	size_t n;
	FILE *f;
	int skip, ok = 0;

	if ((f = fopen("/proc/self/stat", "re")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL)
		return -1;
	/* P: the space before field 3; 45 spaces on, the one before 48. */
	for (skip = 0, p++; skip < 45 && p != NULL; skip++)
		p = strchr(p + 1, ' ');
	if (p != NULL && sscanf(p, " %lu %lu", start, end) == 2)
		ok = *end > *start;
	return ok ? 0 : -1;
}

int
hostinfo_title(char *err, size_t errlen)
{
	unsigned long start, end;
	size_t len = sizeof(HOSTINFO_TITLE);

	if (arg_area(&start, &end) != 0) {
		ph_errf(err, errlen, "cannot find the command line");
		return -1;
	}
	/* The last byte stays NUL: the kernel then shows only this area. */
	memset((void *)start, 0, end - start);
	if (len > end - start)
		len = end - start;
	memcpy((void *)start, HOSTINFO_TITLE, len - 1);
	if (prctl(PR_SET_NAME, HOSTINFO_TITLE, 0, 0, 0) != 0) {
		ph_errf(err, errlen, "PR_SET_NAME: %s", strerror(errno));
		return -1;
	}
	return 0;
}
