/* model.c — the workload model: services and workloads by name, their lifecycle, flush, replay
 * and queries (see model.h; the pieces it is built from are listed in model_internal.h). */
#include "services/xds-agent/model/model.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "services/xds-agent/authz/authz_compile.h"
#include "services/xds-agent/core/strpool.h"
#include "services/xds-agent/model/model_internal.h"
#include "shared/addr.h"
#include "shared/log.h"

/* one 80-byte malloc chunk per workload entry (model_internal.h): growing it costs every workload */
_Static_assert(sizeof(struct km_model_wl) <= 72, "struct km_model_wl outgrew its malloc chunk");
/* one per service (100,000 at 1M workloads): 120 bytes, a 128-byte chunk (it was 520) */
_Static_assert(sizeof(struct km_model_svc) <= 120, "struct km_model_svc outgrew its malloc chunk");

/* ---- services ------------------------------------------------------------------------------ */

static void svc_free(struct km_model_svc *s)
{
	for (int p = 0; p < KM_PRIO_COUNT; p++) {
		struct mdl_group *g = mdl_group_of(s, (uint32_t)p);

		if (g) {
			free(g->eps);
			free(g->cum);
		}
	}
	free(s->groups);
	free(s->members);
	free(s->ovr);
	if (s->wp) {
		free(s->wp->svcs);
		free(s->wp->wls);
		free(s->wp);
	}
	km_service_res_free(s->res);
	free(s->version);
	km_str_release(s->name);
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
			       km_target_port(r, NULL, NULL, port->service_port) ==
				       (port->target_port ? port->target_port : port->service_port);
	return 0;
}

void km_model_upsert_service(struct km_model *m, struct km_service_res *res)
{
	struct km_model_svc *s = mdl_svc_get(m, res->name, 1);
	struct km_service_res *old;

	if (!s) {
		km_service_res_free(res);
		return;
	}
	s->unconfirmed = 0;
	if (!s->res) {
		res = km_service_res_pack(res);
		if (res->scratch) { /* out of memory: a decoded version cannot be kept as it is */
			m->out->oom = 1;
			return;
		}
		s->id = km_ids_alloc(&m->ids, s->name, s);
		s->res = res;
		m->n_services++;
		mdl_index_service(m, s, res, 1);
		mdl_tell_service(m, res, 1);
		mdl_register_service_waypoint(m, s);
		/* Back-fill: workloads that listed this service before it arrived. */
		for (size_t i = 0; i < s->n_members; i++) {
			struct km_model_wl *w = s->members[i];

			if (mdl_eligible(s, w)) {
				mdl_sync_overrides(m, s, w, 1);
				mdl_endpoint_append(m, s, mdl_endpoint_prio(m, s, w), w);
			}
		}
		s->fe_flag_written = mdl_n_ovr(s) > 0;
		mdl_emit_service(m, s, 0);
		s->svc_written = 1;
		mdl_emit_service_frontends(m, s, 0);
		mdl_publish_waypoint_address(m, s);
		return;
	}
	old = s->res;
	if (km_service_res_equal(old, res)) {
		km_service_res_free(res);
		return;
	}
	res = km_service_res_pack(res);
	if (res->scratch) { /* out of memory: the old version stays, a resync follows */
		m->out->oom = 1;
		return;
	}
	for (size_t v = 0; v < old->n_vips; v++)
		for (size_t p = 0; p < old->n_ports; p++)
			if (!frontend_in(res, &old->vips[v], &old->ports[p], 0))
				mdl_emit_service_frontend(m, s, &old->vips[v], &old->ports[p], 1);
	s->res = res;
	mdl_index_service(m, s, old, 0);
	mdl_index_service(m, s, res, 1);
	mdl_tell_service(m, old, 0);
	mdl_tell_service(m, res, 1);
	mdl_register_service_waypoint(m, s);
	/* mode, priorities, health policy, port overrides: recompute every endpoint (counts follow
	 * at flush) */
	mdl_drop_stale_overrides(m, s);
	mdl_sync_all_endpoints(m, s);
	if (old->lb_mode != res->lb_mode || !km_waypoint_equal(&old->waypoint, &res->waypoint))
		mdl_emit_service(m, s, 0);
	for (size_t v = 0; v < res->n_vips; v++)
		for (size_t p = 0; p < res->n_ports; p++)
			if (!frontend_in(old, &res->vips[v], &res->ports[p], 1))
				mdl_emit_service_frontend(m, s, &res->vips[v], &res->ports[p], 0);
	mdl_publish_waypoint_address(m, s);
	km_service_res_free(old);
}

void km_model_remove_service(struct km_model *m, const char *name)
{
	struct km_model_svc *s = mdl_svc_get(m, name, 0);
	struct override *o;
	struct km_op *op;

	if (!s || !s->res)
		return;
	mdl_emit_service_frontends(m, s, 1);
	op = km_oplist_add(m->out, KM_OP_SERVICE, 1);
	if (op)
		op->svc.id = s->id;
	for (uint32_t p = 0; p < KM_PRIO_COUNT; p++) {
		struct mdl_group *g = mdl_group_of(s, p);

		for (size_t i = 0; g && i < g->n; i++)
			mdl_emit_endpoint(m, s, p, (uint32_t)i, 1, 0);
		if (g)
			g->n = 0;
	}
	for (size_t i = 0; i < s->n_members; i++) { /* its members keep their places, not slots */
		struct mdl_place *pl = mdl_place_of(s->members[i], s);

		if (pl)
			pl->has_slot = 0;
	}
	for (uint32_t i = 0; (o = mdl_ovr_next(s, &i));)
		mdl_emit_override(m, s, o, 1);
	free(s->ovr);
	s->ovr = NULL;
	s->fe_flag_written = 0;
	s->svc_written = 0;
	km_ids_release(&m->ids, s->id);
	mdl_index_service(m, s, s->res, 0);
	mdl_tell_service(m, s->res, 0);
	km_service_res_free(s->res);
	s->res = NULL;
	free(s->version);
	s->version = NULL;
	mdl_register_service_waypoint(m, s);
	mdl_publish_waypoint_address(m, s); /* dependents fall back to "pending" */
	s->id = 0;
	s->count_dirty = 0;
	m->n_services--;
	mdl_mark_dirty(m, s, 0); /* freed at flush if nothing refers to it any more */
}

/* ---- workloads ----------------------------------------------------------------------------- */

/* The workload no longer lists the service: drop its endpoint, overrides and membership. */
static void member_remove(struct km_model *m, struct km_model_svc *s, struct km_model_wl *w)
{
	uint32_t prio;
	size_t idx = 0;

	if (s->res) {
		if (mdl_find_slot(s, w, &prio, &idx))
			mdl_endpoint_remove(m, s, prio, idx);
		mdl_sync_overrides(m, s, w, 0);
	}
	mdl_member_del(s, w);
	mdl_mark_dirty(m, s, 0);
}

/* Addresses that get pod-IP frontend rows. A connect() to a pod IP reads its row only to send it
 * to the workload's own waypoint, so only a workload that names one gets rows: the frontend table
 * then holds VIPs and waypointed pods, not every pod, and a connect() to any other address misses
 * in a small table. None for host-network workloads either (they share the node's IP, so the IP
 * does not name them). */
/* A workload's pod-IP frontends: where connect() to its address must be looked at (a waypoint
 * or the tunnel in the way). */
static size_t frontend_addrs(const struct km_model *m, const struct km_workload_res *r,
			     const struct km_addr **addrs)
{
	*addrs = r ? r->addrs : NULL;
	return r && !r->host_network &&
			       (km_wl_waypoint(r)->kind != KM_WAYPOINT_NONE || mdl_wl_tunneled(m, r))
		       ? r->n_addrs
		       : 0;
}

int mdl_addr_in(const struct km_addr *list, size_t n, const struct km_addr *a)
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
	char ubuf[KM_UID_BUF];

	if (l->known || !l->node || !mdl_str_eq(l->node, r->where->node))
		return;
	l->region = r->where->region ? strdup(r->where->region) : NULL;
	l->zone = r->where->zone ? strdup(r->where->zone) : NULL;
	l->subzone = r->where->subzone ? strdup(r->where->subzone) : NULL;
	l->cluster_id = r->who->cluster_id ? strdup(r->who->cluster_id) : NULL;
	l->network = r->who->network ? strdup(r->who->network) : NULL;
	l->known = 1;
	km_info("local locality learnt from %s: region '%s' zone '%s' subzone '%s'",
		km_workload_uid(r, ubuf),
		l->region ? l->region : "", l->zone ? l->zone : "", l->subzone ? l->subzone : "");
	DL_FOREACH_SAFE(m->services, s, tmp)
		if (s->res && (s->res->lb_mode == KM_LB_STRICT || s->res->lb_mode == KM_LB_FAILOVER))
			mdl_sync_all_endpoints(m, s);
}

/* The workload's slot in s, if it has one, written again (its inline address changed). When it
 * gains a waypoint, this takes the address out of the slot, so new connections go by its backend
 * row, which names the waypoint (written before, in the same batch). */
static void refresh_endpoints(struct km_model *m, struct km_model_svc *s, struct km_model_wl *w)
{
	uint32_t prio;
	size_t idx;

	if (mdl_find_slot(s, w, &prio, &idx))
		mdl_emit_endpoint(m, s, prio, (uint32_t)idx, 0, 1);
}

void km_model_upsert_workload(struct km_model *m, struct km_workload_res *res)
{
	struct km_model_wl *w;

	/* a workload reached by name: the resolver gives it its addresses, which become backends
	 * of their own (model_resolved.c) */
	if (m->hostname_put && km_wl_hostname(res) && !res->n_addrs &&
	    !(res = m->hostname_put(m->hostname_arg, res)))
		return; /* out of memory: it consumed res */
	if (km_wl_hostname(res)) {
		mdl_put_resolved(m, res);
		return;
	}
	w = mdl_put_entry(m, res, 0);
	if (w && w->has_derived) /* it was reached by name before */
		mdl_drop_derived(m, w, 1);
}

struct km_model_wl *mdl_put_entry(struct km_model *m, struct km_workload_res *res, int derived)
{
	struct km_model_wl *w;
	struct km_workload_res *old;
	const struct km_addr *old_fe = NULL, *new_fe = NULL;
	size_t n_old_fe, n_new_fe;
	struct km_op row;
	int had_backend, has_addr, inline_changed;
	char ubuf[KM_UID_BUF];
	const char *uid;

	/* the address index's and the services' slots this workload will read, loaded while its
	 * uid is looked up and it is packed: cache misses in tables of 100k, overlapped */
	for (size_t i = 0; i < res->n_addrs; i++)
		km_addr_index_prefetch(&m->wl_addrs, &res->addrs[i]);
	for (size_t i = 0; i < res->n_services; i++)
		km_name_map_prefetch(&m->svc_index, res->services[i].service);
	uid = km_workload_uid(res, ubuf);
	w = mdl_wl_find(m, uid);
	if (!w) {
		w = calloc(1, sizeof(*w));
		if (!w || mdl_wl_add(m, w, uid) != 0) {
			free(w);
			km_workload_res_free(res);
			m->out->oom = 1;
			return NULL;
		}
		m->n_workloads++;
	}
	w->unconfirmed = 0;
	w->derived = (uint8_t)derived;
	old = w->res;
	if (old && km_workload_res_equal(old, res)) {
		km_workload_res_free(res);
		return w;
	}
	m->workload_changes++;
	res = km_workload_res_pack(res);
	if (res->scratch) { /* out of memory: a decoded version cannot be kept as it is */
		m->out->oom = 1; /* a resync follows */
		if (!old) {
			w->res = res; /* names it for the delete */
			mdl_wl_del(m, w);
			free(w);
			m->n_workloads--;
		}
		return old ? w : NULL;
	}
	had_backend = w->backend_written;
	n_old_fe = had_backend ? frontend_addrs(m, old, &old_fe) : 0;
	w->res = res;
	mdl_register_workload_waypoint(m, w, old);
	mdl_backend_row(m, w, &row);
	has_addr = row.be.has4 || row.be.has6;

	/* 1. The backend row first, so every later row may name it. */
	if (has_addr && (!had_backend || mdl_row_sum(&row) != w->backend_sum)) {
		w->backend_written = 1;
		mdl_emit_backend(m, w, &row);
	}
	if (!has_addr)
		w->backend_written = 0;
	/* endpoint rows written from here on carry the new address; those already written are
	 * rewritten after the memberships below */
	inline_changed = mdl_inline4(&row) != w->inline4;
	w->inline4 = mdl_inline4(&row);
	n_new_fe = w->backend_written ? frontend_addrs(m, res, &new_fe) : 0;

	/* 2. Pod-IP frontends that went away. */
	for (size_t i = 0; i < n_old_fe; i++)
		if (!mdl_addr_in(new_fe, n_new_fe, &old_fe[i]))
			mdl_emit_workload_frontend(m, w, &old_fe[i], 1);

	/* 3. Service memberships and endpoints. */
	for (size_t i = 0; old && i < old->n_services; i++) {
		if (!km_workload_membership(res, old->services[i].service)) {
			struct km_model_svc *s = mdl_svc_get(m, old->services[i].service, 0);

			if (s)
				member_remove(m, s, w);
		}
	}
	for (size_t i = 0; i < res->n_services; i++) {
		struct km_model_svc *s = mdl_svc_get(m, res->services[i].service, 1);
		/* a member already exactly when the previous version listed the service */
		int member = old && km_workload_membership(old, res->services[i].service);

		if (!s)
			continue;
		if (!member)
			mdl_member_add(m, s, w);
		mdl_sync_endpoint(m, s, w, !member);
		if (inline_changed && member)
			refresh_endpoints(m, s, w);
	}

	/* 4. Pod-IP frontends that are new. */
	for (size_t i = 0; i < n_new_fe; i++)
		if (!mdl_addr_in(old_fe, n_old_fe, &new_fe[i]))
			mdl_emit_workload_frontend(m, w, &new_fe[i], 0);
	/* 5. A workload that lost every address: its backend row goes last. */
	if (had_backend && !w->backend_written)
		mdl_emit_backend_delete(m, w);
	mdl_index_workload(m, w, old, res);
	km_workload_res_free(old);
	learn_local_locality(m, res);
	return w;
}

void km_model_remove_workload(struct km_model *m, const char *uid)
{
	struct km_model_wl *w;

	if (m->hostname_gone)
		m->hostname_gone(m->hostname_arg, uid);
	w = mdl_wl_find(m, uid);
	if (!w)
		return;
	if (w->has_derived)
		mdl_drop_derived(m, w, 1);
	mdl_remove_entry(m, w);
}

void mdl_remove_entry(struct km_model *m, struct km_model_wl *w)
{
	struct km_workload_res *old;
	const struct km_addr *fe;
	size_t n_fe;

	mdl_index_workload(m, w, w->res, NULL);
	n_fe = w->backend_written ? frontend_addrs(m, w->res, &fe) : 0;
	for (size_t i = 0; i < n_fe; i++)
		mdl_emit_workload_frontend(m, w, &fe[i], 1);
	for (size_t i = 0; i < w->res->n_services; i++) {
		struct km_model_svc *s = mdl_svc_get(m, w->res->services[i].service, 0);

		if (s)
			member_remove(m, s, w);
	}
	if (w->backend_written)
		mdl_emit_backend_delete(m, w);
	mdl_wl_del(m, w);
	free(w->more);
	w->more = NULL;
	w->n_places = 0;
	old = w->res;
	w->res = NULL;
	mdl_register_workload_waypoint(m, w, old);
	km_workload_res_free(old);
	mdl_wl_drop_version(w);
	free(w);
	m->n_workloads--;
	m->workload_changes++;
}

/* ---- flush, replay, queries ---------------------------------------------------------------- */

void km_model_flush(struct km_model *m)
{
	for (size_t i = 0; i < m->n_dirty; i++) {
		struct km_model_svc *s = m->dirty[i];

		if (s->res && s->count_dirty)
			mdl_emit_service(m, s, 0);
		s->count_dirty = 0;
		s->in_dirty = 0;
		if (!s->res && s->n_members == 0 && mdl_n_wp_dependents(s) == 0) {
			mdl_svc_forget(m, s);
			svc_free(s);
		}
	}
	m->n_dirty = 0;
	if (m->authz)
		km_authz_flush(m->authz);
	km_oplist_settle(m->out);
}

void km_model_replay(struct km_model *m)
{
	struct km_model_svc *s, *stmp;
	struct km_model_wl *w;
	struct override *o;

	km_model_flush(m);
	for (size_t i = 0; i < m->ids.cap; i++)
		if ((w = mdl_wl_at(m, i)) && w->backend_written)
			mdl_emit_backend(m, w, NULL);
	DL_FOREACH_SAFE(m->services, s, stmp) {
		if (!s->res)
			continue;
		for (uint32_t i = 0; (o = mdl_ovr_next(s, &i));)
			mdl_emit_override(m, s, o, 0);
		for (uint32_t p = 0; p < KM_PRIO_COUNT; p++)
			for (size_t i = 0; i < mdl_n_eps(s, p); i++)
				mdl_emit_endpoint(m, s, p, (uint32_t)i, 0, 0);
		mdl_emit_service(m, s, 0);
		mdl_emit_service_frontends(m, s, 0);
	}
	for (size_t j = 0; j < m->ids.cap; j++) {
		const struct km_addr *fe;
		size_t n;

		if (!(w = mdl_wl_at(m, j)))
			continue;
		n = w->backend_written ? frontend_addrs(m, w->res, &fe) : 0;
		for (size_t i = 0; i < n; i++)
			mdl_emit_workload_frontend(m, w, &fe[i], 0);
	}
	if (m->authz) {
		mdl_replay_identities(m, 0);
		km_authz_replay(m->authz);
	}
	km_oplist_settle(m->out);
}

void km_model_init(struct km_model *m, struct km_oplist *out, km_ids_hash_fn hash)
{
	memset(m, 0, sizeof(*m));
	km_ids_init(&m->ids, hash);
	km_addr_index_init(&m->wl_addrs);
	km_addr_index_init(&m->vips);
	m->out = out;
}

/* The first policy: every address's identity row, before the policy's own rows. */
static void identities_needed(void *arg)
{
	mdl_replay_identities(arg, 1);
}

void km_model_set_authz(struct km_model *m, struct km_authz *authz)
{
	m->authz = authz;
	if (authz) {
		authz->identities_needed = identities_needed;
		authz->identities_arg = m;
	}
}

void km_model_set_local_node(struct km_model *m, const char *node)
{
	free(m->local.node);
	m->local.node = node && *node ? strdup(node) : NULL;
}

void km_model_set_waypoint_data_port(struct km_model *m, uint16_t port)
{
	m->waypoint_data_port = port;
}

void km_model_set_waypoint_hbone(struct km_model *m, int on)
{
	m->waypoint_hbone = on;
}

void km_model_set_hbone_over_ipsec(struct km_model *m, int on)
{
	m->hbone_over_ipsec = on;
}

void km_model_set_tunnel(struct km_model *m, const struct km_addr *addr)
{
	m->tunnel_on = addr != NULL;
	if (addr)
		m->tunnel_addr = *addr;
}

static void p2c_clear(struct km_model *m)
{
	for (size_t i = 0; i < m->n_p2c_names; i++)
		free(m->p2c_names[i]);
	free(m->p2c_names);
	m->p2c_names = NULL;
	m->n_p2c_names = 0;
	m->p2c_all = 0;
}

int km_model_set_p2c(struct km_model *m, const char *spec)
{
	char **names = NULL;
	size_t n = 0;
	const char *p = spec;

	if (!strcmp(spec, "none") || !strcmp(spec, "all")) {
		p2c_clear(m);
		m->p2c_all = !strcmp(spec, "all");
		return 0;
	}
	while (*p) {
		size_t len = strcspn(p, ",");
		char **grown;

		if (!len || !memchr(p, '/', len))
			goto bad;
		grown = realloc(names, (n + 1) * sizeof(*names));
		if (!grown)
			goto bad;
		names = grown;
		if (!(names[n] = strndup(p, len)))
			goto bad;
		n++;
		p += len + (p[len] == ',');
	}
	p2c_clear(m);
	m->p2c_names = names;
	m->n_p2c_names = n;
	return 0;
bad:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return -1;
}

void km_model_free(struct km_model *m)
{
	p2c_clear(m);
	mdl_frontends_free(m);
	km_addr_index_free(&m->wl_addrs);
	km_addr_index_free(&m->vips);
	struct km_model_svc *s, *stmp;
	struct mdl_displaced *d, *dtmp;
	struct km_model_wl *w;

	DL_FOREACH_SAFE(m->services, s, stmp) {
		DL_DELETE(m->services, s);
		svc_free(s);
	}
	km_name_map_free(&m->svc_index);
	for (size_t i = 0; i < m->ids.cap; i++) {
		if ((w = mdl_wl_at(m, i))) {
			km_workload_res_free(w->res);
			mdl_wl_drop_version(w);
			free(w->more);
			free(w);
		}
	}
	HASH_ITER(hh, m->displaced, d, dtmp) {
		HASH_DEL(m->displaced, d);
		free(d->uid);
		free(d);
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

	s = mdl_svc_find(m, name);
	return s ? s->res : NULL;
}

void km_model_each_service(const struct km_model *m, km_model_name_cb cb, void *arg)
{
	struct km_model_svc *s, *tmp;

	DL_FOREACH_SAFE(m->services, s, tmp)
		if (s->res && cb(arg, s->name))
			return;
}

size_t km_model_endpoints(const struct km_model *m, const char *service, uint32_t prio,
			  const uint32_t **backend_ids)
{
	const struct mdl_group *g;
	struct km_model_svc *s;

	s = mdl_svc_find(m, service);
	if (!s || prio >= KM_PRIO_COUNT) {
		*backend_ids = NULL;
		return 0;
	}
	g = mdl_group_of(s, prio);
	*backend_ids = g ? g->eps : NULL;
	return g ? g->n : 0;
}

void km_model_set_version(struct km_model *m, const char *name, const char *version)
{
	struct km_model_wl *w;
	struct km_model_svc *s;
	char **slot = NULL, *copy;

	w = mdl_wl_find(m, name);
	if (w) {
		mdl_wl_set_version(w, version ? version : "");
		return;
	}
	s = mdl_svc_find(m, name);
	if (s && s->res)
		slot = &s->version;
	if (!slot || !(copy = strdup(version ? version : "")))
		return;
	free(*slot);
	*slot = copy;
}

size_t km_model_each_version(const struct km_model *m, km_version_cb cb, void *arg)
{
	struct km_model_svc *s, *stmp;
	struct km_model_wl *w;
	char text[KM_XDS_VERSION_BUF], ubuf[KM_UID_BUF];
	size_t n = 0;

	for (size_t i = 0; i < m->ids.cap; i++) {
		if (!(w = mdl_wl_at(m, i)) || w->version_kind == KM_XDS_VERSION_NONE)
			continue;
		if (cb)
			cb(arg, km_workload_uid(w->res, ubuf),
			   km_xds_version_text(&w->version, w->version_kind, w->version_width, text));
		n++;
	}
	DL_FOREACH_SAFE(m->services, s, stmp) {
		if (!s->res || !s->version)
			continue;
		if (cb)
			cb(arg, s->name, s->version);
		n++;
	}
	return n;
}

size_t km_model_mark_unconfirmed(struct km_model *m)
{
	struct km_model_svc *s, *stmp;
	struct km_model_wl *w;
	size_t n = 0;

	for (size_t i = 0; i < m->ids.cap; i++)
		if ((w = mdl_wl_at(m, i)) && !w->derived) { /* derived: go with their workload */
			w->unconfirmed = 1;
			n++;
		}
	DL_FOREACH_SAFE(m->services, s, stmp) {
		s->unconfirmed = s->res != NULL;
		n += (size_t)s->unconfirmed;
	}
	return n;
}

void km_model_confirm(struct km_model *m, const char *name)
{
	struct km_model_wl *w = mdl_wl_find(m, name);
	struct km_model_svc *s;

	if (w) {
		w->unconfirmed = 0;
		return;
	}
	s = mdl_svc_find(m, name);
	if (s)
		s->unconfirmed = 0;
}

/* Names first, removals after: a removal may move or free other entries. */
size_t km_model_sweep_unconfirmed(struct km_model *m)
{
	struct km_model_svc *s, *stmp;
	struct km_model_wl *w;
	size_t cap = 0, n = 0, n_wl, removed = 0;
	char **names;

	for (size_t i = 0; i < m->ids.cap; i++)
		cap += (w = mdl_wl_at(m, i)) && w->unconfirmed;
	DL_FOREACH_SAFE(m->services, s, stmp)
		cap += s->res && s->unconfirmed;
	if (!cap)
		return 0;
	if (!(names = calloc(cap, sizeof(*names)))) {
		m->out->oom = 1; /* the agent resyncs on it; nothing is removed now */
		return 0;
	}
	for (size_t i = 0; i < m->ids.cap && n < cap; i++)
		if ((w = mdl_wl_at(m, i)) && w->unconfirmed && (names[n] = km_workload_uid_dup(w->res)))
			n++;
	n_wl = n;
	DL_FOREACH_SAFE(m->services, s, stmp)
		if (n < cap && s->res && s->unconfirmed && (names[n] = strdup(s->name)))
			n++;
	for (size_t i = 0; i < n; i++) {
		if (i < n_wl && km_model_find_workload(m, names[i])) {
			km_model_remove_workload(m, names[i]);
			removed++;
		} else if (i >= n_wl && km_model_find_service(m, names[i])) {
			km_model_remove_service(m, names[i]);
			removed++;
		}
		free(names[i]);
	}
	free(names);
	return removed;
}

uint32_t km_model_id_of(const struct km_model *m, const char *name)
{
	struct km_model_wl *w = mdl_wl_find(m, name);
	struct km_model_svc *s;

	if (w)
		return w->id;
	s = mdl_svc_find(m, name);
	return s ? s->id : 0;
}

const char *km_model_name_of(const struct km_model *m, uint32_t id, char *buf)
{
	uintptr_t owner = (uintptr_t)km_ids_owner(&m->ids, id);

	if (!owner)
		return NULL;
	if (owner & MDL_OWNER_WORKLOAD)
		return km_workload_uid(mdl_owner_workload(owner)->res, buf);
	return ((const struct km_model_svc *)owner)->name;
}

void km_model_stats(const struct km_model *m, struct km_model_stats *st)
{
	struct km_model_svc *s, *stmp;

	memset(st, 0, sizeof(*st));
	st->services = m->n_services;
	st->workloads = m->n_workloads;
	/* services only (a dump must not walk every workload: at 1M that held the loop for tens of
	 * milliseconds per dump): a workload waiting for its waypoint is in that service's wp->wls */
	DL_FOREACH_SAFE(m->services, s, stmp) {
		for (int p = 0; p < KM_PRIO_COUNT; p++)
			st->endpoints += mdl_n_eps(s, (uint32_t)p);
		st->port_overrides += mdl_n_ovr(s);
		if (s->res && s->res->waypoint.kind == KM_WAYPOINT_HOSTNAME &&
		    !(s->wp_of && s->wp_of->res && s->wp_of->res->n_vips))
			st->pending_waypoints++;
		if (!(s->res && s->res->n_vips) && s->wp)
			st->pending_waypoints += s->wp->n_wls;
	}
}

void km_model_watch_hostnames(struct km_model *m,
			      struct km_workload_res *(*put)(void *arg, struct km_workload_res *r),
			      void (*gone)(void *arg, const char *uid), void *arg)
{
	m->hostname_put = put;
	m->hostname_gone = gone;
	m->hostname_arg = arg;
}
