/*
 * http.h: strict HTTP/1.x message heads and chunked framing.
 *
 * Everything the sandbox sends, and everything an upstream answers, goes
 * through these parsers before the proxy acts on it.  They are strict
 * (RFC 9110/9112): what two implementations could read differently --
 * obs-fold, bare CR or LF, NUL, conflicting Content-Length and
 * Transfer-Encoding, odd chunk sizes -- is refused, never repaired, since
 * request smuggling lives in those differences.
 *
 * The parsers do not allocate and do not copy: struct http_head points
 * into the caller's buffer, which must outlive it.
 */
#ifndef PH_HTTP_H
#define PH_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HTTP_HEAD_MAX (64 * 1024) /* request line + fields + CRLF */
#define HTTP_FIELDS_MAX 100

struct http_field {
	const char *name;
	size_t name_len;
	const char *value; /* leading and trailing blanks removed */
	size_t value_len;
};

enum http_form {
	HTTP_FORM_ORIGIN, /* /path?query */
	HTTP_FORM_ABSOLUTE, /* http://host/path */
	HTTP_FORM_AUTHORITY, /* host:port (CONNECT only) */
	HTTP_FORM_ASTERISK, /* * (OPTIONS only) */
};

enum http_body {
	HTTP_BODY_NONE,
	HTTP_BODY_LENGTH, /* content_length bytes */
	HTTP_BODY_CHUNKED, /* use http_chunked_scan */
	HTTP_BODY_CLOSE, /* response until the server closes */
};

struct http_head {
	/* Request line (http_parse_request). */
	const char *method;
	size_t method_len;
	const char *target;
	size_t target_len;
	enum http_form form;
	/* Status line (http_parse_response). */
	int status;
	/* Both. */
	int minor; /* HTTP/1.minor: 0 or 1 */
	struct http_field fields[HTTP_FIELDS_MAX];
	size_t nfields;
	size_t head_len; /* bytes up to and including CRLFCRLF */
	/* Framing, derived from the fields. */
	enum http_body body;
	uint64_t content_length; /* HTTP_BODY_LENGTH only */
	int keep_alive; /* the connection may carry another message */
	int expect_continue; /* request: Expect: 100-continue */
	int upgrade; /* Connection: upgrade and an Upgrade field */
};

/*
 * Parses a request head at the start of BUF (LEN bytes so far).
 * Returns the head length (> 0, a skipped leading CRLF included) when a
 * whole head is there, 0 when more bytes are needed (and LEN <
 * HTTP_HEAD_MAX): call again only once new bytes hold a LF, since every
 * call parses from the start.  Or returns the negative HTTP status
 * to answer with: -400 malformed, -431 head over HTTP_HEAD_MAX bytes or
 * HTTP_FIELDS_MAX fields, -501 a transfer coding other than chunked,
 * -505 a version other than HTTP/1.0 or 1.1.  On error *WHY is a static
 * one-line reason.  Rules: method is a token; target has no blank or
 * control byte and its form fits the method (authority only for CONNECT,
 * * only for OPTIONS); HTTP/1.1 needs exactly one Host; Content-Length is
 * digits only, repeated only with the same value; Transfer-Encoding with
 * Content-Length, or not ending in chunked, is refused.
 */
int http_parse_request(
    const char *buf, size_t len, struct http_head *h, const char **why);

/*
 * Parses a response head to a request with METHOD (a HEAD, or a 1xx, 204
 * or 304, has no body; a 2xx to CONNECT neither).  Returns as
 * http_parse_request, errors being -502 (the proxy's answer to a bad
 * upstream).  A response with neither length nor chunked is HTTP_BODY_CLOSE.
 */
int http_parse_response(const char *buf, size_t len, const char *method,
    size_t method_len, struct http_head *h, const char **why);

/* Returns the first field called NAME (any case), or NULL. */
const struct http_field *
http_field_find(const struct http_head *, const char *name);

/*
 * Does field value V (a comma-separated list, as Connection) hold TOKEN,
 * compared without case?
 */
int http_list_has(const char *v, size_t len, const char *token);

/*
 * Chunked body scanner.  It checks chunk framing as the bytes pass through
 * the proxy unchanged and tells where the body ends (after the last chunk
 * and its trailer section).
 */
struct http_chunked {
	int state;
	uint64_t remaining; /* data bytes left in the current chunk */
	unsigned digits; /* hex digits of the size line so far */
	size_t line; /* bytes of the current size or trailer line */
	size_t trailer; /* bytes of trailer section so far */
};

void http_chunked_init(struct http_chunked *);

/*
 * Inside a chunk's data, how many data bytes of it are still to come;
 * else 0 (the next byte is framing).  Lets a caller tell the payload
 * from the framing as the bytes pass (the response scan).
 */
uint64_t http_chunked_data_left(const struct http_chunked *);

/*
 * Scans up to LEN bytes of chunked body.  Returns how many bytes belong
 * to the body (all LEN unless it ends inside BUF), sets *DONE when the
 * body is complete, or returns -1 with *WHY on bad framing: a size that
 * is not hex or over 2^60, a chunk extension or trailer line over 4 KiB,
 * a bare CR or LF, or missing CRLF after chunk data.
 */
ssize_t http_chunked_scan(struct http_chunked *, const char *buf, size_t len,
    int *done, const char **why);

#endif
