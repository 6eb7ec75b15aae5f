/*
 * fuzz_metrics.c: libFuzzer target for proxy/metrics.c: the request-head
 * parser of the metrics responder (the bytes any local process may send
 * to --metrics), and the escaping of label values (host and rule file
 * names are not trusted to be clean).
 *
 * Checks: the result is a metrics_head value; a cut of the input gives
 * METRICS_HEAD_MORE or the whole input's result, and once a cut gives a
 * result every longer cut gives the same; with the input as a host and
 * as a rule file name, every rendered line is a comment or a sample
 * whose name is one of ours (no label value breaks a line).  A violation
 * abort()s.
 *
 *	./fuzz_metrics -max_total_time=30 tests/fuzz/corpus/metrics
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

static void
check_head(const char *p, size_t n)
{
	enum metrics_head whole = metrics_parse_head(p, n), r, seen;
	size_t i, step = n > 512 ? n / 256 : 1;

	check(whole >= METRICS_HEAD_MORE && whole <= METRICS_HEAD_BAD);
	seen = METRICS_HEAD_MORE;
	for (i = 0; i < n; i += step) {
		r = metrics_parse_head(p, i);
		check(r == METRICS_HEAD_MORE || r == whole);
		check(seen == METRICS_HEAD_MORE || r == seen);
		seen = r;
	}
}

static void
check_render(const char *p, size_t n)
{
	struct metrics *m = metrics_new(4);
	struct metrics_req r = {0};
	char *name, *buf = NULL, *line, *save;
	size_t len = 0;
	FILE *f;

	if (m == NULL || (name = malloc(n + 1)) == NULL)
		abort();
	memcpy(name, p, n);
	name[n] = '\0';
	r.decision = "deny";
	r.host = name;
	r.port = 443;
	r.rule_file = name;
	r.rule_line = 1;
	r.via = "proxy";
	r.decided = 1;
	r.decision_us = (int64_t)n;
	metrics_request(m, &r);
	if ((f = open_memstream(&buf, &len)) == NULL)
		abort();
	check(metrics_render(m, f) == 0);
	fclose(f);
	for (line = strtok_r(buf, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save))
		check(line[0] == '#' || strncmp(line, "pinhole_", 8) == 0 ||
		    strncmp(line, "process_", 8) == 0);
	free(buf);
	free(name);
	metrics_free(m);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_head((const char *)data, size);
	check_render((const char *)data, size);
	return 0;
}
