/* ids.c — name <-> u32 id allocation (see ids.h). */
#include "services/xds-agent/ids.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>

struct km_ids_entry {
	char *name;
	uint32_t id;
	UT_hash_handle hh_name;
	UT_hash_handle hh_id;
};

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
	struct km_ids_entry *e, *tmp;

	HASH_ITER(hh_name, ids->by_name, e, tmp) {
		HASH_DELETE(hh_name, ids->by_name, e);
		HASH_DELETE(hh_id, ids->by_id, e);
		free(e->name);
		free(e);
	}
	ids->count = 0;
}

static struct km_ids_entry *find_name(const struct km_ids *ids, const char *name)
{
	struct km_ids_entry *e;

	HASH_FIND(hh_name, ids->by_name, name, strlen(name), e);
	return e;
}

uint32_t km_ids_find(const struct km_ids *ids, const char *name)
{
	struct km_ids_entry *e = find_name(ids, name);

	return e ? e->id : 0;
}

const char *km_ids_name(const struct km_ids *ids, uint32_t id)
{
	struct km_ids_entry *e;

	HASH_FIND(hh_id, ids->by_id, &id, sizeof(id), e);
	return e ? e->name : NULL;
}

uint32_t km_ids_get(struct km_ids *ids, const char *name)
{
	struct km_ids_entry *e = find_name(ids, name);
	uint32_t id;

	if (e)
		return e->id;
	e = calloc(1, sizeof(*e));
	if (!e || !(e->name = strdup(name))) {
		free(e);
		return 0;
	}
	/* Linear probing over the whole u32 ring, skipping 0; terminates while fewer than 2^32-1
	 * ids are in use. */
	for (id = ids->hash(name);; id++) {
		struct km_ids_entry *other;

		if (id == 0)
			continue;
		HASH_FIND(hh_id, ids->by_id, &id, sizeof(id), other);
		if (!other)
			break;
	}
	e->id = id;
	HASH_ADD_KEYPTR(hh_name, ids->by_name, e->name, strlen(e->name), e);
	HASH_ADD(hh_id, ids->by_id, id, sizeof(e->id), e);
	ids->count++;
	return id;
}

void km_ids_release(struct km_ids *ids, const char *name)
{
	struct km_ids_entry *e = find_name(ids, name);

	if (!e)
		return;
	HASH_DELETE(hh_name, ids->by_name, e);
	HASH_DELETE(hh_id, ids->by_id, e);
	free(e->name);
	free(e);
	ids->count--;
}
