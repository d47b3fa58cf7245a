/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* lb.h — service resolution: frontend (VIP:port) -> service -> endpoint -> backend, by the
 * service's load-balancing mode, with per-backend target-port overrides. */
#ifndef KM_BPF_LB_H
#define KM_BPF_LB_H

#include "maps.h"
#include "addr.h"

/* Where a connection is sent. */
struct km_target {
	struct km_addr addr;
	__u16 port; /* network byte order */
};

/* A random endpoint of one priority group; 0 when the group is empty. */
static __always_inline __u32 km_pick_in_prio(__u32 service_id, __u32 prio, __u32 count)
{
	struct km_endpoint_key ek = { .service_id = service_id, .prio = prio };
	struct km_endpoint_value *ev;

	if (count == 0)
		return 0;
	ek.index = bpf_get_prandom_u32() % count;
	ev = bpf_map_lookup_elem(&km_endpoint, &ek);
	return ev ? ev->backend_id : 0;
}

/*
 * The backend for a new connection, by mode (Istio LoadBalancing.Mode):
 *   RANDOM   — group 0 (the agent puts every endpoint there);
 *   STRICT   — group 0 only: the endpoints matching every routing-preference scope;
 *   FAILOVER — the first non-empty group, best locality first.
 * Returns 0 when there is no endpoint.
 */
static __always_inline __u32 km_pick_backend(__u32 service_id, const struct km_service_value *svc)
{
	if (svc->lb_mode != KM_LB_FAILOVER)
		return km_pick_in_prio(service_id, 0, svc->endpoint_count[0]);
#pragma unroll
	for (__u32 p = 0; p < KM_PRIO_COUNT; p++)
		if (svc->endpoint_count[p])
			return km_pick_in_prio(service_id, p, svc->endpoint_count[p]);
	return 0;
}

/* km_resolve's answer when the connection must fail instead: a STRICT service with no endpoint
 * in its best locality. Sending it to the VIP would quietly break the locality guarantee. */
#define KM_RESOLVE_REFUSE 1

/*
 * Resolve a destination. Returns 0 and fills *out when the connection must be rewritten;
 * KM_RESOLVE_REFUSE when it must be refused; a negative value when it is left untouched (not a
 * service frontend, PASSTHROUGH, no endpoint, or a backend without an address of the wanted
 * family).
 * want_v6: the socket is IPv6 and not talking to a v4-mapped destination.
 */
static __always_inline int km_resolve(const struct km_addr *dst, __u16 port_nbo, __u8 proto,
				      int want_v6, struct km_target *out)
{
	struct km_frontend_key fk = { .port = port_nbo, .proto = proto };
	struct km_frontend_value *fv;
	struct km_service_value *sv;
	struct km_backend_value *bv;
	struct km_service_key sk;
	struct km_backend_key bk;
	const struct km_addr *pick;

	__builtin_memcpy(&fk.addr, dst, sizeof(fk.addr));
	fv = bpf_map_lookup_elem(&km_frontend, &fk);
	if (!fv || fv->kind != KM_FRONTEND_SERVICE)
		return -1; /* pod IPs (port 0 rows) need no rewrite until waypoints arrive */

	sk.service_id = fv->upstream_id;
	sv = bpf_map_lookup_elem(&km_service, &sk);
	if (!sv)
		return -2;
	if (sv->lb_mode == KM_LB_PASSTHROUGH)
		return -6; /* the original destination, by definition */
	bk.backend_id = km_pick_backend(sk.service_id, sv);
	if (bk.backend_id == 0 && sv->lb_mode == KM_LB_STRICT)
		return KM_RESOLVE_REFUSE;
	if (bk.backend_id == 0)
		return -3; /* no endpoint: the connection goes to the VIP unchanged */
	bv = bpf_map_lookup_elem(&km_backend, &bk);
	if (!bv)
		return -4;
	pick = want_v6 ? &bv->addr6 : &bv->addr4;
	if (km_addr_is_zero(pick))
		return -5;
	__builtin_memcpy(&out->addr, pick, sizeof(out->addr));
	out->port = fv->target_port;
	if (fv->flags & KM_FE_F_PORT_OVERRIDES) {
		struct km_port_override_key ok = {
			.service_id = sk.service_id, .backend_id = bk.backend_id, .port = port_nbo
		};
		struct km_port_override_value *ov = bpf_map_lookup_elem(&km_port_ovr, &ok);

		if (ov)
			out->port = ov->target_port;
	}
	return 0;
}

#endif
