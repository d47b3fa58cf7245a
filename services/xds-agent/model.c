/* model.c — the workload model and its ordered table operations (see model.h). */
#include "services/xds-agent/model.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "shared/addr.h"

struct km_model_svc {
	char *name;
	uint32_t id; /* 0 while no resource is known */
	struct km_service_res *res;
	uint32_t *eps[KM_PRIO_COUNT]; /* backend ids in slot order */
	size_t n_eps[KM_PRIO_COUNT], cap_eps[KM_PRIO_COUNT];
	struct km_model_wl **members; /* workloads that list this service */
	size_t n_members, cap_members;
	int in_dirty;    /* in m->dirty (pointer kept until flush) */
	int count_dirty; /* the service row must be re-emitted at flush */
	UT_hash_handle hh;
};

struct km_model_wl {
	char *uid;
	uint32_t id;
	struct km_workload_res *res;
	int backend_written;
	struct km_addr addr4, addr6;
	int has4, has6;
	UT_hash_handle hh;
};

/* ---- helpers ----------------------------------------------------------------------------------- */

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

static uint32_t target_of(const struct km_port *p)
{
	return p->target_port ? p->target_port : p->service_port;
}

/* Endpoint priority of a workload in a service. Locality priorities arrive with the other
 * load-balancing modes; until then every endpoint is in group 0. */
static uint32_t endpoint_prio(const struct km_model_svc *s, const struct km_model_wl *w)
{
	(void)s;
	(void)w;
	return 0;
}

static int eligible(const struct km_model_wl *w)
{
	return w->backend_written && w->res->status == KM_WORKLOAD_HEALTHY;
}

/* ---- op emitters ------------------------------------------------------------------------------- */

static void emit_service(struct km_model *m, const struct km_model_svc *s)
{
	struct km_op *op = km_oplist_add(m->out, KM_OP_SERVICE, 0);

	if (!op)
		return;
	op->svc.id = s->id;
	op->svc.lb_mode = s->res->lb_mode;
	for (int p = 0; p < KM_PRIO_COUNT; p++)
		op->svc.count[p] = (uint32_t)s->n_eps[p];
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
	op->fe.upstream_id = del ? 0 : s->id;
	op->fe.target_port = del ? 0 : (uint16_t)target_of(port);
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

static void emit_backend(struct km_model *m, const struct km_model_wl *w, int del)
{
	struct km_op *op = km_oplist_add(m->out, KM_OP_BACKEND, del);

	if (!op)
		return;
	op->be.id = w->id;
	if (del)
		return;
	op->be.addr4 = w->addr4;
	op->be.addr6 = w->addr6;
	op->be.has4 = (uint8_t)w->has4;
	op->be.has6 = (uint8_t)w->has6;
}

static void emit_service_frontends(struct km_model *m, const struct km_model_svc *s, int del)
{
	for (size_t v = 0; v < s->res->n_vips; v++)
		for (size_t p = 0; p < s->res->n_ports; p++)
			emit_service_frontend(m, s, &s->res->vips[v], &s->res->ports[p], del);
}

/* ---- endpoint slots ---------------------------------------------------------------------------- */

static long slot_of(const struct km_model_svc *s, uint32_t prio, uint32_t backend_id)
{
	for (size_t i = 0; i < s->n_eps[prio]; i++)
		if (s->eps[prio][i] == backend_id)
			return (long)i;
	return -1;
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

/* Make the workload an endpoint of the service iff it should be one. */
static void sync_endpoint(struct km_model *m, struct km_model_svc *s, struct km_model_wl *w)
{
	uint32_t prio = endpoint_prio(s, w);
	long at;

	if (!s->res)
		return;
	at = slot_of(s, prio, w->id);
	if (eligible(w) && at < 0) {
		endpoint_append(m, s, prio, w->id);
		mark_dirty(m, s, 1);
	} else if (!eligible(w) && at >= 0) {
		endpoint_remove(m, s, prio, (size_t)at);
	}
}

/* ---- services ---------------------------------------------------------------------------------- */

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
	return s;
}

static void svc_free(struct km_model_svc *s)
{
	for (int p = 0; p < KM_PRIO_COUNT; p++)
		free(s->eps[p]);
	free(s->members);
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
			return !same_target || target_of(&r->ports[p]) == target_of(port);
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
		/* Back-fill: workloads that listed this service before it arrived. */
		for (size_t i = 0; i < s->n_members; i++)
			if (eligible(s->members[i]))
				endpoint_append(m, s, endpoint_prio(s, s->members[i]), s->members[i]->id);
		emit_service(m, s);
		emit_service_frontends(m, s, 0);
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
	if (old->lb_mode != res->lb_mode)
		emit_service(m, s);
	for (size_t v = 0; v < res->n_vips; v++)
		for (size_t p = 0; p < res->n_ports; p++)
			if (!frontend_in(old, &res->vips[v], &res->ports[p], 1))
				emit_service_frontend(m, s, &res->vips[v], &res->ports[p], 0);
	km_service_res_free(old);
}

void km_model_remove_service(struct km_model *m, const char *name)
{
	struct km_model_svc *s = svc_get(m, name, 0);

	if (!s || !s->res)
		return;
	emit_service_frontends(m, s, 1);
	{
		struct km_op *op = km_oplist_add(m->out, KM_OP_SERVICE, 1);

		if (op)
			op->svc.id = s->id;
	}
	for (uint32_t p = 0; p < KM_PRIO_COUNT; p++) {
		for (size_t i = 0; i < s->n_eps[p]; i++)
			emit_endpoint(m, s, p, (uint32_t)i, 1);
		s->n_eps[p] = 0;
	}
	km_ids_release(&m->ids, name);
	km_service_res_free(s->res);
	s->res = NULL;
	s->id = 0;
	s->count_dirty = 0;
	m->n_services--;
	mark_dirty(m, s, 0); /* freed at flush if no workload lists it any more */
}

/* ---- workloads --------------------------------------------------------------------------------- */

static void member_add(struct km_model *m, struct km_model_svc *s, struct km_model_wl *w)
{
	for (size_t i = 0; i < s->n_members; i++)
		if (s->members[i] == w)
			return;
	if (grow((void **)&s->members, &s->cap_members, s->n_members + 1, sizeof(*s->members))) {
		m->out->oom = 1;
		return;
	}
	s->members[s->n_members++] = w;
}

/* The workload no longer lists the service: drop its endpoint and its membership. */
static void member_remove(struct km_model *m, struct km_model_svc *s, struct km_model_wl *w)
{
	if (s->res) {
		uint32_t prio = endpoint_prio(s, w);
		long at = slot_of(s, prio, w->id);

		if (at >= 0)
			endpoint_remove(m, s, prio, (size_t)at);
	}
	for (size_t i = 0; i < s->n_members; i++) {
		if (s->members[i] == w) {
			s->members[i] = s->members[--s->n_members];
			break;
		}
	}
	mark_dirty(m, s, 0);
}

/* The backend row holds the first address of each family. */
static void pick_addresses(const struct km_workload_res *r, struct km_addr *a4, int *has4,
			   struct km_addr *a6, int *has6)
{
	*has4 = *has6 = 0;
	memset(a4, 0, sizeof(*a4));
	memset(a6, 0, sizeof(*a6));
	for (size_t i = 0; i < r->n_addrs; i++) {
		int v4 = km_addr_is_v4(&r->addrs[i]);
		int *has = v4 ? has4 : has6;

		if (!*has) {
			*(v4 ? a4 : a6) = r->addrs[i];
			*has = 1;
		}
	}
}

static int has_addr(const struct km_workload_res *r, const struct km_addr *a)
{
	for (size_t i = 0; r && i < r->n_addrs; i++)
		if (memcmp(&r->addrs[i], a, sizeof(*a)) == 0)
			return 1;
	return 0;
}

void km_model_upsert_workload(struct km_model *m, struct km_workload_res *res)
{
	struct km_model_wl *w;
	struct km_workload_res *old;
	struct km_addr a4, a6;
	int has4, has6, had_backend;

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
	pick_addresses(res, &a4, &has4, &a6, &has6);

	/* 1. The backend row first, so every later row may name it. */
	if ((has4 || has6) && (!had_backend || has4 != w->has4 || has6 != w->has6 ||
			       memcmp(&a4, &w->addr4, sizeof(a4)) || memcmp(&a6, &w->addr6, sizeof(a6)))) {
		w->addr4 = a4;
		w->addr6 = a6;
		w->has4 = has4;
		w->has6 = has6;
		w->backend_written = 1;
		emit_backend(m, w, 0);
	}
	/* 2. Pod-IP frontends of addresses that went away. */
	if (had_backend)
		for (size_t i = 0; i < old->n_addrs; i++)
			if (!has_addr(res, &old->addrs[i]))
				emit_workload_frontend(m, w, &old->addrs[i], 1);
	if (!has4 && !has6)
		w->backend_written = 0;

	/* 3. Service memberships and endpoints. */
	for (size_t i = 0; old && i < old->n_services; i++) {
		if (!km_workload_membership(res, old->services[i].service)) {
			struct km_model_svc *s = svc_get(m, old->services[i].service, 0);

			if (s)
				member_remove(m, s, w);
		}
	}
	w->res = res;
	for (size_t i = 0; i < res->n_services; i++) {
		struct km_model_svc *s = svc_get(m, res->services[i].service, 1);

		if (!s)
			continue;
		member_add(m, s, w);
		sync_endpoint(m, s, w);
	}

	/* 4. Pod-IP frontends of new addresses (all of them if the backend just appeared). */
	if (w->backend_written)
		for (size_t i = 0; i < res->n_addrs; i++)
			if (!had_backend || !has_addr(old, &res->addrs[i]))
				emit_workload_frontend(m, w, &res->addrs[i], 0);
	/* 5. A workload that lost every address: its backend row goes last. */
	if (had_backend && !w->backend_written)
		emit_backend(m, w, 1);
	km_workload_res_free(old);
}

void km_model_remove_workload(struct km_model *m, const char *uid)
{
	struct km_model_wl *w;

	HASH_FIND_STR(m->workloads, uid, w);
	if (!w)
		return;
	if (w->backend_written)
		for (size_t i = 0; i < w->res->n_addrs; i++)
			emit_workload_frontend(m, w, &w->res->addrs[i], 1);
	for (size_t i = 0; i < w->res->n_services; i++) {
		struct km_model_svc *s = svc_get(m, w->res->services[i].service, 0);

		if (s)
			member_remove(m, s, w);
	}
	if (w->backend_written)
		emit_backend(m, w, 1);
	km_ids_release(&m->ids, uid);
	HASH_DEL(m->workloads, w);
	km_workload_res_free(w->res);
	free(w->uid);
	free(w);
	m->n_workloads--;
}

/* ---- flush, replay, queries -------------------------------------------------------------------- */

void km_model_flush(struct km_model *m)
{
	for (size_t i = 0; i < m->n_dirty; i++) {
		struct km_model_svc *s = m->dirty[i];

		if (s->res && s->count_dirty)
			emit_service(m, s);
		s->count_dirty = 0;
		s->in_dirty = 0;
		if (!s->res && s->n_members == 0) {
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
			emit_backend(m, w, 0);
	HASH_ITER(hh, m->services, s, stmp) {
		if (!s->res)
			continue;
		for (uint32_t p = 0; p < KM_PRIO_COUNT; p++)
			for (size_t i = 0; i < s->n_eps[p]; i++)
				emit_endpoint(m, s, p, (uint32_t)i, 0);
		emit_service(m, s);
		emit_service_frontends(m, s, 0);
	}
	HASH_ITER(hh, m->workloads, w, wtmp)
		if (w->backend_written)
			for (size_t i = 0; i < w->res->n_addrs; i++)
				emit_workload_frontend(m, w, &w->res->addrs[i], 0);
}

void km_model_init(struct km_model *m, struct km_oplist *out, km_ids_hash_fn hash)
{
	memset(m, 0, sizeof(*m));
	km_ids_init(&m->ids, hash);
	m->out = out;
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
