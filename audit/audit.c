/*
 * audit.c: the audit log, one JSON object per line (DESIGN.md, "Audit
 * log").
 *
 * Records are formatted straight into the line buffer, with no JSON
 * library: building a jansson object per record and dumping it cost a
 * tenth of the engine's CPU per intercepted request (bench/README.md).
 * The text is byte for byte what jansson's json_dumpb() wrote with
 * JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII (test_audit.c
 * compares the two on many records): no spaces, fields in table order,
 * '"' and '\\' escaped, '/' not, every character above U+007F as \uXXXX in
 * upper-case hex (a surrogate pair above U+FFFF), integers as "%lld".
 *
 * Every string is sanitised as it is escaped: bytes that are not valid
 * UTF-8, and control characters (C0, DEL, C1), become '?', so that
 * whatever a client sent, each line is valid JSON, printable ASCII only
 * and safe to read in a terminal.  A line, newline included, stays below
 * AUDIT_LINE_MAX: when a record would not fit, the longest of host, path,
 * reason and error are cut to a common length (and end in "...") so that
 * it does; other strings are capped at FIELD_CAP bytes once escaped, which
 * guarantees that cutting those four always suffices.
 *
 * Host, path, reason and error are first cut to FIELD_CAP, so a long URL
 * costs about 1 KiB, not 8; identical denials are folded into one record
 * with a count, and past the limit the records are only counted
 * (audit.h): what a sandbox can make pinhole write is bounded.
 *
 * The fields, their order, caps and cuts come from the table in field.c,
 * which the reader (logview.c) checks records against.
 *
 * One mutex per struct audit guards everything a record touches (the line
 * buffer, the fold, the limit and its counts, the client fields, the
 * copy) from formatting to the write(2) of the line, so that worker
 * threads sharing one log never interleave lines and the limit, folding
 * and summaries stay exact.  A record costs a few microseconds under it.
 */
#include <sys/random.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#define AUDIT_INTERNAL /* audit_format_ts(), audit_escape() */
#include "audit/audit.h"
#include "audit/field.h"

#define AUDIT_LINE_MAX (64 * 1024) /* lines are shorter than this */
#define SUMMARY_MAX 64 /* (decision, host, port) counted past the limit */
#define MARK "..."
#define MARKLEN (sizeof(MARK) - 1)
#define OPEN_FLAGS (O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY)

/*
 * The last denial written, and how many identical ones (as logged: the
 * same method, host, port, path as cut, rule, reason and status) came
 * after it and were only counted.
 */
struct fold {
	int have;
	char *method, *host, *path, *rule_file, *reason;
	const char *via; /* static (audit_rec's) */
	unsigned rule_line;
	int port, status;
	uint64_t conn; /* of the last one counted */
	uint64_t count;
};

/* Past the limit: requests and bytes counted per (decision, host, port). */
struct bucket {
	char *host; /* NULL: every host without a bucket of its own */
	int port;
	int deny;
	uint64_t count, up, down;
};

struct audit {
	pthread_mutex_t lock; /* over everything below but fd and own_fd */
	int fd;
	int own_fd; /* 0 for standard error */
	int copy; /* a broker's client's copy (audit_add_copy), or -1 */
	int has_client; /* audit_set_client: the client fields below */
	unsigned client_uid, client_pid;
	char *client_cmd; /* NULL: left out */
	int partial; /* a write was cut short: the next line ends it first */
	char *run_id;
	uint64_t limit; /* bytes this struct audit may write; 0: no limit */
	uint64_t written;
	int over; /* the limit was reached: only counting now (atomic reads) */
	struct fold fold;
	struct bucket sum[SUMMARY_MAX], others[2];
	size_t nsum;
	char buf[AUDIT_LINE_MAX];
};

/* The strings that are cut to make a record fit, and their state. */
/* Host, path, reason and error: the FIELD_CUT fields, in table order. */
#define NTRIM FIELD_NCUT

struct trim {
	size_t cap[NTRIM]; /* escaped length allowed */
	size_t len[NTRIM]; /* escaped length written last time */
};

/*
 * Returns the length of the valid UTF-8 sequence of two to four bytes at
 * S (N bytes available), or 0.  Overlong forms, surrogates and code
 * points above U+10FFFF are invalid, as RFC 3629 says.
 */
static size_t
utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len = 0, i;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (len == 0 || n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/*
 * Returns how many bytes of S (N > 0 available) make the next character.
 * *COPY says whether to copy them, or to write one '?' instead: for a
 * control character (C0, DEL, C1) or a byte that is not valid UTF-8.
 */
static size_t
next_char(const unsigned char *s, size_t n, int *copy)
{
	size_t len;

	if (s[0] >= 0x20 && s[0] < 0x7f) {
		*copy = 1;
		return 1;
	}
	len = utf8_seq(s, n);
	*copy = len > 0 && !(s[0] == 0xc2 && s[1] < 0xa0);
	return len > 0 ? len : 1;
}

/* The length of the character at S (LEN bytes) once escaped. */
static size_t
escaped_len(const unsigned char *s, size_t len)
{
	if (len == 4)
		return 12; /* a surrogate pair: \uXXXX\uXXXX */
	if (len > 1)
		return 6;
	return s[0] == '"' || s[0] == '\\' ? 2 : 1;
}

/*
 * The line being formatted into a buffer of CAP bytes.  Bytes past CAP are
 * counted, not stored, so that the length of a record that does not fit
 * is known, and the strings cut by as much as needed (trim_shrink).
 */
struct line {
	char *p;
	size_t len, cap;
	int fields; /* written so far: a comma before every other one */
};

static void
put(struct line *l, const char *s, size_t n)
{
	if (n <= l->cap && l->len <= l->cap - n)
		memcpy(l->p + l->len, s, n);
	l->len += n;
}

/* How many bytes from S (at most N) need no escaping at all. */
static size_t
plain_run(const unsigned char *s, size_t n)
{
	size_t k = 0;

	while (
	    k < n && s[k] >= 0x20 && s[k] < 0x7f && s[k] != '"' && s[k] != '\\')
		k++;
	return k;
}

static void
put_u16(struct line *l, unsigned v)
{
	static const char hex[] = "0123456789ABCDEF";
	char seq[6] = {'\\', 'u', hex[(v >> 12) & 0xf], hex[(v >> 8) & 0xf],
	    hex[(v >> 4) & 0xf], hex[v & 0xf]};

	put(l, seq, sizeof(seq));
}

/*
 * Writes the valid character at S (LEN bytes, not a plain one) escaped
 * as jansson's JSON_ENSURE_ASCII did: \" and \\, and \uXXXX (upper-case
 * hex) for everything above U+007F, as a surrogate pair above U+FFFF.
 */
static void
put_escaped_char(struct line *l, const unsigned char *s, size_t len)
{
	static const unsigned char lead_mask[] = {0, 0x7f, 0x1f, 0x0f, 0x07};
	unsigned cp = s[0] & lead_mask[len];
	size_t i;

	if (len == 1) {
		put(l, "\\", 1);
		put(l, (const char *)s, 1);
		return;
	}
	for (i = 1; i < len; i++)
		cp = cp << 6 | (s[i] & 0x3f);
	if (cp < 0x10000) {
		put_u16(l, cp);
		return;
	}
	cp -= 0x10000;
	put_u16(l, 0xd800 | cp >> 10);
	put_u16(l, 0xdc00 | (cp & 0x3ff));
}

/*
 * Writes IN (INLEN bytes) as the inside of a JSON string: sanitised
 * (next_char) and escaped, cut to CAP bytes once escaped.  When IN does
 * not fit, it is cut at a character boundary and ends in MARK, or is
 * empty when CAP is too small even for that.  Returns the escaped length
 * (the escaped form is what is written, so it is also the bytes taken).
 */
static size_t
put_escaped(struct line *l, const char *in, size_t inlen, size_t cap)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t start = l->len, mark = start, i = 0, e = 0, len, w, k;
	int copy;

	while (i < inlen) {
		/* A run of plain bytes, one byte each once escaped. */
		k = plain_run(s + i, inlen - i < cap - e ? inlen - i : cap - e);
		if (k > 0) {
			put(l, in + i, k);
			if (cap >= MARKLEN && cap - MARKLEN > e)
				mark = start +
				    (e + k < cap - MARKLEN ? e + k
				                           : cap - MARKLEN);
			i += k;
			e += k;
			continue;
		}
		len = next_char(s + i, inlen - i, &copy);
		w = copy ? escaped_len(s + i, len) : 1;
		if (e + w > cap)
			break;
		if (copy)
			put_escaped_char(l, s + i, len);
		else
			put(l, "?", 1);
		i += len;
		if ((e += w) + MARKLEN <= cap)
			mark = l->len;
	}
	if (i < inlen) {
		l->len = mark;
		if (cap >= MARKLEN)
			put(l, MARK, MARKLEN);
	}
	return l->len - start;
}

/* Starts field NAME: a comma unless it is the first, the key, a colon. */
static void
put_key(struct line *l, const char *name)
{
	if (l->fields++ > 0)
		put(l, ",", 1);
	put(l, "\"", 1);
	put(l, name, strlen(name));
	put(l, "\":", 2);
}

/* Writes V in decimal, as jansson's "%lld" did. */
static void
put_num(struct line *l, long long v)
{
	char d[24];
	size_t i = sizeof(d);
	unsigned long long u =
	    v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;

	do
		d[--i] = (char)('0' + u % 10);
	while ((u /= 10) > 0);
	if (v < 0)
		d[--i] = '-';
	put(l, d + i, sizeof(d) - i);
}

/*
 * Adds KEY with VAL sanitised, cut at the first byte of CUT and to CAP
 * bytes once escaped; a NULL VAL adds nothing.  Returns the escaped
 * length (0 for NULL).
 */
static size_t
add_str(struct line *l, const char *key, const char *val, const char *cut,
    size_t cap)
{
	size_t e;

	if (val == NULL)
		return 0;
	put_key(l, key);
	put(l, "\"", 1);
	e = put_escaped(l, val, strcspn(val, cut), cap);
	put(l, "\"", 1);
	return e;
}

/* Adds KEY with the number V, unless V is negative. */
static void
add_int(struct line *l, const char *key, int64_t v)
{
	if (v < 0)
		return;
	put_key(l, key);
	put_num(l, (long long)v);
}

/* Adds "rule": "FILE:LINE", FILE capped at FIELD_CAP, unless it is NULL. */
static void
add_rule(struct line *l, const char *file, unsigned line)
{
	if (file == NULL)
		return;
	put_key(l, field_get(FIELD_RULE)->name);
	put(l, "\"", 1);
	put_escaped(l, file, strlen(file), FIELD_CAP);
	put(l, ":", 1);
	put_num(l, (long long)line);
	put(l, "\"", 1);
}

/* The string field ID of R, or NULL when absent or not a plain string. */
static const char *
str_value(const struct audit *a, const struct audit_rec *r, const char *ts,
    enum field_id id)
{
	switch (id) {
	case FIELD_TS:
		return ts;
	case FIELD_SANDBOX:
		return a->run_id;
	case FIELD_CLIENT_CMD:
		return a->has_client ? a->client_cmd : NULL;
	case FIELD_POLICY:
		return r->policy;
	case FIELD_EVENT:
		return r->event;
	case FIELD_METHOD:
		return r->method;
	case FIELD_VIA:
		return r->via;
	case FIELD_HOST:
		return r->host;
	case FIELD_PATH:
		return r->path;
	case FIELD_DECISION:
		return r->decision;
	case FIELD_REASON:
		return r->reason;
	case FIELD_ADDR:
		return r->addr;
	case FIELD_QTYPE:
		return r->qtype;
	case FIELD_ANSWER:
		return r->answer;
	case FIELD_SECRET:
		return r->secret;
	case FIELD_ERROR:
		return r->error;
	default:
		return NULL;
	}
}

/* The number field ID of R, negative when absent. */
static int64_t
int_value(const struct audit *a, const struct audit_rec *r, enum field_id id)
{
	switch (id) {
	case FIELD_CLIENT_UID:
		return a->has_client ? (int64_t)a->client_uid : -1;
	case FIELD_CLIENT_PID:
		return a->has_client ? (int64_t)a->client_pid : -1;
	case FIELD_PORT:
		return r->port;
	case FIELD_STATUS:
		return r->status;
	case FIELD_BYTES_UP:
		return r->bytes_up;
	case FIELD_BYTES_DOWN:
		return r->bytes_down;
	case FIELD_MS:
		return r->ms;
	case FIELD_COUNT:
		return r->count;
	default:
		return -1;
	}
}

/*
 * Adds field ID of R, unless it is absent.  A FIELD_CUT string takes the
 * next slot of T, *K.
 */
static void
add_field(struct line *l, const struct audit *a, const struct audit_rec *r,
    const char *ts, enum field_id id, struct trim *t, size_t *k)
{
	const struct field *f = field_get(id);
	const char *v;

	if (id == FIELD_CONN) { /* in every record, as jansson's json_int_t */
		put_key(l, f->name);
		put_num(l, (long long)r->conn);
	} else if (id == FIELD_RULE) {
		add_rule(l, r->rule_file, r->rule_line);
	} else if (f->type == FIELD_BOOLEAN) {
		if (r->summary) {
			put_key(l, f->name);
			put(l, "true", 4);
		}
	} else if (f->type != FIELD_STRING) {
		add_int(l, f->name, int_value(a, r, id));
	} else {
		v = str_value(a, r, ts, id);
		if (!(f->flags & FIELD_CUT)) {
			add_str(l, f->name, v, f->stop, FIELD_CAP);
		} else {
			t->len[*k] =
			    add_str(l, f->name, v, f->stop, t->cap[*k]);
			++*k;
		}
	}
}

/*
 * Formats the record into OUT (CAP bytes), compact JSON with the fields
 * in the order of the table, the strings cut as T says, and records their
 * lengths in T.  Returns the length of the JSON text, which is in OUT
 * only when it is at most CAP.
 */
static size_t
format(const struct audit *a, const struct audit_rec *r, const char *ts,
    struct trim *t, char *out, size_t cap)
{
	struct line l = {out, 0, cap, 0};
	size_t k = 0;
	int id;

	put(&l, "{", 1);
	for (id = 0; id < FIELD_N; id++)
		add_field(&l, a, r, ts, id, t, &k);
	put(&l, "}", 1);
	return l.len;
}

/* Returns the sum of the lengths in T, each capped at LEVEL. */
static size_t
sum_capped(const struct trim *t, size_t level)
{
	size_t i, sum = 0;

	for (i = 0; i < NTRIM; i++)
		sum += t->len[i] < level ? t->len[i] : level;
	return sum;
}

/*
 * Shortens the text by OVER bytes at least, cutting the longest strings
 * to a common length, as long as possible: the largest LEVEL whose capped
 * lengths add up to OVER less than the present ones, found by bisection.
 */
static void
trim_shrink(struct trim *t, size_t over)
{
	size_t total = sum_capped(t, SIZE_MAX), lo = 0, hi = 0, mid, i;

	for (i = 0; i < NTRIM; i++)
		hi = t->len[i] > hi ? t->len[i] : hi;
	while (lo < hi) {
		mid = lo + (hi - lo + 1) / 2;
		if (sum_capped(t, mid) + over <= total)
			lo = mid;
		else
			hi = mid - 1;
	}
	for (i = 0; i < NTRIM; i++)
		if (t->len[i] > lo)
			t->cap[i] = lo;
}

/* Writes the N low decimal digits of V to P. */
static void
digits(char *p, long v, int n)
{
	while (n-- > 0) {
		p[n] = (char)('0' + v % 10);
		v /= 10;
	}
}

/*
 * Writes the current UTC time as RFC 3339 with milliseconds to BUF (at
 * least 25 bytes), "YYYY-MM-DDTHH:MM:SS.mmmZ".  Not strftime: glibc's
 * calls tzset every time, which opens /etc/localtime, and the engine's
 * Landlock refuses that once it runs; not snprintf either, a tenth of a
 * record's cost.
 */
static void
timestamp(char *buf)
{
	struct timespec tv;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &tv);
	gmtime_r(&tv.tv_sec, &tm);
	memcpy(buf, "0000-00-00T00:00:00.000Z", 25);
	digits(buf, tm.tm_year + 1900L, 4);
	digits(buf + 5, tm.tm_mon + 1L, 2);
	digits(buf + 8, tm.tm_mday, 2);
	digits(buf + 11, tm.tm_hour, 2);
	digits(buf + 14, tm.tm_min, 2);
	digits(buf + 17, tm.tm_sec, 2);
	digits(buf + 20, tv.tv_nsec / 1000000, 3);
}

/*
 * Does before the engine's Landlock applies what would otherwise open a
 * file it refuses on the first record: glibc reads /etc/localtime once
 * (gmtime_r too).  The writer no longer uses jansson, but the engine
 * still parses JSON (inject.c), and jansson's first object seeds its hash
 * from /dev/urandom (falling back to the time): seeded here, as before,
 * since every engine opens its log first.  Only the first seed counts.
 */
static void
prime_libraries(void)
{
	uint32_t seed = 0;

	tzset();
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed) || seed == 0)
		seed = (uint32_t)time(NULL) | 1;
	json_object_seed(seed);
}

/* Writes N bytes of BUF with one write(2).  Returns 0 or -1. */
static int
write_line(int fd, const char *buf, size_t n)
{
	ssize_t w;

	do
		w = write(fd, buf, n);
	while (w == -1 && errno == EINTR);
	if (w == -1)
		return -1;
	if ((size_t)w != n) {
		errno = EIO; /* cut short: see put_line() */
		return -1;
	}
	return 0;
}

/*
 * Writes the N bytes of A->buf, written to the main log, to the client's
 * copy too, with one write(2).  The copy is the client's own file: it
 * may be full or gone (ENOSPC, EIO), and then it is dropped after this
 * one attempt, so that it never holds back or fails a record.
 */
static void
put_copy(struct audit *a, size_t n)
{
	int saved = errno;

	if (a->copy == -1)
		return;
	if (write_line(a->copy, a->buf, n) != 0) {
		(void)close(a->copy);
		a->copy = -1;
	}
	errno = saved;
}

/*
 * Writes the N bytes of A->buf.  A full disk or a file size limit may
 * take part of a line: the next write then ends that line first, so
 * that the records after it parse.  Each line the main log takes goes to
 * the copy as well (put_copy).
 */
static int
put_line(struct audit *a, size_t n)
{
	if (a->partial && write_line(a->fd, "\n", 1) != 0)
		return -1;
	a->partial = 0;
	if (write_line(a->fd, a->buf, n) == 0) {
		put_copy(a, n);
		return 0;
	}
	a->partial = errno == EIO;
	return -1;
}

void
audit_rec_init(struct audit_rec *r, const char *event, uint64_t conn)
{
	memset(r, 0, sizeof(*r));
	r->event = event;
	r->conn = conn;
	r->port = -1;
	r->status = -1;
	r->bytes_up = -1;
	r->bytes_down = -1;
	r->ms = -1;
	r->count = -1;
}

struct audit *
audit_open(const char *path, const char *run_id, char *err, size_t errlen)
{
	struct audit *a;
	int saved;

	prime_libraries();
	if ((a = calloc(1, sizeof(*a))) == NULL)
		goto fail;
	pthread_mutex_init(&a->lock, NULL);
	a->fd = -1;
	a->copy = -1;
	if (run_id != NULL && (a->run_id = strdup(run_id)) == NULL)
		goto fail;
	if (strcmp(path, "stderr") == 0)
		a->fd = STDERR_FILENO;
	else if ((a->fd = open(path, OPEN_FLAGS, 0600)) == -1)
		goto fail;
	else
		a->own_fd = 1;
	return a;
fail:
	saved = errno;
	if (err != NULL && errlen > 0)
		snprintf(
		    err, errlen, "audit log %s: %s", path, strerror(saved));
	audit_close(a);
	errno = saved;
	return NULL;
}

int
audit_same_file(const struct audit *a, int fd)
{
	struct stat l, o;

	if (fstat(a->fd, &l) != 0 || fstat(fd, &o) != 0)
		return 0;
	/* Devices other than terminals (/dev/null, /dev/full) hold nothing. */
	return l.st_dev == o.st_dev && l.st_ino == o.st_ino &&
	    (l.st_mode & S_IFMT) == (o.st_mode & S_IFMT) && !S_ISCHR(l.st_mode);
}

int
audit_is_tty(const struct audit *a)
{
	return isatty(a->fd);
}

/*
 * Formats R with TS as its "ts" as one line in A->buf.  Returns its
 * length, newline included, or 0 with errno set.
 */
static size_t
format_line_ts(struct audit *a, const struct audit_rec *r, const char *ts)
{
	struct trim t;
	size_t n = 0, i;

	for (i = 0; i < NTRIM; i++)
		t.cap[i] = FIELD_CAP;
	for (i = 0; i <= NTRIM; i++) {
		n = format(a, r, ts, &t, a->buf, sizeof(a->buf));
		if (n + 1 < AUDIT_LINE_MAX)
			break;
		trim_shrink(&t, n + 2 - AUDIT_LINE_MAX);
	}
	if (n + 1 >= AUDIT_LINE_MAX) {
		errno = EMSGSIZE;
		return 0;
	}
	a->buf[n] = '\n';
	return n + 1;
}

/* Formats R, stamped now, as one line in A->buf: format_line_ts(). */
static size_t
format_line(struct audit *a, const struct audit_rec *r)
{
	char ts[32];

	timestamp(ts);
	return format_line_ts(a, r, ts);
}

size_t
audit_format_ts(struct audit *a, const struct audit_rec *r, const char *ts,
    const char **line)
{
	*line = a->buf;
	return format_line_ts(a, r, ts);
}

size_t
audit_escape(char *out, size_t outlen, const char *in, size_t inlen, size_t cap)
{
	struct line l = {out, 0, outlen, 0};

	return put_escaped(&l, in, inlen, cap);
}

/* --- folding and the limit ------------------------------------------------ */

static int
is(const char *s, const char *what)
{
	return s != NULL && strcmp(s, what) == 0;
}

static int
same_str(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* The part of PATH that is logged: no query, at most FIELD_CAP bytes. */
static size_t
path_len(const char *path)
{
	size_t n = strcspn(path, field_get(FIELD_PATH)->stop);

	return n < FIELD_CAP ? n : FIELD_CAP;
}

/* Is R a denial identical, as logged, to the last one written? */
static int
fold_same(const struct audit *a, const struct audit_rec *r)
{
	const struct fold *f = &a->fold;
	size_t n = r->path != NULL ? path_len(r->path) : 0;

	if (!f->have || f->port != r->port || f->status != r->status ||
	    f->rule_line != r->rule_line || !same_str(f->method, r->method) ||
	    !same_str(f->via, r->via) || !same_str(f->host, r->host) ||
	    !same_str(f->reason, r->reason) ||
	    !same_str(f->rule_file, r->rule_file))
		return 0;
	if (f->path == NULL || r->path == NULL)
		return f->path == r->path;
	return strlen(f->path) == n && memcmp(f->path, r->path, n) == 0;
}

static void
fold_clear(struct fold *f)
{
	free(f->method);
	free(f->host);
	free(f->path);
	free(f->rule_file);
	free(f->reason);
	memset(f, 0, sizeof(*f));
}

static char *
dup_or_null(const char *s, size_t n, int *bad)
{
	char *d;

	if (s == NULL)
		return NULL;
	if ((d = strndup(s, n)) == NULL)
		*bad = 1;
	return d;
}

/* Remembers the denial R, just written, to fold the ones like it. */
static void
fold_keep(struct audit *a, const struct audit_rec *r)
{
	struct fold *f = &a->fold;
	int bad = 0;

	fold_clear(f);
	f->method = dup_or_null(r->method, SIZE_MAX, &bad);
	f->host = dup_or_null(r->host, SIZE_MAX, &bad);
	f->path =
	    dup_or_null(r->path, r->path != NULL ? path_len(r->path) : 0, &bad);
	f->rule_file = dup_or_null(r->rule_file, SIZE_MAX, &bad);
	f->reason = dup_or_null(r->reason, SIZE_MAX, &bad);
	f->via = r->via;
	f->rule_line = r->rule_line;
	f->port = r->port;
	f->status = r->status;
	f->conn = r->conn;
	f->have = !bad; /* out of memory: no folding, every record written */
	if (bad)
		fold_clear(f);
}

/* The record that stands for the denials folded into F. */
static void
fold_rec(const struct fold *f, struct audit_rec *r)
{
	audit_rec_init(r, "request", f->conn);
	r->method = f->method;
	r->via = f->via;
	r->host = f->host;
	r->port = f->port;
	r->path = f->path;
	r->decision = "deny";
	r->rule_file = f->rule_file;
	r->rule_line = f->rule_line;
	r->reason = f->reason;
	r->status = f->status;
	r->count = (int64_t)f->count;
}

/* The bucket of R past the limit (its own, or the "others" one). */
static struct bucket *
bucket_of(struct audit *a, const struct audit_rec *r)
{
	int deny = is(r->decision, "deny");
	struct bucket *b;
	size_t i;

	for (i = 0; r->host != NULL && i < a->nsum; i++) {
		b = &a->sum[i];
		if (b->deny == deny && b->port == r->port &&
		    strcmp(b->host, r->host) == 0)
			return b;
	}
	if (r->host == NULL || a->nsum == SUMMARY_MAX ||
	    (a->sum[a->nsum].host = strdup(r->host)) == NULL)
		return &a->others[deny];
	b = &a->sum[a->nsum++];
	b->port = r->port;
	b->deny = deny;
	return b;
}

/* Counts R (N requests) instead of writing it. */
static void
summarise(struct audit *a, const struct audit_rec *r, uint64_t n)
{
	struct bucket *b = bucket_of(a, r);

	if (is(r->event, "request"))
		b->count += n;
	if (r->bytes_up > 0)
		b->up += (uint64_t)r->bytes_up;
	if (r->bytes_down > 0)
		b->down += (uint64_t)r->bytes_down;
}

/* The limit is reached: from now on records are only counted. */
static void
go_over(struct audit *a)
{
	struct audit_rec r;

	__atomic_store_n(&a->over, 1, __ATOMIC_RELAXED);
	if (a->fold.count > 0) {
		fold_rec(&a->fold, &r);
		summarise(a, &r, a->fold.count);
		a->fold.count = 0;
	}
}

/*
 * Writes R unless that would pass the limit: then it goes over and counts
 * N requests for R.  Returns 0 (written), AUDIT_HELD or -1.
 */
static int
emit(struct audit *a, const struct audit_rec *r, uint64_t n)
{
	size_t len = format_line(a, r);

	if (len == 0)
		return -1;
	if (a->limit > 0 && a->written + len > a->limit) {
		go_over(a);
		summarise(a, r, n);
		return AUDIT_HELD;
	}
	if (put_line(a, len) != 0)
		return -1;
	a->written += len;
	return 0;
}

/* Writes the record of the denials folded since the last one, if any. */
static int
fold_flush(struct audit *a)
{
	struct audit_rec r;
	uint64_t n = a->fold.count;

	if (n == 0 || a->over)
		return 0;
	fold_rec(&a->fold, &r);
	a->fold.count = 0;
	if (emit(a, &r, n) < 0) {
		a->fold.count = n; /* tried again later */
		return -1;
	}
	return 0;
}

/* Past the limit: one record per bucket, whatever the limit. */
static int
write_summary(struct audit *a)
{
	struct audit_rec r;
	struct bucket *b;
	char reason[160];
	size_t i, len;
	int rc = 0;

	snprintf(reason, sizeof(reason),
	    "summarised: the audit log reached its limit of %llu bytes",
	    (unsigned long long)a->limit);
	for (i = 0; i < a->nsum + 2; i++) {
		b = i < a->nsum ? &a->sum[i] : &a->others[i - a->nsum];
		if (b->count == 0 && b->up == 0 && b->down == 0)
			continue;
		audit_rec_init(&r, "request", 0);
		r.host = b->host;
		r.port = b->host != NULL ? b->port : -1;
		r.decision = b->deny || b == &a->others[1] ? "deny" : "allow";
		r.reason = reason;
		r.count = (int64_t)b->count;
		r.bytes_up = (int64_t)b->up;
		r.bytes_down = (int64_t)b->down;
		r.summary = 1;
		if ((len = format_line(a, &r)) == 0 || put_line(a, len) != 0)
			rc = -1;
	}
	return rc;
}

/* audit_write() with A locked. */
static int
write_locked(struct audit *a, const struct audit_rec *r)
{
	int deny = is(r->event, "request") && is(r->decision, "deny");
	int rc;

	if (a->over) {
		summarise(a, r, 1);
		return AUDIT_HELD;
	}
	if (deny && fold_same(a, r)) {
		a->fold.count++;
		a->fold.conn = r->conn;
		return AUDIT_HELD;
	}
	if (deny && fold_flush(a) != 0)
		return -1;
	rc = emit(a, r, 1);
	if (rc == 0 && deny)
		fold_keep(a, r);
	return rc;
}

int
audit_write(struct audit *a, const struct audit_rec *r)
{
	int rc;

	pthread_mutex_lock(&a->lock);
	rc = write_locked(a, r);
	pthread_mutex_unlock(&a->lock); /* leaves errno alone */
	return rc;
}

int
audit_flush(struct audit *a)
{
	int rc = 0;

	if (a != NULL) {
		pthread_mutex_lock(&a->lock);
		rc = fold_flush(a);
		pthread_mutex_unlock(&a->lock);
	}
	return rc;
}

void
audit_set_limit(struct audit *a, uint64_t bytes)
{
	pthread_mutex_lock(&a->lock);
	a->limit = bytes;
	pthread_mutex_unlock(&a->lock);
}

int
audit_over_limit(const struct audit *a)
{
	return __atomic_load_n(&a->over, __ATOMIC_RELAXED);
}

int
audit_parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift != 0)
		end++;
	if (*end != '\0' || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

void
audit_close(struct audit *a)
{
	size_t i;

	if (a == NULL)
		return;
	pthread_mutex_lock(&a->lock); /* a last writer still inside */
	(void)fold_flush(a);
	if (a->over)
		(void)write_summary(a);
	pthread_mutex_unlock(&a->lock);
	pthread_mutex_destroy(&a->lock);
	fold_clear(&a->fold);
	for (i = 0; i < a->nsum; i++)
		free(a->sum[i].host);
	if (a->own_fd)
		close(a->fd);
	if (a->copy != -1)
		close(a->copy);
	free(a->client_cmd);
	free(a->run_id);
	free(a);
}

int
audit_make_run_id(char out[17])
{
	unsigned char r[8];
	size_t i;

	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		return -1;
	for (i = 0; i < sizeof(r); i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
	return 0;
}

int
audit_set_client(struct audit *a, unsigned uid, unsigned pid, const char *cmd)
{
	char *c = NULL;

	if (cmd != NULL && (c = strdup(cmd)) == NULL)
		return -1;
	pthread_mutex_lock(&a->lock);
	free(a->client_cmd);
	a->client_cmd = c;
	a->client_uid = uid;
	a->client_pid = pid;
	a->has_client = 1;
	pthread_mutex_unlock(&a->lock);
	return 0;
}

/*
 * Is FD a regular file opened for writing?  Then it is made to append
 * (the client may have opened it without O_APPEND: the records must
 * land at its end whatever its offset) and close-on-exec.
 */
static int
copy_ok(int fd)
{
	struct stat st;
	int fl, acc;

	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (fl = fcntl(fd, F_GETFL)) == -1)
		return 0;
	acc = fl & O_ACCMODE;
	if (acc != O_WRONLY && acc != O_RDWR)
		return 0;
	if (!(fl & O_APPEND) && fcntl(fd, F_SETFL, fl | O_APPEND) == -1)
		return 0;
	return fcntl(fd, F_SETFD, FD_CLOEXEC) == 0;
}

int
audit_add_copy(struct audit *a, int fd)
{
	if (!copy_ok(fd)) {
		if (fd >= 0)
			(void)close(fd);
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&a->lock);
	if (a->copy != -1)
		(void)close(a->copy);
	a->copy = fd;
	pthread_mutex_unlock(&a->lock);
	return 0;
}
