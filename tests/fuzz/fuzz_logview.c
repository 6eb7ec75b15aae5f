/*
 * fuzz_logview.c: libFuzzer target for audit/logview.c.
 *
 * Splits the input into lines at '\n', feeds each one (the last one too,
 * with or without its newline) to logview_feed() in an exact-size heap
 * copy, so that any read past a line is caught, then prints the view as
 * text and as JSON to /dev/null.  When the first byte is odd, a host
 * filter is set first.  A crash, a leak or an undefined behaviour shows
 * up under the sanitizers; logview_totals() must add up.
 *
 *	./fuzz_logview -max_total_time=60 tests/fuzz/corpus/logview
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/logprint.h"
#include "audit/logview.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check(int ok)
{
	if (!ok)
		abort();
}

static void
feed_line(struct logview *lv, const uint8_t *p, size_t len, uint64_t lineno)
{
	char *line = malloc(len ? len : 1);

	if (line == NULL)
		return;
	memcpy(line, p, len);
	logview_feed(lv, line, len, lineno);
	free(line);
}

/* Feeds DATA line by line; returns the number of lines. */
static uint64_t
feed_all(struct logview *lv, const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size, *nl;
	uint64_t lineno = 0;

	while (p < end) {
		nl = memchr(p, '\n', end - p);
		feed_line(lv, p, (nl ? nl : end) - p, ++lineno);
		p = nl ? nl + 1 : end;
	}
	return lineno;
}

static void
print_all(const struct logview *lv)
{
	static FILE *null;
	struct logprint_opts o = {0, 0};

	if (null == NULL && (null = fopen("/dev/null", "w")) == NULL)
		abort();
	check(logprint_view(lv, null, &o) == 0);
	o.denied_only = 1;
	check(logprint_view(lv, null, &o) == 0);
	o.json = 1;
	check(logprint_view(lv, null, &o) == 0);
	o.denied_only = 0;
	check(logprint_view(lv, null, &o) == 0);
}

/* The classes of T added, saturating as the counters do. */
static uint64_t
classes_sum(const struct logview_totals *t)
{
	uint64_t n = 0;
	int c;

	for (c = 0; c < LOGVIEW_CLASS_NCLASSES; c++)
		n = n + t->n[c] < n ? UINT64_MAX : n + t->n[c];
	return n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct logview_totals t;
	struct logview *lv;
	uint64_t lines;

	if ((lv = logview_new()) == NULL)
		return 0;
	if (size > 0 && (data[0] & 1))
		check(logview_filter_host(lv, "Evil.Example") == 0);
	lines = feed_all(lv, data, size);
	print_all(lv);
	logview_totals(lv, &t);
	check(t.records + t.malformed <= lines);
	check(t.requests <= t.records);
	check(classes_sum(&t) == t.requests); /* one class each */
	logview_free(lv);
	return 0;
}
