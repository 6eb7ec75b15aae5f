/*
 * htab.h: a small open-addressing hash table from byte-string keys to
 * HTAB_LISTS growable lists of uint32 ids each, the building block of the
 * policy index (exact hosts, wildcard suffixes, CIDR networks, static
 * resolves).  The policy keeps allow, deny and plain-allow ids apart, so
 * a decision can stop early in one list and still see every deny.
 *
 * Keys are only inserted at load time from the trusted policy; look-ups
 * with hostile keys cannot grow it, so no keyed hash is needed.
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

/* Returns the HTAB_LISTS lists of KEY (an array), or NULL. */
const struct htab_list *
htab_find(const struct htab *, const void *key, size_t len);

/* Number of distinct keys. */
size_t htab_count(const struct htab *);

#endif
