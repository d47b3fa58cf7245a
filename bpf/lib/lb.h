/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* lb.h — choosing a service's backend: the priority group by load-balancing mode, then a slot in
 * it uniformly, by weight (binary search over cumulative weights), or by power of two choices on
 * live connection counts. Slots are read from the group's range in km_slot (one array element),
 * or from km_endpoint by key when the service row names no range (base KM_SLOT_NONE). */
#ifndef KM_BPF_LB_H
#define KM_BPF_LB_H

#include "maps.h"

/* The slot at index in a priority group whose range starts at base (KM_SLOT_NONE: km_endpoint). */
static __always_inline struct km_endpoint_value *km_slot_at(__u32 service_id, __u32 base,
							   __u32 prio, __u32 index)
{
	struct km_endpoint_key ek = { .service_id = service_id, .prio = prio, .index = index };
	__u32 slot = base + index;

	if (base != KM_SLOT_NONE)
		return bpf_map_lookup_elem(&km_slot, &slot);
	return bpf_map_lookup_elem(&km_endpoint, &ek);
}

/* The slot's backend, and its inline IPv4 address in *addr4 (0: read km_backend). The two are
 * one 8-byte word, read at once: the map writer rewrites a slot in place with one store. */
static __always_inline __u32 km_endpoint_backend(__u32 service_id, __u32 base, __u32 prio,
						 __u32 index, __u32 *addr4)
{
	struct km_endpoint_value *ev = km_slot_at(service_id, base, prio, index);
	__u64 word;

	if (!ev) {
		*addr4 = 0;
		return 0;
	}
	word = *(volatile __u64 *)ev;
	*addr4 = (__u32)(word >> 32);
	return (__u32)word;
}

/* The slot whose weight range holds a random point of [0, total): the smallest index whose
 * cumulative weight exceeds it. Rows being rewritten may be briefly inconsistent; the search
 * still ends on a slot in 0..count-1, which always holds a live backend. */
static __noinline __u32 km_weighted_slot(__u32 service_id, __u32 base, __u32 prio, __u32 count,
					 __u64 total)
{
	__u64 r = (((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32()) % total;
	__u32 lo = 0, hi = count - 1;

	for (int i = 0; i < 32 && lo < hi; i++) {
		__u32 mid = lo + (hi - lo) / 2;
		struct km_endpoint_value *ev = km_slot_at(service_id, base, prio, mid);

		if (!ev)
			break;
		if (ev->cum_weight > r)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static __always_inline __u64 km_active_connections(__u32 backend_id)
{
	struct km_conn_count_key k = { .backend_id = backend_id };
	struct km_conn_count_value *v = bpf_map_lookup_elem(&km_conn_count, &k);

	return v ? v->active : 0;
}

static __always_inline __u64 km_backend_weight(__u32 backend_id)
{
	struct km_backend_key k = { .backend_id = backend_id };
	struct km_backend_value *v = bpf_map_lookup_elem(&km_backend, &k);

	return v && v->weight ? v->weight : 1;
}

/* Power of two choices: two distinct slots drawn uniformly; the one with fewer live connections
 * per unit of weight wins; a tie goes to either in proportion to their weights. */
static __noinline __u32 km_pick_p2c(__u32 service_id, __u32 base, __u32 prio, __u32 count,
				    __u32 *addr4)
{
	const int weighted = (int)(prio >> 16); /* some weight is not 1 (five arguments at most) */
	__u32 i, j, a, b, a4 = 0, b4 = 0;
	__u64 ca, cb, wa, wb;
	int pick_a;

	prio &= 0xffff;
	if (count < 2)
		return km_endpoint_backend(service_id, base, prio, 0, addr4);
	i = bpf_get_prandom_u32() % count;
	j = (i + 1 + bpf_get_prandom_u32() % (count - 1)) % count;
	a = km_endpoint_backend(service_id, base, prio, i, &a4);
	b = km_endpoint_backend(service_id, base, prio, j, &b4);
	if (!a || !b) {
		*addr4 = a ? a4 : b4;
		return a ? a : b;
	}
	ca = km_active_connections(a);
	cb = km_active_connections(b);
	/* the backend rows are read only when some weight is not 1 */
	wa = weighted ? km_backend_weight(a) : 1;
	wb = weighted ? km_backend_weight(b) : 1;
	if (ca * wb != cb * wa)
		pick_a = ca * wb < cb * wa;
	else
		pick_a = bpf_get_prandom_u32() % (wa + wb) < wa;
	*addr4 = pick_a ? a4 : b4;
	return pick_a ? a : b;
}

/*
 * The backend for a new connection, by mode (Istio LoadBalancing.Mode):
 *   RANDOM   — group 0 (the agent puts every endpoint there);
 *   STRICT   — group 0 only: the endpoints matching every routing-preference scope;
 *   FAILOVER — the first non-empty group, best locality first.
 * Inside the group: by weight, or by power of two choices (KM_SVC_F_P2C).
 * Returns 0 when there is no endpoint; *addr4 is the slot's inline IPv4 address (0: none).
 */
static __noinline __u32 km_pick_backend(__u32 service_id, const struct km_service_value *svc,
					__u32 *addr4)
{
	__u32 prio = 0, count, base;
	__u64 total;

	*addr4 = 0;
	if (svc->lb_mode == KM_LB_FAILOVER)
		while (prio < KM_PRIO_COUNT - 1 && svc->endpoint_count[prio] == 0)
			prio++;
	count = svc->endpoint_count[prio];
	total = svc->weight_total[prio];
	base = svc->slot_base[prio];
	if (count == 0)
		return 0;
	if (svc->flags & KM_SVC_F_P2C)
		return km_pick_p2c(service_id, base, prio | (total > count) << 16, count, addr4);
	if (total <= count) /* every weight is 1 */
		return km_endpoint_backend(service_id, base, prio, bpf_get_prandom_u32() % count,
					   addr4);
	return km_endpoint_backend(service_id, base, prio,
				   km_weighted_slot(service_id, base, prio, count, total), addr4);
}

#endif
