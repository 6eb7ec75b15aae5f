/*
 * dnsstub.h: the DNS stub the sandbox's /etc/resolv.conf names.  Its
 * UDP and TCP sockets on 127.0.0.1:53 (and [::1]:53) are made inside the
 * sandbox's network namespace and served here, outside, by the engine.
 *
 * A program that asks it a question ignored the proxy variables (a
 * program that honours them gives the proxy the name in its CONNECT and
 * never resolves).  No real resolver is ever asked: every well-formed
 * query is answered at once by dnsstub_decide() (today REFUSED), so the
 * program fails fast instead of waiting for a server it cannot reach,
 * and the first query of each name is logged ("dns" record) and told to
 * the caller, who says it on the user's terminal.
 *
 * The query is untrusted: parsed strictly (one question, no compression,
 * labels of 1-63 bytes of letters, digits, '-' and '_', a name of at most
 * 253 bytes as policy/target.c reads hosts, at most DNSSTUB_QUERY_MAX
 * bytes); anything else gets FORMERR, or nothing when it is not a query.
 */
#ifndef PH_DNSSTUB_H
#define PH_DNSSTUB_H

#include <stddef.h>
#include <stdint.h>

#include "policy/target.h"

#define DNSSTUB_PORT 53
/* A longer query is refused: a question is at most 12 + 255 + 4 bytes,
 * and an EDNS OPT record adds a few more. */
#define DNSSTUB_QUERY_MAX 512
/* The longest answer: the query's header and question. */
#define DNSSTUB_ANSWER_MAX DNSSTUB_QUERY_MAX
/* Names remembered (logged, told) one by one; the rest are counted. */
#define DNSSTUB_NAMES_MAX 256
/* TCP connections served at once; more are closed at once. */
#define DNSSTUB_TCP_MAX 32

/* Response codes (RFC 1035 4.1.1). */
enum dnsstub_rcode {
	DNSSTUB_NOERROR = 0,
	DNSSTUB_FORMERR = 1,
	DNSSTUB_SERVFAIL = 2,
	DNSSTUB_NXDOMAIN = 3,
	DNSSTUB_NOTIMP = 4,
	DNSSTUB_REFUSED = 5,
};

/* What dnsstub_parse() found wrong. */
enum dnsstub_err {
	DNSSTUB_OK = 0,
	DNSSTUB_E_SHORT = -1, /* shorter than a header, or cut inside */
	DNSSTUB_E_LONG = -2, /* over DNSSTUB_QUERY_MAX */
	DNSSTUB_E_RESPONSE = -3, /* QR set: never answered (no loops) */
	DNSSTUB_E_OPCODE = -4, /* not a standard query */
	DNSSTUB_E_COUNTS = -5, /* not exactly one question, or answers */
	DNSSTUB_E_POINTER = -6, /* a compression pointer in the question */
	DNSSTUB_E_LABEL = -7, /* a label too long or of bad bytes */
	DNSSTUB_E_NAME = -8, /* not a host name as the policy reads them */
};

/* One parsed query. */
struct dnsstub_query {
	uint16_t id;
	int rd; /* recursion desired, echoed */
	uint16_t qtype, qclass;
	size_t qend; /* bytes of header and question */
	struct target_host host; /* the name, canonical (lower case) */
};

/*
 * Parses the N bytes of the query P into Q.  Returns DNSSTUB_OK or a
 * DNSSTUB_E_* code; Q->id is set whenever N holds a header.
 */
int dnsstub_parse(const uint8_t *p, size_t n, struct dnsstub_query *q);

/*
 * The answer a well-formed query gets: the one place that decides it
 * (issue 12 answers the policy's names here).  Today DNSSTUB_REFUSED.
 */
enum dnsstub_rcode dnsstub_decide(const struct dnsstub_query *q);

/* The answer's word for the audit log ("refused"). */
const char *dnsstub_rcode_name(enum dnsstub_rcode);

/* QTYPE as text: "A", "AAAA", "TXT", ..., else "TYPEnnn" (RFC 3597). */
const char *dnsstub_qtype_name(uint16_t qtype, char buf[12]);

/*
 * The response to the N-byte query P, parsed with result ERR into Q, in
 * OUT (DNSSTUB_ANSWER_MAX bytes).  Returns its length, or 0 when nothing
 * is to be sent (not a query, or too short to hold an id).
 */
size_t dnsstub_respond(const uint8_t *p, size_t n, int err,
    const struct dnsstub_query *q, uint8_t *out);

/*
 * TCP framing (RFC 1035 4.2.2): the length a 2-byte prefix announces, or
 * 0 when it cannot be a query (shorter than a header, longer than
 * DNSSTUB_QUERY_MAX): the connection is then closed.
 */
size_t dnsstub_tcp_len(const uint8_t prefix[2]);

/* --- the server ----------------------------------------------------------- */

struct audit;
struct event_base;
struct dnsstub;

struct dnsstub_config {
	struct audit *audit; /* borrowed; NULL: nothing logged */
	/* The first query of NAME (a canonical host name); may be NULL. */
	void (*looked_up)(void *arg, const char *name, const char *qtype);
	void *arg;
	/* The sandbox's own host name (programs look themselves up), not
	 * logged or told, like "localhost" and "*.localhost"; may be NULL. */
	const char *own_name;
};

/* A stub on BASE, with no socket yet.  NULL when out of memory. */
struct dnsstub *dnsstub_new(struct event_base *, const struct dnsstub_config *);

/* Is FD a socket bound to port DNSSTUB_PORT (a stub's socket)? */
int dnsstub_is_stub_fd(int fd);

/*
 * Serves FD: a UDP socket, or a listening TCP socket (made non-blocking
 * here), owned by the stub from then on.  Returns 0 or -1.
 */
int dnsstub_listen_fd(struct dnsstub *, int fd);

/* Queries answered so far (each datagram or TCP message is one). */
uint64_t dnsstub_queries(const struct dnsstub *);

/*
 * Closes the sockets and connections; logs one record for the names past
 * DNSSTUB_NAMES_MAX, if any; frees S.  NULL does nothing.
 */
void dnsstub_free(struct dnsstub *);

#endif /* PH_DNSSTUB_H */
