/* server.c — the framed Unix-socket server every kmesh daemon uses (see server.h). */
#include "ipc/server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "kmesh_maps.h"
#include "shared/log.h"
#include "shared/version.h"

static void maybe_stopped(struct km_ipc_server *srv)
{
	if (srv->stopping && srv->open_handles == 0 && srv->on_stopped)
		srv->on_stopped(srv);
}

static void session_closed(struct km_conn *c)
{
	struct km_ipc_session *s = c->data;
	struct km_ipc_server *srv = s->srv;

	for (struct km_ipc_session **pp = &srv->sessions; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	km_debug("peer pid %d (%s) disconnected", (int)s->pid, s->process);
	if (s->hello_done && srv->ops.on_closed)
		srv->ops.on_closed(srv->arg, s);
	free(s);
	srv->n_sessions--;
	srv->open_handles--;
	maybe_stopped(srv);
}

/* Lines about peers refused or closed: at most KM_IPC_PEER_LOG_LINES per 10 s, then one line
 * saying how many were left out, so a flood of bad peers does not flood the log too. */
#define KM_IPC_PEER_LOG_LINES 20u
#define KM_IPC_PEER_LOG_WINDOW_MS 10000u

static void peer_log_window(struct km_ipc_server *srv, uint64_t now)
{
	if (now - srv->peer_log_since_ms < KM_IPC_PEER_LOG_WINDOW_MS)
		return;
	if (srv->peer_log_dropped)
		km_warn("%llu more lines about refused or closed peers left out in the last %u s",
			(unsigned long long)srv->peer_log_dropped, KM_IPC_PEER_LOG_WINDOW_MS / 1000);
	srv->peer_log_since_ms = now;
	srv->peer_log_lines = 0;
	srv->peer_log_dropped = 0;
}

static int peer_log_ok(struct km_ipc_server *srv)
{
	peer_log_window(srv, uv_now(srv->loop));
	if (srv->peer_log_lines < KM_IPC_PEER_LOG_LINES) {
		srv->peer_log_lines++;
		return 1;
	}
	srv->peer_log_dropped++;
	return 0;
}

static void deny(struct km_ipc_session *s, uint64_t id, const char *why)
{
	if (peer_log_ok(s->srv))
		km_warn("refusing peer pid %d uid %u gid %u: %s", (int)s->pid, (unsigned)s->uid,
			(unsigned)s->gid, why);
	km_msg_reply(&s->conn, id, KMESH__IPC__CODE__PERMISSION_DENIED, why, 0);
	km_conn_close_after_writes(&s->conn, session_closed);
}

/* The hello reply: who answers (with its build, so a client that does not match it can say
 * which build it met), with code and message. */
static void hello_reply(struct km_ipc_session *s, uint64_t id, Kmesh__Ipc__Code code,
			const char *message)
{
	km_envelope out = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Reply reply = KMESH__IPC__REPLY__INIT;
	Kmesh__Ipc__HelloReply hr = KMESH__IPC__HELLO_REPLY__INIT;

	hr.protocol_version = KM_IPC_PROTOCOL_VERSION;
	hr.layout_version = KM_LAYOUT_VERSION;
	hr.server = (char *)s->srv->name;
	hr.version = (char *)km_version();
	hr.log_level = (char *)km_log_level_name(km_log_get_level());
	hr.pid = (uint32_t)getpid();
	hr.features = s->srv->features;
	reply.code = code;
	reply.message = (char *)message;
	reply.body_case = KMESH__IPC__REPLY__BODY_HELLO;
	reply.hello = &hr;
	out.request_id = id;
	out.body_case = KMESH__IPC__ENVELOPE__BODY_REPLY;
	out.reply = &reply;
	km_msg_send(&s->conn, &out);
}

static void handle_hello(struct km_ipc_session *s, const km_envelope *env)
{
	const Kmesh__Ipc__Hello *h = env->hello;
	char why[256];
	size_t limit;

	/* the peer's words, logged: printable ASCII only */
	km_log_safe(s->process, sizeof(s->process), h->process && *h->process ? h->process : "?");
	if (!s->srv->ops.allowed(s->srv->arg, h->role, s->uid, s->gid)) {
		snprintf(why, sizeof(why), "uid %u gid %u may not take role '%s' (see --allow)",
			 (unsigned)s->uid, (unsigned)s->gid, km_msg_role_name(h->role));
		deny(s, env->request_id, why);
		return;
	}
	if (h->role >= 0 && h->role < 32 && (s->srv->exclusive_roles & (1u << h->role))) {
		for (struct km_ipc_session *o = s->srv->sessions; o; o = o->next) {
			if (o == s || !o->hello_done || o->conn.closing || o->role != h->role)
				continue;
			snprintf(why, sizeof(why), "role '%s' is held by pid %d uid %u (%.40s): one peer "
				 "at a time", km_msg_role_name(h->role), (int)o->pid,
				 (unsigned)o->uid, o->process);
			deny(s, env->request_id, why);
			return;
		}
	}
	if (h->protocol_version != KM_IPC_PROTOCOL_VERSION ||
	    (h->layout_version && h->layout_version != KM_LAYOUT_VERSION)) {
		snprintf(why, sizeof(why),
			 "version mismatch: peer speaks protocol %u layout %u, map writer %u/%u",
			 h->protocol_version, h->layout_version, KM_IPC_PROTOCOL_VERSION,
			 KM_LAYOUT_VERSION);
		if (peer_log_ok(s->srv))
			km_warn("peer pid %d (%s): %s", (int)s->pid, s->process, why);
		hello_reply(s, env->request_id, KMESH__IPC__CODE__VERSION_MISMATCH, why);
		km_conn_close_after_writes(&s->conn, session_closed);
		return;
	}
	s->role = h->role;
	s->hello_done = 1;
	if (h->role >= 0 && h->role < 32 && (s->srv->unpaused_roles & (1u << h->role)))
		s->conn.pause_above = 0; /* never paused nor cut off for reading slowly */
	/* now it may send what its role needs */
	limit = s->srv->ops.frame_limit ? s->srv->ops.frame_limit(s->srv->arg, s->role) : 0;
	km_frame_decoder_set_max(&s->conn.decoder,
				 limit && limit < s->srv->max_frame ? limit : s->srv->max_frame);
	/* admins (kmeshctl, and so every probe) at debug: a line per probe would drown the log */
	km_log(s->role == KMESH__IPC__ROLE__ROLE_ADMIN ? KM_LOG_DEBUG : KM_LOG_INFO,
	       "peer pid %d uid %u (%s) connected as %s", (int)s->pid, (unsigned)s->uid, s->process,
	       km_msg_role_name(s->role));
	hello_reply(s, env->request_id, KMESH__IPC__CODE__OK, "");
}

static void on_frame(struct km_conn *c, const uint8_t *payload, size_t len)
{
	struct km_ipc_session *s = c->data;
	km_envelope *env = km_msg_unpack(payload, len);

	if (!env) {
		if (peer_log_ok(s->srv))
			km_warn("peer pid %d sent a frame of %zu bytes that is not a valid message",
				(int)s->pid, len);
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
	} else if (env->body_case == KMESH__IPC__ENVELOPE__BODY_HELLO) {
		km_msg_reply(c, env->request_id, KMESH__IPC__CODE__BAD_REQUEST,
			     "hello was already received", 0);
	} else {
		s->conn.send_refused = 0; /* only a reply to this request cuts the peer off */
		s->srv->ops.on_request(s->srv->arg, s, env);
	}
	km_msg_free(env);
	if (s->conn.send_refused && !s->conn.closing) {
		s->srv->stats.queue_overflows++;
		km_warn("peer pid %d uid %u (%s): its replies would take the unsent bytes of all peers "
			"over %u MiB; cut off", (int)s->pid, (unsigned)s->uid, s->process,
			KM_IPC_QUEUED_MAX >> 20);
		km_conn_close(c, session_closed);
	}
}

static void on_error(struct km_conn *c, int err, const char *what)
{
	struct km_ipc_session *s = c->data;

	if (err == UV_EOF)
		km_debug("peer pid %d closed the connection", (int)s->pid);
	else if (!peer_log_ok(s->srv))
		;
	else if (err == KM_FRAME_ETOOBIG && !s->hello_done)
		km_warn("peer pid %d uid %u announced a frame over %u bytes before its hello; closing",
			(int)s->pid, (unsigned)s->uid, KM_IPC_PREAUTH_FRAME);
	else
		km_warn("peer pid %d: %s; closing", (int)s->pid, what);
	km_conn_close(c, session_closed);
}

/* What the peer may become, from its credentials alone. */
static enum km_ipc_peer_class classify(struct km_ipc_server *srv, uid_t uid, gid_t gid)
{
	static const Kmesh__Ipc__Role keepers[] = { KMESH__IPC__ROLE__ROLE_CNI,
						    KMESH__IPC__ROLE__ROLE_ADMIN };
	static const Kmesh__Ipc__Role others[] = { KMESH__IPC__ROLE__ROLE_XDS,
						   KMESH__IPC__ROLE__ROLE_IPSEC,
						   KMESH__IPC__ROLE__ROLE_TUNNEL };

	for (size_t i = 0; i < sizeof(keepers) / sizeof(keepers[0]); i++)
		if (srv->ops.allowed(srv->arg, keepers[i], uid, gid))
			return KM_IPC_PEER_KEEPER;
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		if (srv->ops.allowed(srv->arg, others[i], uid, gid))
			return KM_IPC_PEER_OTHER;
	return KM_IPC_PEER_STRANGER;
}

/* NULL if the new session s may stay, else why not (its counter counted). */
static const char *over_limit(struct km_ipc_server *srv, const struct km_ipc_session *s,
			      char *why, size_t whylen)
{
	const struct km_ipc_limits *l = &srv->limits;
	unsigned same_uid = 0, strangers = 0, total = 0;

	for (const struct km_ipc_session *o = srv->sessions; o; o = o->next) {
		if (o == s)
			continue;
		total++;
		same_uid += o->uid == s->uid;
		strangers += o->peer_class == KM_IPC_PEER_STRANGER;
	}
	if (same_uid >= l->per_uid) {
		srv->stats.refused_per_uid++;
		snprintf(why, whylen, "uid %u holds %u connections, the most one uid may hold",
			 (unsigned)s->uid, same_uid);
	} else if (s->peer_class == KM_IPC_PEER_STRANGER && strangers >= l->strangers) {
		srv->stats.refused_strangers++;
		snprintf(why, whylen, "%u peers that may take no role are connected, the most "
			 "allowed (see --allow)", strangers);
	} else if (total >= (s->peer_class == KM_IPC_PEER_KEEPER ? l->total : l->total - l->reserved)) {
		srv->stats.refused_total++;
		snprintf(why, whylen, "%u connections are open, the most this server takes%s", total,
			 s->peer_class == KM_IPC_PEER_KEEPER ? "" : " from peers without the cni or "
								    "admin role");
	} else {
		return NULL;
	}
	return why;
}

/* Answered at once, without reading, and closed: RESOURCE_EXHAUSTED with request id 0. */
static void refuse_busy(struct km_ipc_session *s, const char *why)
{
	km_envelope out = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Reply reply = KMESH__IPC__REPLY__INIT;
	uint8_t buf[512];
	size_t len;

	reply.code = KMESH__IPC__CODE__RESOURCE_EXHAUSTED;
	reply.message = (char *)why;
	out.body_case = KMESH__IPC__ENVELOPE__BODY_REPLY;
	out.reply = &reply;
	len = kmesh__ipc__envelope__get_packed_size(&out);
	if (len + KM_FRAME_HEADER <= sizeof(buf)) {
		uv_buf_t b = uv_buf_init((char *)buf, (unsigned)(KM_FRAME_HEADER + len));

		km_frame_header(buf, (uint32_t)len);
		kmesh__ipc__envelope__pack(&out, buf + KM_FRAME_HEADER);
		(void)uv_try_write((uv_stream_t *)&s->conn.pipe, &b, 1); /* best effort */
	}
	km_conn_close(&s->conn, session_closed);
}

static void on_connection(uv_stream_t *listener, int status)
{
	struct km_ipc_server *srv = listener->data;
	struct km_ipc_session *s;
	char why[200];

	if (status < 0) {
		/* e.g. EMFILE: libuv took the connection off the queue and closed it */
		srv->stats.accept_errors++;
		if (peer_log_ok(srv))
			km_warn("accept: %s (%llu so far; see kmesh_ipc_accept_errors_total)",
				uv_strerror(status), (unsigned long long)srv->stats.accept_errors);
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		km_error("out of memory accepting a connection");
		return;
	}
	s->srv = srv;
	s->serial = ++srv->next_serial;
	s->accepted_ms = uv_now(srv->loop);
	s->conn.data = s;
	/* a stranger's frames stay small until its hello is accepted (replies to it may be large) */
	km_conn_init(srv->loop, &s->conn, srv->max_frame);
	km_frame_decoder_set_max(&s->conn.decoder, KM_IPC_PREAUTH_FRAME);
	km_frame_decoder_set_budget(&s->conn.decoder, &srv->budget);
	s->conn.send_budget = &srv->send_budget;
	s->conn.pause_above = KM_IPC_QUEUE_PAUSE;
	srv->open_handles++;
	srv->n_sessions++;
	s->next = srv->sessions;
	srv->sessions = s;
	if (uv_accept(listener, (uv_stream_t *)&s->conn.pipe) != 0 ||
	    km_conn_peer_cred(&s->conn, &s->pid, &s->uid, &s->gid) != 0) {
		srv->stats.accept_errors++;
		km_warn("cannot accept a peer or read its credentials");
		km_conn_close(&s->conn, session_closed);
		return;
	}
	s->peer_class = classify(srv, s->uid, s->gid);
	if (over_limit(srv, s, why, sizeof(why))) {
		if (peer_log_ok(srv))
			km_warn("refusing a connection from pid %d uid %u: %s", (int)s->pid,
				(unsigned)s->uid, why);
		refuse_busy(s, why);
		return;
	}
	km_conn_start(&s->conn, on_frame, on_error);
}

/* Sessions that sent no hello in time are closed: a peer that only opens connections does not
 * keep them. Sessions whose replies have waited unread too long are cut off. */
static void on_session_timer(uv_timer_t *t)
{
	struct km_ipc_server *srv = t->data;
	uint64_t now = uv_now(srv->loop);

	peer_log_window(srv, now);
	for (struct km_ipc_session *s = srv->sessions; s; s = s->next) {
		if (s->conn.closing)
			continue;
		if (!s->hello_done && now - s->accepted_ms >= KM_IPC_HELLO_TIMEOUT_MS) {
			srv->stats.hello_timeouts++;
			if (peer_log_ok(srv))
				km_warn("peer pid %d uid %u sent no hello within %u ms; closing",
					(int)s->pid, (unsigned)s->uid, KM_IPC_HELLO_TIMEOUT_MS);
			km_conn_close(&s->conn, session_closed);
		} else if (s->conn.paused && now - s->conn.paused_ms >= KM_IPC_SLOW_READER_MS) {
			srv->stats.slow_readers++;
			km_warn("peer pid %d uid %u (%s) left %zu bytes of replies unread for %u ms; "
				"cut off", (int)s->pid, (unsigned)s->uid, s->process,
				km_conn_write_queue(&s->conn), KM_IPC_SLOW_READER_MS);
			km_conn_close(&s->conn, session_closed);
		}
	}
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

int km_ipc_server_start(struct km_ipc_server *srv, uv_loop_t *loop,
			const struct km_ipc_server_config *cfg, const struct km_ipc_server_ops *ops,
			void *arg)
{
	mode_t old_umask;
	int err;

	memset(srv, 0, sizeof(*srv));
	srv->loop = loop;
	srv->ops = *ops;
	srv->arg = arg;
	srv->name = cfg->name;
	srv->features = cfg->features;
	srv->exclusive_roles = cfg->exclusive_roles;
	srv->unpaused_roles = cfg->unpaused_roles;
	srv->max_frame = cfg->max_frame;
	srv->budget.max = KM_IPC_BUFFERED_MAX;
	srv->send_budget.max = KM_IPC_QUEUED_MAX;
	srv->limits.per_uid = cfg->limits.per_uid ? cfg->limits.per_uid : 64;
	srv->limits.strangers = cfg->limits.strangers ? cfg->limits.strangers : 16;
	srv->limits.total = cfg->limits.total ? cfg->limits.total : 512;
	srv->limits.reserved = cfg->limits.reserved ? cfg->limits.reserved : 64;
	if (srv->limits.reserved >= srv->limits.total)
		srv->limits.reserved = srv->limits.total / 2;
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
	if (!err && cfg->gid != (gid_t)-1 && chown(srv->path, (uid_t)-1, cfg->gid) != 0) {
		err = -errno;
		if (err == -EPERM)
			km_error("cannot give %s to group %u: without CAP_CHOWN a process may give a file "
				 "only to a group it is in (systemd: SupplementaryGroups=; Kubernetes: the "
				 "pod's supplementalGroups)", srv->path, (unsigned)cfg->gid);
	}
	if (!err)
		err = uv_listen((uv_stream_t *)&srv->listener, 128, on_connection);
	if (err) {
		km_error("cannot serve on %s: %s", srv->path, uv_strerror(err));
		return err;
	}
	srv->listening = 1;
	uv_timer_init(loop, &srv->session_timer);
	srv->session_timer.data = srv;
	srv->open_handles++;
	uv_timer_start(&srv->session_timer, on_session_timer, 1000, 1000);
	uv_unref((uv_handle_t *)&srv->session_timer); /* never the reason the loop stays up */
	km_info("serving on %s (mode %04o)", srv->path, (unsigned)cfg->mode);
	return 0;
}

static void handle_closed(uv_handle_t *h)
{
	struct km_ipc_server *srv = h->data;

	srv->open_handles--;
	maybe_stopped(srv);
}

void km_ipc_server_stop(struct km_ipc_server *srv, void (*on_stopped)(struct km_ipc_server *srv))
{
	srv->stopping = 1;
	srv->on_stopped = on_stopped;
	if (srv->listening) {
		unlink(srv->path);
		srv->listening = 0;
	}
	for (struct km_ipc_session *s = srv->sessions; s; s = s->next)
		km_conn_close(&s->conn, session_closed);
	if (!uv_is_closing((uv_handle_t *)&srv->listener))
		uv_close((uv_handle_t *)&srv->listener, handle_closed);
	if (uv_is_active((uv_handle_t *)&srv->session_timer) &&
	    !uv_is_closing((uv_handle_t *)&srv->session_timer)) {
		uv_timer_stop(&srv->session_timer);
		uv_close((uv_handle_t *)&srv->session_timer, handle_closed);
	}
}

struct km_ipc_session *km_ipc_server_session(struct km_ipc_server *srv, uint64_t serial)
{
	for (struct km_ipc_session *s = srv->sessions; s; s = s->next)
		if (s->serial == serial)
			return s->conn.closing ? NULL : s;
	return NULL;
}

void km_ipc_server_set_log_level(struct km_ipc_session *s, const km_envelope *env)
{
	enum km_log_level lvl;

	if (km_log_parse_level(env->set_log_level->level, &lvl) != 0) {
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__BAD_REQUEST,
			     "unknown log level (error, warn, info, debug)", 0);
		return;
	}
	km_log_set_level(lvl);
	km_warn("log level set to %s by pid %d", km_log_level_name(lvl), (int)s->pid);
	km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__OK, "", 0);
}
