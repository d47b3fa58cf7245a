/* client_sync.h — a blocking request/reply client for one-shot programs (CNI plugin, tools).
 * Daemons use the libuv km_conn instead. One request in flight at a time. */
#ifndef KM_IPC_CLIENT_SYNC_H
#define KM_IPC_CLIENT_SYNC_H

#include "ipc/message.h"

struct km_sync_client {
	int fd;
	uint64_t next_id;
	size_t max_frame;
	int timeout_ms;
};

/* Connect to a Unix socket path and say hello as role. On failure returns -errno, or
 * -EACCES/-EPROTO with *reply_code and msg (if given) set from the server's reply. */
int km_sync_connect(struct km_sync_client *cl, const char *path, Kmesh__Ipc__Role role,
		    const char *process, int timeout_ms, Kmesh__Ipc__Code *reply_code,
		    char *msg, size_t msg_len);
/* Send req (its request_id is set here) and wait for the reply envelope (caller frees with
 * km_msg_free). Returns 0 or -errno (-ETIMEDOUT, -EPROTO for a malformed reply). */
int km_sync_call(struct km_sync_client *cl, km_envelope *req, km_envelope **reply);
void km_sync_close(struct km_sync_client *cl);

#endif
