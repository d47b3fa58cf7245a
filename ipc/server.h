/* server.h — the framed Unix-socket server every kmesh daemon uses: listens (socket file created
 * with the given mode and group, never world-open, a stale file replaced only if nothing listens),
 * accepts peers and reads their SO_PEERCRED, requires a hello whose role the daemon allows for
 * that peer, then hands each request to the daemon in arrival order. Framing errors close the
 * peer; a frame that is not an Envelope gets BAD_REQUEST and the connection stays usable.
 *
 * Bounded before a peer is known: until its hello is accepted a peer may send frames of at most
 * KM_IPC_PREAUTH_FRAME bytes (a hello is far smaller), and it must send its hello within
 * KM_IPC_HELLO_TIMEOUT_MS or be closed. Every session's unfinished frames share one budget of
 * KM_IPC_BUFFERED_MAX bytes (frame.h); a frame that would go over it closes its connection. An
 * unpacked message takes at most KM_MSG_EXPANSION times its size plus 4 MiB (message.h).
 *
 * Bounded in number (struct km_ipc_limits): a uid holds at most per_uid connections; peers that
 * may take no role at all (checked at accept, from SO_PEERCRED) at most strangers together; and
 * all peers at most total, of which `reserved` are kept for peers that may take the cni or
 * admin role (the CNI plugin and kmeshctl: enrollments and probes), so others cannot fill them.
 * A connection over a limit is answered at once with RESOURCE_EXHAUSTED (request id 0) and
 * closed. So the fds a server holds for peers are at most total.
 *
 * Bounded in what it sends: a peer that does not read its replies stops being read once more
 * than KM_IPC_QUEUE_PAUSE bytes wait for it (conn.h); paused for KM_IPC_SLOW_READER_MS it is cut
 * off. All sessions' unsent replies share KM_IPC_QUEUED_MAX bytes; a reply over it cuts its
 * session off. Slow readers are never waited for: nothing else waits on them. */
#ifndef KM_IPC_SERVER_H
#define KM_IPC_SERVER_H

#include <sys/types.h>
#include <uv.h>

#include "ipc/conn.h"
#include "ipc/message.h"

#define KM_IPC_PREAUTH_FRAME 4096u
#define KM_IPC_HELLO_TIMEOUT_MS 5000u
#define KM_IPC_BUFFERED_MAX (64u << 20)
#define KM_IPC_QUEUE_PAUSE (1u << 20)
#define KM_IPC_SLOW_READER_MS 10000u
#define KM_IPC_QUEUED_MAX (64u << 20)

/* Connections peers may hold (0 in a config: the default). */
struct km_ipc_limits {
	unsigned per_uid;   /* default 64 */
	unsigned strangers; /* peers that may take no role, together; default 16 */
	unsigned total;     /* default 512 */
	unsigned reserved;  /* of total, kept for peers that may take cni or admin; default 64 */
};

/* What the server refused or cut, for the daemon's metrics. */
struct km_ipc_server_stats {
	uint64_t hello_timeouts;    /* closed: no hello within KM_IPC_HELLO_TIMEOUT_MS */
	uint64_t refused_per_uid;   /* refused at accept: the uid held per_uid connections */
	uint64_t refused_strangers; /* ... a peer with no role, strangers full */
	uint64_t refused_total;     /* ... the server held total (or total - reserved) */
	uint64_t accept_errors;     /* accept() failed (e.g. EMFILE) */
	uint64_t slow_readers;      /* cut off: replies unread for KM_IPC_SLOW_READER_MS */
	uint64_t queue_overflows;   /* cut off: a reply over KM_IPC_QUEUED_MAX */
};

enum km_ipc_peer_class {
	KM_IPC_PEER_STRANGER = 0, /* may take no role */
	KM_IPC_PEER_KEEPER,       /* may take cni or admin: uses the reserved room */
	KM_IPC_PEER_OTHER,
};

struct km_ipc_server;

struct km_ipc_session {
	struct km_conn conn;
	struct km_ipc_server *srv;
	struct km_ipc_session *next;
	uint64_t serial; /* unique per server: finds the session again for a deferred reply */
	Kmesh__Ipc__Role role;
	int hello_done;
	uint64_t accepted_ms; /* uv_now at accept: the hello deadline counts from here */
	enum km_ipc_peer_class peer_class;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	char process[64];
};

struct km_ipc_server_ops {
	/* May this peer (SO_PEERCRED) take the role it claims at hello? */
	int (*allowed)(void *arg, Kmesh__Ipc__Role role, uid_t uid, gid_t gid);
	/* A request after the hello. Every request gets exactly one reply, now or later (then found
	 * again with km_ipc_server_session). */
	void (*on_request)(void *arg, struct km_ipc_session *s, const km_envelope *env);
	/* The largest frame a peer of this role may send once its hello is accepted; 0, or this
	 * callback NULL: the configured max_frame. */
	size_t (*frame_limit)(void *arg, Kmesh__Ipc__Role role);
	/* A peer whose hello was accepted is gone (may be NULL): what it left open is the
	 * daemon's to undo. */
	void (*on_closed)(void *arg, struct km_ipc_session *s);
};

struct km_ipc_server_config {
	const char *path;
	mode_t mode; /* socket file permissions, e.g. 0660 */
	gid_t gid;   /* group of the socket file; (gid_t)-1 = leave */
	size_t max_frame;
	const char *name; /* sent in the hello reply, e.g. "kmesh-map-writer" */
	uint32_t features; /* sent in the hello reply: Kmesh__Ipc__Feature bits */
	/* Roles one peer at a time may hold (bit 1 << role): a second hello for one is refused
	 * while the first peer is connected. */
	uint32_t exclusive_roles;
	/* Roles (bit 1 << role) never paused nor cut off for leaving replies unread: the daemon's
	 * own trusted writer, whose replies are small and whose other traffic (connection reports)
	 * is bounded by its sender, and who must not be cut off for being busy. */
	uint32_t unpaused_roles;
	struct km_ipc_limits limits;
};

struct km_ipc_server {
	uv_loop_t *loop;
	uv_pipe_t listener;
	struct km_ipc_server_ops ops;
	void *arg;
	const char *name;
	uint32_t features;
	uint32_t exclusive_roles, unpaused_roles;
	struct km_ipc_session *sessions;
	uint64_t next_serial;
	size_t max_frame;
	struct km_frame_budget budget;      /* unfinished frames of every session */
	struct km_frame_budget send_budget; /* unsent replies of every session */
	struct km_ipc_limits limits;
	unsigned n_sessions;
	uv_timer_t session_timer; /* closes sessions past their hello deadline, and slow readers */
	struct km_ipc_server_stats stats;
	uint64_t peer_log_since_ms, peer_log_lines, peer_log_dropped; /* server.c: peer_log_ok */
	char path[108];
	int listening;
	int stopping;
	unsigned int open_handles;
	void (*on_stopped)(struct km_ipc_server *srv);
};

/* Returns 0 or a negative errno/uv error, logged with what to do. */
int km_ipc_server_start(struct km_ipc_server *srv, uv_loop_t *loop,
			const struct km_ipc_server_config *cfg, const struct km_ipc_server_ops *ops,
			void *arg);
/* The open session with this serial, or NULL once it has closed (or is closing): for a reply that
 * is sent later than on_request returns. */
struct km_ipc_session *km_ipc_server_session(struct km_ipc_server *srv, uint64_t serial);
/* The SetLogLevel request every daemon takes: applies it (shared/log.h) and replies. */
void km_ipc_server_set_log_level(struct km_ipc_session *s, const km_envelope *env);
/* Close the listener and every session; on_stopped (may be NULL) runs when all are closed. */
void km_ipc_server_stop(struct km_ipc_server *srv, void (*on_stopped)(struct km_ipc_server *srv));

#endif
