/*
 * socks.h: the SOCKS5 wire format (RFC 1928), as pinhole speaks it on the
 * listener made inside the sandbox (ALL_PROXY=socks5h://127.0.0.1:1080):
 * no authentication, CONNECT only (BIND and UDP ASSOCIATE are refused
 * with "command not supported"), to a domain name, an IPv4 or an IPv6
 * address.  Pure functions on bytes: the handshake on a connection is
 * front.c's.
 *
 * Everything here reads what the sandbox sends, so it is strict: a field
 * that is not as the RFC says is an error, never guessed at; a domain
 * name must be a host name as the policy reads them (target_host_parse).
 */
#ifndef PH_SOCKS_H
#define PH_SOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "policy/target.h"

#define SOCKS_PORT 1080
#define SOCKS_VERSION 5
#define SOCKS_METHOD_NOAUTH 0x00
#define SOCKS_METHOD_NONE 0xff /* no acceptable method */
/* The longest request: 4 + 1 + 255 + 2 bytes. */
#define SOCKS_REQUEST_MAX 262
/* The longest reply: an IPv6 bound address. */
#define SOCKS_REPLY_MAX 22

/* Reply codes (RFC 1928 section 6). */
enum socks_reply {
	SOCKS_REP_OK = 0,
	SOCKS_REP_FAILURE = 1, /* general SOCKS server failure */
	SOCKS_REP_NOT_ALLOWED = 2, /* connection not allowed by ruleset */
	SOCKS_REP_NET_UNREACH = 3,
	SOCKS_REP_HOST_UNREACH = 4,
	SOCKS_REP_REFUSED = 5,
	SOCKS_REP_TTL = 6, /* TTL expired: used for a connect timeout */
	SOCKS_REP_COMMAND = 7, /* command not supported */
	SOCKS_REP_ATYP = 8, /* address type not supported */
};

/* Commands and address types. */
#define SOCKS_CMD_CONNECT 1
#define SOCKS_CMD_BIND 2
#define SOCKS_CMD_UDP 3
#define SOCKS_ATYP_V4 1
#define SOCKS_ATYP_NAME 3
#define SOCKS_ATYP_V6 4

/* What the parsers found wrong; SOCKS_MORE: not enough bytes yet. */
enum socks_err {
	SOCKS_MORE = 0,
	SOCKS_E_VERSION = -1, /* not 5 */
	SOCKS_E_METHODS = -2, /* no method, or no "no authentication" */
	SOCKS_E_COMMAND = -3, /* BIND, UDP ASSOCIATE or unknown */
	SOCKS_E_ATYP = -4, /* an address type not 1, 3 or 4 */
	SOCKS_E_NAME = -5, /* empty, or not a host name */
	SOCKS_E_PORT = -6, /* port 0 */
	SOCKS_E_RESERVED = -7, /* the reserved byte not 0 */
};

/*
 * Reads the greeting (VER NMETHODS METHODS...) from the N bytes at P.
 * Returns how many bytes it took (> 0) when it is whole and offers "no
 * authentication", SOCKS_MORE when more bytes are needed, or a
 * SOCKS_E_* code (SOCKS_E_METHODS: answer SOCKS_METHOD_NONE and close).
 */
int socks_greeting(const uint8_t *p, size_t n);

/* One CONNECT request. */
struct socks_request {
	uint8_t cmd, atyp;
	struct target_host host; /* a name, canonical, or an address */
	uint16_t port;
};

/*
 * Reads the request (VER CMD RSV ATYP DST.ADDR DST.PORT) from the N bytes
 * at P into R.  Returns how many bytes it took (> 0), SOCKS_MORE, or a
 * SOCKS_E_* code; then socks_reply_for_error() is the code to answer.
 */
int socks_request(const uint8_t *p, size_t n, struct socks_request *r);

/* The reply code for a SOCKS_E_* code of socks_request(). */
enum socks_reply socks_reply_for_error(int err);

/*
 * The reply code for what the proxy would have answered a CONNECT with:
 * STATUS 200 OK, 403 not allowed, 502 host unreachable, or refused when
 * REFUSED is set (the upstream answered a reset), 504 TTL expired, any
 * other general failure.
 */
enum socks_reply socks_reply_for_status(int status, int refused);

/*
 * Writes the reply CODE with bound address FAMILY/ADDR/PORT (AF_INET or
 * AF_INET6; 0.0.0.0:0 when FAMILY is 0) to OUT.  Returns its length.
 */
size_t socks_reply(enum socks_reply code, int family, const uint8_t *addr,
    uint16_t port, uint8_t out[SOCKS_REPLY_MAX]);

/* The reply code as words ("connection not allowed by ruleset"). */
const char *socks_reply_name(enum socks_reply);

#endif /* PH_SOCKS_H */
