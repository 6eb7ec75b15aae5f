/*
 * socksconn.h: the SOCKS5 front, the handshake on a session that arrived
 * by a SOCKS listener (via "socks").  Internal to proxy/.
 *
 * The greeting and the request (socks.c reads them) are read under the
 * policy's head timeout, at most SOCKS_REQUEST_MAX bytes held at once;
 * "no authentication" is the only method.  The request's target -- a
 * synthetic address of the DNS stub (synth.h) mapped back to its name --
 * is then decided and served as a CONNECT (request_connect), whose
 * answers session.c gives in SOCKS: the success reply (bound address
 * 0.0.0.0:0) where the 200 would go, a refusal's reply code then close.
 */
#ifndef PH_SOCKSCONN_H
#define PH_SOCKSCONN_H

#include <stdint.h>

struct session;
struct session_ctx;

/*
 * Starts a SOCKS session on accepted socket FD, connection number CONN,
 * and waits for its greeting.  Returns NULL (FD closed) when out of
 * memory.
 */
struct session *socksconn_new(struct session_ctx *, int fd, uint64_t conn);

#endif /* PH_SOCKSCONN_H */
