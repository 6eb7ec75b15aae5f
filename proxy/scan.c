/*
 * scan.c: streaming multi-pattern search (see scan.h).
 *
 * Aho-Corasick compiled to a full DFA: one row of next states per trie
 * node, one column per byte class.  Bytes that occur in no pattern share
 * class 0 and lead back to the root; patterns of secrets use few distinct
 * bytes, so rows stay short (a few secrets in all their forms make a
 * table of tens of kilobytes).  Each byte costs two table look-ups.
 *
 * At the root, where a stream spends most bytes of most bodies, the
 * search skips to the next byte that can begin a pattern: with SSSE3
 * (when the processor has it) sixteen bytes at a time and by pairs of
 * bytes (see skip_ssse3), else by single bytes, four look-ups at a time.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#endif

#define SCAN_INTERNAL
#include "proxy/scan.h"

#define TOTAL_MAX (1024 * 1024)
#define NONE UINT32_MAX
#define MATCH 0x80000000u /* in NEXT: a pattern ends at the state */

struct pattern {
	uint8_t *p;
	size_t len;
	unsigned id;
};

struct scan {
	struct pattern *pat;
	size_t npat, total;
	int compiled;
	uint16_t cls[256]; /* byte -> class (257 at most) */
	uint8_t skip[256]; /* at the root, this byte stays there */
	/*
	 * For skip_ssse3(), by nibbles (see set_add): first[], the bytes
	 * that leave the root; second[], the second bytes of patterns (all
	 * bytes when a pattern is one byte long).
	 */
	uint8_t first[32], second[32];
	int simd; /* skip with skip_ssse3() */
	size_t ncls;
	/*
	 * nstates * ncls.  Once compiled, an entry is the next state's row
	 * offset (state * ncls), with MATCH set when a pattern ends there:
	 * one look-up and one test per byte.  A stream's state is a row
	 * offset.
	 */
	uint32_t *next;
	uint32_t *out; /* id of a pattern ending here, or NONE */
	uint32_t *depth; /* length of the node's string */
	size_t nstates;
};

struct scan *
scan_new(void)
{
	return calloc(1, sizeof(struct scan));
}

static void
free_tables(struct scan *sc)
{
	free(sc->next);
	free(sc->out);
	free(sc->depth);
	sc->next = sc->out = sc->depth = NULL;
}

void
scan_free(struct scan *sc)
{
	size_t i;

	if (sc == NULL)
		return;
	for (i = 0; i < sc->npat; i++) {
		/* Patterns are secrets in some form. */
		explicit_bzero(sc->pat[i].p, sc->pat[i].len);
		free(sc->pat[i].p);
	}
	free(sc->pat);
	free_tables(sc);
	free(sc);
}

int
scan_add(struct scan *sc, const void *pat, size_t len, unsigned id)
{
	struct pattern *v;
	uint8_t *copy;

	if (sc->compiled || len == 0 || len > TOTAL_MAX - sc->total ||
	    id >= NONE)
		return -1;
	if ((v = realloc(sc->pat, (sc->npat + 1) * sizeof(*v))) == NULL)
		return -1;
	sc->pat = v;
	if ((copy = malloc(len)) == NULL)
		return -1;
	memcpy(copy, pat, len);
	sc->pat[sc->npat].p = copy;
	sc->pat[sc->npat].len = len;
	sc->pat[sc->npat].id = id;
	sc->npat++;
	sc->total += len;
	return 0;
}

size_t
scan_count(const struct scan *sc)
{
	return sc != NULL ? sc->npat : 0;
}

/* --- forms of a value ----------------------------------------------------- */

static int
add_min(struct scan *sc, const uint8_t *p, size_t len, unsigned id)
{
	return len < SCAN_MIN ? 0 : scan_add(sc, p, len, id);
}

static int
add_case(struct scan *sc, const uint8_t *v, size_t len, unsigned id)
{
	uint8_t *buf = malloc(len ? len : 1);
	int r = -1, up;
	size_t i;

	if (buf == NULL)
		return -1;
	for (up = 0; up < 2; up++) {
		for (i = 0; i < len; i++)
			buf[i] = up
			    ? (v[i] >= 'a' && v[i] <= 'z' ? v[i] - 32 : v[i])
			    : (v[i] >= 'A' && v[i] <= 'Z' ? v[i] + 32 : v[i]);
		if (memcmp(buf, v, len) != 0 && add_min(sc, buf, len, id) != 0)
			goto out;
	}
	r = 0;
out:
	explicit_bzero(buf, len);
	free(buf);
	return r;
}

static int
unreserved(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	    c == '~';
}

/* %XX forms: every byte, and all but the unreserved; in both cases. */
static int
add_percent(struct scan *sc, const uint8_t *v, size_t len, unsigned id)
{
	static const char *const hex[] = {
	    "0123456789ABCDEF", "0123456789abcdef"};
	uint8_t *buf = malloc(3 * len + 1);
	size_t i, n;
	int r = -1, all, lc;

	if (buf == NULL)
		return -1;
	for (all = 0; all < 2; all++)
		for (lc = 0; lc < 2; lc++) {
			for (i = n = 0; i < len; i++) {
				if (!all && unreserved(v[i])) {
					buf[n++] = v[i];
					continue;
				}
				buf[n++] = '%';
				buf[n++] = hex[lc][v[i] >> 4];
				buf[n++] = hex[lc][v[i] & 15];
			}
			/* Nothing to encode: that is the raw form. */
			if (n == len)
				continue;
			if (add_min(sc, buf, n, id) != 0)
				goto out;
		}
	r = 0;
out:
	explicit_bzero(buf, 3 * len + 1);
	free(buf);
	return r;
}

/*
 * The Base64 characters that depend on VALUE alone when it starts at byte
 * offset ALIGN (0-2) of an encoded string: whatever precedes or follows
 * it, these are in the encoding.  Also in base64url, when different.
 */
static int
add_base64(struct scan *sc, const uint8_t *v, size_t len, unsigned id)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t align, bits, first, last, k, n, nbits = 8 * (len + 2);
	uint8_t *buf = malloc(nbits / 6 + 2);
	int r = -1, url;

	if (buf == NULL)
		return -1;
	for (align = 0; align < 3; align++) {
		/* Character k covers bits [6k, 6k + 6) of pad + value. */
		first = (8 * align + 5) / 6;
		last = (8 * align + 8 * len) / 6;
		for (k = first, n = 0; k < last; k++) {
			unsigned c = 0, b;

			for (b = 0; b < 6; b++) {
				bits = 6 * k + b - 8 * align;
				c = c << 1 |
				    ((v[bits / 8] >> (7 - bits % 8)) & 1);
			}
			buf[n++] = (uint8_t)b64[c];
		}
		for (url = 0; url < 2; url++) {
			if (url && memchr(buf, '+', n) == NULL &&
			    memchr(buf, '/', n) == NULL)
				break;
			for (k = 0; url && k < n; k++)
				buf[k] = buf[k] == '+' ? '-'
				    : buf[k] == '/'    ? '_'
				                       : buf[k];
			if (add_min(sc, buf, n, id) != 0)
				goto out;
		}
	}
	r = 0;
out:
	explicit_bzero(buf, nbits / 6 + 2);
	free(buf);
	return r;
}

int
scan_add_value(
    struct scan *sc, const void *value, size_t len, unsigned id, unsigned forms)
{
	const uint8_t *v = value;

	if (len == 0)
		return 0;
	if ((forms & SCAN_RAW) && add_min(sc, v, len, id) != 0)
		return -1;
	if ((forms & SCAN_CASE) && add_case(sc, v, len, id) != 0)
		return -1;
	if ((forms & SCAN_PERCENT) && add_percent(sc, v, len, id) != 0)
		return -1;
	if ((forms & SCAN_BASE64) && add_base64(sc, v, len, id) != 0)
		return -1;
	return 0;
}

/* --- the automaton -------------------------------------------------------- */

static void
make_classes(struct scan *sc)
{
	size_t i, k;

	memset(sc->cls, 0, sizeof(sc->cls));
	sc->ncls = 1;
	for (i = 0; i < sc->npat; i++)
		for (k = 0; k < sc->pat[i].len; k++)
			if (sc->cls[sc->pat[i].p[k]] == 0)
				sc->cls[sc->pat[i].p[k]] = (uint16_t)sc->ncls++;
}

/* The trie of all patterns in NEXT (0: no child; the root is no child). */
static void
make_trie(struct scan *sc)
{
	uint32_t s, *t;
	size_t i, k;

	sc->nstates = 1;
	for (i = 0; i < sc->npat; i++) {
		s = 0;
		for (k = 0; k < sc->pat[i].len; k++) {
			t = &sc->next[s * sc->ncls + sc->cls[sc->pat[i].p[k]]];
			if (*t == 0) {
				*t = (uint32_t)sc->nstates++;
				sc->depth[*t] = sc->depth[s] + 1;
			}
			s = *t;
		}
		if (sc->out[s] == NONE)
			sc->out[s] = sc->pat[i].id;
	}
}

/*
 * Breadth first, each row becomes the DFA's: a missing child goes where
 * the failure state goes; a node reports what its failure state reports
 * when no pattern ends at it.
 */
static int
make_dfa(struct scan *sc)
{
	uint32_t *fail, *queue, u, v;
	size_t head = 0, tail = 0, c, nc = sc->ncls;
	int r = -1;

	fail = calloc(sc->nstates, sizeof(*fail));
	queue = calloc(sc->nstates, sizeof(*queue));
	if (fail == NULL || queue == NULL)
		goto out;
	for (c = 0; c < nc; c++)
		if ((v = sc->next[c]) != 0)
			queue[tail++] = v; /* fail[v] = root */
	while (head < tail) {
		u = queue[head++];
		if (sc->out[u] == NONE)
			sc->out[u] = sc->out[fail[u]];
		for (c = 0; c < nc; c++) {
			v = sc->next[u * nc + c];
			if (v == 0) {
				sc->next[u * nc + c] =
				    sc->next[fail[u] * nc + c];
				continue;
			}
			fail[v] = sc->next[fail[u] * nc + c];
			queue[tail++] = v;
		}
	}
	r = 0;
out:
	free(fail);
	free(queue);
	return r;
}

/* Bit h of SET[l] (h < 8) or SET[16 + l] (h - 8): byte 16 * h + l. */
static void
set_add(uint8_t *set, size_t b)
{
	set[(b & 15) + (b < 128 ? 0 : 16)] |= (uint8_t)(1u << ((b >> 4) & 7));
}

/* The root's byte sets: SKIP for the scalar loop, FIRST/SECOND for SSSE3. */
static void
make_skip(struct scan *sc)
{
	size_t b, i;

	memset(sc->first, 0, sizeof(sc->first));
	memset(sc->second, 0, sizeof(sc->second));
	for (b = 0; b < 256; b++) {
		sc->skip[b] = sc->next[sc->cls[b]] == 0;
		if (!sc->skip[b])
			set_add(sc->first, b);
	}
	for (i = 0; i < sc->npat; i++) {
		if (sc->pat[i].len < 2)
			memset(sc->second, 0xff, sizeof(sc->second));
		else
			set_add(sc->second, sc->pat[i].p[1]);
	}
#ifdef HAVE_X86
	sc->simd = __builtin_cpu_supports("ssse3");
#endif
}

int
scan_compile(struct scan *sc)
{
	size_t n = sc->total + 1, i;

	if (sc->compiled)
		return 0;
	make_classes(sc);
	sc->next = calloc(n * sc->ncls, sizeof(*sc->next));
	sc->out = malloc(n * sizeof(*sc->out));
	sc->depth = calloc(n, sizeof(*sc->depth));
	if (sc->next == NULL || sc->out == NULL || sc->depth == NULL)
		goto fail;
	for (i = 0; i < n; i++)
		sc->out[i] = NONE;
	make_trie(sc);
	if (make_dfa(sc) != 0)
		goto fail;
	for (i = 0; i < n * sc->ncls; i++)
		sc->next[i] = (uint32_t)(sc->next[i] * sc->ncls) |
		    (sc->out[sc->next[i]] != NONE ? MATCH : 0);
	make_skip(sc);
	sc->compiled = 1;
	return 0;
fail:
	free_tables(sc);
	return -1;
}

/* The first I' >= I with P[I'] leaving the root, or LEN: four at a time. */
static size_t
skip_scalar(const uint8_t *skip, const uint8_t *p, size_t i, size_t len)
{
	while (len - i >= 4 &&
	    (skip[p[i]] & skip[p[i + 1]] & skip[p[i + 2]] & skip[p[i + 3]]))
		i += 4;
	while (i < len && skip[p[i]])
		i++;
	return i;
}

#ifdef HAVE_X86
/*
 * Bit I of the result: byte I of X is in SET (see set_add).  A byte's low
 * nibble picks its row (the first 16 bytes of SET for bytes below 128,
 * the last 16 above: pshufb gives 0 where the index has bit 7 set), its
 * high nibble the bit.
 */
__attribute__((target("ssse3"))) static inline unsigned
in_set(__m128i x, __m128i lo, __m128i hi)
{
	const __m128i m8f = _mm_set1_epi8((char)0x8f);
	const __m128i bits = _mm_setr_epi8(
	    1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
	__m128i row, b;

	row = _mm_or_si128(_mm_shuffle_epi8(lo, _mm_and_si128(x, m8f)),
	    _mm_shuffle_epi8(hi,
	        _mm_and_si128(
	            _mm_xor_si128(x, _mm_set1_epi8((char)0x80)), m8f)));
	b = _mm_shuffle_epi8(
	    bits, _mm_and_si128(_mm_srli_epi16(x, 4), _mm_set1_epi8(0x0f)));
	return (unsigned)_mm_movemask_epi8(
	    _mm_cmpeq_epi8(_mm_and_si128(row, b), b));
}

/*
 * skip_scalar() sixteen bytes at a time, also skipping a byte that
 * leaves the root when the next is the second byte of no pattern: from
 * the state it leads to, that next byte goes where it goes from the
 * root, and no pattern ends on the first (none is one byte long, else
 * SECOND is all bytes).  So random bytes stop the loop about once in
 * a few hundred, not once in twenty.
 */
__attribute__((target("ssse3"))) static size_t
skip_ssse3(const struct scan *sc, const uint8_t *p, size_t i, size_t len)
{
	const __m128i f0 = _mm_loadu_si128((const __m128i *)sc->first);
	const __m128i f1 = _mm_loadu_si128((const __m128i *)(sc->first + 16));
	const __m128i s0 = _mm_loadu_si128((const __m128i *)sc->second);
	const __m128i s1 = _mm_loadu_si128((const __m128i *)(sc->second + 16));
	unsigned m;

	/* 17 bytes: each of the 16 tested has its next one in the buffer. */
	for (; len - i >= 17; i += 16) {
		m = in_set(_mm_loadu_si128((const __m128i *)(p + i)), f0, f1) &
		    in_set(
		        _mm_loadu_si128((const __m128i *)(p + i + 1)), s0, s1);
		if (m != 0)
			return i + (size_t)__builtin_ctz(m);
	}
	return skip_scalar(sc->skip, p, i, len);
}
#endif

static size_t
skip_root(const struct scan *sc, const uint8_t *p, size_t i, size_t len)
{
#ifdef HAVE_X86
	if (sc->simd)
		return skip_ssse3(sc, p, i, len);
#endif
	return skip_scalar(sc->skip, p, i, len);
}

int
scan_feed(const struct scan *sc, uint32_t *state, const void *buf, size_t len,
    size_t *end, unsigned *id)
{
	const uint8_t *p = buf;
	const uint32_t *next;
	const uint16_t *cls;
	uint32_t s = *state;
	size_t i = 0;
	int r = 0;

	if (sc == NULL || !sc->compiled || sc->npat == 0)
		return 0;
	next = sc->next;
	cls = sc->cls;
	while (i < len) {
		/* Most bytes of most bodies start no pattern: skip them. */
		if (s == 0 && (i = skip_root(sc, p, i, len)) == len)
			break;
		s = next[s + cls[p[i++]]];
		if (s & MATCH) {
			s &= ~MATCH;
			*end = i;
			*id = sc->out[s / sc->ncls];
			r = 1;
			break;
		}
	}
	*state = s;
	return r;
}

int
scan_simd(struct scan *sc, int on)
{
	int was = sc->simd;

#ifdef HAVE_X86
	sc->simd = on && __builtin_cpu_supports("ssse3");
#else
	(void)on;
#endif
	return was;
}

const uint8_t *
scan_pattern(const struct scan *sc, size_t i, size_t *len)
{
	*len = sc->pat[i].len;
	return sc->pat[i].p;
}

size_t
scan_held(const struct scan *sc, uint32_t state)
{
	if (sc == NULL || !sc->compiled || state / sc->ncls >= sc->nstates)
		return 0;
	return sc->depth[state / sc->ncls];
}
