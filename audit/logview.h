/*
 * logview.h: the reviewer's view of an audit log (pinhole log).
 *
 * Reads JSON Lines records as audit/audit.h writes them and aggregates
 * them without keeping them: denied requests by (host, port, reason),
 * connections whose client refused the run CA by the same, traffic by
 * (host, port), and totals.  Memory is bounded whatever the
 * input: at most LOGVIEW_KEYS_MAX distinct hosts and as many distinct
 * denials are kept, the rest is counted in an "others" bucket, and long
 * strings are cut.  The log holds secret names only; they are printed as
 * names.  Every string taken from the log is printed with control bytes
 * escaped, so a log cannot drive the reviewer's terminal.  The printers
 * live in logprint.h.
 */
#ifndef PH_LOGVIEW_H
#define PH_LOGVIEW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A longer line is malformed, and logview_read() does not store it. */
#define LOGVIEW_LINE_MAX (1024 * 1024)
/* Distinct hosts, and distinct denials, kept before "others". */
#define LOGVIEW_KEYS_MAX 10000

struct logview;

/*
 * The class of a request: each request is counted in exactly one, the
 * same in every section of the review, so that the classes add up to the
 * requests (per host and in the totals).  A request is counted by its
 * "request" record (allowed or denied) and moves out of "allowed" when
 * its "end" record says what became of it.  Looked-up names ("dns"
 * records) are not requests and are counted apart (lookups).
 */
enum logview_class {
	LOGVIEW_CLASS_ALLOWED, /* allowed, and went to the server */
	LOGVIEW_CLASS_DENIED, /* denied by the policy */
	LOGVIEW_CLASS_REFUSED, /* allowed, then refused by the proxy (403) */
	LOGVIEW_CLASS_FAILED, /* allowed, then no answer upstream (502, 504) */
	LOGVIEW_CLASS_DISTRUST, /* allowed, then the client refused the run CA */
	LOGVIEW_CLASS_NCLASSES
};

/* The class's key in the JSON output and column: "allowed", ... */
const char *logview_class_name(enum logview_class);

/* What the class means, for the totals: "allowed, then ...". */
const char *logview_class_words(enum logview_class);

struct logview_totals {
	uint64_t records; /* valid records that passed the filter */
	uint64_t requests; /* "request" records: the sum of n[] */
	uint64_t n[LOGVIEW_CLASS_NCLASSES]; /* requests by class */
	uint64_t lookups; /* queries to the sandbox's DNS stub ("dns") */
	uint64_t bytes_up;
	uint64_t bytes_down;
	uint64_t malformed; /* lines reported as malformed */
	uint64_t first_malformed; /* line number of the first one, or 0 */
	uint64_t incomplete; /* last line without "\n": ignored */
	const char *first_ts; /* earliest and latest "ts", or NULL */
	const char *last_ts;
};

/* Returns a new, empty view, or NULL when out of memory. */
struct logview *logview_new(void);

/* Frees LV.  NULL does nothing. */
void logview_free(struct logview *);

/*
 * Keeps only records whose host equals HOST, compared case-insensitively
 * (may be called several times: any of the hosts).  Call before feeding.
 * Returns 0, or -1 when out of memory.
 */
int logview_filter_host(struct logview *, const char *host);

/*
 * Adds one line of LEN bytes (without its "\n"; need not be
 * NUL-terminated), LINENO being its line number.  A blank line is
 * skipped.  Returns 0, or -1 when the line is malformed (not JSON, not an
 * object, a field of the wrong type, a missing or unknown event, longer
 * than LOGVIEW_LINE_MAX): it is counted, and logview_why() says why.
 */
int
logview_feed(struct logview *, const char *line, size_t len, uint64_t lineno);

/* Why the last logview_feed() failed, in one line: "not an object". */
const char *logview_why(const struct logview *);

/*
 * Reads IN line by line up to its current end and feeds each line.  A
 * malformed line is reported on ERR as "NAME:LINE: malformed record
 * (why)".  A last line without "\n" (a writer in mid-append) is ignored
 * and counted as incomplete, not as malformed.  A line longer than
 * LOGVIEW_LINE_MAX is skipped without being stored.  Returns 0, or -1 on
 * a read error (errno set).
 */
int logview_read(struct logview *, FILE *in, const char *name, FILE *err);

/* Fills T with the totals; its strings live as long as LV. */
void logview_totals(const struct logview *, struct logview_totals *t);

/*
 * What the printers (logprint.c) read: the aggregates, the advice for a
 * denial, and the escaping of every string taken from the log.
 */

/* Secret names kept per host before ",...". */
#define LOGVIEW_SECRETS_MAX 16
/* An allow line or a note: a kept path, two hosts and a few words. */
#define LOGVIEW_ADVICE_MAX 1662

/* How a connection arrived (the "via" field): bits of an entry's vias. */
#define LOGVIEW_VIA_PROXY 0x1 /* "proxy": the explicit proxy */
#define LOGVIEW_VIA_SOCKS 0x2 /* "socks" */
#define LOGVIEW_VIA_CAPTURE 0x4 /* "capture": a program that ignores both */

/* What the sandbox's DNS stub answered (a "dns" record's "answer"). */
#define LOGVIEW_ANSWER_SYNTHETIC 0x1 /* an allowed name: its address */
#define LOGVIEW_ANSWER_NODATA 0x2 /* an allowed name, another type */
#define LOGVIEW_ANSWER_NXDOMAIN 0x4 /* the policy names no such host */
#define LOGVIEW_ANSWER_REFUSED 0x8 /* no capture: the stub answers none */
#define LOGVIEW_ANSWER_OTHER 0x10 /* none given, or another */

/* One aggregate: a host:port, or a denial (reason set).  Read-only. */
struct logview_entry {
	char *host; /* lower case; "" no host; NULL "others" */
	int port; /* -1: none */
	char *reason; /* denials: the reason, maybe cut */
	int reason_cut;
	char *path; /* denials: the first path, method, rule */
	int path_cut;
	char *method;
	char *rule;
	uint64_t records, requests; /* requests: the sum of n[] */
	/* by class; a denial has only DENIED and REFUSED, a distrust
	 * entry only DISTRUST (logview_entry_count: the sum) */
	uint64_t n[LOGVIEW_CLASS_NCLASSES];
	uint64_t bytes_up, bytes_down;
	char *secrets[LOGVIEW_SECRETS_MAX];
	size_t nsecrets;
	int more_secrets;
	unsigned vias; /* LOGVIEW_VIA_* of its records; 0: none said */
	/* hosts: requests that arrived by capture, and of them denied */
	uint64_t captured, captured_denied;
	int udp; /* hosts: one of them was UDP (refused in the sandbox) */
	int icmp; /* hosts: one was an ICMP or raw socket (no host) */
	unsigned answers; /* lookups: LOGVIEW_ANSWER_* given */
};

/*
 * The requests an entry stands for, the sum of its classes: for a host,
 * its requests; for a denial, those denied by the policy and those
 * refused by the proxy; for a distrust entry, DISTRUST; for a looked-up
 * name, its lookups: ALLOWED those answered (a synthetic address, or no
 * data for another type), DENIED the others (NXDOMAIN, REFUSED).
 */
uint64_t logview_entry_count(const struct logview_entry *);

/*
 * LOOKUPS: names looked up directly ("dns" records; count in requests).
 * CAPTURED: the hosts some of whose requests arrived by capture.
 */
enum logview_list {
	LOGVIEW_DENIALS,
	LOGVIEW_HOSTS,
	LOGVIEW_LOOKUPS,
	LOGVIEW_DISTRUST,
	LOGVIEW_CAPTURED,
};

/*
 * The entries of one list sorted by CMP (on const struct logview_entry
 * *const *), the "others" bucket last when used; *NP says how many.  The
 * caller frees the array.  NULL when out of memory.
 */
const struct logview_entry **logview_sorted(const struct logview *,
    enum logview_list, int (*cmp)(const void *, const void *), size_t *np);

/* The kinds of denial, as policy_decide() words their reasons. */
enum logview_kind {
	LOGVIEW_NORULE,
	LOGVIEW_PORT,
	LOGVIEW_PATH,
	LOGVIEW_METHOD,
	LOGVIEW_DENYRULE,
	LOGVIEW_PLAIN,
	LOGVIEW_PRIVATE,
	LOGVIEW_UNCAPTURED, /* a port no listener captures: allow it */
	LOGVIEW_UDP, /* UDP other than DNS: never leaves the sandbox */
	LOGVIEW_ICMP, /* an ICMP or raw socket (method ICMP, RAW; no host) */
	LOGVIEW_OTHER,
};

/* What would let a denial through, if an allow can. */
struct logview_advice {
	enum logview_kind kind;
	char allow[LOGVIEW_ADVICE_MAX]; /* the allow line, or "" */
	char note[LOGVIEW_ADVICE_MAX]; /* or a note, or "" */
};

/* Works out the advice for the denial D. */
void logview_advise(const struct logview_entry *d, struct logview_advice *);

/* The name of kind K in the JSON output: "no-rule", "port", ... */
const char *logview_kind_name(enum logview_kind);

/*
 * The hint for a host some of whose requests arrived by capture (list
 * CAPTURED): ALLOWED, when some were let through, says that the program
 * ignores the proxy variables and was captured; DENIED, when some were
 * not, "to let it through: " and the allow line, or why no allow can
 * (UDP).  (Not starting with "allow": only an allow line does.)
 * Either may be "".
 */
void logview_capture_hint(const struct logview_entry *h,
    char allowed[LOGVIEW_ADVICE_MAX], char denied[LOGVIEW_ADVICE_MAX]);

/* "proxy", "socks", "capture": the name of via bit V (one bit). */
const char *logview_via_name(unsigned v);

/* "synthetic", "nxdomain", ...: the name of answer bit A (one bit). */
const char *logview_answer_name(unsigned a);

/*
 * Prints S to F with each unsafe byte as \xNN: the bytes of C0 and C1
 * controls and DEL, of invalid UTF-8, and of the valid characters that
 * could reorder, hide or break a line (Unicode format characters such as
 * the bidirectional overrides and isolates, zero-width characters, line
 * and paragraph separators, other invisible ones).  Printable ASCII and
 * other valid UTF-8 pass as they are.
 */
void logview_esc_put(FILE *f, const char *s);

/* Copies S to DST (N > 0 bytes) as logview_esc_put() prints it, cut. */
void logview_esc_buf(char *dst, size_t n, const char *s);

/*
 * A broker's central log holds the records of many clients, each record
 * with "client_uid" (and "client_pid", "client_cmd"), and the broker's
 * refusals ("client" records with "decision": "deny").  Per uid: its
 * command names, its sandboxes (distinct "sandbox" ids), its requests
 * and how many were denied.  At most LOGVIEW_CLIENTS_MAX uids are kept,
 * the rest count under "others"; as many refusals, by (uid, policy,
 * reason).
 */
#define LOGVIEW_CLIENTS_MAX 1024
/* A refusal whose reason holds these words is one of a grant's. */
#define LOGVIEW_NOT_GRANTED "not granted"
#define LOGVIEW_CMDS_MAX 8 /* command names kept per uid before ",..." */

struct logview_client {
	uint32_t uid;
	int others; /* the uids past LOGVIEW_CLIENTS_MAX */
	char *cmds[LOGVIEW_CMDS_MAX];
	size_t ncmds;
	int more_cmds;
	uint64_t sandboxes, requests, denied;
};

struct logview_refusal {
	uint32_t uid;
	int has_uid; /* the record said "client_uid" */
	char *policy; /* NULL: none said */
	char *reason; /* NULL: none said */
	uint64_t count;
};

/*
 * Whether the review shows the clients: the log holds the records of
 * more than one client (sandbox), or a refusal.  A user's own copy, and
 * every log of a run, holds one or none.
 */
int logview_clients_shown(const struct logview *);

/* The clients sorted by uid ("others" last); the caller frees. */
const struct logview_client **
logview_clients(const struct logview *, size_t *np);

/* The refusals, most first; the caller frees.  *OTHERS: past the cap. */
const struct logview_refusal **
logview_refusals(const struct logview *, size_t *np, uint64_t *others);

#ifdef LOGVIEW_INTERNAL
struct logview_host_stats {
	uint64_t requests, allowed, denied, refused, failed, distrust;
	uint64_t bytes_up, bytes_down;
	size_t nsecrets;
};

/*
 * The counters of HOST:PORT (PORT -1: no port; HOST NULL: the "others"
 * bucket).  Returns 0, or -1 when there is no such entry.
 */
int logview_host(const struct logview *, const char *host, int port,
    struct logview_host_stats *);

/* How often HOST:PORT was denied with REASON (HOST NULL: "others"). */
uint64_t logview_denials(
    const struct logview *, const char *host, int port, const char *reason);

/* Distinct hosts and denials kept, "others" buckets excluded. */
size_t logview_nhosts(const struct logview *);
size_t logview_ndenials(const struct logview *);

/* 1 when the table of escaped code points is sorted and disjoint. */
int logview_cp_table_ok(void);
#endif

#endif
