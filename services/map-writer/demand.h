/* demand.h — when the programs attached on demand are needed (dataplane.h, KM_DEMAND_*): the
 * reasons the map writer's requests bring (a subscriber asking for open reports, rows naming a
 * waypoint, a pod without an sk_lookup program), turned into km_dataplane_demand calls.
 * docs/map-writer.md, "Programs on demand". */
#ifndef KM_MW_DEMAND_H
#define KM_MW_DEMAND_H

#include <stdint.h>

#include "ipc/message.h"
#include "services/map-writer/authz_lookup.h"
#include "services/map-writer/dataplane.h"
#include "services/map-writer/events.h"

/* sockops for open reports while monitoring is on and a subscriber (other than except_serial, a
 * session that is leaving; 0: none) wants them; closes then carry the kernel's time too
 * (KM_CFG_F_OPEN_REPORTS). */
void km_demand_opens(struct km_dataplane *dp, struct km_mw_events *ev, uint64_t except_serial);
/* Before a batch is applied: sockops when it names a waypoint (*named set then). Returns 0, or a
 * negative errno when sockops could not be attached (the batch must not be applied). */
int km_demand_batch(struct km_dataplane *dp, const Kmesh__Ipc__TableBatch *b, int *named);
/* A full sync ended: sockops stays for waypoints only if it named one; an adopted link's reason
 * goes either way. */
void km_demand_sync_end(struct km_dataplane *dp, int named_waypoint);
/* authz_ingress while an enrolled pod has no sk_lookup program. Before a pod without one is
 * enrolled: km_demand_pod_without_lookup (0, or a negative errno); after a pod left (or its
 * enrollment failed): km_demand_ingress_pod_gone, which recounts only while it is attached. */
void km_demand_ingress_pod_gone(struct km_dataplane *dp, const struct km_authz_lookup *l);
int km_demand_pod_without_lookup(struct km_dataplane *dp);
/* At start, once the pods' sk_lookup links are known. */
void km_demand_start(struct km_dataplane *dp, const struct km_authz_lookup *l);

#endif
