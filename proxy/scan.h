/*
 * scan.h: a streaming search for a few byte strings known in advance
 * (Aho-Corasick, as a DFA over byte classes).
 *
 * The proxy searches responses for the real values of the secrets it
 * sent (and requests for the sandbox's stand-ins) in these forms: as is,
 * Base64 at each of the three alignments (so "user:value" of a Basic
 * field is found whatever the user), percent-encoded, and optionally in
 * upper and lower case.  The patterns are built once; a stream's whole
 * state is one uint32_t, so a connection costs four bytes, and a search
 * sees across buffer boundaries.  scan_held() says how many of the bytes
 * fed last could still be the start of a pattern: those must be held
 * back, and only they, until more bytes decide.
 */
#ifndef PH_SCAN_H
#define PH_SCAN_H

#include <stddef.h>
#include <stdint.h>

struct scan;

/* Forms of a value for scan_add_value(). */
#define SCAN_RAW 0x01 /* the bytes as they are */
#define SCAN_BASE64 0x02 /* Base64 and base64url, all three alignments */
#define SCAN_PERCENT 0x04 /* %XX: every byte, or all but unreserved */
#define SCAN_CASE 0x08 /* the raw bytes in upper and in lower case */

/* Forms shorter than this are not searched for: they match by chance. */
#define SCAN_MIN 8

/* The state of a stream before its first byte. */
#define SCAN_START 0

/* Returns an empty set of patterns, or NULL (ENOMEM). */
struct scan *scan_new(void);

/* Frees.  NULL does nothing. */
void scan_free(struct scan *);

/*
 * Adds pattern PAT (LEN bytes, LEN > 0) reported as ID.  Returns 0, or
 * -1 when out of memory, LEN is 0, the set is compiled already, or the
 * patterns would exceed a total of 1 MiB.
 */
int scan_add(struct scan *, const void *pat, size_t len, unsigned id);

/*
 * Adds the FORMS (SCAN_* flags) of VALUE that are at least SCAN_MIN
 * bytes long, each reported as ID.  Returns 0 or -1 as scan_add().
 */
int scan_add_value(
    struct scan *, const void *value, size_t len, unsigned id, unsigned forms);

/* Builds the automaton; no scan_add() after.  Returns 0 or -1 (ENOMEM). */
int scan_compile(struct scan *);

/* Number of patterns added. */
size_t scan_count(const struct scan *);

/*
 * Feeds LEN bytes of a stream in state *STATE (SCAN_START at first).
 * Returns 1 when a pattern ends in BUF: *END is the offset just past the
 * first such end and *ID its pattern's id (the state is then that after
 * BUF[*END - 1]); or 0, with *STATE after the whole of BUF.  An
 * uncompiled or empty set matches nothing.
 */
int scan_feed(const struct scan *, uint32_t *state, const void *buf, size_t len,
    size_t *end, unsigned *id);

/*
 * How many of the last bytes fed are a proper prefix of some pattern
 * (the longest such): they must not be passed on before more bytes show
 * whether a pattern completes.
 */
size_t scan_held(const struct scan *, uint32_t state);

#ifdef SCAN_INTERNAL
/*
 * Tests: ON 0 makes the search skip bytes at the root with the scalar
 * loop, 1 with SSSE3 when the processor has it (the default).  Returns
 * whether SSSE3 was used before.
 */
int scan_simd(struct scan *, int on);

/* Tests: pattern I (< scan_count()), *LEN bytes long. */
const uint8_t *scan_pattern(const struct scan *, size_t i, size_t *len);
#endif

#endif /* PH_SCAN_H */
