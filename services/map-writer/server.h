/* server.h — the map writer's Unix socket: accepts peers, checks the role each claims at hello
 * against its SO_PEERCRED, and dispatches requests to the tables module in arrival order. */
#ifndef KM_MW_SERVER_H
#define KM_MW_SERVER_H

#include <sys/types.h>
#include <uv.h>

#include "ipc/conn.h"
#include "services/map-writer/access.h"
#include "services/map-writer/tables.h"

struct km_session;

struct km_server {
	uv_loop_t *loop;
	uv_pipe_t listener;
	struct km_tables *tables;
	const struct km_access *access;
	struct km_session *sessions;
	size_t max_frame;
	char path[108];
	int listening;
	int stopping;
	unsigned int open_handles;
	void (*on_stopped)(struct km_server *srv);
};

struct km_server_config {
	const char *path;
	mode_t mode; /* socket file permissions, e.g. 0660 */
	gid_t gid;   /* group of the socket file; (gid_t)-1 = leave */
	size_t max_frame;
};

/* Returns 0 or a negative errno/uv error, logged with what to do. */
int km_server_start(struct km_server *srv, uv_loop_t *loop, const struct km_server_config *cfg,
		    struct km_tables *tables, const struct km_access *access);
/* Close the listener and every session; on_stopped runs when all handles are closed. */
void km_server_stop(struct km_server *srv, void (*on_stopped)(struct km_server *srv));

#endif
