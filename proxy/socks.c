/*
 * socks.c: the SOCKS5 wire format (RFC 1928), pure functions on bytes;
 * the handshake on a connection is socksconn.c's.
 */
#include <sys/socket.h>

#include <arpa/inet.h>

#include <string.h>

#include "proxy/socks.h"

int
socks_greeting(const uint8_t *p, size_t n)
{
	size_t i, want;

	if (n < 1)
		return SOCKS_MORE;
	if (p[0] != SOCKS_VERSION)
		return SOCKS_E_VERSION;
	if (n < 2)
		return SOCKS_MORE;
	if (p[1] == 0)
		return SOCKS_E_METHODS;
	want = 2 + (size_t)p[1];
	if (n < want)
		return SOCKS_MORE;
	for (i = 2; i < want; i++)
		if (p[i] == SOCKS_METHOD_NOAUTH)
			return (int)want;
	return SOCKS_E_METHODS;
}

/*
 * The address at P (ATYP's form, whole) into H: an address is written as
 * text and parsed back, so that it is canonical as a policy's (an
 * IPv4-mapped IPv6 address is its IPv4 one).  Returns 0 or SOCKS_E_NAME.
 */
static int
read_host(uint8_t atyp, const uint8_t *p, size_t len, struct target_host *h)
{
	char text[INET6_ADDRSTRLEN];

	if (atyp == SOCKS_ATYP_NAME) {
		if (len == 0 || memchr(p, '\0', len) != NULL ||
		    target_host_parse((const char *)p, len, h) != 0)
			return SOCKS_E_NAME;
		return 0;
	}
	if (inet_ntop(atyp == SOCKS_ATYP_V4 ? AF_INET : AF_INET6, p, text,
	        sizeof(text)) == NULL ||
	    target_host_parse(text, strlen(text), h) != 0)
		return SOCKS_E_NAME;
	return 0;
}

int
socks_request(const uint8_t *p, size_t n, struct socks_request *r)
{
	size_t off, alen;
	int rc;

	memset(r, 0, sizeof(*r));
	if (n >= 1 && p[0] != SOCKS_VERSION)
		return SOCKS_E_VERSION;
	if (n >= 2 && p[1] != SOCKS_CMD_CONNECT)
		return SOCKS_E_COMMAND;
	if (n >= 3 && p[2] != 0)
		return SOCKS_E_RESERVED;
	if (n < 4)
		return SOCKS_MORE;
	off = 4;
	switch (p[3]) {
	case SOCKS_ATYP_V4:
		alen = 4;
		break;
	case SOCKS_ATYP_V6:
		alen = 16;
		break;
	case SOCKS_ATYP_NAME:
		if (n < 5)
			return SOCKS_MORE;
		alen = p[4];
		off = 5;
		if (alen == 0)
			return SOCKS_E_NAME;
		break;
	default:
		return SOCKS_E_ATYP;
	}
	if (n < off + alen + 2)
		return SOCKS_MORE;
	r->cmd = p[1];
	r->atyp = p[3];
	if ((rc = read_host(p[3], p + off, alen, &r->host)) != 0)
		return rc;
	r->port = (uint16_t)(p[off + alen] << 8 | p[off + alen + 1]);
	if (r->port == 0)
		return SOCKS_E_PORT;
	return (int)(off + alen + 2);
}

enum socks_reply
socks_reply_for_error(int err)
{
	switch (err) {
	case SOCKS_E_COMMAND:
		return SOCKS_REP_COMMAND;
	case SOCKS_E_ATYP:
		return SOCKS_REP_ATYP;
	case SOCKS_E_NAME:
		return SOCKS_REP_HOST_UNREACH;
	default:
		return SOCKS_REP_FAILURE;
	}
}

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
