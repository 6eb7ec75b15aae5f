/*
 * ph_err.h: error codes of library-style modules (policy, parser, secrets),
 * as OpenSSH's ssherr.h.  Functions return 0 or a negative PH_ERR_* code and
 * callers test "if ((r = f()) != 0)".
 */
#ifndef PH_ERR_H
#define PH_ERR_H

#include <stddef.h>

#define PH_ERR_SUCCESS 0
#define PH_ERR_INTERNAL -1 /* broken invariant */
#define PH_ERR_ALLOC -2 /* out of memory */
#define PH_ERR_INVALID -3 /* malformed input */
#define PH_ERR_TOO_LONG -4 /* input longer than allowed */
#define PH_ERR_NOT_FOUND -5 /* no such name, file or entry */
#define PH_ERR_EXISTS -6 /* defined twice */
#define PH_ERR_NON_ASCII -7 /* non-ASCII (IDN) host name */
#define PH_ERR_PERM -8 /* unsafe permissions or ownership */
#define PH_ERR_SYSTEM -9 /* system call failed, see errno */
#define PH_ERR_POLICY -10 /* policy has errors (diagnostics say which) */
#define PH_ERR_TIMEOUT -11 /* operation timed out */
#define PH_ERR_ENCODED_SLASH -12 /* %2F or %5C in a path */
#define PH_ERR_NUL -13 /* NUL or control character */
#define PH_ERR_PORT -14 /* port missing or out of range */
#define PH_ERR_DOT_PARAM -15 /* "..;": ';' on a '.', '..' or empty segment */
#define PH_ERR_BAD_UTF8 -16 /* overlong or invalid UTF-8 (%C0%AE) */
#define PH_ERR_DOUBLE_ENCODED -17 /* %25 then two hex digits (%252e) */

/* Returns a static description of a PH_ERR_* code. */
const char *ph_err(int);

/*
 * Writes a one-line reason into BUF (LEN bytes), printf-style, for the
 * modules that return -1 and a message; errno is left as it was.
 */
void ph_errf(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends to the string in BUF (LEN bytes), cutting what does not fit. */
void ph_catf(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
