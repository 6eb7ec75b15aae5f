/*
 * parse.c: lexer and parser of the policy language (pinhole.conf(5)).
 *
 * Hand-written rather than yacc: the grammar is a list of statements of
 * words, and a hand lexer gives exact columns.  As relayd's parse.y, every
 * error is recorded and parsing goes on with the next statement, so one
 * run reports them all.  Includes use a stack of files, each with its own
 * line numbers; a file on the stack may not be included again (cycle).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define POLICY_INTERNAL
#include "common/ph_err.h"
#include "common/xmalloc.h"
#include "check.h"
#include "grant.h"
#include "match.h"
#include "parse.h"
#include "policy.h"

#define INCLUDE_DEPTH 16
#define EXCERPT_MAX 40 /* bytes of a file's word quoted in a diagnostic */
#define FILE_MAX (64 * 1024 * 1024)
#define DURATION_MAX_MS (24U * 3600 * 1000)

enum tok_kind {
	TOK_WORD,
	TOK_LBRACE,
	TOK_RBRACE,
	TOK_EOL, /* newline or ';' */
	TOK_EOF,
};

struct token {
	enum tok_kind kind;
	char *text; /* TOK_WORD only */
	unsigned line, col;
};

struct lexer {
	const char *buf;
	size_t len, pos;
	unsigned line, col;
};

struct file_id {
	dev_t dev;
	ino_t ino;
	const char *name;
};

struct parse_state {
	struct policy *p;
	struct file_id stack[INCLUDE_DEPTH];
	size_t depth;
	struct file_id *seen;
	size_t nseen;
	const char *file; /* current file, interned */
	int withhold; /* current file: quote none of its text */
	struct lexer lx;
};

/* A statement: its words, and whether a '{' block follows. */
struct stmt {
	struct token *w;
	size_t n, cap;
	struct token end; /* the token that ended it */
};

typedef void directive_fn(struct parse_state *, struct stmt *);

const char *const parse_keywords[] = {
    "allow",
    "broker",
    "ca",
    "deny",
    "include",
    "log",
    "resolve",
    "secret",
    "timeout",
    "trust",
};
const size_t parse_nkeywords =
    sizeof(parse_keywords) / sizeof(parse_keywords[0]);

const char *const parse_options[] = {
    "inject",
    "methods",
    "paths",
    "placeholder",
    "private",
    "upgrade",
    "upstream-ca",
};
const size_t parse_noptions = sizeof(parse_options) / sizeof(parse_options[0]);

static void
parse_at(struct parse_state *, const char *path, const struct token *from);

static void err(struct parse_state *st, const struct token *t, const char *fmt,
    ...) __attribute__((format(printf, 3, 4)));
static void warn(struct parse_state *st, const struct token *t, const char *fmt,
    ...) __attribute__((format(printf, 3, 4)));

static void vdiag(struct parse_state *, int, const struct token *, const char *,
    va_list) __attribute__((format(printf, 4, 0)));

/*
 * An excerpt of word W fit to quote: at most EXCERPT_MAX bytes, each byte
 * outside printable ASCII as \xNN, "..." when cut.
 */
static void
excerpt(const char *w, char *out, size_t sz)
{
	size_t i, o = 0;
	unsigned char c;

	for (i = 0; w[i] != '\0' && i < EXCERPT_MAX && o + 5 < sz; i++) {
		c = (unsigned char)w[i];
		if (c >= ' ' && c < 0x7f)
			out[o++] = c;
		else
			o += snprintf(out + o, sz - o, "\\x%02x", c);
	}
	if (w[i] != '\0' && o + 4 <= sz)
		o += snprintf(out + o, sz - o, "...");
	out[o] = '\0';
}

/* The next place in MSG where WORD starts (K bytes of it at least). */
static const char *
find_word(const char *msg, const char *word, size_t k)
{
	for (; *msg != '\0'; msg++)
		if (strncmp(msg, word, k) == 0)
			return msg;
	return NULL;
}

/*
 * Writes MSG into OUT with every copy of WORD as its excerpt, a copy cut
 * short (a message built in a fixed buffer) too: whatever follows its
 * first EXCERPT_MAX + 1 bytes, as far as it matches WORD, goes.
 */
static void
quote_word(const char *msg, const char *word, char *out, size_t sz)
{
	char ex[4 * EXCERPT_MAX + 8];
	const char *hit;
	size_t o = 0, n = strlen(word), k = n, m;

	if (k > EXCERPT_MAX + 1)
		k = EXCERPT_MAX + 1;
	excerpt(word, ex, sizeof(ex));
	while (k > 0 && o < sz && (hit = find_word(msg, word, k)) != NULL) {
		for (m = k; m < n && hit[m] == word[m]; m++)
			;
		o += snprintf(
		    out + o, sz - o, "%.*s%s", (int)(hit - msg), msg, ex);
		msg = hit + m;
	}
	if (o < sz)
		snprintf(out + o, sz - o, "%s", msg);
}

/* The whole message, however long the words in it. */
static char *
format_all(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

static char *
format_all(const char *fmt, va_list ap)
{
	va_list again;
	char *msg;
	int n;

	va_copy(again, ap);
	n = vsnprintf(NULL, 0, fmt, again);
	va_end(again);
	msg = xmalloc(n > 0 ? (size_t)n + 1 : 1);
	if (n <= 0 || vsnprintf(msg, (size_t)n + 1, fmt, ap) < 0)
		msg[0] = '\0';
	return msg;
}

/*
 * Every diagnostic quotes at most an excerpt of the word it is about, and
 * no byte that is not printable ASCII: an include of a file that is no
 * policy (include /etc/shadow) must not print it.  From an included file
 * other users cannot read, nothing of its text is quoted at all.
 */
static void
vdiag(struct parse_state *st, int warning, const struct token *t,
    const char *fmt, va_list ap)
{
	char msg[512], quoted[1024], *all;
	size_t i, o = 0;

	if (st->withhold) {
		policy_diag_add(st->p, warning, st->file, t->line, t->col,
		    "%s here; its text is not quoted, since other users "
		    "cannot read this file (pinhole check FILE shows it)",
		    warning ? "a warning" : "not valid policy");
		return;
	}
	all = format_all(fmt, ap);
	if (t->text != NULL)
		quote_word(all, t->text, quoted, sizeof(quoted));
	else
		snprintf(quoted, sizeof(quoted), "%s", all);
	free(all);
	for (i = 0; quoted[i] != '\0' && o + 5 < sizeof(msg); i++) {
		if ((unsigned char)quoted[i] >= ' ' &&
		    (unsigned char)quoted[i] < 0x7f)
			msg[o++] = quoted[i];
		else
			o += snprintf(msg + o, sizeof(msg) - o, "\\x%02x",
			    (unsigned char)quoted[i]);
	}
	msg[o] = '\0';
	policy_diag_add(st->p, warning, st->file, t->line, t->col, "%s", msg);
}

static void
err(struct parse_state *st, const struct token *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vdiag(st, 0, t, fmt, ap);
	va_end(ap);
}

static void
warn(struct parse_state *st, const struct token *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vdiag(st, 1, t, fmt, ap);
	va_end(ap);
}

unsigned
parse_distance(const char *a, const char *b)
{
	unsigned row[33], prev, tmp, i, j, la = strlen(a), lb = strlen(b);

	if (la > 32 || lb > 32)
		return 3;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			tmp = row[j];
			row[j] = prev + (a[i - 1] != b[j - 1]);
			if (row[j - 1] + 1 < row[j])
				row[j] = row[j - 1] + 1;
			if (tmp + 1 < row[j])
				row[j] = tmp + 1;
			prev = tmp;
		}
	}
	return row[lb] < 3 ? row[lb] : 3;
}

static const char *
closest(const char *word, const char *const *list, size_t n)
{
	const char *best = NULL;
	unsigned d, bestd = 3;
	size_t i;

	for (i = 0; i < n; i++)
		if ((d = parse_distance(word, list[i])) < bestd) {
			bestd = d;
			best = list[i];
		}
	return best;
}

static int
cmp_word(const void *key, const void *elem)
{
	return strcmp(key, *(const char *const *)elem);
}

static int
lookup(const char *word, const char *const *list, size_t n)
{
	const char *const *hit =
	    bsearch(word, list, n, sizeof(*list), cmp_word);

	return hit != NULL ? (int)(hit - list) : -1;
}

/* --- lexer -------------------------------------------------------------- */

static int
lx_peek(const struct lexer *lx, size_t off)
{
	return lx->pos + off < lx->len ? (unsigned char)lx->buf[lx->pos + off]
	                               : -1;
}

static void
lx_advance(struct lexer *lx)
{
	if (lx->buf[lx->pos++] == '\n') {
		lx->line++;
		lx->col = 1;
	} else
		lx->col++;
}

/* Skips blanks, comments and escaped newlines. */
static void
lx_skip(struct parse_state *st)
{
	struct lexer *lx = &st->lx;
	int c;

	while ((c = lx_peek(lx, 0)) != -1) {
		if (c == ' ' || c == '\t' || c == '\r' || c == '\f' ||
		    c == '\v')
			lx_advance(lx);
		else if (c == '\\' && lx_peek(lx, 1) == '\n') {
			lx_advance(lx);
			lx_advance(lx);
		} else if (c == '\\' && lx_peek(lx, 1) == '\r' &&
		    lx_peek(lx, 2) == '\n') {
			lx_advance(lx);
			lx_advance(lx);
			lx_advance(lx);
		} else if (c == '#') {
			while ((c = lx_peek(lx, 0)) != -1 && c != '\n')
				lx_advance(lx);
		} else
			break;
	}
}

/* '#' outside quotes always starts a comment, even right after a word. */
static int
word_byte(int c)
{
	return c > ' ' && c != 0x7f && c != '{' && c != '}' && c != ';' &&
	    c != '"' && c != '#';
}

/* Bytes up to the end of the line: a bound for one quoted word. */
static size_t
line_rest(const struct lexer *lx)
{
	const char *nl = memchr(lx->buf + lx->pos, '\n', lx->len - lx->pos);

	return nl != NULL ? (size_t)(nl - lx->buf) - lx->pos
	                  : lx->len - lx->pos;
}

static void
lx_quoted(struct parse_state *st, struct token *t)
{
	struct lexer *lx = &st->lx;
	char *out = xmalloc(line_rest(lx) + 1);
	size_t n = 0;
	int c;

	lx_advance(lx); /* opening quote */
	while ((c = lx_peek(lx, 0)) != '"') {
		if (c == -1 || c == '\n') {
			err(st, t, "unterminated quoted string");
			break;
		}
		if (c == '\\' &&
		    (lx_peek(lx, 1) == '"' || lx_peek(lx, 1) == '\\')) {
			lx_advance(lx);
			c = lx_peek(lx, 0);
		} else if (c < ' ' && c != '\t') {
			err(st, t, "control character in quoted string");
		}
		out[n++] = c;
		lx_advance(lx);
	}
	if (c == '"')
		lx_advance(lx);
	out[n] = '\0';
	t->text = out;
}

static void
lx_next(struct parse_state *st, struct token *t)
{
	struct lexer *lx = &st->lx;
	size_t start;
	int c;

	/* A stray control byte is reported and skipped like a blank. */
	for (;;) {
		lx_skip(st);
		t->line = lx->line;
		t->col = lx->col;
		t->text = NULL;
		c = lx_peek(lx, 0);
		if (c == -1 || c == '\n' || c == '"' || word_byte(c) ||
		    c == '{' || c == '}' || c == ';')
			break;
		err(st, t, "unexpected control byte 0x%02x", c);
		lx_advance(lx);
	}
	t->kind = c == -1           ? TOK_EOF
	    : c == '\n' || c == ';' ? TOK_EOL
	    : c == '{'              ? TOK_LBRACE
	    : c == '}'              ? TOK_RBRACE
	                            : TOK_WORD;
	if (t->kind == TOK_EOF)
		return;
	if (t->kind != TOK_WORD) {
		lx_advance(lx);
		return;
	}
	if (c == '"') {
		lx_quoted(st, t);
		return;
	}
	/* A '\' that ends the line continues it, even right after a word. */
	for (start = lx->pos; (c = lx_peek(lx, 0)) != -1 && word_byte(c) &&
	     !(c == '\\' &&
	         (lx_peek(lx, 1) == '\n' ||
	             (lx_peek(lx, 1) == '\r' && lx_peek(lx, 2) == '\n')));)
		lx_advance(lx);
	t->text = xstrndup(lx->buf + start, lx->pos - start);
}

/* --- statements --------------------------------------------------------- */

static void
stmt_clear(struct stmt *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->w[i].text);
	s->n = 0;
}

/* Reads words up to the end of a statement: EOL, EOF, '{' or '}'. */
static void
stmt_read(struct parse_state *st, struct stmt *s)
{
	struct token t;

	stmt_clear(s);
	for (;;) {
		lx_next(st, &t);
		if (t.kind != TOK_WORD)
			break;
		if (s->n == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 8;
			s->w = xreallocarray(s->w, s->cap, sizeof(*s->w));
		}
		s->w[s->n++] = t;
	}
	s->end = t;
}

static int
nargs(struct parse_state *st, struct stmt *s, size_t min, size_t max,
    const char *usage)
{
	if (s->n - 1 < min || s->n - 1 > max) {
		err(st, &s->w[0], "usage: %s", usage);
		return -1;
	}
	return 0;
}

/* Makes PATH relative to the directory of the current file. */
static char *
rel_path(const struct parse_state *st, const char *path)
{
	const char *slash = strrchr(st->file, '/');

	if (path[0] == '/' || slash == NULL)
		return xstrdup(path);
	return xasprintf("%.*s/%s", (int)(slash - st->file), st->file, path);
}

/* --- targets ------------------------------------------------------------ */

static int
set_ports(struct rule_target *t, const struct port_range *r, size_t n)
{
	t->ports = xreallocarray(NULL, n, sizeof(*t->ports));
	memcpy(t->ports, r, n * sizeof(*r));
	t->nports = n;
	return 0;
}

static int
cmp_range(const void *a, const void *b)
{
	const struct port_range *x = a, *y = b;

	return (int)x->lo - (int)y->lo;
}

/* Parses "N", "N-M" lists and "*"; sorts and merges the ranges. */
static int
parse_ports(const char *s, struct rule_target *t, char *why, size_t wl)
{
	struct port_range r[64];
	const char *item = s, *dash, *comma;
	size_t n = 0, i, m, len;

	if (strcmp(s, "*") == 0) {
		r[0].lo = 1;
		r[0].hi = 65535;
		return set_ports(t, r, 1);
	}
	for (; n < 64; item = comma + 1) {
		comma = strchr(item, ',');
		len = comma ? (size_t)(comma - item) : strlen(item);
		dash = memchr(item, '-', len);
		if (target_port_parse(item, dash ? (size_t)(dash - item) : len,
		        &r[n].lo) != 0 ||
		    (dash != NULL &&
		        target_port_parse(dash + 1, len - (dash - item) - 1,
		            &r[n].hi) != 0)) {
			snprintf(why, wl,
			    "bad port '%.*s': ports are 1-65535, "
			    "as N, N-M or a list N,M",
			    (int)len, item);
			return -1;
		}
		if (dash == NULL)
			r[n].hi = r[n].lo;
		if (r[n].hi < r[n].lo) {
			snprintf(why, wl,
			    "bad port range '%.*s': the first "
			    "port must not be above the second",
			    (int)len, item);
			return -1;
		}
		n++;
		if (comma == NULL)
			break;
	}
	if (n == 64) {
		snprintf(why, wl, "too many port items (at most 63)");
		return -1;
	}
	qsort(r, n, sizeof(*r), cmp_range);
	for (i = 1, m = 0; i < n; i++) {
		if ((unsigned)r[i].lo <= (unsigned)r[m].hi + 1) {
			if (r[i].hi > r[m].hi)
				r[m].hi = r[i].hi;
		} else
			r[++m] = r[i];
	}
	return set_ports(t, r, m + 1);
}

/* Parses ADDR[/LEN] into an address block. */
static int
parse_cidr(const char *s, struct rule_target *t, char *why, size_t wl)
{
	struct target_cidr c;
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	char buf[64];

	switch (target_cidr_parse(s, strlen(s), &c)) {
	case TARGET_CIDR_ADDR:
		snprintf(why, wl, "bad address '%.*s'", (int)alen, s);
		return -1;
	case TARGET_CIDR_PLEN:
		snprintf(why, wl, "bad prefix length '/%s' (0-%u)", slash + 1,
		    c.maxlen);
		return -1;
	case TARGET_CIDR_MAPPED:
		snprintf(why, wl,
		    "an IPv4-mapped block needs a prefix "
		    "of at least /96");
		return -1;
	case TARGET_CIDR_OK:
		break;
	}
	if (c.host_bits) {
		inet_ntop(c.family == 4 ? AF_INET : AF_INET6, c.addr, buf,
		    sizeof(buf));
		snprintf(why, wl,
		    "'%s' has host bits set; did you mean '%s/%u'?", s, buf,
		    c.plen);
		return -1;
	}
	t->kind = RT_CIDR;
	t->family = c.family;
	memcpy(t->addr, c.addr, sizeof(t->addr));
	t->plen = c.plen;
	return 0;
}

static int
parse_hostpart(const char *s, struct rule_target *t, char *why, size_t wl)
{
	struct target_host h;
	int r;

	if (strcmp(s, "*") == 0) {
		t->kind = RT_ANY;
		return 0;
	}
	if (strchr(s, '/') != NULL)
		return parse_cidr(s, t, why, wl);
	t->kind = RT_EXACT;
	if (strncmp(s, "*.", 2) == 0) {
		t->kind = RT_WILD;
		s += 2;
	}
	if (strchr(s, '*') != NULL) {
		snprintf(why, wl,
		    "a wildcard may only be the whole first "
		    "label, as in '*.example.com'");
		return -1;
	}
	if ((r = target_host_parse(s, strlen(s), &h)) != 0) {
		snprintf(why, wl, "bad host '%s': %s", s, target_strerror(r));
		return -1;
	}
	if (h.kind != TARGET_NAME) {
		if (t->kind == RT_WILD) {
			snprintf(why, wl, "'*.' needs a name, not an address");
			return -1;
		}
		return parse_cidr(s, t, why, wl);
	}
	t->host = xstrdup(h.name);
	return 0;
}

/*
 * Parses a rule target: "*", "host", "*.suffix", "addr", "addr/len",
 * "[v6]", "[v6]/len", "[v6/len]", each with an optional ":ports".
 */
static int
parse_target(
    const char *s, int deny, struct rule_target *t, char *why, size_t wl)
{
	char *host, *ports = NULL, *close;
	int r = -1;

	host = xstrdup(s);
	if (host[0] == '[') {
		if ((close = strchr(host, ']')) == NULL) {
			snprintf(why, wl, "missing ']' in '%s'", s);
			goto out;
		}
		/*
		 * Drop both brackets so that "[v6]/len" reads as "v6/len";
		 * what followed ']' then starts at close - 1.
		 */
		memmove(close, close + 1, strlen(close));
		memmove(host, host + 1, strlen(host));
		ports = strchr(close - 1, ':');
	} else if ((ports = strchr(host, ':')) != NULL &&
	    strchr(ports + 1, ':') != NULL) {
		ports = NULL; /* bare IPv6: no ports */
	}
	if (ports != NULL)
		*ports++ = '\0';
	if (parse_hostpart(host, t, why, wl) != 0)
		goto out;
	if (ports != NULL)
		r = parse_ports(ports, t, why, wl);
	else if (deny)
		r = parse_ports("*", t, why, wl);
	else
		r = parse_ports("80,443", t, why, wl);
out:
	free(host);
	if (r != 0) {
		free(t->host);
		t->host = NULL;
	}
	return r;
}

/* --- directives --------------------------------------------------------- */

static int
valid_name(const char *s, const char *extra)
{
	if (*s == '\0')
		return 0;
	for (; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		        (*s >= '0' && *s <= '9') || strchr(extra, *s) != NULL))
			return 0;
	return 1;
}

static int
valid_env(const char *s)
{
	return valid_name(s, "_") && !(*s >= '0' && *s <= '9');
}

/* RFC 9110 token: header names and methods. */
static int
valid_token(const char *s)
{
	return valid_name(s, "!#$%&'*+-.^_`|~");
}

static void
d_log(struct parse_state *st, struct stmt *s)
{
	char *path;

	if (nargs(st, s, 1, 1, "log PATH | stderr") != 0)
		return;
	path = strcmp(s->w[1].text, "stderr") == 0 ? xstrdup("stderr")
	                                           : rel_path(st, s->w[1].text);
	policy_set_log(st->p, path, st->file, s->w[0].line, s->w[0].col);
	free(path);
}

/* ca cert PATH key PATH: a CA of the user's instead of the run CA. */
static void
d_ca(struct parse_state *st, struct stmt *s)
{
	const char *usage = "ca cert PATH key PATH";
	char *cert, *key;
	size_t c;

	if (nargs(st, s, 4, 4, usage) != 0)
		return;
	c = strcmp(s->w[1].text, "cert") == 0 ? 1 : 3;
	if (strcmp(s->w[c].text, "cert") != 0 ||
	    strcmp(s->w[c == 1 ? 3 : 1].text, "key") != 0) {
		err(st, &s->w[1], "usage: %s", usage);
		return;
	}
	cert = rel_path(st, s->w[c + 1].text);
	key = rel_path(st, s->w[(c == 1 ? 3 : 1) + 1].text);
	policy_set_ca(st->p, cert, key, st->file, s->w[0].line, s->w[0].col);
	free(cert);
	free(key);
}

/* trust PATH: certificates the sandbox trusts, for every host. */
static void
d_trust(struct parse_state *st, struct stmt *s)
{
	char *path;

	if (nargs(st, s, 1, 1, "trust PATH") != 0)
		return;
	path = rel_path(st, s->w[1].text);
	policy_trust_add(st->p, path, st->file, s->w[0].line, s->w[0].col);
	free(path);
}

static void
d_resolve(struct parse_state *st, struct stmt *s)
{
	struct target_host host, addrs[16];
	size_t i;

	if (nargs(st, s, 2, 17,
	        "resolve HOST ADDRESS [ADDRESS...] (at most "
	        "16 addresses)") != 0)
		return;
	if (target_host_parse(s->w[1].text, strlen(s->w[1].text), &host) != 0 ||
	    host.kind != TARGET_NAME) {
		err(st, &s->w[1], "resolve: '%s' is not a host name",
		    s->w[1].text);
		return;
	}
	for (i = 2; i < s->n; i++)
		if (target_host_parse(s->w[i].text, strlen(s->w[i].text),
		        &addrs[i - 2]) != 0 ||
		    addrs[i - 2].kind == TARGET_NAME) {
			err(st, &s->w[i],
			    "resolve: '%s' is not an IPv4 or "
			    "IPv6 address",
			    s->w[i].text);
			return;
		}
	if (policy_resolve_add(st->p, host.name, addrs, s->n - 2) != 0)
		err(st, &s->w[1], "resolve: %s already has addresses",
		    host.name);
}

/*
 * "exec env A,B CMD...": splits the list into NAMES (pointers into *COPY,
 * which the caller frees).  Returns the count, or -1 after an error.
 */
static int
exec_env_list(struct parse_state *st, const struct token *t, char **copy,
    const char **names)
{
	char *p, *name;
	int n = 0;

	p = *copy = xstrdup(t->text);
	while ((name = strsep(&p, ",")) != NULL) {
		if (!valid_env(name)) {
			err(st, t,
			    "exec env: bad environment variable name "
			    "'%s' (use VAR[,VAR...])",
			    name);
			return -1;
		}
		if (n == SECRET_EXEC_ENV_MAX) {
			err(st, t, "exec env: more than %d variables",
			    SECRET_EXEC_ENV_MAX);
			return -1;
		}
		names[n++] = name;
	}
	return n;
}

static void
d_secret(struct parse_state *st, struct stmt *s)
{
	static const char *const sources[] = {"env", "exec", "file"};
	const char *argv[64], *prev_file = NULL;
	const char *envs[SECRET_EXEC_ENV_MAX];
	enum secret_source src;
	char *path = NULL, *envcopy = NULL;
	unsigned prev_line = 0;
	size_t i, argc, first = 3;
	const char *hint;
	int nenv = 0;

	if (s->n < 4 || s->n > 3 + 64) {
		err(st, &s->w[0],
		    "usage: secret NAME file PATH | env VAR | "
		    "exec COMMAND [ARG...]");
		return;
	}
	if (!valid_name(s->w[1].text, "-_.")) {
		err(st, &s->w[1],
		    "bad secret name '%s' (letters, digits, "
		    "'-', '_', '.')",
		    s->w[1].text);
		return;
	}
	switch (lookup(s->w[2].text, sources, 3)) {
	case 0:
		src = SECRET_ENV;
		break;
	case 1:
		src = SECRET_EXEC;
		break;
	case 2:
		src = SECRET_FILE;
		break;
	default:
		hint = closest(s->w[2].text, sources, 3);
		err(st, &s->w[2],
		    "unknown secret source '%s'%s%s%s; use file, "
		    "env or exec",
		    s->w[2].text, hint ? " (did you mean '" : "",
		    hint ? hint : "", hint ? "'?)" : "");
		return;
	}
	/* "exec env" is the option; env(1) itself is /usr/bin/env. */
	if (src == SECRET_EXEC && strcmp(s->w[3].text, "env") == 0) {
		if (s->n < 6) {
			err(st, &s->w[3],
			    "usage: secret NAME exec env VAR[,VAR...] COMMAND "
			    "[ARG...] (to run env(1), write /usr/bin/env)");
			return;
		}
		if ((nenv = exec_env_list(st, &s->w[4], &envcopy, envs)) < 0)
			goto out;
		first = 5;
	}
	argc = s->n - first;
	if (src != SECRET_EXEC && argc != 1) {
		err(st, &s->w[4], "secret %s: %s takes one word", s->w[1].text,
		    s->w[2].text);
		return;
	}
	if (src == SECRET_ENV && !valid_env(s->w[3].text)) {
		err(st, &s->w[3], "bad environment variable name '%s'",
		    s->w[3].text);
		return;
	}
	for (i = 0; i < argc; i++)
		argv[i] = s->w[first + i].text;
	if (src == SECRET_FILE)
		argv[0] = path = rel_path(st, s->w[3].text);
	if (policy_secret_define(st->p, s->w[1].text, src, argv, argc, st->file,
	        s->w[1].line, s->w[1].col, &prev_file, &prev_line) != 0)
		err(st, &s->w[1], "secret '%s' is already defined at %s:%u",
		    s->w[1].text, prev_file ? prev_file : "?", prev_line);
	else if (nenv > 0 &&
	    secret_set_exec_env(
	        secret_store_find(policy_secrets(st->p), s->w[1].text), envs,
	        (size_t)nenv) != 0)
		err(st, &s->w[4], "exec env: invalid variable list");
	free(path);
out:
	free(envcopy);
}

static int
parse_duration(const char *s, unsigned *ms)
{
	unsigned long long v = 0, mult = 1000;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9' && v <= DURATION_MAX_MS; p++)
		v = v * 10 + (unsigned)(*p - '0');
	if (strcmp(p, "ms") == 0)
		mult = 1;
	else if (strcmp(p, "m") == 0)
		mult = 60 * 1000;
	else if (strcmp(p, "h") == 0)
		mult = 3600 * 1000;
	else if (*p != '\0' && strcmp(p, "s") != 0)
		return -1;
	v *= mult;
	if (v == 0 || v > DURATION_MAX_MS)
		return -1;
	*ms = v;
	return 0;
}

static void
d_timeout(struct parse_state *st, struct stmt *s)
{
	static const char *const kinds[] = {"connect", "head", "idle"};
	static const enum policy_timeout which[] = {
	    POLICY_TIMEOUT_CONNECT, POLICY_TIMEOUT_HEAD, POLICY_TIMEOUT_IDLE};
	unsigned ms;
	int k;

	if (nargs(st, s, 2, 2, "timeout connect|head|idle DURATION") != 0)
		return;
	if ((k = lookup(s->w[1].text, kinds, 3)) < 0) {
		err(st, &s->w[1],
		    "unknown timeout '%s'; use connect, head or "
		    "idle",
		    s->w[1].text);
		return;
	}
	if (parse_duration(s->w[2].text, &ms) != 0) {
		err(st, &s->w[2],
		    "bad duration '%s': a number with ms, s, m "
		    "or h, from 1ms to 24h",
		    s->w[2].text);
		return;
	}
	policy_set_timeout(st->p, which[k], ms);
}

static int
has_glob_magic(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

static void
d_include(struct parse_state *st, struct stmt *s)
{
	glob_t g;
	char *pat;
	size_t i, j;
	int r;

	if (nargs(st, s, 1, 64, "include PATTERN [PATTERN...]") != 0)
		return;
	for (i = 1; i < s->n; i++) {
		pat = rel_path(st, s->w[i].text);
		r = glob(pat, 0, NULL, &g);
		if (r == GLOB_NOMATCH && !has_glob_magic(s->w[i].text))
			err(st, &s->w[i], "include: cannot open %s: %s", pat,
			    strerror(ENOENT));
		else if (r != 0 && r != GLOB_NOMATCH)
			err(st, &s->w[i], "include: cannot read %s", pat);
		for (j = 0; r == 0 && j < g.gl_pathc; j++)
			parse_at(st, g.gl_pathv[j], &s->w[i]);
		if (r == 0)
			globfree(&g);
		free(pat);
	}
}

/* --- rules -------------------------------------------------------------- */

static void
push_str(char ***list, size_t *n, const char *s)
{
	*list = xreallocarray(*list, *n + 1, sizeof(**list));
	(*list)[(*n)++] = xstrdup(s);
}

/*
 * Would PAT survive path normalisation unchanged?  Requests are compared
 * after it, so a pattern with "//", "." or ".." segments never matches.
 * Blanks and non-ASCII bytes (a request's %20 or %C3%A9 decodes to them)
 * are stood in for by 'x', which normalises alike.  Writes the normal form
 * to NORM.  Returns 1 or 0, or the PH_ERR_* code of a pattern no request
 * can have ("..;", overlong UTF-8: refused in requests, so in rules too).
 */
static int
pattern_normal(const char *pat, char *norm, size_t sz)
{
	char copy[4096];
	size_t i, len = strlen(pat);
	int r;

	if (len >= sizeof(copy))
		return PH_ERR_TOO_LONG;
	/* A request's bytes decode to shortest-form UTF-8 or are refused. */
	if (!target_utf8_valid(pat, len))
		return PH_ERR_BAD_UTF8;
	for (i = 0; i <= len; i++)
		copy[i] = pat[i] == ' ' || (unsigned char)pat[i] >= 0x80
		    ? 'x'
		    : pat[i];
	if ((r = target_path_normalise(copy, len, norm, sz)) != 0)
		return r;
	return strcmp(norm, copy) == 0;
}

/* Counts the bytes pattern_normal() stood in for: its hint would show them. */
static size_t
stood_in(const char *w)
{
	size_t n = 0;

	for (; *w != '\0'; w++)
		n += *w == ' ' || (unsigned char)*w >= 0x80;
	return n;
}

static int
bad_pattern_byte(const char *w)
{
	for (; *w != '\0'; w++)
		if ((unsigned char)*w < ' ' || *w == 0x7f ||
		    strchr("%?#\\", *w) != NULL)
			return 1;
	return 0;
}

static void
o_paths(struct parse_state *st, struct policy_rule *r, struct stmt *s)
{
	char norm[4096];
	const char *w;
	size_t i;
	int same;

	if (nargs(st, s, 1, SIZE_MAX, "paths PATTERN [PATTERN...]") != 0)
		return;
	for (i = 1; i < s->n; i++) {
		w = s->w[i].text;
		if (w[0] != '/' || bad_pattern_byte(w)) {
			err(st, &s->w[i],
			    "bad path pattern '%s': it starts with "
			    "'/' and has no '%%', '?', '#', '\\' or control "
			    "character (paths are matched decoded, without the "
			    "query)",
			    w);
			continue;
		}
		if ((same = pattern_normal(w, norm, sizeof(norm))) < 0)
			err(st, &s->w[i], "bad path pattern '%s': %s", w,
			    target_strerror(same));
		else if (!same && stood_in(w) == 0)
			warn(st, &s->w[i],
			    "path pattern '%s' can never match: "
			    "requests are matched after resolving '.', '..' "
			    "and "
			    "'//'; write '%s'",
			    w, norm);
		else if (!same)
			warn(st, &s->w[i],
			    "path pattern '%s' can never match: "
			    "requests are matched after resolving '.', '..' "
			    "and "
			    "'//'",
			    w);
		push_str(&r->paths, &r->npaths, w);
	}
}

static void
o_methods(struct parse_state *st, struct policy_rule *r, struct stmt *s)
{
	char up[32];
	const char *w;
	size_t i, j;

	if (nargs(st, s, 1, SIZE_MAX, "methods METHOD [METHOD...]") != 0)
		return;
	for (i = 1; i < s->n; i++) {
		w = s->w[i].text;
		if (!valid_token(w) || strlen(w) >= sizeof(up)) {
			err(st, &s->w[i], "bad method '%s'", w);
			continue;
		}
		for (j = 0; w[j] != '\0'; j++)
			up[j] = w[j] >= 'a' && w[j] <= 'z' ? w[j] - 32 : w[j];
		up[j] = '\0';
		if (strcmp(up, w) != 0)
			warn(st, &s->w[i],
			    "methods are case-sensitive; did you "
			    "mean '%s'?",
			    up);
		push_str(&r->methods, &r->nmethods, w);
	}
}

static int
deny_refuses(struct parse_state *st, struct policy_rule *r, struct stmt *s)
{
	if (!r->deny)
		return 0;
	err(st, &s->w[0],
	    "'%s' cannot be used in a deny rule (only paths and "
	    "methods)",
	    s->w[0].text);
	return 1;
}

static void
o_private(struct parse_state *st, struct policy_rule *r, struct stmt *s)
{
	if (deny_refuses(st, r, s) || nargs(st, s, 0, 0, "private") != 0)
		return;
	r->private_ok = 1;
}

/*
 * "upgrade PROTO...": the protocols (Upgrade field names, e.g. websocket)
 * a rule with paths or methods lets the request switch to.  Nothing is
 * policed after the switch, so it is never implied.
 */
static void
o_upgrade(struct parse_state *st, struct policy_rule *r, struct stmt *s)
{
	const char *w;
	size_t i;

	if (deny_refuses(st, r, s) ||
	    nargs(st, s, 1, SIZE_MAX, "upgrade PROTOCOL [PROTOCOL...]") != 0)
		return;
	if (r->nupgrade == 0)
		r->upgrade_col = s->w[0].col;
	for (i = 1; i < s->n; i++) {
		w = s->w[i].text;
		if (!valid_token(w) || strlen(w) > 64) {
			err(st, &s->w[i],
			    "bad upgrade protocol '%s': a name such as "
			    "websocket, without a version",
			    w);
			continue;
		}
		push_str(&r->upgrade, &r->nupgrade, w);
	}
}

static void
o_upstream_ca(struct parse_state *st, struct policy_rule *r, struct stmt *s)
{
	if (deny_refuses(st, r, s) ||
	    nargs(st, s, 1, 1, "upstream-ca PATH") != 0)
		return;
	if (r->upstream_ca != NULL) {
		err(st, &s->w[0], "upstream-ca is already set for this rule");
		return;
	}
	r->upstream_ca = rel_path(st, s->w[1].text);
	r->upstream_ca_col = s->w[0].col;
}

/* Headers that frame or route the message: a credential has no place there. */
static int
framing_header(const char *h)
{
	static const char *const hop[] = {"connection", "content-length",
	    "host", "keep-alive", "proxy-authenticate", "proxy-authorization",
	    "proxy-connection", "te", "trailer", "transfer-encoding",
	    "upgrade"};
	size_t i;

	for (i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (strcasecmp(h, hop[i]) == 0)
			return 1;
	return 0;
}

static int
inject_add(struct parse_state *st, struct policy_rule *r,
    enum policy_inject_kind kind, const char *header, const char *user,
    const struct token *secret, const struct token *at)
{
	struct policy_inject *in;
	size_t i;

	for (i = 0; i < r->ninject; i++)
		if (strcasecmp(r->inject[i].header, header) == 0) {
			err(st, at, "this rule already injects %s", header);
			return -1;
		}
	r->inject =
	    xreallocarray(r->inject, r->ninject + 1, sizeof(*r->inject));
	r->inject_loc = xreallocarray(
	    r->inject_loc, r->ninject + 1, sizeof(*r->inject_loc));
	r->inject_loc[r->ninject].line = secret->line;
	r->inject_loc[r->ninject].col = secret->col;
	in = &r->inject[r->ninject++];
	in->kind = kind;
	in->header = xstrdup(header);
	in->user = user ? xstrdup(user) : NULL;
	in->secret_name = xstrdup(secret->text);
	in->secret = NULL;
	return 0;
}

static void
o_inject(struct parse_state *st, struct policy_rule *r, struct stmt *s)
{
	static const char *const kinds[] = {"basic", "bearer", "header"};
	const char *usage = "inject basic USER SECRET | bearer SECRET | "
	                    "header NAME SECRET";
	int k;

	if (deny_refuses(st, r, s) || nargs(st, s, 2, 3, usage) != 0)
		return;
	k = lookup(s->w[1].text, kinds, 3);
	if (k < 0 || (size_t)(k == 1 ? 3 : 4) != s->n) {
		err(st, &s->w[k < 0 ? 1 : 0], "usage: %s", usage);
		return;
	}
	if (k == 0 &&
	    (strchr(s->w[2].text, ':') != NULL ||
	        !valid_name(s->w[2].text, "-_.@+~!$&'()*,=")))
		err(st, &s->w[2],
		    "bad user '%s' for basic (no ':' or "
		    "control characters)",
		    s->w[2].text);
	else if (k == 2 && !valid_token(s->w[2].text))
		err(st, &s->w[2], "bad header name '%s'", s->w[2].text);
	else if (k == 2 && framing_header(s->w[2].text))
		err(st, &s->w[2],
		    "cannot inject %s: it frames or routes the "
		    "message",
		    s->w[2].text);
	else if (k == 0)
		inject_add(st, r, POLICY_INJECT_BASIC, "Authorization",
		    s->w[2].text, &s->w[3], &s->w[0]);
	else if (k == 1)
		inject_add(st, r, POLICY_INJECT_BEARER, "Authorization", NULL,
		    &s->w[2], &s->w[0]);
	else
		inject_add(st, r, POLICY_INJECT_HEADER, s->w[2].text, NULL,
		    &s->w[3], &s->w[0]);
}

/*
 * "header NAME" pairs after "placeholder ENV SECRET": fields other than
 * Authorization where the stand-in is swapped.  Returns 0 or -1.
 */
static int
placeholder_headers(
    struct parse_state *st, struct stmt *s, struct policy_placeholder *ph)
{
	const struct token *w;
	size_t i, k;

	ph->nheaders = 0;
	for (i = 3; i + 1 < s->n; i += 2) {
		w = &s->w[i + 1];
		if (strcmp(s->w[i].text, "header") != 0) {
			err(st, &s->w[i], "expected 'header NAME', not '%s'",
			    s->w[i].text);
			return -1;
		}
		if (!valid_token(w->text) || framing_header(w->text) ||
		    strcasecmp(w->text, "authorization") == 0) {
			err(st, w,
			    "bad header '%s' for a placeholder (a field name; "
			    "not Authorization, which is always one, nor a "
			    "field that frames or routes the message)",
			    w->text);
			return -1;
		}
		for (k = 0; k < ph->nheaders; k++)
			if (strcasecmp(ph->headers[k], w->text) == 0) {
				err(st, w, "header %s is listed twice",
				    w->text);
				return -1;
			}
		ph->headers[ph->nheaders++] = w->text;
	}
	return 0;
}

static void
o_placeholder(struct parse_state *st, struct policy_rule *r, struct stmt *s)
{
	const char *usage = "placeholder ENV SECRET [header NAME]...";
	struct policy_placeholder *ph, hdr = {0};
	size_t i;

	if (deny_refuses(st, r, s) ||
	    nargs(st, s, 2, 2 + 2 * POLICY_PLACEHOLDER_HEADERS, usage) != 0)
		return;
	if (s->n % 2 != 1) {
		err(st, &s->w[0], "usage: %s", usage);
		return;
	}
	if (placeholder_headers(st, s, &hdr) != 0)
		return;
	if (!valid_env(s->w[1].text)) {
		err(st, &s->w[1], "bad environment variable name '%s'",
		    s->w[1].text);
		return;
	}
	for (i = 0; i < r->nplaceholder; i++)
		if (strcmp(r->placeholder[i].env, s->w[1].text) == 0) {
			err(st, &s->w[1],
			    "placeholder %s is already set for "
			    "this rule",
			    s->w[1].text);
			return;
		}
	r->placeholder = xreallocarray(
	    r->placeholder, r->nplaceholder + 1, sizeof(*r->placeholder));
	r->placeholder_loc = xreallocarray(r->placeholder_loc,
	    r->nplaceholder + 1, sizeof(*r->placeholder_loc));
	r->placeholder_loc[r->nplaceholder].line = s->w[2].line;
	r->placeholder_loc[r->nplaceholder].col = s->w[2].col;
	ph = &r->placeholder[r->nplaceholder++];
	ph->env = xstrdup(s->w[1].text);
	ph->secret_name = xstrdup(s->w[2].text);
	ph->secret = NULL;
	ph->nheaders = hdr.nheaders;
	for (i = 0; i < hdr.nheaders; i++)
		ph->headers[i] = xstrdup(hdr.headers[i]);
}

typedef void
option_fn(struct parse_state *, struct policy_rule *, struct stmt *);

/* Same order as parse_options[]. */
static option_fn *const option_fns[] = {
    o_inject,
    o_methods,
    o_paths,
    o_placeholder,
    o_private,
    o_upgrade,
    o_upstream_ca,
};

static void
unknown_word(struct parse_state *st, const struct token *t, int in_block)
{
	const char *kw = closest(t->text, parse_keywords, parse_nkeywords);
	const char *opt = closest(t->text, parse_options, parse_noptions);
	const char *hint = in_block ? (opt ? opt : kw) : (kw ? kw : opt);

	if (!in_block && lookup(t->text, parse_options, parse_noptions) >= 0)
		err(st, t,
		    "'%s' is a rule option: put it inside an allow "
		    "rule's { }",
		    t->text);
	else if (in_block &&
	    lookup(t->text, parse_keywords, parse_nkeywords) >= 0)
		err(st, t,
		    "'%s' cannot appear inside a rule's { }; close the "
		    "block first",
		    t->text);
	else if (hint != NULL)
		err(st, t, "unknown %s '%s'; did you mean '%s'?",
		    in_block ? "option" : "keyword", t->text, hint);
	else if (!in_block && strpbrk(t->text, ".:*/") != NULL)
		err(st, t, "unknown keyword '%s'; did you mean 'allow %s'?",
		    t->text, t->text);
	else
		err(st, t, "unknown %s '%s'", in_block ? "option" : "keyword",
		    t->text);
}

/* Skips tokens up to the '}' that closes the current block. */
static void
skip_block(struct parse_state *st)
{
	struct token t;
	int depth = 1;

	while (depth > 0) {
		lx_next(st, &t);
		free(t.text);
		if (t.kind == TOK_EOF)
			return;
		depth += t.kind == TOK_LBRACE ? 1
		    : t.kind == TOK_RBRACE    ? -1
		                              : 0;
	}
}

/* After '}' only the end of the statement may follow. */
static void
block_tail(struct parse_state *st)
{
	struct token t;

	lx_next(st, &t);
	if (t.kind == TOK_WORD) {
		err(st, &t, "unexpected '%s' after '}'", t.text);
		free(t.text);
		while (t.kind == TOK_WORD) {
			lx_next(st, &t);
			free(t.text);
		}
	} else if (t.kind == TOK_LBRACE || t.kind == TOK_RBRACE) {
		err(st, &t, "unexpected '%c' after '}'",
		    t.kind == TOK_LBRACE ? '{' : '}');
	}
}

/*
 * How many words option W[0] takes, so that several options may share a
 * line ("{ private upstream-ca /etc/ca.pem }", as in DESIGN.md):
 * fixed-arity options take their count; paths and methods run to the
 * next option keyword.  Returns 0 when the count cannot be known (the
 * option's own usage check then reports the line).
 */
static size_t
option_words(const struct token *w, size_t n)
{
	static const char *const inject_kinds[] = {"basic", "bearer", "header"};
	const char *o = w[0].text;
	size_t i;

	if (strcmp(o, "private") == 0)
		return 1;
	if (strcmp(o, "upstream-ca") == 0)
		return 2;
	if (strcmp(o, "placeholder") == 0) {
		/* ENV SECRET, then "header NAME" pairs. */
		for (i = 3; i + 1 < n && strcmp(w[i].text, "header") == 0;
		     i += 2)
			;
		return i > n ? n : i;
	}
	if (strcmp(o, "inject") == 0 && n > 1) {
		switch (lookup(w[1].text, inject_kinds, 3)) {
		case 0:
		case 2:
			return 4;
		case 1:
			return 3;
		}
		return 0;
	}
	for (i = 1; i < n; i++)
		if (lookup(w[i].text, parse_options, parse_noptions) >= 0)
			return i;
	return 0;
}

/* Runs every option of one line of a block. */
static void
rule_options(struct parse_state *st, struct policy_rule *r, struct stmt *s)
{
	struct stmt one = {0};
	size_t i = 0, n;
	int k;

	while (i < s->n) {
		if ((k = lookup(s->w[i].text, parse_options, parse_noptions)) <
		    0) {
			unknown_word(st, &s->w[i], 1);
			return;
		}
		n = option_words(&s->w[i], s->n - i);
		if (n == 0 || n > s->n - i)
			n = s->n - i;
		one.w = &s->w[i];
		one.n = n;
		option_fns[k](st, r, &one);
		i += n;
	}
}

/* Parses the options between '{' (already read, at OPEN) and '}'. */
static void
rule_block(
    struct parse_state *st, struct policy_rule *r, const struct token *open)
{
	struct stmt s = {0};

	for (;;) {
		stmt_read(st, &s);
		rule_options(st, r, &s);
		if (s.end.kind == TOK_RBRACE) {
			block_tail(st);
			break;
		}
		if (s.end.kind == TOK_EOF) {
			err(st, open, "'{' is never closed");
			break;
		}
		if (s.end.kind == TOK_LBRACE) {
			err(st, &s.end, "unexpected '{' inside a rule");
			skip_block(st);
		}
	}
	stmt_clear(&s);
	free(s.w);
}

static void
d_rule(struct parse_state *st, struct stmt *s)
{
	int deny = strcmp(s->w[0].text, "deny") == 0;
	struct policy_rule *r;
	struct rule_target t, *dst;
	char why[256];
	size_t i;

	if (s->n < 2) {
		err(st, &s->w[0], "usage: %s TARGET [TARGET...] [{ OPTIONS }]",
		    s->w[0].text);
		return;
	}
	r = policy_rule_add(st->p, deny, st->file, s->w[0].line, s->w[0].col);
	for (i = 1; i < s->n; i++) {
		memset(&t, 0, sizeof(t));
		if (parse_target(s->w[i].text, deny, &t, why, sizeof(why)) !=
		    0) {
			err(st, &s->w[i], "%s", why);
			continue;
		}
		dst = policy_target_add(st->p, r);
		t.rule = dst->rule;
		t.col = s->w[i].col;
		*dst = t;
	}
	if (s->end.kind == TOK_LBRACE)
		rule_block(st, r, &s->end);
}

/* --- broker blocks (grant.h) -------------------------------------------- */

#define GRANT_FILES_MAX 64
#define GRANT_WORD_MAX 64 /* a policy name (view.h VIEW_POLICY_NAME_MAX) */
#define GRANT_USER_MAX 32 /* a user or group name (useradd's limit) */

/* What a broker block has read so far, for the checks at its '}'. */
struct bblock {
	size_t npolicies, nidentities;
};

typedef void broker_fn(struct parse_state *, struct bblock *, struct stmt *);

/* PATH relative to the current file's directory, made absolute. */
static char *
abs_path(const struct parse_state *st, const char *path)
{
	char *rel = rel_path(st, path), *abs, cwd[4096];

	if (rel[0] == '/' || getcwd(cwd, sizeof(cwd)) == NULL)
		return rel;
	abs = xasprintf("%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd,
	    strncmp(rel, "./", 2) == 0 ? rel + 2 : rel);
	free(rel);
	return abs;
}

static void
b_policy(struct parse_state *st, struct bblock *b, struct stmt *s)
{
	const char *name = s->n > 1 ? s->w[1].text : "", *prev = NULL;
	char *files[GRANT_FILES_MAX];
	unsigned prev_line = 0;
	size_t i, n;

	if (nargs(st, s, 1, 1 + GRANT_FILES_MAX,
	        "policy NAME [FILE...] (at most 64 files)") != 0)
		return;
	if (!valid_name(name, "._-") || strlen(name) > GRANT_WORD_MAX) {
		err(st, &s->w[1],
		    "bad policy name '%s' (1 to 64 letters, digits, '.', "
		    "'_', '-')",
		    name);
		return;
	}
	n = s->n - 2;
	for (i = 0; i < n; i++)
		files[i] = abs_path(st, s->w[i + 2].text);
	if (grant_block_policy(policy_grants_edit(st->p), name,
	        (const char *const *)files, n, st->file, s->w[1].line,
	        s->w[1].col, &prev, &prev_line) != 0)
		err(st, &s->w[1],
		    "policy '%s' is already defined at %s:%u; name it here "
		    "without files",
		    name, prev ? prev : "?", prev_line);
	for (i = 0; i < n; i++)
		free(files[i]);
	b->npolicies++;
}

/* A uid or gid in decimal, or a POSIX user or group name. */
static int
valid_account(const char *w)
{
	unsigned long long v = 0;
	size_t i;

	for (i = 0; w[i] >= '0' && w[i] <= '9'; i++)
		if (i < 11)
			v = v * 10 + (unsigned)(w[i] - '0');
	if (i > 0 && w[i] == '\0')
		return i <= 10 && v < 0xffffffffULL;
	return valid_name(w, "._-") && w[0] != '-' &&
	    strlen(w) <= GRANT_USER_MAX;
}

static void
b_accounts(struct parse_state *st, struct bblock *b, struct stmt *s)
{
	int groups = strcmp(s->w[0].text, "groups") == 0;
	size_t i;

	if (nargs(st, s, 1, SIZE_MAX,
	        groups ? "groups GROUP [GROUP...]" : "users USER [USER...]") !=
	    0)
		return;
	for (i = 1; i < s->n; i++) {
		if (!valid_account(s->w[i].text)) {
			err(st, &s->w[i],
			    "bad %s '%s': a name (letters, digits, '.', '_', "
			    "'-'; not starting with '-'; at most 32) or a "
			    "number below 4294967295",
			    groups ? "group" : "user", s->w[i].text);
			continue;
		}
		if (groups)
			grant_block_group(
			    policy_grants_edit(st->p), s->w[i].text);
		else
			grant_block_user(
			    policy_grants_edit(st->p), s->w[i].text);
	}
	b->nidentities++;
}

static void
b_login(struct parse_state *st, struct bblock *b, struct stmt *s)
{
	const char *prev = NULL;
	unsigned prev_line = 0;

	if (nargs(st, s, 2, 2, "login USER SECRET") != 0)
		return;
	b->nidentities++;
	/* Basic credentials are USER:PASSWORD: no ':' in USER. */
	if (!valid_name(s->w[1].text, "._-@+") ||
	    strlen(s->w[1].text) > GRANT_WORD_MAX) {
		err(st, &s->w[1],
		    "bad login '%s' (1 to 64 letters, digits, '.', '_', "
		    "'-', '@', '+')",
		    s->w[1].text);
		return;
	}
	if (!valid_name(s->w[2].text, "-_.")) {
		err(st, &s->w[2],
		    "bad secret name '%s' (letters, digits, '-', '_', '.')",
		    s->w[2].text);
		return;
	}
	if (grant_block_login(policy_grants_edit(st->p), s->w[1].text,
	        s->w[2].text, st->file, s->w[2].line, s->w[2].col, &prev,
	        &prev_line) != 0)
		err(st, &s->w[1], "login '%s' is already defined at %s:%u",
		    s->w[1].text, prev ? prev : "?", prev_line);
}

static void
b_from(struct parse_state *st, struct bblock *b, struct stmt *s)
{
	struct rule_target t;
	char why[256];
	size_t i;

	if (nargs(st, s, 1, SIZE_MAX,
	        "from ADDRESS[/LEN] [ADDRESS[/LEN]...]") != 0)
		return;
	for (i = 1; i < s->n; i++) {
		memset(&t, 0, sizeof(t));
		if (parse_cidr(s->w[i].text, &t, why, sizeof(why)) != 0) {
			err(st, &s->w[i], "from: %s", why);
			continue;
		}
		grant_block_from(
		    policy_grants_edit(st->p), t.family, t.addr, t.plen);
	}
	b->nidentities++;
}

/* Sorted; same order as broker_fns[]. */
static const char *const broker_words[] = {
    "from",
    "groups",
    "login",
    "policy",
    "users",
};
static broker_fn *const broker_fns[] = {
    b_from,
    b_accounts,
    b_login,
    b_policy,
    b_accounts,
};
#define NBROKER_WORDS (sizeof(broker_words) / sizeof(broker_words[0]))

static void
broker_stmt(struct parse_state *st, struct bblock *b, struct stmt *s)
{
	const char *hint;
	int k;

	if (s->n == 0)
		return;
	if ((k = lookup(s->w[0].text, broker_words, NBROKER_WORDS)) >= 0) {
		broker_fns[k](st, b, s);
		return;
	}
	hint = closest(s->w[0].text, broker_words, NBROKER_WORDS);
	if (lookup(s->w[0].text, parse_keywords, parse_nkeywords) >= 0)
		err(st, &s->w[0],
		    "'%s' cannot appear inside a broker block (policy, users, "
		    "groups, login, from); close the block first",
		    s->w[0].text);
	else if (hint != NULL)
		err(st, &s->w[0],
		    "unknown broker statement '%s'; did you mean '%s'?",
		    s->w[0].text, hint);
	else
		err(st, &s->w[0],
		    "unknown broker statement '%s' (policy, users, groups, "
		    "login, from)",
		    s->w[0].text);
}

/*
 * broker { policy NAME FILE...; users ...; groups ...; login USER SECRET;
 * from CIDR... }: who may use which policy (grant.h).
 */
static void
d_broker(struct parse_state *st, struct stmt *s)
{
	struct bblock b = {0};
	struct stmt in = {0};

	if (s->n != 1 || s->end.kind != TOK_LBRACE) {
		err(st, &s->w[s->n > 1 ? 1 : 0],
		    "usage: broker { policy NAME FILE...; users USER...; "
		    "groups GROUP...; login USER SECRET; from CIDR... }");
		if (s->end.kind == TOK_LBRACE)
			skip_block(st);
		return;
	}
	grant_block_open(policy_grants_edit(st->p));
	for (;;) {
		stmt_read(st, &in);
		broker_stmt(st, &b, &in);
		if (in.end.kind == TOK_RBRACE) {
			block_tail(st);
			break;
		}
		if (in.end.kind == TOK_EOF) {
			err(st, &s->end, "'{' is never closed");
			break;
		}
		if (in.end.kind == TOK_LBRACE) {
			err(st, &in.end,
			    "unexpected '{' inside a broker block");
			skip_block(st);
		}
	}
	stmt_clear(&in);
	free(in.w);
	if (b.npolicies == 0)
		err(st, &s->w[0],
		    "this broker block grants no policy: add 'policy NAME "
		    "FILE...' (or 'policy NAME' for one defined elsewhere)");
	else if (b.nidentities == 0)
		warn(st, &s->w[0],
		    "this broker block grants to nobody: add users, groups, "
		    "login or from");
}

/* Same order as parse_keywords[]. */
static directive_fn *const directive_fns[] = {
    d_rule,
    d_broker,
    d_ca,
    d_rule,
    d_include,
    d_log,
    d_resolve,
    d_secret,
    d_timeout,
    d_trust,
};

static void
parse_statements(struct parse_state *st)
{
	struct stmt s = {0};
	int k, rule;

	do {
		stmt_read(st, &s);
		if (s.n == 0 && s.end.kind == TOK_LBRACE) {
			err(st, &s.end,
			    "'{' must follow allow or deny on the "
			    "same line");
			skip_block(st);
		} else if (s.n == 0 && s.end.kind == TOK_RBRACE) {
			err(st, &s.end, "unexpected '}'");
		} else if (s.n > 0) {
			k = lookup(
			    s.w[0].text, parse_keywords, parse_nkeywords);
			if (k < 0)
				unknown_word(st, &s.w[0], 0);
			else
				directive_fns[k](st, &s);
			/* Rules and broker blocks read their own block. */
			rule = k >= 0 &&
			    (directive_fns[k] == d_rule ||
			        directive_fns[k] == d_broker);
			if (s.end.kind == TOK_LBRACE && !rule) {
				if (k >= 0)
					err(st, &s.end,
					    "'{' may only follow "
					    "allow or deny");
				skip_block(st);
			} else if (s.end.kind == TOK_RBRACE)
				err(st, &s.end, "unexpected '}'");
		}
	} while (s.end.kind != TOK_EOF);
	stmt_clear(&s);
	free(s.w);
}

/* --- files -------------------------------------------------------------- */

struct parse_state *
parse_state_new(struct policy *p)
{
	struct parse_state *st = xcalloc(1, sizeof(*st));

	st->p = p;
	return st;
}

void
parse_state_free(struct parse_state *st)
{
	if (st == NULL)
		return;
	free(st->seen);
	free(st);
}

/* A policy is text: a NUL means a wrong file, so nothing else is parsed. */
static void
nul_error(struct parse_state *st, const char *text, const char *nul)
{
	unsigned line = 1, col = 1;

	for (; text < nul; text++) {
		col = *text == '\n' ? 1 : col + 1;
		line += *text == '\n';
	}
	policy_diag_add(
	    st->p, 0, st->file, line, col, "NUL byte: is this a policy file?");
}

static void
parse_text(struct parse_state *st, const char *name, const char *text,
    size_t len, int withhold)
{
	const char *saved_file = st->file, *nul;
	struct lexer saved_lx = st->lx;
	int saved_withhold = st->withhold;

	st->file = policy_intern_file(st->p, name);
	st->withhold = withhold;
	st->lx.buf = text;
	st->lx.len = len;
	st->lx.pos = 0;
	st->lx.line = 1;
	st->lx.col = 1;
	if ((nul = memchr(text, '\0', len)) != NULL)
		nul_error(st, text, nul);
	else
		parse_statements(st);
	st->file = saved_file;
	st->withhold = saved_withhold;
	st->lx = saved_lx;
}

void
parse_buffer(
    struct parse_state *st, const char *name, const char *text, size_t len)
{
	parse_text(st, name, text, len, 0);
}

/* Reads all of FD (a regular file of SIZE bytes) into a new buffer. */
static char *
read_all(int fd, size_t size, size_t *len)
{
	char *buf = xmalloc(size + 1);
	size_t n = 0;
	ssize_t r;

	while (n < size && (r = read(fd, buf + n, size - n)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			return NULL;
		}
		n += r;
	}
	*len = n;
	return buf;
}

static void
file_error(struct parse_state *st, const struct token *from, const char *path,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
file_error(struct parse_state *st, const struct token *from, const char *path,
    const char *fmt, ...)
{
	char msg[512];
	int withhold = st->withhold;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Which file cannot be included is said even from a withheld one. */
	st->withhold = 0;
	if (from != NULL)
		err(st, from, "include %s: %s", path, msg);
	else
		policy_diag_add(
		    st->p, 0, policy_intern_file(st->p, path), 0, 0, "%s", msg);
	st->withhold = withhold;
}

/* Refuses cycles and repeats; returns 0 when PATH may be parsed. */
static int
file_admit(struct parse_state *st, const char *path, const struct stat *sb,
    const struct token *from)
{
	char chain[1024] = "";
	size_t i;

	for (i = 0; i < st->depth; i++)
		if (st->stack[i].dev == sb->st_dev &&
		    st->stack[i].ino == sb->st_ino) {
			for (; i < st->depth; i++) {
				strncat(chain, st->stack[i].name,
				    sizeof(chain) - strlen(chain) - 1);
				strncat(chain, " -> ",
				    sizeof(chain) - strlen(chain) - 1);
			}
			file_error(
			    st, from, path, "include cycle: %s%s", chain, path);
			return -1;
		}
	for (i = 0; i < st->nseen; i++)
		if (st->seen[i].dev == sb->st_dev &&
		    st->seen[i].ino == sb->st_ino) {
			if (from != NULL)
				warn(st, from,
				    "%s is already included; "
				    "skipped",
				    path);
			return -1;
		}
	if (st->depth == INCLUDE_DEPTH) {
		file_error(st, from, path, "includes nested deeper than %d",
		    INCLUDE_DEPTH);
		return -1;
	}
	return 0;
}

static void
parse_at(struct parse_state *st, const char *path, const struct token *from)
{
	struct file_id *id;
	struct stat sb;
	char *text = NULL;
	size_t len;
	int fd;

	/*
	 * An include is read only when the real user may read it: pinhole
	 * running with more privilege than its caller (setuid, file
	 * capabilities) must not read a file for it.
	 */
	if (from != NULL && faccessat(AT_FDCWD, path, R_OK, 0) != 0) {
		file_error(st, from, path, "not readable by uid %u: %s",
		    (unsigned)getuid(), strerror(errno));
		return;
	}
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0) {
		file_error(st, from, path, "cannot open: %s", strerror(errno));
		return;
	}
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		file_error(st, from, path, "not a regular file");
		goto out;
	}
	if (sb.st_size > FILE_MAX) {
		file_error(
		    st, from, path, "larger than %d MiB", FILE_MAX >> 20);
		goto out;
	}
	if (file_admit(st, path, &sb, from) != 0)
		goto out;
	if ((text = read_all(fd, sb.st_size, &len)) == NULL) {
		file_error(st, from, path, "read: %s", strerror(errno));
		goto out;
	}
	id = &st->stack[st->depth++];
	id->dev = sb.st_dev;
	id->ino = sb.st_ino;
	id->name = policy_intern_file(st->p, path);
	st->seen = xreallocarray(st->seen, st->nseen + 1, sizeof(*st->seen));
	st->seen[st->nseen++] = *id;
	/* Others cannot read it: it may hold secrets, so none is quoted. */
	parse_text(
	    st, path, text, len, from != NULL && (sb.st_mode & S_IROTH) == 0);
	st->depth--;
out:
	free(text);
	close(fd);
}

void
parse_file(struct parse_state *st, const char *path)
{
	parse_at(st, path, NULL);
}

/* --- loading (relayd's load_config) ------------------------------------ */

/* Indexes, checks and reports the parsed policy P; keeps it if sound. */
static int
load_finish(
    struct policy *p, policy_diag_fn *diag, void *arg, struct policy **out)
{
	policy_set_index(p, match_build(p), match_free);
	check_policy(p, parse_distance);
	policy_diag_sort(p);
	policy_report(p, diag, arg);
	if (policy_error_count(p) > 0) {
		policy_free(p);
		*out = NULL;
		return PH_ERR_POLICY;
	}
	*out = p;
	return 0;
}

int
policy_load(const char *const *files, size_t nfiles, policy_diag_fn *diag,
    void *arg, struct policy **out)
{
	struct policy *p = policy_new();
	struct parse_state *st = parse_state_new(p);
	size_t i;

	for (i = 0; i < nfiles; i++)
		parse_file(st, files[i]);
	parse_state_free(st);
	return load_finish(p, diag, arg, out);
}

int
policy_load_extra(const char *const *files, size_t nfiles, const char *name,
    const char *text, policy_diag_fn *diag, void *arg, struct policy **out)
{
	struct policy *p = policy_new();
	struct parse_state *st = parse_state_new(p);
	size_t i;

	for (i = 0; i < nfiles; i++)
		parse_file(st, files[i]);
	if (text != NULL)
		parse_buffer(st, name, text, strlen(text));
	parse_state_free(st);
	return load_finish(p, diag, arg, out);
}

int
policy_load_string(const char *file, const char *text, size_t len,
    policy_diag_fn *diag, void *arg, struct policy **out)
{
	struct policy *p = policy_new();
	struct parse_state *st = parse_state_new(p);

	parse_buffer(st, file, text, len);
	parse_state_free(st);
	return load_finish(p, diag, arg, out);
}
