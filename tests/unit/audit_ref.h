/*
 * audit_ref.h: the audit writer as it was up to 3baebc3, on jansson
 * (json_dumpb with JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII),
 * kept frozen as the reference that audit/audit.c's own formatter must
 * match byte for byte (test_audit.c, fuzz_audit.c).
 */
#ifndef PH_AUDIT_REF_H
#define PH_AUDIT_REF_H

#include <stddef.h>

#include "audit/audit.h"

/* What a struct audit adds to every record. */
struct audit_ref_ctx {
	const char *run_id; /* NULL: no "sandbox" */
	int has_client;
	unsigned client_uid, client_pid;
	const char *client_cmd;
};

/*
 * Formats R with TS as "ts" into BUF (SIZE bytes, at least 64 KiB) as the
 * old writer did.  Returns the length of the line, newline included, or
 * 0 when the old writer failed on it.
 */
size_t audit_ref_format(const struct audit_ref_ctx *, const struct audit_rec *,
    const char *ts, char *buf, size_t size);

/*
 * The old sanitize() of IN (INLEN bytes) to CAP, then the value dumped
 * as a JSON string by jansson, without its quotes, into OUT (OUTLEN).
 * Returns its length (the old escaped length must equal it), or
 * (size_t)-1 when jansson failed.
 */
size_t audit_ref_escape(
    char *out, size_t outlen, const char *in, size_t inlen, size_t cap);

#endif
