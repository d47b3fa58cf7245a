/* probe.h — the slot arithmetic the agent's open-addressing tables share (ids.c, addr_map.c,
 * name_map.c): a 32-bit hash scaled to an array of any size by a multiply, and linear probing
 * around the array. Any size, not a power of two, lets an array grow by half and stay 1/2 to 3/4
 * full (doubling a power of two leaves it 3/8 to 3/4 full, or 1/4 to 1/2). */
#ifndef KM_XDS_PROBE_H
#define KM_XDS_PROBE_H

#include <stddef.h>
#include <stdint.h>

/* The home slot of hash h in an array of cap slots (cap > 0). */
static inline size_t km_probe_home(uint32_t h, size_t cap)
{
	return (size_t)(((uint64_t)h * cap) >> 32);
}

/* The slot after i, going round. */
static inline size_t km_probe_next(size_t i, size_t cap)
{
	return i + 1 == cap ? 0 : i + 1;
}

/* How far slot j is past slot from, going round. */
static inline size_t km_probe_dist(size_t from, size_t j, size_t cap)
{
	return j >= from ? j - from : j + cap - from;
}

/* The array size after growing cap by half (min when cap is 0). */
static inline size_t km_probe_grow(size_t cap, size_t min)
{
	return cap ? cap + cap / 2 : min;
}

#endif
