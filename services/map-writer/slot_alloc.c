/* slot_alloc.c — the buddy allocator of km_slot ranges (see slot_alloc.h). */
#include "services/map-writer/slot_alloc.h"

#include <stdlib.h>
#include <string.h>

#define NONE KM_SLOT_ALLOC_NONE

static void list_push(struct km_slot_alloc *a, uint32_t o, uint8_t k)
{
	a->head[o] = (uint8_t)(k + 1);
	a->prev[o] = NONE;
	a->next[o] = a->first[k];
	if (a->first[k] != NONE)
		a->prev[a->first[k]] = o;
	a->first[k] = o;
	a->free_slots += (uint64_t)1 << k;
}

static void list_remove(struct km_slot_alloc *a, uint32_t o, uint8_t k)
{
	a->head[o] = 0;
	if (a->prev[o] != NONE)
		a->next[a->prev[o]] = a->next[o];
	else
		a->first[k] = a->next[o];
	if (a->next[o] != NONE)
		a->prev[a->next[o]] = a->prev[o];
	a->free_slots -= (uint64_t)1 << k;
}

int km_slot_alloc_init(struct km_slot_alloc *a, uint32_t size)
{
	memset(a, 0, sizeof(*a));
	for (int k = 0; k < KM_SLOT_ALLOC_ORDERS; k++)
		a->first[k] = NONE;
	if (size == 0)
		return 0;
	while (size & (size - 1))
		size &= size - 1; /* the largest power of two below */
	a->head = calloc(size, 1);
	a->next = calloc(size, sizeof(uint32_t)); /* zero pages until a block starts there */
	a->prev = calloc(size, sizeof(uint32_t));
	if (!a->head || !a->next || !a->prev) {
		km_slot_alloc_free(a);
		return -1;
	}
	a->size = size;
	a->orders = (uint8_t)(__builtin_ctz(size) + 1);
	list_push(a, 0, (uint8_t)(a->orders - 1));
	return 0;
}

void km_slot_alloc_free(struct km_slot_alloc *a)
{
	free(a->head);
	free(a->next);
	free(a->prev);
	memset(a, 0, sizeof(*a));
	for (int k = 0; k < KM_SLOT_ALLOC_ORDERS; k++)
		a->first[k] = NONE;
}

uint8_t km_slot_order_for(uint32_t n)
{
	return n <= 1 ? 0 : (uint8_t)(32 - __builtin_clz(n - 1));
}

uint32_t km_slot_alloc_get(struct km_slot_alloc *a, uint8_t order)
{
	uint8_t k = order;
	uint32_t o;

	while (k < a->orders && a->first[k] == NONE)
		k++;
	if (k >= a->orders)
		return NONE;
	o = a->first[k];
	list_remove(a, o, k);
	while (k > order) { /* split: the upper half stays free */
		k--;
		list_push(a, o + ((uint32_t)1 << k), k);
	}
	return o;
}

void km_slot_alloc_put(struct km_slot_alloc *a, uint32_t base, uint8_t order)
{
	while (order + 1 < a->orders) {
		uint32_t buddy = base ^ ((uint32_t)1 << order);

		if (a->head[buddy] != order + 1)
			break;
		list_remove(a, buddy, order);
		base &= ~((uint32_t)1 << order);
		order++;
	}
	list_push(a, base, order);
}

int km_slot_alloc_reserve(struct km_slot_alloc *a, uint32_t base, uint8_t order)
{
	uint8_t k;
	uint32_t o = 0;

	if (order >= a->orders || (base & (((uint32_t)1 << order) - 1)) ||
	    (uint64_t)base + ((uint64_t)1 << order) > a->size)
		return -1;
	/* the free block holding it: at most one order can start a free block there */
	for (k = order; k < a->orders; k++) {
		o = base & ~(uint32_t)(((uint64_t)1 << k) - 1);
		if (a->head[o] == k + 1)
			break;
	}
	if (k >= a->orders)
		return -1; /* some of it is allocated already */
	list_remove(a, o, k);
	while (k > order) { /* split, freeing the half that does not hold base */
		uint32_t half;

		k--;
		half = (uint32_t)1 << k;
		if (base & half) {
			list_push(a, o, k);
			o += half;
		} else {
			list_push(a, o + half, k);
		}
	}
	return 0;
}
