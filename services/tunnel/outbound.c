/* outbound.c — see outbound.h. */
#include "services/tunnel/outbound.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "kmesh_maps.h"
#include "services/tunnel/client_tls.h"
#include "services/tunnel/h2_relay.h"
#include "services/tunnel/hbone_client.h"
#include "shared/addr.h"
#include "shared/cgroup2.h"
#include "shared/log.h"

const char *const km_outbound_refusal_names[KM_OB_REFUSALS] = {
	[KM_OB_NO_ORIGIN] = "no_origin",
	[KM_OB_UNKNOWN_SOURCE] = "unknown_source",
	[KM_OB_NO_CERTIFICATE] = "no_certificate",
	[KM_OB_NO_DESTINATION] = "no_destination",
	[KM_OB_FULL] = "full",
	[KM_OB_CONNECT] = "connect",
	[KM_OB_STATUS_400] = "status_400",
	[KM_OB_STATUS_401] = "status_401",
	[KM_OB_STATUS_503] = "status_503",
	[KM_OB_STATUS_OTHER] = "status_other",
	[KM_OB_RESET] = "reset",
};

/* A pooled connection. */
struct ob_pool {
	struct km_hbone_client c; /* c.data: this */
	struct km_outbound *ob;
	struct ob_pool *next;
	char src_id[KM_TUNNEL_ID_MAX];
	void *ctx;                /* the client context it was made with (a reference held) */
	uint64_t bytes_out, bytes_in;
};

/* A stream's addresses and identity, for its reports. */
struct ob_stream {
	struct sockaddr_storage app, server, orig;
	uint64_t cookie;
	char principal[KM_TUNNEL_ID_MAX]; /* the source's, without "spiffe://" */
	int opened;
};

/* A connection waiting for the agent's answer about its destination. */
struct ob_pending {
	struct km_outbound *ob;
	uv_tcp_t *app;
	struct km_tunnel_origin origin;
	struct sockaddr_storage peer;
	char src_id[KM_TUNNEL_ID_MAX];
	uint64_t cert_deadline;  /* waiting for the certificate: until (uv_now) */
	struct ob_pending *next; /* in cert_head's list */
};

static void free_handle(uv_handle_t *h)
{
	free(h);
}

static void refuse(struct km_outbound *ob, uv_tcp_t *app, enum km_outbound_refusal why,
		   const char *detail)
{
	ob->stats.refused[why]++;
	km_debug("HBONE outbound: a connection reset (%s): %s", km_outbound_refusal_names[why],
		 detail);
	km_tcp_close_reset(app, free_handle);
}

static void sockaddr_of(const struct km_addr *a, uint16_t port_nbo, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (km_addr_is_v4(a)) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = port_nbo;
		memcpy(&s4->sin_addr, &a->words[3], 4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = port_nbo;
		memcpy(&s6->sin6_addr, a, 16);
	}
}

/* "IP:port", "[IPv6]:port". */
static void host_port(const struct km_addr *a, uint16_t port_nbo, char *out, size_t len)
{
	char text[KM_ADDR_STRLEN];

	km_addr_format(a, text);
	snprintf(out, len, km_addr_is_v4(a) ? "%s:%u" : "[%s]:%u", text, ntohs(port_nbo));
}

/* ---- the pool ---------------------------------------------------------------------------- */

static void report(struct km_outbound *ob, struct ob_stream *os, unsigned kind,
		   uint64_t sent, uint64_t received)
{
	const struct km_stream_report rep = {
		.kind = kind, .direction = KM_CONN_OUTBOUND, .client = &os->app,
		.server = &os->server, .orig = &os->orig, .cookie = os->cookie,
		.client_bytes = sent, .server_bytes = received, .principal = os->principal,
	};

	if (ob->xds_on)
		km_stream_reports_add(&ob->reports, &rep);
}

static void pool_answer(struct km_hbone_client *c, void *arg, int status)
{
	struct ob_pool *p = c->data;
	struct ob_stream *os = arg;

	if (status == 200) {
		p->ob->stats.relayed++;
		os->opened = 1;
		report(p->ob, os, KM_CONN_OPEN, 0, 0);
	} else
		p->ob->stats.refused[status == 400   ? KM_OB_STATUS_400
				     : status == 401 ? KM_OB_STATUS_401
				     : status == 503 ? KM_OB_STATUS_503
						     : KM_OB_STATUS_OTHER]++;
}

static void pool_stream_end(struct km_hbone_client *c, const struct km_hbone_stream_end *e)
{
	struct ob_pool *p = c->data;

	if (!e->status)
		p->ob->stats.refused[c->failed ? KM_OB_CONNECT : KM_OB_RESET]++;
	if (!e->status || e->status != 200)
		km_debug("HBONE outbound: a stream to %s ended: %s", c->ids[0],
			 e->why ? e->why : "no answer");
	p->ob->n_streams--;
	if (((struct ob_stream *)e->arg)->opened)
		report(p->ob, e->arg, KM_CONN_CLOSE, e->to_peer, e->from_peer);
	free(e->arg);
	p->bytes_out += e->to_peer;
	p->bytes_in += e->from_peer;
	p->ob->stats.bytes_out += e->to_peer;
	p->ob->stats.bytes_in += e->from_peer;
}

static void pool_failed(struct km_hbone_client *c)
{
	struct ob_pool *p = c->data;

	p->ob->stats.conns_failed++;
	km_info("HBONE outbound: the connection to %s failed: %s", c->ids[0], c->error);
}

static void pool_closed(struct km_hbone_client *c)
{
	struct ob_pool *p = c->data;
	struct km_outbound *ob = p->ob;

	for (struct ob_pool **pp = &ob->pool; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	ob->n_pool--;
	km_client_tls_ctx_free(p->ctx);
	free(p);
}

static const struct km_hbone_client_ops pool_ops = {
	.on_failed = pool_failed,
	.on_answer = pool_answer,
	.on_stream_end = pool_stream_end,
	.on_closed = pool_closed,
};

/* A pooled connection with room for a stream from src_id to (dst_id at peer); a new one if none
 * has; NULL when the pool is full or out of memory. */
static struct ob_pool *pool_get(struct km_outbound *ob, const char *src_id, void *ctx,
				const char *dst_id, const struct sockaddr_storage *peer)
{
	struct ob_pool *p;
	const char *ids[1] = { dst_id };

	for (p = ob->pool; p; p = p->next)
		if (km_hbone_client_has_room(&p->c) && !strcmp(p->src_id, src_id) &&
		    !strcmp(p->c.ids[0], dst_id) && p->c.n_ids == 1 &&
		    !memcmp(&p->c.peer, peer, sizeof(*peer)))
			return p;
	if (ob->n_pool >= KM_OUTBOUND_MAX_CONNS || !(p = calloc(1, sizeof(*p))))
		return NULL;
	p->ob = ob;
	p->c.data = p;
	p->ctx = ctx;
	km_client_tls_ctx_hold(ctx);
	snprintf(p->src_id, sizeof(p->src_id), "%s", src_id);
	p->next = ob->pool;
	ob->pool = p;
	ob->n_pool++;
	ob->stats.conns_opened++;
	if (km_hbone_client_connect(&p->c, ob->loop, ctx, peer, ids, 1, &pool_ops, ob->connect_ms,
				    ob->idle_ms, &ob->turns) != 0) {
		ob->pool = p->next;
		ob->n_pool--;
		km_client_tls_ctx_free(ctx);
		free(p);
		return NULL;
	}
	return p; /* (may have failed at once: closing, on_closed follows) */
}

/* ---- connections ------------------------------------------------------------------------- */

/* A W3C traceparent with random ids, flags 00, as ztunnel sends. */
static void traceparent(char out[56])
{
	static const char hex[] = "0123456789abcdef";
	uint8_t r[24];
	char *o = out;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		memset(r, 0x5a, sizeof(r));
	r[0] |= 1; /* never all zero */
	r[16] |= 1;
	o += sprintf(o, "00-");
	for (int i = 0; i < 16; i++, o += 2)
		o[0] = hex[r[i] >> 4], o[1] = hex[r[i] & 15];
	*o++ = '-';
	for (int i = 16; i < 24; i++, o += 2)
		o[0] = hex[r[i] >> 4], o[1] = hex[r[i] & 15];
	strcpy(o, "-00");
}

static uint64_t app_cookie(uv_tcp_t *app)
{
	uv_os_fd_t fd;
	uint64_t cookie = 0;
	socklen_t cl = sizeof(cookie);

	if (uv_fileno((uv_handle_t *)app, &fd) != 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &cl) != 0)
		return 0;
	return cookie;
}

static void got_destination(struct km_peer_link *l, void *arg, const Kmesh__Ipc__Reply *reply)
{
	struct ob_pending *pd = arg;
	struct km_outbound *ob = pd->ob;
	const Kmesh__Ipc__DestinationReply *d;
	struct sockaddr_storage server;
	struct km_hbone_request rq;
	char authority[64], forwarded[80], peer[64], trace[56], why[400];
	struct ob_pool *p;
	struct ob_stream *os;
	void *ctx;
	struct km_addr src, dial;
	uint16_t src_port;
	uint8_t raw[16];
	size_t n;

	(void)l;
	ob->n_pending--;
	if (!reply || reply->code != KMESH__IPC__CODE__OK ||
	    reply->body_case != KMESH__IPC__REPLY__BODY_DESTINATION ||
	    !reply->destination->n_identities) {
		refuse(ob, pd->app, KM_OB_NO_DESTINATION,
		       !reply ? "the xDS agent is not reachable" : reply->message);
		free(pd);
		return;
	}
	d = reply->destination;
	if (ob->stopping || !(ctx = km_certs_client_ctx(ob->certs, pd->src_id, why, sizeof(why)))) {
		refuse(ob, pd->app, KM_OB_NO_CERTIFICATE, ob->stopping ? "stopping" : why);
		free(pd);
		return;
	}
	if (d->dial.len && km_addr_from_bytes(d->dial.data, d->dial.len, &dial) == 0 &&
	    d->dial_port && d->dial_port <= 65535) /* a waypoint's pod */
		sockaddr_of(&dial, htons((uint16_t)d->dial_port), &server);
	else
		sockaddr_of(&pd->origin.via_addr, htons(ob->hbone_port), &server);
	p = pool_get(ob, pd->src_id, ctx, d->identities[0], &server);
	if (!p) {
		refuse(ob, pd->app, KM_OB_FULL, "no pooled connection could be had");
		free(pd);
		return;
	}
	host_port(&pd->origin.via_addr, pd->origin.via_port, authority, sizeof(authority));
	n = km_sockaddr_to_bytes(&pd->peer, raw, &src_port);
	km_addr_from_bytes(raw, n, &src);
	host_port(&src, htons(src_port), peer, sizeof(peer));
	snprintf(forwarded, sizeof(forwarded), "for=\"%s\"", peer);
	traceparent(trace);
	rq.authority = authority;
	rq.baggage = d->source_baggage;
	rq.forwarded = forwarded;
	rq.traceparent = trace;
	if (!(os = calloc(1, sizeof(*os)))) {
		refuse(ob, pd->app, KM_OB_FULL, "out of memory");
		free(pd);
		return;
	}
	os->app = pd->peer;
	sockaddr_of(&pd->origin.via_addr, pd->origin.via_port, &os->server);
	sockaddr_of(&pd->origin.orig_addr, pd->origin.orig_port, &os->orig);
	os->cookie = app_cookie(pd->app);
	snprintf(os->principal, sizeof(os->principal), "%s",
		 strncmp(pd->src_id, "spiffe://", 9) ? pd->src_id : pd->src_id + 9);
	if (km_hbone_client_open(&p->c, pd->app, &rq, os) != 0) { /* (app is reset) */
		ob->stats.refused[KM_OB_CONNECT]++;
		free(os);
	} else {
		ob->n_streams++;
	}
	free(pd);
}

/* Ask the agent where pd goes (got_destination); reset it when that cannot be asked now. */
static void ask_destination(struct ob_pending *pd)
{
	struct km_outbound *ob = pd->ob;
	Kmesh__Ipc__Destination q = KMESH__IPC__DESTINATION__INIT;
	km_envelope env = KMESH__IPC__ENVELOPE__INIT;
	uint8_t dst_raw[16], src_raw[16];

	if (!ob->xds_on || !ob->xds.up) { /* never held until it comes: reset now */
		refuse(ob, pd->app, KM_OB_NO_DESTINATION,
		       ob->xds_on ? "the xDS agent is not connected" : "no --xds-socket");
		free(pd);
		return;
	}
	if (ob->n_pending >= KM_OUTBOUND_MAX_PENDING ||
	    ob->n_pending + ob->n_streams >= KM_OUTBOUND_MAX_STREAMS) {
		refuse(ob, pd->app, KM_OB_FULL,
		       "too many connections wait for the xDS agent or are relayed");
		free(pd);
		return;
	}
	uv_tcp_nodelay(pd->app, 1);
	q.address.len = km_addr_to_bytes(&pd->origin.via_addr, dst_raw);
	q.address.data = dst_raw;
	q.source.len = km_sockaddr_to_bytes(&pd->peer, src_raw, NULL);
	q.source.data = src_raw;
	env.body_case = KMESH__IPC__ENVELOPE__BODY_DESTINATION;
	env.destination = &q;
	if (km_peer_link_send(&ob->xds, &env, got_destination, pd) != 0) {
		refuse(ob, pd->app, KM_OB_NO_DESTINATION, "the xDS agent's queue is full");
		free(pd);
		return;
	}
	ob->n_pending++;
}

/* ---- connections waiting for their pod's certificate --------------------------------------
 * The certificate of a pod's identity is asked of the CA when the pod is enrolled; a pod that
 * connects before it came waits for it, at most cert_wait_ms (then reset, no_certificate), and
 * an identity with none asked yet (its pod's account changed) is asked now. Bounded with the
 * connections waiting for the agent (KM_OUTBOUND_MAX_PENDING). */
static void on_cert_tick(uv_timer_t *t)
{
	struct km_outbound *ob = t->data;
	struct ob_pending **at = &ob->cert_head, *pd;
	uint64_t now = uv_now(ob->loop);
	char why[400];

	ob->cert_tail = NULL;
	while ((pd = *at)) {
		int ready = !ob->stopping && km_certs_client_ctx(ob->certs, pd->src_id, why,
								 sizeof(why)) != NULL;

		if (!ready && !ob->stopping && now < pd->cert_deadline) {
			ob->cert_tail = pd;
			at = &pd->next;
			continue;
		}
		*at = pd->next;
		ob->n_pending--;
		if (ready) {
			ask_destination(pd);
		} else {
			refuse(ob, pd->app, KM_OB_NO_CERTIFICATE, ob->stopping ? "stopping" : why);
			free(pd);
		}
	}
	if (!ob->cert_head)
		uv_timer_stop(&ob->cert_timer);
}

static int cert_wait(struct km_outbound *ob, struct ob_pending *pd)
{
	if (!ob->cert_wait_ms || ob->stopping || ob->n_pending >= KM_OUTBOUND_MAX_PENDING)
		return -1;
	if (km_certs_want(ob->certs, pd->src_id) != 0) /* (nothing if it is asked already) */
		return -1;
	pd->cert_deadline = uv_now(ob->loop) + ob->cert_wait_ms;
	pd->next = NULL;
	if (ob->cert_tail)
		ob->cert_tail->next = pd;
	else
		ob->cert_head = pd;
	ob->cert_tail = pd;
	ob->n_pending++;
	ob->stats.cert_waits++;
	if (!uv_is_active((uv_handle_t *)&ob->cert_timer))
		uv_timer_start(&ob->cert_timer, on_cert_tick, KM_OUTBOUND_CERT_TICK_MS,
			       KM_OUTBOUND_CERT_TICK_MS);
	return 0;
}

/* The pool's keepalive (km_hbone_client_tick): a server gone without a word is found before a
 * stream is sent to it. */
static void on_ping_tick(uv_timer_t *t)
{
	struct km_outbound *ob = t->data;
	uint64_t now = uv_now(ob->loop);

	for (struct ob_pool *p = ob->pool; p; p = p->next)
		if (km_hbone_client_tick(&p->c, now, ob->ping_ms))
			ob->stats.conns_ping++;
}

static void on_connection(uv_stream_t *server, int status)
{
	struct km_outbound *ob = server->data;
	const struct km_tunnel_pod *pod;
	struct ob_pending *pd;
	struct km_addr src;
	uv_tcp_t *app;
	uv_os_fd_t fd;
	socklen_t olen;
	uint8_t src_raw[16];
	int plen = sizeof(struct sockaddr_storage);
	char text[KM_ADDR_STRLEN], why[400];
	size_t n;

	if (status < 0 || !(app = malloc(sizeof(*app))))
		return;
	if (!(pd = calloc(1, sizeof(*pd)))) {
		free(app);
		return;
	}
	uv_tcp_init(ob->loop, app);
	app->data = NULL;
	if (uv_accept(server, (uv_stream_t *)app) != 0) {
		uv_close((uv_handle_t *)app, free_handle);
		free(pd);
		return;
	}
	ob->stats.accepted++;
	pd->ob = ob;
	pd->app = app;
	olen = sizeof(pd->origin);
	if (uv_fileno((uv_handle_t *)app, &fd) != 0 ||
	    getsockopt(fd, SOL_IP, KM_SO_TUNNEL_ORIGIN, &pd->origin, &olen) != 0 ||
	    olen != sizeof(pd->origin)) {
		refuse(ob, app, KM_OB_NO_ORIGIN,
		       "the kernel has no record of it (is the map writer's --tunnel-cgroup this "
		       "process's cgroup?)");
		free(pd);
		return;
	}
	uv_tcp_getpeername(app, (struct sockaddr *)&pd->peer, &plen);
	n = km_sockaddr_to_bytes(&pd->peer, src_raw, NULL);
	if (km_addr_from_bytes(src_raw, n, &src) != 0 || !(pod = km_tunnel_pods_at(ob->pods, &src))) {
		refuse(ob, app, KM_OB_UNKNOWN_SOURCE,
		       n ? km_addr_format(&src, text) : "an address of another family");
		free(pd);
		return;
	}
	snprintf(pd->src_id, sizeof(pd->src_id), "%s", pod->identity);
	if (!km_certs_client_ctx(ob->certs, pd->src_id, why, sizeof(why))) {
		if (cert_wait(ob, pd) != 0) {
			refuse(ob, app, KM_OB_NO_CERTIFICATE, why);
			free(pd);
		}
		return;
	}
	ask_destination(pd);
}

/* ---- this process's cgroup, for the map writer --------------------------------------------- */

static void cgroup_told(struct km_peer_link *l, void *arg, const Kmesh__Ipc__Reply *reply)
{
	(void)l;
	(void)arg;
	if (reply && reply->code != KMESH__IPC__CODE__OK)
		km_warn("HBONE outbound: the map writer cannot put its program on this process's "
			"cgroup: %s", reply->message);
}

static void mw_up(struct km_peer_link *l)
{
	struct km_outbound *ob = l->data;
	Kmesh__Ipc__TunnelCgroup q = KMESH__IPC__TUNNEL_CGROUP__INIT;
	km_envelope env = KMESH__IPC__ENVELOPE__INIT;

	if (!ob->cgroup_id)
		return;
	q.cgroup_id = ob->cgroup_id;
	env.body_case = KMESH__IPC__ENVELOPE__BODY_TUNNEL_CGROUP;
	env.tunnel_cgroup = &q;
	km_peer_link_send(l, &env, cgroup_told, NULL);
}

/* ---- start, stop, dump ------------------------------------------------------------------- */

int km_outbound_start(struct km_outbound *ob, uv_loop_t *loop, struct km_certs *certs,
		      struct km_tunnel_pods *pods, const char *address, const char *xds_socket,
		      const char *mw_socket)
{
	struct sockaddr_in sa;
	int rc;

	memset(ob, 0, sizeof(*ob));
	ob->loop = loop;
	ob->certs = certs;
	ob->pods = pods;
	ob->connect_ms = KM_OUTBOUND_CONNECT_MS;
	ob->idle_ms = KM_OUTBOUND_IDLE_MS;
	ob->cert_wait_ms = KM_OUTBOUND_CERT_WAIT_MS;
	ob->ping_ms = KM_OUTBOUND_PING_MS;
	uv_timer_init(loop, &ob->cert_timer);
	ob->cert_timer.data = ob;
	uv_timer_init(loop, &ob->ping_timer);
	ob->ping_timer.data = ob;
	uv_timer_start(&ob->ping_timer, on_ping_tick, KM_OUTBOUND_PING_TICK_MS,
		       KM_OUTBOUND_PING_TICK_MS);
	ob->hbone_port = KM_HBONE_PORT;
	if (uv_ip4_addr(address, KM_TUNNEL_OUTBOUND_PORT, &sa) != 0) {
		km_error("--hbone-outbound-address '%s' is not an IPv4 address", address);
		return -1;
	}
	km_turn_queue_init(&ob->turns, loop);
	uv_tcp_init(loop, &ob->listener);
	ob->listener.data = ob;
	ob->listening = 1;
	if ((rc = uv_tcp_bind(&ob->listener, (struct sockaddr *)&sa, 0)) != 0 ||
	    (rc = uv_listen((uv_stream_t *)&ob->listener, 4096, on_connection)) != 0) {
		km_error("HBONE outbound: cannot listen on %s:%d: %s (the map writer's "
			 "--tunnel-address puts the address on its --dns-interface)", address,
			 KM_TUNNEL_OUTBOUND_PORT, uv_strerror(rc));
		return -1;
	}
	if (xds_socket && *xds_socket) {
		const struct km_peer_link_config cfg = {
			.path = xds_socket, .role = KMESH__IPC__ROLE__ROLE_TUNNEL,
			.process = "kmesh-tunnel", .peer = "the xDS agent",
		};

		ob->xds.data = ob;
		if (km_peer_link_start(&ob->xds, loop, &cfg) != 0)
			return -1;
		ob->xds_on = 1;
		km_stream_reports_start(&ob->reports, loop, &ob->xds);
	} else {
		km_warn("HBONE outbound without --xds-socket: no destination can be checked; every "
			"connection is reset");
	}
	ob->cgroup_id = km_cgroup2_self_id();
	if (!ob->cgroup_id)
		km_warn("HBONE outbound: cannot read this process's cgroup (/proc/self/cgroup and a "
			"cgroup2 mount): the map writer must be given it (--tunnel-cgroup PATH)");
	if (mw_socket && *mw_socket) {
		const struct km_peer_link_config cfg = {
			.path = mw_socket, .role = KMESH__IPC__ROLE__ROLE_TUNNEL,
			.process = "kmesh-tunnel", .peer = "the map writer", .on_up = mw_up,
		};

		ob->mw.data = ob;
		if (km_peer_link_start(&ob->mw, loop, &cfg) != 0)
			return -1;
		ob->mw_on = 1;
	}
	km_info("HBONE outbound: listening on %s:%d (cgroup id %llu)", address,
		KM_TUNNEL_OUTBOUND_PORT, (unsigned long long)ob->cgroup_id);
	return 0;
}

void km_outbound_stop(struct km_outbound *ob)
{
	ob->stopping = 1;
	on_cert_tick(&ob->cert_timer); /* the waiting ones: reset */
	uv_close((uv_handle_t *)&ob->cert_timer, NULL);
	uv_close((uv_handle_t *)&ob->ping_timer, NULL);
	if (ob->listening)
		uv_close((uv_handle_t *)&ob->listener, NULL);
	ob->listening = 0;
	for (struct ob_pool *p = ob->pool, *next; p; p = next) {
		next = p->next;
		km_hbone_client_close(&p->c);
	}
	km_turn_queue_close(&ob->turns);
	if (ob->xds_on) { /* the closes above, if the agent can take them */
		km_stream_reports_flush(&ob->reports);
		km_stream_reports_stop(&ob->reports);
		km_peer_link_stop(&ob->xds, NULL); /* waiting connections: answered none, reset */
	}
	ob->xds_on = 0;
	if (ob->mw_on)
		km_peer_link_stop(&ob->mw, NULL);
	ob->mw_on = 0;
}

unsigned km_outbound_streams(const struct km_outbound *ob)
{
	return ob->n_streams;
}

json_t *km_outbound_dump(const struct km_outbound *ob)
{
	json_t *list = json_array();
	uint64_t now = uv_now(ob->loop);

	for (const struct ob_pool *p = ob->pool; p; p = p->next) {
		char peer[64];
		uint8_t raw[16];
		uint16_t port = 0;
		struct km_addr a;
		size_t n = km_sockaddr_to_bytes(&p->c.peer, raw, &port);

		km_addr_from_bytes(raw, n, &a);
		host_port(&a, htons(port), peer, sizeof(peer));
		json_array_append_new(
			list, json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:f, s:I, s:I}", "peer", peer,
					"source", p->src_id, "destination", p->c.ids[0], "state",
					p->c.closing ? "closing" : p->c.ready ? "ready" : "connecting",
					"streams", (int)p->c.n_streams, "streamsTotal",
					(json_int_t)p->c.streams_total, "ageSeconds",
					(double)(now - p->c.opened_ms) / 1000.0, "bytesSent",
					(json_int_t)p->bytes_out, "bytesReceived",
					(json_int_t)p->bytes_in));
	}
	return list;
}
