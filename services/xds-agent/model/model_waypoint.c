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

void mdl_register_service_waypoint(struct km_model *m, struct km_model_svc *s)
{
	struct km_model_svc *t = s->res ? waypoint_target(m, &s->res->waypoint) : NULL, *moved;

	if (t == s->wp_of)
		return;
	if (s->wp_of) {
		if ((moved = parr_del_at((void **)s->wp_of->wp_svcs, &s->wp_of->n_wp_svcs, s,
					 s->wp_index)))
			moved->wp_index = s->wp_index;
		mdl_mark_dirty(m, s->wp_of, 0);
	}
	if (t) {
		s->wp_index = t->n_wp_svcs;
		mdl_parr_append(m, (void ***)&t->wp_svcs, &t->n_wp_svcs, &t->cap_wp_svcs, s);
	}
	s->wp_of = t;
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
		if ((moved = parr_del_at((void **)was->wp_wls, &was->n_wp_wls, w, w->wp_index)))
			moved->wp_index = w->wp_index;
		mdl_mark_dirty(m, was, 0);
	}
	if (t && t->n_wp_wls >= MDL_WP_INDEX_LIMIT) {
		m->out->oom = 1; /* not reached: see MDL_WP_INDEX_LIMIT */
		return;
	}
	if (t) {
		w->wp_index = t->n_wp_wls;
		mdl_parr_append(m, (void ***)&t->wp_wls, &t->n_wp_wls, &t->cap_wp_wls, w);
	}
}

/* A waypoint service's first VIP is what its dependents use: when it changes (or the service
 * comes or goes), their rows are rewritten. */
void mdl_publish_waypoint_address(struct km_model *m, struct km_model_svc *s)
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
			mdl_emit_service(m, s->wp_svcs[i], 0);
	for (size_t i = 0; i < s->n_wp_wls; i++) {
		struct km_model_wl *w = s->wp_wls[i];

		if (w->backend_written)
			mdl_emit_backend(m, w, NULL);
	}
}
