/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* resolve.h — where a managed TCP connect() goes: frontend (VIP:port or pod IP) -> service ->
 * backend by lb.h, with per-backend target ports, and service- or workload-level waypoints, whose
 * own service is resolved to a waypoint pod in the same pass. */
#ifndef KM_BPF_RESOLVE_H
#define KM_BPF_RESOLVE_H

#include "maps.h"
#include "addr.h"
#include "lb.h"
#include "ipsec.h"

#define KM_IPPROTO_TCP 6

/* km_target.via: what the connection is sent to, when not the destination itself. */
#define KM_VIA_WAYPOINT 1 /* a waypoint: the TLV must go first */
#define KM_VIA_TUNNEL 2   /* the tunnel's outbound listener: `to` is where it takes it (HBONE) */

/* Where a connection is sent. */
struct km_target {
	struct km_addr addr;
	__u16 port;       /* network byte order */
	__u16 via;        /* KM_VIA_*, 0 = straight to the destination */
	__u32 backend_id; /* the backend (or waypoint pod) whose live connections this one counts:
			   * picked by a P2C service; 0 = not counted (other services, addresses) */
	struct km_addr_port to; /* KM_VIA_TUNNEL only: the workload picked, and its target port */
};

/* km_resolve's answers. */
#define KM_RESOLVE_REWRITE 0 /* send it to *out */
#define KM_RESOLVE_REFUSE 1  /* fail the connect(): a waypoint that cannot be reached */
#define KM_RESOLVE_REFUSE_NO_ENDPOINT 3 /* fail it: a STRICT service with no endpoint in reach */
#define KM_RESOLVE_KEEP 2    /* leave the destination alone */

/* A backend's address of the family the socket can use: want_v6 prefers IPv6; an IPv6 socket
 * may still reach an IPv4-only backend through its v4-mapped address only where the caller says
 * so (allow_mapped). NULL when there is none. */
static __always_inline const struct km_addr *km_backend_addr(const struct km_backend_value *bv,
							     int want_v6, int allow_mapped)
{
	if (!want_v6)
		return km_addr_is_zero(&bv->addr4) ? NULL : &bv->addr4;
	if (!km_addr_is_zero(&bv->addr6))
		return &bv->addr6;
	return allow_mapped && !km_addr_is_zero(&bv->addr4) ? &bv->addr4 : NULL;
}

/* Send the connection to a waypoint. A waypoint that is a service frontend resolves to one of its
 * pods; any other address is dialled as it is. Failing closed: a waypoint that is pending or
 * cannot be resolved refuses the connection rather than letting it bypass the waypoint. */
static __noinline int km_to_waypoint(const struct km_waypoint_ref *wp, int want_v6,
				     struct km_target *out)
{
	struct km_frontend_key fk = { .port = wp->port, .proto = KM_IPPROTO_TCP };
	struct km_frontend_value *fv;
	struct km_service_value *sv;
	struct km_backend_value *bv;
	struct km_service_key sk;
	struct km_backend_key bk;
	const struct km_addr *pick;
	__u32 addr4;

	if (km_addr_is_zero(&wp->addr))
		return KM_RESOLVE_REFUSE;
	out->port = wp->data_port;
	out->via = KM_VIA_WAYPOINT;
	out->backend_id = 0;
	if (wp->data_port == bpf_htons(KM_TUNNEL_OUTBOUND_PORT)) {
		/* the tunnel's listener (kmesh_maps.h, HBONE outbound): the caller fills `to` */
		if (!want_v6 && !km_addr_is_v4mapped(&wp->addr))
			return KM_RESOLVE_REFUSE;
		out->via = KM_VIA_TUNNEL;
		__builtin_memcpy(&out->addr, &wp->addr, sizeof(out->addr));
		return KM_RESOLVE_REWRITE;
	}
	__builtin_memcpy(&fk.addr, &wp->addr, sizeof(fk.addr));
	fv = bpf_map_lookup_elem(&km_frontend, &fk);
	if (!fv || fv->kind != KM_FRONTEND_SERVICE) {
		if (!want_v6 && !km_addr_is_v4mapped(&wp->addr))
			return KM_RESOLVE_REFUSE; /* an IPv4 socket cannot reach an IPv6 waypoint */
		__builtin_memcpy(&out->addr, &wp->addr, sizeof(out->addr));
		return KM_RESOLVE_REWRITE;
	}
	sk.service_id = fv->upstream_id;
	sv = bpf_map_lookup_elem(&km_service, &sk);
	if (!sv)
		return KM_RESOLVE_REFUSE;
	bk.backend_id = km_pick_backend(sk.service_id, sv, &addr4);
	if (!bk.backend_id)
		return KM_RESOLVE_REFUSE;
	if (addr4 && !want_v6) { /* the slot carries the pod's address: no km_backend lookup */
		km_addr_from_v4(&out->addr, addr4);
	} else {
		bv = bpf_map_lookup_elem(&km_backend, &bk);
		pick = bv ? km_backend_addr(bv, want_v6, 1) : NULL;
		if (!pick)
			return KM_RESOLVE_REFUSE;
		__builtin_memcpy(&out->addr, pick, sizeof(out->addr));
	}
	out->backend_id = sv->flags & KM_SVC_F_P2C ? bk.backend_id : 0;
	return KM_RESOLVE_REWRITE;
}

/* A workload the tunnel would take that the kernel keeps instead: a pod of a node this one
 * exchanges IPsec with, where the agent's rule allows it (kmesh_maps.h, KM_TUNNEL_UNLESS_IPSEC).
 * Only connections bound for the tunnel pay the lookup. */
static __always_inline int km_tunnel_spared(const struct km_waypoint_ref *wp,
					    const struct km_addr *dst)
{
	return wp->port == bpf_htons(KM_TUNNEL_UNLESS_IPSEC) && km_ipsec_remote_pod(dst);
}

/* A connection to a pod IP: only a workload-level waypoint (or the tunnel) changes where it
 * goes; through the tunnel, to the address and port asked. */
static __always_inline int km_resolve_workload(__u32 backend_id, const struct km_addr *dst,
					       __u16 port_nbo, int want_v6, struct km_target *out)
{
	struct km_backend_key bk = { .backend_id = backend_id };
	struct km_backend_value *bv = bpf_map_lookup_elem(&km_backend, &bk);
	int rc;

	if (!bv || !bv->waypoint.port || km_tunnel_spared(&bv->waypoint, dst))
		return KM_RESOLVE_KEEP;
	rc = km_to_waypoint(&bv->waypoint, want_v6, out);
	if (out->via == KM_VIA_TUNNEL) {
		__builtin_memcpy(&out->to.addr, dst, sizeof(out->to.addr));
		out->to.port = port_nbo;
	}
	return rc;
}

/* The rest of a service connection's target once its address is set: the port (the backend's
 * own target port where it has one), and the backend to count if the service is P2C. */
static __always_inline int km_service_target(const struct km_frontend_value *fv, __u32 service_id,
					     __u32 backend_id, __u16 port_nbo, int p2c,
					     struct km_target *out)
{
	out->port = fv->target_port;
	out->via = 0;
	out->backend_id = p2c ? backend_id : 0;
	if (fv->flags & KM_FE_F_PORT_OVERRIDES) {
		struct km_port_override_key ok = {
			.service_id = service_id, .backend_id = backend_id, .port = port_nbo
		};
		struct km_port_override_value *ov = bpf_map_lookup_elem(&km_port_ovr, &ok);

		if (ov)
			out->port = ov->target_port;
	}
	return KM_RESOLVE_REWRITE;
}

/* A service's backend with a waypoint of its own: through it; or through the tunnel, which
 * must then reach the backend's address at the service's target port on it; or, a backend the
 * kernel keeps (km_tunnel_spared), straight to it. */
static __always_inline int km_via_backend_waypoint(const struct km_frontend_value *fv,
						   __u32 backend_id,
						   const struct km_backend_value *bv,
						   __u16 port_nbo, int want_v6, int p2c,
						   struct km_target *out)
{
	const struct km_addr *pick = km_backend_addr(bv, want_v6, 1);
	struct km_target t;
	int rc;

	if (pick && km_tunnel_spared(&bv->waypoint, pick)) {
		pick = km_backend_addr(bv, want_v6, 0);
		if (!pick)
			return KM_RESOLVE_KEEP;
		__builtin_memcpy(&out->addr, pick, sizeof(out->addr));
		return km_service_target(fv, fv->upstream_id, backend_id, port_nbo, p2c, out);
	}
	rc = km_to_waypoint(&bv->waypoint, want_v6, out);
	if (rc != KM_RESOLVE_REWRITE || out->via != KM_VIA_TUNNEL)
		return rc;
	if (!pick)
		return KM_RESOLVE_KEEP;
	km_service_target(fv, fv->upstream_id, backend_id, port_nbo, 0, &t);
	__builtin_memcpy(&out->to.addr, pick, sizeof(out->to.addr));
	out->to.port = t.port;
	return KM_RESOLVE_REWRITE;
}

/*
 * Resolve a destination (want_v6: the socket is IPv6 and the destination not v4-mapped).
 *   REWRITE — *out is where it goes;
 *   REFUSE  — a STRICT service with no endpoint in its best locality (sending it to the VIP
 *             would quietly break the locality guarantee), or a waypoint that cannot be reached;
 *   KEEP    — not ours (no frontend), PASSTHROUGH, no endpoint, or no address of the family.
 */
static __noinline int km_resolve(const struct km_addr *dst, __u16 port_nbo, int want_v6,
				 struct km_target *out)
{
	struct km_frontend_key fk = { .port = port_nbo, .proto = KM_IPPROTO_TCP };
	struct km_frontend_value *fv;
	struct km_service_value *sv;
	struct km_backend_value *bv;
	struct km_service_key sk;
	struct km_backend_key bk;
	const struct km_addr *pick;
	__u32 addr4;

	__builtin_memcpy(&fk.addr, dst, sizeof(fk.addr));
	fv = bpf_map_lookup_elem(&km_frontend, &fk);
	if (!fv) {
		fk.port = 0; /* a pod IP: one row for every port */
		fv = bpf_map_lookup_elem(&km_frontend, &fk);
		if (fv && fv->kind == KM_FRONTEND_WORKLOAD)
			return km_resolve_workload(fv->upstream_id, dst, port_nbo, want_v6, out);
		return KM_RESOLVE_KEEP;
	}
	if (fv->kind != KM_FRONTEND_SERVICE)
		return KM_RESOLVE_KEEP;
	sk.service_id = fv->upstream_id;
	/* A uniform pick the map writer copied into the row: no service row to read. A slot without
	 * an inline IPv4 address (a backend with its own waypoint, IPv6) takes the full path. */
	if ((fv->flags & KM_FE_F_PICK) && fv->pick_count && !want_v6) {
		bk.backend_id = km_endpoint_backend(sk.service_id, fv->pick_base, 0,
						    bpf_get_prandom_u32() % fv->pick_count, &addr4);
		if (bk.backend_id && addr4) {
			km_addr_from_v4(&out->addr, addr4);
			return km_service_target(fv, sk.service_id, bk.backend_id, port_nbo, 0, out);
		}
	}
	sv = bpf_map_lookup_elem(&km_service, &sk);
	if (!sv)
		return KM_RESOLVE_KEEP;
	if (sv->waypoint.port) {
		int rc = km_to_waypoint(&sv->waypoint, want_v6, out);

		if (out->via == KM_VIA_TUNNEL) { /* the waypoint is asked for the VIP:port itself */
			__builtin_memcpy(&out->to.addr, dst, sizeof(out->to.addr));
			out->to.port = port_nbo;
		}
		return rc;
	}
	if (sv->lb_mode == KM_LB_PASSTHROUGH)
		return KM_RESOLVE_KEEP; /* the original destination, by definition */
	bk.backend_id = km_pick_backend(sk.service_id, sv, &addr4);
	if (bk.backend_id == 0)
		return sv->lb_mode == KM_LB_STRICT ? KM_RESOLVE_REFUSE_NO_ENDPOINT : KM_RESOLVE_KEEP;
	if (addr4 && !want_v6) {
		/* the slot carries the pod's address, written only for a backend without a
		 * waypoint of its own: one lookup less on the hot path */
		km_addr_from_v4(&out->addr, addr4);
	} else {
		bv = bpf_map_lookup_elem(&km_backend, &bk);
		if (!bv)
			return KM_RESOLVE_KEEP;
		if (bv->waypoint.port)
			return km_via_backend_waypoint(fv, bk.backend_id, bv, port_nbo, want_v6,
						       sv->flags & KM_SVC_F_P2C, out);
		pick = km_backend_addr(bv, want_v6, 0);
		if (!pick)
			return KM_RESOLVE_KEEP;
		__builtin_memcpy(&out->addr, pick, sizeof(out->addr));
	}
	return km_service_target(fv, sk.service_id, bk.backend_id, port_nbo,
				 sv->flags & KM_SVC_F_P2C, out);
}

#endif
