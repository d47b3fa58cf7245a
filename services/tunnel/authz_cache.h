/* authz_cache.h — the xDS agent's HBONE decisions kept for reuse: allowed or denied, why, and
 * the destination's baggage, per (client principal, client address, destination address and
 * port): everything the agent's decision reads besides its policies and workloads
 * (authz_query.h in the agent). Entries are valid at one pair of the agent's generations
 * (policies, workloads); the agent sends a notice at each change (tunnel_notices.h in the agent)
 * and a new pair drops every entry, so a decision is never older than the notice's trip. Used
 * only while notices come: off until the agent agreed to send them, off again when its link
 * goes down. Bounded: max entries (KM_AUTHZ_CACHE_MAX unless set, at most KM_AUTHZ_CACHE_LIMIT;
 * 0: nothing kept), each at most ~1.8 KB (its strings are capped); full, it is emptied
 * (distinct keys cost one request each, as with no cache). */
#ifndef KM_TUNNEL_AUTHZ_CACHE_H
#define KM_TUNNEL_AUTHZ_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define KM_AUTHZ_CACHE_MAX 4096    /* entries by default */
#define KM_AUTHZ_CACHE_LIMIT 16384 /* entries at most */
#define KM_AUTHZ_CACHE_BUCKETS 2048
#define KM_AUTHZ_CACHE_PRINCIPAL_MAX 300 /* longer: not kept */
#define KM_AUTHZ_CACHE_WHY_MAX 400       /* longer: cut */
#define KM_AUTHZ_CACHE_BAGGAGE_MAX 1024  /* longer: not kept */

struct km_authz_key {
	uint8_t src[16], dst[16];
	uint8_t src_len, dst_len; /* 4 or 16 */
	uint16_t port;
	const char *principal;
};

struct km_authz_verdict {
	int allowed;
	const char *why;
	const char *baggage;
};

struct ac_entry;

struct km_authz_cache {
	struct ac_entry *buckets[KM_AUTHZ_CACHE_BUCKETS];
	size_t n, max; /* entries kept, at most */
	uint64_t policy_gen, workload_gen; /* the pair its entries were decided at */
	int on;
	uint64_t hits, misses, emptied; /* emptied: for a new pair or when full */
};

/* Use it from now on, at this pair (entries of another pair dropped). */
void km_authz_cache_on(struct km_authz_cache *c, uint64_t policy_gen, uint64_t workload_gen);
/* Stop using it (the agent's notices stopped): every entry dropped. */
void km_authz_cache_off(struct km_authz_cache *c);
/* The agent's pair now (a notice): entries of another pair dropped. */
void km_authz_cache_generations(struct km_authz_cache *c, uint64_t policy_gen,
				uint64_t workload_gen);
/* The decision for k, or NULL (off, or none kept); valid until the next call that changes the
 * cache. Counts a hit or a miss while on. */
const struct km_authz_verdict *km_authz_cache_get(struct km_authz_cache *c,
						 const struct km_authz_key *k);
/* Keep the agent's decision for k, made at (policy_gen, workload_gen): only while on and at the
 * cache's pair (an answer from before a change the cache has seen, or after one it has not yet,
 * is not kept). */
void km_authz_cache_put(struct km_authz_cache *c, const struct km_authz_key *k,
			const struct km_authz_verdict *v, uint64_t policy_gen, uint64_t workload_gen);

#endif
