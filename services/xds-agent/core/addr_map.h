/* addr_map.h — a map from an IP address to a pointer, flat: one array of 24-byte entries with
 * open addressing (linear probing, deletion by backward shift), no allocation per address. The
 * agent keeps one per address-keyed index (authorization's identity owners, telemetry's names):
 * at 100,000 workloads a uthash entry per address was ~100 bytes and a cache miss per hop; here
 * an address costs 32-48 bytes (the array is 1/2 to 3/4 full, of any size) and a lookup reads one
 * or two adjacent lines.
 *
 * An entry pointer is valid until the next put or delete on the map; no put or delete during a
 * visit. A stored value is never NULL (NULL marks a free entry). */
#ifndef KM_XDS_ADDR_MAP_H
#define KM_XDS_ADDR_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "shared/addr.h"

struct km_addr_map_entry {
	struct km_addr addr;
	void *val; /* NULL: free */
};

struct km_addr_map {
	struct km_addr_map_entry *e;
	size_t cap; /* entries in e: 0, or at least 16 */
	size_t n;
};

void km_addr_map_init(struct km_addr_map *m);
void km_addr_map_free(struct km_addr_map *m);
/* The entry of addr, or NULL. */
struct km_addr_map_entry *km_addr_map_find(const struct km_addr_map *m, const struct km_addr *addr);
/* The entry of addr, made if absent (val NULL: the caller sets it before any other call on the
 * map). NULL when out of memory. */
struct km_addr_map_entry *km_addr_map_put(struct km_addr_map *m, const struct km_addr *addr);
/* Remove an entry km_addr_map_find or _put returned. */
void km_addr_map_delete(struct km_addr_map *m, struct km_addr_map_entry *e);
/* Visit: for (e = km_addr_map_next(m, NULL); e; e = km_addr_map_next(m, e)). */
struct km_addr_map_entry *km_addr_map_next(const struct km_addr_map *m,
					   const struct km_addr_map_entry *prev);

#endif
