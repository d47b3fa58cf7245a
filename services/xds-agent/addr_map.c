/* addr_map.c — the flat address map (see addr_map.h). */
#include "services/xds-agent/addr_map.h"

#include <stdlib.h>
#include <string.h>

#define MIN_CAP 16

static size_t slot_of(const struct km_addr *a, size_t cap)
{
	uint64_t h = ((uint64_t)a->words[0] << 32 | a->words[1]) * 0x9e3779b97f4a7c15ull;

	h ^= ((uint64_t)a->words[2] << 32 | a->words[3]) * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return (size_t)h & (cap - 1);
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
	for (size_t i = slot_of(addr, m->cap);; i = (i + 1) & (m->cap - 1)) {
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
		for (j = slot_of(&m->e[i].addr, cap); e[j].val; j = (j + 1) & (cap - 1))
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
	/* at most 3/4 full, so a probe ends soon */
	if ((m->n + 1) * 4 > m->cap * 3 && rehash(m, m->cap ? m->cap * 2 : MIN_CAP) != 0)
		return NULL;
	for (i = slot_of(addr, m->cap); m->e[i].val; i = (i + 1) & (m->cap - 1))
		;
	e = &m->e[i];
	e->addr = *addr;
	e->aux = 0;
	m->n++;
	return e;
}

void km_addr_map_delete(struct km_addr_map *m, struct km_addr_map_entry *e)
{
	size_t mask = m->cap - 1, hole = (size_t)(e - m->e);

	/* backward shift: each later entry of the run moves into the hole unless its home slot
	 * lies cyclically after the hole (it would then be found before reaching it) */
	for (size_t j = (hole + 1) & mask; m->e[j].val; j = (j + 1) & mask) {
		size_t home = slot_of(&m->e[j].addr, m->cap);

		if (((j - home) & mask) >= ((j - hole) & mask)) {
			m->e[hole] = m->e[j];
			hole = j;
		}
	}
	memset(&m->e[hole], 0, sizeof(m->e[hole]));
	m->n--;
	/* give memory back after large removals (best effort) */
	if (m->cap > MIN_CAP && m->n * 8 < m->cap)
		(void)rehash(m, m->cap / 2);
}

struct km_addr_map_entry *km_addr_map_next(const struct km_addr_map *m,
					   const struct km_addr_map_entry *prev)
{
	for (size_t i = prev ? (size_t)(prev - m->e) + 1 : 0; i < m->cap; i++)
		if (m->e[i].val)
			return &m->e[i];
	return NULL;
}

size_t km_addr_map_bytes(const struct km_addr_map *m)
{
	return m->cap * sizeof(*m->e);
}
