/* dial_cache.h — where rewritten connections were meant to go, between connect() and their first
 * report: connect4/6 report a socket's original destination (KM_CONN_DIAL); the connection's
 * first report (its open while sockops reports opens, else its first open connections' report
 * or its close) comes without it; this cache joins the two by socket cookie, so the programs keep
 * no storage per connection.
 *
 * Bounded by design: KM_DIAL_SETS sets of KM_DIAL_WAYS entries (fixed memory, allocated once,
 * O(KM_DIAL_WAYS) per operation). A dial that never opens (a refused connect) stays until newer
 * dials of its set replace it, oldest first; a first report finds its dial unless more than
 * KM_DIAL_WAYS newer dials of the same set came between (counted as evicted): with 65,536 entries,
 * a connection open past one report interval (5 s) keeps its dial at up to ~10,000 new rewritten
 * connections per second. */
#ifndef KM_MW_DIAL_CACHE_H
#define KM_MW_DIAL_CACHE_H

#include <stdint.h>

#include "kmesh_maps.h"

#define KM_DIAL_SETS 8192
#define KM_DIAL_WAYS 8

struct km_dial {
	uint64_t cookie; /* 0: empty */
	uint64_t seq;    /* insertion order, for replacing the oldest */
	struct km_addr orig_dst;
	uint16_t orig_dport; /* host byte order */
};

struct km_dial_cache {
	struct km_dial *slots; /* KM_DIAL_SETS * KM_DIAL_WAYS */
	uint64_t seq;
	uint64_t evicted; /* dials replaced before their open came */
};

/* Returns 0, or -ENOMEM. */
int km_dial_cache_init(struct km_dial_cache *c);
void km_dial_cache_free(struct km_dial_cache *c);
/* Remember a dial (a second dial of the same socket replaces the first). */
void km_dial_cache_put(struct km_dial_cache *c, uint64_t cookie, const struct km_addr *orig_dst,
		       uint16_t orig_dport);
/* Take the dial of this socket: 1 with *orig_dst and *orig_dport filled (and the entry gone),
 * 0 when there is none. */
int km_dial_cache_take(struct km_dial_cache *c, uint64_t cookie, struct km_addr *orig_dst,
		       uint16_t *orig_dport);

#endif
