/*
 * htab.c: linear probing over a power-of-two table, FNV-1a hashing, load
 * factor at most 1/2 so that a miss ends after a probe or two.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "common/htab.h"
#include "common/log.h"

struct htab_slot {
	char *key; /* NULL: empty */
	size_t len;
	uint64_t hash;
	struct htab_list list[HTAB_LISTS];
};

struct htab {
	struct htab_slot *slots;
	size_t cap, count;
};

static uint64_t
hash_bytes(const void *key, size_t len)
{
	const unsigned char *p = key;
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h ^ (h >> 29);
}

struct htab *
htab_new(void)
{
	struct htab *t = xcalloc(1, sizeof(*t));

	t->cap = 16;
	t->slots = xcalloc(t->cap, sizeof(*t->slots));
	return t;
}

void
htab_free(struct htab *t)
{
	size_t i, j;

	if (t == NULL)
		return;
	for (i = 0; i < t->cap; i++) {
		free(t->slots[i].key);
		for (j = 0; j < HTAB_LISTS; j++)
			free(t->slots[i].list[j].ids);
	}
	free(t->slots);
	free(t);
}

static struct htab_slot *
probe(const struct htab *t, const void *key, size_t len, uint64_t h)
{
	size_t mask = t->cap - 1, i = h & mask;
	struct htab_slot *s;

	for (;; i = (i + 1) & mask) {
		s = &t->slots[i];
		if (s->key == NULL ||
		    (s->hash == h && s->len == len &&
		        memcmp(s->key, key, len) == 0))
			return s;
	}
}

/* Doubles the table; returns 0, or -1 (T unchanged) when out of memory. */
static int
grow(struct htab *t)
{
	struct htab_slot *old = t->slots, *s;
	size_t oldcap = t->cap, i;

	if ((t->slots = calloc(oldcap * 2, sizeof(*t->slots))) == NULL) {
		t->slots = old;
		return -1;
	}
	t->cap *= 2;
	for (i = 0; i < oldcap; i++) {
		if (old[i].key == NULL)
			continue;
		s = probe(t, old[i].key, old[i].len, old[i].hash);
		*s = old[i];
	}
	free(old);
	return 0;
}

/* Makes room for one more id in L; 0, or -1 when out of memory. */
static int
list_room(struct htab_list *l)
{
	uint32_t *ids;
	uint32_t cap;

	if (l->n < l->cap)
		return 0;
	cap = l->cap ? l->cap * 2 : 2;
	if ((ids = reallocarray(l->ids, cap, sizeof(*ids))) == NULL)
		return -1;
	l->ids = ids;
	l->cap = cap;
	return 0;
}

int
htab_try_add(
    struct htab *t, const void *key, size_t len, unsigned which, uint32_t id)
{
	uint64_t h = hash_bytes(key, len);
	struct htab_slot *s;
	char *k = NULL;

	if ((t->count + 1) * 2 > t->cap && grow(t) != 0)
		return -1;
	s = probe(t, key, len, h);
	if (s->key == NULL && (k = malloc(len + 1)) == NULL)
		return -1;
	if (list_room(&s->list[which]) != 0) {
		free(k);
		return -1;
	}
	if (k != NULL) {
		memcpy(k, key, len);
		k[len] = '\0';
		s->key = k;
		s->len = len;
		s->hash = h;
		t->count++;
	}
	s->list[which].ids[s->list[which].n++] = id;
	return 0;
}

void
htab_add(
    struct htab *t, const void *key, size_t len, unsigned which, uint32_t id)
{
	if (htab_try_add(t, key, len, which, id) != 0) {
		errno = ENOMEM;
		fatal("htab_add: %zu-byte key", len);
	}
}

const struct htab_list *
htab_find(const struct htab *t, const void *key, size_t len)
{
	const struct htab_slot *s = probe(t, key, len, hash_bytes(key, len));

	return s->key != NULL ? s->list : NULL;
}

size_t
htab_count(const struct htab *t)
{
	return t->count;
}
