/* ids.h — stable u32 ids for named objects (services and workloads share one id space, so an id
 * names exactly one object): id = FNV-1a-32(name), probing +1 on collision; 0 is never used.
 * The table holds only the ids in use and an owner pointer for each; the names stay with their
 * owners (12 bytes per slot, the table 1/2 to 3/4 full: 16-24 bytes per id, instead of a copy of
 * every name). */
#ifndef KM_XDS_IDS_H
#define KM_XDS_IDS_H

#include <stddef.h>
#include <stdint.h>

typedef uint32_t (*km_ids_hash_fn)(const char *name);

struct km_ids {
	uint32_t *keys; /* 0 = free slot */
	void **owners;
	size_t cap; /* slots: 0, or at least 64 */
	size_t count;
	km_ids_hash_fn hash;
};

/* hash NULL = FNV-1a-32 (tests pass a weak hash to force collisions). */
void km_ids_init(struct km_ids *ids, km_ids_hash_fn hash);
void km_ids_free(struct km_ids *ids);
/* A new id for name, held by owner until released. Returns 0 only when out of memory. The
 * caller allocates once per object (it knows when an object is new). */
uint32_t km_ids_alloc(struct km_ids *ids, const char *name, void *owner);
void km_ids_release(struct km_ids *ids, uint32_t id);
/* The owner of id, or NULL if the id is not in use. */
void *km_ids_owner(const struct km_ids *ids, uint32_t id);
uint32_t km_ids_fnv1a(const char *name);
/* The id name gets unless it is taken (the first probed): an object whose id differs was
 * displaced by a collision. */
uint32_t km_ids_home(const struct km_ids *ids, const char *name);

#endif
