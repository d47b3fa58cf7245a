/* strpool.c — interned strings (see strpool.h): entries found by an open-addressing index of
 * their hashes; a string's entry is found from the string itself when it is released. */
#include "services/xds-agent/core/strpool.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	uint32_t refs;
	uint32_t hash;
	size_t len;
	char s[];
};

static struct {
	struct entry **slots; /* NULL: free */
	size_t cap;           /* 0 or a power of two */
	size_t n, bytes;
} pool;

static uint32_t hash_of(const char *s, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++) {
		h ^= (uint8_t)s[i];
		h *= 16777619u;
	}
	return h;
}

static size_t find_slot(const char *s, size_t len, uint32_t h)
{
	size_t i = h & (pool.cap - 1);

	while (pool.slots[i] && !(pool.slots[i]->hash == h && pool.slots[i]->len == len &&
				  memcmp(pool.slots[i]->s, s, len) == 0))
		i = (i + 1) & (pool.cap - 1);
	return i;
}

static int grow(void)
{
	size_t cap = pool.cap ? pool.cap * 2 : 256;
	struct entry **slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -1;
	for (size_t i = 0; i < pool.cap; i++) {
		struct entry *e = pool.slots[i];
		size_t j;

		if (!e)
			continue;
		for (j = e->hash & (cap - 1); slots[j]; j = (j + 1) & (cap - 1))
			;
		slots[j] = e;
	}
	free(pool.slots);
	pool.bytes += (cap - pool.cap) * sizeof(*slots);
	pool.slots = slots;
	pool.cap = cap;
	return 0;
}

const char *km_str_intern(const char *s)
{
	size_t len = strlen(s), i;
	uint32_t h = hash_of(s, len);
	struct entry *e;

	if ((pool.n + 1) * 4 > pool.cap * 3 && grow() != 0)
		return NULL;
	i = find_slot(s, len, h);
	if ((e = pool.slots[i])) {
		e->refs++;
		return e->s;
	}
	if (!(e = malloc(sizeof(*e) + len + 1)))
		return NULL;
	e->refs = 1;
	e->hash = h;
	e->len = len;
	memcpy(e->s, s, len + 1);
	pool.slots[i] = e;
	pool.n++;
	pool.bytes += sizeof(*e) + len + 1;
	return e->s;
}

void km_str_release(const char *s)
{
	struct entry *e;
	size_t hole;

	if (!s)
		return;
	e = (struct entry *)(s - offsetof(struct entry, s));
	if (--e->refs)
		return;
	hole = find_slot(e->s, e->len, e->hash);
	/* backward shift: later entries of the run whose home is not after the hole move up */
	for (size_t j = (hole + 1) & (pool.cap - 1); pool.slots[j]; j = (j + 1) & (pool.cap - 1)) {
		size_t home = pool.slots[j]->hash & (pool.cap - 1);

		if (((j - home) & (pool.cap - 1)) >= ((j - hole) & (pool.cap - 1))) {
			pool.slots[hole] = pool.slots[j];
			hole = j;
		}
	}
	pool.slots[hole] = NULL;
	pool.n--;
	pool.bytes -= sizeof(*e) + e->len + 1;
	free(e);
	if (pool.n == 0) { /* nothing left: no index either (tests check for leaks) */
		pool.bytes -= pool.cap * sizeof(*pool.slots);
		free(pool.slots);
		pool.slots = NULL;
		pool.cap = 0;
	}
}

size_t km_str_pool_count(void)
{
	return pool.n;
}

size_t km_str_pool_bytes(void)
{
	return pool.bytes;
}
