/* model_waypoint.c — waypoint dependencies: which services and workloads name each waypoint
 * service, and rewriting their rows when its address changes (the waypoint a row carries is
 * resolved in model_emit.c). */
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/model/model_internal.h"
#include "shared/addr.h"

/* ---- waypoint dependencies ----------------------------------------------------------------- */

static struct km_model_svc *waypoint_target(struct km_model *m, const struct km_waypoint *wp)
{
	return wp->kind == KM_WAYPOINT_HOSTNAME ? mdl_svc_get(m, wp->service, 1) : NULL;
}

/* Remove entry x, at index `at` in arr if it is there (it is not when its append ran out of
 * memory), in O(1): the last one moves into its place and gets its index (a waypoint named by
 * a whole namespace has every workload of it here, so a linear search made removing them all
 * quadratic). Returns the moved entry, or NULL. */
static void *parr_del_at(void **arr, uint32_t *n, const void *x, uint32_t at)
{
	void *last;

	if (at >= *n || arr[at] != x)
		return NULL;
	last = arr[--*n];
	if (last == x)
		return NULL;
	arr[at] = last;
	return last;
}

/* Its dependents are written with its current address: that is what it last published. */
static void publish_now(const struct km_model_svc *s, struct mdl_wp_role *r)
{
	r->published = s->res && s->res->n_vips;
	if (r->published)
		r->published_vip = s->res->vips[0];
}

/* t's role as a waypoint, made with its first dependent (NULL when out of memory). */
static struct mdl_wp_role *role_of(struct km_model *m, struct km_model_svc *t)
{
	if (!t->wp && (t->wp = calloc(1, sizeof(*t->wp))))
		publish_now(t, t->wp);
	if (!t->wp)
		m->out->oom = 1;
	return t->wp;
}

void mdl_register_service_waypoint(struct km_model *m, struct km_model_svc *s)
{
	struct km_model_svc *t = s->res ? waypoint_target(m, &s->res->waypoint) : NULL, *moved;

	if (t == s->wp_of)
		return;
	if (s->wp_of) { /* it has a role: s is (or was meant to be) in it */
		struct mdl_wp_role *r = s->wp_of->wp;

		if (r && (moved = parr_del_at((void **)r->svcs, &r->n_svcs, s, s->wp_index)))
			moved->wp_index = s->wp_index;
		mdl_mark_dirty(m, s->wp_of, 0);
	}
	s->wp_of = t; /* even when it could not be listed there (out of memory: a resync follows) */
	if (!t || !role_of(m, t))
		return;
	if (t->wp->n_svcs >= MDL_WP_SVC_INDEX_LIMIT) {
		m->out->oom = 1; /* not reached: see MDL_WP_SVC_INDEX_LIMIT */
		return;
	}
	s->wp_index = t->wp->n_svcs;
	mdl_parr_append(m, (void ***)&t->wp->svcs, &t->wp->n_svcs, &t->wp->cap_svcs, s);
}

/* A workload keeps no pointer to the waypoint service it names (8 bytes per workload): its
 * resource names it, and the model finds a service by name in O(1). old is the resource w held
 * before (NULL: none), still readable. */
void mdl_register_workload_waypoint(struct km_model *m, struct km_model_wl *w,
				    const struct km_workload_res *old)
{
	struct km_model_svc *t = w->res ? waypoint_target(m, km_wl_waypoint(w->res)) : NULL;
	struct km_model_svc *was = old ? waypoint_target(m, km_wl_waypoint(old)) : NULL;
	struct km_model_wl *moved;

	if (t == was)
		return;
	if (was) {
		struct mdl_wp_role *r = was->wp;

		if (r && (moved = parr_del_at((void **)r->wls, &r->n_wls, w, w->wp_index)))
			moved->wp_index = w->wp_index;
		mdl_mark_dirty(m, was, 0);
	}
	if (!t || !role_of(m, t))
		return;
	if (t->wp->n_wls >= MDL_WP_INDEX_LIMIT) {
		m->out->oom = 1; /* not reached: see MDL_WP_INDEX_LIMIT */
		return;
	}
	w->wp_index = t->wp->n_wls;
	mdl_parr_append(m, (void ***)&t->wp->wls, &t->wp->n_wls, &t->wp->cap_wls, w);
}

/* A waypoint service's first VIP is what its dependents use: when it changes (or the service
 * comes or goes), their rows are rewritten. */
void mdl_publish_waypoint_address(struct km_model *m, struct km_model_svc *s)
{
	struct mdl_wp_role *r = s->wp;
	int now = s->res && s->res->n_vips;

	if (!r) /* nothing ever named it: no rows to rewrite (a role starts with the address) */
		return;
	if (now == r->published &&
	    (!now || memcmp(&s->res->vips[0], &r->published_vip, sizeof(r->published_vip)) == 0))
		return;
	publish_now(s, r);
	for (size_t i = 0; i < r->n_svcs; i++)
		if (r->svcs[i]->res)
			mdl_emit_service(m, r->svcs[i], 0);
	for (size_t i = 0; i < r->n_wls; i++) {
		struct km_model_wl *w = r->wls[i];

		if (w->backend_written)
			mdl_emit_backend(m, w, NULL);
	}
}
