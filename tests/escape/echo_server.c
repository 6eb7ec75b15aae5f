/*
 * echo_server.c: one connection of a hostile-by-accident HTTP server for
 * escape_echo.sh, run by socat (EXEC, over TLS) with the connection on
 * stdin and stdout.  It reads one request (head, and a Content-Length
 * body), appends the head to LOG (argv[1]) so the scenario sees what the
 * upstream got, and answers by the path's first segment with the head
 * echoed back in one form:
 *
 *	/plain      body, as is (Content-Length)
 *	/chunked    body, as is, in chunks of 3 bytes
 *	/trailer    chunked, the Authorization value in a trailer field
 *	/chunkext   chunked, the Authorization value in a chunk extension
 *	/close      300 KB of filler then the head, ending with the connection
 *	/b64        body, Base64
 *	/pct        body, every byte %XX
 *	/header     the Authorization value in a response field
 *	/location   302 to a URL whose query holds it, percent-encoded
 *	/status     the Authorization value as the status line's reason
 *	/basic      body, the decoded Basic credentials ("user:password")
 *	/quiet      "ok", nothing echoed
 *	/last       body, every head received so far (the LOG file)
 *	anything else: as /plain
 *
 * It decides nothing; the scenario searches what the client received.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define HEAD_MAX 65536

static char head[HEAD_MAX + 1];
static size_t head_len;

static void
out(const void *p, size_t n)
{
	const char *s = p;
	ssize_t w;

	while (n > 0 && (w = write(1, s, n)) > 0) {
		s += w;
		n -= (size_t)w;
	}
}

static void
out_str(const char *s)
{
	out(s, strlen(s));
}

static int
read_head(void)
{
	char c;

	while (head_len < HEAD_MAX && read(0, &c, 1) == 1) {
		head[head_len++] = c;
		if (head_len >= 4 &&
		    memcmp(head + head_len - 4, "\r\n\r\n", 4) == 0)
			return 0;
	}
	return -1;
}

/* The value of field NAME (to its CR), or "" ; in a static buffer. */
static const char *
field(const char *name)
{
	static char v[HEAD_MAX];
	size_t n = strlen(name);
	const char *p = head, *e;

	while ((p = strstr(p, "\r\n")) != NULL) {
		p += 2;
		if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
			p += n + 1;
			while (*p == ' ')
				p++;
			e = strstr(p, "\r\n");
			snprintf(v, sizeof(v), "%.*s", (int)(e - p), p);
			return v;
		}
	}
	return "";
}

static void
drop_body(void)
{
	long len = atol(field("Content-Length"));
	char buf[4096];
	ssize_t r;

	while (len > 0 &&
	    (r = read(0, buf,
	         sizeof(buf) < (size_t)len ? sizeof(buf) : (size_t)len)) > 0)
		len -= r;
}

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static size_t
base64(char *dst, const unsigned char *s, size_t n)
{
	size_t i, o = 0;
	unsigned v;

	for (i = 0; i < n; i += 3) {
		v = s[i] << 16 | (i + 1 < n ? s[i + 1] << 8 : 0) |
		    (i + 2 < n ? s[i + 2] : 0);
		dst[o++] = b64[v >> 18 & 63];
		dst[o++] = b64[v >> 12 & 63];
		dst[o++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
		dst[o++] = i + 2 < n ? b64[v & 63] : '=';
	}
	return o;
}

static size_t
unbase64(unsigned char *dst, const char *s)
{
	size_t o = 0, bits = 0;
	unsigned v = 0;
	const char *p;

	for (; *s != '\0' && *s != '='; s++) {
		if ((p = strchr(b64, *s)) == NULL)
			break;
		v = v << 6 | (unsigned)(p - b64);
		if ((bits += 6) >= 8) {
			bits -= 8;
			dst[o++] = (unsigned char)(v >> bits);
		}
	}
	return o;
}

static size_t
percent(char *dst, const char *s, size_t n, int all)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!all &&
		    ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		        (c >= '0' && c <= '9') || strchr("-._~", c)))
			dst[o++] = (char)c;
		else
			o += (size_t)sprintf(dst + o, "%%%02X", c);
	}
	return o;
}

static void
reply(const char *status, const char *extra, const char *body, size_t n)
{
	char h[HEAD_MAX * 4];
	int k = snprintf(h, sizeof(h),
	    "HTTP/1.1 %s\r\n%sContent-Length: %zu\r\nConnection: close\r\n\r\n",
	    status, extra, n);

	out(h, (size_t)k);
	out(body, n);
}

int
main(int argc, char **argv)
{
	static char buf[HEAD_MAX * 4], extra[HEAD_MAX * 4];
	const char *path;
	size_t n, i;
	FILE *log;

	if (read_head() != 0)
		return 1;
	drop_body();
	if (argc > 1 && (log = fopen(argv[1], "a")) != NULL) {
		fwrite(head, 1, head_len, log);
		fclose(log);
	}
	path = strchr(head, ' ');
	path = path != NULL ? path + 1 : "/";
	if (strncmp(path, "/chunked", 8) == 0) {
		out_str("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
		        "Connection: close\r\n\r\n");
		for (i = 0; i < head_len; i += 3) {
			n = head_len - i < 3 ? head_len - i : 3;
			snprintf(buf, sizeof(buf), "%zx\r\n", n);
			out(buf, strlen(buf));
			out(head + i, n);
			out("\r\n", 2);
		}
		out("0\r\n\r\n", 5);
	} else if (strncmp(path, "/trailer", 8) == 0) {
		snprintf(buf, sizeof(buf),
		    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
		    "Trailer: X-Echo\r\nConnection: close\r\n\r\n"
		    "3\r\nok\n\r\n0\r\nX-Echo: %s\r\n\r\n",
		    field("Authorization"));
		out_str(buf);
	} else if (strncmp(path, "/chunkext", 9) == 0) {
		n = percent(extra, field("Authorization"),
		    strlen(field("Authorization")), 0);
		snprintf(buf, sizeof(buf),
		    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
		    "Connection: close\r\n\r\n"
		    "3;a=%.*s\r\nok\n\r\n0\r\n\r\n",
		    (int)n, extra);
		out_str(buf);
	} else if (strncmp(path, "/close", 6) == 0) {
		out_str("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
		memset(buf, '.', 1000);
		for (i = 0; i < 300; i++)
			out(buf, 1000);
		out(head, head_len);
	} else if (strncmp(path, "/b64", 4) == 0) {
		n = base64(buf, (const unsigned char *)head, head_len);
		reply("200 OK", "", buf, n);
	} else if (strncmp(path, "/pct", 4) == 0) {
		n = percent(buf, head, head_len, 1);
		reply("200 OK", "", buf, n);
	} else if (strncmp(path, "/header", 7) == 0) {
		snprintf(extra, sizeof(extra), "X-Echo: %s\r\n",
		    field("Authorization"));
		reply("200 OK", extra, "ok\n", 3);
	} else if (strncmp(path, "/location", 9) == 0) {
		n = percent(buf, field("Authorization"),
		    strlen(field("Authorization")), 0);
		snprintf(extra, sizeof(extra),
		    "Location: https://elsewhere.test/?auth=%.*s\r\n", (int)n,
		    buf);
		reply("302 Found", extra, "", 0);
	} else if (strncmp(path, "/status", 7) == 0) {
		snprintf(
		    extra, sizeof(extra), "200 %s", field("Authorization"));
		reply(extra, "", "ok\n", 3);
	} else if (strncmp(path, "/basic", 6) == 0) {
		const char *a = field("Authorization");

		n = strncasecmp(a, "Basic ", 6) == 0
		    ? unbase64((unsigned char *)buf, a + 6)
		    : 0;
		reply("200 OK", "", buf, n);
	} else if (strncmp(path, "/last", 5) == 0 && argc > 1 &&
	    (log = fopen(argv[1], "r")) != NULL) {
		n = fread(buf, 1, sizeof(buf), log);
		fclose(log);
		reply("200 OK", "", buf, n);
	} else if (strncmp(path, "/quiet", 6) == 0)
		reply("200 OK", "", "ok\n", 3);
	else
		reply("200 OK", "", head, head_len);
	return 0;
}
