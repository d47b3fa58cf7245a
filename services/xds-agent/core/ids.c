/* ids.c — u32 id allocation (see ids.h): an open-addressing table of the ids in use, linear
 * probing over slots, deletion by backward shift (no tombstones). */
#include "services/xds-agent/core/ids.h"

#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/core/probe.h"

uint32_t km_ids_fnv1a(const char *name)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		h ^= *p;
		h *= 16777619u;
	}
	return h;
}

void km_ids_init(struct km_ids *ids, km_ids_hash_fn hash)
{
	memset(ids, 0, sizeof(*ids));
	ids->hash = hash ? hash : km_ids_fnv1a;
}

void km_ids_free(struct km_ids *ids)
{
	free(ids->keys);
	free(ids->owners);
	ids->keys = NULL;
	ids->owners = NULL;
	ids->cap = ids->count = 0;
}

static size_t slot_of(const struct km_ids *ids, uint32_t id)
{
	return km_probe_home(id * 2654435761u, ids->cap); /* Fibonacci hashing of the id */
}

static size_t find(const struct km_ids *ids, uint32_t id)
{
	size_t i = slot_of(ids, id);

	while (ids->keys[i] && ids->keys[i] != id)
		i = km_probe_next(i, ids->cap);
	return i;
}

static int resize(struct km_ids *ids, size_t cap)
{
	struct km_ids n = { .cap = cap, .hash = ids->hash, .count = ids->count };

	n.keys = calloc(cap, sizeof(*n.keys));
	n.owners = calloc(cap, sizeof(*n.owners));
	if (!n.keys || !n.owners) {
		free(n.keys);
		free(n.owners);
		return -1;
	}
	for (size_t i = 0; i < ids->cap; i++) {
		if (ids->keys[i]) {
			size_t j = find(&n, ids->keys[i]);

			n.keys[j] = ids->keys[i];
			n.owners[j] = ids->owners[i];
		}
	}
	free(ids->keys);
	free(ids->owners);
	*ids = n;
	return 0;
}

uint32_t km_ids_home(const struct km_ids *ids, const char *name)
{
	uint32_t id = ids->hash(name);

	return id ? id : 1;
}

void *km_ids_owner(const struct km_ids *ids, uint32_t id)
{
	size_t i;

	if (!ids->cap || id == 0)
		return NULL;
	i = find(ids, id);
	return ids->keys[i] ? ids->owners[i] : NULL;
}

uint32_t km_ids_alloc(struct km_ids *ids, const char *name, void *owner)
{
	uint32_t id;
	size_t i;

	/* at most 3/4 full, growing by half: 1/2 to 3/4 full, not 1/4 to 1/2 as doubling a power of
	 * two at half full was (28 bytes per id at 110,000; now ~19) */
	if ((ids->count + 1) * 4 > ids->cap * 3 && resize(ids, km_probe_grow(ids->cap, 64)) != 0)
		return 0;
	/* Probe the u32 ring from the name's hash, skipping 0 and ids in use. */
	for (id = ids->hash(name);; id++) {
		if (id == 0)
			continue;
		i = find(ids, id);
		if (!ids->keys[i])
			break;
	}
	ids->keys[i] = id;
	ids->owners[i] = owner;
	ids->count++;
	return id;
}

void km_ids_release(struct km_ids *ids, uint32_t id)
{
	size_t i, j;

	if (!ids->cap || id == 0)
		return;
	i = find(ids, id);
	if (!ids->keys[i])
		return;
	ids->keys[i] = 0;
	ids->owners[i] = NULL;
	ids->count--;
	/* Backward shift: move later entries of the run into the hole when their home allows. */
	for (j = km_probe_next(i, ids->cap); ids->keys[j]; j = km_probe_next(j, ids->cap)) {
		size_t home = slot_of(ids, ids->keys[j]);

		if (km_probe_dist(home, j, ids->cap) >= km_probe_dist(i, j, ids->cap)) {
			ids->keys[i] = ids->keys[j];
			ids->owners[i] = ids->owners[j];
			ids->keys[j] = 0;
			ids->owners[j] = NULL;
			i = j;
		}
	}
}
