/* requests.h — the map writer's request handling behind the shared IPC server: who may take
 * which role (access rules) and what each request does (tables module; kmeshctl's switches in
 * km_config; subscriptions to connection reports). */
#ifndef KM_MW_REQUESTS_H
#define KM_MW_REQUESTS_H

#include "ipc/server.h"
#include "services/map-writer/access.h"
#include "services/map-writer/authz_recheck.h"
#include "services/map-writer/dataplane.h"
#include "services/map-writer/dump_queue.h"
#include "services/map-writer/events.h"
#include "services/map-writer/ipsec_tc.h"
#include "services/map-writer/tables.h"

/* Requests counted by the asker's role, the request and the result (metrics_file.h). */
#define KM_MW_ROLES 6  /* Kmesh__Ipc__Role */
#define KM_MW_KINDS 13 /* km_mw_kind_label */
#define KM_MW_CODES 9  /* Kmesh__Ipc__Code */

struct km_authz_lookup;
struct km_conn_progress;

struct km_mw_requests {
	struct km_tables *tables;
	const struct km_access *access;
	struct km_authz_recheck *recheck; /* told when a request changed authz rows */
	struct km_ipsec_tc *ipsec_tc;     /* the IPsec tc programs: on enroll, and the agent's switch */
	struct km_authz_lookup *lookup;   /* authorization at the socket lookup: on (un)enroll */
	struct km_dataplane *dp;          /* km_config's switches (SetConfig) */
	struct km_mw_events *events;      /* connection reports (Subscribe) */
	const struct km_conn_progress *progress; /* open connections' reports (metrics) */
	struct km_dump_queue *dumps; /* table dumps off the loop; NULL: read on the loop (tests) */
	uint64_t counts[KM_MW_ROLES][KM_MW_KINDS][KM_MW_CODES];
	int sync_waypoints; /* a row with a waypoint was written since the sync began */
};

/* Label values of the counts' indexes. */
const char *km_mw_role_label(size_t role);
const char *km_mw_kind_label(size_t kind);
const char *km_mw_code_label(size_t code);

/* May a peer of this role send this batch? The IPsec agent writes only IPsec rows, and the xDS
 * agent only the others. Returns 1, or 0 with err filled. */
int km_mw_batch_allowed(Kmesh__Ipc__Role role, const Kmesh__Ipc__TableBatch *b, char *err,
			size_t errlen);
/* km_ipc_server_ops callbacks; arg is a struct km_mw_requests. */
int km_mw_allowed(void *arg, Kmesh__Ipc__Role role, uid_t uid, gid_t gid);
/* The largest frame each role may send (server.h): the xDS agent's batches up to --max-frame, the
 * IPsec agent's peers up to KM_MW_FRAME_IPSEC, a CNI plugin's or kmeshctl's single request up
 * to KM_MW_FRAME_SMALL. */
#define KM_MW_FRAME_IPSEC (1u << 20)
#define KM_MW_FRAME_SMALL (64u << 10)
size_t km_mw_frame_limit(void *arg, Kmesh__Ipc__Role role);
/* A peer left: a sync it began ends without a sweep; its wish for open reports goes. */
void km_mw_session_closed(void *arg, struct km_ipc_session *s);
void km_mw_handle_request(void *arg, struct km_ipc_session *s, const km_envelope *env);
/* An enrollment, as a CNI peer's request does it (also the pending ones, cni_pending.h). */
Kmesh__Ipc__Code km_mw_enroll(struct km_mw_requests *w, const Kmesh__Ipc__Enroll *e, char *err,
			      size_t errlen);

#endif
