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

void mdl_register_service_waypoint(struct km_model *m, struct km_model_svc *s)
{
	struct km_model_svc *t = s->res ? waypoint_target(m, &s->res->waypoint) : NULL;

	if (t == s->wp_of)
		return;
	if (s->wp_of) {
		mdl_parr_del((void **)s->wp_of->wp_svcs, &s->wp_of->n_wp_svcs, s);
		mdl_mark_dirty(m, s->wp_of, 0);
	}
	if (t)
		mdl_parr_append(m, (void ***)&t->wp_svcs, &t->n_wp_svcs, &t->cap_wp_svcs, s);
	s->wp_of = t;
}

void mdl_register_workload_waypoint(struct km_model *m, struct km_model_wl *w)
{
	struct km_model_svc *t = w->res ? waypoint_target(m, km_wl_waypoint(w->res)) : NULL;

	if (t == w->wp_of)
		return;
	if (w->wp_of) {
		mdl_parr_del((void **)w->wp_of->wp_wls, &w->wp_of->n_wp_wls, w);
		mdl_mark_dirty(m, w->wp_of, 0);
	}
	if (t)
		mdl_parr_append(m, (void ***)&t->wp_wls, &t->n_wp_wls, &t->cap_wp_wls, w);
	w->wp_of = t;
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
