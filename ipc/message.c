/* message.c — Envelope pack/unpack/reply helpers (see message.h). */
#include "ipc/message.h"

#include <stdlib.h>

uint8_t *km_msg_pack(const km_envelope *env, size_t *len)
{
	size_t n = kmesh__ipc__envelope__get_packed_size(env);
	uint8_t *buf = malloc(n ? n : 1);

	if (!buf)
		return NULL;
	*len = kmesh__ipc__envelope__pack(env, buf);
	return buf;
}

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

km_envelope *km_msg_unpack(const uint8_t *data, size_t len)
{
	km_envelope *env = kmesh__ipc__envelope__unpack(NULL, len, data);

	if (env && env->body_case == KMESH__IPC__ENVELOPE__BODY__NOT_SET) {
		kmesh__ipc__envelope__free_unpacked(env, NULL);
		return NULL;
	}
	return env;
}

void km_msg_free(km_envelope *env)
{
	if (env)
		kmesh__ipc__envelope__free_unpacked(env, NULL);
}

int km_msg_reply(struct km_conn *c, uint64_t request_id, Kmesh__Ipc__Code code,
		 const char *message, uint32_t applied)
{
	Kmesh__Ipc__Envelope env = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Reply reply = KMESH__IPC__REPLY__INIT;

	reply.code = code;
	reply.message = (char *)(message ? message : "");
	reply.applied = applied;
	env.request_id = request_id;
	env.body_case = KMESH__IPC__ENVELOPE__BODY_REPLY;
	env.reply = &reply;
	return km_msg_send(c, &env);
}

const char *km_msg_code_name(Kmesh__Ipc__Code code)
{
	switch (code) {
	case KMESH__IPC__CODE__OK:
		return "OK";
	case KMESH__IPC__CODE__BAD_REQUEST:
		return "BAD_REQUEST";
	case KMESH__IPC__CODE__PERMISSION_DENIED:
		return "PERMISSION_DENIED";
	case KMESH__IPC__CODE__TABLE_FULL:
		return "TABLE_FULL";
	case KMESH__IPC__CODE__NOT_FOUND:
		return "NOT_FOUND";
	case KMESH__IPC__CODE__INTERNAL:
		return "INTERNAL";
	case KMESH__IPC__CODE__VERSION_MISMATCH:
		return "VERSION_MISMATCH";
	default:
		return "UNKNOWN";
	}
}

const char *km_msg_role_name(Kmesh__Ipc__Role role)
{
	switch (role) {
	case KMESH__IPC__ROLE__ROLE_XDS:
		return "xds";
	case KMESH__IPC__ROLE__ROLE_CNI:
		return "cni";
	case KMESH__IPC__ROLE__ROLE_ADMIN:
		return "admin";
	default:
		return "unspecified";
	}
}
