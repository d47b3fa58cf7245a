/* tunnel_route.h — where the tunnel takes a connection it carries over HBONE (the xDS agent's
 * answer to Destination): the workload at the address the kernel handed over, or, when a
 * waypoint stands in front of it (the service's, for a VIP; the workload's own, for a pod), one
 * of the waypoint's pods, as ztunnel's outbound chooses (../reference/hbone.md §2). The answer
 * names the server the tunnel connects to (its address and HBONE port) and the workload whose
 * identity that server's certificate must carry. */
#ifndef KM_XDS_TUNNEL_ROUTE_H
#define KM_XDS_TUNNEL_ROUTE_H

#include <stdint.h>

#include "services/xds-agent/model/model.h"

struct km_tunnel_route {
	const struct km_workload_res *server; /* whose identity the server must carry */
	struct km_addr dial;                  /* the server's address ... */
	uint16_t dial_port;                   /* ... and HBONE port (host order) */
	int waypoint;                         /* the server is a waypoint */
};

/* Returns 0, or -1 with why (no workload there; a waypoint named but without a pod known). */
int km_tunnel_route(const struct km_model *m, const struct km_addr *to, struct km_tunnel_route *r,
		    const char **why);

#endif
