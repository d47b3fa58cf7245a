/* authz_query.h — one connection's authorization decided on demand: the tunnel asks it for each
 * HBONE stream (Authorize, role tunnel on the agent's admin socket), since only it knows the
 * client's principal (its certificate). The destination's policies (the workload at the
 * destination address in the model; none known: the mesh-wide ones) are evaluated with that
 * principal by the reference evaluator (authz_eval.h), with ztunnel's semantics: the same rules
 * the BPF programs apply by address. */
#ifndef KM_XDS_AUTHZ_QUERY_H
#define KM_XDS_AUTHZ_QUERY_H

#include <stddef.h>
#include <stdint.h>

#include "kmesh_maps.h"
#include "services/xds-agent/authz/policy_store.h"
#include "services/xds-agent/model/model.h"

/* Decide. principal: "<td>/ns/<ns>/sa/<sa>" (a SPIFFE id without its scheme; anything else is
 * no identity at all). Returns 1 allowed, 0 denied; why (always filled) names the deciding
 * policy, or says that none decided. */
int km_authz_query(const struct km_model *m, const struct km_policy_store *ps,
		   const struct km_addr *src, const struct km_addr *dst, uint16_t dst_port,
		   const char *principal, char *why, size_t whylen);

#endif
