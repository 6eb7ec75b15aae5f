/*
 * fuzz_logview.c: libFuzzer target for audit/logview.c.
 *
 * Splits the input into lines at '\n', feeds each one (the last one too,
 * with or without its newline) to logview_feed() in an exact-size heap
 * copy, so that any read past a line is caught, then prints the view as
 * text and as JSON to /dev/null.  When the first byte is odd, a host
 * filter is set first.  A crash, a leak or an undefined behaviour shows
 * up under the sanitizers; logview_totals() must add up.  The review must
 * be safe for a terminal: each line of the text is what escaping leaves
 * unchanged (escaping is idempotent on safe text), the JSON is printable
 * ASCII, and the input itself escapes to such text.  No advice allows
 * every path of a host.
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

/* S (LEN bytes, no NUL) is what logview_esc_buf() leaves as it is. */
static void
check_safe(const char *s, size_t len)
{
	char *in = malloc(len + 1), *out = malloc(4 * len + 1);

	if (in == NULL || out == NULL)
		abort();
	memcpy(in, s, len);
	in[len] = '\0';
	logview_esc_buf(out, 4 * len + 1, in);
	check(strcmp(in, out) == 0);
	free(in);
	free(out);
}

/*
 * Whether the line S of LEN bytes is an allow line of the advice whose
 * paths option is the root and a star, every path on the host: the word
 * after " paths " is "/" and a star, ended by a space, a '}' or the
 * line's end, or the same in quotes.  Not those bytes inside a quoted
 * pattern: a denied path "/robotspaths /x" is advised as its directory
 * and a star, quoted (it holds a space), one narrow word whose star the
 * closing quote follows.
 */
static int
advice_opens_host(const char *s, size_t len)
{
	static const char lead[] = "      allow ", kw[] = " paths ";
	const char *w;
	size_t i, rest;

	if (len < sizeof(lead) - 1 || memcmp(s, lead, sizeof(lead) - 1) != 0)
		return 0;
	for (i = 0; i + sizeof(kw) - 1 <= len; i++) {
		if (memcmp(s + i, kw, sizeof(kw) - 1) != 0)
			continue;
		w = s + i + sizeof(kw) - 1;
		rest = len - i - (sizeof(kw) - 1);
		if (rest >= 4 && memcmp(w, "\"/*\"", 4) == 0)
			return 1;
		if (rest >= 2 && memcmp(w, "/*", 2) == 0 &&
		    (rest == 2 || w[2] == ' ' || w[2] == '}'))
			return 1;
	}
	return 0;
}

/*
 * Each line of the text review is safe for a terminal, and no advice
 * opens a whole host.
 */
static void
check_text(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len, *nl;

	check(memchr(buf, '\0', len) == NULL);
	while (p < end) {
		nl = memchr(p, '\n', end - p);
		check_safe(p, (nl ? nl : end) - p);
		check(!advice_opens_host(p, (nl ? nl : end) - p));
		p = nl ? nl + 1 : end;
	}
}

/* The JSON is printable ASCII and newlines. */
static void
check_json(const char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		check(buf[i] == '\n' || (buf[i] >= 0x20 && buf[i] < 0x7f));
}

/* Prints LV with O into memory and checks the output with FN. */
static void
print_check(const struct logview *lv, const struct logprint_opts *o,
    void (*fn)(const char *, size_t))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		abort();
	check(logprint_view(lv, f, o) == 0);
	check(fclose(f) == 0);
	fn(buf, len);
	free(buf);
}

static void
print_all(const struct logview *lv)
{
	struct logprint_opts o = {0, 0};

	print_check(lv, &o, check_text);
	o.denied_only = 1;
	print_check(lv, &o, check_text);
	o.json = 1;
	print_check(lv, &o, check_json);
	o.denied_only = 0;
	print_check(lv, &o, check_json);
}

/* The input, escaped, is safe: escaping it again changes nothing. */
static void
check_escape(const uint8_t *data, size_t size)
{
	char *in = malloc(size + 1), *out = malloc(4 * size + 1);
	size_t n;

	if (in == NULL || out == NULL)
		abort();
	memcpy(in, data, size);
	in[size] = '\0';
	logview_esc_buf(out, 4 * size + 1, in);
	n = strlen(out);
	check(n >= strlen(in));
	check_safe(out, n);
	free(in);
	free(out);
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
	check_escape(data, size);
	logview_totals(lv, &t);
	check(t.records + t.malformed <= lines);
	check(t.requests <= t.records);
	check(classes_sum(&t) == t.requests); /* one class each */
	logview_free(lv);
	return 0;
}
