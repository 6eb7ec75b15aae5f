/*
 * fuzz_view.c: libFuzzer target for proxy/view.c, the launcher's (and
 * the engine's) reading of the other side's messages.
 *
 * The input's first byte picks whose messages the rest is (even: the
 * engine's, as the launcher reads them; odd: the user's), and whether
 * each message claims one descriptor (bit 1); the rest is a byte stream
 * that view_decode cuts into messages and view_check judges, in order,
 * until the stream ends or a message is refused.
 *
 * Checks: every message decoded lies inside the input; after a refusal
 * the conversation stays over; every accepted payload reads back within
 * its bounds (texts end at their NUL, stand-ins are two strings, items
 * a count and a string, capture ports ascending).  A violation abort()s.
 *
 *	./fuzz_view -max_total_time=60 tests/fuzz/corpus/view
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/view.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check(int ok)
{
	if (!ok)
		abort();
}

/* An accepted payload reads back inside its LEN bytes. */
static void
read_back(const struct view_msg *m)
{
	static uint16_t ports[VIEW_CAPTURE_MAX];
	struct view_hello h;
	const char *a, *b;
	uint32_t n;
	size_t k, i;

	switch (m->type) {
	case VIEW_HELLO:
		view_get_hello(m, &h);
		check(h.version == VIEW_VERSION && strlen(h.run_id) == 16);
		break;
	case VIEW_ENVSECRET:
	case VIEW_CA:
	case VIEW_HIDE:
	case VIEW_LOG:
	case VIEW_TRUST:
	case VIEW_ERROR:
		check(strlen(view_get_text(m)) + 1 == m->len);
		break;
	case VIEW_STANDIN:
		view_get_standin(m, &a, &b);
		check(strlen(a) > 0 && strlen(a) + strlen(b) + 2 == m->len);
		break;
	case VIEW_DENIED_ITEM:
	case VIEW_DISTRUST:
		a = view_get_item(m, &n);
		check(n > 0 && strlen(a) + 5 == m->len);
		break;
	case VIEW_CAPTURE:
		k = view_get_capture(m, &n, ports);
		check(k >= 1 && k <= VIEW_CAPTURE_MAX && 4 + 2 * k == m->len);
		for (i = 0; i < k; i++)
			check(ports[i] > (i > 0 ? ports[i - 1] : 0));
		break;
	default:
		break;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct view_order o;
	struct view_msg m;
	ssize_t used;
	size_t off = 1;
	int rc = VIEW_OK;

	if (size < 1)
		return 0;
	view_order_init(&o, data[0] & 1 ? VIEW_FROM_USER : VIEW_FROM_ENGINE);
	while (rc == VIEW_OK && off < size) {
		used = view_decode(data + off, size - off, &m);
		if (used <= 0)
			break;
		check((size_t)used <= size - off);
		check(m.data + m.len == data + off + (size_t)used);
		m.nfds = data[0] & 2 ? 1 : 0;
		if ((rc = view_check(&o, &m)) == VIEW_OK)
			read_back(&m);
		else
			check(view_order_done(&o));
		off += (size_t)used;
	}
	if (rc != VIEW_OK) {
		m.nfds = 0;
		check(view_check(&o, &m) != VIEW_OK);
	}
	return 0;
}
