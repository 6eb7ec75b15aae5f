/*
 * dnsstub.h: the DNS stub the sandbox's /etc/resolv.conf names.  Its
 * UDP and TCP sockets on port 53 (127.0.0.1 and [::1]; with capture, the
 * wildcard, so a query sent to any address reaches it) are made inside
 * the sandbox's network namespace and served here, outside, by the
 * engine.
 *
 * A program that asks it a question ignored the proxy variables (a
 * program that honours them gives the proxy the name in its CONNECT and
 * never resolves).  No real resolver is ever asked: every well-formed
 * query is answered at once by dnsstub_decide(), and the first query of
 * each name is logged ("dns" record) and told to the caller, who says it
 * on the user's terminal.  Without capture every name is REFUSED, so the
 * program fails fast instead of waiting for a server it cannot reach.
 * With capture (issue 12) a name the policy may allow gets a synthetic
 * address (synth.h), which the proxy maps back to the name when the
 * program connects to it, and every other name NXDOMAIN: the lookup
 * fails at once, and with no search list in the sandbox's resolv.conf
 * (and the host name "pinhole", no domain) a resolver tries nothing
 * else.  The sandbox cannot use lookups to leak data: no name leaves.
 *
 * The query is untrusted: parsed strictly (one question, no compression,
 * labels of 1-63 bytes of letters, digits, '-' and '_', a name of at most
 * 253 bytes as policy/target.c reads hosts, at most DNSSTUB_QUERY_MAX
 * bytes); anything else gets FORMERR, or nothing when it is not a query.
 * An EDNS OPT record in the query is allowed and ignored: the answer has
 * none (the stub speaks plain DNS, RFC 6891 7: the client falls back), and
 * is small enough for any UDP payload (never TC).
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
/* The longest answer: the query's header and question (at most 12 + 255
 * + 4 bytes) and one address record (at most 28). */
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

struct policy;
struct synth;

/* What a well-formed query is answered (dnsstub_decide). */
struct dnsstub_answer {
	enum dnsstub_rcode rcode;
	int ra; /* "recursion available": set with capture */
	uint16_t rtype; /* the one record: 1 (A), 28 (AAAA); 0: none */
	uint8_t addr[16]; /* its address, 4 or 16 bytes */
	/* The audit log's "answer": "synthetic", "nodata", "nxdomain",
	 * "refused", "servfail" (static). */
	const char *word;
};

/*
 * The answer to the well-formed query Q: the one place that decides it.
 * Without SYNTH (no capture) or without a policy P: REFUSED.  Else a name
 * P may allow (policy_host_may_allow) gets, in class IN, an A record of
 * its synthetic IPv4 address or an AAAA record of its IPv6 one
 * (synth_map, TTL SYNTH_TTL), and any other type or class NOERROR with no
 * record (NODATA); every other name NXDOMAIN (whatever the type: no name
 * exists but those the policy may allow).  SERVFAIL when out of memory.
 */
void dnsstub_decide(const struct dnsstub_query *q, const struct policy *p,
    struct synth *synth, struct dnsstub_answer *a);

/* An rcode's word for the audit log ("refused", "nxdomain"). */
const char *dnsstub_rcode_name(enum dnsstub_rcode);

/* QTYPE as text: "A", "AAAA", "TXT", ..., else "TYPEnnn" (RFC 3597). */
const char *dnsstub_qtype_name(uint16_t qtype, char buf[12]);

/*
 * The response to the N-byte query P, parsed with result ERR into Q and
 * (when ERR is DNSSTUB_OK) decided as A, in OUT (DNSSTUB_ANSWER_MAX
 * bytes): the header, the question exactly as sent (a name in another
 * case is echoed so: 0x20 randomisation keeps working), and A's record,
 * named by a pointer to the question.  Returns its length, or 0 when
 * nothing is to be sent (not a query, or too short to hold an id).
 */
size_t dnsstub_respond(const uint8_t *p, size_t n, int err,
    const struct dnsstub_query *q, const struct dnsstub_answer *a,
    uint8_t *out);

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
	/* The first query of NAME (a canonical host name), when the name
	 * does not resolve (NXDOMAIN, REFUSED, SERVFAIL: the program is
	 * about to fail); a name answered is only logged.  May be NULL. */
	void (*looked_up)(void *arg, const char *name, const char *qtype);
	void *arg;
	/* The sandbox's own host name (programs look themselves up), not
	 * logged or told, like "localhost" and "*.localhost", and REFUSED
	 * as without capture; may be NULL. */
	const char *own_name;
	/* Capture: the synthetic addresses (borrowed, outlives the stub);
	 * NULL: every name is refused. */
	struct synth *synth;
	/* The policy in force now (the engine may have reloaded it), asked
	 * at each query; NULL, or returning NULL: every name is refused. */
	const struct policy *(*policy)(void *arg);
	void *policy_arg;
};

/* A stub on BASE, with no socket yet.  NULL when out of memory. */
struct dnsstub *dnsstub_new(struct event_base *, const struct dnsstub_config *);

/* Is FD a socket bound to port DNSSTUB_PORT (a stub's socket)? */
int dnsstub_is_stub_fd(int fd);

/*
 * Serves FD: a UDP socket, or a listening TCP socket (made non-blocking
 * here), owned by the stub from then on.  A UDP socket is asked for each
 * datagram's destination (IP_PKTINFO, IPV6_RECVPKTINFO), and its answer
 * leaves from that address: on a wildcard socket (capture) a query to
 * 192.0.2.53 is answered from 192.0.2.53, as the program expects.
 * Returns 0 or -1.
 */
int dnsstub_listen_fd(struct dnsstub *, int fd);

/* Queries answered so far (each datagram or TCP message is one). */
uint64_t dnsstub_queries(const struct dnsstub *);

/*
 * Closes the sockets and connections; logs one record for the names past
 * DNSSTUB_NAMES_MAX, if any, for each answer they got (its "count"); frees
 * S.  NULL does nothing.
 */
void dnsstub_free(struct dnsstub *);

#endif /* PH_DNSSTUB_H */
