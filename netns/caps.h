/*
 * caps.h: giving up privilege for good.  Both halves of `pinhole run` use
 * it: the sandboxed command (root inside its user namespace until then)
 * and the proxy outside, which parses what the sandbox sends.
 */
#ifndef PH_CAPS_H
#define PH_CAPS_H

#include <stddef.h>

/*
 * Drops every capability of the calling process: the bounding and ambient
 * sets (when it may), then effective, permitted and inheritable; locks the
 * securebits so that uid 0 regains nothing at execve; sets no_new_privs.
 * Returns 0, or -1 with a one-line reason in ERR.
 */
int caps_drop_all(char *err, size_t errlen);

/* Returns 1 when the calling process holds any effective capability. */
int caps_any(void);

/*
 * Returns 1 when the file PATH carries capability CAP (CAP_NET_RAW...)
 * as a file capability (its security.capability attribute, permitted or
 * inheritable), 0 when not or when it cannot be read.  For the message
 * of an execve that failed with EPERM: the sandbox never grants file
 * capabilities, and a program marked effective ("cap_net_raw=ep", as
 * iputils ping) then cannot run at all.
 */
int caps_file_has(const char *path, int cap);

#endif /* PH_CAPS_H */
