/* authz_denials.h — denied connections by destination workload and deciding policy, from the
 * map writer's km_authz_denials rows (one per workload id and policy stat id; kmesh_maps.h), as
 * kmesh_authz_denied_connections_total{destination_workload, destination_workload_namespace,
 * policy}. A row is named when it is first seen with its workload (its workload name, else its
 * own name) and policy known, and keeps that name after they go, so a series never goes down
 * while its row lives; the map writer removes the rows of workloads gone once its table fills
 * (and this then forgets them). Rows of one workload name sum into one series. Bounded: at most
 * KM_AUTHZ_DENIAL_SERIES series; the rest (rows never named, the kernel table's overflow row)
 * are counted in kmesh_authz_unlisted_denied_connections_total. */
#ifndef KM_XDS_AUTHZ_DENIALS_H
#define KM_XDS_AUTHZ_DENIALS_H

#include <stddef.h>
#include <stdint.h>

#include "ipc/message.h"
#include "services/xds-agent/authz/authz_compile.h"
#include "services/xds-agent/model/model.h"
#include "shared/prom.h"

#define KM_AUTHZ_DENIAL_SERIES 1000

struct az_denial_row;

struct km_authz_denials {
	struct az_denial_row *rows; /* by (workload id, stat id) */
	size_t n;
	uint32_t gen; /* of the last take: rows not in it are gone */
};

/* The map writer's rows (all of them, from one dump): named where the model and the policies
 * can name them now. */
void km_authz_denials_take(struct km_authz_denials *d, const Kmesh__Ipc__AuthzDenialRow *const *rows,
			   size_t n, const struct km_authz *authz, const struct km_model *model);
void km_authz_denials_render(const struct km_authz_denials *d, struct km_prom *p);
void km_authz_denials_free(struct km_authz_denials *d);

#endif
