/* slot_alloc.h — a buddy allocator of ranges in km_slot (power-of-two blocks, aligned to their
 * size, merged with their buddy when both are free). It knows only offsets: what is in the
 * slots is slots.c's. Every operation is O(log size); the bookkeeping is one byte per slot plus
 * two free-list links per slot, touched only where free blocks start. */
#ifndef KM_MW_SLOT_ALLOC_H
#define KM_MW_SLOT_ALLOC_H

#include <stdint.h>

#define KM_SLOT_ALLOC_NONE 0xffffffffu
#define KM_SLOT_ALLOC_ORDERS 32

struct km_slot_alloc {
	uint32_t size;   /* slots managed: a power of two (0: nothing can be allocated) */
	uint8_t orders;  /* log2(size) + 1 block sizes */
	uint8_t *head;   /* head[o] = k + 1 when a free block of order k starts at o, else 0 */
	uint32_t *next, *prev; /* the free lists' links, valid at free blocks' starts */
	uint32_t first[KM_SLOT_ALLOC_ORDERS]; /* each order's free list (NONE: empty) */
	uint64_t free_slots;
};

/* Manage the largest power of two <= size slots, all free. Returns 0 or -1 (no memory). */
int km_slot_alloc_init(struct km_slot_alloc *a, uint32_t size);
void km_slot_alloc_free(struct km_slot_alloc *a);
/* The order of the smallest block holding n >= 1 slots (ceil(log2(n))). */
uint8_t km_slot_order_for(uint32_t n);
/* A free block of 2^order slots: its first slot, or KM_SLOT_ALLOC_NONE when none is free. */
uint32_t km_slot_alloc_get(struct km_slot_alloc *a, uint8_t order);
/* Give back a block from km_slot_alloc_get or km_slot_alloc_reserve. */
void km_slot_alloc_put(struct km_slot_alloc *a, uint32_t base, uint8_t order);
/* Take exactly the block [base, base + 2^order) (recovering the ranges that rows already name).
 * Returns 0, or -1 when it is misaligned, out of range or not wholly free. */
int km_slot_alloc_reserve(struct km_slot_alloc *a, uint32_t base, uint8_t order);

#endif
