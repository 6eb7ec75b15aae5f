/*
 * fuzz_metrics_relay.c: libFuzzer target for metrics_absorb()
 * (proxy/metrics.c), which decodes the datagrams a broker's sandbox
 * engines send it: an engine parses the sandbox's bytes, so what it sends
 * is not trusted.
 *
 * Checks: metrics_absorb() returns 0 or -1; a refused datagram changes
 * nothing but pinhole_relay_errors_total (the rendered text is the same
 * otherwise); an accepted one has no accepted proper prefix (a datagram
 * has one length); absorbed by a worker's shard instead, it renders the
 * same text from the shard's root; every rendered line is a comment or
 * one of our samples (no label value breaks a line).  A violation
 * abort()s.
 *
 *	./fuzz_metrics_relay -max_total_time=30 tests/fuzz/corpus/metrics_relay
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check(int ok)
{
	if (!ok)
		abort();
}

/* The text of M, with the relay errors' sample cut off; malloc'd. */
static char *
render(const struct metrics *m)
{
	char *buf = NULL, *at;
	size_t len = 0;
	FILE *f;

	if ((f = open_memstream(&buf, &len)) == NULL)
		abort();
	check(metrics_render(m, f) == 0);
	fclose(f);
	if ((at = strstr(buf, "\npinhole_relay_errors_total ")) != NULL)
		at[1] = '\0';
	return buf;
}

static void
check_lines(char *text)
{
	char *line, *save;

	for (line = strtok_r(text, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save))
		check(line[0] == '#' || strncmp(line, "pinhole_", 8) == 0 ||
		    strncmp(line, "process_", 8) == 0);
}

/* The accepted datagram DATA, absorbed by a shard, renders as WANT. */
static void
check_shard(const uint8_t *data, size_t size, const char *want)
{
	struct metrics *root = metrics_new(4), *s;
	char *text;

	if (root == NULL || (s = metrics_shard_new(root)) == NULL)
		abort();
	metrics_sandbox(root, 1);
	check(metrics_absorb(s, data, size) == 0);
	text = render(root);
	check(strcmp(text, want) == 0);
	free(text);
	metrics_free(root);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct metrics *m = metrics_new(4);
	char *before, *after;
	size_t i;
	int r;

	if (m == NULL)
		abort();
	metrics_sandbox(m, 1); /* a broker's, so the text has every series */
	before = render(m);
	r = metrics_absorb(m, data, size);
	check(r == 0 || r == -1);
	after = render(m);
	if (r != 0)
		check(strcmp(before, after) == 0);
	for (i = 0; r == 0 && i < size; i++)
		check(metrics_absorb(m, data, i) == -1);
	if (r == 0)
		check_shard(data, size, after);
	check_lines(after);
	free(before);
	free(after);
	metrics_free(m);
	return 0;
}
