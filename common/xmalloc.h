/*
 * xmalloc.h: allocators for start-up and configuration code that call
 * fatal() on failure (OpenSSH xmalloc).  The data path must not use them:
 * there, check calloc and close the session instead.
 */
#ifndef PH_XMALLOC_H
#define PH_XMALLOC_H

#include <stddef.h>

void *xmalloc(size_t);
void *xcalloc(size_t, size_t);
void *xreallocarray(void *, size_t, size_t);
char *xstrdup(const char *);
char *xstrndup(const char *, size_t);
/* Returns a newly allocated formatted string. */
char *xasprintf(const char *, ...) __attribute__((format(printf, 1, 2)));

#endif
