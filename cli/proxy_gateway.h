/*
 * proxy_gateway.h: `pinhole proxy -p GATEWAY.conf --listen ADDR` when
 * the one configuration has `broker` blocks (grant.h): one engine per
 * policy the blocks name, all on one event loop, and the gate in front
 * (proxy/gate.h) that maps each client to its policy by its address or
 * its proxy login.
 */
#ifndef PH_PROXY_GATEWAY_H
#define PH_PROXY_GATEWAY_H

#include <stdint.h>

struct engine_load;

/* The options of `pinhole proxy` a gateway uses (cmd_proxy.c's). */
struct proxy_gateway_opts {
	const char *listen; /* HTTP proxy clients, or NULL */
	const char *socks; /* SOCKS5 clients (by address only), or NULL */
	const char *metrics; /* shared by every policy's engine, or NULL */
	const char *log; /* --log: the gateway's and the default one */
	const char *dns;
	uint64_t log_limit, head_memory, buffer_memory;
	unsigned max_sessions; /* per policy */
	long max_per_client;
	unsigned grace_ms;
};

/* Does L, the one -p file loaded, configure a gateway (broker blocks)? */
int proxy_gateway_is(const struct engine_load *l);

/*
 * Runs the gateway on L (taken over: its grants, its secrets -- the
 * logins' passwords -- and its log, where refusals go), loaded with LC
 * (borrowed; a SIGHUP loads it again), until SIGTERM or SIGINT.  Returns
 * the exit status of pinhole proxy.
 */
struct engine_load_config;
int proxy_gateway_run(const struct proxy_gateway_opts *o,
    const struct engine_load_config *lc, struct engine_load *l);

#endif
