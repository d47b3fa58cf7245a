/* server.c — map writer socket server (see server.h). */
#include "services/map-writer/server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ipc/message.h"
#include "kmesh_maps.h"
#include "shared/log.h"

struct km_session {
	struct km_conn conn;
	struct km_server *srv;
	struct km_session *next;
	Kmesh__Ipc__Role role;
	int hello_done;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	char process[64];
};

static void maybe_stopped(struct km_server *srv)
{
	if (srv->stopping && srv->open_handles == 0 && srv->on_stopped)
		srv->on_stopped(srv);
}

static void session_closed(struct km_conn *c)
{
	struct km_session *s = c->data;
	struct km_server *srv = s->srv;

	for (struct km_session **pp = &srv->sessions; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	km_debug("peer pid %d (%s) disconnected", (int)s->pid, s->process);
	free(s);
	srv->open_handles--;
	maybe_stopped(srv);
}

static void deny(struct km_session *s, uint64_t id, const char *why)
{
	km_warn("refusing peer pid %d uid %u gid %u: %s", (int)s->pid, (unsigned)s->uid,
		(unsigned)s->gid, why);
	km_msg_reply(&s->conn, id, KMESH__IPC__CODE__PERMISSION_DENIED, why, 0);
	km_conn_close_after_writes(&s->conn, session_closed);
}

static void handle_hello(struct km_session *s, const km_envelope *env)
{
	const Kmesh__Ipc__Hello *h = env->hello;
	km_envelope out = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Reply reply = KMESH__IPC__REPLY__INIT;
	Kmesh__Ipc__HelloReply hr = KMESH__IPC__HELLO_REPLY__INIT;
	char why[256];

	snprintf(s->process, sizeof(s->process), "%s", h->process && *h->process ? h->process : "?");
	if (!km_access_allowed(s->srv->access, h->role, s->uid, s->gid)) {
		snprintf(why, sizeof(why), "uid %u gid %u may not take role '%s' (see --allow)",
			 (unsigned)s->uid, (unsigned)s->gid, km_msg_role_name(h->role));
		deny(s, env->request_id, why);
		return;
	}
	if (h->protocol_version != KM_IPC_PROTOCOL_VERSION ||
	    (h->layout_version && h->layout_version != KM_LAYOUT_VERSION)) {
		snprintf(why, sizeof(why),
			 "version mismatch: peer speaks protocol %u layout %u, map writer %u/%u",
			 h->protocol_version, h->layout_version, KM_IPC_PROTOCOL_VERSION,
			 KM_LAYOUT_VERSION);
		km_warn("peer pid %d (%s): %s", (int)s->pid, s->process, why);
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__VERSION_MISMATCH, why, 0);
		km_conn_close_after_writes(&s->conn, session_closed);
		return;
	}
	s->role = h->role;
	s->hello_done = 1;
	km_info("peer pid %d uid %u (%s) connected as %s", (int)s->pid, (unsigned)s->uid, s->process,
		km_msg_role_name(s->role));
	hr.protocol_version = KM_IPC_PROTOCOL_VERSION;
	hr.layout_version = KM_LAYOUT_VERSION;
	hr.server = "kmesh-map-writer";
	reply.code = KMESH__IPC__CODE__OK;
	reply.message = "";
	reply.body_case = KMESH__IPC__REPLY__BODY_HELLO;
	reply.hello = &hr;
	out.request_id = env->request_id;
	out.body_case = KMESH__IPC__ENVELOPE__BODY_REPLY;
	out.reply = &reply;
	km_msg_send(&s->conn, &out);
}

static void handle_dump(struct km_session *s, const km_envelope *env)
{
	km_envelope out = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Reply reply = KMESH__IPC__REPLY__INIT;
	Kmesh__Ipc__DumpReply dump;
	char err[256];

	reply.code = km_tables_dump(s->srv->tables, env->dump->table, env->dump->max_rows, &dump,
				    err, sizeof(err));
	reply.message = err;
	if (reply.code == KMESH__IPC__CODE__OK) {
		reply.body_case = KMESH__IPC__REPLY__BODY_DUMP;
		reply.dump = &dump;
	}
	out.request_id = env->request_id;
	out.body_case = KMESH__IPC__ENVELOPE__BODY_REPLY;
	out.reply = &reply;
	if (km_msg_send(&s->conn, &out) != 0)
		km_warn("dump reply to pid %d too large or not sent; ask for fewer rows", (int)s->pid);
	if (reply.code == KMESH__IPC__CODE__OK)
		km_tables_dump_free(&dump);
}

static int role_may(const struct km_session *s, Kmesh__Ipc__Envelope__BodyCase body)
{
	switch (body) {
	case KMESH__IPC__ENVELOPE__BODY_BATCH:
		return s->role == KMESH__IPC__ROLE__ROLE_XDS;
	case KMESH__IPC__ENVELOPE__BODY_ENROLL:
	case KMESH__IPC__ENVELOPE__BODY_UNENROLL:
		return s->role == KMESH__IPC__ROLE__ROLE_CNI;
	case KMESH__IPC__ENVELOPE__BODY_DUMP:
		return s->role == KMESH__IPC__ROLE__ROLE_ADMIN || s->role == KMESH__IPC__ROLE__ROLE_XDS;
	case KMESH__IPC__ENVELOPE__BODY_SET_LOG_LEVEL:
		return s->role == KMESH__IPC__ROLE__ROLE_ADMIN;
	default:
		return 1;
	}
}

static void handle_request(struct km_session *s, const km_envelope *env)
{
	struct km_tables *t = s->srv->tables;
	Kmesh__Ipc__Code code = KMESH__IPC__CODE__OK;
	uint32_t applied = 0;
	char err[512] = "";

	if (!role_may(s, env->body_case)) {
		snprintf(err, sizeof(err), "role '%s' may not make this request",
			 km_msg_role_name(s->role));
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__PERMISSION_DENIED, err, 0);
		return;
	}
	switch (env->body_case) {
	case KMESH__IPC__ENVELOPE__BODY_BATCH:
		code = km_tables_apply_batch(t, env->batch, &applied, err, sizeof(err));
		if (code != KMESH__IPC__CODE__OK)
			km_warn("batch from pid %d: applied %u of %zu, then %s: %s", (int)s->pid, applied,
				env->batch->n_ops, km_msg_code_name(code), err);
		else
			km_debug("batch from pid %d: applied %u ops", (int)s->pid, applied);
		break;
	case KMESH__IPC__ENVELOPE__BODY_ENROLL:
		code = km_tables_enroll(t, env->enroll, err, sizeof(err));
		km_log(code ? KM_LOG_WARN : KM_LOG_INFO, "enroll netns cookie %llu (%s): %s%s%s",
		       (unsigned long long)env->enroll->netns_cookie,
		       env->enroll->pod && *env->enroll->pod ? env->enroll->pod : "-",
		       km_msg_code_name(code), *err ? ": " : "", err);
		break;
	case KMESH__IPC__ENVELOPE__BODY_UNENROLL:
		code = km_tables_unenroll(t, env->unenroll, err, sizeof(err));
		km_log(code ? KM_LOG_WARN : KM_LOG_INFO, "unenroll netns cookie %llu (%s): %s%s%s",
		       (unsigned long long)env->unenroll->netns_cookie,
		       env->unenroll->pod && *env->unenroll->pod ? env->unenroll->pod : "-",
		       km_msg_code_name(code), *err ? ": " : "", err);
		break;
	case KMESH__IPC__ENVELOPE__BODY_DUMP:
		handle_dump(s, env);
		return;
	case KMESH__IPC__ENVELOPE__BODY_SET_LOG_LEVEL: {
		enum km_log_level lvl;

		if (km_log_parse_level(env->set_log_level->level, &lvl) != 0) {
			code = KMESH__IPC__CODE__BAD_REQUEST;
			snprintf(err, sizeof(err), "unknown log level '%s' (error, warn, info, debug)",
				 env->set_log_level->level);
		} else {
			km_log_set_level(lvl);
			km_warn("log level set to %s by pid %d", km_log_level_name(lvl), (int)s->pid);
		}
		break;
	}
	case KMESH__IPC__ENVELOPE__BODY_HELLO:
		code = KMESH__IPC__CODE__BAD_REQUEST;
		snprintf(err, sizeof(err), "hello was already received");
		break;
	default:
		code = KMESH__IPC__CODE__BAD_REQUEST;
		snprintf(err, sizeof(err), "the map writer does not take this message");
		break;
	}
	km_msg_reply(&s->conn, env->request_id, code, err, applied);
}

static void on_frame(struct km_conn *c, const uint8_t *payload, size_t len)
{
	struct km_session *s = c->data;
	km_envelope *env = km_msg_unpack(payload, len);

	if (!env) {
		km_warn("peer pid %d sent a frame of %zu bytes that is not a valid message", (int)s->pid,
			len);
		km_msg_reply(c, 0, KMESH__IPC__CODE__BAD_REQUEST, "frame is not a valid Envelope", 0);
		if (!s->hello_done)
			km_conn_close_after_writes(c, session_closed);
		return;
	}
	if (!s->hello_done) {
		if (env->body_case == KMESH__IPC__ENVELOPE__BODY_HELLO)
			handle_hello(s, env);
		else
			deny(s, env->request_id, "the first message must be a hello");
	} else {
		handle_request(s, env);
	}
	km_msg_free(env);
}

static void on_error(struct km_conn *c, int err, const char *what)
{
	struct km_session *s = c->data;

	if (err == UV_EOF)
		km_debug("peer pid %d closed the connection", (int)s->pid);
	else
		km_warn("peer pid %d: %s; closing", (int)s->pid, what);
	km_conn_close(c, session_closed);
}

static void on_connection(uv_stream_t *listener, int status)
{
	struct km_server *srv = listener->data;
	struct km_session *s;

	if (status < 0) {
		km_warn("accept: %s", uv_strerror(status));
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		km_error("out of memory accepting a connection");
		return;
	}
	s->srv = srv;
	s->conn.data = s;
	km_conn_init(srv->loop, &s->conn, srv->max_frame);
	srv->open_handles++;
	s->next = srv->sessions;
	srv->sessions = s;
	if (uv_accept(listener, (uv_stream_t *)&s->conn.pipe) != 0 ||
	    km_conn_peer_cred(&s->conn, &s->pid, &s->uid, &s->gid) != 0) {
		km_warn("cannot accept a peer or read its credentials");
		km_conn_close(&s->conn, session_closed);
		return;
	}
	km_conn_start(&s->conn, on_frame, on_error);
}

/* An existing socket file is removed only if nothing listens on it (a stale one from a crash). */
static int clear_stale_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, rc;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		km_error("%s exists and is not a socket; refusing to replace it", path);
		return -EEXIST;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	if (rc == 0) {
		km_error("another process is listening on %s", path);
		return -EADDRINUSE;
	}
	return unlink(path) == 0 ? 0 : -errno;
}

int km_server_start(struct km_server *srv, uv_loop_t *loop, const struct km_server_config *cfg,
		    struct km_tables *tables, const struct km_access *access)
{
	mode_t old_umask;
	int err;

	memset(srv, 0, sizeof(*srv));
	srv->loop = loop;
	srv->tables = tables;
	srv->access = access;
	srv->max_frame = cfg->max_frame;
	if (strlen(cfg->path) >= sizeof(srv->path)) {
		km_error("socket path %s is too long (at most %zu bytes)", cfg->path,
			 sizeof(srv->path) - 1);
		return -ENAMETOOLONG;
	}
	strcpy(srv->path, cfg->path);
	if ((err = clear_stale_socket(srv->path)))
		return err;
	if ((err = uv_pipe_init(loop, &srv->listener, 0)))
		return err;
	srv->listener.data = srv;
	srv->open_handles = 1;
	old_umask = umask(0177); /* no window where the socket is open to everyone */
	err = uv_pipe_bind(&srv->listener, srv->path);
	umask(old_umask);
	if (!err && chmod(srv->path, cfg->mode) != 0)
		err = -errno;
	if (!err && cfg->gid != (gid_t)-1 && chown(srv->path, (uid_t)-1, cfg->gid) != 0)
		err = -errno;
	if (!err)
		err = uv_listen((uv_stream_t *)&srv->listener, 128, on_connection);
	if (err) {
		km_error("cannot serve on %s: %s", srv->path, uv_strerror(err));
		return err;
	}
	srv->listening = 1;
	km_info("serving on %s (mode %04o)", srv->path, (unsigned)cfg->mode);
	return 0;
}

static void listener_closed(uv_handle_t *h)
{
	struct km_server *srv = h->data;

	srv->open_handles--;
	maybe_stopped(srv);
}

void km_server_stop(struct km_server *srv, void (*on_stopped)(struct km_server *srv))
{
	srv->stopping = 1;
	srv->on_stopped = on_stopped;
	if (srv->listening) {
		unlink(srv->path);
		srv->listening = 0;
	}
	for (struct km_session *s = srv->sessions; s; s = s->next)
		km_conn_close(&s->conn, session_closed);
	if (!uv_is_closing((uv_handle_t *)&srv->listener))
		uv_close((uv_handle_t *)&srv->listener, listener_closed);
}
