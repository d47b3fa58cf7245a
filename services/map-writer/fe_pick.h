/* fe_pick.h — a service's uniform pick copied into its frontend rows (KM_FE_F_PICK, pick_base,
 * pick_count in km_frontend_value), so a connect to a VIP reads its frontend row and one slot of
 * km_slot, and no service row. The map writer alone writes these fields; the xDS agent's
 * frontend rows never carry them.
 *
 * A service's pick is uniform when it has no waypoint, is not P2C or PASSTHROUGH, every weight
 * of the group it picks from is 1 and that group (group 0; FAILOVER: the first non-empty one)
 * has endpoints and a range in km_slot. Otherwise its frontend rows carry no pick and BPF reads
 * the service row as before.
 *
 * Kept: each service's current pick and the frontend rows that name it (a reverse index, rebuilt
 * at start from the maps). A frontend row gets its service's pick as it is written; when a
 * service row is written and its pick changes, each of its frontend rows is rewritten at once
 * (one hash update each: BPF sees the whole old or new row). Both name ranges the slot
 * quarantine keeps for a second after a row stops naming them (slots.h), so a connect that
 * read either is served from slots that are still what they were. */
#ifndef KM_MW_FE_PICK_H
#define KM_MW_FE_PICK_H

#include <stdint.h>

#include "kmesh_maps.h"
#include "services/map-writer/keyset.h"

struct km_fe_pick {
	int fd_frontend;           /* km_frontend: rows rewritten when their service's pick changes */
	int fd_service;            /* km_service: a service not followed yet is read from here */
	struct km_keyset services; /* service id -> its pick and its frontend rows' count (fe_pick.c) */
	struct km_keyset members;  /* (service id, ordinal) -> a frontend key naming the service */
	struct km_keyset fronts;   /* frontend key -> its (service id, ordinal) (service rows only) */
	uint64_t rows_rewritten;   /* frontend rows rewritten for a changed pick */
	uint64_t rewrite_failed;   /* ... that the kernel refused (logged) */
	int lost;                  /* no memory to index a row: picks off for good (logged) */
};

void km_fe_pick_init(struct km_fe_pick *p, int fd_frontend, int fd_service);
void km_fe_pick_free(struct km_fe_pick *p);

/* The pick a service row gives, as the frontend fields it sets: 1 with *base and *count (> 0)
 * when uniform, else 0. */
int km_fe_pick_of(const struct km_service_value *v, uint32_t *base, uint32_t *count);

/* Set v's pick fields from its service's current pick (a service frontend row about to be
 * written; other rows are left without one). A service not followed yet (none of its rows
 * written since start) is read from km_service once and followed from then on. */
void km_fe_pick_fill(struct km_fe_pick *p, struct km_frontend_value *v);

/* A frontend row was written (v) or deleted (v NULL). */
void km_fe_pick_frontend(struct km_fe_pick *p, const struct km_frontend_key *k,
			 const struct km_frontend_value *v);

/* A service row was written (v) or deleted (v NULL): its frontend rows are rewritten if the pick
 * changed, unless rewrite is 0 (loading the maps at start: km_fe_pick_recheck follows). */
void km_fe_pick_service(struct km_fe_pick *p, uint32_t service_id, const struct km_service_value *v,
			int rewrite);

/* At start, after the service rows' ranges are settled (slots.h): index every frontend row, read
 * its service row, and rewrite the rows whose pick fields differ from their service's pick (rows
 * of an older layout, services whose ranges moved). Returns the rows rewritten. */
unsigned km_fe_pick_recheck(struct km_fe_pick *p);

#endif
