/*
 * audit.h: the audit log, JSON Lines (DESIGN.md, "Audit log").
 *
 * One object per decision ("request") and one per finished connection or
 * request ("end").  Each record is formatted whole and written with one
 * write(2) on an O_APPEND descriptor, so lines from concurrent writers
 * never interleave.  Secret values, Authorization and Cookie headers and
 * query strings never reach it: records carry no headers, and any '?' in
 * a path is cut off here once more.
 */
#ifndef PH_AUDIT_H
#define PH_AUDIT_H

#include <stddef.h>
#include <stdint.h>

struct audit;

/* One record; NULL strings and negative numbers are left out. */
struct audit_rec {
	const char *event; /* "request" or "end" */
	uint64_t conn; /* connection number */
	const char *method;
	const char *host;
	int port; /* -1: none */
	const char *path; /* any query string is removed */
	const char *decision; /* "allow" or "deny" */
	const char *rule_file; /* with rule_line: "rule": "FILE:LINE" */
	unsigned rule_line;
	const char *reason;
	const char *addr; /* address connected to */
	int status; /* HTTP status, -1: none */
	int64_t bytes_up; /* -1: none */
	int64_t bytes_down;
	int64_t ms; /* duration, -1: none */
	const char *secret; /* the injected secret's NAME */
	const char *error;
};

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

/* Closes the log.  NULL does nothing. */
void audit_close(struct audit *);

/*
 * Writes one record with the current time as "ts" (RFC 3339, ms, UTC).
 * Returns 0, or -1 when the write failed (errno set): the proxy then
 * refuses the request the record was about (fail closed), and tries
 * again with the next one.
 */
int audit_write(struct audit *, const struct audit_rec *);

/*
 * Writes a fresh random run id (16 hex digits and a NUL) to OUT: the
 * "sandbox" field of every record of one run.  Returns 0 or -1.
 */
int audit_make_run_id(char out[17]);

#endif
