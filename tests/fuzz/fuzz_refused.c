/*
 * fuzz_refused.c: libFuzzer target for proxy/refused.c, the reader of
 * the frames the sandbox's lo carries, as the engine's raw sockets
 * read them (sandbox bytes: a program there chooses what it sends, and so what the
 * kernel quotes back).
 *
 * The input is one frame as lo carries it (a 14-byte Ethernet header,
 * then IPv4 or IPv6; the watcher makes one from a raw socket's read), and the same bytes as one message of the
 * sandbox supervisor's notes (refused_note_parse).
 *
 * Checks: an event is TCP or UDP, of AF_INET or AF_INET6, never on
 * loopback, and the kernel filter of the raw socket that reads it (run
 * here by a small classic BPF interpreter) passes it, so the filter
 * never hides an event the reader would take; a non-event leaves
 * the event zeroed; the reason fits any buffer.  A violation abort()s.
 *
 *	./fuzz_refused -max_total_time=60 tests/fuzz/corpus/refused
 */
#define REFUSED_INTERNAL

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <linux/filter.h>
#include <sys/socket.h>

#include "proxy/refused.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check(int ok)
{
	if (!ok)
		abort();
}

/* Loads SIZE bytes at K of P (N bytes) into *A; -1 past the end. */
static int
load(const uint8_t *p, size_t n, uint32_t k, unsigned size, uint32_t *a)
{
	unsigned i;

	if (k > n || n - k < size)
		return -1;
	for (*a = 0, i = 0; i < size; i++)
		*a = *a << 8 | p[k + i];
	return 0;
}

/*
 * The filter's verdict on frame P (N bytes): run on what the raw socket
 * of its protocol reads (IPv4: from the IP header; IPv6: past it); 0
 * when no such socket is watched.
 */
static uint32_t
run_filter(const uint8_t *p, size_t n)
{
	size_t len = 0, pc = 0, steps = 0;
	const struct sock_filter *f = NULL;
	uint32_t a = 0, x = 0;
	unsigned size;

	if (n >= 14 + 20 && p[12] == 0x08 && p[13] == 0x00)
		f = refused_filter(AF_INET, p[14 + 9], &len), p += 14, n -= 14;
	else if (n >= 14 + 40 && p[12] == 0x86 && p[13] == 0xdd)
		f = refused_filter(AF_INET6, p[14 + 6], &len), p += 54, n -= 54;
	if (f == NULL)
		return 0;

	while (pc < len && steps++ < len) {
		const struct sock_filter *i = &f[pc++];

		size = BPF_SIZE(i->code) == BPF_W ? 4
		    : BPF_SIZE(i->code) == BPF_H  ? 2
		                                  : 1;
		switch (BPF_CLASS(i->code)) {
		case BPF_LD:
			if (load(p, n,
			        BPF_MODE(i->code) == BPF_IND ? x + i->k : i->k,
			        size, &a) != 0)
				return 0;
			break;
		case BPF_LDX: /* only 4*([k]&0xf) */
			if (load(p, n, i->k, 1, &x) != 0)
				return 0;
			x = (x & 0xf) * 4;
			break;
		case BPF_ALU: /* only AND */
			a &= i->k;
			break;
		case BPF_JMP: /* only JEQ and JSET */
			if (BPF_OP(i->code) == BPF_JEQ)
				pc += a == i->k ? i->jt : i->jf;
			else
				pc += (a & i->k) != 0 ? i->jt : i->jf;
			break;
		case BPF_RET:
			return i->k;
		default:
			abort();
		}
	}
	abort(); /* jumps only forward: it always returns */
}

static void
check_event(const uint8_t *data, size_t size, const struct refused_event *ev)
{
	static const uint8_t one[16] = {[15] = 1};
	char host[64], reason[8], big[256];

	check(ev->kind == REFUSED_TCP || ev->kind == REFUSED_UDP);
	check(ev->family == AF_INET || ev->family == AF_INET6);
	if (ev->family == AF_INET)
		check(ev->addr[0] != 127);
	else
		check(memcmp(ev->addr, one, 16) != 0);
	check(run_filter(data, size) == REFUSED_SNAP);
	check(inet_ntop(ev->family, ev->addr, host, sizeof(host)) != NULL);
	check(refused_reason(ev, host, reason, sizeof(reason)) == reason);
	check(strlen(reason) == sizeof(reason) - 1);
	refused_reason(ev, host, big, sizeof(big));
	check(strlen(big) < sizeof(big) - 1);
}

/*
 * The same bytes as one message of the supervisor's notes: a note only
 * when one byte long, and then one of the three; its texts are there.
 */
static void
check_note(const uint8_t *data, size_t size)
{
	enum refused_note k = refused_note_parse(data, size);

	check(k == REFUSED_NOTE_NONE || size == 1);
	check(k == REFUSED_NOTE_NONE || k == REFUSED_NOTE_ICMP ||
	    k == REFUSED_NOTE_ICMPV6 || k == REFUSED_NOTE_RAW);
	check(strlen(refused_note_method(k)) > 0 &&
	    strlen(refused_note_reason(k)) > 0 &&
	    strlen(refused_note_what(k)) > 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct refused_event zero;
	struct refused_event ev;
	enum refused_kind k = refused_parse(data, size, &ev);

	check(k == ev.kind);
	if (k == REFUSED_NONE)
		check(memcmp(&ev, &zero, sizeof(ev)) == 0);
	else
		check_event(data, size, &ev);
	check_note(data, size);
	return 0;
}
