/*
 * synth.h: the synthetic addresses the sandbox's DNS stub answers with.
 *
 * Capture (issue 12) lets a program that ignores the proxy variables
 * resolve and connect by itself.  Its lookups never leave the sandbox:
 * the stub (dnsstub.c) answers a name the policy may allow with an
 * address of a reserved block, mapped here, and the proxy maps the
 * destination of a captured connection back to the name (capture in
 * front.c, and SOCKS clients that resolved first), so decisions, SNI
 * checks, interception and the log work on the name, exactly as for a
 * CONNECT.
 *
 * The blocks are the benchmarking ranges, which no real host uses and
 * which never leave the sandbox's namespace anyway: 198.18.0.0/15 (RFC
 * 2544) and 2001:2::/48 (RFC 5180).  One index gives a name both its
 * IPv4 and its IPv6 address.  At most SYNTH_MAX names are mapped at
 * once; past that the least recently used is forgotten, and indexes are
 * handed out in turn through the whole block, so an address comes back
 * for another name only after the block has gone round: a flood of
 * random names costs bounded memory and cannot point a name a program
 * still holds at another host quickly.  A forgotten address is refused
 * (synth_name() fails), never guessed.
 *
 * Threads: a run's engine with --workers shares one map between its DNS
 * stub (loop 0) and the proxies of every loop.  Each call takes the
 * map's mutex for one look-up or one mapping (a stub's answer, a
 * captured or SOCKS connection to a synthetic address: never a request
 * on a connection), and a name is copied out under it.
 */
#ifndef PH_SYNTH_H
#define PH_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#define SYNTH_V4_NET 0xc6120000u /* 198.18.0.0 */
#define SYNTH_V4_PREFIX 15
/* 2001:2::/48: the first 6 bytes. */
#define SYNTH_V6_NET "\x20\x01\x00\x02\x00\x00"
#define SYNTH_V6_PREFIX 48
/* Names mapped at once. */
#define SYNTH_MAX 4096
/* The TTL of the stub's answers, seconds. */
#define SYNTH_TTL 60

struct synth;

/* An empty map, or NULL when out of memory. */
struct synth *synth_new(void);

/* Frees the map.  NULL does nothing. */
void synth_free(struct synth *);

/*
 * Maps NAME (canonical: lower case, no trailing dot, as target_host_parse
 * gives it), or finds its mapping, and marks it used.  Writes its IPv4
 * address to V4 and its IPv6 address to V6 (network order).  Returns 0,
 * or -1 when out of memory.
 */
int synth_map(struct synth *, const char *name, uint8_t v4[4], uint8_t v6[16]);

/*
 * Is ADDR, of FAMILY (AF_INET: 4 bytes, AF_INET6: 16 bytes; an
 * IPv4-mapped IPv6 address counts as its IPv4 one), in a synthetic block?
 */
int synth_is_synthetic(int family, const uint8_t *addr);

/*
 * Copies the name synthetic address ADDR (as for synth_is_synthetic)
 * stands for into NAME (LEN bytes; TARGET_HOST_MAX holds any), marked
 * used.  Returns 0, or -1 when ADDR is not synthetic or no longer mapped
 * (or LEN is too small).
 */
int synth_name(
    struct synth *, int family, const uint8_t *addr, char *name, size_t len);

/* Names mapped now. */
size_t synth_count(struct synth *);

#endif /* PH_SYNTH_H */
