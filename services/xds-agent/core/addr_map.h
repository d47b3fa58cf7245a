/* addr_map.h — a map from an IP address to a pointer, flat: open addressing (linear probing,
 * deletion by backward shift), no allocation per address. IPv4 addresses, most of a cluster's,
 * sit in 16-byte entries (the four bytes and the value), others in 24-byte ones (the sixteen
 * and the value): each family's array is 1/2 to 3/4 full, of any size, so an IPv4 address costs
 * 21-32 bytes (it was 32-48 with every address in 24 bytes) and a lookup reads one or two
 * adjacent lines. The model's address index (addr_index.h) is built on it: at 100,000 workloads
 * a uthash entry per address was ~100 bytes and a cache miss per hop.
 *
 * A value slot pointer is valid until the next put or delete on the map; no put or delete during
 * a visit. A stored value is never NULL (NULL marks a free entry). */
#ifndef KM_XDS_ADDR_MAP_H
#define KM_XDS_ADDR_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "shared/addr.h"

/* One family's array of entries (addr_map.c knows their layout). */
struct km_addr_table {
	uint8_t *e;
	size_t cap; /* entries: 0, or at least 16 */
	size_t n;
};

struct km_addr_map {
	struct km_addr_table v4; /* IPv4 (v4-mapped) addresses */
	struct km_addr_table v6; /* every other address */
	size_t n;                /* both together */
};

void km_addr_map_init(struct km_addr_map *m);
void km_addr_map_free(struct km_addr_map *m);
/* Load addr's home slot into the cache ahead of a lookup (a hint: nothing changes). */
void km_addr_map_prefetch(const struct km_addr_map *m, const struct km_addr *addr);
/* The value slot of addr, or NULL when addr is not in the map. */
void **km_addr_map_find(const struct km_addr_map *m, const struct km_addr *addr);
/* The value slot of addr, made if absent (then *slot is NULL: the caller sets it before any
 * other call on the map). NULL when out of memory. */
void **km_addr_map_put(struct km_addr_map *m, const struct km_addr *addr);
/* Remove addr if present. */
void km_addr_map_delete(struct km_addr_map *m, const struct km_addr *addr);
/* Visit every entry: size_t pos = 0; while (km_addr_map_next(m, &pos, &addr, &val)) ...;
 * returns 0 after the last. */
int km_addr_map_next(const struct km_addr_map *m, size_t *pos, struct km_addr *addr, void **val);

#endif
