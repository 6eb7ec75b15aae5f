/*
 * field.h: the fields of an audit record (DESIGN.md, "Audit log"),
 * defined once for the writer (audit.c) and the reader (logview.c).
 *
 * The writer emits the fields of a record in the order of the table and
 * leaves out those that are absent; the reader type-checks each field it
 * finds against the table and ignores names the table does not hold, so
 * that a newer log stays readable.
 */
#ifndef PH_FIELD_H
#define PH_FIELD_H

#include <stddef.h>
#include <stdint.h>

/* In the order the writer emits them. */
enum field_id {
	FIELD_TS,
	FIELD_SANDBOX,
	FIELD_CLIENT_UID, /* a broker's records: the client (audit_set_client) */
	FIELD_CLIENT_PID,
	FIELD_CLIENT_CMD,
	FIELD_CONN,
	FIELD_EVENT,
	FIELD_METHOD,
	FIELD_VIA,
	FIELD_HOST,
	FIELD_PORT,
	FIELD_PATH,
	FIELD_DECISION,
	FIELD_RULE,
	FIELD_POLICY, /* a broker's "client" record: the policy asked for */
	FIELD_REASON,
	FIELD_ADDR,
	FIELD_QTYPE,
	FIELD_ANSWER,
	FIELD_STATUS,
	FIELD_BYTES_UP,
	FIELD_BYTES_DOWN,
	FIELD_MS,
	FIELD_SECRET,
	FIELD_ERROR,
	FIELD_COUNT,
	FIELD_SUMMARY,
	FIELD_N,
};

enum field_type {
	FIELD_STRING,
	FIELD_INTEGER, /* from 0 to max */
	FIELD_NUMBER, /* the writer writes an integer; any number is read */
	FIELD_BOOLEAN,
};

/* Flags of a field. */
#define FIELD_REQUIRED 0x1 /* a record without it is malformed */
#define FIELD_CUT 0x2 /* cut to a common length when a line is too long */
#define FIELD_UNCHECKED 0x4 /* the reader takes any value and ignores it */

/* How many fields are flagged FIELD_CUT (host, path, reason, error). */
#define FIELD_NCUT 4

/* The longest "host" read: a longer one is no host name, malformed. */
#define FIELD_HOST_MAX 255

/* Cap of every string once escaped, "..." included when it is cut. */
#define FIELD_CAP 1024

struct field {
	const char *name;
	enum field_type type;
	unsigned flags;
	const char *stop; /* strings: the writer cuts at the first of these */
	int64_t max; /* integers: the largest value read; strings: the longest
	                value read, in bytes (0: FIELD_CAP, as written) */
};

/* The field ID (< FIELD_N). */
const struct field *field_get(enum field_id);

/* The field called NAME, or NULL when the table has none. */
const struct field *field_find(const char *name);

/* The name of the type ("string", "integer", ...). */
const char *field_type_name(enum field_type);

/*
 * The "error" of a connection whose client ended the TLS handshake with
 * the proxy: it refused the run CA's certificate (an alert), or hung up,
 * mostly for the same reason.  The proxy words it so; pinhole log counts
 * such a connection as failed, not allowed.
 */
#define FIELD_ERR_DISTRUST "the client does not trust the run CA"
#define FIELD_ERR_HANGUP "the client ended the TLS handshake"

/* Does ERROR (NULL: none) say the client refused the run CA? */
int field_is_distrust(const char *error);

#endif
