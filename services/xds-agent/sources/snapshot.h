/* snapshot.h — applying a complete set of resources (a file's contents) to the model as a delta:
 * what is gone is removed (workloads first, then services), what is new or changed is upserted
 * (services first, then workloads). A resource that failed to decode keeps its previous version. */
#ifndef KM_XDS_SNAPSHOT_H
#define KM_XDS_SNAPSHOT_H

#include "services/xds-agent/model/model.h"
#include "services/xds-agent/sources/resource_json.h"

struct km_snapshot_stats {
	size_t removed_services, removed_workloads;
	size_t upserted_services, upserted_workloads; /* offered, changed or not */
	size_t duplicates;
};

/* Moves every resource out of set into the model (set is left empty but must still be freed),
 * then flushes the model. */
void km_snapshot_apply(struct km_model *m, struct km_resource_set *set, struct km_snapshot_stats *st);

#endif
