/* tunnel_route.c — see tunnel_route.h. */
#include "services/xds-agent/tunnel_route.h"

#include <stdlib.h>
#include <string.h>

#include "kmesh_maps.h"

/* The first IPv4 address of a workload (the tunnel listens and dials IPv4), else its first. */
static int address_of(const struct km_workload_res *w, struct km_addr *out)
{
	for (size_t i = 0; i < w->n_addrs; i++)
		if (km_addr_is_v4(&w->addrs[i])) {
			*out = w->addrs[i];
			return 0;
		}
	if (!w->n_addrs)
		return -1;
	*out = w->addrs[0];
	return 0;
}

/* One pod of a waypoint service: of its best priority group that has one, picked at random. */
static const struct km_workload_res *service_pod(const struct km_model *m,
						 const struct km_service_res *s)
{
	for (uint32_t p = 0; p < KM_PRIO_COUNT; p++) {
		const uint32_t *ids;
		size_t n = km_model_endpoints(m, s->name, p, &ids);

		if (n)
			return km_model_workload_by_id(m, ids[(size_t)rand() % n]);
	}
	return NULL;
}

static int via_waypoint(const struct km_model *m, const struct km_waypoint *wp,
			struct km_tunnel_route *r, const char **why)
{
	const struct km_service_res *s = NULL;

	if (wp->kind == KM_WAYPOINT_HOSTNAME)
		s = km_model_find_service(m, wp->service);
	else if (!(s = km_model_service_at(m, &wp->addr)))
		r->server = km_model_workload_at(m, &wp->addr); /* a waypoint pod by address */
	if (s)
		r->server = service_pod(m, s);
	if (!r->server || address_of(r->server, &r->dial) != 0) {
		*why = "the waypoint has no pod known";
		return -1;
	}
	r->dial_port = (uint16_t)(wp->hbone_port ? wp->hbone_port : KM_HBONE_PORT);
	r->waypoint = 1;
	return 0;
}

int km_tunnel_route(const struct km_model *m, const struct km_addr *to, struct km_tunnel_route *r,
		    const char **why)
{
	const struct km_service_res *s = km_model_service_at(m, to);
	const struct km_workload_res *w;

	memset(r, 0, sizeof(*r));
	if (s && s->waypoint.kind != KM_WAYPOINT_NONE)
		return via_waypoint(m, &s->waypoint, r, why);
	if (!(w = km_model_workload_at(m, to))) {
		*why = s ? "a service without a waypoint: the kernel picks its workload" :
			   "no workload has this address";
		return -1;
	}
	if (km_wl_waypoint(w)->kind != KM_WAYPOINT_NONE)
		return via_waypoint(m, km_wl_waypoint(w), r, why);
	r->server = w;
	r->dial = *to;
	r->dial_port = KM_HBONE_PORT;
	return 0;
}
