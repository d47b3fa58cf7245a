/* slots.h — km_slot, the array BPF picks a service's endpoints from. Every km_endpoint row of a
 * (service, priority) is copied to slot base + index of that pair's range, and the service row
 * says where the range is (km_service_value.slot_base, slot_order). The map writer alone places
 * the ranges; the xDS agent keeps writing (service, priority, index) rows.
 *
 * A range that has to grow is copied to one twice its size; the service row is pointed at the new
 * one when it is next written (the agent writes it after the endpoints that raised its count), so
 * BPF sees the old range with the old count or the new range with the new count, never a slot
 * that is not filled. Until then writes go to both. A range a service row named is kept for
 * KM_SLOTS_QUARANTINE_MS after the row stops naming it (a connect that read the old row is long
 * done by then) before it can be reused. When no range can be had (the array is full), the pair
 * reads km_endpoint by key (KM_SLOT_NONE), as migrated rows do until they are placed.
 *
 * Writes are plain stores to the array mapped into this process (no bpf() call per slot); the
 * backend id and its IPv4 address are one 8-byte store. */
#ifndef KM_MW_SLOTS_H
#define KM_MW_SLOTS_H

#include <stddef.h>
#include <stdint.h>

#include "kmesh_maps.h"
#include "services/map-writer/keyset.h"
#include "services/map-writer/slot_alloc.h"

#define KM_SLOTS_QUARANTINE_MS 1000

struct km_slots_quarantined {
	uint32_t base;
	uint8_t order;
	uint64_t until_ns; /* CLOCK_MONOTONIC */
};

struct km_slots {
	int fd;          /* km_slot; -1: none (every service reads km_endpoint) */
	int fd_service;  /* km_service: the rows that name the ranges */
	uint64_t *mem;   /* the mapped array: two words per slot (backend id | addr4 << 32, weight) */
	size_t mem_len;
	struct km_slot_alloc alloc;
	struct km_keyset pairs; /* (service id, priority) -> struct km_slots_pair */
	struct km_slots_quarantined *q;
	size_t q_head, q_len, q_cap; /* a FIFO: release times only grow */
	/* counters, for dumps and tests */
	uint64_t ranges_made, ranges_grown, ranges_refused, rows_placed;
	int lost; /* a pair could not be recorded (no memory): every service reads km_endpoint */
};

/* Map fd (km_slot) and rebuild the ranges from the service rows in fd_service; a row naming a
 * range that is invalid or overlaps another is pointed back at km_endpoint. fd < 0 disables
 * slots. Returns 0, or -1 when out of memory (slots are then disabled too). */
int km_slots_open(struct km_slots *s, int fd, int fd_service);
void km_slots_close(struct km_slots *s);
int km_slots_enabled(const struct km_slots *s);

/* An endpoint row was written (v) or deleted (v NULL); was_present: the key was in km_endpoint
 * before. */
void km_slots_endpoint(struct km_slots *s, const struct km_endpoint_key *k,
		       const struct km_endpoint_value *v, int was_present);
/* Fill v's slot_base/slot_order for a service row about to be written. */
void km_slots_fill_service(struct km_slots *s, uint32_t service_id, struct km_service_value *v);
/* A service row was written (v: what was written) or deleted (v NULL). */
void km_slots_service(struct km_slots *s, uint32_t service_id, const struct km_service_value *v);
/* Point every service row whose ranges moved since it was written at its current ranges (after
 * recovery: rows migrated from an older layout). Returns the rows rewritten. */
unsigned km_slots_repoint_services(struct km_slots *s);

/* Slots in use, free and quarantined (for dumps). */
void km_slots_usage(const struct km_slots *s, uint64_t *size, uint64_t *free_slots,
		    uint64_t *quarantined);

#endif
