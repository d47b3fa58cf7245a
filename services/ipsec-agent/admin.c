/* admin.c — see admin.h. */
#include "services/ipsec-agent/admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "services/ipsec-agent/node_info.h"
#include "services/ipsec-agent/node_spec.h"
#include "services/ipsec-agent/node_watch.h"
#include "shared/log.h"

int km_ipsec_admin_allowed(void *arg, Kmesh__Ipc__Role role, uid_t uid, gid_t gid)
{
	(void)arg;
	(void)gid;
	return role == KMESH__IPC__ROLE__ROLE_ADMIN && (uid == 0 || uid == getuid());
}

/* kmeshctl inject: a watch event {"type": "ADDED"|"MODIFIED"|"DELETED", "object": KmeshNodeInfo}
 * or a bare object (ADDED), handled as the KmeshNodeInfo watch handles the API server's (so a
 * later list that lacks the peer removes it); without a watch, as a peer given by hand. Returns
 * the reply code; msg says what happened. */
static Kmesh__Ipc__Code inject(struct km_ipsec_agent *a, const char *json, char *msg, size_t len)
{
	static const char *const types[] = { "ADDED", "MODIFIED", "DELETED" };
	json_error_t jerr;
	json_t *root = json_loads(json, JSON_REJECT_DUPLICATES, &jerr), *obj, *type;
	enum km_kube_change change = KM_KUBE_ADDED;
	const char *name, *kind;
	struct km_ipsec_node n;
	char err[256];
	Kmesh__Ipc__Code code = KMESH__IPC__CODE__BAD_REQUEST;
	uint64_t errors = a->plan.errors;

	if (!root) {
		snprintf(msg, len, "not valid JSON: %s at line %d column %d", jerr.text, jerr.line,
			 jerr.column);
		return code;
	}
	type = json_object_get(root, "type");
	obj = type ? json_object_get(root, "object") : root;
	if (type) {
		size_t i;

		for (i = 0; i < 3 && !(json_is_string(type) && !strcmp(json_string_value(type), types[i])); i++)
			;
		if (i == 3) {
			snprintf(msg, len, "'type' must be ADDED, MODIFIED or DELETED");
			goto out;
		}
		change = (enum km_kube_change)(KM_KUBE_ADDED + i);
	}
	name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	kind = json_string_value(json_object_get(obj, "kind"));
	if (!json_is_object(obj) || !name || (kind && strcmp(kind, "KmeshNodeInfo"))) {
		snprintf(msg, len, "expected a KmeshNodeInfo with metadata.name, or a watch event "
			 "{\"type\": ..., \"object\": KmeshNodeInfo}");
		goto out;
	}
	if (!strcmp(name, a->plan.self.name)) {
		snprintf(msg, len, "%s is this node: its object is the agent's to write", name);
		goto out;
	}
	if (change != KM_KUBE_DELETED && km_node_info_parse(obj, &n, err, sizeof(err)) != 0) {
		snprintf(msg, len, "%s", err);
		goto out;
	}
	if (change == KM_KUBE_DELETED && !km_ipsec_plan_find(&a->plan, name)) {
		snprintf(msg, len, "no peer named %s", name);
		code = KMESH__IPC__CODE__NOT_FOUND;
		goto out;
	}
	if (a->watch)
		km_node_watch_event(a->watch, change, obj);
	else if (change != KM_KUBE_DELETED)
		km_ipsec_agent_peer(a, &n);
	/* a peer given by hand is not the watch's to remove; this removal is the user's */
	if (change == KM_KUBE_DELETED && km_ipsec_plan_find(&a->plan, name))
		km_ipsec_agent_peer_gone(a, name);
	code = KMESH__IPC__CODE__OK;
	if (a->plan.errors != errors)
		snprintf(msg, len, "peer %s %s; %s", name, change == KM_KUBE_DELETED ? "removed" : "recorded",
			 a->plan.last_error);
	else
		snprintf(msg, len, "peer %s %s", name, change == KM_KUBE_DELETED ? "removed" : "applied");
out:
	json_decref(root);
	return code;
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
	case KMESH__IPC__ENVELOPE__BODY_INJECT:
	{
		char msg[512];
		Kmesh__Ipc__Code code = inject(a, env->inject->json ? env->inject->json : "", msg,
					       sizeof(msg));

		km_log(code ? KM_LOG_WARN : KM_LOG_INFO, "inject from pid %d: %s", (int)s->pid, msg);
		km_msg_reply(&s->conn, env->request_id, code, msg, code == KMESH__IPC__CODE__OK);
		return;
	}
	default:
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__BAD_REQUEST,
			     "the IPsec agent's admin socket takes ipsec_peer, ipsec_peer_gone, inject, "
			     "agent_dump and set_log_level", 0);
	}
}
