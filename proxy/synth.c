/*
 * synth.c: the map between names and synthetic addresses (synth.h): two
 * hash maps over the same entries (by name, by index), a list in order
 * of use for eviction, and a cursor that walks the block; one mutex over
 * all of it, since a run's engine with --workers shares one map between
 * its DNS stub and every loop's proxy.
 */
#include <sys/queue.h>
#include <sys/socket.h>

#include <arpa/inet.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/hmap.h"
#include "policy/target.h"
#include "proxy/synth.h"

/* Indexes 1 .. SPAN-2: the block less its first and last address. */
#define SPAN (1u << (32 - SYNTH_V4_PREFIX))
#define BUCKETS 8192

struct sentry {
	struct hmap_entry by_name, by_index;
	TAILQ_ENTRY(sentry) use; /* least recently used first */
	uint32_t index; /* network order: the by_index key */
	char name[TARGET_HOST_MAX];
};

TAILQ_HEAD(sentry_list, sentry);

struct synth {
	pthread_mutex_t lock; /* everything below */
	struct hmap *names, *indexes;
	struct sentry_list use;
	size_t n;
	uint32_t cursor; /* the last index handed out */
};

struct synth *
synth_new(void)
{
	struct synth *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	pthread_mutex_init(&s->lock, NULL);
	TAILQ_INIT(&s->use);
	s->names = hmap_new(BUCKETS);
	s->indexes = hmap_new(BUCKETS);
	if (s->names == NULL || s->indexes == NULL) {
		synth_free(s);
		return NULL;
	}
	return s;
}

void
synth_free(struct synth *s)
{
	struct sentry *e;

	if (s == NULL)
		return;
	while ((e = TAILQ_FIRST(&s->use)) != NULL) {
		TAILQ_REMOVE(&s->use, e, use);
		free(e);
	}
	hmap_free(s->names);
	hmap_free(s->indexes);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static void
touch(struct synth *s, struct sentry *e)
{
	TAILQ_REMOVE(&s->use, e, use);
	TAILQ_INSERT_TAIL(&s->use, e, use);
}

static void
addresses(uint32_t index, uint8_t v4[4], uint8_t v6[16])
{
	uint32_t a = htonl(SYNTH_V4_NET | index);

	memcpy(v4, &a, 4);
	memset(v6, 0, 16);
	memcpy(v6, SYNTH_V6_NET, 6);
	/* The same index in the last 24 bits. */
	v6[13] = (uint8_t)(index >> 16);
	v6[14] = (uint8_t)(index >> 8);
	v6[15] = (uint8_t)index;
}

/* The next free index after the cursor; entries in use are skipped. */
static uint32_t
next_index(struct synth *s)
{
	uint32_t key;

	/* At most SYNTH_MAX indexes are in use, so this ends. */
	for (;;) {
		s->cursor = s->cursor + 1 >= SPAN - 1 ? 1 : s->cursor + 1;
		key = htonl(s->cursor);
		if (hmap_find(s->indexes, &key, sizeof(key)) == NULL)
			return s->cursor;
	}
}

/* A fresh entry: a new one, or the least recently used, unlinked. */
static struct sentry *
fresh(struct synth *s)
{
	struct sentry *e;

	if (s->n < SYNTH_MAX) {
		if ((e = calloc(1, sizeof(*e))) != NULL)
			s->n++;
		return e;
	}
	e = TAILQ_FIRST(&s->use);
	TAILQ_REMOVE(&s->use, e, use);
	hmap_remove(s->names, &e->by_name);
	hmap_remove(s->indexes, &e->by_index);
	return e;
}

/* NAME (LEN bytes) mapped, or found, and marked used; NULL: no memory. */
static struct sentry *
map_locked(struct synth *s, const char *name, size_t len)
{
	struct hmap_entry *he;
	struct sentry *e;

	if ((he = hmap_find(s->names, name, len)) != NULL) {
		e = HMAP_ITEM(he, struct sentry, by_name);
		touch(s, e);
	} else if ((e = fresh(s)) != NULL) {
		memcpy(e->name, name, len + 1);
		e->index = htonl(next_index(s));
		hmap_insert(s->names, &e->by_name, e->name, len);
		hmap_insert(
		    s->indexes, &e->by_index, &e->index, sizeof(e->index));
		TAILQ_INSERT_TAIL(&s->use, e, use);
	}
	return e;
}

int
synth_map(struct synth *s, const char *name, uint8_t v4[4], uint8_t v6[16])
{
	struct sentry *e;
	size_t len = strlen(name);
	uint32_t index = 0;

	if (len >= TARGET_HOST_MAX)
		return -1;
	pthread_mutex_lock(&s->lock);
	if ((e = map_locked(s, name, len)) != NULL)
		index = ntohl(e->index);
	pthread_mutex_unlock(&s->lock);
	if (index == 0)
		return -1;
	addresses(index, v4, v6);
	return 0;
}

/* The index of synthetic ADDR, or 0 when it is not one. */
static uint32_t
index_of(int family, const uint8_t *addr)
{
	static const uint8_t mapped[12] = {
	    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	uint32_t a, i;

	if (family == AF_INET6 && memcmp(addr, mapped, 12) == 0)
		return index_of(AF_INET, addr + 12);
	if (family == AF_INET6) {
		if (memcmp(addr, SYNTH_V6_NET, 6) != 0 ||
		    memcmp(addr + 6, "\0\0\0\0\0\0", 6) != 0 || addr[12] != 0)
			return 0;
		i = (uint32_t)addr[13] << 16 | (uint32_t)addr[14] << 8 |
		    addr[15];
	} else if (family == AF_INET) {
		memcpy(&a, addr, 4);
		a = ntohl(a);
		if ((a & ~(SPAN - 1)) != SYNTH_V4_NET)
			return 0;
		i = a & (SPAN - 1);
	} else
		return 0;
	return i >= 1 && i < SPAN - 1 ? i : 0;
}

int
synth_is_synthetic(int family, const uint8_t *addr)
{
	static const uint8_t mapped[12] = {
	    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	uint32_t a;

	/* The whole block counts, its first and last address too. */
	if (family == AF_INET6 && memcmp(addr, mapped, 12) == 0)
		return synth_is_synthetic(AF_INET, addr + 12);
	if (family == AF_INET6)
		return memcmp(addr, SYNTH_V6_NET, 6) == 0;
	if (family != AF_INET)
		return 0;
	memcpy(&a, addr, 4);
	return (ntohl(a) & ~(SPAN - 1)) == SYNTH_V4_NET;
}

int
synth_name(
    struct synth *s, int family, const uint8_t *addr, char *name, size_t len)
{
	struct hmap_entry *he;
	struct sentry *e;
	uint32_t key = htonl(index_of(family, addr));
	int r = -1;

	pthread_mutex_lock(&s->lock);
	if (key != 0 &&
	    (he = hmap_find(s->indexes, &key, sizeof(key))) != NULL) {
		e = HMAP_ITEM(he, struct sentry, by_index);
		touch(s, e);
		/* Copied under the lock: another thread's map may reuse it. */
		if (strlen(e->name) < len) {
			memcpy(name, e->name, strlen(e->name) + 1);
			r = 0;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

size_t
synth_count(struct synth *s)
{
	size_t n;

	pthread_mutex_lock(&s->lock);
	n = hmap_count(s->names);
	pthread_mutex_unlock(&s->lock);
	return n;
}
