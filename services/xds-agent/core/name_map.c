/* name_map.c — the flat string map (see name_map.h). */
#include "services/xds-agent/core/name_map.h"

#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/core/probe.h"

#define MIN_CAP 64

static uint32_t hash_of(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++) {
		h ^= (uint8_t)*s;
		h *= 16777619u;
	}
	return h ^ (h >> 15);
}

void km_name_map_init(struct km_name_map *m)
{
	memset(m, 0, sizeof(*m));
}

void km_name_map_free(struct km_name_map *m)
{
	free(m->e);
	km_name_map_init(m);
}

static size_t slot(const struct km_name_map *m, const char *key, uint32_t h)
{
	size_t i = km_probe_home(h, m->cap);

	while (m->e[i].key &&
	       !(m->e[i].hash == h && (m->e[i].key == key || strcmp(m->e[i].key, key) == 0)))
		i = km_probe_next(i, m->cap);
	return i;
}

void km_name_map_prefetch(const struct km_name_map *m, const char *key)
{
	if (m->n)
		__builtin_prefetch(&m->e[km_probe_home(hash_of(key), m->cap)]);
}

void *km_name_map_find(const struct km_name_map *m, const char *key)
{
	return m->n ? m->e[slot(m, key, hash_of(key))].val : NULL;
}

static int rehash(struct km_name_map *m, size_t cap)
{
	struct km_name_map_entry *e = calloc(cap, sizeof(*e));

	if (!e)
		return -1;
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->e[i].key)
			continue;
		for (j = km_probe_home(m->e[i].hash, cap); e[j].key; j = km_probe_next(j, cap))
			;
		e[j] = m->e[i];
	}
	free(m->e);
	m->e = e;
	m->cap = cap;
	return 0;
}

int km_name_map_add(struct km_name_map *m, const char *key, void *val)
{
	uint32_t h = hash_of(key);
	size_t i;

	if ((m->n + 1) * 4 > m->cap * 3 && rehash(m, km_probe_grow(m->cap, MIN_CAP)) != 0)
		return -1;
	i = slot(m, key, h);
	m->e[i] = (struct km_name_map_entry){ .hash = h, .key = key, .val = val };
	m->n++;
	return 0;
}

void km_name_map_delete(struct km_name_map *m, const char *key)
{
	size_t hole;

	if (!m->n)
		return;
	hole = slot(m, key, hash_of(key));
	if (!m->e[hole].key)
		return;
	/* backward shift: later entries of the run whose home is not after the hole move up */
	for (size_t j = km_probe_next(hole, m->cap); m->e[j].key; j = km_probe_next(j, m->cap)) {
		size_t home = km_probe_home(m->e[j].hash, m->cap);

		if (km_probe_dist(home, j, m->cap) >= km_probe_dist(hole, j, m->cap)) {
			m->e[hole] = m->e[j];
			hole = j;
		}
	}
	memset(&m->e[hole], 0, sizeof(m->e[hole]));
	m->n--;
}
