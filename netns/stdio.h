/*
 * stdio.h: what pinhole run lets through as the command's standard
 * input, output and error.  Descriptors 0-2 are the only ones that reach
 * the sandbox; a directory there (`pinhole run ... < /`) would let
 * openat(0, ...) read the host's tree around the mount view.
 */
#ifndef PH_STDIO_H
#define PH_STDIO_H

#include <stddef.h>

/*
 * Checks descriptors 0, 1 and 2 of the calling process, first thing in
 * pinhole run: a closed one becomes /dev/null (so nothing pinhole opens
 * later lands there); a terminal, a pipe, a socket, a regular file and
 * /dev/null, zero, full, random and urandom pass; anything else (a
 * directory, an O_PATH descriptor, another device) is refused.  Returns
 * 0, or -1 with which descriptor and why in ERR.
 */
int stdio_check(char *err, size_t errlen);

#endif /* PH_STDIO_H */
