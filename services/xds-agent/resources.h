/* resources.h — the agent's in-memory form of Istio workload-API resources (istio.workload
 * Service and Workload, the fields the data plane uses), with ownership, copy and equality.
 * Decoders (JSON file today, Delta xDS later) produce these; the model consumes them. */
#ifndef KM_XDS_RESOURCES_H
#define KM_XDS_RESOURCES_H

#include <stddef.h>
#include <stdint.h>

#include "kmesh_maps.h"

/* Bounds on what one resource may carry; decoders reject anything larger with a clear error. */
#define KM_RES_MAX_STRING 1024
#define KM_RES_MAX_ADDRESSES 16
#define KM_RES_MAX_PORTS 4096
#define KM_RES_MAX_SERVICES_PER_WORKLOAD 4096

struct km_port {
	uint32_t service_port;
	uint32_t target_port; /* 0 = same as service_port */
};

struct km_service_res {
	char *name; /* resource name "<namespace>/<hostname>" */
	char *svc_name;
	char *namespace;
	char *hostname;
	struct km_addr *vips;
	size_t n_vips;
	struct km_port *ports;
	size_t n_ports;
	uint32_t lb_mode; /* enum km_lb_mode */
};

enum km_workload_status {
	KM_WORKLOAD_HEALTHY = 0,
	KM_WORKLOAD_UNHEALTHY = 1,
};

struct km_workload_res {
	char *uid; /* resource name */
	char *name;
	char *namespace;
	char *node;
	char *network;
	struct km_addr *addrs;
	size_t n_addrs;
	char **services; /* service resource names ("<ns>/<hostname>"), sorted, unique */
	size_t n_services;
	uint32_t status; /* enum km_workload_status */
};

void km_service_res_free(struct km_service_res *s);
void km_workload_res_free(struct km_workload_res *w);
/* Field-by-field equality of everything the data plane uses. */
int km_service_res_equal(const struct km_service_res *a, const struct km_service_res *b);
int km_workload_res_equal(const struct km_workload_res *a, const struct km_workload_res *b);
/* Sort and de-duplicate w->services (decoders call this once). */
void km_workload_res_normalize(struct km_workload_res *w);
/* Binary search in the sorted services list. */
int km_workload_has_service(const struct km_workload_res *w, const char *service);

#endif
