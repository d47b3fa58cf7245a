/* admin.c — see admin.h. */
#include "services/ipsec-agent/admin.h"

#include <stdlib.h>
#include <unistd.h>

#include "services/ipsec-agent/node_spec.h"
#include "shared/log.h"

int km_ipsec_admin_allowed(void *arg, Kmesh__Ipc__Role role, uid_t uid, gid_t gid)
{
	(void)arg;
	(void)gid;
	return role == KMESH__IPC__ROLE__ROLE_ADMIN && (uid == 0 || uid == getuid());
}

void km_ipsec_admin_request(void *arg, struct km_ipc_session *s, const km_envelope *env)
{
	struct km_ipsec_agent *a = arg;
	struct km_ipsec_node n;
	char err[256];

	switch (env->body_case) {
	case KMESH__IPC__ENVELOPE__BODY_IPSEC_PEER:
		if (km_ipsec_node_from_msg(env->ipsec_peer, &n, err, sizeof(err)) != 0) {
			km_warn("peer from pid %d refused: %s", (int)s->pid, err);
			km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__BAD_REQUEST, err, 0);
			return;
		}
	{
		uint64_t errors = a->plan.errors;

		km_ipsec_agent_peer(a, &n);
		/* recorded either way; the message says what could not be installed */
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__OK,
			     a->plan.errors != errors ? a->plan.last_error : "", 0);
		return;
	}
	case KMESH__IPC__ENVELOPE__BODY_IPSEC_PEER_GONE:
		km_ipsec_agent_peer_gone(a, env->ipsec_peer_gone->name ? env->ipsec_peer_gone->name : "");
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__OK, "", 0);
		return;
	case KMESH__IPC__ENVELOPE__BODY_AGENT_DUMP:
	{
		char *json = km_ipsec_agent_dump(a);

		km_msg_reply_json(&s->conn, env->request_id, json);
		free(json);
		return;
	}
	case KMESH__IPC__ENVELOPE__BODY_SET_LOG_LEVEL:
		km_ipc_server_set_log_level(s, env);
		return;
	default:
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__BAD_REQUEST,
			     "the IPsec agent's admin socket takes ipsec_peer, ipsec_peer_gone, "
			     "agent_dump and set_log_level", 0);
	}
}
