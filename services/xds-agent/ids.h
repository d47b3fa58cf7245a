/* ids.h — stable u32 ids for resource names (services and workloads share one id space, so an
 * id names exactly one object). id = FNV-1a-32(name), probing +1 on collision; 0 is never used. */
#ifndef KM_XDS_IDS_H
#define KM_XDS_IDS_H

#include <stddef.h>
#include <stdint.h>

typedef uint32_t (*km_ids_hash_fn)(const char *name);

struct km_ids_entry;

struct km_ids {
	struct km_ids_entry *by_name;
	struct km_ids_entry *by_id;
	km_ids_hash_fn hash;
	size_t count;
};

/* hash NULL = FNV-1a-32 (tests pass a weak hash to force collisions). */
void km_ids_init(struct km_ids *ids, km_ids_hash_fn hash);
void km_ids_free(struct km_ids *ids);
/* The id of name, allocated if new. Returns 0 only when out of memory. */
uint32_t km_ids_get(struct km_ids *ids, const char *name);
/* The id of name if allocated, else 0. */
uint32_t km_ids_find(const struct km_ids *ids, const char *name);
const char *km_ids_name(const struct km_ids *ids, uint32_t id);
void km_ids_release(struct km_ids *ids, const char *name);
uint32_t km_ids_fnv1a(const char *name);

#endif
