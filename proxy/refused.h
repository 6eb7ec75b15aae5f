/*
 * refused.h: what the sandbox's kernel refused under capture (issue 12).
 *
 * With capture every destination is local in the sandbox's network
 * namespace (local routes 0.0.0.0/0 and ::/0 on lo).  A connection to a
 * port no capture listener holds is therefore answered by the sandbox's
 * own kernel with a TCP RST, and a UDP datagram to a port no socket
 * holds (anything but the DNS stub's port 53) with an ICMP or ICMPv6
 * port unreachable.  Both are received by the sandbox's own kernel,
 * where raw sockets made inside the sandbox (IPv4 TCP and ICMP, IPv6
 * TCP and ICMPv6: netns/net.h, handed out) let the engine see them:
 * this module filters them in the kernel (classic BPF), reads them on
 * the engine's loop, and writes one audit record per destination
 * (host, port, TCP or UDP), telling the run's denied callback as a
 * denied request does.  Raw sockets, not a packet socket on lo: the
 * last close of a packet socket waits for an RCU grace period
 * (synchronize_net, 10-16 ms), at the engine's exit, which `pinhole
 * run` waits for; a raw socket's does not (bench/README.md).
 *
 * Which frames are events (refused_parse), exactly:
 * - TCP "refused": a segment with RST and ACK set, SYN and FIN clear and
 *   sequence number 0: the kernel's answer to a SYN for a port with no
 *   listener (RFC 793: SEQ=0 when the offending segment had no ACK).
 *   The destination the program tried is the segment's SOURCE address
 *   and port.  A captured connection the proxy aborts (SO_LINGER 0) also
 *   sends RST|ACK, but with its send sequence number, which is 0 only by
 *   a 1 in 2^32 chance of the random ISN: ports that are captured are
 *   not logged here (the proxy logs those connections itself).
 * - UDP "unreachable": ICMP type 3 code 3, or ICMPv6 type 1 code 4,
 *   quoting the original IP header and at least the 8 bytes of its UDP
 *   header; the destination is the quoted header's.  A quoted datagram
 *   from source port 53 is the DNS stub's answer to a program that no
 *   longer waits for it: not an event.
 * - Never an event: a destination on loopback (127.0.0.0/8, ::1,
 *   ::ffff:127.0.0.0/104), the program's own local services; an IPv4
 *   fragment; an outer IPv6 header followed by an extension header (the
 *   kernel's RSTs and ICMPv6 errors carry none, and the header the
 *   watcher makes for an IPv6 raw socket's datagram has none); in the
 *   quoted IPv6
 *   datagram, hop-by-hop, routing and destination options headers and a
 *   first fragment's header are skipped (at most 8), any other (AH, ESP,
 *   no next header, a later fragment) makes it not an event; anything
 *   truncated or inconsistent (IHL under 5, a length past the frame).
 * Checksums are not checked: the kernel leaves them to the device on lo.
 *
 * ICMP itself (ping) never reaches lo: the command cannot make an ICMP
 * socket (no CAP_NET_RAW, and a new network namespace's ping_group_range
 * is "1 0").  The sandbox's supervisor refuses those socket() calls as
 * the kernel would and says so on a socket pair of its own
 * (netns/sockguard.h: one byte per kind, each at most once); the notes
 * below read it and write one record per kind: method "ICMP" (a ping
 * socket, IPv4 or IPv6) or "RAW" (a raw socket), via "capture", decision
 * "deny", no host (a socket has no destination yet).
 */
#ifndef PH_REFUSED_H
#define PH_REFUSED_H

#include <stddef.h>
#include <stdint.h>

/* Destinations logged one by one; refusals past them are counted. */
#define REFUSED_DESTS_MAX 1024
/* Frames read per wake-up, then the loop's other events have a turn. */
#define REFUSED_BURST 64
/* Bytes of a frame the filter passes: an ICMPv6 error is at most 1280
 * bytes (RFC 4443 2.4), an ICMP one 576; a longer frame is cut, and the
 * parser then finds it truncated (not an event). */
#define REFUSED_SNAP 2048

enum refused_kind {
	REFUSED_NONE = 0, /* not an event */
	REFUSED_TCP, /* a connection refused: no listener on the port */
	REFUSED_UDP, /* a datagram no socket took: port unreachable */
};

/* One event: the destination the program tried. */
struct refused_event {
	enum refused_kind kind;
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* network order: 4 bytes (AF_INET) or 16 */
	uint16_t port;
};

/*
 * Parses one frame of N bytes as lo carries it (a 14-byte Ethernet
 * header, then IPv4 or IPv6; the watcher makes one from each raw
 * socket's datagram) into EV.  Returns
 * its kind; REFUSED_NONE (EV zeroed) when it is not an event (above).
 */
enum refused_kind
refused_parse(const uint8_t *frame, size_t n, struct refused_event *ev);

/*
 * EV's audit reason, one line, in BUF (LEN bytes), with HOST the name or
 * address shown ("port 5555 is not captured: ...").  Returns BUF.
 */
const char *refused_reason(
    const struct refused_event *ev, const char *host, char *buf, size_t len);

/* --- the watcher ---------------------------------------------------------- */

struct audit;
struct event_base;
struct refused;
struct synth;

struct refused_config {
	struct audit *audit; /* borrowed; NULL: nothing logged */
	/* The DNS stub's synthetic addresses, shown as their names;
	 * borrowed; NULL: addresses are shown as they are. */
	struct synth *synth;
	/* Each destination refused, once; may be NULL. */
	void (*denied)(void *arg, const char *host, unsigned port);
	void *denied_arg;
};

/* The raw sockets watched at most: IPv4 TCP and ICMP, IPv6 TCP, ICMPv6. */
#define REFUSED_SOCKETS 4

/*
 * A watcher on BASE, watching nothing yet.  Returns NULL after saying
 * why.
 */
struct refused *refused_new(struct event_base *, const struct refused_config *);

/*
 * Watches FD, a raw socket (IPv4 TCP or ICMP, IPv6 TCP or ICMPv6) made
 * in the sandbox's network namespace, on R's loop: attaches its filter
 * and logs each event once per destination (across R's sockets).  FD is
 * taken over in every case.  Returns 0, or -1 after saying why (not one
 * of those kinds, or a second socket of a kind).
 */
int refused_watch(struct refused *r, int fd);

/* Events seen so far (every refusal, logged or not). */
uint64_t refused_events(const struct refused *);

/*
 * Writes one record for the refusals past REFUSED_DESTS_MAX
 * destinations, if any, and says how many datagrams the sockets' full
 * queues dropped, if any; closes the sockets; frees R.  NULL does nothing.
 */
void refused_free(struct refused *);

/* --- the supervisor's notes --------------------------------------------- */

/* The kinds of ICMP socket refused in the sandbox. */
enum refused_note {
	REFUSED_NOTE_NONE = 0, /* not a note */
	REFUSED_NOTE_ICMP, /* a ping socket, IPv4 ('I') */
	REFUSED_NOTE_ICMPV6, /* a ping socket, IPv6 ('6') */
	REFUSED_NOTE_RAW, /* a raw socket ('R') */
};

/*
 * The note a message of N bytes from the supervisor is: one byte, 'I',
 * '6' or 'R' (sockguard.h's enum sockguard_note); anything else is
 * REFUSED_NOTE_NONE.
 */
enum refused_note refused_note_parse(const uint8_t *msg, size_t n);

/* The note's audit method ("ICMP", "RAW") and reason, one line. */
const char *refused_note_method(enum refused_note);
const char *refused_note_reason(enum refused_note);

/* The note's target on the run's last line: "ICMP", "ICMPv6", "RAW". */
const char *refused_note_what(enum refused_note);

struct refused_notes;

/*
 * Reads the notes from FD, the engine's end of the supervisor's
 * AF_UNIX SOCK_SEQPACKET pair, on BASE: one record per kind, the first
 * time it comes, and the denied callback told (host: refused_note_what,
 * port 0).  CF->synth is not used.  FD is taken over in every case.
 * Returns NULL after saying why.
 */
struct refused_notes *
refused_notes_new(struct event_base *, const struct refused_config *, int fd);

/*
 * Logs the notes still unread (as they arrive: the denied callback is
 * told), closes the socket and frees N.  NULL does nothing.
 */
void refused_notes_free(struct refused_notes *);

#ifdef REFUSED_INTERNAL
#include <linux/filter.h>
/*
 * The classic BPF program attached to a raw socket of FAMILY (AF_INET:
 * it sees the IP header first; AF_INET6: the transport header) and
 * PROTO (IPPROTO_TCP, IPPROTO_ICMP, IPPROTO_ICMPV6), and its length;
 * NULL (LEN 0) for another kind.
 */
const struct sock_filter *refused_filter(int family, int proto, size_t *len);
#endif

#endif /* PH_REFUSED_H */
