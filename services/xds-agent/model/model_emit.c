/* model_emit.c — the model's table operations: one function per row kind (see model.h for the
 * order they are emitted in), and the waypoint as rows carry it. */
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/model/model_internal.h"

/* ---- waypoints ----------------------------------------------------------------------------- */

/* The waypoint as the tables carry it. A hostname waypoint resolves to the first VIP of the
 * waypoint service; until that service (with a VIP) is known it is pending (port, no address). */
void mdl_resolve_waypoint(struct km_model *m, const struct km_waypoint *wp, struct km_op_waypoint *out)
{
	memset(out, 0, sizeof(*out));
	if (wp->kind == KM_WAYPOINT_NONE)
		return;
	out->port = (uint16_t)wp->hbone_port;
	out->data_port = m->waypoint_data_port ? m->waypoint_data_port : out->port;
	if (wp->kind == KM_WAYPOINT_ADDRESS) {
		out->addr = wp->addr;
		out->has_addr = 1;
		return;
	}
	{
		struct km_model_svc *s = mdl_svc_get(m, wp->service, 0);

		if (s && s->res && s->res->n_vips) {
			out->addr = s->res->vips[0];
			out->has_addr = 1;
		}
	}
}

/* A resolved waypoint reached over HBONE: through the tunnel's listener, which asks where the
 * waypoint's pods are (tunnel_route.h). Pending stays pending (refused, never around it). */
static void via_tunnel(const struct km_model *m, struct km_op_waypoint *out)
{
	if (!m->tunnel_on || !m->waypoint_hbone || !out->port || !out->has_addr)
		return;
	out->addr = m->tunnel_addr;
	out->port = out->data_port = KM_TUNNEL_OUTBOUND_PORT;
}

/* A service never sends its own traffic through itself (a waypoint service named as its own
 * waypoint would loop): such a waypoint is ignored. */
void mdl_service_waypoint(struct km_model *m, const struct km_model_svc *s, struct km_op_waypoint *out)
{
	const struct km_service_res *r = s->res;

	mdl_resolve_waypoint(m, &r->waypoint, out);
	if (r->waypoint.kind == KM_WAYPOINT_HOSTNAME && strcmp(r->waypoint.service, s->name) == 0)
		memset(out, 0, sizeof(*out));
	for (size_t i = 0; out->has_addr && i < r->n_vips; i++)
		if (memcmp(&r->vips[i], &out->addr, sizeof(out->addr)) == 0)
			memset(out, 0, sizeof(*out));
	via_tunnel(m, out);
}

/* Reached over HBONE from here, through the tunnel (kmesh_maps.h, HBONE outbound): HBONE, not
 * on this node (a pod here is reached by the kernel), with an address of the tunnel's family. A
 * workload with a waypoint of its own goes to the waypoint instead. */
int mdl_wl_tunneled(const struct km_model *m, const struct km_workload_res *r)
{
	if (!m->tunnel_on || !r->tunnel_hbone || r->host_network ||
	    km_wl_waypoint(r)->kind != KM_WAYPOINT_NONE)
		return 0;
	if (m->local.node && r->where && r->where->node && strcmp(m->local.node, r->where->node) == 0)
		return 0;
	for (size_t i = 0; i < r->n_addrs; i++)
		if (km_addr_is_v4(&r->addrs[i]))
			return 1;
	return 0;
}

const char *km_model_route_why(const struct km_model *m, const struct km_workload_res *w,
			       const struct km_service_res *svc, int tunneled)
{
	int waypoint = (svc && svc->waypoint.kind != KM_WAYPOINT_NONE) ||
		       (w && km_wl_waypoint(w)->kind != KM_WAYPOINT_NONE);
	int v4 = 0;

	if (tunneled)
		return waypoint ? "waypoint" : "hbone_workload";
	if (waypoint)
		return "waypoint_tlv";
	if (!w)
		return "outside_mesh";
	if (m->local.node && w->where && w->where->node && strcmp(m->local.node, w->where->node) == 0)
		return "same_node";
	if (!w->tunnel_hbone)
		return "no_hbone";
	if (!m->tunnel_on)
		return "tunnel_off";
	if (w->host_network)
		return "host_network";
	for (size_t i = 0; i < w->n_addrs; i++)
		v4 |= km_addr_is_v4(&w->addrs[i]);
	return v4 ? "ipsec" : "no_ipv4";
}

/* ---- op emitters --------------------------------------------------------------------------- */

static struct km_op *add(struct km_model *m, enum km_op_table table, int del, int now)
{
	return now ? km_oplist_add_now(m->out, table, del) : km_oplist_add(m->out, table, del);
}

void mdl_emit_service(struct km_model *m, const struct km_model_svc *s, int now)
{
	struct km_op *op = add(m, KM_OP_SERVICE, 0, now);

	if (!op)
		return;
	op->svc.id = s->id;
	op->svc.lb_mode = s->res->lb_mode;
	for (int p = 0; p < KM_PRIO_COUNT; p++) {
		op->svc.count[p] = mdl_n_eps(s, (uint32_t)p);
		op->svc.weight_total[p] = mdl_group_total(s, (uint32_t)p);
	}
	op->svc.flags = mdl_service_p2c(m, s) ? KM_SVC_F_P2C : 0;
	mdl_service_waypoint(m, s, &op->svc.waypoint);
}

/* w: the slot's workload when the caller has it at hand (its address then needs no lookup by
 * id: a cache miss or two per endpoint while a service's members are loaded), else NULL. */
static void emit_endpoint(struct km_model *m, const struct km_model_svc *s, uint32_t prio,
			  uint32_t index, int del, int now, const struct km_model_wl *w)
{
	struct km_op *op = add(m, KM_OP_ENDPOINT, del, now);

	if (!op)
		return;
	op->ep.service_id = s->id;
	op->ep.prio = prio;
	op->ep.index = index;
	if (del)
		return;
	op->ep.backend_id = mdl_group_of(s, prio)->eps[index];
	op->ep.cum_weight = mdl_slot_cum(s, prio, index);
	op->ep.addr4 = w ? w->inline4 : mdl_workload_inline4(m, op->ep.backend_id);
}

void mdl_emit_endpoint(struct km_model *m, const struct km_model_svc *s, uint32_t prio,
			  uint32_t index, int del, int now)
{
	emit_endpoint(m, s, prio, index, del, now, NULL);
}

void mdl_emit_new_endpoint(struct km_model *m, const struct km_model_svc *s, uint32_t prio,
			      uint32_t index, const struct km_model_wl *w)
{
	emit_endpoint(m, s, prio, index, 0, 0, w);
}

uint32_t mdl_inline4(const struct km_op *backend_row)
{
	return backend_row->be.has4 && !backend_row->be.waypoint.port
		       ? backend_row->be.addr4.words[3]
		       : 0;
}

void mdl_emit_override(struct km_model *m, const struct km_model_svc *s, const struct override *o,
			  int del)
{
	struct km_op *op = km_oplist_add(m->out, KM_OP_PORT_OVERRIDE, del);

	if (!op)
		return;
	op->po.service_id = s->id;
	op->po.backend_id = o->backend_id;
	op->po.port = o->port;
	op->po.target_port = del ? 0 : o->target;
}

/* The backend row a workload should have now (addresses: the first of each family). */
void mdl_backend_row(struct km_model *m, const struct km_model_wl *w, struct km_op *op)
{
	const struct km_workload_res *r = w->res;

	memset(op, 0, sizeof(*op));
	op->table = KM_OP_BACKEND;
	op->be.id = w->id;
	for (size_t i = 0; i < r->n_addrs; i++) {
		int v4 = km_addr_is_v4(&r->addrs[i]);

		if (v4 && !op->be.has4) {
			op->be.addr4 = r->addrs[i];
			op->be.has4 = 1;
		} else if (!v4 && !op->be.has6) {
			op->be.addr6 = r->addrs[i];
			op->be.has6 = 1;
		}
	}
	mdl_resolve_waypoint(m, km_wl_waypoint(r), &op->be.waypoint);
	via_tunnel(m, &op->be.waypoint);
	if (!op->be.waypoint.port && mdl_wl_tunneled(m, r)) {
		op->be.waypoint.addr = m->tunnel_addr;
		op->be.waypoint.has_addr = 1;
		op->be.waypoint.data_port = KM_TUNNEL_OUTBOUND_PORT;
		op->be.waypoint.port = m->hbone_over_ipsec ? KM_TUNNEL_OUTBOUND_PORT
							   : KM_TUNNEL_UNLESS_IPSEC;
	}
	op->be.weight = km_wl_capacity(r) ? km_wl_capacity(r) : 1;
}

/* Eight bytes a step (a byte a step was 2.6% of the agent's CPU at 100k: ~100 dependent
 * multiplies per workload). Each step is a bijection of the state for a given word (xor, an odd
 * multiplier, a shift-xor), so rows that differ in one word never share a sum. */
uint64_t mdl_row_sum(const struct km_op *op)
{
	const uint8_t *p = (const uint8_t *)op;
	uint64_t h = 14695981039346656037ull, word;
	size_t i = 0;

	for (; i + sizeof(word) <= sizeof(*op); i += sizeof(word)) {
		memcpy(&word, p + i, sizeof(word));
		h = (h ^ word) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
	}
	for (; i < sizeof(*op); i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

void mdl_emit_backend(struct km_model *m, struct km_model_wl *w, const struct km_op *row)
{
	struct km_op built, *op;

	if (!row) {
		mdl_backend_row(m, w, &built);
		row = &built;
	}
	w->backend_sum = mdl_row_sum(row);
	op = km_oplist_add(m->out, KM_OP_BACKEND, 0);
	if (op)
		*op = *row;
}

void mdl_emit_backend_delete(struct km_model *m, const struct km_model_wl *w)
{
	struct km_op *op = km_oplist_add(m->out, KM_OP_BACKEND, 1);

	if (op)
		op->be.id = w->id;
}
