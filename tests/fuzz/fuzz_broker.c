/*
 * fuzz_broker.c: libFuzzer target for the broker child's side of the
 * conversation (view.h, VIEW_FROM_CLIENT): what a client of `pinhole
 * proxy --broker` may send -- REQUEST, then LISTENERS.., STOP or ERROR.
 *
 * The input is a sequence of records, each one byte then one view
 * message (header and payload, as view_decode reads them): the byte's
 * value modulo 3 is how many descriptors the message claims to have
 * come with (simulated: no real descriptors).  view_check judges each
 * message, in order, on one order initialised VIEW_FROM_CLIENT, until
 * the input ends or a message is refused.
 *
 * Checks (a violation abort()s): every decoded message lies inside the
 * input; only REQUEST, LISTENERS, STOP and ERROR are ever accepted, at
 * most one REQUEST, and nothing but ERROR before it; an accepted REQUEST
 * reads back (view_get_request) as this version, known flags, a policy
 * name of [A-Za-z0-9._-]{1,64}, a command of printable ASCII of at most
 * VIEW_CMD_MAX bytes, both inside the payload, with at most one
 * descriptor; LISTENERS never brings more descriptors than announced;
 * STOP only once they all came; after a refusal, a STOP or an ERROR the
 * conversation is over and every further message is refused.
 *
 *	./fuzz_broker -max_total_time=30 tests/fuzz/corpus/broker
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

static uint32_t
u32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static int
policy_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

/* An accepted REQUEST, read back as the broker's child reads it. */
static void
check_request(const struct view_msg *m)
{
	struct view_request r;
	const char *end = (const char *)m->data + m->len;
	size_t np, nc, i;

	view_get_request(m, &r);
	check(r.version == VIEW_VERSION);
	check((r.flags & ~(uint32_t)VIEW_REQ_FLAGS) == 0);
	check(r.policy == (const char *)m->data + 8);
	np = strnlen(r.policy, (size_t)(end - r.policy));
	check(np >= 1 && np <= VIEW_POLICY_NAME_MAX && r.policy + np < end);
	for (i = 0; i < np; i++)
		check(policy_char(r.policy[i]));
	check(r.cmd == r.policy + np + 1 && r.cmd < end);
	nc = strnlen(r.cmd, (size_t)(end - r.cmd));
	check(nc <= VIEW_CMD_MAX && r.cmd + nc + 1 == end);
	for (i = 0; i < nc; i++)
		check(r.cmd[i] >= 0x20 && r.cmd[i] <= 0x7e);
	check(m->nfds <= 1);
}

/* What the conversation has accepted so far. */
struct seen {
	unsigned requests;
	uint32_t total, got; /* LISTENERS: announced, came */
};

static void
check_accepted(
    struct seen *s, const struct view_order *o, const struct view_msg *m)
{
	switch (m->type) {
	case VIEW_REQUEST:
		check(++s->requests == 1);
		check_request(m);
		break;
	case VIEW_LISTENERS:
		check(s->requests == 1 && m->len == 8);
		check(m->nfds >= 1 && u32(m->data + 4) == (uint32_t)m->nfds);
		check(s->total == 0 || u32(m->data) == s->total);
		s->total = u32(m->data);
		s->got += (uint32_t)m->nfds;
		check(s->got <= s->total);
		break;
	case VIEW_STOP:
		check(s->requests == 1 && s->total > 0 && s->got == s->total);
		check(m->len == 4 && m->nfds == 0 && view_order_done(o));
		break;
	case VIEW_ERROR:
		check(m->nfds == 0 && m->len >= 2 && m->data[m->len - 1] == 0);
		check(strlen((const char *)m->data) + 1 == m->len);
		check(view_order_done(o));
		break;
	default:
		check(0); /* an engine's message, or no type at all */
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct view_order o;
	struct view_msg m;
	struct seen s = {0, 0, 0};
	ssize_t used;
	size_t off = 0;
	int rc = VIEW_OK, nfds;

	view_order_init(&o, VIEW_FROM_CLIENT);
	while (off + 1 < size) {
		nfds = data[off++] % 3;
		used = view_decode(data + off, size - off, &m);
		if (used <= 0)
			break;
		check((size_t)used <= size - off);
		check(m.data + m.len == data + off + (size_t)used);
		m.nfds = nfds;
		if (rc != VIEW_OK || view_order_done(&o)) {
			/* Nothing after a failure or the end. */
			check(view_check(&o, &m) != VIEW_OK);
			check(view_order_done(&o));
		} else if ((rc = view_check(&o, &m)) == VIEW_OK)
			check_accepted(&s, &o, &m);
		else
			check(view_order_done(&o));
		off += (size_t)used;
	}
	return 0;
}
