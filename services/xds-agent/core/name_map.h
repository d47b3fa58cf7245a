/* name_map.h — a map from a string to a pointer, flat: one array of (hash, key, value) entries
 * with open addressing, as addr_map.h is for addresses. A lookup reads one entry, and compares
 * the key's pointer before its bytes, so interned keys (strpool.h) are matched without reading
 * the string. The model finds a service by name this way for every membership of every
 * workload: through uthash's chains that was ~0.8 us a lookup at 100,000 services.
 *
 * Keys are not copied: a key must stay valid while it is in the map. A value is never NULL. */
#ifndef KM_XDS_NAME_MAP_H
#define KM_XDS_NAME_MAP_H

#include <stddef.h>
#include <stdint.h>

struct km_name_map_entry {
	uint32_t hash;
	const char *key; /* NULL: free */
	void *val;
};

struct km_name_map {
	struct km_name_map_entry *e;
	size_t cap; /* 0, or at least 64 */
	size_t n;
};

void km_name_map_init(struct km_name_map *m);
void km_name_map_free(struct km_name_map *m);
/* Load key's home slot into the cache ahead of a lookup (a hint: nothing changes). */
void km_name_map_prefetch(const struct km_name_map *m, const char *key);
/* The value of key, or NULL. */
void *km_name_map_find(const struct km_name_map *m, const char *key);
/* Add key (not in the map yet) with val. Returns 0, or -1 when out of memory. */
int km_name_map_add(struct km_name_map *m, const char *key, void *val);
/* Remove key if present. */
void km_name_map_delete(struct km_name_map *m, const char *key);

#endif
