/* client_sync.h — a blocking request/reply client for one-shot programs (CNI plugin, tools).
 * Daemons use the libuv km_conn instead. Requests may be pipelined (send several, then receive
 * their replies in order: the server answers in order); km_sync_call is one of each. */
#ifndef KM_IPC_CLIENT_SYNC_H
#define KM_IPC_CLIENT_SYNC_H

#include "ipc/message.h"

struct km_sync_client {
	int fd;
	uint64_t next_id;
	size_t max_frame;
	int timeout_ms;
	/* from the server's hello reply ("" from a server that does not say) */
	char server[64], version[64], log_level[16];
	uint32_t pid;
	/* sockets the server attaches to a reply (SCM_RIGHTS), kept here up to fds_max when fds is
	 * set (the caller owns them then), else closed at once */
	int *fds;
	size_t fds_max, n_fds;
};

/* Connect to a Unix socket path and say hello as role. On failure returns -errno, or
 * -EACCES/-EPROTO with *reply_code and msg (if given) set from the server's reply. */
int km_sync_connect(struct km_sync_client *cl, const char *path, Kmesh__Ipc__Role role,
		    const char *process, int timeout_ms, Kmesh__Ipc__Code *reply_code,
		    char *msg, size_t msg_len);
/* Send req (its request_id is set here) and wait for the reply envelope (caller frees with
 * km_msg_free). Returns 0 or -errno (-ETIMEDOUT, -EPROTO for a malformed reply). */
int km_sync_call(struct km_sync_client *cl, km_envelope *req, km_envelope **reply);
/* Send req without waiting; its request_id is set here (ids count up from 1, hello first). */
int km_sync_send(struct km_sync_client *cl, km_envelope *req);
/* Send a frame packed beforehand (header included) that carries the next request id. */
int km_sync_send_packed(struct km_sync_client *cl, const uint8_t *frame, size_t len);
/* Wait for the next reply, which must answer request_id. */
int km_sync_recv(struct km_sync_client *cl, uint64_t request_id, km_envelope **reply);
void km_sync_close(struct km_sync_client *cl);

#endif
