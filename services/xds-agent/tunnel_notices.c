/* tunnel_notices.c — see tunnel_notices.h. */
#include "services/xds-agent/tunnel_notices.h"

#include "ipc/message.h"

uint64_t km_tunnel_notices_workload_gen(const struct km_model *model)
{
	return model->workload_changes + 1;
}

void km_authorize_reply(struct km_ipc_session *s, uint64_t request_id, Kmesh__Ipc__Code code,
			const char *why, const char *baggage, uint64_t policy_gen,
			uint64_t workload_gen)
{
	km_envelope out = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Reply reply = KMESH__IPC__REPLY__INIT;
	Kmesh__Ipc__AuthorizeReply ar = KMESH__IPC__AUTHORIZE_REPLY__INIT;

	reply.code = code;
	reply.message = (char *)why;
	reply.body_case = KMESH__IPC__REPLY__BODY_AUTHORIZED;
	reply.authorized = &ar;
	ar.dst_baggage = (char *)baggage;
	ar.policy_generation = policy_gen;
	ar.workload_generation = workload_gen;
	out.request_id = request_id;
	out.body_case = KMESH__IPC__ENVELOPE__BODY_REPLY;
	out.reply = &reply;
	km_msg_send(&s->conn, &out);
}

static void on_check(uv_check_t *h)
{
	struct km_tunnel_notices *tn = h->data;
	uint64_t pg = tn->policies->generation, wg = km_tunnel_notices_workload_gen(tn->model);
	size_t i = 0;

	if (pg == tn->policy_gen && wg == tn->workload_gen)
		return;
	tn->policy_gen = pg;
	tn->workload_gen = wg;
	while (i < tn->n) {
		struct km_ipc_session *s = km_ipc_server_session(tn->srv, tn->serials[i]);

		if (!s) { /* gone without a close seen here: forget it */
			tn->serials[i] = tn->serials[--tn->n];
			continue;
		}
		km_authorize_reply(s, 0, KMESH__IPC__CODE__OK, "", "", pg, wg);
		tn->sent++;
		i++;
	}
}

int km_tunnel_notices_start(struct km_tunnel_notices *tn, uv_loop_t *loop,
			    struct km_ipc_server *srv, const struct km_model *model,
			    const struct km_policy_store *policies)
{
	int rc;

	*tn = (struct km_tunnel_notices){ .srv = srv, .model = model, .policies = policies };
	tn->policy_gen = policies->generation;
	tn->workload_gen = km_tunnel_notices_workload_gen(model);
	if ((rc = uv_check_init(loop, &tn->check)) != 0)
		return rc;
	tn->check.data = tn;
	if ((rc = uv_check_start(&tn->check, on_check)) != 0) {
		uv_close((uv_handle_t *)&tn->check, NULL);
		return rc;
	}
	uv_unref((uv_handle_t *)&tn->check); /* it never keeps the loop alive by itself */
	tn->started = 1;
	return 0;
}

int km_tunnel_notices_add(struct km_tunnel_notices *tn, const struct km_ipc_session *s)
{
	if (!tn->started)
		return -1;
	for (size_t i = 0; i < tn->n; i++)
		if (tn->serials[i] == s->serial)
			return 0;
	if (tn->n == KM_TUNNEL_NOTICE_SESSIONS)
		return -1;
	tn->serials[tn->n++] = s->serial;
	return 0;
}

void km_tunnel_notices_forget(struct km_tunnel_notices *tn, const struct km_ipc_session *s)
{
	for (size_t i = 0; i < tn->n; i++)
		if (tn->serials[i] == s->serial) {
			tn->serials[i] = tn->serials[--tn->n];
			return;
		}
}

void km_tunnel_notices_stop(struct km_tunnel_notices *tn)
{
	if (!tn->started)
		return;
	tn->started = 0;
	tn->n = 0;
	uv_close((uv_handle_t *)&tn->check, NULL);
}
