#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ph_err.h"

const char *
ph_err(int n)
{
	switch (n) {
	case PH_ERR_SUCCESS:
		return "success";
	case PH_ERR_INTERNAL:
		return "internal error";
	case PH_ERR_ALLOC:
		return "out of memory";
	case PH_ERR_INVALID:
		return "invalid format";
	case PH_ERR_TOO_LONG:
		return "too long";
	case PH_ERR_NOT_FOUND:
		return "not found";
	case PH_ERR_EXISTS:
		return "already defined";
	case PH_ERR_NON_ASCII:
		return "non-ASCII host name (use its xn-- punycode form)";
	case PH_ERR_PERM:
		return "unsafe permissions";
	case PH_ERR_SYSTEM:
		return "system error";
	case PH_ERR_POLICY:
		return "policy has errors";
	case PH_ERR_TIMEOUT:
		return "timed out";
	case PH_ERR_ENCODED_SLASH:
		return "encoded slash or backslash in path";
	case PH_ERR_NUL:
		return "NUL or control character";
	case PH_ERR_PORT:
		return "bad or missing port";
	case PH_ERR_DOT_PARAM:
		return "';' parameters on a '.', '..' or empty path segment";
	case PH_ERR_BAD_UTF8:
		return "overlong or invalid UTF-8 in path";
	case PH_ERR_DOUBLE_ENCODED:
		return "double percent-encoding in path";
	default:
		return "unknown error";
	}
}

void
ph_errf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	errno = saved;
}

void
ph_catf(char *buf, size_t len, const char *fmt, ...)
{
	size_t off = strlen(buf);
	va_list ap;

	va_start(ap, fmt);
	if (off + 1 < len)
		vsnprintf(buf + off, len - off, fmt, ap);
	va_end(ap);
}
