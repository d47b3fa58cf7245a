/* addr_map.c — the flat address map (see addr_map.h). */
#include "services/xds-agent/core/addr_map.h"

#include <stdlib.h>
#include <string.h>

#define MIN_CAP 16

/* The home slot: a 32-bit hash scaled to [0, cap) by a multiply (cap need not be a power of two,
 * so the array grows by half and sits between 1/2 and 3/4 full, not 3/8 and 3/4). */
static size_t slot_of(const struct km_addr *a, size_t cap)
{
	uint64_t h = ((uint64_t)a->words[0] << 32 | a->words[1]) * 0x9e3779b97f4a7c15ull;

	h ^= ((uint64_t)a->words[2] << 32 | a->words[3]) * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return (size_t)(((h >> 32) * (uint64_t)cap) >> 32);
}

static size_t step(size_t i, size_t cap)
{
	return i + 1 == cap ? 0 : i + 1;
}

/* How far slot j is past slot from, going forward around the array. */
static size_t dist(size_t from, size_t j, size_t cap)
{
	return j >= from ? j - from : j + cap - from;
}

static int same(const struct km_addr *a, const struct km_addr *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

void km_addr_map_init(struct km_addr_map *m)
{
	memset(m, 0, sizeof(*m));
}

void km_addr_map_free(struct km_addr_map *m)
{
	free(m->e);
	km_addr_map_init(m);
}

struct km_addr_map_entry *km_addr_map_find(const struct km_addr_map *m, const struct km_addr *addr)
{
	if (!m->n)
		return NULL;
	for (size_t i = slot_of(addr, m->cap);; i = step(i, m->cap)) {
		struct km_addr_map_entry *e = &m->e[i];

		if (!e->val)
			return NULL;
		if (same(&e->addr, addr))
			return e;
	}
}

/* Move every entry into an array of cap entries. */
static int rehash(struct km_addr_map *m, size_t cap)
{
	struct km_addr_map_entry *e = calloc(cap, sizeof(*e));

	if (!e)
		return -1;
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->e[i].val)
			continue;
		for (j = slot_of(&m->e[i].addr, cap); e[j].val; j = step(j, cap))
			;
		e[j] = m->e[i];
	}
	free(m->e);
	m->e = e;
	m->cap = cap;
	return 0;
}

struct km_addr_map_entry *km_addr_map_put(struct km_addr_map *m, const struct km_addr *addr)
{
	struct km_addr_map_entry *e = km_addr_map_find(m, addr);
	size_t i;

	if (e)
		return e;
	/* at most 3/4 full, so a probe ends soon; growing by half leaves it half full */
	if ((m->n + 1) * 4 > m->cap * 3 && rehash(m, m->cap ? m->cap + m->cap / 2 : MIN_CAP) != 0)
		return NULL;
	for (i = slot_of(addr, m->cap); m->e[i].val; i = step(i, m->cap))
		;
	e = &m->e[i];
	e->addr = *addr;
	m->n++;
	return e;
}

void km_addr_map_delete(struct km_addr_map *m, struct km_addr_map_entry *e)
{
	size_t hole = (size_t)(e - m->e);

	/* backward shift: each later entry of the run moves into the hole unless its home slot
	 * lies cyclically after the hole (it would then be found before reaching it) */
	for (size_t j = step(hole, m->cap); m->e[j].val; j = step(j, m->cap)) {
		size_t home = slot_of(&m->e[j].addr, m->cap);

		if (dist(home, j, m->cap) >= dist(hole, j, m->cap)) {
			m->e[hole] = m->e[j];
			hole = j;
		}
	}
	memset(&m->e[hole], 0, sizeof(m->e[hole]));
	m->n--;
	/* give memory back after large removals (best effort): to half full again */
	if (m->cap > MIN_CAP && m->n * 4 < m->cap) {
		size_t cap = m->n * 2 > MIN_CAP ? m->n * 2 : MIN_CAP;

		(void)rehash(m, cap);
	}
}

struct km_addr_map_entry *km_addr_map_next(const struct km_addr_map *m,
					   const struct km_addr_map_entry *prev)
{
	for (size_t i = prev ? (size_t)(prev - m->e) + 1 : 0; i < m->cap; i++)
		if (m->e[i].val)
			return &m->e[i];
	return NULL;
}
