/* message_send.c — an Envelope or a Reply sent on a libuv connection (see message.h): apart
 * from message.c so a one-shot client (the CNI plugin, linked statically) needs no libuv. */
#include "ipc/message.h"

#include <stdlib.h>

int km_msg_send(struct km_conn *c, const km_envelope *env)
{
	size_t len;
	uint8_t *buf = km_msg_pack(env, &len);
	int err;

	if (!buf)
		return UV_ENOMEM;
	err = km_conn_send(c, buf, len);
	free(buf);
	return err;
}

/* Send reply (its code, message and body set) in an envelope answering request_id. */
static int send_reply(struct km_conn *c, uint64_t request_id, Kmesh__Ipc__Reply *reply)
{
	Kmesh__Ipc__Envelope env = KMESH__IPC__ENVELOPE__INIT;

	env.request_id = request_id;
	env.body_case = KMESH__IPC__ENVELOPE__BODY_REPLY;
	env.reply = reply;
	return km_msg_send(c, &env);
}

int km_msg_reply_fds(struct km_conn *c, uint64_t request_id, const int *fds, size_t n)
{
	Kmesh__Ipc__Envelope env = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Reply reply = KMESH__IPC__REPLY__INIT;
	size_t len;
	uint8_t *buf;
	int err;

	reply.code = KMESH__IPC__CODE__OK;
	reply.message = "";
	reply.applied = (uint32_t)n;
	reply.sockets = (uint32_t)n;
	env.request_id = request_id;
	env.body_case = KMESH__IPC__ENVELOPE__BODY_REPLY;
	env.reply = &reply;
	if (!(buf = km_msg_pack(&env, &len)))
		return UV_ENOMEM;
	err = km_conn_send_fds(c, buf, len, fds, n);
	free(buf);
	return err;
}

int km_msg_reply(struct km_conn *c, uint64_t request_id, Kmesh__Ipc__Code code,
		 const char *message, uint32_t applied)
{
	Kmesh__Ipc__Reply reply = KMESH__IPC__REPLY__INIT;

	reply.code = code;
	reply.message = (char *)(message ? message : "");
	reply.applied = applied;
	return send_reply(c, request_id, &reply);
}

int km_msg_reply_json(struct km_conn *c, uint64_t request_id, const char *json)
{
	Kmesh__Ipc__Reply reply = KMESH__IPC__REPLY__INIT;

	if (!json)
		return km_msg_reply(c, request_id, KMESH__IPC__CODE__INTERNAL, "out of memory", 0);
	reply.code = KMESH__IPC__CODE__OK;
	reply.message = "";
	reply.body_case = KMESH__IPC__REPLY__BODY_JSON;
	reply.json = (char *)json;
	if (send_reply(c, request_id, &reply) == 0)
		return 0;
	return km_msg_reply(c, request_id, KMESH__IPC__CODE__INTERNAL,
			    "the answer is larger than a frame; ask for fewer items", 0);
}

int km_msg_reply_config(struct km_conn *c, uint64_t request_id, const Kmesh__Ipc__ConfigState *st)
{
	Kmesh__Ipc__Reply reply = KMESH__IPC__REPLY__INIT;

	reply.code = KMESH__IPC__CODE__OK;
	reply.message = "";
	reply.body_case = KMESH__IPC__REPLY__BODY_CONFIG;
	reply.config = (Kmesh__Ipc__ConfigState *)st;
	return send_reply(c, request_id, &reply);
}
