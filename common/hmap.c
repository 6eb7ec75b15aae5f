/*
 * hmap.c: chained buckets with back-pointers (pprev, as Linux's hlist),
 * so an entry is unlinked without hashing or walking its chain again.
 * Each entry keeps its full hash: a chain walk compares keys only when
 * the hashes agree.
 */
#include <sys/random.h>

#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HMAP_INTERNAL
#include "hmap.h"

struct hmap {
	struct hmap_entry **buckets;
	size_t mask; /* buckets - 1 */
	size_t count;
	uint64_t seed[2];
};

#define ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

static void
sipround(uint64_t v[4])
{
	v[0] += v[1];
	v[1] = ROTL(v[1], 13);
	v[1] ^= v[0];
	v[0] = ROTL(v[0], 32);
	v[2] += v[3];
	v[3] = ROTL(v[3], 16);
	v[3] ^= v[2];
	v[0] += v[3];
	v[3] = ROTL(v[3], 21);
	v[3] ^= v[0];
	v[2] += v[1];
	v[1] = ROTL(v[1], 17);
	v[1] ^= v[2];
	v[2] = ROTL(v[2], 32);
}

static void
sipword(uint64_t v[4], uint64_t m)
{
	v[3] ^= m;
	sipround(v);
	sipround(v);
	v[0] ^= m;
}

/* SipHash-2-4 (Aumasson and Bernstein), K the 128-bit key. */
uint64_t
hmap_siphash(const uint64_t k[2], const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t v[4], m, last;
	size_t i, tail = len & 7;

	v[0] = k[0] ^ 0x736f6d6570736575ULL;
	v[1] = k[1] ^ 0x646f72616e646f6dULL;
	v[2] = k[0] ^ 0x6c7967656e657261ULL;
	v[3] = k[1] ^ 0x7465646279746573ULL;
	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&m, p + i, 8);
		sipword(v, le64toh(m));
	}
	last = (uint64_t)len << 56;
	for (i = 0; i < tail; i++)
		last |= (uint64_t)p[len - tail + i] << (8 * i);
	sipword(v, last);
	v[2] ^= 0xff;
	for (i = 0; i < 4; i++)
		sipround(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

uint64_t
hmap_hash(const struct hmap *m, const void *key, size_t len)
{
	return hmap_siphash(m->seed, key, len);
}

size_t
hmap_bucket_count(const struct hmap *m)
{
	return m->mask + 1;
}

struct hmap *
hmap_new(size_t nbuckets)
{
	struct hmap *m;
	size_t n = 1;

	while (n < nbuckets && n <= SIZE_MAX / 2 / sizeof(*m->buckets))
		n <<= 1;
	if ((m = calloc(1, sizeof(*m))) == NULL ||
	    (m->buckets = calloc(n, sizeof(*m->buckets))) == NULL)
		goto fail;
	m->mask = n - 1;
	/* Only before the kernel's pool is ready (early boot): still varies. */
	if (getrandom(m->seed, sizeof(m->seed), GRND_NONBLOCK) !=
	    (ssize_t)sizeof(m->seed)) {
		m->seed[0] = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
		m->seed[1] = (uint64_t)(uintptr_t)m ^ (uint64_t)clock();
	}
	return m;
fail:
	free(m);
	return NULL;
}

void
hmap_free(struct hmap *m)
{
	if (m == NULL)
		return;
	free(m->buckets);
	free(m);
}

void
hmap_insert(struct hmap *m, struct hmap_entry *e, const void *key, size_t len)
{
	struct hmap_entry **head;

	e->key = key;
	e->len = len;
	e->hash = hmap_hash(m, key, len);
	head = &m->buckets[e->hash & m->mask];
	e->next = *head;
	if (e->next != NULL)
		e->next->pprev = &e->next;
	e->pprev = head;
	*head = e;
	m->count++;
}

struct hmap_entry *
hmap_find(const struct hmap *m, const void *key, size_t len)
{
	uint64_t h = hmap_hash(m, key, len);
	struct hmap_entry *e = m->buckets[h & m->mask];

	while (e != NULL &&
	    (e->hash != h || e->len != len || memcmp(e->key, key, len) != 0))
		e = e->next;
	return e;
}

void
hmap_remove(struct hmap *m, struct hmap_entry *e)
{
	*e->pprev = e->next;
	if (e->next != NULL)
		e->next->pprev = e->pprev;
	e->next = NULL;
	e->pprev = NULL;
	m->count--;
}

size_t
hmap_count(const struct hmap *m)
{
	return m->count;
}

/* The first entry of bucket I or of a later one. */
static struct hmap_entry *
from_bucket(const struct hmap *m, size_t i)
{
	for (; i <= m->mask; i++)
		if (m->buckets[i] != NULL)
			return m->buckets[i];
	return NULL;
}

struct hmap_entry *
hmap_first(const struct hmap *m)
{
	return from_bucket(m, 0);
}

struct hmap_entry *
hmap_next(const struct hmap *m, const struct hmap_entry *e)
{
	if (e->next != NULL)
		return e->next;
	return from_bucket(m, (size_t)(e->hash & m->mask) + 1);
}
