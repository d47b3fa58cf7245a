/* model_waypoint.c — waypoints: resolving the hostname form through the waypoint service, and
 * rewriting the rows of every object that depends on a waypoint service when its address
 * changes. */
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/model_internal.h"
#include "shared/addr.h"

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
}

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
	struct km_model_svc *t = w->res ? waypoint_target(m, &w->res->waypoint) : NULL;

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
