/* message.h — Envelope helpers over the generated protobuf-c code: pack-and-send, unpack with a
 * clear error, and reply construction. The protocol version lives here. */
#ifndef KM_IPC_MESSAGE_H
#define KM_IPC_MESSAGE_H

#include <stddef.h>
#include <stdint.h>

#include "kmesh_ipc.pb-c.h"
#include "ipc/conn.h"
#include "shared/addr.h"

#define KM_IPC_PROTOCOL_VERSION 1
/* An unpacked message takes at most KM_MSG_EXPANSION times its wire size plus KM_MSG_SLACK
 * (message.c). Measured: table rows take 6-15x (a backend row with one IPv4 address, the
 * smallest, ~15x); an empty op, two bytes on the wire, ~54x. */
#define KM_MSG_EXPANSION 20
#define KM_MSG_SLACK (4u << 20)

typedef Kmesh__Ipc__Envelope km_envelope;

/* Pack env and send it as one frame. Returns 0 or a negative uv error. */
int km_msg_send(struct km_conn *c, const km_envelope *env);
/* Pack env into a malloc'd buffer (caller frees). Returns NULL on allocation failure. */
uint8_t *km_msg_pack(const km_envelope *env, size_t *len);
/* Decode one frame. Returns NULL if the bytes are not an Envelope, carry no body, or would take
 * more than KM_MSG_EXPANSION times their size plus KM_MSG_SLACK unpacked. */
km_envelope *km_msg_unpack(const uint8_t *data, size_t len);
void km_msg_free(km_envelope *env);

/* Send a Reply with the given code/message/applied count to request_id. */
int km_msg_reply(struct km_conn *c, uint64_t request_id, Kmesh__Ipc__Code code,
		 const char *message, uint32_t applied);

/* Reply OK with n sockets attached (km_conn_send_fds; applied = n). Returns what it returned:
 * UV_EAGAIN when they could not go now (nothing sent). */
int km_msg_reply_fds(struct km_conn *c, uint64_t request_id, const int *fds, size_t n);

/* Reply with a JSON text (NULL: out of memory). A text too large for a frame gets an error reply
 * instead, so the asker is never left waiting. Returns what the send returned. */
int km_msg_reply_json(struct km_conn *c, uint64_t request_id, const char *json);

/* Reply OK with the switches of the process (SetConfig). */
int km_msg_reply_config(struct km_conn *c, uint64_t request_id, const Kmesh__Ipc__ConfigState *st);

/* An Enroll's cookie and addresses (at most KM_ENROLL_MAX_ADDRS), their bytes kept in buf. */
#define KM_ENROLL_MAX_ADDRS 8
struct km_enroll_addrs {
	ProtobufCBinaryData bytes[KM_ENROLL_MAX_ADDRS];
	uint8_t raw[KM_ENROLL_MAX_ADDRS][16];
};
void km_msg_enroll_set(Kmesh__Ipc__Enroll *e, struct km_enroll_addrs *buf, uint64_t cookie,
		       const struct km_addr *addrs, size_t n);

const char *km_msg_code_name(Kmesh__Ipc__Code code);
const char *km_msg_role_name(Kmesh__Ipc__Role role);

#endif
