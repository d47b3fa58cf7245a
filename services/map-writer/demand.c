/* demand.c — see demand.h. */
#include "services/map-writer/demand.h"

#include "kmesh_maps.h"
#include "shared/log.h"

void km_demand_opens(struct km_dataplane *dp, struct km_mw_events *ev, uint64_t except_serial)
{
	int want = (dp->node.flags & KM_CFG_F_MONITORING) &&
		   km_mw_events_opens_wanted(ev, except_serial);
	uint16_t flags = (uint16_t)(want ? dp->node.flags | KM_CFG_F_OPEN_REPORTS
					 : dp->node.flags & ~KM_CFG_F_OPEN_REPORTS);

	if (km_dataplane_demand(dp, KM_HOOK_SOCKOPS, KM_DEMAND_OPENS, want) != 0)
		km_warn("the access log's open reports and durations are missing until sockops can "
			"be attached");
	/* durations need the kernel's time at close too: the clock read only while they do */
	if (flags != dp->node.flags)
		km_dataplane_set_flags(dp, flags);
}

/* A service or backend row with a waypoint (or the tunnel, a waypoint reference too)? */
static int names_waypoint(const Kmesh__Ipc__TableBatch *b)
{
	for (size_t i = 0; i < b->n_ops; i++) {
		const Kmesh__Ipc__TableOp *op = b->ops[i];

		if (op->kind != KMESH__IPC__TABLE_OP__KIND__UPSERT)
			continue;
		if ((op->row_case == KMESH__IPC__TABLE_OP__ROW_SERVICE && op->service->waypoint_port) ||
		    (op->row_case == KMESH__IPC__TABLE_OP__ROW_BACKEND && op->backend->waypoint_port))
			return 1;
	}
	return 0;
}

int km_demand_batch(struct km_dataplane *dp, const Kmesh__Ipc__TableBatch *b, int *named)
{
	if (!names_waypoint(b))
		return 0;
	*named = 1;
	return km_dataplane_demand(dp, KM_HOOK_SOCKOPS, KM_DEMAND_WAYPOINTS, 1);
}

void km_demand_sync_end(struct km_dataplane *dp, int named_waypoint)
{
	km_dataplane_demand(dp, KM_HOOK_SOCKOPS,
			    named_waypoint ? KM_DEMAND_ADOPTED : KM_DEMAND_WAYPOINTS | KM_DEMAND_ADOPTED, 0);
}

static void ingress_by_count(struct km_dataplane *dp, const struct km_authz_lookup *l)
{
	km_dataplane_demand(dp, KM_HOOK_AUTHZ_INGRESS, KM_DEMAND_NO_LOOKUP,
			    km_authz_lookup_pods_without(l) > 0);
}

void km_demand_ingress_pod_gone(struct km_dataplane *dp, const struct km_authz_lookup *l)
{
	/* a pod leaving can only take the need away: with nothing attached there is nothing to
	 * recount (the walk of km_manage is a bpf() call per pod, kept off the common unenroll) */
	if (km_dataplane_attached(dp, KM_HOOK_AUTHZ_INGRESS))
		ingress_by_count(dp, l);
}

int km_demand_pod_without_lookup(struct km_dataplane *dp)
{
	return km_dataplane_demand(dp, KM_HOOK_AUTHZ_INGRESS, KM_DEMAND_NO_LOOKUP, 1);
}

void km_demand_start(struct km_dataplane *dp, const struct km_authz_lookup *l)
{
	ingress_by_count(dp, l); /* first: an adopted link a pod still needs is never off */
	km_dataplane_demand(dp, KM_HOOK_AUTHZ_INGRESS, KM_DEMAND_ADOPTED, 0);
}
