/* model_endpoints.c — which workload is a member and an endpoint of which service, at which place
 * among its members, in which priority group and slot, with which own target ports (see model.h
 * for the ordering rules kept here). */
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/model/model_internal.h"
#include "shared/grow.h"
#include "shared/addr.h"

/* ---- locality ------------------------------------------------------------------------------ */

static int mdl_scope_matches(const struct km_model_local *l, const struct km_workload_res *w, uint32_t scope)
{
	switch (scope) {
	case KM_SCOPE_REGION:
		return mdl_str_eq(l->region, w->where->region);
	case KM_SCOPE_ZONE:
		return mdl_str_eq(l->zone, w->where->zone);
	case KM_SCOPE_SUBZONE:
		return mdl_str_eq(l->subzone, w->where->subzone);
	case KM_SCOPE_NODE:
		return mdl_str_eq(l->node, w->where->node);
	case KM_SCOPE_CLUSTER:
		return mdl_str_eq(l->cluster_id, w->who->cluster_id);
	case KM_SCOPE_NETWORK:
		return mdl_str_eq(l->network, w->who->network);
	default:
		return 0;
	}
}

/* Priority group of a workload in a service: for STRICT and FAILOVER, the number of
 * routing-preference scopes minus how many of them, from the first, the workload shares with
 * this node (0 = shares all). Everything else, and an unknown local locality, is group 0. */
uint32_t mdl_endpoint_prio(const struct km_model *m, const struct km_model_svc *s,
			      const struct km_model_wl *w)
{
	const struct km_service_res *r = s->res;
	uint32_t rank = 0;

	if (!r || (r->lb_mode != KM_LB_STRICT && r->lb_mode != KM_LB_FAILOVER) || !m->local.known)
		return 0;
	while (rank < r->n_scopes && mdl_scope_matches(&m->local, w->res, r->scopes[rank]))
		rank++;
	return (uint32_t)r->n_scopes - rank;
}

/* ---- memberships: where each workload sits in each service it lists ------------------------ */

static struct mdl_place *place_at(const struct km_model_wl *w, size_t i)
{
	return i == 0 ? (struct mdl_place *)&w->place0 : &w->more[i - 1];
}

struct mdl_place *mdl_place_of(const struct km_model_wl *w, const struct km_model_svc *s)
{
	for (uint32_t i = 0; i < w->n_places; i++)
		if (place_at(w, i)->s == s)
			return place_at(w, i);
	return NULL;
}

void mdl_member_add(struct km_model *m, struct km_model_svc *s, struct km_model_wl *w)
{
	if (w->n_places == UINT16_MAX) { /* not reached: a workload lists at most 4096 services */
		m->out->oom = 1;
		return;
	}
	/* exactly as many as it lists beyond the first: no spare room, no count of it kept */
	if (w->n_places >= 1) {
		struct mdl_place *p = realloc(w->more, w->n_places * sizeof(*p));

		if (!p) {
			m->out->oom = 1;
			return;
		}
		w->more = p;
	}
	mdl_parr_append(m, (void ***)&s->members, &s->n_members, &s->cap_members, w);
	if (!s->n_members || s->members[s->n_members - 1] != w)
		return; /* out of memory: not a member */
	*place_at(w, w->n_places++) =
		(struct mdl_place){ .s = s, .member = (uint32_t)s->n_members - 1 };
}

void mdl_member_del(struct km_model_svc *s, struct km_model_wl *w)
{
	struct mdl_place *p = mdl_place_of(w, s);
	uint32_t i;

	if (!p)
		return;
	i = p->member;
	if (i < s->n_members && s->members[i] == w) {
		struct km_model_wl *last = s->members[--s->n_members];

		if (last != w) {
			s->members[i] = last;
			mdl_place_of(last, s)->member = i;
		}
	}
	*p = *place_at(w, --w->n_places);
	if (w->n_places <= 1) { /* the one left is place0 */
		free(w->more);
		w->more = NULL;
	}
}

/* ---- endpoint slots ------------------------------------------------------------------------ */

int mdl_find_slot(const struct km_model_svc *s, const struct km_model_wl *w, uint32_t *prio,
		  size_t *idx)
{
	const struct mdl_place *p = mdl_place_of(w, s);

	if (!p || !p->has_slot)
		return 0;
	*prio = p->prio;
	*idx = p->slot;
	return 1;
}

/* ---- weights ------------------------------------------------------------------------------- */

/* A workload's weight as an endpoint: Workload.capacity, at least 1. */
static uint64_t wl_weight(const struct km_model_wl *w)
{
	return km_wl_capacity(w->res) ? km_wl_capacity(w->res) : 1;
}

uint64_t mdl_slot_cum(const struct km_model_svc *s, uint32_t prio, size_t i)
{
	const uint64_t *cum = mdl_cum(s, prio);

	return cum ? cum[i] : (uint64_t)i + 1;
}

uint64_t mdl_group_total(const struct km_model_svc *s, uint32_t prio)
{
	uint32_t n = mdl_n_eps(s, prio);

	return n ? mdl_slot_cum(s, prio, n - 1) : 0;
}

static uint64_t slot_weight(const struct km_model_svc *s, uint32_t prio, size_t i)
{
	return mdl_slot_cum(s, prio, i) - (i ? mdl_slot_cum(s, prio, i - 1) : 0);
}

/* Room for n slots in group g: its endpoint array and, once it has them, its cumulative weights,
 * which keep no capacity of their own: they have room for at least g->cap (both grow by the same
 * rule from it, the weights first). */
static int slots_reserve(struct mdl_group *g, size_t n)
{
	uint32_t cap = g->cap;

	if (g->cum && km_grow32((void **)&g->cum, &cap, n, sizeof(*g->cum)) != 0)
		return -1;
	return km_grow32((void **)&g->eps, &g->cap, n, sizeof(*g->eps));
}

/* Group g's cumulative weights (NULL when out of memory), made the first time with room for its
 * g->cap slots, every existing one weighing 1. */
static uint64_t *cum_reserve(struct mdl_group *g)
{
	if (g->cum)
		return g->cum;
	if (!(g->cum = malloc((g->cap ? g->cap : 1) * sizeof(*g->cum))))
		return NULL;
	for (size_t i = 0; i < g->n; i++)
		g->cum[i] = (uint64_t)i + 1;
	return g->cum;
}

/* Re-emit slots from..end-1 after their cumulative weights changed (each holds the same live
 * backend, so the overwrite is safe at any moment). */
static void emit_cum(struct km_model *m, struct km_model_svc *s, uint32_t prio, size_t from,
		     size_t end)
{
	for (size_t i = from; i < end; i++)
		mdl_emit_endpoint(m, s, prio, (uint32_t)i, 0, 1);
}

/* The workload's weight changed (same slot): shift the cumulative weights from its slot on. */
static void endpoint_reweigh(struct km_model *m, struct km_model_svc *s, uint32_t prio, size_t i,
			     uint64_t weight)
{
	struct mdl_group *g = mdl_group_of(s, prio); /* slot i is in it */
	uint64_t old = slot_weight(s, prio, i);
	uint64_t *cum;

	if (old == weight)
		return;
	if (!(cum = cum_reserve(g))) {
		m->out->oom = 1;
		return;
	}
	for (size_t j = i; j < g->n; j++)
		cum[j] = cum[j] - old + weight;
	emit_cum(m, s, prio, i, g->n);
	mdl_mark_dirty(m, s, 1); /* the total */
}

/* ---- endpoint slots (continued) ------------------------------------------------------------ */

/* The group of priority prio, made if needed; NULL when out of memory. */
static struct mdl_group *group_make(struct km_model_svc *s, uint32_t prio)
{
	if (prio && !s->groups && !(s->groups = calloc(KM_PRIO_COUNT - 1, sizeof(*s->groups))))
		return NULL;
	return mdl_group_of(s, prio);
}

/* Append without emitting the count: the service row follows at flush (or, for a new service,
 * right after its endpoints). */
void mdl_endpoint_append(struct km_model *m, struct km_model_svc *s, uint32_t prio,
			 struct km_model_wl *w)
{
	struct mdl_group *g = group_make(s, prio);
	size_t n = g ? g->n : 0;
	uint64_t weight = wl_weight(w), *cum = mdl_cum(s, prio);
	struct mdl_place *place = mdl_place_of(w, s);

	if (!g || slots_reserve(g, n + 1) != 0 || ((weight != 1 || cum) && !(cum = cum_reserve(g)))) {
		m->out->oom = 1;
		return;
	}
	if (cum)
		cum[n] = (n ? cum[n - 1] : 0) + weight;
	g->eps[n] = w->id;
	g->n++;
	if (place) {
		place->has_slot = 1;
		place->prio = prio & 7;
		place->slot = (uint32_t)n & 0xfffffff;
	}
	mdl_emit_new_endpoint(m, s, prio, (uint32_t)n, w); /* a new slot: additive */
}

/* Remove slot i: move the last slot into it, shrink the count, then delete the old last slot.
 * BPF sees at every step only slots that hold a live backend. With weights, the slots after i
 * get their new cumulative weights before the count (and total) shrink. */
void mdl_endpoint_remove(struct km_model *m, struct km_model_svc *s, uint32_t prio, size_t i)
{
	struct mdl_group *g = mdl_group_of(s, prio);
	size_t last = g->n - 1;
	struct km_model_wl *gone = mdl_workload_by_id(m, g->eps[i]);
	struct mdl_place *pl = gone ? mdl_place_of(gone, s) : NULL;
	uint64_t *cum = mdl_cum(s, prio);

	if (pl && pl->has_slot && pl->prio == prio && pl->slot == i)
		pl->has_slot = 0;
	if (i != last) {
		struct km_model_wl *mover = mdl_workload_by_id(m, g->eps[last]);

		g->eps[i] = g->eps[last];
		if (mover && (pl = mdl_place_of(mover, s)))
			pl->slot = (uint32_t)i & 0xfffffff;
		if (cum) {
			uint64_t moved = slot_weight(s, prio, last);
			uint64_t prev_old = i ? cum[i - 1] : 0, prev_new = prev_old;

			for (size_t j = i; j < last; j++) {
				uint64_t w = j == i ? moved : cum[j] - prev_old;

				prev_old = cum[j];
				prev_new += w;
				cum[j] = prev_new;
			}
		}
		mdl_emit_endpoint(m, s, prio, (uint32_t)i, 0, 1); /* overwrites a live slot: now */
		if (cum)
			emit_cum(m, s, prio, i + 1, last); /* the slots after it weigh the same, sit lower */
	}
	g->n--;
	mdl_emit_service(m, s, 1);
	mdl_emit_endpoint(m, s, prio, (uint32_t)last, 1, 1);
}

/* ---- per-workload target ports ------------------------------------------------------------- */

/* After override rows changed: the service's frontends say whether to look them up. */
void mdl_update_frontend_flag(struct km_model *m, struct km_model_svc *s)
{
	int want = mdl_n_ovr(s) > 0;

	if (!s->res || want == s->fe_flag_written)
		return;
	s->fe_flag_written = want;
	if (!s->svc_written) /* a new service writes its frontends, with the flag, after its row */
		return;
	/* Turning the lookup on must reach BPF before any endpoint that needs it is exposed: emit
	 * it in place (after what is queued, and not regrouped behind later endpoints and counts).
	 * Turning it off follows the removal of the rows, so it may wait. */
	if (want)
		km_oplist_settle(m->out);
	mdl_emit_service_frontends(m, s, 0);
	if (want)
		km_oplist_settle(m->out);
}

static uint32_t ovr_home(const struct mdl_ovrs *t, uint32_t backend_id, uint16_t port)
{
	uint64_t k = ((uint64_t)backend_id << 16 | port) * 0x9e3779b97f4a7c15u;

	return (uint32_t)(k >> 32) & (t->cap - 1);
}

/* The slot of (backend_id, port) in s's override rows, or the free slot where it would go; s has
 * rows (s->ovr). */
static uint32_t ovr_slot(const struct km_model_svc *s, uint32_t backend_id, uint16_t port)
{
	const struct mdl_ovrs *t = s->ovr;
	uint32_t i = ovr_home(t, backend_id, port);

	while (t->slot[i].backend_id &&
	       !(t->slot[i].backend_id == backend_id && t->slot[i].port == port))
		i = (i + 1) & (t->cap - 1);
	return i;
}

static struct override *ovr_find(const struct km_model_svc *s, uint32_t backend_id, uint16_t port)
{
	struct override *o = s->ovr ? &s->ovr->slot[ovr_slot(s, backend_id, port)] : NULL;

	return o && o->backend_id ? o : NULL;
}

/* Add row o (not there yet): the table doubled when it would be over half full. Returns the row
 * in the table, or NULL when out of memory. */
static struct override *ovr_add(struct km_model_svc *s, struct override o)
{
	uint32_t n = mdl_n_ovr(s), cap = s->ovr ? s->ovr->cap : 0;

	if ((n + 1) * 2 > cap) {
		struct mdl_ovrs *old = s->ovr, *t;
		uint32_t ncap = cap ? cap * 2 : 8;

		if (ncap <= cap || !(t = calloc(1, sizeof(*t) + (size_t)ncap * sizeof(t->slot[0]))))
			return NULL; /* ncap <= cap: past 32 bits, not reached */
		t->cap = ncap;
		s->ovr = t;
		for (uint32_t i = 0; old && i < old->cap; i++)
			if (old->slot[i].backend_id)
				t->slot[ovr_slot(s, old->slot[i].backend_id, old->slot[i].port)] = old->slot[i];
		t->n = n;
		free(old);
	}
	s->ovr->n++;
	return memcpy(&s->ovr->slot[ovr_slot(s, o.backend_id, o.port)], &o, sizeof(o));
}

/* Remove row o: later rows of its run shift back where their home allows (no tombstones). */
static void ovr_del(struct km_model_svc *s, struct override *o)
{
	struct mdl_ovrs *t = s->ovr;
	uint32_t i = (uint32_t)(o - t->slot), mask = t->cap - 1;

	t->slot[i].backend_id = 0;
	t->n--;
	for (uint32_t j = (i + 1) & mask; t->slot[j].backend_id; j = (j + 1) & mask) {
		uint32_t h = ovr_home(t, t->slot[j].backend_id, t->slot[j].port);

		if (((j - h) & mask) >= ((j - i) & mask)) {
			t->slot[i] = t->slot[j];
			t->slot[j].backend_id = 0;
			i = j;
		}
	}
}

/* Make the override rows of (service, workload) what the workload's port list says, port by
 * port of the service, each row found by key; with want == 0, remove them all. Rows at ports the
 * service no longer has went when it changed (mdl_drop_stale_overrides). */
void mdl_sync_overrides(struct km_model *m, struct km_model_svc *s, struct km_model_wl *w, int want)
{
	const struct km_membership *ms = want ? km_workload_membership(w->res, s->name) : NULL;

	for (size_t p = 0; s->res && p < s->res->n_ports; p++) {
		uint32_t port = s->res->ports[p].service_port;
		uint32_t t = ms ? km_target_port(s->res, w->res, ms, port) : 0;
		int wanted = ms && t != km_target_port(s->res, NULL, NULL, port);
		struct override *o = ovr_find(s, w->id, (uint16_t)port);

		if (o && (!wanted || o->target != t)) {
			mdl_emit_override(m, s, o, 1);
			ovr_del(s, o);
			o = NULL;
		}
		if (!wanted || o)
			continue;
		if (!(o = ovr_add(s, (struct override){ w->id, (uint16_t)port, (uint16_t)t }))) {
			m->out->oom = 1;
			return;
		}
		mdl_emit_override(m, s, o, 0);
	}
	mdl_update_frontend_flag(m, s);
}

void mdl_drop_stale_overrides(struct km_model *m, struct km_model_svc *s)
{
	for (uint32_t i = 0; s->ovr && i < s->ovr->cap;) {
		struct override *o = &s->ovr->slot[i];
		int kept = 0;

		for (size_t p = 0; o->backend_id && s->res && p < s->res->n_ports && !kept; p++)
			kept = s->res->ports[p].service_port == o->port;
		if (!o->backend_id || kept) {
			i++;
			continue;
		}
		mdl_emit_override(m, s, o, 1);
		ovr_del(s, o); /* a later row may have shifted into slot i: look at it again */
	}
}

/* ---- membership -> endpoint ---------------------------------------------------------------- */

int mdl_eligible(const struct km_model_svc *s, const struct km_model_wl *w)
{
	return w->backend_written &&
	       (w->res->status == KM_WORKLOAD_HEALTHY || (s->res && s->res->allow_unhealthy));
}

/* Make the workload an endpoint of the service (in the right priority, with the right port
 * overrides) iff it should be one. Overrides are written before the endpoint is exposed and
 * removed after it is gone. */
void mdl_sync_endpoint(struct km_model *m, struct km_model_svc *s, struct km_model_wl *w,
		       int new_member)
{
	uint32_t prio = 0, want_prio;
	size_t idx = 0;
	int have;

	if (!s->res)
		return;
	have = !new_member && mdl_find_slot(s, w, &prio, &idx);
	if (!mdl_eligible(s, w)) {
		if (have)
			mdl_endpoint_remove(m, s, prio, idx);
		mdl_sync_overrides(m, s, w, 0);
		return;
	}
	mdl_sync_overrides(m, s, w, 1);
	want_prio = mdl_endpoint_prio(m, s, w);
	if (have && prio == want_prio) {
		endpoint_reweigh(m, s, prio, idx, wl_weight(w));
		return;
	}
	mdl_endpoint_append(m, s, want_prio, w); /* new group first ... */
	mdl_mark_dirty(m, s, 1);
	if (have)
		mdl_endpoint_remove(m, s, prio, idx); /* ... then out of the old one */
}

void mdl_sync_all_endpoints(struct km_model *m, struct km_model_svc *s)
{
	for (size_t i = 0; i < s->n_members; i++)
		mdl_sync_endpoint(m, s, s->members[i], 0);
}
