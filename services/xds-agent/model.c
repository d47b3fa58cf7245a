/* model.c — the workload model and its ordered table operations (see model.h). */
#include "services/xds-agent/model.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "shared/addr.h"
#include "shared/log.h"

/* A port-override row written for (this service, backend, service port). */
struct override {
	uint32_t backend_id;
	uint16_t port;
	uint16_t target;
};

struct km_model_svc {
	char *name;
	uint32_t id; /* 0 while no resource is known */
	struct km_service_res *res;
	uint32_t *eps[KM_PRIO_COUNT]; /* backend ids in slot order, per priority */
	size_t n_eps[KM_PRIO_COUNT], cap_eps[KM_PRIO_COUNT];
	struct km_model_wl **members; /* workloads that list this service */
	size_t n_members, cap_members;
	struct override *ovr;
	size_t n_ovr, cap_ovr;
	int svc_written;     /* its service row exists: frontends may be written */
	int fe_flag_written; /* KM_FE_F_PORT_OVERRIDES as last written in its frontends */
	/* waypoints: the waypoint service this one names (hostname form), and the objects that
	 * name this one, with the address they were last given */
	struct km_model_svc *wp_of;
	struct km_model_svc **wp_svcs;
	size_t n_wp_svcs, cap_wp_svcs;
	struct km_model_wl **wp_wls;
	size_t n_wp_wls, cap_wp_wls;
	struct km_addr published_vip;
	int published;
	int in_dirty;    /* in m->dirty (pointer kept until flush) */
	int count_dirty; /* the service row must be re-emitted at flush */
	UT_hash_handle hh;
};

struct km_model_wl {
	char *uid;
	uint32_t id;
	struct km_workload_res *res;
	int backend_written;
	struct km_op last_backend; /* the backend row as last written */
	struct km_model_svc *wp_of;
	UT_hash_handle hh;
};

/* ---- small helpers ------------------------------------------------------------------------- */

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 8;
	while (ncap < need)
		ncap *= 2;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = ncap;
	return 0;
}

static void parr_add(struct km_model *m, void ***arr, size_t *n, size_t *cap, void *p)
{
	for (size_t i = 0; i < *n; i++)
		if ((*arr)[i] == p)
			return;
	if (grow((void **)arr, cap, *n + 1, sizeof(void *)) != 0) {
		m->out->oom = 1;
		return;
	}
	(*arr)[(*n)++] = p;
}

static void parr_del(void **arr, size_t *n, void *p)
{
	for (size_t i = 0; i < *n; i++) {
		if (arr[i] == p) {
			arr[i] = arr[--*n];
			return;
		}
	}
}

static int str_eq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

static void mark_dirty(struct km_model *m, struct km_model_svc *s, int count)
{
	if (count)
		s->count_dirty = 1;
	if (s->in_dirty)
		return;
	if (grow((void **)&m->dirty, &m->cap_dirty, m->n_dirty + 1, sizeof(*m->dirty)) != 0) {
		m->out->oom = 1;
		return;
	}
	m->dirty[m->n_dirty++] = s;
	s->in_dirty = 1;
}

static struct km_model_svc *svc_get(struct km_model *m, const char *name, int create)
{
	struct km_model_svc *s;

	HASH_FIND_STR(m->services, name, s);
	if (s || !create)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->name = strdup(name))) {
		free(s);
		m->out->oom = 1;
		return NULL;
	}
	HASH_ADD_KEYPTR(hh, m->services, s->name, strlen(s->name), s);
	mark_dirty(m, s, 0); /* freed at flush if it turns out unused */
	return s;
}

/* ---- waypoints ----------------------------------------------------------------------------- */

/* The waypoint as the tables carry it. A hostname waypoint resolves to the first VIP of the
 * waypoint service; until that service (with a VIP) is known it is pending (port, no address). */
static void resolve_waypoint(struct km_model *m, const struct km_waypoint *wp, struct km_op_waypoint *out)
{
	memset(out, 0, sizeof(*out));
	if (wp->kind == KM_WAYPOINT_NONE)
		return;
	out->port = (uint16_t)wp->hbone_port;
	if (wp->kind == KM_WAYPOINT_ADDRESS) {
		out->addr = wp->addr;
		out->has_addr = 1;
		return;
	}
	{
		struct km_model_svc *s = svc_get(m, wp->service, 0);

		if (s && s->res && s->res->n_vips) {
			out->addr = s->res->vips[0];
			out->has_addr = 1;
		}
	}
}

/* A service never sends its own traffic through itself (a waypoint service named as its own
 * waypoint would loop): such a waypoint is ignored. */
static void service_waypoint(struct km_model *m, const struct km_model_svc *s, struct km_op_waypoint *out)
{
	const struct km_service_res *r = s->res;

	resolve_waypoint(m, &r->waypoint, out);
	if (r->waypoint.kind == KM_WAYPOINT_HOSTNAME && strcmp(r->waypoint.service, s->name) == 0)
		memset(out, 0, sizeof(*out));
	for (size_t i = 0; out->has_addr && i < r->n_vips; i++)
		if (memcmp(&r->vips[i], &out->addr, sizeof(out->addr)) == 0)
			memset(out, 0, sizeof(*out));
}

/* ---- op emitters --------------------------------------------------------------------------- */

static void emit_service(struct km_model *m, const struct km_model_svc *s)
{
	struct km_op *op = km_oplist_add(m->out, KM_OP_SERVICE, 0);

	if (!op)
		return;
	op->svc.id = s->id;
	op->svc.lb_mode = s->res->lb_mode;
	for (int p = 0; p < KM_PRIO_COUNT; p++)
		op->svc.count[p] = (uint32_t)s->n_eps[p];
	service_waypoint(m, s, &op->svc.waypoint);
}

static void emit_endpoint(struct km_model *m, const struct km_model_svc *s, uint32_t prio,
			  uint32_t index, int del)
{
	struct km_op *op = km_oplist_add(m->out, KM_OP_ENDPOINT, del);

	if (!op)
		return;
	op->ep.service_id = s->id;
	op->ep.prio = prio;
	op->ep.index = index;
	op->ep.backend_id = del ? 0 : s->eps[prio][index];
}

static void emit_service_frontend(struct km_model *m, const struct km_model_svc *s,
				  const struct km_addr *vip, const struct km_port *port, int del)
{
	struct km_op *op = km_oplist_add(m->out, KM_OP_FRONTEND, del);

	if (!op)
		return;
	op->fe.addr = *vip;
	op->fe.port = (uint16_t)port->service_port;
	op->fe.kind = KM_FRONTEND_SERVICE;
	if (del)
		return;
	op->fe.upstream_id = s->id;
	op->fe.target_port = (uint16_t)(port->target_port ? port->target_port : port->service_port);
	op->fe.flags = s->fe_flag_written ? KM_FE_F_PORT_OVERRIDES : 0;
}

static void emit_service_frontends(struct km_model *m, const struct km_model_svc *s, int del)
{
	for (size_t v = 0; v < s->res->n_vips; v++)
		for (size_t p = 0; p < s->res->n_ports; p++)
			emit_service_frontend(m, s, &s->res->vips[v], &s->res->ports[p], del);
}

static void emit_workload_frontend(struct km_model *m, const struct km_model_wl *w,
				   const struct km_addr *addr, int del)
{
	struct km_op *op = km_oplist_add(m->out, KM_OP_FRONTEND, del);

	if (!op)
		return;
	op->fe.addr = *addr;
	op->fe.kind = KM_FRONTEND_WORKLOAD;
	op->fe.upstream_id = del ? 0 : w->id;
}

static void emit_override(struct km_model *m, const struct km_model_svc *s, const struct override *o,
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
static void backend_row(struct km_model *m, const struct km_model_wl *w, struct km_op *op)
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
	resolve_waypoint(m, &r->waypoint, &op->be.waypoint);
	op->be.weight = r->capacity ? r->capacity : 1;
}

static void emit_backend(struct km_model *m, struct km_model_wl *w)
{
	struct km_op *op = km_oplist_add(m->out, KM_OP_BACKEND, 0);

	if (op)
		*op = w->last_backend;
}

static void emit_backend_delete(struct km_model *m, const struct km_model_wl *w)
{
	struct km_op *op = km_oplist_add(m->out, KM_OP_BACKEND, 1);

	if (op)
		op->be.id = w->id;
}

/* ---- locality ------------------------------------------------------------------------------ */

static int scope_matches(const struct km_model_local *l, const struct km_workload_res *w, uint32_t scope)
{
	switch (scope) {
	case KM_SCOPE_REGION:
		return str_eq(l->region, w->region);
	case KM_SCOPE_ZONE:
		return str_eq(l->zone, w->zone);
	case KM_SCOPE_SUBZONE:
		return str_eq(l->subzone, w->subzone);
	case KM_SCOPE_NODE:
		return str_eq(l->node, w->node);
	case KM_SCOPE_CLUSTER:
		return str_eq(l->cluster_id, w->cluster_id);
	case KM_SCOPE_NETWORK:
		return str_eq(l->network, w->network);
	default:
		return 0;
	}
}

/* Priority group of a workload in a service: for STRICT and FAILOVER, the number of
 * routing-preference scopes minus how many of them, from the first, the workload shares with
 * this node (0 = shares all). Everything else, and an unknown local locality, is group 0. */
static uint32_t endpoint_prio(const struct km_model *m, const struct km_model_svc *s,
			      const struct km_model_wl *w)
{
	const struct km_service_res *r = s->res;
	uint32_t rank = 0;

	if (!r || (r->lb_mode != KM_LB_STRICT && r->lb_mode != KM_LB_FAILOVER) || !m->local.known)
		return 0;
	while (rank < r->n_scopes && scope_matches(&m->local, w->res, r->scopes[rank]))
		rank++;
	return (uint32_t)r->n_scopes - rank;
}

/* ---- endpoint slots ------------------------------------------------------------------------ */

static int find_slot(const struct km_model_svc *s, uint32_t backend_id, uint32_t *prio, size_t *idx)
{
	for (uint32_t p = 0; p < KM_PRIO_COUNT; p++)
		for (size_t i = 0; i < s->n_eps[p]; i++)
			if (s->eps[p][i] == backend_id) {
				*prio = p;
				*idx = i;
				return 1;
			}
	return 0;
}

/* Append without emitting the count: the service row follows at flush (or, for a new service,
 * right after its endpoints). */
static void endpoint_append(struct km_model *m, struct km_model_svc *s, uint32_t prio,
			    uint32_t backend_id)
{
	if (grow((void **)&s->eps[prio], &s->cap_eps[prio], s->n_eps[prio] + 1,
		 sizeof(*s->eps[prio])) != 0) {
		m->out->oom = 1;
		return;
	}
	s->eps[prio][s->n_eps[prio]++] = backend_id;
	emit_endpoint(m, s, prio, (uint32_t)s->n_eps[prio] - 1, 0);
}

/* Remove slot i: move the last slot into it, shrink the count, then delete the old last slot.
 * BPF sees at every step only slots that hold a live backend. */
static void endpoint_remove(struct km_model *m, struct km_model_svc *s, uint32_t prio, size_t i)
{
	size_t last = s->n_eps[prio] - 1;

	if (i != last) {
		s->eps[prio][i] = s->eps[prio][last];
		emit_endpoint(m, s, prio, (uint32_t)i, 0);
	}
	s->n_eps[prio]--;
	emit_service(m, s);
	emit_endpoint(m, s, prio, (uint32_t)last, 1);
}

/* ---- per-workload target ports ------------------------------------------------------------- */

/* After override rows changed: the service's frontends say whether to look them up. */
static void update_frontend_flag(struct km_model *m, struct km_model_svc *s)
{
	int want = s->n_ovr > 0;

	if (!s->res || want == s->fe_flag_written)
		return;
	s->fe_flag_written = want;
	if (s->svc_written) /* a new service writes its frontends, with the flag, after its row */
		emit_service_frontends(m, s, 0);
}

/* Make the override rows of (service, workload) what the workload's port list says; with
 * want == 0, remove them all. */
static void sync_overrides(struct km_model *m, struct km_model_svc *s, struct km_model_wl *w, int want)
{
	const struct km_membership *ms = want ? km_workload_membership(w->res, s->name) : NULL;

	/* drop rows that are no longer right */
	for (size_t i = 0; i < s->n_ovr;) {
		struct override *o = &s->ovr[i];
		uint32_t t = ms ? km_target_port(s->res, ms, o->port) : 0;

		if (o->backend_id == w->id && (!ms || t == km_target_port(s->res, NULL, o->port) ||
					       t != o->target)) {
			emit_override(m, s, o, 1);
			s->ovr[i] = s->ovr[--s->n_ovr];
			continue;
		}
		i++;
	}
	/* add what is missing */
	for (size_t p = 0; ms && p < s->res->n_ports; p++) {
		uint32_t port = s->res->ports[p].service_port;
		uint32_t t = km_target_port(s->res, ms, port);
		int have = 0;

		if (t == km_target_port(s->res, NULL, port))
			continue;
		for (size_t i = 0; i < s->n_ovr && !have; i++)
			have = s->ovr[i].backend_id == w->id && s->ovr[i].port == port;
		if (have)
			continue;
		if (grow((void **)&s->ovr, &s->cap_ovr, s->n_ovr + 1, sizeof(*s->ovr)) != 0) {
			m->out->oom = 1;
			return;
		}
		s->ovr[s->n_ovr] = (struct override){ w->id, (uint16_t)port, (uint16_t)t };
		emit_override(m, s, &s->ovr[s->n_ovr], 0);
		s->n_ovr++;
	}
	update_frontend_flag(m, s);
}

/* ---- membership -> endpoint ---------------------------------------------------------------- */

static int eligible(const struct km_model_svc *s, const struct km_model_wl *w)
{
	return w->backend_written &&
	       (w->res->status == KM_WORKLOAD_HEALTHY || (s->res && s->res->allow_unhealthy));
}

/* Make the workload an endpoint of the service (in the right priority, with the right port
 * overrides) iff it should be one. Overrides are written before the endpoint is exposed and
 * removed after it is gone. */
static void sync_endpoint(struct km_model *m, struct km_model_svc *s, struct km_model_wl *w)
{
	uint32_t prio = 0, want_prio;
	size_t idx = 0;
	int have;

	if (!s->res)
		return;
	have = find_slot(s, w->id, &prio, &idx);
	if (!eligible(s, w)) {
		if (have)
			endpoint_remove(m, s, prio, idx);
		sync_overrides(m, s, w, 0);
		return;
	}
	sync_overrides(m, s, w, 1);
	want_prio = endpoint_prio(m, s, w);
	if (have && prio == want_prio)
		return;
	endpoint_append(m, s, want_prio, w->id); /* new group first ... */
	mark_dirty(m, s, 1);
	if (have)
		endpoint_remove(m, s, prio, idx); /* ... then out of the old one */
}

static void sync_all_endpoints(struct km_model *m, struct km_model_svc *s)
{
	for (size_t i = 0; i < s->n_members; i++)
		sync_endpoint(m, s, s->members[i]);
}

/* ---- waypoint dependencies ----------------------------------------------------------------- */

static struct km_model_svc *waypoint_target(struct km_model *m, const struct km_waypoint *wp)
{
	return wp->kind == KM_WAYPOINT_HOSTNAME ? svc_get(m, wp->service, 1) : NULL;
}

static void register_service_waypoint(struct km_model *m, struct km_model_svc *s)
{
	struct km_model_svc *t = s->res ? waypoint_target(m, &s->res->waypoint) : NULL;

	if (t == s->wp_of)
		return;
	if (s->wp_of) {
		parr_del((void **)s->wp_of->wp_svcs, &s->wp_of->n_wp_svcs, s);
		mark_dirty(m, s->wp_of, 0);
	}
	if (t)
		parr_add(m, (void ***)&t->wp_svcs, &t->n_wp_svcs, &t->cap_wp_svcs, s);
	s->wp_of = t;
}

static void register_workload_waypoint(struct km_model *m, struct km_model_wl *w)
{
	struct km_model_svc *t = w->res ? waypoint_target(m, &w->res->waypoint) : NULL;

	if (t == w->wp_of)
		return;
	if (w->wp_of) {
		parr_del((void **)w->wp_of->wp_wls, &w->wp_of->n_wp_wls, w);
		mark_dirty(m, w->wp_of, 0);
	}
	if (t)
		parr_add(m, (void ***)&t->wp_wls, &t->n_wp_wls, &t->cap_wp_wls, w);
	w->wp_of = t;
}

/* A waypoint service's first VIP is what its dependents use: when it changes (or the service
 * comes or goes), their rows are rewritten. */
static void publish_waypoint_address(struct km_model *m, struct km_model_svc *s)
{
	int now = s->res && s->res->n_vips;
	struct km_addr vip;

	memset(&vip, 0, sizeof(vip));
	if (now)
		vip = s->res->vips[0];
	if (now == s->published && (!now || memcmp(&vip, &s->published_vip, sizeof(vip)) == 0))
		return;
	s->published = now;
	s->published_vip = vip;
	for (size_t i = 0; i < s->n_wp_svcs; i++)
		if (s->wp_svcs[i]->res)
			emit_service(m, s->wp_svcs[i]);
	for (size_t i = 0; i < s->n_wp_wls; i++) {
		struct km_model_wl *w = s->wp_wls[i];

		if (w->backend_written) {
			backend_row(m, w, &w->last_backend);
			emit_backend(m, w);
		}
	}
}

/* ---- services ------------------------------------------------------------------------------ */

static void svc_free(struct km_model_svc *s)
{
	for (int p = 0; p < KM_PRIO_COUNT; p++)
		free(s->eps[p]);
	free(s->members);
	free(s->ovr);
	free(s->wp_svcs);
	free(s->wp_wls);
	km_service_res_free(s->res);
	free(s->name);
	free(s);
}

static int frontend_in(const struct km_service_res *r, const struct km_addr *vip,
		       const struct km_port *port, int same_target)
{
	int has_vip = 0;

	for (size_t v = 0; v < r->n_vips && !has_vip; v++)
		has_vip = memcmp(&r->vips[v], vip, sizeof(*vip)) == 0;
	if (!has_vip)
		return 0;
	for (size_t p = 0; p < r->n_ports; p++)
		if (r->ports[p].service_port == port->service_port)
			return !same_target ||
			       km_target_port(r, NULL, port->service_port) ==
				       (port->target_port ? port->target_port : port->service_port);
	return 0;
}

void km_model_upsert_service(struct km_model *m, struct km_service_res *res)
{
	struct km_model_svc *s = svc_get(m, res->name, 1);
	struct km_service_res *old;

	if (!s) {
		km_service_res_free(res);
		return;
	}
	if (!s->res) {
		s->id = km_ids_get(&m->ids, res->name);
		s->res = res;
		m->n_services++;
		register_service_waypoint(m, s);
		/* Back-fill: workloads that listed this service before it arrived. */
		for (size_t i = 0; i < s->n_members; i++) {
			struct km_model_wl *w = s->members[i];

			if (eligible(s, w)) {
				sync_overrides(m, s, w, 1);
				endpoint_append(m, s, endpoint_prio(m, s, w), w->id);
			}
		}
		s->fe_flag_written = s->n_ovr > 0;
		emit_service(m, s);
		s->svc_written = 1;
		emit_service_frontends(m, s, 0);
		publish_waypoint_address(m, s);
		return;
	}
	old = s->res;
	if (km_service_res_equal(old, res)) {
		km_service_res_free(res);
		return;
	}
	for (size_t v = 0; v < old->n_vips; v++)
		for (size_t p = 0; p < old->n_ports; p++)
			if (!frontend_in(res, &old->vips[v], &old->ports[p], 0))
				emit_service_frontend(m, s, &old->vips[v], &old->ports[p], 1);
	s->res = res;
	register_service_waypoint(m, s);
	/* mode, priorities, health policy, port overrides: recompute every endpoint (counts follow
	 * at flush) */
	sync_all_endpoints(m, s);
	if (old->lb_mode != res->lb_mode || !km_waypoint_equal(&old->waypoint, &res->waypoint))
		emit_service(m, s);
	for (size_t v = 0; v < res->n_vips; v++)
		for (size_t p = 0; p < res->n_ports; p++)
			if (!frontend_in(old, &res->vips[v], &res->ports[p], 1))
				emit_service_frontend(m, s, &res->vips[v], &res->ports[p], 0);
	publish_waypoint_address(m, s);
	km_service_res_free(old);
}

void km_model_remove_service(struct km_model *m, const char *name)
{
	struct km_model_svc *s = svc_get(m, name, 0);
	struct km_op *op;

	if (!s || !s->res)
		return;
	emit_service_frontends(m, s, 1);
	op = km_oplist_add(m->out, KM_OP_SERVICE, 1);
	if (op)
		op->svc.id = s->id;
	for (uint32_t p = 0; p < KM_PRIO_COUNT; p++) {
		for (size_t i = 0; i < s->n_eps[p]; i++)
			emit_endpoint(m, s, p, (uint32_t)i, 1);
		s->n_eps[p] = 0;
	}
	for (size_t i = 0; i < s->n_ovr; i++)
		emit_override(m, s, &s->ovr[i], 1);
	s->n_ovr = 0;
	s->fe_flag_written = 0;
	s->svc_written = 0;
	km_ids_release(&m->ids, name);
	km_service_res_free(s->res);
	s->res = NULL;
	register_service_waypoint(m, s);
	publish_waypoint_address(m, s); /* dependents fall back to "pending" */
	s->id = 0;
	s->count_dirty = 0;
	m->n_services--;
	mark_dirty(m, s, 0); /* freed at flush if nothing refers to it any more */
}

/* ---- workloads ----------------------------------------------------------------------------- */

/* The workload no longer lists the service: drop its endpoint, overrides and membership. */
static void member_remove(struct km_model *m, struct km_model_svc *s, struct km_model_wl *w)
{
	uint32_t prio;
	size_t idx = 0;

	if (s->res) {
		if (find_slot(s, w->id, &prio, &idx))
			endpoint_remove(m, s, prio, idx);
		sync_overrides(m, s, w, 0);
	}
	parr_del((void **)s->members, &s->n_members, w);
	mark_dirty(m, s, 0);
}

/* Addresses that get pod-IP frontend rows: none for host-network workloads (they share the
 * node's IP, so the IP does not name them). */
static size_t frontend_addrs(const struct km_workload_res *r, const struct km_addr **addrs)
{
	*addrs = r ? r->addrs : NULL;
	return r && !r->host_network ? r->n_addrs : 0;
}

static int in_addrs(const struct km_addr *list, size_t n, const struct km_addr *a)
{
	for (size_t i = 0; i < n; i++)
		if (memcmp(&list[i], a, sizeof(*a)) == 0)
			return 1;
	return 0;
}

static void learn_local_locality(struct km_model *m, const struct km_workload_res *r)
{
	struct km_model_local *l = &m->local;
	struct km_model_svc *s, *tmp;

	if (l->known || !l->node || !str_eq(l->node, r->node))
		return;
	l->region = r->region ? strdup(r->region) : NULL;
	l->zone = r->zone ? strdup(r->zone) : NULL;
	l->subzone = r->subzone ? strdup(r->subzone) : NULL;
	l->cluster_id = r->cluster_id ? strdup(r->cluster_id) : NULL;
	l->network = r->network ? strdup(r->network) : NULL;
	l->known = 1;
	km_info("local locality learnt from %s: region '%s' zone '%s' subzone '%s'", r->uid,
		l->region ? l->region : "", l->zone ? l->zone : "", l->subzone ? l->subzone : "");
	HASH_ITER(hh, m->services, s, tmp)
		if (s->res && (s->res->lb_mode == KM_LB_STRICT || s->res->lb_mode == KM_LB_FAILOVER))
			sync_all_endpoints(m, s);
}

void km_model_upsert_workload(struct km_model *m, struct km_workload_res *res)
{
	struct km_model_wl *w;
	struct km_workload_res *old;
	const struct km_addr *old_fe = NULL, *new_fe = NULL;
	size_t n_old_fe, n_new_fe;
	struct km_op row;
	int had_backend, has_addr;

	HASH_FIND_STR(m->workloads, res->uid, w);
	if (!w) {
		w = calloc(1, sizeof(*w));
		if (!w || !(w->uid = strdup(res->uid)) || !(w->id = km_ids_get(&m->ids, res->uid))) {
			if (w)
				free(w->uid);
			free(w);
			km_workload_res_free(res);
			m->out->oom = 1;
			return;
		}
		HASH_ADD_KEYPTR(hh, m->workloads, w->uid, strlen(w->uid), w);
		m->n_workloads++;
	}
	old = w->res;
	if (old && km_workload_res_equal(old, res)) {
		km_workload_res_free(res);
		return;
	}
	had_backend = w->backend_written;
	n_old_fe = had_backend ? frontend_addrs(old, &old_fe) : 0;
	w->res = res;
	register_workload_waypoint(m, w);
	backend_row(m, w, &row);
	has_addr = row.be.has4 || row.be.has6;

	/* 1. The backend row first, so every later row may name it. */
	if (has_addr && (!had_backend || memcmp(&row, &w->last_backend, sizeof(row)) != 0)) {
		w->last_backend = row;
		w->backend_written = 1;
		emit_backend(m, w);
	}
	if (!has_addr)
		w->backend_written = 0;
	n_new_fe = w->backend_written ? frontend_addrs(res, &new_fe) : 0;

	/* 2. Pod-IP frontends that went away. */
	for (size_t i = 0; i < n_old_fe; i++)
		if (!in_addrs(new_fe, n_new_fe, &old_fe[i]))
			emit_workload_frontend(m, w, &old_fe[i], 1);

	/* 3. Service memberships and endpoints. */
	for (size_t i = 0; old && i < old->n_services; i++) {
		if (!km_workload_membership(res, old->services[i].service)) {
			struct km_model_svc *s = svc_get(m, old->services[i].service, 0);

			if (s)
				member_remove(m, s, w);
		}
	}
	for (size_t i = 0; i < res->n_services; i++) {
		struct km_model_svc *s = svc_get(m, res->services[i].service, 1);

		if (!s)
			continue;
		parr_add(m, (void ***)&s->members, &s->n_members, &s->cap_members, w);
		sync_endpoint(m, s, w);
	}

	/* 4. Pod-IP frontends that are new. */
	for (size_t i = 0; i < n_new_fe; i++)
		if (!in_addrs(old_fe, n_old_fe, &new_fe[i]))
			emit_workload_frontend(m, w, &new_fe[i], 0);
	/* 5. A workload that lost every address: its backend row goes last. */
	if (had_backend && !w->backend_written)
		emit_backend_delete(m, w);
	km_workload_res_free(old);
	learn_local_locality(m, res);
}

void km_model_remove_workload(struct km_model *m, const char *uid)
{
	struct km_model_wl *w;
	const struct km_addr *fe;
	size_t n_fe;

	HASH_FIND_STR(m->workloads, uid, w);
	if (!w)
		return;
	n_fe = w->backend_written ? frontend_addrs(w->res, &fe) : 0;
	for (size_t i = 0; i < n_fe; i++)
		emit_workload_frontend(m, w, &fe[i], 1);
	for (size_t i = 0; i < w->res->n_services; i++) {
		struct km_model_svc *s = svc_get(m, w->res->services[i].service, 0);

		if (s)
			member_remove(m, s, w);
	}
	if (w->backend_written)
		emit_backend_delete(m, w);
	km_workload_res_free(w->res);
	w->res = NULL;
	register_workload_waypoint(m, w);
	km_ids_release(&m->ids, uid);
	HASH_DEL(m->workloads, w);
	free(w->uid);
	free(w);
	m->n_workloads--;
}

/* ---- flush, replay, queries ---------------------------------------------------------------- */

void km_model_flush(struct km_model *m)
{
	for (size_t i = 0; i < m->n_dirty; i++) {
		struct km_model_svc *s = m->dirty[i];

		if (s->res && s->count_dirty)
			emit_service(m, s);
		s->count_dirty = 0;
		s->in_dirty = 0;
		if (!s->res && s->n_members == 0 && s->n_wp_svcs == 0 && s->n_wp_wls == 0) {
			HASH_DEL(m->services, s);
			svc_free(s);
		}
	}
	m->n_dirty = 0;
}

void km_model_replay(struct km_model *m)
{
	struct km_model_svc *s, *stmp;
	struct km_model_wl *w, *wtmp;

	km_model_flush(m);
	HASH_ITER(hh, m->workloads, w, wtmp)
		if (w->backend_written)
			emit_backend(m, w);
	HASH_ITER(hh, m->services, s, stmp) {
		if (!s->res)
			continue;
		for (size_t i = 0; i < s->n_ovr; i++)
			emit_override(m, s, &s->ovr[i], 0);
		for (uint32_t p = 0; p < KM_PRIO_COUNT; p++)
			for (size_t i = 0; i < s->n_eps[p]; i++)
				emit_endpoint(m, s, p, (uint32_t)i, 0);
		emit_service(m, s);
		emit_service_frontends(m, s, 0);
	}
	HASH_ITER(hh, m->workloads, w, wtmp) {
		const struct km_addr *fe;
		size_t n = w->backend_written ? frontend_addrs(w->res, &fe) : 0;

		for (size_t i = 0; i < n; i++)
			emit_workload_frontend(m, w, &fe[i], 0);
	}
}

void km_model_init(struct km_model *m, struct km_oplist *out, km_ids_hash_fn hash)
{
	memset(m, 0, sizeof(*m));
	km_ids_init(&m->ids, hash);
	m->out = out;
}

void km_model_set_local_node(struct km_model *m, const char *node)
{
	free(m->local.node);
	m->local.node = node && *node ? strdup(node) : NULL;
}

void km_model_free(struct km_model *m)
{
	struct km_model_svc *s, *stmp;
	struct km_model_wl *w, *wtmp;

	HASH_ITER(hh, m->services, s, stmp) {
		HASH_DEL(m->services, s);
		svc_free(s);
	}
	HASH_ITER(hh, m->workloads, w, wtmp) {
		HASH_DEL(m->workloads, w);
		km_workload_res_free(w->res);
		free(w->uid);
		free(w);
	}
	free(m->dirty);
	free(m->local.node);
	free(m->local.region);
	free(m->local.zone);
	free(m->local.subzone);
	free(m->local.cluster_id);
	free(m->local.network);
	km_ids_free(&m->ids);
	memset(m, 0, sizeof(*m));
}

const struct km_service_res *km_model_find_service(const struct km_model *m, const char *name)
{
	struct km_model_svc *s;

	HASH_FIND_STR(m->services, name, s);
	return s ? s->res : NULL;
}

const struct km_workload_res *km_model_find_workload(const struct km_model *m, const char *uid)
{
	struct km_model_wl *w;

	HASH_FIND_STR(m->workloads, uid, w);
	return w ? w->res : NULL;
}

void km_model_each_service(const struct km_model *m, km_model_name_cb cb, void *arg)
{
	struct km_model_svc *s, *tmp;

	HASH_ITER(hh, m->services, s, tmp)
		if (s->res)
			cb(arg, s->name);
}

void km_model_each_workload(const struct km_model *m, km_model_name_cb cb, void *arg)
{
	struct km_model_wl *w, *tmp;

	HASH_ITER(hh, m->workloads, w, tmp)
		cb(arg, w->uid);
}

size_t km_model_endpoints(const struct km_model *m, const char *service, uint32_t prio,
			  const uint32_t **backend_ids)
{
	struct km_model_svc *s;

	HASH_FIND_STR(m->services, service, s);
	if (!s || prio >= KM_PRIO_COUNT) {
		*backend_ids = NULL;
		return 0;
	}
	*backend_ids = s->eps[prio];
	return s->n_eps[prio];
}

void km_model_stats(const struct km_model *m, struct km_model_stats *st)
{
	struct km_model_svc *s, *stmp;
	struct km_model_wl *w, *wtmp;

	memset(st, 0, sizeof(*st));
	st->services = m->n_services;
	st->workloads = m->n_workloads;
	HASH_ITER(hh, m->services, s, stmp) {
		for (int p = 0; p < KM_PRIO_COUNT; p++)
			st->endpoints += s->n_eps[p];
		st->port_overrides += s->n_ovr;
		if (s->res && s->res->waypoint.kind == KM_WAYPOINT_HOSTNAME &&
		    !(s->wp_of && s->wp_of->res && s->wp_of->res->n_vips))
			st->pending_waypoints++;
	}
	HASH_ITER(hh, m->workloads, w, wtmp)
		if (w->res->waypoint.kind == KM_WAYPOINT_HOSTNAME &&
		    !(w->wp_of && w->wp_of->res && w->wp_of->res->n_vips))
			st->pending_waypoints++;
}
