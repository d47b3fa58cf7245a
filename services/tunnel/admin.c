/* admin.c — the tunnel's socket: who may say what (see tunnel.h), the CNI agent's TunnelPods,
 * and kmeshctl's dump and log level. */
#include "services/tunnel/tunnel.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "shared/log.h"

int km_tunnel_allowed(void *arg, Kmesh__Ipc__Role role, uid_t uid, gid_t gid)
{
	(void)arg;
	(void)gid;
	/* the pods and identities are the node's CNI agent's word: root's alone */
	if (role == KMESH__IPC__ROLE__ROLE_CNI)
		return uid == 0;
	return role == KMESH__IPC__ROLE__ROLE_ADMIN && (uid == 0 || uid == getuid());
}

json_t *km_tunnel_dump(const struct km_tunnel *t)
{
	json_t *d = json_object(), *pods = json_array();

	for (size_t i = 0; i < t->pods.n; i++) {
		const struct km_tunnel_pod *p = &t->pods.pods[i];
		json_t *addrs = json_array();
		char buf[KM_ADDR_STRLEN];

		for (size_t k = 0; k < p->n_addrs; k++)
			json_array_append_new(addrs, json_string(km_addr_format(&p->addrs[k], buf)));
		json_array_append_new(pods, json_pack("{s:s, s:s, s:s, s:s, s:o, s:I}", "uid", p->uid,
						      "namespace", p->ns, "name", p->name,
						      "identity", p->identity, "addresses", addrs,
						      "netns_cookie", (json_int_t)p->netns_cookie));
	}
	json_object_set_new(d, "trust_domain", json_string(t->pods.trust_domain));
	json_object_set_new(d, "ca", json_string(t->ca_address ? t->ca_address : ""));
	json_object_set_new(d, "certs", km_certs_dump(&t->certs));
	json_object_set_new(d, "pods", pods);
	if (t->outbound_on)
		json_object_set_new(d, "tunnels", km_outbound_dump(&t->outbound));
	return d;
}

static void tunnel_pods(struct km_tunnel *t, struct km_ipc_session *s, const km_envelope *env)
{
	char why[300];
	size_t refused;

	if (s->role != KMESH__IPC__ROLE__ROLE_CNI) {
		t->feeds_refused++;
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__PERMISSION_DENIED,
			     "only the node's CNI agent (role cni) says which pods are enrolled", 0);
		return;
	}
	t->feeds++;
	refused = km_tunnel_pods_apply(&t->pods, env->tunnel_pods, why, sizeof(why));
	if (refused)
		km_warn("%zu pods from the CNI agent refused; the first: %s", refused, why);
	km_msg_reply(&s->conn, env->request_id,
		     refused ? KMESH__IPC__CODE__BAD_REQUEST : KMESH__IPC__CODE__OK, why,
		     (uint32_t)t->pods.n);
}

void km_tunnel_request(void *arg, struct km_ipc_session *s, const km_envelope *env)
{
	struct km_tunnel *t = arg;

	switch (env->body_case) {
	case KMESH__IPC__ENVELOPE__BODY_TUNNEL_PODS:
		tunnel_pods(t, s, env);
		return;
	case KMESH__IPC__ENVELOPE__BODY_AGENT_DUMP:
	case KMESH__IPC__ENVELOPE__BODY_SET_LOG_LEVEL:
		if (s->role != KMESH__IPC__ROLE__ROLE_ADMIN)
			break;
		if (env->body_case == KMESH__IPC__ENVELOPE__BODY_SET_LOG_LEVEL) {
			km_ipc_server_set_log_level(s, env);
		} else {
			json_t *d = km_tunnel_dump(t);
			char *text = json_dumps(d, JSON_COMPACT);

			km_msg_reply_json(&s->conn, env->request_id, text ? text : "{}");
			free(text);
			json_decref(d);
		}
		return;
	default:
		break;
	}
	km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__BAD_REQUEST,
		     "the tunnel takes tunnel_pods (role cni), agent_dump and set_log_level (role "
		     "admin)", 0);
}
