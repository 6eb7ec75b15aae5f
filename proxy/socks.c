/*
 * socks.c: the SOCKS5 wire format (RFC 1928), pure functions on bytes;
 * the handshake on a connection is socksconn.c's.
 */
#include <sys/socket.h>

#include <string.h>

#include "proxy/socks.h"

enum socks_reply
socks_reply_for_status(int status, int refused)
{
	switch (status) {
	case 200:
		return SOCKS_REP_OK;
	case 403:
		return SOCKS_REP_NOT_ALLOWED;
	case 502:
		return refused ? SOCKS_REP_REFUSED : SOCKS_REP_HOST_UNREACH;
	case 504:
		return SOCKS_REP_TTL;
	default:
		return SOCKS_REP_FAILURE;
	}
}

size_t
socks_reply(enum socks_reply code, int family, const uint8_t *addr,
    uint16_t port, uint8_t out[SOCKS_REPLY_MAX])
{
	size_t alen = family == AF_INET6 ? 16 : 4;

	out[0] = SOCKS_VERSION;
	out[1] = (uint8_t)code;
	out[2] = 0;
	out[3] = family == AF_INET6 ? SOCKS_ATYP_V6 : SOCKS_ATYP_V4;
	if (family == AF_INET || family == AF_INET6)
		memcpy(out + 4, addr, alen);
	else {
		memset(out + 4, 0, alen);
		port = 0;
	}
	out[4 + alen] = (uint8_t)(port >> 8);
	out[5 + alen] = (uint8_t)port;
	return 6 + alen;
}

const char *
socks_reply_name(enum socks_reply code)
{
	switch (code) {
	case SOCKS_REP_OK:
		return "succeeded";
	case SOCKS_REP_FAILURE:
		return "general SOCKS server failure";
	case SOCKS_REP_NOT_ALLOWED:
		return "connection not allowed by ruleset";
	case SOCKS_REP_NET_UNREACH:
		return "network unreachable";
	case SOCKS_REP_HOST_UNREACH:
		return "host unreachable";
	case SOCKS_REP_REFUSED:
		return "connection refused";
	case SOCKS_REP_TTL:
		return "TTL expired";
	case SOCKS_REP_COMMAND:
		return "command not supported";
	case SOCKS_REP_ATYP:
		return "address type not supported";
	default:
		return "unassigned";
	}
}
