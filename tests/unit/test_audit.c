/*
 * test_audit.c: unit tests of audit/audit.c, the JSON Lines audit log.
 *
 * Records are written to a file in a mkdtemp directory under $TMPDIR (or
 * /tmp), read back and parsed line by line with jansson: every line must
 * be one complete JSON object, whatever bytes the record held.  The
 * writer's own formatter is compared byte for byte with the jansson
 * writer it replaced (audit_ref.c) on many generated records, and one
 * log is written from several threads at once.
 */
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#define AUDIT_INTERNAL /* audit_format_ts(), audit_escape() */
#include "audit/audit.h"
#include "tests/unit/audit_ref.h"
#include "tests/unit/fixture.h"

#define LINE_LIMIT (64 * 1024)
#define FIELD_CAP 1024 /* host, path, reason, error (audit.h) */
#define MAXLINES 25000
#define NCHILD 4
#define NPERCHILD 500

struct fixture {
	char dir[PATH_MAX];
	char log[PATH_MAX + 32];
	json_t *lines[MAXLINES];
	size_t nlines;
	size_t longest; /* longest line, newline included */
};

static int
setup(void **state)
{
	struct fixture *f;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return -1;
	if (fixture_tmpdir(f->dir, sizeof(f->dir), "test_audit") != 0)
		return -1;
	snprintf(f->log, sizeof(f->log), "%s/audit.jsonl", f->dir);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;
	size_t i;

	for (i = 0; i < f->nlines; i++)
		json_decref(f->lines[i]);
	fixture_rmtree(f->dir);
	free(f);
	return 0;
}

/* Reads the whole of PATH into a NUL-terminated buffer; *LEN its size. */
static char *
slurp(const char *path, size_t *len)
{
	FILE *fp;
	char *buf = NULL;
	size_t n = 0;

	if ((fp = fopen(path, "r")) == NULL)
		fail_msg("open %s: %s", path, strerror(errno));
	if (getdelim(&buf, &n, '\0', fp) == -1) {
		free(buf);
		buf = strdup("");
	}
	*len = strlen(buf);
	fclose(fp);
	return buf;
}

/* Checks that one line is printable ASCII and parses it into F->lines. */
static void
parse_line(struct fixture *f, const char *line, size_t len)
{
	json_error_t jerr;
	json_t *o;
	size_t i;

	for (i = 0; i < len; i++)
		if ((unsigned char)line[i] < 0x20 ||
		    (unsigned char)line[i] > 0x7e)
			fail_msg("byte 0x%02x in line %zu",
			    (unsigned char)line[i], f->nlines + 1);
	o = json_loadb(line, len, 0, &jerr);
	if (o == NULL || !json_is_object(o))
		fail_msg("line %zu: %s", f->nlines + 1, jerr.text);
	assert_true(f->nlines < MAXLINES);
	f->lines[f->nlines++] = o;
}

/* Parses every line of the log text BUF; each must end in a newline. */
static void
parse_text(struct fixture *f, const char *buf, size_t len)
{
	const char *p = buf, *nl;

	while (p < buf + len) {
		if ((nl = memchr(p, '\n', (size_t)(buf + len - p))) == NULL)
			fail_msg("incomplete last line");
		parse_line(f, p, (size_t)(nl - p));
		if ((size_t)(nl - p) + 1 > f->longest)
			f->longest = (size_t)(nl - p) + 1;
		p = nl + 1;
	}
}

static void
load_log(struct fixture *f)
{
	size_t len;
	char *buf = slurp(f->log, &len);

	parse_text(f, buf, len);
	free(buf);
}

static struct audit *
open_log(struct fixture *f, const char *run_id)
{
	char err[256];
	struct audit *a = audit_open(f->log, run_id, err, sizeof(err));

	if (a == NULL)
		fail_msg("%s", err);
	return a;
}

/* Writes the one record R and loads the log. */
static void
write_one(struct fixture *f, const struct audit_rec *r)
{
	struct audit *a = open_log(f, "run-1");

	assert_int_equal(audit_write(a, r), 0);
	audit_close(a);
	load_log(f);
	assert_int_equal(f->nlines, 1);
}

static const char *
str_field(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_string(v))
		fail_msg("\"%s\" is not a string", key);
	return json_string_value(v);
}

static json_int_t
int_field(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_integer(v))
		fail_msg("\"%s\" is not an integer", key);
	return json_integer_value(v);
}

/* A record with every field set. */
static void
full_rec(struct audit_rec *r)
{
	audit_rec_init(r, "request", 42);
	r->method = "GET";
	r->host = "example.com";
	r->port = 443;
	r->path = "/a/b";
	r->decision = "deny";
	r->rule_file = "f.conf";
	r->rule_line = 12;
	r->reason = "no rule matches";
	r->addr = "93.184.216.34";
	r->status = 403;
	r->bytes_up = 10;
	r->bytes_down = 20;
	r->ms = 5;
	r->secret = "gh-token";
	r->error = "none";
}

static const char *const all_keys[] = {"ts", "sandbox", "conn", "event",
    "method", "host", "port", "path", "decision", "rule", "reason", "addr",
    "status", "bytes_up", "bytes_down", "ms", "secret", "error"};

/* Checks "YYYY-MM-DDTHH:MM:SS.mmmZ" within a few seconds of now. */
static void
check_ts(const char *ts)
{
	static const char pat[] = "dddd-dd-ddTdd:dd:dd.dddZ";
	struct tm tm;
	time_t t;
	size_t i;

	assert_int_equal(strlen(ts), strlen(pat));
	for (i = 0; pat[i] != '\0'; i++) {
		if (pat[i] == 'd')
			assert_true(ts[i] >= '0' && ts[i] <= '9');
		else
			assert_int_equal(ts[i], pat[i]);
	}
	memset(&tm, 0, sizeof(tm));
	assert_non_null(strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm));
	t = timegm(&tm);
	assert_true(llabs((long long)(t - time(NULL))) <= 5);
}

static void
test_full_record(void **state)
{
	struct fixture *f = *state;
	struct audit_rec r;
	json_t *o;

	full_rec(&r);
	write_one(f, &r);
	o = f->lines[0];
	assert_int_equal(json_object_size(o), 18);
	check_ts(str_field(o, "ts"));
	assert_string_equal(str_field(o, "sandbox"), "run-1");
	assert_int_equal(int_field(o, "conn"), 42);
	assert_string_equal(str_field(o, "event"), "request");
	assert_string_equal(str_field(o, "method"), "GET");
	assert_string_equal(str_field(o, "host"), "example.com");
	assert_int_equal(int_field(o, "port"), 443);
	assert_string_equal(str_field(o, "path"), "/a/b");
	assert_string_equal(str_field(o, "decision"), "deny");
	assert_string_equal(str_field(o, "rule"), "f.conf:12");
	assert_string_equal(str_field(o, "reason"), "no rule matches");
	assert_string_equal(str_field(o, "addr"), "93.184.216.34");
	assert_int_equal(int_field(o, "status"), 403);
	assert_int_equal(int_field(o, "bytes_up"), 10);
	assert_int_equal(int_field(o, "bytes_down"), 20);
	assert_int_equal(int_field(o, "ms"), 5);
	assert_string_equal(str_field(o, "secret"), "gh-token");
	assert_string_equal(str_field(o, "error"), "none");
}

/*
 * The secret's name goes on both records of a request its rule injects
 * into: the decision ("request", allowed, no reason) and the "end".
 */
static void
test_secret_both_records(void **state)
{
	static const char *const events[] = {"request", "end"};
	struct fixture *f = *state;
	struct audit *a = open_log(f, "run-1");
	struct audit_rec r;
	size_t i;

	for (i = 0; i < 2; i++) {
		audit_rec_init(&r, events[i], 7);
		r.method = "GET";
		r.host = "api.example.com";
		r.port = 443;
		r.path = "/repos";
		r.rule_file = "p.conf";
		r.rule_line = 3;
		r.secret = "gh-token";
		if (i == 0)
			r.decision = "allow";
		else
			r.status = 200;
		assert_int_equal(audit_write(a, &r), 0);
	}
	audit_close(a);
	load_log(f);
	assert_int_equal(f->nlines, 2);
	for (i = 0; i < 2; i++) {
		assert_string_equal(str_field(f->lines[i], "event"), events[i]);
		assert_string_equal(
		    str_field(f->lines[i], "secret"), "gh-token");
	}
	assert_string_equal(str_field(f->lines[0], "decision"), "allow");
}

static void
test_key_order(void **state)
{
	struct fixture *f = *state;
	struct audit_rec r;
	char key[32];
	const char *prev, *at;
	size_t len, i;
	char *buf;

	full_rec(&r);
	write_one(f, &r);
	buf = slurp(f->log, &len);
	assert_int_equal(buf[0], '{');
	prev = buf;
	for (i = 0; i < sizeof(all_keys) / sizeof(all_keys[0]); i++) {
		snprintf(key, sizeof(key), "\"%s\":", all_keys[i]);
		if ((at = strstr(buf, key)) == NULL || at < prev)
			fail_msg("key %s missing or out of order", key);
		prev = at;
	}
	/* Compact: no space after separators. */
	assert_null(strstr(buf, "\": "));
	assert_null(strstr(buf, ", \""));
	free(buf);
}

static void
test_absent_fields(void **state)
{
	struct fixture *f = *state;
	struct audit_rec r;
	struct audit *a;
	json_t *o;

	audit_rec_init(&r, "end", 7);
	a = open_log(f, NULL);
	assert_int_equal(audit_write(a, &r), 0);
	audit_close(a);
	load_log(f);
	o = f->lines[0];
	assert_int_equal(json_object_size(o), 3);
	assert_non_null(json_object_get(o, "ts"));
	assert_int_equal(int_field(o, "conn"), 7);
	assert_string_equal(str_field(o, "event"), "end");
	assert_null(json_object_get(o, "sandbox"));
	assert_null(json_object_get(o, "port"));
	assert_null(json_object_get(o, "rule"));
}

static void
test_numbers(void **state)
{
	struct fixture *f = *state;
	struct audit_rec r;
	json_t *o;

	audit_rec_init(&r, "end", UINT64_C(1) << 40);
	r.port = 0;
	r.status = 0;
	r.bytes_up = INT64_MAX;
	r.bytes_down = 0;
	r.ms = -5;
	write_one(f, &r);
	o = f->lines[0];
	assert_int_equal(int_field(o, "conn"), (json_int_t)1 << 40);
	assert_int_equal(int_field(o, "port"), 0);
	assert_int_equal(int_field(o, "status"), 0);
	assert_true(int_field(o, "bytes_up") == INT64_MAX);
	assert_int_equal(int_field(o, "bytes_down"), 0);
	assert_null(json_object_get(o, "ms"));
	assert_null(json_object_get(o, "rule"));
}

static void
test_path_query(void **state)
{
	static const char *const paths[][2] = {
	    {"/a?token=x", "/a"},
	    {"/a#frag", "/a"},
	    {"/a/b?x=1#y", "/a/b"},
	    {"/a#f?token=x", "/a"},
	    {"?token=x", ""},
	    {"/plain", "/plain"},
	};
	struct fixture *f = *state;
	struct audit_rec r;
	struct audit *a = open_log(f, "run-1");
	size_t i, len, n = sizeof(paths) / sizeof(paths[0]);
	char *buf;

	for (i = 0; i < n; i++) {
		audit_rec_init(&r, "request", i);
		r.path = paths[i][0];
		assert_int_equal(audit_write(a, &r), 0);
	}
	audit_close(a);
	load_log(f);
	assert_int_equal(f->nlines, n);
	for (i = 0; i < n; i++)
		assert_string_equal(
		    str_field(f->lines[i], "path"), paths[i][1]);
	buf = slurp(f->log, &len);
	assert_null(strstr(buf, "token"));
	assert_null(strstr(buf, "frag"));
	free(buf);
}

static void
test_invalid_utf8(void **state)
{
	struct fixture *f = *state;
	struct audit_rec r;
	json_t *o;

	audit_rec_init(&r, "request", 1);
	/* Invalid bytes, C0, DEL and C1 controls each become one '?'. */
	r.host = "ex\xff\xfe"
	         "ample\x01.com";
	r.path = "/\x80|\xc3(|\xed\xa0\x80|\xf4\x90\x80\x80|\xc0\xaf|"
	         "\x1b[31m|\x7f|\xc2\x85|\xc2\x9f|\xe2\x82|\xf0\x9f\x98";
	/* Valid UTF-8, quotes and backslashes come through unchanged. */
	r.reason =
	    "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc2\xa0 \"q\" \\";
	r.error = "line1\nline2\r\ttab\x00hidden";
	r.method = "G\x85T";
	write_one(f, &r);
	o = f->lines[0];
	assert_string_equal(str_field(o, "host"), "ex??ample?.com");
	assert_string_equal(
	    str_field(o, "path"), "/?|?(|???|????|??|?[31m|?|?|?|??|???");
	assert_string_equal(str_field(o, "reason"), r.reason);
	assert_string_equal(str_field(o, "error"), "line1?line2??tab");
	assert_string_equal(str_field(o, "method"), "G?T");
}

/* Every byte value, alone and in a pair, gives valid JSON. */
static void
test_all_bytes(void **state)
{
	struct fixture *f = *state;
	struct audit_rec r;
	struct audit *a = open_log(f, "run-\xff");
	char s[4];
	unsigned b;

	for (b = 1; b < 256; b++) {
		audit_rec_init(&r, "request", b);
		s[0] = (char)b;
		s[1] = (char)(b ^ 0x80 ? b ^ 0x80 : 1);
		s[2] = (char)b;
		s[3] = '\0';
		r.host = r.path = r.reason = r.error = s;
		assert_int_equal(audit_write(a, &r), 0);
	}
	audit_close(a);
	load_log(f);
	assert_int_equal(f->nlines, 255);
	assert_string_equal(str_field(f->lines[0], "sandbox"), "run-?");
}

static void
fill(char *buf, size_t n, const char *unit)
{
	size_t i, ulen = strlen(unit);

	for (i = 0; i + ulen <= n; i += ulen)
		memcpy(buf + i, unit, ulen);
	buf[i] = '\0';
}

static void
test_huge_path(void **state)
{
	struct fixture *f = *state;
	struct audit_rec r;
	size_t n = 200 * 1024;
	char *path = malloc(n + 1);
	const char *got;

	assert_non_null(path);
	fill(path, n, "/abcdefg");
	full_rec(&r);
	r.path = path;
	write_one(f, &r);
	/* Cut to FIELD_CAP bytes, marked: a long URL costs little. */
	assert_true(f->longest < 2 * FIELD_CAP);
	got = str_field(f->lines[0], "path");
	assert_int_equal(strlen(got), FIELD_CAP);
	assert_memory_equal(got, path, FIELD_CAP - 3);
	assert_string_equal(got + strlen(got) - 3, "...");
	assert_int_equal(int_field(f->lines[0], "status"), 403);
	assert_string_equal(str_field(f->lines[0], "error"), "none");
	free(path);
}

/* Four huge strings whose characters grow when escaped: U+00E9 and ". */
static void
test_huge_everything(void **state)
{
	struct fixture *f = *state;
	struct audit_rec r;
	size_t n = 100 * 1024;
	char *s = malloc(n + 1), *q = malloc(n + 1);

	assert_non_null(s);
	assert_non_null(q);
	fill(s, n, "\xc3\xa9");
	fill(q, n, "\"");
	full_rec(&r);
	r.host = s;
	r.path = q;
	r.reason = s;
	r.error = q;
	write_one(f, &r);
	/* Each of the four at most FIELD_CAP once escaped. */
	assert_true(f->longest < 5 * FIELD_CAP);
	assert_true(f->longest > 4 * FIELD_CAP - 64);
	assert_true(strlen(str_field(f->lines[0], "host")) <= FIELD_CAP / 2);
	assert_int_equal(int_field(f->lines[0], "port"), 443);
	free(s);
	free(q);
}

static void
test_fits_uncut(void **state)
{
	struct fixture *f = *state;
	struct audit_rec r;
	size_t n = FIELD_CAP;
	char *path = malloc(n + 1);

	assert_non_null(path);
	fill(path, n, "/x");
	full_rec(&r);
	r.path = path;
	write_one(f, &r);
	assert_string_equal(str_field(f->lines[0], "path"), path);
	free(path);
}

/* One writer: NPERCHILD records on its own descriptor. */
static void
child_write(struct fixture *f, unsigned id)
{
	struct audit_rec r;
	struct audit *a;
	char path[4096];
	unsigned i;
	int bad = 0;

	if ((a = audit_open(f->log, "run-c", NULL, 0)) == NULL)
		_exit(2);
	for (i = 0; i < NPERCHILD; i++) {
		audit_rec_init(&r, "end", id * 10000 + i);
		fill(path, (i * 37) % sizeof(path), "/p");
		r.path = path;
		r.bytes_up = i;
		bad |= audit_write(a, &r) != 0;
	}
	audit_close(a);
	_exit(bad);
}

static void
test_concurrent(void **state)
{
	struct fixture *f = *state;
	unsigned char seen[NCHILD][NPERCHILD] = {{0}};
	json_int_t conn;
	pid_t pid;
	unsigned i;
	int st;

	for (i = 0; i < NCHILD; i++) {
		assert_true((pid = fork()) != -1);
		if (pid == 0)
			child_write(f, i);
	}
	for (i = 0; i < NCHILD; i++) {
		assert_true(wait(&st) != -1);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	load_log(f);
	assert_int_equal(f->nlines, NCHILD * NPERCHILD);
	for (i = 0; i < f->nlines; i++) {
		conn = int_field(f->lines[i], "conn");
		assert_true(conn / 10000 < NCHILD && conn % 10000 < NPERCHILD);
		assert_int_equal(
		    int_field(f->lines[i], "bytes_up"), conn % 10000);
		assert_int_equal(seen[conn / 10000][conn % 10000]++, 0);
	}
}

static void
test_stderr(void **state)
{
	struct fixture *f = *state;
	struct audit_rec r;
	struct audit *a;
	char buf[4096];
	int p[2], saved;
	ssize_t n;

	assert_int_equal(pipe(p), 0);
	assert_true((saved = dup(STDERR_FILENO)) != -1);
	assert_true(dup2(p[1], STDERR_FILENO) != -1);
	a = audit_open("stderr", "run-e", NULL, 0);
	full_rec(&r);
	r.path = "/stderr?q=1";
	assert_int_equal(a != NULL ? audit_write(a, &r) : -1, 0);
	audit_close(a);
	/* Standard error is still open after audit_close. */
	assert_true(fcntl(STDERR_FILENO, F_GETFD) != -1);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(p[1]);
	n = read(p[0], buf, sizeof(buf));
	close(p[0]);
	assert_true(n > 0);
	parse_text(f, buf, (size_t)n);
	assert_int_equal(f->nlines, 1);
	assert_string_equal(str_field(f->lines[0], "sandbox"), "run-e");
	assert_string_equal(str_field(f->lines[0], "path"), "/stderr");
}

/* Opening PATH fails with errno E and a message naming PATH and E. */
static void
check_open_fails(const char *path, int e)
{
	char err[512], small[8];
	const char *reason = strerror(e);

	memset(err, 0, sizeof(err));
	errno = 0;
	assert_null(audit_open(path, "run", err, sizeof(err)));
	assert_int_equal(errno, e);
	if (strstr(err, path) == NULL || strstr(err, reason) == NULL)
		fail_msg(
		    "message \"%s\" lacks \"%s\" or \"%s\"", err, path, reason);
	/* A short buffer is cut, and no buffer at all is fine. */
	memset(small, 'x', sizeof(small));
	assert_null(audit_open(path, "run", small, sizeof(small)));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_null(audit_open(path, "run", NULL, 0));
}

static void
test_open_failures(void **state)
{
	struct fixture *f = *state;
	char path[PATH_MAX + 32];

	check_open_fails(f->dir, EISDIR);
	snprintf(path, sizeof(path), "%s/missing/audit.jsonl", f->dir);
	check_open_fails(path, ENOENT);
}

static void
test_open_unwritable(void **state)
{
	struct fixture *f = *state;
	char path[PATH_MAX + 32];
	int fd;

	if (geteuid() == 0) {
		fprintf(stderr,
		    "test_open_unwritable: skipped: root writes "
		    "anywhere; the uid 65534 run covers it\n");
		skip();
	}
	snprintf(path, sizeof(path), "%s/ro.jsonl", f->dir);
	assert_true((fd = open(path, O_CREAT | O_WRONLY, 0400)) != -1);
	close(fd);
	check_open_fails(path, EACCES);
	snprintf(path, sizeof(path), "%s/ro", f->dir);
	assert_int_equal(mkdir(path, 0500), 0);
	snprintf(path, sizeof(path), "%s/ro/audit.jsonl", f->dir);
	check_open_fails(path, EACCES);
}

static void
test_mode_and_append(void **state)
{
	struct fixture *f = *state;
	struct audit_rec r;
	struct audit *a;
	struct stat st;
	mode_t old = umask(022);
	int fd;

	a = open_log(f, "run-1");
	umask(old);
	assert_int_equal(stat(f->log, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	audit_close(a);
	/* An existing file is appended to, never truncated. */
	assert_true((fd = open(f->log, O_WRONLY | O_APPEND)) != -1);
	assert_int_equal(write(fd, "{\"old\":1}\n", 10), 10);
	close(fd);
	a = open_log(f, "run-1");
	full_rec(&r);
	assert_int_equal(audit_write(a, &r), 0);
	audit_close(a);
	load_log(f);
	assert_int_equal(f->nlines, 2);
	assert_int_equal(int_field(f->lines[0], "old"), 1);
}

/* The log's descriptor is close-on-exec: commands never inherit it. */
static void
test_cloexec(void **state)
{
	struct fixture *f = *state;
	struct audit *a = open_log(f, "run-1");
	char link[64], target[PATH_MAX + 32];
	ssize_t n;
	int fd, found = 0;

	for (fd = 3; fd < 1024 && !found; fd++) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (strcmp(target, f->log) != 0)
			continue;
		found = 1;
		assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
		assert_int_equal(fcntl(fd, F_GETFL) & (O_APPEND | O_ACCMODE),
		    O_APPEND | O_WRONLY);
	}
	audit_close(a);
	if (!found)
		fail_msg("the log's descriptor is not in /proc/self/fd");
}

static void
test_write_failure(void **state)
{
	struct audit_rec r;
	struct audit *a;
	char err[256];

	(void)state;
	if ((a = audit_open("/dev/full", "run", err, sizeof(err))) == NULL)
		fail_msg("cannot open /dev/full: %s", err);
	full_rec(&r);
	errno = 0;
	assert_int_equal(audit_write(a, &r), -1);
	assert_int_equal(errno, ENOSPC);
	audit_close(a);
}

/* A denial like FULL_REC on connection CONN with PATH. */
static void
deny_rec(struct audit_rec *r, uint64_t conn, const char *path)
{
	full_rec(r);
	r->conn = conn;
	r->path = path;
	r->bytes_up = r->bytes_down = r->ms = -1;
	r->secret = r->error = r->addr = NULL;
}

static json_int_t
count_of(const json_t *o)
{
	return json_object_get(o, "count") != NULL ? int_field(o, "count") : 1;
}

/* Identical denials fold into one record with a count. */
static void
test_fold(void **state)
{
	struct fixture *f = *state;
	struct audit *a = open_log(f, "run-f");
	struct audit_rec r;
	char long1[3000], long2[3000];
	uint64_t i;

	deny_rec(&r, 1, "/x");
	assert_int_equal(audit_write(a, &r), 0);
	for (i = 2; i <= 5; i++) {
		/* The query is not logged: these are identical as logged. */
		deny_rec(&r, i, i % 2 ? "/x?a=1" : "/x");
		assert_int_equal(audit_write(a, &r), AUDIT_HELD);
	}
	/* Anything else is written; the folded ones are flushed first. */
	audit_rec_init(&r, "end", 1);
	r.status = 403;
	assert_int_equal(audit_write(a, &r), 0);
	deny_rec(&r, 6, "/y");
	assert_int_equal(audit_write(a, &r), 0);
	/* Paths that differ only past the cut are identical as logged. */
	fill(long1, sizeof(long1) - 1, "/a");
	memcpy(long2, long1, sizeof(long2));
	long2[2500] = 'z';
	deny_rec(&r, 7, long1);
	assert_int_equal(audit_write(a, &r), 0);
	deny_rec(&r, 8, long2);
	assert_int_equal(audit_write(a, &r), AUDIT_HELD);
	deny_rec(&r, 9, long2);
	r.reason = "another reason";
	assert_int_equal(audit_write(a, &r), 0);
	deny_rec(&r, 10, long2);
	r.reason = "another reason";
	assert_int_equal(audit_write(a, &r), AUDIT_HELD);
	assert_int_equal(audit_flush(a), 0);
	assert_int_equal(audit_flush(a), 0); /* nothing more held */
	deny_rec(&r, 11, long2);
	r.reason = "another reason";
	assert_int_equal(audit_write(a, &r), AUDIT_HELD);
	audit_close(a); /* writes the last count */
	load_log(f);
	assert_int_equal(f->nlines, 9);
	assert_null(json_object_get(f->lines[0], "count"));
	assert_string_equal(str_field(f->lines[1], "event"), "end");
	assert_int_equal(int_field(f->lines[2], "count"), 4);
	assert_int_equal(int_field(f->lines[2], "conn"), 5);
	assert_string_equal(str_field(f->lines[2], "path"), "/x");
	assert_string_equal(str_field(f->lines[2], "decision"), "deny");
	assert_string_equal(
	    str_field(f->lines[2], "reason"), "no rule matches");
	assert_string_equal(str_field(f->lines[2], "rule"), "f.conf:12");
	assert_string_equal(str_field(f->lines[3], "path"), "/y");
	assert_int_equal(int_field(f->lines[5], "count"), 1);
	assert_string_equal(str_field(f->lines[6], "reason"), "another reason");
	assert_int_equal(int_field(f->lines[7], "count"), 1);
	assert_int_equal(int_field(f->lines[8], "count"), 1);
	assert_int_equal(int_field(f->lines[8], "conn"), 11);
}

/* Allowed requests are never folded. */
static void
test_fold_allow(void **state)
{
	struct fixture *f = *state;
	struct audit *a = open_log(f, "run-f");
	struct audit_rec r;
	int i;

	for (i = 0; i < 3; i++) {
		deny_rec(&r, 1, "/x");
		r.decision = "allow";
		r.reason = NULL;
		assert_int_equal(audit_write(a, &r), 0);
	}
	audit_close(a);
	load_log(f);
	assert_int_equal(f->nlines, 3);
}

/* Past the limit, records are counted per (decision, host, port). */
static void
test_limit(void **state)
{
	struct fixture *f = *state;
	struct audit *a = open_log(f, "run-l");
	struct audit_rec r;
	struct stat st;
	json_int_t allowed = 0, denied = 0, up = 0;
	char host[32];
	int i, rc, held = 0;
	size_t k;

	audit_set_limit(a, 4000);
	for (i = 0; i < 200; i++) {
		deny_rec(&r, (uint64_t)i, "/p");
		/* 70 hosts: more than the summary keeps one by one. */
		snprintf(host, sizeof(host), "h%d.test", i % 70);
		r.host = host;
		r.decision = i % 3 ? "allow" : "deny";
		rc = audit_write(a, &r);
		assert_true(rc == 0 || rc == AUDIT_HELD);
		held += rc == AUDIT_HELD;
		if (rc == AUDIT_HELD)
			assert_true(audit_over_limit(a));
		audit_rec_init(&r, "end", (uint64_t)i);
		r.host = host;
		r.port = 443;
		r.bytes_up = 10;
		r.bytes_down = 0;
		rc = audit_write(a, &r);
		assert_true(rc == 0 || rc == AUDIT_HELD);
	}
	assert_true(held > 150);
	assert_int_equal(stat(f->log, &st), 0);
	assert_true(st.st_size <= 4000);
	audit_close(a);
	load_log(f);
	for (k = 0; k < f->nlines; k++) {
		const json_t *o = f->lines[k];

		if (json_object_get(o, "bytes_up") != NULL)
			up += int_field(o, "bytes_up");
		if (strcmp(str_field(o, "event"), "request") != 0)
			continue;
		if (strcmp(str_field(o, "decision"), "allow") == 0)
			allowed += count_of(o);
		else
			denied += count_of(o);
		if (json_object_get(o, "summary") != NULL) {
			assert_true(
			    json_is_true(json_object_get(o, "summary")));
			assert_non_null(
			    strstr(str_field(o, "reason"), "limit"));
		}
	}
	/* Every request and byte is accounted for, in few lines. */
	assert_int_equal(allowed + denied, 200);
	assert_int_equal(denied, 67);
	assert_int_equal(up, 2000);
	assert_true(f->nlines < 4000 / 100 + 2 * 64 + 2 + 1);
}

/* A write cut short by a file size limit: the next line ends it. */
static void
test_partial_line(void **state)
{
	struct fixture *f = *state;
	struct audit *a = open_log(f, "run-p");
	struct audit_rec r;
	struct rlimit old, lim;
	void (*oldsig)(int) = signal(SIGXFSZ, SIG_IGN);
	char *buf, *p;
	size_t len, lines = 0, i;
	int n = 0;

	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 1000;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	for (i = 0; i < 20; i++) {
		audit_rec_init(&r, "end", i);
		r.path = "/some/path/of/a/few/bytes";
		if (audit_write(a, &r) != 0)
			break;
		n++;
	}
	assert_true(i < 20);
	assert_int_equal(audit_write(a, &r), -1); /* still full */
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, oldsig);
	audit_rec_init(&r, "end", 99);
	assert_int_equal(audit_write(a, &r), 0);
	audit_close(a);
	buf = slurp(f->log, &len);
	assert_int_equal(len > 0 ? buf[len - 1] : 0, '\n');
	/* N whole lines, the cut one, then a whole one that parses. */
	for (p = buf; (p = strchr(p, '\n')) != NULL; p++)
		lines++;
	assert_int_equal(lines, (size_t)n + 2);
	p = buf + len - 1;
	while (p > buf && p[-1] != '\n')
		p--;
	parse_line(f, p, (size_t)(buf + len - 1 - p));
	assert_int_equal(int_field(f->lines[f->nlines - 1], "conn"), 99);
	free(buf);
}

static void
test_parse_size(void **state)
{
	uint64_t v = 0;

	(void)state;
	assert_int_equal(audit_parse_size("0", &v), 0);
	assert_true(v == 0);
	assert_int_equal(audit_parse_size("123", &v), 0);
	assert_true(v == 123);
	assert_int_equal(audit_parse_size("64K", &v), 0);
	assert_true(v == 64 * 1024);
	assert_int_equal(audit_parse_size("10m", &v), 0);
	assert_true(v == 10 * 1024 * 1024);
	assert_int_equal(audit_parse_size("2G", &v), 0);
	assert_true(v == (uint64_t)2 << 30);
	assert_int_equal(audit_parse_size("", &v), -1);
	assert_int_equal(audit_parse_size("-1", &v), -1);
	assert_int_equal(audit_parse_size("1T", &v), -1);
	assert_int_equal(audit_parse_size("1KB", &v), -1);
	assert_int_equal(audit_parse_size("K", &v), -1);
	assert_int_equal(audit_parse_size("99999999999999999999", &v), -1);
	assert_int_equal(audit_parse_size("17179869184G", &v), -1);
}

static void
test_close_null(void **state)
{
	(void)state;
	audit_close(NULL);
}

/* --- a broker's records: the client fields and the client's copy ------- */

/* A broker's records name the client; a "client" record its decision. */
static void
test_client_fields(void **state)
{
	struct fixture *f = *state;
	struct audit *a = open_log(f, "run-c");
	struct audit_rec r;
	json_t *o;

	full_rec(&r);
	r.decision = "allow";
	assert_int_equal(audit_write(a, &r), 0);
	assert_int_equal(audit_set_client(a, 1001, 4242, "cu\"rl\x01"), 0);
	assert_int_equal(audit_write(a, &r), 0);
	audit_rec_init(&r, "client", 0);
	r.decision = "deny";
	r.reason = "policy ci is not granted to uid 1001";
	r.policy = "ci";
	assert_int_equal(audit_write(a, &r), 0);
	assert_int_equal(audit_set_client(a, 7, 8, NULL), 0);
	audit_rec_init(&r, "end", 3);
	assert_int_equal(audit_write(a, &r), 0);
	audit_close(a);
	load_log(f);
	assert_int_equal(f->nlines, 4);
	/* Before: none. */
	assert_null(json_object_get(f->lines[0], "client_uid"));
	assert_int_equal(json_object_size(f->lines[0]), 18);
	o = f->lines[1];
	assert_int_equal(json_object_size(o), 21);
	assert_int_equal(int_field(o, "client_uid"), 1001);
	assert_int_equal(int_field(o, "client_pid"), 4242);
	/* escaped as every string: control bytes made '?' */
	assert_string_equal(str_field(o, "client_cmd"), "cu\"rl?");
	o = f->lines[2];
	assert_string_equal(str_field(o, "event"), "client");
	assert_string_equal(str_field(o, "decision"), "deny");
	assert_string_equal(str_field(o, "policy"), "ci");
	assert_int_equal(int_field(o, "client_uid"), 1001);
	/* NULL command: left out. */
	o = f->lines[3];
	assert_int_equal(int_field(o, "client_uid"), 7);
	assert_int_equal(int_field(o, "client_pid"), 8);
	assert_null(json_object_get(o, "client_cmd"));
}

/* Opens a file in F->dir called NAME with FLAGS; returns the fd. */
static int
open_in(struct fixture *f, const char *name, int flags)
{
	char path[PATH_MAX + 64];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	if ((fd = open(path, flags | O_CREAT, 0600)) == -1)
		fail_msg("open %s: %s", path, strerror(errno));
	return fd;
}

static char *
slurp_in(struct fixture *f, const char *name, size_t *len)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	return slurp(path, len);
}

/*
 * The copy gets the same bytes as the main log, appended even when it
 * was opened without O_APPEND and its offset is elsewhere.
 */
static void
test_copy(void **state)
{
	struct fixture *f = *state;
	struct audit *a = open_log(f, "run-k");
	struct audit_rec r;
	size_t n1, n2;
	char *main_text, *copy_text;
	int fd;

	fd = open_in(f, "copy.jsonl", O_WRONLY);
	assert_int_equal(write(fd, "old\n", 4), 4);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(audit_add_copy(a, fd), 0);
	assert_true(fcntl(fd, F_GETFL) & O_APPEND);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(audit_set_client(a, 1001, 99, "git"), 0);
	full_rec(&r);
	assert_int_equal(audit_write(a, &r), 0);
	r.decision = "allow";
	assert_int_equal(audit_write(a, &r), 0);
	audit_close(a); /* closes the copy */
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	main_text = slurp(f->log, &n1);
	copy_text = slurp_in(f, "copy.jsonl", &n2);
	assert_int_equal(n2, n1 + 4);
	assert_memory_equal(copy_text, "old\n", 4);
	assert_memory_equal(copy_text + 4, main_text, n1);
	free(main_text);
	free(copy_text);
	load_log(f);
	assert_int_equal(f->nlines, 2);
}

/* Not a regular file, or not open for writing: refused and closed. */
static void
test_copy_refused(void **state)
{
	struct fixture *f = *state;
	struct audit *a = open_log(f, "run-r");
	int p[2], fd;

	assert_int_equal(pipe(p), 0);
	assert_int_equal(audit_add_copy(a, p[1]), -1);
	assert_int_equal(fcntl(p[1], F_GETFD), -1);
	close(p[0]);
	fd = open_in(f, "ro.jsonl", O_RDONLY);
	assert_int_equal(audit_add_copy(a, fd), -1);
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	assert_int_equal((fd = open(f->dir, O_RDONLY | O_DIRECTORY)) >= 0, 1);
	assert_int_equal(audit_add_copy(a, fd), -1);
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	assert_int_equal(audit_add_copy(a, -1), -1);
	/* A read-write one is taken. */
	assert_int_equal(audit_add_copy(a, open_in(f, "rw.jsonl", O_RDWR)), 0);
	audit_close(a);
}

/*
 * A copy that fails is dropped after one attempt; the record is written
 * all the same, and the copy gets nothing more.
 */
static void
test_copy_fails(void **state)
{
	struct fixture *f = *state;
	struct audit *a = open_log(f, "run-x");
	struct audit_rec r;
	int fd, ro;
	size_t n;
	char *text;

	fd = open_in(f, "copy.jsonl", O_WRONLY);
	assert_int_equal(audit_add_copy(a, fd), 0);
	full_rec(&r);
	r.decision = "allow";
	assert_int_equal(audit_write(a, &r), 0);
	/* The copy's descriptor now refuses writes (as a full disk would). */
	ro = open_in(f, "ro.jsonl", O_RDONLY);
	assert_int_equal(dup2(ro, fd), fd);
	close(ro);
	assert_int_equal(audit_write(a, &r), 0);
	/* Dropped: closed, and not written again. */
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	assert_int_equal(audit_write(a, &r), 0);
	audit_close(a);
	load_log(f);
	assert_int_equal(f->nlines, 3);
	text = slurp_in(f, "copy.jsonl", &n);
	assert_int_equal(strchr(text, '\n') - text + 1, (ptrdiff_t)n);
	free(text);
}

/* The copy stops where the main log's limit stops it; both get the
 * summary at close. */
static void
test_copy_limit(void **state)
{
	struct fixture *f = *state;
	struct audit *a = open_log(f, "run-m");
	struct audit_rec r;
	char host[32], *main_text, *copy_text;
	size_t n1, n2;
	int i, fd;

	fd = open_in(f, "copy.jsonl", O_WRONLY);
	assert_int_equal(audit_add_copy(a, fd), 0);
	audit_set_limit(a, 3000);
	for (i = 0; i < 100; i++) {
		deny_rec(&r, (uint64_t)i, "/p");
		snprintf(host, sizeof(host), "h%d.test", i);
		r.host = host;
		assert_true(audit_write(a, &r) >= 0);
	}
	assert_true(audit_over_limit(a));
	audit_close(a);
	main_text = slurp(f->log, &n1);
	copy_text = slurp_in(f, "copy.jsonl", &n2);
	assert_int_equal(n1, n2);
	assert_memory_equal(main_text, copy_text, n1);
	assert_non_null(strstr(copy_text, "\"summary\":true"));
	free(main_text);
	free(copy_text);
}

/* --- byte for byte the old jansson writer (audit_ref.c) ---------------- */

#define NREC 2000 /* records per configuration of the log */
#define STRMAX (6 * 1024) /* longest generated string */
#define NSTR 20 /* string fields of a record, ts included */

/* Every escaping class and every kind of bad byte, as units to repeat. */
static const char *const units[] = {
    "a",
    "plain.example.com",
    "/a/b/c",
    "\"",
    "\\",
    "/",
    "\x01",
    "\x1f",
    "\t",
    "\n",
    "\r",
    "\b",
    "\f",
    "\x7f",
    "\xc2\x80",
    "\xc2\x9f",
    "\xc2\xa0",
    "\xc3\xa9",
    "\xdf\xbf",
    "\xe0\xa0\x80",
    "\xe2\x82\xac",
    "\xe2\x80\xa8",
    "\xed\x9f\xbf",
    "\xee\x80\x80",
    "\xef\xbf\xbf",
    "\xf0\x90\x80\x80",
    "\xf0\x9f\x98\x80",
    "\xf4\x8f\xbf\xbf",
    "\xed\xa0\x80",
    "\xed\xbf\xbf",
    "\xc0\xaf",
    "\xc1\xbf",
    "\xe0\x80\xaf",
    "\xf0\x80\x80\xaf",
    "\xf4\x90\x80\x80",
    "\xf5\x80\x80\x80",
    "\xf8\x88\x80\x80\x80",
    "\xff",
    "\xfe",
    "\x80",
    "\xbf",
    "\xe2\x82",
    "\xf0\x9f\x98",
    "\xc3",
    "?q=1",
    "#frag",
    "...",
    ":",
};

#define NUNITS (sizeof(units) / sizeof(units[0]))

static uint64_t
rnd(uint64_t *st)
{
	*st ^= *st << 13;
	*st ^= *st >> 7;
	*st ^= *st << 17;
	return *st;
}

/* Fills BUF (STRMAX + 1 bytes) with units up to about LEN bytes. */
static void
gen_units(char *buf, size_t len, uint64_t *st, int one_unit)
{
	const char *u = units[rnd(st) % NUNITS];
	size_t n = 0, k;

	while (n < len) {
		if (!one_unit)
			u = units[rnd(st) % NUNITS];
		k = strlen(u);
		if (n + k > STRMAX)
			break;
		memcpy(buf + n, u, k);
		n += k;
	}
	buf[n] = '\0';
}

/* Lengths that end near FIELD_CAP once escaped, for any unit's width. */
static size_t
gen_len(uint64_t *st)
{
	/* bytes of a unit, and its length once escaped */
	static const size_t width[][2] = {
	    {1, 1}, {1, 2}, {2, 6}, {3, 6}, {4, 12}};
	const size_t *w = width[rnd(st) % 5];

	switch (rnd(st) % 4) {
	case 0:
		return rnd(st) % 40;
	case 1:
		return (FIELD_CAP - 16 + rnd(st) % 32) / w[1] * w[0];
	case 2:
		return rnd(st) % 2000;
	default:
		return STRMAX - rnd(st) % 64;
	}
}

/* A string for a field: NULL, a class, units, or random bytes. */
static const char *
gen_str(char *buf, uint64_t *st)
{
	size_t i, n;

	switch (rnd(st) % 6) {
	case 0:
		return NULL;
	case 1:
		return units[rnd(st) % NUNITS];
	case 2:
		gen_units(buf, gen_len(st), st, 1);
		break;
	case 3:
		gen_units(buf, gen_len(st), st, 0);
		break;
	case 4:
		n = rnd(st) % 64;
		for (i = 0; i < n; i++)
			buf[i] = (char)(1 + rnd(st) % 255);
		buf[n] = '\0';
		break;
	default:
		return "";
	}
	return buf;
}

static int64_t
gen_num(uint64_t *st)
{
	static const int64_t v[] = {-1, -2, 0, 1, 9, 10, 99, 443, 65535,
	    INT32_MAX, INT64_MAX, INT64_MIN, 1000000007};

	return rnd(st) % 3 ? v[rnd(st) % 13] : (int64_t)(rnd(st) >> 1);
}

/* A record with every field drawn at random; strings in BUFS. */
static void
gen_rec(
    struct audit_rec *r, char bufs[][STRMAX + 1], uint64_t *st, const char **ts)
{
	static const uint64_t conns[] = {
	    0, 1, INT64_MAX, (uint64_t)INT64_MAX + 1, UINT64_MAX};
	const char **s[] = {&r->event, &r->method, &r->host, &r->path,
	    &r->decision, &r->rule_file, &r->reason, &r->addr, &r->qtype,
	    &r->answer, &r->secret, &r->error, &r->policy, ts};
	size_t i;

	audit_rec_init(r, NULL, rnd(st) % 2 ? conns[rnd(st) % 5] : rnd(st));
	for (i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		*s[i] = gen_str(bufs[i], st);
	if (*ts == NULL || rnd(st) % 2)
		*ts = "2026-12-02T12:34:56.789Z";
	r->via = rnd(st) % 2 ? "proxy" : NULL;
	r->rule_line = rnd(st) % 3 ? (unsigned)(rnd(st) % 1000) : UINT_MAX;
	r->port = (int)gen_num(st);
	r->status = (int)gen_num(st);
	r->bytes_up = gen_num(st);
	r->bytes_down = gen_num(st);
	r->ms = gen_num(st);
	r->count = gen_num(st);
	r->summary = (int)(rnd(st) % 2);
}

/* Says where the two lines first differ, and fails. */
static void
report_diff(size_t k, const char *got, size_t n, const char *want, size_t m)
{
	size_t i = 0;

	while (i < n && i < m && got[i] == want[i])
		i++;
	fail_msg("record %zu: %zu bytes, want %zu; differ at %zu: "
	         "got \"%.40s\", want \"%.40s\"",
	    k, n, m, i, got + (i > 10 ? i - 10 : 0),
	    want + (i > 10 ? i - 10 : 0));
}

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); /* the load aside */
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Formats NREC records both ways on the log A, configured as C. */
static void
compare_records(
    struct audit *a, const struct audit_ref_ctx *c, uint64_t *st, double *tm)
{
	static char bufs[NSTR][STRMAX + 1];
	static char want[LINE_LIMIT];
	struct audit_rec r;
	const char *line, *ts;
	size_t k, n, m;
	double t0;

	for (k = 0; k < NREC; k++) {
		gen_rec(&r, bufs, st, &ts);
		t0 = now_s();
		n = audit_format_ts(a, &r, ts, &line);
		tm[0] += now_s() - t0;
		t0 = now_s();
		m = audit_ref_format(c, &r, ts, want, sizeof(want));
		tm[1] += now_s() - t0;
		assert_true(m > 0);
		if (n != m || memcmp(line, want, n) != 0)
			report_diff(k, line, n, want, m);
	}
}

/*
 * Many records, with every field kind, escaping class, bad byte and
 * length around the cap, on logs with and without a run id and client:
 * the same bytes as jansson wrote.  Prints how fast each formats.
 */
static void
test_same_as_jansson(void **state)
{
	static const char *const ids[] = {"run-1", NULL, "0123456789abcdef",
	    "run-\xff\"\\\xc3\xa9\xf0\x9f\x98\x80"};
	static char cmd[STRMAX + 1];
	struct fixture *f = *state;
	struct audit_ref_ctx c;
	struct audit *a;
	uint64_t st = 0x9e3779b97f4a7c15ULL;
	double tm[2] = {0, 0};
	size_t i, j;

	for (i = 0; i < 4; i++) {
		for (j = 0; j < 3; j++) {
			memset(&c, 0, sizeof(c));
			c.run_id = ids[i];
			a = open_log(f, ids[i]);
			if (j > 0) {
				c.has_client = 1;
				c.client_uid = j == 1 ? 1001 : UINT32_MAX;
				c.client_pid = j == 1 ? 4242 : UINT32_MAX;
				c.client_cmd = gen_str(cmd, &st);
				assert_int_equal(
				    audit_set_client(a, c.client_uid,
				        c.client_pid, c.client_cmd),
				    0);
			}
			compare_records(a, &c, &st, tm);
			audit_close(a);
		}
	}
	fprintf(stderr,
	    "test_same_as_jansson: %d records (large): %.0f ns of CPU "
	    "each, jansson %.0f ns (not asserted)\n",
	    12 * NREC, tm[0] / (12 * NREC) * 1e9, tm[1] / (12 * NREC) * 1e9);
}

/* One string escaped both ways at every cap up to past its length. */
static void
compare_escape(const char *in, size_t inlen)
{
	static char got[4 * STRMAX + 64], want[4 * STRMAX + 64];
	size_t cap, n, m;

	/* No character takes more than 3 bytes per byte once escaped. */
	for (cap = 0; cap <= 3 * inlen + 4; cap++) {
		n = audit_escape(got, sizeof(got), in, inlen, cap);
		m = audit_ref_escape(want, sizeof(want), in, inlen, cap);
		assert_true(m != (size_t)-1 && m != (size_t)-2);
		if (n != m || memcmp(got, want, n) != 0)
			report_diff(cap, got, n, want, m);
	}
}

/* Every unit, pairs of them, and random strings, at every cap. */
static void
test_escape_same(void **state)
{
	static char buf[STRMAX + 1];
	uint64_t st = 42;
	size_t i, j;
	char pair[32];

	(void)state;
	for (i = 0; i < NUNITS; i++) {
		compare_escape(units[i], strlen(units[i]));
		for (j = 0; j < NUNITS; j++) {
			snprintf(pair, sizeof(pair), "%s%s%s", units[i],
			    units[j], units[i]);
			compare_escape(pair, strlen(pair));
		}
	}
	for (i = 0; i < 300; i++) {
		gen_units(buf, rnd(&st) % 80, &st, 0);
		compare_escape(buf, strlen(buf));
	}
	/* Past the end of OUT: the length all the same, OUT not overrun. */
	memset(buf, 'x', 100);
	assert_int_equal(audit_escape(pair, 8, buf, 100, 1024), 100);
}

/* --- several threads on one log ------------------------------------------ */

#define NTHREAD 4
#define NPERTHREAD 5000

struct writer {
	pthread_t t;
	struct audit *a;
	unsigned id;
	int many_hosts; /* 100 hosts, to spread the summary past the limit */
	int bad;
};

/*
 * Even records are decisions (every tenth of them a denial, identical
 * across threads but for the connection, so they fold), odd ones ends
 * with bytes_up = I.  Paths of many lengths make lines of many sizes.
 */
static void *
writer_run(void *arg)
{
	struct writer *w = arg;
	struct audit_rec r;
	char path[2048], host[32];
	unsigned i;
	int rc;

	for (i = 0; i < NPERTHREAD; i++) {
		snprintf(host, sizeof(host), "h%u.test",
		    w->many_hosts ? i % 100 : 0);
		audit_rec_init(&r, i % 2 ? "end" : "request",
		    (uint64_t)w->id * 100000 + i);
		r.host = host;
		r.port = 443;
		fill(path, (i * 37) % sizeof(path), "/p");
		r.path = path;
		if (i % 2) {
			r.bytes_up = i;
		} else if (i % 10 == 0) {
			r.path = "/denied";
			r.decision = "deny";
			r.reason = "no rule matches";
		} else {
			r.decision = "allow";
		}
		rc = audit_write(w->a, &r);
		w->bad |= rc < 0;
	}
	return NULL;
}

/* Starts NTHREAD writers on A and waits for them. */
static void
run_writers(struct audit *a, int many_hosts)
{
	struct writer w[NTHREAD];
	unsigned i;

	for (i = 0; i < NTHREAD; i++) {
		w[i].a = a;
		w[i].id = i;
		w[i].many_hosts = many_hosts;
		w[i].bad = 0;
		assert_int_equal(
		    pthread_create(&w[i].t, NULL, writer_run, &w[i]), 0);
	}
	for (i = 0; i < NTHREAD; i++) {
		assert_int_equal(pthread_join(w[i].t, NULL), 0);
		assert_int_equal(w[i].bad, 0);
	}
}

struct tally {
	json_int_t allowed, denied, ends, up;
};

/* Adds up what the lines of F stand for. */
static void
tally_lines(const struct fixture *f, struct tally *t)
{
	const json_t *o;
	size_t k;

	memset(t, 0, sizeof(*t));
	for (k = 0; k < f->nlines; k++) {
		o = f->lines[k];
		if (json_object_get(o, "bytes_up") != NULL)
			t->up += int_field(o, "bytes_up");
		if (strcmp(str_field(o, "event"), "end") == 0)
			t->ends++;
		else if (strcmp(str_field(o, "decision"), "allow") == 0)
			t->allowed += count_of(o);
		else
			t->denied += count_of(o);
	}
}

/* The sum of I over the odd I below NPERTHREAD, times NTHREAD. */
static json_int_t
bytes_written(void)
{
	json_int_t i, up = 0;

	for (i = 1; i < NPERTHREAD; i += 2)
		up += i * NTHREAD;
	return up;
}

/*
 * Thousands of records from several threads at once: every line whole,
 * every record there once (the denials folded, with exact counts).
 */
static void
test_threads(void **state)
{
	struct fixture *f = *state;
	struct audit *a = open_log(f, "run-t");
	unsigned char *seen = calloc(NTHREAD * 100000, 1);
	struct tally t;
	json_int_t conn;
	size_t k;

	assert_non_null(seen);
	run_writers(a, 0);
	audit_close(a);
	load_log(f);
	tally_lines(f, &t);
	assert_int_equal(t.ends, NTHREAD * NPERTHREAD / 2);
	assert_int_equal(t.denied, NTHREAD * NPERTHREAD / 10);
	assert_int_equal(t.allowed, NTHREAD * NPERTHREAD * 2 / 5);
	assert_int_equal(t.up, bytes_written());
	for (k = 0; k < f->nlines; k++) {
		if (json_object_get(f->lines[k], "count") != NULL)
			continue; /* a fold: its conn is the last one */
		conn = int_field(f->lines[k], "conn");
		assert_true(conn >= 0 && conn < NTHREAD * 100000);
		assert_int_equal(seen[conn]++, 0);
	}
	free(seen);
}

/* Past the limit from several threads: the summaries add up exactly. */
static void
test_threads_limit(void **state)
{
	struct fixture *f = *state;
	struct audit *a = open_log(f, "run-tl");
	struct stat st;
	struct tally t;

	audit_set_limit(a, 256 * 1024);
	run_writers(a, 1);
	assert_true(audit_over_limit(a));
	assert_int_equal(stat(f->log, &st), 0);
	assert_true(st.st_size <= 256 * 1024);
	audit_close(a);
	load_log(f);
	tally_lines(f, &t);
	assert_int_equal(t.denied, NTHREAD * NPERTHREAD / 10);
	assert_int_equal(t.allowed, NTHREAD * NPERTHREAD * 2 / 5);
	assert_int_equal(t.up, bytes_written());
}

#define T(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_full_record),
	    T(test_secret_both_records),
	    T(test_key_order),
	    T(test_absent_fields),
	    T(test_numbers),
	    T(test_path_query),
	    T(test_invalid_utf8),
	    T(test_all_bytes),
	    T(test_huge_path),
	    T(test_huge_everything),
	    T(test_fits_uncut),
	    T(test_concurrent),
	    T(test_stderr),
	    T(test_open_failures),
	    T(test_open_unwritable),
	    T(test_mode_and_append),
	    T(test_cloexec),
	    T(test_write_failure),
	    T(test_fold),
	    T(test_fold_allow),
	    T(test_limit),
	    T(test_partial_line),
	    T(test_parse_size),
	    T(test_close_null),
	    T(test_client_fields),
	    T(test_copy),
	    T(test_copy_refused),
	    T(test_copy_fails),
	    T(test_copy_limit),
	    T(test_same_as_jansson),
	    T(test_escape_same),
	    T(test_threads),
	    T(test_threads_limit),
	};

	return cmocka_run_group_tests_name("audit", tests, NULL, NULL);
}
