/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* lb.h — service resolution: frontend (VIP:port) -> service -> endpoint -> backend. */
#ifndef KM_BPF_LB_H
#define KM_BPF_LB_H

#include "maps.h"
#include "addr.h"

/* Where a connection is sent. */
struct km_target {
	struct km_addr addr;
	__u16 port; /* network byte order */
};

/* Pick an endpoint of the service uniformly among the count of priority group 0.
 * Returns the backend id, or 0 when the service has no endpoint. */
static __always_inline __u32 km_pick_random(__u32 service_id, const struct km_service_value *svc)
{
	struct km_endpoint_key ek = { .service_id = service_id, .prio = 0 };
	struct km_endpoint_value *ev;
	__u32 count = svc->endpoint_count[0];

	if (count == 0)
		return 0;
	ek.index = bpf_get_prandom_u32() % count;
	ev = bpf_map_lookup_elem(&km_endpoint, &ek);
	return ev ? ev->backend_id : 0;
}

/*
 * Resolve a destination. Returns 0 and fills *out when the connection must be rewritten; a
 * negative value when it is left untouched (not a frontend, a workload frontend, no endpoint, or a
 * backend without an address of the wanted family).
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
	bk.backend_id = km_pick_random(sk.service_id, sv);
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
	return 0;
}

#endif
