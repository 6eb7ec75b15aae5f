/*
 * hmap.h: a chained hash map with removal, from byte-string keys to
 * entries the caller embeds in its own structs (intrusive, as BSD's
 * queue.h): the map allocates its bucket array once, at creation, and
 * nothing on insert, find or remove.
 *
 * The bucket count is fixed (a power of two) and the hash is SipHash-2-4
 * keyed with a per-map random seed: keys come from the sandbox (DNS
 * names, client addresses), which must not be able to pile them into one
 * chain.
 *
 * Users: proxy/dns.c (the cache and the lookups in flight, dropped as
 * they expire or end), proxy/proxy.c (the clients of the per-client
 * limit) and proxy/ca.c (the leaf cache, oldest evicted).  common/htab.h is the insert-only table of the policy index
 * and the log reader.
 */
#ifndef PH_HMAP_H
#define PH_HMAP_H

#include <stddef.h>
#include <stdint.h>

struct hmap;

/* Embedded in the caller's struct; the key stays the caller's memory. */
struct hmap_entry {
	struct hmap_entry *next;
	struct hmap_entry **pprev;
	const void *key;
	size_t len;
	uint64_t hash;
};

/* The struct of type TYPE whose member FIELD is the entry E (or NULL). */
#define HMAP_ITEM(e, type, field)                                              \
	((e) == NULL ? NULL                                                    \
	             : (type *)(void *)((char *)(e)-offsetof(type, field)))

/*
 * Returns a map of NBUCKETS buckets (rounded up to a power of two), or
 * NULL when out of memory.
 */
struct hmap *hmap_new(size_t nbuckets);

/* Frees the buckets; the entries are the caller's.  NULL does nothing. */
void hmap_free(struct hmap *);

/*
 * Links E under KEY (LEN bytes), which must live as long as E is linked
 * and must not be linked already: look it up first.
 */
void
hmap_insert(struct hmap *, struct hmap_entry *e, const void *key, size_t len);

/* The entry under KEY, or NULL. */
struct hmap_entry *hmap_find(const struct hmap *, const void *key, size_t len);

/* Unlinks E, which is linked in this map. */
void hmap_remove(struct hmap *, struct hmap_entry *e);

/* Number of entries linked. */
size_t hmap_count(const struct hmap *);

/*
 * Iteration in no particular order: hmap_first(), then hmap_next() until
 * NULL.  Take the next entry before removing the current one.
 */
struct hmap_entry *hmap_first(const struct hmap *);
struct hmap_entry *hmap_next(const struct hmap *, const struct hmap_entry *);

#ifdef HMAP_INTERNAL
uint64_t hmap_siphash(const uint64_t k[2], const void *data, size_t len);
uint64_t hmap_hash(const struct hmap *, const void *key, size_t len);
size_t hmap_bucket_count(const struct hmap *);
#endif

#endif
