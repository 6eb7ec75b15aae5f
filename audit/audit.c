/*
 * audit.c: the audit log, one JSON object per line (DESIGN.md, "Audit
 * log").
 *
 * Every string is sanitised before it reaches jansson: bytes that are not
 * valid UTF-8, and control characters (C0, DEL, C1), become '?', so that
 * whatever a client sent, each line is valid JSON.  Lines are written with
 * JSON_ENSURE_ASCII: the file holds printable ASCII only and is safe to
 * read in a terminal.  A line, newline included, stays below
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
 * The line buffer lives in struct audit, so one struct audit must not be
 * written from two threads at once.
 */
#include <sys/random.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "audit/audit.h"
#include "audit/field.h"

#define AUDIT_LINE_MAX (64 * 1024) /* lines are shorter than this */
#define SUMMARY_MAX 64 /* (decision, host, port) counted past the limit */
#define MARK "..."
#define MARKLEN (sizeof(MARK) - 1)
#define OPEN_FLAGS (O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY)
#define DUMP_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII)

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
	int over; /* the limit was reached: only counting now */
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

/* The length of the character at S (LEN bytes) once jansson escapes it. */
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
 * Writes the sanitised form of IN (INLEN bytes) to OUT, which has room for
 * the smaller of INLEN and CAP, plus a NUL.  CAP bounds the length of the
 * value once escaped in the JSON text, stored in *ESC; no character takes
 * fewer bytes there than in OUT.  When IN does not fit, it is cut at a
 * character boundary and ends in MARK, or is empty when CAP is too small
 * even for that.  Returns the length written to OUT.
 */
static size_t
sanitize(char *out, const char *in, size_t inlen, size_t cap, size_t *esc)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t i = 0, o = 0, e = 0, mark_o = 0, mark_e = 0, len, w;
	int copy;

	for (; i < inlen; i += len) {
		len = next_char(s + i, inlen - i, &copy);
		w = copy ? escaped_len(s + i, len) : 1;
		if (e + w > cap)
			break;
		if (copy)
			memcpy(out + o, s + i, len);
		else
			out[o] = '?';
		o += copy ? len : 1;
		if ((e += w) + MARKLEN <= cap) {
			mark_o = o;
			mark_e = e;
		}
	}
	if (i < inlen) {
		o = mark_o;
		e = mark_e;
		if (cap >= MARKLEN) {
			memcpy(out + o, MARK, MARKLEN);
			o += MARKLEN;
			e += MARKLEN;
		}
	}
	out[o] = '\0';
	*esc = e;
	return o;
}

/*
 * Adds KEY with VAL sanitised, cut at the first byte of CUT and to CAP
 * bytes once escaped; a NULL VAL adds nothing.  Stores the escaped length
 * in *ESC when ESC is not NULL.  Returns 0 or -1.
 */
static int
add_str(json_t *o, const char *key, const char *val, const char *cut,
    size_t cap, size_t *esc)
{
	char *s = NULL;
	size_t n, e = 0;
	int r = 0;

	if (val == NULL)
		goto out;
	r = -1;
	n = strcspn(val, cut);
	if ((s = malloc((n < cap ? n : cap) + 1)) == NULL)
		goto out;
	n = sanitize(s, val, n, cap, &e);
	r = json_object_set_new(o, key, json_stringn(s, n));
out:
	free(s);
	if (esc != NULL)
		*esc = e;
	return r;
}

/* Adds KEY with the number V, unless V is negative.  Returns 0 or -1. */
static int
add_int(json_t *o, const char *key, int64_t v)
{
	if (v < 0)
		return 0;
	return json_object_set_new(o, key, json_integer((json_int_t)v));
}

/* Adds "rule": "FILE:LINE", unless FILE is NULL.  Returns 0 or -1. */
static int
add_rule(json_t *o, const char *file, unsigned line)
{
	char *s = NULL;
	size_t n, e;
	int r = 0;

	if (file == NULL)
		goto out;
	r = -1;
	n = strlen(file);
	if ((s = malloc((n < FIELD_CAP ? n : FIELD_CAP) + 1)) == NULL)
		goto out;
	sanitize(s, file, n, FIELD_CAP, &e);
	r = json_object_set_new(
	    o, field_get(FIELD_RULE)->name, json_sprintf("%s:%u", s, line));
out:
	free(s);
	return r;
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
 * next slot of T, *K.  Returns 0 or -1.
 */
static int
add_field(json_t *o, const struct audit *a, const struct audit_rec *r,
    const char *ts, enum field_id id, struct trim *t, size_t *k)
{
	const struct field *f = field_get(id);
	const char *v;
	int e;

	if (id == FIELD_CONN) /* in every record */
		return json_object_set_new(
		    o, f->name, json_integer((json_int_t)r->conn));
	if (id == FIELD_RULE)
		return add_rule(o, r->rule_file, r->rule_line);
	if (f->type == FIELD_BOOLEAN)
		return r->summary ? json_object_set_new(o, f->name, json_true())
		                  : 0;
	if (f->type != FIELD_STRING)
		return add_int(o, f->name, int_value(a, r, id));
	v = str_value(a, r, ts, id);
	if (!(f->flags & FIELD_CUT))
		return add_str(o, f->name, v, f->stop, FIELD_CAP, NULL);
	e = add_str(o, f->name, v, f->stop, t->cap[*k], &t->len[*k]);
	++*k;
	return e;
}

/* Adds the fields of R in the order of the table.  Returns 0 or -1. */
static int
add_fields(json_t *o, const struct audit *a, const struct audit_rec *r,
    const char *ts, struct trim *t)
{
	size_t k = 0;
	int id, e = 0;

	for (id = 0; id < FIELD_N; id++)
		e |= add_field(o, a, r, ts, id, t, &k);
	return e;
}

/*
 * Formats the record into A->buf, with the strings cut as T says, and
 * records their lengths in T.  Returns the length of the JSON text, which
 * fits in A->buf only when it is less than AUDIT_LINE_MAX, or 0 with
 * errno set.
 */
static size_t
format(
    struct audit *a, const struct audit_rec *r, const char *ts, struct trim *t)
{
	json_t *o;
	size_t n = 0;

	if ((o = json_object()) == NULL)
		goto out;
	if (add_fields(o, a, r, ts, t) != 0)
		goto out;
	n = json_dumpb(o, a->buf, sizeof(a->buf), DUMP_FLAGS);
out:
	json_decref(o);
	if (n == 0)
		errno = ENOMEM;
	return n;
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

/*
 * Writes the current UTC time as RFC 3339 with milliseconds to BUF.
 * Not strftime: glibc's calls tzset every time, which opens
 * /etc/localtime, and the engine's Landlock refuses that once it runs.
 */
static void
timestamp(char *buf, size_t len)
{
	struct timespec tv;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &tv);
	gmtime_r(&tv.tv_sec, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
	    tm.tm_sec, tv.tv_nsec / 1000000);
}

/*
 * Does before the engine's Landlock applies what would otherwise open a
 * file it refuses on the first record: glibc reads /etc/localtime once
 * (gmtime_r too), and jansson's first json_object() seeds its hash from
 * /dev/urandom (falling back to the time).  Only the first seed counts.
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
 * Formats R as one line in A->buf.  Returns its length, newline
 * included, or 0 with errno set.
 */
static size_t
format_line(struct audit *a, const struct audit_rec *r)
{
	struct trim t;
	char ts[64];
	size_t n = 0, i;

	timestamp(ts, sizeof(ts));
	for (i = 0; i < NTRIM; i++)
		t.cap[i] = FIELD_CAP;
	for (i = 0; i <= NTRIM; i++) {
		if ((n = format(a, r, ts, &t)) == 0)
			return 0;
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

	a->over = 1;
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

int
audit_write(struct audit *a, const struct audit_rec *r)
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
audit_flush(struct audit *a)
{
	return a != NULL ? fold_flush(a) : 0;
}

void
audit_set_limit(struct audit *a, uint64_t bytes)
{
	a->limit = bytes;
}

int
audit_over_limit(const struct audit *a)
{
	return a->over;
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
	(void)fold_flush(a);
	if (a->over)
		(void)write_summary(a);
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
	free(a->client_cmd);
	a->client_cmd = c;
	a->client_uid = uid;
	a->client_pid = pid;
	a->has_client = 1;
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
	if (a->copy != -1)
		(void)close(a->copy);
	a->copy = fd;
	return 0;
}
