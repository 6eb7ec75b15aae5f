/*
 * audit.h: the audit log, JSON Lines (DESIGN.md, "Audit log").
 *
 * One object per decision ("request") and one per finished connection or
 * request ("end").  Each record is formatted whole and written with one
 * write(2) on an O_APPEND descriptor, so lines from concurrent writers
 * never interleave.  Secret values, Authorization and Cookie headers and
 * query strings never reach it: records carry no headers, and any '?' in
 * a path is cut off here once more.
 *
 * Threads: one struct audit may be shared by any number of threads (the
 * workers of `pinhole proxy --workers N`).  audit_write(), audit_flush(),
 * audit_set_limit(), audit_over_limit(), audit_set_client(),
 * audit_add_copy(), audit_same_file() and audit_is_tty() may be called
 * from any thread at any time: one lock per struct audit is held from
 * formatting a record to the write(2) of its line, so lines never
 * interleave and the folding, the limit and the summaries stay exact.
 * audit_rec_init(), audit_parse_size() and audit_make_run_id() touch no
 * shared state.  audit_open() and audit_close() are not: close when no
 * other thread can write any more.  A fork() while another thread writes
 * leaves the child's lock held: a child must not write to the parent's
 * struct audit.
 */
#ifndef PH_AUDIT_H
#define PH_AUDIT_H

#include <stddef.h>
#include <stdint.h>

struct audit;

/* One record; NULL strings and negative numbers are left out. */
struct audit_rec {
	/* "request", "end", "dns", or a broker's "client" (its decision
	 * about a client: decision, reason, policy) */
	const char *event;
	uint64_t conn; /* connection number */
	const char *method;
	/* "proxy", "socks" or "capture": a static string, never copied */
	const char *via;
	const char *host;
	int port; /* -1: none */
	const char *path; /* any query string is removed */
	const char *decision; /* "allow" or "deny" */
	const char *rule_file; /* with rule_line: "rule": "FILE:LINE" */
	unsigned rule_line;
	const char *reason;
	const char *addr; /* address connected to */
	const char *qtype; /* "dns": the query's type ("A", "TYPE65") */
	const char *answer; /* "dns": the stub's answer ("refused") */
	int status; /* HTTP status, -1: none */
	int64_t bytes_up; /* -1: none */
	int64_t bytes_down;
	int64_t ms; /* duration, -1: none */
	const char *secret; /* the injected secret's NAME */
	const char *error;
	int64_t count; /* requests the record stands for, -1: one */
	int summary; /* counted past the limit ("summary": true) */
	/* a broker's "client" record: the policy the client asked for */
	const char *policy;
};

/* audit_write() did not write the record but counted it (see there). */
#define AUDIT_HELD 1

/* Sets every field of REC to "absent". */
void audit_rec_init(struct audit_rec *, const char *event, uint64_t conn);

/*
 * Opens the log at PATH for appending (created 0600), or standard error
 * for "stderr".  RUN_ID is written as "sandbox" in every record.  Returns
 * NULL with a reason in ERR on failure.
 */
struct audit *
audit_open(const char *path, const char *run_id, char *err, size_t errlen);

/*
 * Is the log open on the same file as descriptor FD (a regular file, a
 * FIFO or a socket; devices do not count)?
 */
int audit_same_file(const struct audit *, int fd);

/* Is the log a terminal? */
int audit_is_tty(const struct audit *);

/*
 * Writes what is held (folded denials, the summary past the limit) and
 * closes the log.  NULL does nothing.
 */
void audit_close(struct audit *);

/*
 * Writes one record with the current time as "ts" (RFC 3339, ms, UTC).
 * Host, path, reason and error are cut to 1 KiB (escaped) and end in
 * "..." when cut.  Returns 0, or -1 when the write failed (errno set):
 * the proxy then refuses the request the record was about (fail closed),
 * and tries again with the next one.
 *
 * Returns AUDIT_HELD when the record was counted instead of written:
 * - a denial identical, as logged, to the last denial written is folded:
 *   no "end" record should follow it, and one "request" record with
 *   "count": N stands for the N folded ones, written before the next
 *   different denial, by audit_flush() and by audit_close();
 * - past the limit (audit_set_limit) every record is counted per
 *   (decision, host, port), up to 64 of them plus one "others" bucket
 *   each way, and audit_close() writes one "request" record per bucket
 *   with "count", the bytes, and "summary": true.
 */
int audit_write(struct audit *, const struct audit_rec *);

/* Writes the record of the denials folded so far, if any.  0 or -1. */
int audit_flush(struct audit *);

/*
 * Bytes the log may take from this struct audit (0: no limit, the
 * default); the summary records at close come on top, a few KiB at most.
 */
void audit_set_limit(struct audit *, uint64_t bytes);

/* Has the limit been reached? */
int audit_over_limit(const struct audit *);

/*
 * A broker's records name the client whose sandbox made them: every
 * record from now on carries "client_uid" and "client_pid" (from
 * SO_PEERCRED, the kernel's word) and "client_cmd" (the command's name as
 * the client said it; NULL: left out).  Returns 0, or -1 (ENOMEM).
 */
int
audit_set_client(struct audit *, unsigned uid, unsigned pid, const char *cmd);

/*
 * Every record from now on is also written to FD, a regular file the
 * broker's client opened for appending (its own copy of its sandbox's
 * records), taken over.  The limit (audit_set_limit) counts the main
 * log's bytes only; a failed copy is dropped, never the record.  Returns
 * 0, or -1 (FD is not a regular file opened for writing: closed).
 */
int audit_add_copy(struct audit *, int fd);

/* Parses SIZE: digits with an optional K, M or G suffix.  0 or -1. */
int audit_parse_size(const char *s, uint64_t *out);

/*
 * Writes a fresh random run id (16 hex digits and a NUL) to OUT: the
 * "sandbox" field of every record of one run.  Returns 0 or -1.
 */
int audit_make_run_id(char out[17]);

#ifdef AUDIT_INTERNAL
/*
 * Formats R with TS as its "ts" exactly as audit_write() would, into A's
 * line buffer, without the lock, the fold or the limit: for tests.
 * Returns the length of the line, newline included, with *LINE at its
 * start until the next record on A, or 0 with errno set.
 */
size_t audit_format_ts(struct audit *, const struct audit_rec *r,
    const char *ts, const char **line);

/*
 * Writes IN (INLEN bytes) sanitised and escaped as the inside of a JSON
 * string, cut to CAP bytes and marked "..." when cut, to OUT (OUTLEN
 * bytes, no NUL added).  Returns the escaped length; OUT holds it only
 * when it is at most OUTLEN.
 */
size_t audit_escape(
    char *out, size_t outlen, const char *in, size_t inlen, size_t cap);
#endif

#endif
