/* addr_map.c — the flat address map (see addr_map.h): one open-addressing table per family, the
 * same code for both, told the entry's layout. */
#include "services/xds-agent/core/addr_map.h"

#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/core/probe.h"

#define MIN_CAP 16
#define NONE ((size_t)-1)

/* An entry: the key's bytes at its start, the value at voff. */
struct layout {
	size_t stride, klen, voff;
};

static const struct layout V4 = { 16, 4, 8 };   /* the address's last four bytes, pad, value */
static const struct layout V6 = { 24, 16, 16 }; /* the sixteen bytes, value */

static uint8_t *entry(const struct km_addr_table *t, const struct layout *l, size_t i)
{
	return t->e + i * l->stride;
}

static void **val_of(uint8_t *e, const struct layout *l)
{
	return (void **)(void *)(e + l->voff);
}

/* The home slot: a hash of the key scaled to the array (probe.h). */
static size_t slot_of(const uint8_t *key, const struct layout *l, size_t cap)
{
	uint64_t h;

	if (l->klen == 4) {
		uint32_t x;

		memcpy(&x, key, 4);
		h = (uint64_t)x * 0x9e3779b97f4a7c15ull;
	} else {
		uint64_t w[2];

		memcpy(w, key, 16);
		h = w[0] * 0x9e3779b97f4a7c15ull ^ w[1] * 0xc2b2ae3d27d4eb4full;
	}
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return km_probe_home((uint32_t)(h >> 32), cap);
}

static size_t table_find(const struct km_addr_table *t, const struct layout *l, const uint8_t *key)
{
	if (!t->n)
		return NONE;
	for (size_t i = slot_of(key, l, t->cap);; i = km_probe_next(i, t->cap)) {
		uint8_t *e = entry(t, l, i);

		if (!*val_of(e, l))
			return NONE;
		if (memcmp(e, key, l->klen) == 0)
			return i;
	}
}

/* Move every entry into an array of cap entries. */
static int rehash(struct km_addr_table *t, const struct layout *l, size_t cap)
{
	struct km_addr_table n = { .e = calloc(cap, l->stride), .cap = cap, .n = t->n };

	if (!n.e)
		return -1;
	for (size_t i = 0; i < t->cap; i++) {
		uint8_t *e = entry(t, l, i);
		size_t j;

		if (!*val_of(e, l))
			continue;
		for (j = slot_of(e, l, cap); *val_of(entry(&n, l, j), l); j = km_probe_next(j, cap))
			;
		memcpy(entry(&n, l, j), e, l->stride);
	}
	free(t->e);
	*t = n;
	return 0;
}

static void **table_put(struct km_addr_table *t, const struct layout *l, const uint8_t *key)
{
	size_t i = table_find(t, l, key);

	if (i != NONE)
		return val_of(entry(t, l, i), l);
	/* at most 3/4 full, so a probe ends soon; growing by half leaves it half full */
	if ((t->n + 1) * 4 > t->cap * 3 && rehash(t, l, km_probe_grow(t->cap, MIN_CAP)) != 0)
		return NULL;
	for (i = slot_of(key, l, t->cap); *val_of(entry(t, l, i), l); i = km_probe_next(i, t->cap))
		;
	memcpy(entry(t, l, i), key, l->klen);
	t->n++;
	return val_of(entry(t, l, i), l);
}

static void table_delete(struct km_addr_table *t, const struct layout *l, const uint8_t *key)
{
	size_t hole = table_find(t, l, key);

	if (hole == NONE)
		return;
	/* backward shift: each later entry of the run moves into the hole unless its home slot
	 * lies cyclically after the hole (it would then be found before reaching it) */
	for (size_t j = km_probe_next(hole, t->cap); *val_of(entry(t, l, j), l); j = km_probe_next(j, t->cap)) {
		size_t home = slot_of(entry(t, l, j), l, t->cap);

		if (km_probe_dist(home, j, t->cap) >= km_probe_dist(hole, j, t->cap)) {
			memcpy(entry(t, l, hole), entry(t, l, j), l->stride);
			hole = j;
		}
	}
	memset(entry(t, l, hole), 0, l->stride);
	t->n--;
	/* give memory back after large removals (best effort): to half full again */
	if (t->cap > MIN_CAP && t->n * 4 < t->cap)
		(void)rehash(t, l, t->n * 2 > MIN_CAP ? t->n * 2 : MIN_CAP);
}

/* The table, layout and key bytes addr belongs to. */
static struct km_addr_table *family(const struct km_addr_map *m, const struct km_addr *addr,
				    const struct layout **l, const uint8_t **key)
{
	int v4 = km_addr_is_v4(addr);

	*l = v4 ? &V4 : &V6;
	*key = v4 ? addr->bytes + 12 : addr->bytes;
	return (struct km_addr_table *)(v4 ? &m->v4 : &m->v6);
}

void km_addr_map_init(struct km_addr_map *m)
{
	memset(m, 0, sizeof(*m));
}

void km_addr_map_free(struct km_addr_map *m)
{
	free(m->v4.e);
	free(m->v6.e);
	km_addr_map_init(m);
}

void **km_addr_map_find(const struct km_addr_map *m, const struct km_addr *addr)
{
	const struct layout *l;
	const uint8_t *key;
	struct km_addr_table *t = family(m, addr, &l, &key);
	size_t i = table_find(t, l, key);

	return i == NONE ? NULL : val_of(entry(t, l, i), l);
}

void km_addr_map_prefetch(const struct km_addr_map *m, const struct km_addr *addr)
{
	const struct layout *l;
	const uint8_t *key;
	struct km_addr_table *t = family(m, addr, &l, &key);

	if (t->n)
		__builtin_prefetch(entry(t, l, slot_of(key, l, t->cap)));
}

void **km_addr_map_put(struct km_addr_map *m, const struct km_addr *addr)
{
	const struct layout *l;
	const uint8_t *key;
	struct km_addr_table *t = family(m, addr, &l, &key);
	void **slot = table_put(t, l, key);

	m->n = m->v4.n + m->v6.n;
	return slot;
}

void km_addr_map_delete(struct km_addr_map *m, const struct km_addr *addr)
{
	const struct layout *l;
	const uint8_t *key;
	struct km_addr_table *t = family(m, addr, &l, &key);

	table_delete(t, l, key);
	m->n = m->v4.n + m->v6.n;
}

int km_addr_map_next(const struct km_addr_map *m, size_t *pos, struct km_addr *addr, void **val)
{
	for (; *pos < m->v4.cap + m->v6.cap; (*pos)++) {
		int v4 = *pos < m->v4.cap;
		const struct layout *l = v4 ? &V4 : &V6;
		uint8_t *e = v4 ? entry(&m->v4, l, *pos) : entry(&m->v6, l, *pos - m->v4.cap);

		if (!*val_of(e, l))
			continue;
		memset(addr, 0, sizeof(*addr));
		if (v4) {
			addr->bytes[10] = addr->bytes[11] = 0xff;
			memcpy(addr->bytes + 12, e, 4);
		} else {
			memcpy(addr->bytes, e, 16);
		}
		*val = *val_of(e, l);
		(*pos)++;
		return 1;
	}
	return 0;
}
