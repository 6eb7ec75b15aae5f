/*
 * htab.h: a small open-addressing hash table from byte-string keys to
 * HTAB_LISTS growable lists of uint32 ids each.  Insert-only: keys are
 * never removed, the table is freed whole.
 *
 * Users: the policy index (exact hosts, wildcard suffixes, CIDR networks,
 * static resolves), which keeps allow, deny and plain-allow ids apart, so
 * a decision can stop early in one list and still see every deny; and
 * the tables of the log reader (audit/logview.c), one id per key, the
 * index of its entry.  Tables whose entries must go again (proxy/dns.c's
 * cache and lookups, proxy/proxy.c's clients, proxy/ca.c's leaves) use
 * common/hmap.h.
 *
 * The policy inserts keys at load time from the trusted policy; the log
 * reader inserts at most LOGVIEW_KEYS_MAX keys per table from a log the
 * reviewer chose, as its own FNV-1a table did before, so no keyed hash is
 * needed.  Look-ups with hostile keys cannot grow it.
 */
#ifndef PH_HTAB_H
#define PH_HTAB_H

#include <stddef.h>
#include <stdint.h>

struct htab;

#define HTAB_LISTS 3

struct htab_list {
	uint32_t *ids;
	uint32_t n, cap;
};

/* Returns a new table; never NULL (fatal on ENOMEM). */
struct htab *htab_new(void);

/* Frees the table, its keys and lists.  NULL does nothing. */
void htab_free(struct htab *);

/* Appends ID to list WHICH (< HTAB_LISTS) of KEY, creating the entry. */
void htab_add(
    struct htab *, const void *key, size_t len, unsigned which, uint32_t id);

/*
 * htab_add() for data read at run time (the log reader): returns 0, or -1
 * when out of memory, and the table still holds what it held before.
 */
int htab_try_add(
    struct htab *, const void *key, size_t len, unsigned which, uint32_t id);

/* Returns the HTAB_LISTS lists of KEY (an array), or NULL. */
const struct htab_list *
htab_find(const struct htab *, const void *key, size_t len);

/* Number of distinct keys. */
size_t htab_count(const struct htab *);

#endif
