/*
 * logview.c: aggregate an audit log for review (pinhole log).
 *
 * Each line is parsed with jansson, checked field by field against the
 * audit log contract (the table of field.c, which the writer follows),
 * counted into two small tables (indexed by common/htab.c) -- one keyed
 * by (host, port), one by (host, port, reason) for denials -- and dropped.
 * An "end" record that carries no host is counted for the host of the
 * last request seen on the same (sandbox, conn), through a fixed-size
 * cache.  When a table holds LOGVIEW_KEYS_MAX keys, or an allocation
 * fails, the record goes to the table's "others" bucket instead.
 *
 * The advice for a denial (the allow line that would let it through) is
 * worked out here too; logprint.c prints what this file gathered.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#define LOGVIEW_INTERNAL
#include "audit/field.h"
#include "audit/logview.h"
#include "common/htab.h"

#define HOST_MAX FIELD_HOST_MAX /* a longer "host" is malformed */
#define REASON_KEEP 512 /* bytes of a reason kept and compared */
#define PATH_KEEP 1024 /* bytes of a denied path kept */
#define WORD_KEEP 64 /* method, secret name */
#define RULE_KEEP 512
#define SECRETS_MAX 16 /* secret names kept per host */
#define CONN_SLOTS 4096 /* (sandbox, conn) -> host cache */
#define TABLE_MIN 64
/* The longest key: a host, its NUL, a port and a kept reason. */
#define KEY_MAX (HOST_MAX + 1 + sizeof(int) + REASON_KEEP)
#define ADVICE_MAX LOGVIEW_ADVICE_MAX
_Static_assert(ADVICE_MAX == PATH_KEEP + 2 * HOST_MAX + 128,
    "an advice holds a kept path, two hosts and words");
_Static_assert(SECRETS_MAX == LOGVIEW_SECRETS_MAX, "secret names kept");

static const char *const kind_names[] = {"no-rule", "port", "path", "method",
    "deny-rule", "plain-http", "private", "not-captured", "udp", "icmp",
    "other"};

/* The values of "via" and of a "dns" record's "answer", by bit. */
static const char *const via_names[] = {"proxy", "socks", "capture"};
static const char *const answer_names[] = {
    "synthetic", "nodata", "nxdomain", "refused"};
_Static_assert(LOGVIEW_VIA_CAPTURE == 1 << 2 &&
        LOGVIEW_ANSWER_REFUSED == 1 << 3 && LOGVIEW_ANSWER_OTHER == 1 << 4,
    "bit i of a mask is names[i]");

/* The classes of a request (logview.h), the one place they are named. */
static const struct {
	const char *name, *words;
} classes[LOGVIEW_CLASS_NCLASSES] = {
    [LOGVIEW_CLASS_ALLOWED] = {"allowed", "allowed"},
    [LOGVIEW_CLASS_DENIED] = {"denied", "denied by the policy"},
    [LOGVIEW_CLASS_REFUSED] = {"refused",
        "allowed, then refused by the proxy (403)"},
    [LOGVIEW_CLASS_FAILED] = {"failed",
        "allowed, then failed upstream (502, 504: no answer from the server)"},
    [LOGVIEW_CLASS_DISTRUST] = {"distrust",
        "allowed, then the client refused the run CA"},
};

/* The entries in the order they came, indexed by key (common/htab.h). */
struct table {
	struct htab *idx; /* key -> the index of its entry in v */
	struct logview_entry **v;
	size_t n, cap;
	struct logview_entry *others;
};

struct conn_slot {
	uint64_t key;
	struct logview_entry *host; /* NULL: the host was filtered out */
	int used;
	int allowed; /* its last request was allowed */
};

/* One record, by field id; the strings point into the parsed object. */
struct rec {
	const char *s[FIELD_N]; /* NULL: absent */
	json_int_t n[FIELD_N]; /* -1: absent */
	int request; /* event is "request", else "end" */
	int dns; /* event is "dns": a query to the sandbox's stub */
	int client; /* event is "client": a broker's decision on a client */
	unsigned via; /* LOGVIEW_VIA_* bit, 0: none or unknown */
	unsigned answer; /* "dns": LOGVIEW_ANSWER_* bit */
};

struct logview {
	struct table hosts;
	struct table denials;
	struct table lookups; /* "dns" records, by name */
	struct table distrust; /* keyed as denials, by the "error" */
	struct conn_slot *conns;
	char **filter;
	size_t nfilter;
	struct logview_totals t;
	char *first_ts, *last_ts;
	char why[256];
	/* a broker's clients, by uid, and its refusals (logview.h) */
	struct htab *client_idx; /* uid -> index in clients */
	struct logview_client **clients;
	size_t nclients, capclients;
	struct logview_client *client_others;
	struct htab *client_sb; /* (uid, sandbox) pairs seen */
	struct htab *ref_idx; /* (uid, policy, reason) -> index in refs */
	struct logview_refusal **refs;
	size_t nrefs, caprefs;
	uint64_t ref_others;
};

static void client_free(struct logview_client *c);
static void refusal_free(struct logview_refusal *f);

/* --- strings ------------------------------------------------------------ */

/*
 * Code points escaped although valid UTF-8: the C1 controls, the format
 * characters (Unicode's Cf: bidirectional marks, embeddings, overrides
 * and isolates, zero-width characters, the byte order mark, tags), the
 * line and paragraph separators (Zl, Zp), the other default-ignorable
 * code points (invisible: fillers, variation selectors), surrogates and
 * noncharacters (Unicode 15.1).  What a log line could use to reorder,
 * hide or break what the reviewer sees.  Sorted and disjoint (a unit
 * test checks); the noncharacters U+nFFFE/U+nFFFF are tested apart.
 */
static const struct cp_range {
	uint32_t lo, hi;
} unsafe_cps[] = {
    {0x0080, 0x009f}, /* C1 controls */
    {0x00ad, 0x00ad}, /* soft hyphen */
    {0x034f, 0x034f}, /* combining grapheme joiner */
    {0x0600, 0x0605}, /* Arabic number signs */
    {0x061c, 0x061c}, /* Arabic letter mark */
    {0x06dd, 0x06dd}, {0x070f, 0x070f}, {0x0890, 0x0891}, {0x08e2, 0x08e2},
    {0x115f, 0x1160}, /* Hangul fillers */
    {0x17b4, 0x17b5}, {0x180b, 0x180f}, /* Mongolian selectors and separator */
    {0x200b, 0x200f}, /* zero-width space, (non-)joiner, LRM, RLM */
    {0x2028, 0x202e}, /* line, paragraph separators; embeddings, overrides */
    {0x2060, 0x206f}, /* word joiner, invisible operators, isolates */
    {0x3164, 0x3164}, /* Hangul filler */
    {0xd800, 0xdfff}, /* surrogates */
    {0xfdd0, 0xfdef}, /* noncharacters */
    {0xfe00, 0xfe0f}, /* variation selectors */
    {0xfeff, 0xfeff}, /* zero-width no-break space, byte order mark */
    {0xffa0, 0xffa0}, /* halfwidth Hangul filler */
    {0xfff0, 0xfffb}, /* interlinear annotations */
    {0x110bd, 0x110bd}, {0x110cd, 0x110cd},
    {0x13430, 0x1343f}, /* Egyptian hieroglyph format controls */
    {0x1bca0, 0x1bca3}, /* shorthand format controls */
    {0x1d173, 0x1d17a}, /* musical beam and slur controls */
    {0xe0000, 0xe0fff}, /* tags, variation selectors supplement */
};

static int
cmp_cp(const void *key, const void *elem)
{
	uint32_t cp = *(const uint32_t *)key;
	const struct cp_range *r = elem;

	return cp < r->lo ? -1 : cp > r->hi;
}

/* Whether the code point CP, valid in UTF-8, is escaped all the same. */
static int
cp_unsafe(uint32_t cp)
{
	return (cp & 0xfffe) == 0xfffe ||
	    bsearch(&cp, unsafe_cps, sizeof(unsafe_cps) / sizeof(unsafe_cps[0]),
	        sizeof(unsafe_cps[0]), cmp_cp) != NULL;
}

/*
 * Length of the character at S when it may reach a terminal as it is:
 * printable ASCII, or valid UTF-8 (shortest form, no surrogate, at most
 * U+10FFFF) whose code point cp_unsafe() lets through.  0: escape the
 * byte.
 */
static size_t
printable_len(const unsigned char *s)
{
	size_t i, n;
	uint32_t cp;

	if (*s >= 0x20 && *s < 0x7f)
		return 1;
	if (*s < 0xc2 || *s > 0xf4)
		return 0;
	n = *s >= 0xf0 ? 4 : *s >= 0xe0 ? 3 : 2;
	cp = *s & (0x7f >> n);
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || cp_unsafe(cp))
		return 0;
	return n;
}

void
logview_esc_put(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t k;

	while (*p != '\0') {
		if ((k = printable_len(p)) > 0)
			fwrite(p, 1, k, f);
		else
			fprintf(f, "\\x%02x", *p);
		p += k > 0 ? k : 1;
	}
}

void
logview_esc_buf(char *dst, size_t n, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t k, o = 0;

	while (*p != '\0') {
		k = printable_len(p);
		if (o + (k > 0 ? k : 4) >= n)
			break;
		if (k > 0)
			memcpy(dst + o, p, k);
		else
			snprintf(dst + o, 5, "\\x%02x", *p);
		o += k > 0 ? k : 4;
		p += k > 0 ? k : 1;
	}
	dst[o] = '\0';
}

/* The length of S cut to at most MAX bytes, at a UTF-8 boundary. */
static size_t
utf8_cut(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n <= max)
		return n;
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	return max;
}

/* A copy of S cut to MAX bytes; *CUT says whether it was.  NULL: ENOMEM. */
static char *
dup_cut(const char *s, size_t max, int *cut)
{
	size_t n = utf8_cut(s, max);
	char *d;

	if ((d = malloc(n + 1)) == NULL)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	if (cut != NULL)
		*cut = s[n] != '\0';
	return d;
}

static void whyf(struct logview *lv, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
whyf(struct logview *lv, const char *fmt, ...)
{
	char tmp[sizeof(lv->why)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	logview_esc_buf(lv->why, sizeof(lv->why), tmp);
}

static uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint32_t
fnv1a(uint32_t h, const void *p, size_t n)
{
	const unsigned char *s = p;

	while (n-- > 0)
		h = (h ^ *s++) * 16777619u;
	return h;
}

/* --- tables ------------------------------------------------------------- */

/*
 * The key of (HOST, PORT, REASON of RLEN bytes) in BUF: the host and its
 * NUL, the port, the reason.  Each table holds one kind of key (hosts
 * without a reason, denials with one), so no reason and "" cannot meet.
 * HOST and REASON fit: rec_lengths() refuses a longer host, and
 * count_denial() cuts the reason to REASON_KEEP.  Returns its length.
 */
static size_t
make_key(char buf[KEY_MAX], const char *host, int port, const char *reason,
    size_t rlen)
{
	size_t n = strlen(host) + 1;

	memcpy(buf, host, n);
	memcpy(buf + n, &port, sizeof(port));
	n += sizeof(port);
	if (reason != NULL) {
		memcpy(buf + n, reason, rlen);
		n += rlen;
	}
	return n;
}

/* The entry of the key, or NULL. */
static struct logview_entry *
table_find(const struct table *t, const char *host, int port,
    const char *reason, size_t rlen)
{
	const struct htab_list *l;
	char key[KEY_MAX];
	size_t n = make_key(key, host, port, reason, rlen);

	if ((l = htab_find(t->idx, key, n)) == NULL || l->n == 0)
		return NULL;
	return t->v[l->ids[0]];
}

static void
agg_free(struct logview_entry *a)
{
	size_t i;

	if (a == NULL)
		return;
	for (i = 0; i < a->nsecrets; i++)
		free(a->secrets[i]);
	free(a->host);
	free(a->reason);
	free(a->path);
	free(a->method);
	free(a->rule);
	free(a);
}

static struct logview_entry *
agg_new(const char *host, int port, const char *reason, size_t rlen)
{
	struct logview_entry *a;

	if ((a = calloc(1, sizeof(*a))) == NULL)
		return NULL;
	a->port = port;
	if ((a->host = strdup(host)) == NULL)
		goto fail;
	if (reason != NULL) {
		if ((a->reason = malloc(rlen + 1)) == NULL)
			goto fail;
		memcpy(a->reason, reason, rlen);
		a->reason[rlen] = '\0';
	}
	return a;
fail:
	agg_free(a);
	return NULL;
}

/* Makes room in T->v for one more entry; 0 or -1 (T unchanged). */
static int
table_room(struct table *t)
{
	struct logview_entry **v;
	size_t cap;

	if (t->n < t->cap)
		return 0;
	cap = t->cap ? t->cap * 2 : TABLE_MIN;
	if ((v = reallocarray(t->v, cap, sizeof(*v))) == NULL)
		return -1;
	t->v = v;
	t->cap = cap;
	return 0;
}

/*
 * The entry for the key, added when new; the "others" bucket when the
 * table is full or memory is short.  REASON (RLEN bytes) is NULL for
 * hosts.
 */
static struct logview_entry *
table_get(struct table *t, const char *host, int port, const char *reason,
    size_t rlen)
{
	struct logview_entry *a;
	char key[KEY_MAX];
	size_t n;

	if ((a = table_find(t, host, port, reason, rlen)) != NULL)
		return a;
	if (t->n >= LOGVIEW_KEYS_MAX || table_room(t) != 0)
		return t->others;
	if ((a = agg_new(host, port, reason, rlen)) == NULL)
		return t->others;
	n = make_key(key, host, port, reason, rlen);
	if (htab_try_add(t->idx, key, n, 0, (uint32_t)t->n) != 0) {
		agg_free(a);
		return t->others;
	}
	t->v[t->n++] = a;
	return a;
}

static void
table_free(struct table *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		agg_free(t->v[i]);
	free(t->v);
	htab_free(t->idx);
	agg_free(t->others);
}

/* An array of T's entries sorted by CMP, "others" last when used. */
static const struct logview_entry **
table_sorted(
    const struct table *t, int (*cmp)(const void *, const void *), size_t *np)
{
	const struct logview_entry **v;
	size_t n = t->n;

	if ((v = calloc(t->n + 1, sizeof(*v))) == NULL)
		return NULL;
	if (n > 0)
		memcpy(v, t->v, n * sizeof(*v));
	qsort(v, n, sizeof(*v), cmp);
	if (t->others->records > 0)
		v[n++] = t->others;
	*np = n;
	return v;
}

/* --- public: life cycle ------------------------------------------------- */

struct logview *
logview_new(void)
{
	struct logview *lv;

	if ((lv = calloc(1, sizeof(*lv))) == NULL)
		return NULL;
	lv->conns = calloc(CONN_SLOTS, sizeof(*lv->conns));
	lv->hosts.others = calloc(1, sizeof(struct logview_entry));
	lv->denials.others = calloc(1, sizeof(struct logview_entry));
	lv->lookups.others = calloc(1, sizeof(struct logview_entry));
	lv->hosts.idx = htab_new();
	lv->denials.idx = htab_new();
	lv->lookups.idx = htab_new();
	lv->distrust.others = calloc(1, sizeof(struct logview_entry));
	lv->distrust.idx = htab_new();
	lv->client_idx = htab_new();
	lv->client_sb = htab_new();
	lv->ref_idx = htab_new();
	lv->client_others = calloc(1, sizeof(*lv->client_others));
	if (lv->conns == NULL || lv->hosts.others == NULL ||
	    lv->denials.others == NULL || lv->lookups.others == NULL ||
	    lv->distrust.others == NULL || lv->client_others == NULL) {
		logview_free(lv);
		return NULL;
	}
	lv->hosts.others->port = lv->denials.others->port = -1;
	lv->lookups.others->port = -1;
	lv->distrust.others->port = -1;
	lv->client_others->others = 1;
	return lv;
}

void
logview_free(struct logview *lv)
{
	size_t i;

	if (lv == NULL)
		return;
	table_free(&lv->hosts);
	table_free(&lv->denials);
	table_free(&lv->lookups);
	table_free(&lv->distrust);
	for (i = 0; i < lv->nfilter; i++)
		free(lv->filter[i]);
	free(lv->filter);
	for (i = 0; i < lv->nclients; i++)
		client_free(lv->clients[i]);
	free(lv->clients);
	client_free(lv->client_others);
	for (i = 0; i < lv->nrefs; i++)
		refusal_free(lv->refs[i]);
	free(lv->refs);
	htab_free(lv->client_idx);
	htab_free(lv->client_sb);
	htab_free(lv->ref_idx);
	free(lv->conns);
	free(lv->first_ts);
	free(lv->last_ts);
	free(lv);
}

int
logview_filter_host(struct logview *lv, const char *host)
{
	char **v, *h;

	if ((h = strdup(host)) == NULL)
		return -1;
	v = reallocarray(lv->filter, lv->nfilter + 1, sizeof(*v));
	if (v == NULL) {
		free(h);
		return -1;
	}
	v[lv->nfilter++] = h;
	lv->filter = v;
	return 0;
}

const char *
logview_why(const struct logview *lv)
{
	return lv->why;
}

void
logview_totals(const struct logview *lv, struct logview_totals *t)
{
	*t = lv->t;
	t->first_ts = lv->first_ts;
	t->last_ts = lv->last_ts;
}

/* --- parsing a record --------------------------------------------------- */

static int
field_int(struct logview *lv, enum field_id id, json_t *v, struct rec *r)
{
	const struct field *f = field_get(id);
	json_int_t i;

	if (!json_is_integer(v)) {
		whyf(lv, "%s is not an integer", f->name);
		return -1;
	}
	i = json_integer_value(v);
	if (i < 0 || i > f->max) {
		whyf(lv, "%s %lld is out of range", f->name, (long long)i);
		return -1;
	}
	r->n[id] = i;
	return 0;
}

/* Type-checks field ID of O and stores it in R; 0 or -1 (why set). */
static int
rec_field(struct logview *lv, enum field_id id, json_t *o, struct rec *r)
{
	const struct field *f = field_get(id);
	json_t *v = json_object_get(o, f->name);

	if (v == NULL || (f->flags & FIELD_UNCHECKED))
		return 0;
	switch (f->type) {
	case FIELD_STRING:
		if (!json_is_string(v))
			break;
		r->s[id] = json_string_value(v);
		return 0;
	case FIELD_INTEGER:
		return field_int(lv, id, v, r);
	case FIELD_NUMBER:
		if (!json_is_number(v))
			break;
		return 0;
	case FIELD_BOOLEAN:
		if (!json_is_boolean(v))
			break;
		return 0;
	}
	whyf(lv, "%s is not a %s", f->name,
	    f->type == FIELD_INTEGER ? "number" : field_type_name(f->type));
	return -1;
}

/* Checks that the required fields are there; 0 or -1 (why set). */
static int
rec_required(struct logview *lv, const struct rec *r)
{
	const struct field *f;
	int id;

	for (id = 0; id < FIELD_N; id++) {
		f = field_get(id);
		if ((f->flags & FIELD_REQUIRED) && r->s[id] == NULL &&
		    r->n[id] < 0) {
			whyf(lv, "no %s", f->name);
			return -1;
		}
	}
	return 0;
}

/* Checks the strings that the table gives a length limit; 0 or -1. */
static int
rec_lengths(struct logview *lv, const struct rec *r)
{
	const struct field *f;
	int id;

	for (id = 0; id < FIELD_N; id++) {
		f = field_get(id);
		if (f->type == FIELD_STRING && f->max > 0 && r->s[id] != NULL &&
		    strlen(r->s[id]) > (size_t)f->max) {
			whyf(lv, "%s longer than %lld bytes", f->name,
			    (long long)f->max);
			return -1;
		}
	}
	return 0;
}

/*
 * The bit of S in NAMES (bit i for NAMES[i]), or OTHER when S is absent
 * or not there: a newer writer's value is read, not refused.
 */
static unsigned
name_bit(const char *s, const char *const *names, size_t n, unsigned other)
{
	size_t i;

	for (i = 0; s != NULL && i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return 1u << i;
	return other;
}

/* Checks what the fields say together; 0 or -1 (why set). */
static int
rec_check(struct logview *lv, struct rec *r)
{
	const char *ev = r->s[FIELD_EVENT], *d = r->s[FIELD_DECISION];

	if (rec_required(lv, r) != 0)
		return -1;
	/* (A broker's "client" records too; the words predate them.) */
	if (strcmp(ev, "request") != 0 && strcmp(ev, "end") != 0 &&
	    strcmp(ev, "dns") != 0 && strcmp(ev, "client") != 0) {
		whyf(lv, "event is not request, end or dns");
		return -1;
	}
	r->request = ev[0] == 'r';
	r->dns = ev[0] == 'd';
	r->client = ev[0] == 'c';
	if (d != NULL && strcmp(d, "allow") != 0 && strcmp(d, "deny") != 0) {
		whyf(lv, "decision is neither allow nor deny");
		return -1;
	}
	if (rec_lengths(lv, r) != 0)
		return -1;
	r->via = name_bit(r->s[FIELD_VIA], via_names,
	    sizeof(via_names) / sizeof(via_names[0]), 0);
	r->answer = name_bit(r->s[FIELD_ANSWER], answer_names,
	    sizeof(answer_names) / sizeof(answer_names[0]),
	    LOGVIEW_ANSWER_OTHER);
	/* Every request is counted in a class, by its decision. */
	if (r->request && d == NULL) {
		whyf(lv, "request without a decision");
		return -1;
	}
	return 0;
}

static int
rec_parse(struct logview *lv, json_t *o, struct rec *r)
{
	int id;

	memset(r, 0, sizeof(*r));
	for (id = 0; id < FIELD_N; id++)
		r->n[id] = -1;
	for (id = 0; id < FIELD_N; id++)
		if (rec_field(lv, id, o, r) != 0)
			return -1;
	return rec_check(lv, r);
}

/* --- counting a record -------------------------------------------------- */

static int
is_allow(const struct rec *r)
{
	return r->s[FIELD_DECISION] != NULL && r->s[FIELD_DECISION][0] == 'a';
}

/* The class of a "request" record, which always has a decision. */
static enum logview_class
decided(const struct rec *r)
{
	return is_allow(r) ? LOGVIEW_CLASS_ALLOWED : LOGVIEW_CLASS_DENIED;
}

static int
filter_match(const struct logview *lv, const char *host)
{
	size_t i;

	if (lv->nfilter == 0)
		return 1;
	for (i = 0; host != NULL && i < lv->nfilter; i++)
		if (strcasecmp(host, lv->filter[i]) == 0)
			return 1;
	return 0;
}

/*
 * The cache slot of R's (sandbox, conn), or NULL when R has no conn.
 * Conn 0 is none either: summaries, dns records and what the sandbox's
 * kernel refused (proxy/refused.c) are of no connection, and a record
 * there without a host is not the last one's.
 */
static struct conn_slot *
conn_slot(struct logview *lv, const struct rec *r, uint64_t *key)
{
	const char *sb = r->s[FIELD_SANDBOX] != NULL ? r->s[FIELD_SANDBOX] : "";
	uint64_t k;

	if (r->n[FIELD_CONN] <= 0)
		return NULL;
	k = fnv1a(2166136261u, sb, strlen(sb));
	k = (k << 32 | k) ^
	    ((uint64_t)r->n[FIELD_CONN] * 0x9e3779b97f4a7c15ull);
	*key = k;
	return &lv->conns[(k ^ k >> 29) & (CONN_SLOTS - 1)];
}

static void
lower(char *dst, const char *s)
{
	while (*s != '\0') {
		*dst++ = *s >= 'A' && *s <= 'Z' ? *s - 'A' + 'a' : *s;
		s++;
	}
	*dst = '\0';
}

/*
 * The host entry R counts for, or NULL when the filter leaves R out.  An
 * end record without a host takes the host of its connection (CS, when
 * the cache holds it).
 */
static struct logview_entry *
host_for(struct logview *lv, const struct rec *r, const struct conn_slot *cs)
{
	char lh[HOST_MAX + 1];

	if (r->s[FIELD_HOST] == NULL && cs != NULL)
		return cs->host;
	if (!filter_match(lv, r->s[FIELD_HOST]))
		return NULL;
	lower(lh, r->s[FIELD_HOST] != NULL ? r->s[FIELD_HOST] : "");
	return table_get(&lv->hosts, lh, (int)r->n[FIELD_PORT], NULL, 0);
}

static void
add_secret(struct logview_entry *h, const char *name)
{
	size_t i;

	for (i = 0; i < h->nsecrets; i++)
		if (strncmp(h->secrets[i], name, WORD_KEEP) == 0 &&
		    strlen(h->secrets[i]) == utf8_cut(name, WORD_KEEP))
			return;
	if (h->nsecrets == SECRETS_MAX) {
		h->more_secrets = 1;
		return;
	}
	if ((h->secrets[h->nsecrets] = dup_cut(name, WORD_KEEP, NULL)) != NULL)
		h->nsecrets++;
}

/*
 * How many requests R stands for: a "count" (identical denials folded
 * into one record, or requests summarised past the log's limit), else 1.
 */
static uint64_t
weight(const struct rec *r)
{
	return r->n[FIELD_COUNT] >= 0 ? (uint64_t)r->n[FIELD_COUNT] : 1;
}

/*
 * An ICMP or raw socket the sandbox refused (proxy/refused.h's notes):
 * method "ICMP" or "RAW", and no host (a socket has no destination;
 * an entry without one has "").
 */
static int
is_icmp(const char *method, const char *host)
{
	return method != NULL && (host == NULL || host[0] == '\0') &&
	    (strcmp(method, "ICMP") == 0 || strcmp(method, "RAW") == 0);
}

/* Counts a request R of host A that arrived by capture. */
static void
count_captured(struct logview_entry *a, const struct rec *r)
{
	uint64_t w = weight(r);

	a->captured = sat_add(a->captured, w);
	if (!is_allow(r))
		a->captured_denied = sat_add(a->captured_denied, w);
	if (r->s[FIELD_METHOD] != NULL &&
	    strcmp(r->s[FIELD_METHOD], "UDP") == 0)
		a->udp = 1;
	if (is_icmp(r->s[FIELD_METHOD], r->s[FIELD_HOST]))
		a->icmp = 1;
}

static void
count_agg(struct logview_entry *a, const struct rec *r)
{
	uint64_t w = weight(r);

	a->records++;
	a->vias |= r->via;
	if (r->request) {
		a->requests = sat_add(a->requests, w);
		a->n[decided(r)] = sat_add(a->n[decided(r)], w);
		if (r->via == LOGVIEW_VIA_CAPTURE)
			count_captured(a, r);
	}
	if (r->n[FIELD_BYTES_UP] > 0)
		a->bytes_up = sat_add(a->bytes_up, r->n[FIELD_BYTES_UP]);
	if (r->n[FIELD_BYTES_DOWN] > 0)
		a->bytes_down = sat_add(a->bytes_down, r->n[FIELD_BYTES_DOWN]);
}

/* Keeps the first value of an optional detail of a denial. */
static void
keep(char **dst, const char *s, size_t max, int *cut)
{
	if (*dst == NULL && s != NULL)
		*dst = dup_cut(s, max, cut);
}

/*
 * Counts a denial of R, which counts for host H, for REASON: a policy's
 * (R the request), or the proxy's refusal after an allow (R the end).
 */
static void
count_denial(struct logview *lv, const struct rec *r,
    const struct logview_entry *h, const char *reason)
{
	size_t rlen = utf8_cut(reason, REASON_KEEP);
	struct logview_entry *d = lv->denials.others;
	enum logview_class c =
	    r->request ? LOGVIEW_CLASS_DENIED : LOGVIEW_CLASS_REFUSED;

	if (h->host != NULL)
		d = table_get(&lv->denials, h->host, h->port, reason, rlen);
	d->records++;
	d->vias |= r->via;
	d->requests = sat_add(d->requests, r->request ? weight(r) : 1);
	d->n[c] = sat_add(d->n[c], r->request ? weight(r) : 1);
	if (d == lv->denials.others)
		return;
	d->reason_cut = reason[rlen] != '\0';
	keep(&d->path, r->s[FIELD_PATH], PATH_KEEP, &d->path_cut);
	keep(&d->method, r->s[FIELD_METHOD], WORD_KEEP, NULL);
	keep(&d->rule, r->s[FIELD_RULE], RULE_KEEP, NULL);
}

static void
keep_ts(char **dst, const char *ts, int sign)
{
	char *s;
	int c;

	if (*dst != NULL &&
	    ((c = strcmp(ts, *dst)) == 0 || (c > 0) != (sign > 0)))
		return;
	if ((s = strdup(ts)) == NULL)
		return;
	free(*dst);
	*dst = s;
}

static void
count_totals(struct logview *lv, const struct rec *r)
{
	struct logview_totals *t = &lv->t;
	uint64_t w = weight(r);

	t->records++;
	if (r->request) {
		t->requests = sat_add(t->requests, w);
		t->n[decided(r)] = sat_add(t->n[decided(r)], w);
	}
	if (r->n[FIELD_BYTES_UP] > 0)
		t->bytes_up = sat_add(t->bytes_up, r->n[FIELD_BYTES_UP]);
	if (r->n[FIELD_BYTES_DOWN] > 0)
		t->bytes_down = sat_add(t->bytes_down, r->n[FIELD_BYTES_DOWN]);
	if (r->s[FIELD_TS] != NULL) {
		keep_ts(&lv->first_ts, r->s[FIELD_TS], -1);
		keep_ts(&lv->last_ts, r->s[FIELD_TS], 1);
	}
}

/* Whether slot CS holds the connection KEY. */
static int
conn_mine(const struct conn_slot *cs, uint64_t key)
{
	return cs != NULL && cs->used && cs->key == key;
}

/*
 * Remembers in CS, the slot of R's connection KEY, its host entry H and
 * whether its last request was allowed.
 */
static void
conn_note(struct conn_slot *cs, uint64_t key, const struct rec *r,
    struct logview_entry *h)
{
	if (cs == NULL || (r->s[FIELD_HOST] == NULL && !conn_mine(cs, key)))
		return;
	if (!conn_mine(cs, key))
		cs->allowed = 0;
	if (r->s[FIELD_HOST] != NULL) {
		cs->key = key;
		cs->host = h;
		cs->used = 1;
	}
	if (r->request)
		cs->allowed = is_allow(r);
}

/*
 * Moves one allowed request of host H into class C (the end record said
 * what became of it), in H and in the totals alike.  Returns 0, or -1
 * when there is no allowed request to move (a "count" of 0).
 */
static int
reclass(struct logview *lv, struct logview_entry *h, enum logview_class c)
{
	if (h->n[LOGVIEW_CLASS_ALLOWED] == 0 ||
	    lv->t.n[LOGVIEW_CLASS_ALLOWED] == 0)
		return -1;
	h->n[LOGVIEW_CLASS_ALLOWED]--;
	lv->t.n[LOGVIEW_CLASS_ALLOWED]--;
	h->n[c] = sat_add(h->n[c], 1);
	lv->t.n[c] = sat_add(lv->t.n[c], 1);
	return 0;
}

/*
 * Counts the end R of an allowed CONNECT whose client refused the run CA
 * (for host H), listed apart.
 */
static void
count_distrust(struct logview *lv, const struct rec *r, struct logview_entry *h)
{
	const char *why = r->s[FIELD_ERROR];
	size_t rlen = utf8_cut(why, REASON_KEEP);
	struct logview_entry *d = lv->distrust.others;

	if (h->host != NULL)
		d = table_get(&lv->distrust, h->host, h->port, why, rlen);
	d->records++;
	d->requests++;
	d->n[LOGVIEW_CLASS_DISTRUST]++;
	if (d != lv->distrust.others)
		d->reason_cut = why[rlen] != '\0';
}

/*
 * Counts a "dns" record: a name the sandbox asked its stub for, by name
 * (no host: the names past the stub's table, "others").
 */
static void
count_lookup(struct logview *lv, const struct rec *r)
{
	const char *host = r->s[FIELD_HOST];
	struct logview_entry *e = lv->lookups.others;
	char lh[HOST_MAX + 1];
	enum logview_class c;

	if (!filter_match(lv, host))
		return;
	count_totals(lv, r);
	lv->t.lookups = sat_add(lv->t.lookups, weight(r));
	if (host != NULL) {
		lower(lh, host);
		e = table_get(&lv->lookups, lh, -1, NULL, 0);
	}
	e->records++;
	e->requests = sat_add(e->requests, weight(r));
	e->answers |= r->answer;
	c = r->answer & (LOGVIEW_ANSWER_SYNTHETIC | LOGVIEW_ANSWER_NODATA)
	    ? LOGVIEW_CLASS_ALLOWED
	    : LOGVIEW_CLASS_DENIED;
	e->n[c] = sat_add(e->n[c], weight(r));
}

/*
 * The class an end record R moves its allowed request into, or ALLOWED
 * when it stays there: status 403 is the proxy's refusal (a private
 * address, say), 502 or 504 with an error the proxy's answer when the
 * server gave none (no address, refused, timed out, a malformed
 * response), and a client's alert or hang-up in the handshake its
 * distrust of the run CA.  A server's own 502 comes without an error.
 */
static enum logview_class
ended(const struct rec *r)
{
	json_int_t st = r->n[FIELD_STATUS];

	if (st == 403)
		return LOGVIEW_CLASS_REFUSED;
	if ((st == 502 || st == 504) && r->s[FIELD_ERROR] != NULL)
		return LOGVIEW_CLASS_FAILED;
	if (field_is_distrust(r->s[FIELD_ERROR]))
		return LOGVIEW_CLASS_DISTRUST;
	return LOGVIEW_CLASS_ALLOWED;
}

/*
 * Counts the end R of the allowed request before it on its connection,
 * for host H: its class, and the lists of denials and distrust.
 */
static void
count_end(struct logview *lv, const struct rec *r, struct logview_entry *h)
{
	enum logview_class c = ended(r);

	if (c == LOGVIEW_CLASS_ALLOWED || reclass(lv, h, c) != 0)
		return;
	if (c == LOGVIEW_CLASS_REFUSED)
		count_denial(lv, r, h,
		    r->s[FIELD_ERROR] != NULL ? r->s[FIELD_ERROR]
		                              : "refused by the proxy (403)");
	else if (c == LOGVIEW_CLASS_DISTRUST)
		count_distrust(lv, r, h);
}

/* --- a broker's clients -------------------------------------------------- */

#define CMD_KEEP 64 /* bytes of a command name kept */
#define SANDBOX_KEEP 64 /* bytes of a sandbox id compared */

/* The entry of UID, added when new; "others" when full or short. */
static struct logview_client *
client_get(struct logview *lv, uint32_t uid)
{
	const struct htab_list *l;
	struct logview_client *c, **v;
	size_t cap;

	l = htab_find(lv->client_idx, &uid, sizeof(uid));
	if (l != NULL && l->n > 0)
		return lv->clients[l->ids[0]];
	if (lv->nclients >= LOGVIEW_CLIENTS_MAX)
		return lv->client_others;
	if (lv->nclients == lv->capclients) {
		cap = lv->capclients ? 2 * lv->capclients : 16;
		v = reallocarray(lv->clients, cap, sizeof(*v));
		if (v == NULL)
			return lv->client_others;
		lv->clients = v;
		lv->capclients = cap;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return lv->client_others;
	c->uid = uid;
	if (htab_try_add(lv->client_idx, &uid, sizeof(uid), 0,
	        (uint32_t)lv->nclients) != 0) {
		free(c);
		return lv->client_others;
	}
	lv->clients[lv->nclients++] = c;
	return c;
}

static void
client_free(struct logview_client *c)
{
	size_t i;

	if (c == NULL)
		return;
	for (i = 0; i < c->ncmds; i++)
		free(c->cmds[i]);
	free(c);
}

static void
add_cmd(struct logview_client *c, const char *cmd)
{
	size_t i, n = utf8_cut(cmd, CMD_KEEP);

	for (i = 0; i < c->ncmds; i++)
		if (strlen(c->cmds[i]) == n && strncmp(c->cmds[i], cmd, n) == 0)
			return;
	if (c->ncmds == LOGVIEW_CMDS_MAX) {
		c->more_cmds = 1;
		return;
	}
	if ((c->cmds[c->ncmds] = dup_cut(cmd, CMD_KEEP, NULL)) != NULL)
		c->ncmds++;
}

/*
 * Counts R for its client, when it names one: its command, its sandbox
 * (a new (uid, sandbox) pair, while LOGVIEW_KEYS_MAX pairs are kept),
 * its requests.
 */
static void
count_client(struct logview *lv, const struct rec *r)
{
	const char *sb = r->s[FIELD_SANDBOX] != NULL ? r->s[FIELD_SANDBOX] : "";
	unsigned char key[sizeof(uint32_t) + SANDBOX_KEEP];
	struct logview_client *c;
	uint32_t uid;
	size_t n;

	if (r->n[FIELD_CLIENT_UID] < 0)
		return;
	uid = (uint32_t)r->n[FIELD_CLIENT_UID];
	c = client_get(lv, uid);
	if (r->s[FIELD_CLIENT_CMD] != NULL)
		add_cmd(c, r->s[FIELD_CLIENT_CMD]);
	n = utf8_cut(sb, SANDBOX_KEEP);
	memcpy(key, &uid, sizeof(uid));
	memcpy(key + sizeof(uid), sb, n);
	n += sizeof(uid);
	if (htab_find(lv->client_sb, key, n) == NULL &&
	    htab_count(lv->client_sb) < LOGVIEW_KEYS_MAX &&
	    htab_try_add(lv->client_sb, key, n, 0, 0) == 0)
		c->sandboxes++;
	if (!r->request)
		return;
	c->requests = sat_add(c->requests, weight(r));
	if (!is_allow(r))
		c->denied = sat_add(c->denied, weight(r));
}

static void
refusal_free(struct logview_refusal *f)
{
	if (f == NULL)
		return;
	free(f->policy);
	free(f->reason);
	free(f);
}

/* A new refusal entry for R, or NULL. */
static struct logview_refusal *
refusal_new(const struct rec *r)
{
	struct logview_refusal *f;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return NULL;
	f->has_uid = r->n[FIELD_CLIENT_UID] >= 0;
	f->uid = f->has_uid ? (uint32_t)r->n[FIELD_CLIENT_UID] : 0;
	if (r->s[FIELD_POLICY] != NULL &&
	    (f->policy = dup_cut(r->s[FIELD_POLICY], WORD_KEEP, NULL)) == NULL)
		goto fail;
	if (r->s[FIELD_REASON] != NULL &&
	    (f->reason = dup_cut(r->s[FIELD_REASON], REASON_KEEP, NULL)) ==
	        NULL)
		goto fail;
	return f;
fail:
	refusal_free(f);
	return NULL;
}

/*
 * The key of R's refusal in BUF: uid, policy and reason as kept, any
 * "not granted" reason as those words.
 */
static size_t
refusal_key(const struct rec *r, char *buf)
{
	const char *p = r->s[FIELD_POLICY], *why = r->s[FIELD_REASON];
	size_t n = 0, k;

	buf[n++] = r->n[FIELD_CLIENT_UID] >= 0;
	memcpy(buf + n, &r->n[FIELD_CLIENT_UID], sizeof(json_int_t));
	n += sizeof(json_int_t);
	buf[n++] = p != NULL;
	k = p != NULL ? utf8_cut(p, WORD_KEEP) : 0;
	memcpy(buf + n, p != NULL ? p : "", k);
	n += k;
	buf[n++] = '\0';
	/* The words differ by the user's name only: one entry per uid. */
	if (why != NULL && strstr(why, LOGVIEW_NOT_GRANTED) != NULL)
		why = LOGVIEW_NOT_GRANTED;
	buf[n++] = why != NULL;
	k = why != NULL ? utf8_cut(why, REASON_KEEP) : 0;
	memcpy(buf + n, why != NULL ? why : "", k);
	return n + k;
}

/*
 * Counts a "client" record: a refusal when it denies (an allow is the
 * sandbox its records then show).  With no host, it passes no filter.
 */
static void
count_refusal(struct logview *lv, const struct rec *r)
{
	/* 4 bytes: uid said, policy said, the policy's NUL, reason said */
	char key[4 + sizeof(json_int_t) + WORD_KEEP + REASON_KEEP];
	const struct htab_list *l;
	struct logview_refusal *f, **v;
	size_t n, cap;

	if (lv->nfilter > 0)
		return;
	count_totals(lv, r);
	if (is_allow(r) || r->s[FIELD_DECISION] == NULL)
		return;
	n = refusal_key(r, key);
	if ((l = htab_find(lv->ref_idx, key, n)) != NULL && l->n > 0) {
		lv->refs[l->ids[0]]->count++;
		return;
	}
	if (lv->nrefs == lv->caprefs && lv->nrefs < LOGVIEW_CLIENTS_MAX) {
		cap = lv->caprefs ? 2 * lv->caprefs : 16;
		if ((v = reallocarray(lv->refs, cap, sizeof(*v))) != NULL) {
			lv->refs = v;
			lv->caprefs = cap;
		}
	}
	if (lv->nrefs == lv->caprefs || (f = refusal_new(r)) == NULL) {
		lv->ref_others++;
		return;
	}
	if (htab_try_add(lv->ref_idx, key, n, 0, (uint32_t)lv->nrefs) != 0) {
		refusal_free(f);
		lv->ref_others++;
		return;
	}
	f->count = 1;
	lv->refs[lv->nrefs++] = f;
}

/*
 * Counts R.  A request is counted in the class its decision says; the
 * end of an allowed request may move it to another (ended()), once.
 */
static void
record(struct logview *lv, const struct rec *r)
{
	struct conn_slot *cs;
	struct logview_entry *h;
	uint64_t key = 0;

	if (r->client) {
		count_refusal(lv, r);
		return;
	}
	if (r->dns) {
		if (filter_match(lv, r->s[FIELD_HOST]))
			count_client(lv, r);
		count_lookup(lv, r);
		return;
	}
	cs = conn_slot(lv, r, &key);
	h = host_for(lv, r, conn_mine(cs, key) ? cs : NULL);
	conn_note(cs, key, r, h);
	if (h == NULL)
		return;
	count_client(lv, r);
	count_totals(lv, r);
	count_agg(h, r);
	if (r->s[FIELD_SECRET] != NULL)
		add_secret(h, r->s[FIELD_SECRET]);
	if (r->request && !is_allow(r))
		count_denial(lv, r, h,
		    r->s[FIELD_REASON] != NULL ? r->s[FIELD_REASON] : "");
	else if (!r->request && conn_mine(cs, key) && cs->allowed &&
	    ended(r) != LOGVIEW_CLASS_ALLOWED) {
		cs->allowed = 0;
		count_end(lv, r, h);
	}
}

/* --- public: feeding ---------------------------------------------------- */

static void
malformed(struct logview *lv, uint64_t lineno)
{
	lv->t.malformed++;
	if (lv->t.first_malformed == 0)
		lv->t.first_malformed = lineno;
}

static int
blank(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return 0;
	return 1;
}

int
logview_feed(struct logview *lv, const char *line, size_t len, uint64_t lineno)
{
	json_error_t e;
	json_t *o = NULL;
	struct rec r;
	int ret = -1;

	lv->why[0] = '\0';
	if (len > LOGVIEW_LINE_MAX)
		whyf(lv, "line longer than %d bytes", LOGVIEW_LINE_MAX);
	else if (blank(line, len))
		ret = 0;
	else if ((o = json_loadb(line, len,
	              JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &e)) == NULL)
		whyf(lv, "not JSON: %s", e.text);
	else if (!json_is_object(o))
		whyf(lv, "not an object");
	else if (rec_parse(lv, o, &r) == 0) {
		record(lv, &r);
		ret = 0;
	}
	if (ret != 0)
		malformed(lv, lineno);
	json_decref(o);
	return ret;
}

/* Feeds one line read from a file, reporting it when it is malformed. */
static void
read_line(struct logview *lv, const char *buf, size_t len, int toolong,
    uint64_t lineno, const char *name, FILE *err)
{
	if (toolong) {
		whyf(lv, "line longer than %d bytes", LOGVIEW_LINE_MAX);
		malformed(lv, lineno);
	} else if (logview_feed(lv, buf, len, lineno) == 0)
		return;
	fprintf(err, "%s:%" PRIu64 ": malformed record (%s)\n", name, lineno,
	    lv->why);
}

int
logview_read(struct logview *lv, FILE *in, const char *name, FILE *err)
{
	uint64_t lineno = 0;
	size_t len = 0;
	char *buf;
	int c, toolong = 0, ret = -1, saved;

	if ((buf = malloc(LOGVIEW_LINE_MAX)) == NULL)
		return -1;
	while ((c = getc_unlocked(in)) != EOF) {
		if (c != '\n') {
			if (len < LOGVIEW_LINE_MAX)
				buf[len++] = (char)c;
			else
				toolong = 1;
			continue;
		}
		read_line(lv, buf, len, toolong, ++lineno, name, err);
		len = 0;
		toolong = 0;
	}
	saved = errno;
	if (!ferror(in)) {
		if (len > 0 || toolong)
			lv->t.incomplete++;
		ret = 0;
	}
	free(buf);
	errno = saved;
	return ret;
}

/* --- advice for a denial ------------------------------------------------ */

#define UDP_NOTE                                                               \
	"no allow can permit this: UDP other than DNS never leaves the "       \
	"sandbox"
#define ICMP_NOTE "ICMP never leaves the sandbox; no rule can allow it"

static const struct {
	const char *prefix, *infix;
	enum logview_kind kind;
} kinds[] = {
    {"no rule allows ", NULL, LOGVIEW_NORULE},
    {"port ", " is not allowed for ", LOGVIEW_PORT},
    {"port ", " is not captured", LOGVIEW_UNCAPTURED},
    {"path ", " is not allowed by rule ", LOGVIEW_PATH},
    {"method ", " is not allowed by rule ", LOGVIEW_METHOD},
    {"denied by rule ", NULL, LOGVIEW_DENYRULE},
    {"credentials are never sent over plain HTTP", NULL, LOGVIEW_PLAIN},
    {"", " not allowed without 'private' in the rule", LOGVIEW_PRIVATE},
};

/* The kind of denial REASON (as policy_decide() words it) describes. */
static enum logview_kind
denial_kind(const char *reason)
{
	size_t i, n;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		n = strlen(kinds[i].prefix);
		if (strncmp(reason, kinds[i].prefix, n) == 0 &&
		    (kinds[i].infix == NULL ||
		        strstr(reason + n, kinds[i].infix) != NULL))
			return kinds[i].kind;
	}
	return LOGVIEW_OTHER;
}

/* A byte that a policy word may hold unquoted (policy/parse.c). */
static int
word_byte(unsigned char c)
{
	return c > ' ' && c != 0x7f && c != '{' && c != '}' && c != ';' &&
	    c != '"' && c != '#' && c != '\\';
}

/* Host bytes a target may name: a DNS name, an address, no syntax. */
static int
host_ok(const char *h)
{
	if (h == NULL || *h == '\0')
		return 0;
	for (; *h != '\0'; h++)
		if (!((*h >= 'a' && *h <= 'z') || (*h >= '0' && *h <= '9') ||
		        *h == '.' || *h == '-' || *h == '_' || *h == ':'))
			return 0;
	return 1;
}

/* D's target as a policy writes it: "host:port", "[v6]:port"; -1 if not. */
static int
target_str(const struct logview_entry *d, char *buf, size_t n)
{
	size_t o;

	if (!host_ok(d->host))
		return -1;
	snprintf(buf, n, strchr(d->host, ':') != NULL ? "[%s]" : "%s", d->host);
	o = strlen(buf);
	if (d->port >= 0)
		snprintf(buf + o, n - o, ":%d", d->port);
	return 0;
}

/* A byte a path pattern cannot hold (policy/parse.c's bad_pattern_byte). */
static int
unspellable(unsigned char c)
{
	return c < ' ' || c == 0x7f || c == '%' || c == '?' || c == '#' ||
	    c == '\\';
}

/*
 * The narrow pattern for the denied PATH, as a policy word (quoted if
 * needed), or -1: its directory plus '*' ("/a/b/c" gives "/a/b/" and a
 * star), or the path itself when that directory is the root ("/a" gives
 * "/a"), so the advice is never the root and a star, which would open
 * the whole host.  -1 when the pattern would hold a byte a pattern
 * cannot, or a '*' (a wildcard there would reach further than the
 * denied path).
 */
static int
path_word(const char *path, char *buf, size_t n)
{
	const char *slash = strrchr(path, '/');
	size_t i, o = 0, len;
	int quote = 0, exact;

	if (path[0] != '/' || slash == NULL)
		return -1;
	exact = slash == path;
	len = exact ? strlen(path) : (size_t)(slash - path) + 1;
	if (len + 8 > n)
		return -1;
	for (i = 0; i < len; i++) {
		if (unspellable((unsigned char)path[i]) || path[i] == '*')
			return -1;
		quote |= !word_byte((unsigned char)path[i]);
	}
	if (quote)
		buf[o++] = '"';
	for (i = 0; i < len && o + 4 < n; i++) {
		if (path[i] == '"')
			buf[o++] = '\\';
		buf[o++] = path[i];
	}
	if (i < len)
		return -1;
	if (!exact)
		buf[o++] = '*';
	if (quote)
		buf[o++] = '"';
	buf[o] = '\0';
	return 0;
}

/* The text of REASON between PREFIX and INFIX (the last one), or -1. */
static int
reason_part(const struct logview_entry *d, const char *prefix,
    const char *infix, char *buf, size_t n)
{
	const char *s = d->reason + strlen(prefix), *end = NULL, *p = s;

	if (d->reason_cut)
		return -1;
	while ((p = strstr(p, infix)) != NULL)
		end = p++;
	if (end == NULL || (size_t)(end - s) >= n)
		return -1;
	memcpy(buf, s, end - s);
	buf[end - s] = '\0';
	return 0;
}

static int
method_ok(const char *m)
{
	if (*m == '\0')
		return 0;
	for (; *m != '\0'; m++)
		if (!word_byte((unsigned char)*m))
			return 0;
	return 1;
}

/*
 * The "paths" option for D's path directory into WORD, or -1.  A method
 * denial may lack a path: WORD is then "".
 */
static int
paths_opt(
    const struct logview_entry *d, enum logview_kind k, char *word, size_t n)
{
	char path[PATH_KEEP + 1], w[2 * PATH_KEEP + 8];

	word[0] = '\0';
	if (d->path != NULL && !d->path_cut)
		snprintf(path, sizeof(path), "%s", d->path);
	else if (k == LOGVIEW_METHOD && d->path == NULL)
		return 0;
	else if (k != LOGVIEW_PATH ||
	    reason_part(d, "path ", " is not allowed by rule ", path,
	        sizeof(path)) != 0)
		return -1;
	if (path_word(path, w, sizeof(w)) != 0)
		return -1;
	snprintf(word, n, " paths %s", w);
	return 0;
}

/* The options block of an allow for a path or method denial, or -1. */
static int
block_str(
    const struct logview_entry *d, enum logview_kind k, char *buf, size_t n)
{
	char paths[2 * PATH_KEEP + 16], m[WORD_KEEP + 1];

	if (paths_opt(d, k, paths, sizeof(paths)) != 0)
		return -1;
	if (k == LOGVIEW_PATH) {
		snprintf(buf, n, " {%s }", paths);
		return 0;
	}
	if (d->method != NULL)
		snprintf(m, sizeof(m), "%s", d->method);
	else if (reason_part(d, "method ", " is not allowed by rule ", m,
	             sizeof(m)) != 0)
		return -1;
	if (!method_ok(m))
		return -1;
	snprintf(buf, n, " { methods %s%s }", m, paths);
	return 0;
}

static void
advise_deny(const struct logview_entry *d, struct logview_advice *a)
{
	char rule[RULE_KEEP + 1];
	const char *r = d->rule;

	if (r == NULL && !d->reason_cut) {
		snprintf(rule, sizeof(rule), "%s",
		    d->reason + strlen("denied by rule "));
		r = rule;
	}
	if (r != NULL)
		snprintf(a->note, sizeof(a->note),
		    "denied by the deny rule at %s: an allow cannot override "
		    "a deny; change that rule if this should pass",
		    r);
	else
		snprintf(a->note, sizeof(a->note),
		    "denied by a deny rule: an allow cannot override a deny");
}

void
logview_advise(const struct logview_entry *d, struct logview_advice *a)
{
	char target[2 * HOST_MAX + 16], block[ADVICE_MAX - sizeof(target) - 8];

	a->allow[0] = a->note[0] = '\0';
	a->kind = d->host != NULL ? denial_kind(d->reason) : LOGVIEW_OTHER;
	if (d->host != NULL && d->method != NULL &&
	    strcmp(d->method, "UDP") == 0)
		a->kind = LOGVIEW_UDP;
	if (is_icmp(d->method, d->host))
		a->kind = LOGVIEW_ICMP;
	block[0] = '\0';
	if (a->kind == LOGVIEW_UDP)
		snprintf(a->note, sizeof(a->note), "%s", UDP_NOTE);
	else if (a->kind == LOGVIEW_ICMP)
		snprintf(a->note, sizeof(a->note), "%s", ICMP_NOTE);
	else if (a->kind == LOGVIEW_DENYRULE)
		advise_deny(d, a);
	else if (a->kind == LOGVIEW_PLAIN)
		snprintf(a->note, sizeof(a->note),
		    "no allow can permit this: use HTTPS");
	else if (a->kind == LOGVIEW_OTHER)
		return;
	else if (target_str(d, target, sizeof(target)) != 0)
		snprintf(a->note, sizeof(a->note),
		    "no allow line: the log names no usable host");
	else if ((a->kind == LOGVIEW_PATH || a->kind == LOGVIEW_METHOD) &&
	    block_str(d, a->kind, block, sizeof(block)) != 0)
		snprintf(a->note, sizeof(a->note),
		    "no allow line: the log names no usable %s",
		    a->kind == LOGVIEW_PATH ? "path" : "method and path");
	else
		snprintf(a->allow, sizeof(a->allow), "allow %s%s", target,
		    a->kind == LOGVIEW_PRIVATE ? " { private }" : block);
	if (a->kind == LOGVIEW_UNCAPTURED && a->allow[0] != '\0')
		snprintf(a->note, sizeof(a->note),
		    "the ports of allow rules are captured (not those of a "
		    "range of more than 256 ports)");
	if (a->kind == LOGVIEW_PRIVATE && a->allow[0] != '\0' &&
	    d->rule != NULL)
		snprintf(a->note, sizeof(a->note),
		    "before rule %s, which decided (the first matching allow "
		    "wins), or add private to that rule",
		    d->rule);
}

/* A name or an address ("192.0.2.7", "2001:db8::1")? */
static int
is_address(const char *h)
{
	if (strchr(h, ':') != NULL)
		return 1;
	for (; *h != '\0'; h++)
		if (!((*h >= '0' && *h <= '9') || *h == '.'))
			return 0;
	return 1;
}

void
logview_capture_hint(const struct logview_entry *h,
    char allowed[LOGVIEW_ADVICE_MAX], char denied[LOGVIEW_ADVICE_MAX])
{
	char target[2 * HOST_MAX + 16], name[4 * HOST_MAX + 1];

	allowed[0] = denied[0] = '\0';
	if (h->icmp && h->captured_denied > 0)
		snprintf(denied, LOGVIEW_ADVICE_MAX, "%s", ICMP_NOTE);
	if (h->host == NULL || h->host[0] == '\0')
		return;
	logview_esc_buf(name, sizeof(name), h->host);
	if (h->captured > h->captured_denied)
		snprintf(allowed, LOGVIEW_ADVICE_MAX,
		    is_address(h->host)
		        ? "a program that ignores the proxy variables "
		          "connected to %s itself; it was captured"
		        : "%s was resolved by a program that ignores the proxy "
		          "variables; it was captured",
		    name);
	if (h->captured_denied == 0)
		return;
	if (h->udp)
		snprintf(denied, LOGVIEW_ADVICE_MAX, "%s", UDP_NOTE);
	else if (h->port < 0 || target_str(h, target, sizeof(target)) != 0)
		snprintf(denied, LOGVIEW_ADVICE_MAX,
		    "no allow line: the log names no usable host and port");
	else
		snprintf(denied, LOGVIEW_ADVICE_MAX,
		    "to let it through: allow %s", target);
}

const char *
logview_via_name(unsigned v)
{
	size_t i;

	for (i = 0; i < sizeof(via_names) / sizeof(via_names[0]); i++)
		if (v == 1u << i)
			return via_names[i];
	return "?";
}

const char *
logview_answer_name(unsigned a)
{
	size_t i;

	for (i = 0; i < sizeof(answer_names) / sizeof(answer_names[0]); i++)
		if (a == 1u << i)
			return answer_names[i];
	return "other";
}

/* The hosts some of whose requests arrived by capture, sorted by CMP. */
static const struct logview_entry **
captured_sorted(const struct logview *lv,
    int (*cmp)(const void *, const void *), size_t *np)
{
	const struct logview_entry **v;
	size_t i, n = 0;

	if ((v = calloc(lv->hosts.n + 1, sizeof(*v))) == NULL)
		return NULL;
	for (i = 0; i < lv->hosts.n; i++)
		if (lv->hosts.v[i]->captured > 0)
			v[n++] = lv->hosts.v[i];
	qsort(v, n, sizeof(*v), cmp);
	if (lv->hosts.others->captured > 0)
		v[n++] = lv->hosts.others;
	*np = n;
	return v;
}

/* --- public: what the printers read ------------------------------------ */

const struct logview_entry **
logview_sorted(const struct logview *lv, enum logview_list which,
    int (*cmp)(const void *, const void *), size_t *np)
{
	const struct table *t = which == LOGVIEW_DENIALS ? &lv->denials
	    : which == LOGVIEW_LOOKUPS                   ? &lv->lookups
	    : which == LOGVIEW_DISTRUST                  ? &lv->distrust
	                                                 : &lv->hosts;

	if (which == LOGVIEW_CAPTURED)
		return captured_sorted(lv, cmp, np);
	return table_sorted(t, cmp, np);
}

const char *
logview_class_name(enum logview_class c)
{
	return c < LOGVIEW_CLASS_NCLASSES ? classes[c].name : "?";
}

const char *
logview_class_words(enum logview_class c)
{
	return c < LOGVIEW_CLASS_NCLASSES ? classes[c].words : "?";
}

uint64_t
logview_entry_count(const struct logview_entry *a)
{
	uint64_t n = 0;
	int c;

	for (c = 0; c < LOGVIEW_CLASS_NCLASSES; c++)
		n = sat_add(n, a->n[c]);
	return n;
}

const char *
logview_kind_name(enum logview_kind k)
{
	return kind_names[k];
}

int
logview_clients_shown(const struct logview *lv)
{
	return htab_count(lv->client_sb) > 1 || lv->nclients > 1 ||
	    lv->nrefs > 0 || lv->ref_others > 0;
}

static int
cmp_client(const void *pa, const void *pb)
{
	const struct logview_client *a =
	    *(const struct logview_client *const *)pa;
	const struct logview_client *b =
	    *(const struct logview_client *const *)pb;

	return a->uid < b->uid ? -1 : a->uid > b->uid;
}

const struct logview_client **
logview_clients(const struct logview *lv, size_t *np)
{
	const struct logview_client **v;
	size_t n = lv->nclients;

	if ((v = calloc(n + 1, sizeof(*v))) == NULL)
		return NULL;
	if (n > 0)
		memcpy(v, lv->clients, n * sizeof(*v));
	qsort(v, n, sizeof(*v), cmp_client);
	if (lv->client_others->sandboxes > 0 || lv->client_others->requests > 0)
		v[n++] = lv->client_others;
	*np = n;
	return v;
}

static int
cmp_refusal(const void *pa, const void *pb)
{
	const struct logview_refusal *a =
	    *(const struct logview_refusal *const *)pa;
	const struct logview_refusal *b =
	    *(const struct logview_refusal *const *)pb;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return a->uid < b->uid ? -1 : a->uid > b->uid;
}

const struct logview_refusal **
logview_refusals(const struct logview *lv, size_t *np, uint64_t *others)
{
	const struct logview_refusal **v;
	size_t n = lv->nrefs;

	if ((v = calloc(n + 1, sizeof(*v))) == NULL)
		return NULL;
	if (n > 0)
		memcpy(v, lv->refs, n * sizeof(*v));
	qsort(v, n, sizeof(*v), cmp_refusal);
	*np = n;
	*others = lv->ref_others;
	return v;
}

/* --- test access -------------------------------------------------------- */

static const struct logview_entry *
find(const struct table *t, const char *host, int port, const char *reason)
{
	if (host == NULL)
		return t->others;
	return table_find(
	    t, host, port, reason, reason != NULL ? strlen(reason) : 0);
}

int
logview_host(const struct logview *lv, const char *host, int port,
    struct logview_host_stats *st)
{
	const struct logview_entry *a = find(&lv->hosts, host, port, NULL);

	if (a == NULL || a->records == 0)
		return -1;
	st->requests = a->requests;
	st->allowed = a->n[LOGVIEW_CLASS_ALLOWED];
	st->denied = a->n[LOGVIEW_CLASS_DENIED];
	st->refused = a->n[LOGVIEW_CLASS_REFUSED];
	st->failed = a->n[LOGVIEW_CLASS_FAILED];
	st->distrust = a->n[LOGVIEW_CLASS_DISTRUST];
	st->bytes_up = a->bytes_up;
	st->bytes_down = a->bytes_down;
	st->nsecrets = a->nsecrets;
	return 0;
}

uint64_t
logview_denials(
    const struct logview *lv, const char *host, int port, const char *reason)
{
	const struct logview_entry *a = find(&lv->denials, host, port, reason);

	return a != NULL ? logview_entry_count(a) : 0;
}

size_t
logview_nhosts(const struct logview *lv)
{
	return lv->hosts.n;
}

size_t
logview_ndenials(const struct logview *lv)
{
	return lv->denials.n;
}

int
logview_cp_table_ok(void)
{
	size_t i, n = sizeof(unsafe_cps) / sizeof(unsafe_cps[0]);

	for (i = 0; i < n; i++)
		if (unsafe_cps[i].lo > unsafe_cps[i].hi ||
		    (i > 0 && unsafe_cps[i].lo <= unsafe_cps[i - 1].hi))
			return 0;
	return 1;
}
