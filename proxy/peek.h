/*
 * peek.h: what the first bytes of a captured connection are (capture,
 * front.c): a TLS ClientHello, whose SNI must agree with the name the
 * connection was made to, an HTTP request head, or something else.
 * Pure functions on bytes the sandbox sent, strict, never guessing: an
 * extension list that does not add up is malformed, not skipped.
 */
#ifndef PH_PEEK_H
#define PH_PEEK_H

#include <stddef.h>
#include <stdint.h>

#include "policy/target.h"

/* The most a peek waits for: one whole TLS record and its header. */
#define PEEK_MAX (5 + 16384)

enum peek_kind {
	PEEK_MORE, /* too few bytes to tell */
	PEEK_TLS, /* a TLS handshake record (0x16 0x03 ...) */
	PEEK_HTTP, /* a request line's method token and a space */
	PEEK_OTHER, /* anything else: opaque bytes */
};

/* What the N bytes at P begin with. */
enum peek_kind peek_classify(const uint8_t *p, size_t n);

/* Results of peek_sni(). */
#define PEEK_SNI_FOUND 1
#define PEEK_SNI_NONE 0 /* a whole ClientHello without server_name */
#define PEEK_SNI_MORE (-1) /* the ClientHello is not whole yet */
#define PEEK_SNI_BAD (-2) /* not a ClientHello, or malformed */

/*
 * The server name of the TLS ClientHello in the first record of the N
 * bytes at P (a hello that does not fit one record is PEEK_SNI_BAD): with
 * PEEK_SNI_FOUND, HOST is the name, canonical (target_host_parse; a name
 * that is not a host name is PEEK_SNI_BAD).
 */
int peek_sni(const uint8_t *p, size_t n, struct target_host *host);

#endif /* PH_PEEK_H */
