/* tunnel_notices.h — the sessions (the tunnel's) told when an authorization decision's inputs
 * change. A session that asked PolicyGeneration with notify gets, at the end of each loop turn
 * in which the policies or the workloads changed, an AuthorizeReply with request id 0 carrying
 * both generations; so the tunnel may keep the decisions it was given at the current pair
 * (authz_query.h reads the policies and the destination workload, nothing else) and drop them
 * all at a notice. Every change source (istiod, the file, injected events, sweeps) is caught
 * by a uv_check on the agent's loop: one compare per turn. Bounded: at most
 * KM_TUNNEL_NOTICE_SESSIONS sessions (more are answered without notices: they poll). */
#ifndef KM_XDS_TUNNEL_NOTICES_H
#define KM_XDS_TUNNEL_NOTICES_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "ipc/server.h"
#include "services/xds-agent/authz/policy_store.h"
#include "services/xds-agent/model/model.h"

#define KM_TUNNEL_NOTICE_SESSIONS 8

struct km_tunnel_notices {
	uv_check_t check;
	struct km_ipc_server *srv;
	const struct km_model *model;
	const struct km_policy_store *policies;
	uint64_t serials[KM_TUNNEL_NOTICE_SESSIONS]; /* sessions told, by km_ipc_session.serial */
	size_t n;
	uint64_t policy_gen, workload_gen; /* the pair last told */
	uint64_t sent;                     /* notices sent */
	int started;
};

/* Start watching on loop. Returns 0, or a negative uv error. */
int km_tunnel_notices_start(struct km_tunnel_notices *tn, uv_loop_t *loop,
			    struct km_ipc_server *srv, const struct km_model *model,
			    const struct km_policy_store *policies);
/* An AuthorizeReply on s: an answer (Authorize, PolicyGeneration) or, request id 0, a notice;
 * workload_gen 0 says the session is not told of changes. */
void km_authorize_reply(struct km_ipc_session *s, uint64_t request_id, Kmesh__Ipc__Code code,
			const char *why, const char *baggage, uint64_t policy_gen,
			uint64_t workload_gen);
/* The workloads' generation as the agent reports it: never 0 (0 says "no notices"). */
uint64_t km_tunnel_notices_workload_gen(const struct km_model *model);
/* Tell session s from now on. Returns 0, or -1 when KM_TUNNEL_NOTICE_SESSIONS are told already
 * (a session asking twice is told once). */
int km_tunnel_notices_add(struct km_tunnel_notices *tn, const struct km_ipc_session *s);
/* The session is gone. */
void km_tunnel_notices_forget(struct km_tunnel_notices *tn, const struct km_ipc_session *s);
void km_tunnel_notices_stop(struct km_tunnel_notices *tn);

#endif
