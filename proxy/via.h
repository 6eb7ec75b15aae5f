/*
 * via.h: how a connection reached the proxy, which its audit records say
 * ("via").  Apart from proxy.h so that the session layer, below proxy.c,
 * can carry it without including the module above it.
 */
#ifndef PH_VIA_H
#define PH_VIA_H

/* How a listener's connections arrive; audit records say so ("via"). */
enum proxy_via {
	PROXY_VIA_PROXY, /* an HTTP proxy client: CONNECT or absolute URLs */
	PROXY_VIA_SOCKS, /* a SOCKS5 client (socks.h) */
	PROXY_VIA_CAPTURE, /* a connection captured in the sandbox: its
	                      destination is the socket's own address */
};

#endif /* PH_VIA_H */
