/*
 * http.c: strict HTTP/1.x message heads and chunked framing.
 *
 * A head is read line by line.  Each line is checked as soon as its CRLF
 * has arrived, so that garbage is refused early rather than after the
 * head timeout, and the framing fields are judged once the empty line
 * ending the head is there.  Nothing is kept between calls: each call
 * scans BUF from its first byte again.  That costs O(LEN), at most
 * HTTP_HEAD_MAX bytes, a few tens of microseconds; a caller reading in
 * chunks may skip the call until its new bytes hold a LF (only a LF ends
 * a line, so no head can end without one) or it has HTTP_HEAD_MAX bytes.
 *
 * Whatever two implementations could read differently is refused with
 * the status to answer, never repaired: request smuggling lives there.
 */
#include <string.h>

#include "http.h"
#include "policy/target.h"

#define METHOD_MAX 32
#define TARGET_MAX (8 * 1024)
#define CL_DIGITS_MAX 19
#define CL_MAX (1ULL << 62)
#define CHUNK_DIGITS_MAX 15 /* so a size is below 2^60 */
#define CHUNK_LINE_MAX 4096
#define TRAILER_MAX (16 * 1024)

/* A head being parsed: lines of BUF, from OFF, none ending past LIM. */
struct hp {
	const char *buf;
	size_t len; /* bytes the caller has */
	size_t lim; /* bytes a head may span: LEN, at most HTTP_HEAD_MAX */
	size_t off; /* start of the next line */
	struct http_head *h;
	const char *why;
};

/* What Transfer-Encoding says about framing. */
enum te_kind {
	TE_ABSENT,
	TE_CHUNKED, /* the last coding is chunked, the only chunked */
	TE_OTHER, /* codings, none of them chunked */
	TE_NOT_LAST, /* chunked once, but another coding after it */
};

struct framing {
	int has_cl;
	uint64_t cl;
	enum te_kind te;
};

static int
fail(struct hp *p, int status, const char *why)
{
	p->why = why;
	return -status;
}

static int
is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int
is_blank(int c)
{
	return c == ' ' || c == '\t';
}

/* RFC 9110 5.6.2 tchar. */
static int
is_tchar(int c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c))
		return 1;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Field value and reason phrase: HTAB, SP, VCHAR, obs-text. */
static int
is_value_byte(int c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* uri-host [":" port] of RFC 3986, with no userinfo and no path. */
static int
is_host_byte(int c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c))
		return 1;
	return c != '\0' && strchr("-._~!$&'()*+,;=:[]%", c) != NULL;
}

static size_t
token_span(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n && is_tchar((unsigned char)s[i]); i++)
		;
	return i;
}

static int
lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* Do S and T, N bytes each, match ignoring ASCII case (not the locale's)? */
static int
same_nocase(const char *s, const char *t, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (lower((unsigned char)s[i]) != lower((unsigned char)t[i]))
			return 0;
	return 1;
}

/* Does S (N bytes) equal NUL-terminated T, ignoring case? */
static int
equal_nocase(const char *s, size_t n, const char *t)
{
	return strlen(t) == n && same_nocase(s, t, n);
}

/*
 * Parses "HTTP/1.0" or "HTTP/1.1".  Returns 0 and the minor version,
 * -505 for another version spelled like one, or -400.
 */
static int
parse_version(const char *v, size_t n, int *minor)
{
	size_t i = 5, d;

	if (n == 8 && memcmp(v, "HTTP/1.", 7) == 0 &&
	    (v[7] == '0' || v[7] == '1')) {
		*minor = v[7] - '0';
		return 0;
	}
	if (n <= 5 || memcmp(v, "HTTP/", 5) != 0)
		return -400;
	for (d = i; i < n && is_digit((unsigned char)v[i]); i++)
		;
	if (i > d && i < n && v[i] == '.')
		for (d = ++i; i < n && is_digit((unsigned char)v[i]); i++)
			;
	return i == n && i > d ? -505 : -400;
}

/*
 * Reads 1*DIGIT, at most 19 digits and at most 2^62.  Returns 0 or -1.
 */
static int
parse_decimal(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n == 0 || n > CL_DIGITS_MAX)
		return -1;
	for (i = 0; i < n; i++) {
		if (!is_digit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > CL_MAX)
		return -1;
	*out = v;
	return 0;
}

/*
 * Splits list *S..END at its next comma.  Returns 0 at the end, or 1 and
 * the element without its OWS, which may be empty.
 */
static int
list_next(const char **s, const char *end, const char **e, size_t *n)
{
	const char *b = *s, *comma, *stop;

	if (b == NULL)
		return 0;
	comma = memchr(b, ',', (size_t)(end - b));
	stop = comma != NULL ? comma : end;
	*s = comma != NULL ? comma + 1 : NULL;
	while (b < stop && is_blank((unsigned char)*b))
		b++;
	while (stop > b && is_blank((unsigned char)stop[-1]))
		stop--;
	*e = b;
	*n = (size_t)(stop - b);
	return 1;
}

/* Returns the next field called NAME from index *I on, or NULL. */
static const struct http_field *
field_next(const struct http_head *h, const char *name, size_t *i)
{
	const struct http_field *f;

	while (*i < h->nfields) {
		f = &h->fields[(*i)++];
		if (equal_nocase(f->name, f->name_len, name))
			return f;
	}
	return NULL;
}

const struct http_field *
http_field_find(const struct http_head *h, const char *name)
{
	size_t i = 0;

	return field_next(h, name, &i);
}

int
http_list_has(const char *v, size_t len, const char *token)
{
	const char *s = v, *e;
	size_t n;

	while (list_next(&s, v + len, &e, &n))
		if (n > 0 && equal_nocase(e, n, token))
			return 1;
	return 0;
}

/* Is NUL-terminated T (N bytes) any field's name in the list of H? */
static int
list_field_has(const struct http_head *h, const char *name, const char *t)
{
	const struct http_field *f;
	size_t i = 0;

	while ((f = field_next(h, name, &i)) != NULL)
		if (http_list_has(f->value, f->value_len, t))
			return 1;
	return 0;
}

/*
 * The end of a head can only be found after a LF; what is here so far
 * is still checked for NUL and bare CR.  Returns 0 (more bytes) or an
 * error.  A CR as the last byte may yet be followed by its LF.
 */
static int
partial_line(struct hp *p, const char *s, size_t n)
{
	const char *cr;

	if (memchr(s, '\0', n) != NULL)
		return fail(p, 400, "NUL byte in head");
	if ((cr = memchr(s, '\r', n)) != NULL && cr != s + n - 1)
		return fail(p, 400, "bare CR in head");
	if (p->len >= HTTP_HEAD_MAX)
		return fail(p, 431, "head larger than 64 KiB");
	return 0;
}

/*
 * Takes the next line, without its CRLF.  Returns 1, 0 when the line is
 * not complete yet, or an error: a LF without CR, a CR without LF, a NUL.
 */
static int
next_line(struct hp *p, const char **line, size_t *n)
{
	const char *s = p->buf + p->off, *lf;
	size_t avail = p->lim - p->off;

	if ((lf = memchr(s, '\n', avail)) == NULL)
		return partial_line(p, s, avail);
	if (lf == s || lf[-1] != '\r')
		return fail(p, 400, "bare LF in head");
	*line = s;
	*n = (size_t)(lf - 1 - s);
	if (memchr(s, '\0', *n) != NULL)
		return fail(p, 400, "NUL byte in head");
	if (memchr(s, '\r', *n) != NULL)
		return fail(p, 400, "bare CR in head");
	p->off += *n + 2;
	return 1;
}

/* Why field line L (N > 0 bytes), whose name is I bytes, is bad, or NULL. */
static const char *
field_name_why(const char *l, size_t n, size_t i)
{
	if (is_blank((unsigned char)l[0]))
		return "obs-fold or blank at start of field line";
	if (i < n && is_blank((unsigned char)l[i]))
		return "whitespace before colon in field name";
	if (i == n)
		return "field line without colon";
	if (l[i] != ':')
		return "bad byte in field name";
	if (i == 0)
		return "empty field name";
	return NULL;
}

/* Parses field line L (N > 0 bytes) into the next slot of P's head. */
static int
parse_field(struct hp *p, const char *l, size_t n)
{
	struct http_field *f;
	const char *why;
	size_t i = token_span(l, n), b, e;

	if ((why = field_name_why(l, n, i)) != NULL)
		return fail(p, 400, why);
	for (b = i + 1; b < n; b++)
		if (!is_value_byte((unsigned char)l[b]))
			return fail(p, 400, "control byte in field value");
	if (p->h->nfields == HTTP_FIELDS_MAX)
		return fail(p, 431, "more than 100 header fields");
	for (b = i + 1; b < n && is_blank((unsigned char)l[b]); b++)
		;
	for (e = n; e > b && is_blank((unsigned char)l[e - 1]); e--)
		;
	f = &p->h->fields[p->h->nfields++];
	f->name = l;
	f->name_len = i;
	f->value = l + b;
	f->value_len = e - b;
	return 0;
}

/*
 * Reads the start line with START, then fields up to the empty line.
 * Returns the head length, 0 when more bytes are needed, or an error.
 */
static int
scan_head(struct hp *p, int (*start)(struct hp *, const char *, size_t))
{
	const char *l;
	size_t n;
	int r;

	if ((r = next_line(p, &l, &n)) <= 0 || (r = start(p, l, n)) != 0)
		goto out;
	while ((r = next_line(p, &l, &n)) > 0) {
		if (n == 0) {
			r = (int)p->off;
			break;
		}
		if ((r = parse_field(p, l, n)) != 0)
			break;
	}
out:
	return r;
}

static int
is_method(const struct http_head *h, const char *m)
{
	return h->method_len == strlen(m) &&
	    memcmp(h->method, m, h->method_len) == 0;
}

/* Host of an authority: a bracketed IPv6 literal, or a name or IPv4. */
static int
is_authority_host(const char *s, size_t n)
{
	size_t i;
	int c;

	if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
		for (i = 1; i + 1 < n; i++)
			if (target_hexval(c = (unsigned char)s[i]) < 0 &&
			    c != ':' && c != '.')
				return 0;
		return n > 2;
	}
	for (i = 0; i < n; i++)
		if (!is_host_byte(c = (unsigned char)s[i]) || c == ':' ||
		    c == '[' || c == ']')
			return 0;
	return n > 0;
}

/* Authority-form, host ":" port, the port being 1 to 65535. */
static int
is_authority(const char *t, size_t n)
{
	const char *colon = NULL;
	unsigned long port = 0;
	size_t i, plen;

	for (i = 0; i < n; i++)
		if (t[i] == ':')
			colon = t + i;
	if (colon == NULL)
		return 0;
	plen = n - (size_t)(colon + 1 - t);
	if (plen == 0 || plen > 5)
		return 0;
	for (i = 0; i < plen; i++) {
		if (!is_digit((unsigned char)colon[1 + i]))
			return 0;
		port = port * 10 + (unsigned long)(colon[1 + i] - '0');
	}
	return port >= 1 && port <= 65535 &&
	    is_authority_host(t, (size_t)(colon - t));
}

/* Absolute-form: an http or https URI with a non-empty authority. */
static int
is_absolute(const char *t, size_t n)
{
	size_t s;

	if (n >= 7 && same_nocase(t, "http://", 7))
		s = 7;
	else if (n >= 8 && same_nocase(t, "https://", 8))
		s = 8;
	else
		return 0;
	return n > s && strchr("/?#", t[s]) == NULL;
}

/* Classifies the request target, which must fit the method. */
static int
target_form(struct hp *p)
{
	struct http_head *h = p->h;
	const char *t = h->target;
	size_t n = h->target_len;

	if (memchr(t, '#', n) != NULL)
		return fail(p, 400, "fragment in request target");
	if (is_method(h, "CONNECT")) {
		if (!is_authority(t, n))
			return fail(p, 400, "CONNECT target is not host:port");
		h->form = HTTP_FORM_AUTHORITY;
	} else if (n == 1 && t[0] == '*') {
		if (!is_method(h, "OPTIONS"))
			return fail(p, 400, "'*' target is only for OPTIONS");
		h->form = HTTP_FORM_ASTERISK;
	} else if (t[0] == '/')
		h->form = HTTP_FORM_ORIGIN;
	else if (is_absolute(t, n))
		h->form = HTTP_FORM_ABSOLUTE;
	else
		return fail(p, 400, "request target in no allowed form");
	return 0;
}

/* method SP request-target SP HTTP-version; L (N bytes) has no CRLF. */
static int
request_line(struct hp *p, const char *l, size_t n)
{
	struct http_head *h = p->h;
	size_t m = token_span(l, n), t, v;
	int r;

	if (n == 0)
		return fail(p, 400, "empty request line");
	if (m == 0 || m == n || l[m] != ' ')
		return fail(p, 400, "bad method");
	if (m > METHOD_MAX)
		return fail(p, 400, "method longer than 32 bytes");
	for (t = m + 1;
	     t < n && (unsigned char)l[t] > 0x20 && (unsigned char)l[t] < 0x7f;
	     t++)
		;
	if (t == m + 1)
		return fail(p, 400, "empty request target");
	if (t == n)
		return fail(p, 400, "no HTTP version in request line");
	if (l[t] != ' ')
		return fail(p, 400, "bad byte in request target");
	if (t - m - 1 > TARGET_MAX)
		return fail(p, 400, "request target longer than 8 KiB");
	v = t + 1;
	if ((r = parse_version(l + v, n - v, &h->minor)) != 0)
		return fail(p, -r,
		    r == -505 ? "unsupported HTTP version"
		              : "bad HTTP version");
	h->method = l;
	h->method_len = m;
	h->target = l + m + 1;
	h->target_len = t - m - 1;
	return target_form(p);
}

/* HTTP-version SP 3DIGIT [SP reason-phrase]; the SP may be missing. */
static int
status_line(struct hp *p, const char *l, size_t n)
{
	const char *sp = memchr(l, ' ', n), *s;
	size_t i;

	if (sp == NULL || parse_version(l, (size_t)(sp - l), &p->h->minor))
		return fail(p, 502, "bad HTTP version in status line");
	s = sp + 1;
	i = (size_t)(s - l);
	if (n - i < 3 || !is_digit((unsigned char)s[0]) ||
	    !is_digit((unsigned char)s[1]) || !is_digit((unsigned char)s[2]))
		return fail(p, 502, "bad status code");
	p->h->status = (s[0] - '0') * 100 + (s[1] - '0') * 10 + (s[2] - '0');
	if (p->h->status < 100 || p->h->status > 599)
		return fail(p, 502, "status code out of range");
	if (n - i > 3 && s[3] != ' ')
		return fail(p, 502, "bad status code");
	for (i += 3; i < n; i++)
		if (!is_value_byte((unsigned char)l[i]))
			return fail(p, 502, "control byte in reason phrase");
	return 0;
}

/* Host: exactly one in HTTP/1.1, at most one in 1.0, a valid authority. */
static int
check_host(struct hp *p)
{
	const struct http_head *h = p->h;
	const struct http_field *f;
	size_t i = 0, j;

	if ((f = field_next(h, "host", &i)) == NULL)
		return h->minor == 1 ? fail(p, 400, "no Host field") : 0;
	if (field_next(h, "host", &i) != NULL)
		return fail(p, 400, "more than one Host field");
	for (j = 0; j < f->value_len; j++)
		if (!is_host_byte((unsigned char)f->value[j]))
			return fail(p, 400, "bad byte in Host");
	if (f->value_len == 0 &&
	    (h->form == HTTP_FORM_ORIGIN || h->form == HTTP_FORM_ASTERISK))
		return fail(p, 400, "empty Host");
	return 0;
}

/* All Content-Length fields and list elements: digits, one value. */
static int
content_length(struct hp *p, struct framing *fr)
{
	const struct http_field *f;
	const char *s, *e;
	size_t i = 0, n;
	uint64_t v;

	while ((f = field_next(p->h, "content-length", &i)) != NULL) {
		s = f->value;
		while (list_next(&s, f->value + f->value_len, &e, &n)) {
			if (parse_decimal(e, n, &v) != 0)
				return fail(p, 400, "bad Content-Length");
			if (fr->has_cl && v != fr->cl)
				return fail(p, 400,
				    "conflicting Content-Length values");
			fr->has_cl = 1;
			fr->cl = v;
		}
	}
	return 0;
}

/*
 * One transfer coding: token *( OWS ";" OWS token "=" token ), without
 * quoted strings.  Chunked takes no parameters.  Returns 1 for chunked,
 * 0 for another coding, -1 when malformed.
 */
static int
coding(const char *e, size_t n)
{
	size_t t = token_span(e, n), i;
	int c;

	if (t == 0)
		return -1;
	if (equal_nocase(e, t, "chunked"))
		return t == n ? 1 : -1;
	for (i = t; i < n && is_blank((unsigned char)e[i]); i++)
		;
	if (i < n && e[i] != ';')
		return -1;
	for (; i < n; i++)
		if (!is_tchar(c = (unsigned char)e[i]) && !is_blank(c) &&
		    c != ';' && c != '=')
			return -1;
	return 0;
}

/* Reads the codings of all Transfer-Encoding fields, in order. */
static int
transfer_encoding(struct hp *p, struct framing *fr)
{
	const struct http_field *f;
	const char *s, *e;
	size_t i = 0, n, ncodings = 0, nchunked = 0;
	int seen = 0, c = 0;

	while ((f = field_next(p->h, "transfer-encoding", &i)) != NULL) {
		seen = 1;
		s = f->value;
		while (list_next(&s, f->value + f->value_len, &e, &n)) {
			if (n == 0)
				continue;
			if ((c = coding(e, n)) < 0)
				return fail(p, 400, "bad Transfer-Encoding");
			ncodings++;
			nchunked += (size_t)c;
		}
	}
	if (seen && ncodings == 0)
		return fail(p, 400, "empty Transfer-Encoding");
	if (nchunked > 1)
		return fail(p, 400, "chunked applied more than once");
	if (!seen)
		fr->te = TE_ABSENT;
	else if (c == 1)
		fr->te = TE_CHUNKED;
	else
		fr->te = nchunked > 0 ? TE_NOT_LAST : TE_OTHER;
	return 0;
}

/* Framing fields, common to both directions; H/1.0 cannot use TE. */
static int
framing(struct hp *p, struct framing *fr)
{
	int r;

	memset(fr, 0, sizeof(*fr));
	if ((r = content_length(p, fr)) != 0 ||
	    (r = transfer_encoding(p, fr)) != 0)
		return r;
	if (fr->te != TE_ABSENT && fr->has_cl)
		return fail(
		    p, 400, "both Transfer-Encoding and Content-Length");
	if (fr->te != TE_ABSENT && p->h->minor == 0)
		return fail(p, 400, "Transfer-Encoding in HTTP/1.0");
	return 0;
}

/* Connection options: close, keep-alive, upgrade. */
static void
connection_options(struct http_head *h)
{
	int closing = list_field_has(h, "connection", "close");
	int ka = list_field_has(h, "connection", "keep-alive");

	h->keep_alive = !closing && (h->minor == 1 || ka);
	h->upgrade = list_field_has(h, "connection", "upgrade") &&
	    http_field_find(h, "upgrade") != NULL;
}

/* What the fields of a complete request head mean for the proxy. */
static int
request_semantics(struct hp *p)
{
	struct http_head *h = p->h;
	struct framing fr;
	int r;

	if ((r = check_host(p)) != 0 || (r = framing(p, &fr)) != 0)
		return r;
	if (fr.te == TE_NOT_LAST)
		return fail(p, 400, "chunked is not the last transfer coding");
	if (fr.te == TE_OTHER)
		return fail(p, 501, "transfer coding other than chunked");
	if (fr.te == TE_CHUNKED)
		h->body = HTTP_BODY_CHUNKED;
	else if (fr.has_cl && fr.cl > 0) {
		h->body = HTTP_BODY_LENGTH;
		h->content_length = fr.cl;
	}
	connection_options(h);
	h->expect_continue =
	    h->minor == 1 && list_field_has(h, "expect", "100-continue");
	return 0;
}

/* Sets up P for BUF and clears H. */
static void
hp_init(struct hp *p, const char *buf, size_t len, struct http_head *h)
{
	memset(h, 0, sizeof(*h));
	memset(p, 0, sizeof(*p));
	p->buf = buf;
	p->len = len;
	p->lim = len < HTTP_HEAD_MAX ? len : HTTP_HEAD_MAX;
	p->h = h;
}

/*
 * One empty line before the request line is skipped (RFC 9112 2.2: some
 * clients send a CRLF after a POST body), and counted in the head.
 */
int
http_parse_request(
    const char *buf, size_t len, struct http_head *h, const char **why)
{
	struct hp p;
	int r;

	hp_init(&p, buf, len, h);
	if (len >= 2 && buf[0] == '\r' && buf[1] == '\n')
		p.off = 2;
	if ((r = scan_head(&p, request_line)) > 0 &&
	    (r = request_semantics(&p)) == 0) {
		h->head_len = (size_t)p.off;
		r = (int)p.off;
	}
	if (why != NULL)
		*why = r < 0 ? p.why : NULL;
	return r;
}

static int
no_body(const struct http_head *h, const char *method, size_t mlen)
{
	int head =
	    method != NULL && mlen == 4 && memcmp(method, "HEAD", 4) == 0;
	int connect =
	    method != NULL && mlen == 7 && memcmp(method, "CONNECT", 7) == 0;

	return head || h->status < 200 || h->status == 204 ||
	    h->status == 304 || (connect && h->status < 300);
}

/* Body of a complete response (RFC 9112 6.3) and keep-alive. */
static int
response_semantics(struct hp *p, const char *method, size_t mlen)
{
	struct http_head *h = p->h;
	struct framing fr;
	int r;

	if ((r = framing(p, &fr)) != 0)
		return r;
	if (no_body(h, method, mlen))
		h->body = HTTP_BODY_NONE;
	else if (fr.te == TE_CHUNKED)
		h->body = HTTP_BODY_CHUNKED;
	else if (fr.te != TE_ABSENT || !fr.has_cl)
		h->body = HTTP_BODY_CLOSE;
	else if (fr.cl > 0) {
		h->body = HTTP_BODY_LENGTH;
		h->content_length = fr.cl;
	}
	connection_options(h);
	if (h->body == HTTP_BODY_CLOSE)
		h->keep_alive = 0;
	return 0;
}

int
http_parse_response(const char *buf, size_t len, const char *method,
    size_t method_len, struct http_head *h, const char **why)
{
	struct hp p;
	int r;

	hp_init(&p, buf, len, h);
	if ((r = scan_head(&p, status_line)) > 0 &&
	    (r = response_semantics(&p, method, method_len)) == 0) {
		h->head_len = (size_t)p.off;
		r = (int)p.off;
	}
	if (r < 0)
		r = -502;
	if (why != NULL)
		*why = r < 0 ? p.why : NULL;
	return r;
}

/*
 * Chunked body: a state per place in the grammar (RFC 9112 7.1).  Each
 * byte is judged alone, so the result does not depend on how the body is
 * split into calls; chunk data is skipped in bulk.
 */
enum {
	CH_SIZE, /* hex digits */
	CH_SIZE_WS, /* BWS after the size: only ";" may follow */
	CH_EXT, /* chunk extensions, up to CR */
	CH_SIZE_LF, /* LF of the size line */
	CH_DATA, /* REMAINING data bytes */
	CH_DATA_CR, /* CR after the data */
	CH_DATA_LF, /* LF after the data */
	CH_TRAILER, /* start of a trailer line, or the final CRLF */
	CH_TNAME, /* trailer field name */
	CH_TVALUE, /* trailer field value, up to CR */
	CH_TLINE_LF, /* LF of a trailer line */
	CH_END_LF, /* LF of the final CRLF */
	CH_DONE,
	CH_ERROR,
};

void
http_chunked_init(struct http_chunked *c)
{
	memset(c, 0, sizeof(*c));
	c->state = CH_SIZE;
}

static const char *
size_byte(struct http_chunked *c, int ch)
{
	int v = target_hexval(ch);

	if (v >= 0) {
		if (c->digits == CHUNK_DIGITS_MAX)
			return "chunk size over 2^60";
		c->remaining = c->remaining * 16 + (uint64_t)v;
		c->digits++;
	} else if (c->digits == 0)
		return "chunk size is not hex";
	else if (ch == ';')
		c->state = CH_EXT;
	else if (is_blank(ch))
		c->state = CH_SIZE_WS;
	else if (ch == '\r')
		c->state = CH_SIZE_LF;
	else if (ch == '\n')
		return "bare LF in chunk size line";
	else
		return "chunk size is not hex";
	return NULL;
}

static const char *
size_line_byte(struct http_chunked *c, int ch)
{
	if (c->state == CH_SIZE_WS) {
		if (ch == ';')
			c->state = CH_EXT;
		else if (!is_blank(ch))
			return "blank after chunk size";
	} else if (ch == '\r')
		c->state = CH_SIZE_LF;
	else if (ch == '\n')
		return "bare LF in chunk size line";
	else if (!is_value_byte(ch))
		return "control byte in chunk extension";
	return NULL;
}

static const char *
trailer_byte(struct http_chunked *c, int ch)
{
	if (ch == '\n')
		return "bare LF in trailer";
	if (c->state == CH_TRAILER) {
		if (ch == '\r')
			c->state = CH_END_LF;
		else if (is_tchar(ch))
			c->state = CH_TNAME;
		else
			return is_blank(ch) ? "obs-fold in trailer"
			                    : "bad trailer field name";
	} else if (c->state == CH_TNAME) {
		if (ch == ':')
			c->state = CH_TVALUE;
		else if (!is_tchar(ch))
			return "bad trailer field name";
	} else if (ch == '\r')
		c->state = CH_TLINE_LF;
	else if (!is_value_byte(ch))
		return "control byte in trailer";
	return NULL;
}

/* The LF of a CRLF; NEXT is the state after it. */
static const char *
lf_byte(struct http_chunked *c, int ch, int next, const char *why)
{
	if (ch != '\n')
		return why;
	c->state = next;
	c->line = 0;
	c->digits = 0;
	return NULL;
}

/*
 * Counts bytes against the limits: a size or trailer line, without its
 * CRLF, and the trailer section with all its CRLFs.
 */
static const char *
count_byte(struct http_chunked *c, int ch)
{
	int sizeline = c->state <= CH_EXT;
	int trailer = c->state >= CH_TRAILER && c->state <= CH_END_LF;
	int online = c->state <= CH_EXT || c->state == CH_TRAILER ||
	    c->state == CH_TNAME || c->state == CH_TVALUE;

	if (online && ch != '\r' && ++c->line > CHUNK_LINE_MAX)
		return sizeline ? "chunk size line over 4 KiB"
		                : "trailer line over 4 KiB";
	if (trailer && ++c->trailer > TRAILER_MAX)
		return "trailer section over 16 KiB";
	return NULL;
}

static const char *
chunked_byte(struct http_chunked *c, int ch)
{
	const char *why;

	if ((why = count_byte(c, ch)) != NULL)
		return why;
	switch (c->state) {
	case CH_SIZE:
		return size_byte(c, ch);
	case CH_SIZE_WS:
	case CH_EXT:
		return size_line_byte(c, ch);
	case CH_SIZE_LF:
		return lf_byte(c, ch, c->remaining > 0 ? CH_DATA : CH_TRAILER,
		    "bare CR in chunk size line");
	case CH_DATA_CR:
		c->state = CH_DATA_LF;
		return ch == '\r' ? NULL : "no CRLF after chunk data";
	case CH_DATA_LF:
		return lf_byte(c, ch, CH_SIZE, "no CRLF after chunk data");
	case CH_TLINE_LF:
		return lf_byte(c, ch, CH_TRAILER, "bare CR in trailer");
	case CH_END_LF:
		return lf_byte(c, ch, CH_DONE, "bare CR after trailer");
	default:
		return trailer_byte(c, ch);
	}
}

uint64_t
http_chunked_data_left(const struct http_chunked *c)
{
	return c->state == CH_DATA ? c->remaining : 0;
}

ssize_t
http_chunked_scan(struct http_chunked *c, const char *buf, size_t len,
    int *done, const char **why)
{
	const char *err = NULL;
	size_t i = 0, n;

	if (c->state == CH_ERROR)
		err = "chunked body already refused";
	while (err == NULL && i < len && c->state != CH_DONE) {
		if (c->state == CH_DATA) {
			n = len - i < c->remaining ? len - i : c->remaining;
			i += n;
			if ((c->remaining -= n) == 0)
				c->state = CH_DATA_CR;
		} else if ((err = chunked_byte(c, (unsigned char)buf[i])) ==
		    NULL)
			i++;
	}
	*done = c->state == CH_DONE;
	if (err != NULL) {
		c->state = CH_ERROR;
		if (why != NULL)
			*why = err;
		return -1;
	}
	return (ssize_t)i;
}
