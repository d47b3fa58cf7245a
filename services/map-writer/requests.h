/* requests.h — the map writer's request handling behind the shared IPC server: who may take
 * which role (access rules) and what each request does (tables module). */
#ifndef KM_MW_REQUESTS_H
#define KM_MW_REQUESTS_H

#include "ipc/server.h"
#include "services/map-writer/access.h"
#include "services/map-writer/authz_recheck.h"
#include "services/map-writer/ipsec_tc.h"
#include "services/map-writer/tables.h"

struct km_mw_requests {
	struct km_tables *tables;
	const struct km_access *access;
	struct km_authz_recheck *recheck; /* told when a request changed authz rows */
	struct km_ipsec_tc *ipsec_tc;     /* the IPsec tc programs: on enroll, and the agent's switch */
};

/* May a peer of this role send this batch? The IPsec agent writes only IPsec rows, and the xDS
 * agent only the others. Returns 1, or 0 with err filled. */
int km_mw_batch_allowed(Kmesh__Ipc__Role role, const Kmesh__Ipc__TableBatch *b, char *err,
			size_t errlen);
/* km_ipc_server_ops callbacks; arg is a struct km_mw_requests. */
int km_mw_allowed(void *arg, Kmesh__Ipc__Role role, uid_t uid, gid_t gid);
void km_mw_handle_request(void *arg, struct km_ipc_session *s, const km_envelope *env);

#endif
