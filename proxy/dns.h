/*
 * dns.h: asynchronous name resolution with c-ares inside the libevent
 * loop: no blocking resolver, no thread per lookup.  A and AAAA are asked
 * together; answers are cached for their TTL (bounded), failures briefly.
 */
#ifndef PH_DNS_H
#define PH_DNS_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct dns;
struct dns_query;

#define DNS_ADDRS_MAX 16

struct dns_addr {
	int family; /* 4 or 6 */
	uint8_t addr[16]; /* 4 or 16 bytes used */
};

enum dns_status {
	DNS_OK = 0,
	DNS_NXDOMAIN, /* the name does not exist */
	DNS_NODATA, /* the name has no A or AAAA record */
	DNS_TIMEOUT, /* no server answered in time */
	DNS_REFUSED, /* servers refused or failed (SERVFAIL...) */
	DNS_ERROR, /* anything else */
};

/*
 * Called once per query, never from inside dns_resolve() (a cache hit is
 * delivered from the event loop too).  ADDRS: IPv4 first, then IPv6, at
 * most DNS_ADDRS_MAX.
 */
typedef void
dns_cb(void *arg, enum dns_status, const struct dns_addr *addrs, size_t n);

/*
 * Creates a resolver on BASE.  SERVERS is NULL for the system's
 * resolv.conf, or a c-ares server list ("127.0.0.1:5353,[::1]:53").
 * TIMEOUT_MS bounds a whole lookup.  Returns NULL with ERR filled.
 */
struct dns *dns_new(struct event_base *base, const char *servers,
    unsigned timeout_ms, char *err, size_t errlen);

/* Cancels every pending query (without callbacks) and frees.  NULL ok. */
void dns_free(struct dns *);

/*
 * Resolves HOST (a name; addresses are the caller's business).  Returns a
 * handle valid until the callback runs or dns_cancel(), or NULL on
 * allocation failure.
 */
struct dns_query *
dns_resolve(struct dns *, const char *host, dns_cb *cb, void *arg);

/* Cancels Q: its callback will not run. */
void dns_cancel(struct dns_query *q);

/* Returns a short reason for a status: "no such domain (NXDOMAIN)", ... */
const char *dns_strerror(enum dns_status);

#ifdef DNS_INTERNAL
/* For tests: c-ares lookups started so far, and cached names now. */
unsigned long dns_lookup_count(const struct dns *);
size_t dns_cache_count(const struct dns *);
#endif

#endif
