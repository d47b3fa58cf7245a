/* inbound.c — see inbound.h. */
#include "services/tunnel/inbound.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kmesh_maps.h"
#include "services/tunnel/authz_cache.h"
#include "services/tunnel/hbone_server.h"
#include "services/tunnel/server_tls.h"
#include "services/tunnel/tls_openssl.h"
#include "shared/addr.h"
#include "shared/log.h"

struct ib_pod {
	struct km_inbound *ib;
	struct ib_pod *next;
	char uid[KM_TUNNEL_UID_MAX + 1];
	char name[320];
	char identity[KM_TUNNEL_ID_MAX];
	uint64_t cookie;
	uv_tcp_t *listener; /* heap: closed with free */
	int asking, gone;
	/* sockets inside the pod made ahead, per family (IPv4, IPv6): a stream takes one at once */
	uv_tcp_t *pool[2][KM_SOCKET_POOL];
	unsigned n_pool[2];
	int refilling[2];
};

struct ib_conn {
	struct km_hbone_conn h; /* first: the hbone connection's pointer is the conn's */
	struct km_inbound *ib;
	struct ib_conn *next;
	uint64_t cookie;
	uint64_t accepted_ms;
	uint64_t policy_gen; /* the agent's policy generation its open streams were decided at */
	unsigned rechecks;   /* its streams' re-checks waiting for answers: freed after the last */
	int handshaking;
	int gone;            /* closed, kept for those answers */
};

struct ib_ask { /* a socket asked for a stream */
	struct km_inbound *ib;
	km_hbone_socket_cb cb;
	void *arg;
	uint64_t cookie; /* the pod's netns */
	int family;
	unsigned tries;      /* asked again so far */
	struct ib_ask *next; /* in the ask-again queue */
};

/* A reply to PodSockets: its sockets, counted in `applied` by a map writer older than
 * Reply.sockets (an upgrade under way), may be taken too. */
static void pod_sockets_reply(struct km_peer_link *l, const Kmesh__Ipc__Reply *reply)
{
	if (reply && reply->code == KMESH__IPC__CODE__OK && !reply->sockets)
		km_peer_link_reply_sockets(l, reply->applied);
}

static void free_handle(uv_handle_t *h)
{
	free(h);
}

/* ---- listeners --------------------------------------------------------------------------- */

static void on_connection(uv_stream_t *server, int status);
static void pod_free_if_done(struct ib_pod *p);

static void got_listener(struct km_peer_link *l, void *arg, const Kmesh__Ipc__Reply *reply)
{
	struct ib_pod *p = arg;
	uv_tcp_t *tcp = malloc(sizeof(*tcp));

	pod_sockets_reply(l, reply);
	p->asking = 0;
	if (p->gone || p->ib->stopping || !tcp) { /* its sockets, if any, are closed by the link */
		free(tcp);
		pod_free_if_done(p);
		return;
	}
	uv_tcp_init(p->ib->loop, tcp);
	if (!reply || reply->code != KMESH__IPC__CODE__OK ||
	    km_peer_link_take_socket(&p->ib->mw, tcp) != 0) {
		km_warn("no HBONE listener for pod %s: %s", p->name,
			reply ? reply->message : "the map writer did not answer");
		uv_close((uv_handle_t *)tcp, free_handle);
		return;
	}
	tcp->data = p;
	if (uv_listen((uv_stream_t *)tcp, 1024, on_connection) != 0) {
		km_warn("cannot listen on pod %s's port %d", p->name, KM_HBONE_PORT);
		uv_close((uv_handle_t *)tcp, free_handle);
		return;
	}
	p->listener = tcp;
	p->ib->listeners++;
	km_info("HBONE: listening on pod %s's port %d (identity %s)", p->name, KM_HBONE_PORT,
		p->identity);
}

static void ask_listener(struct ib_pod *p)
{
	km_envelope env = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__PodSockets ps = KMESH__IPC__POD_SOCKETS__INIT;

	if (!p->ib->mw_on || p->asking || p->listener || p->gone || !p->ib->mw.up)
		return;
	ps.netns_cookie = p->cookie;
	ps.listen_port = KM_HBONE_PORT;
	env.body_case = KMESH__IPC__ENVELOPE__BODY_POD_SOCKETS;
	env.pod_sockets = &ps;
	if (km_peer_link_send(&p->ib->mw, &env, got_listener, p) == 0)
		p->asking = 1;
}

static void mw_up(struct km_peer_link *l)
{
	struct km_inbound *ib = l->data;

	for (struct ib_pod *p = ib->pods; p; p = p->next)
		ask_listener(p);
}

static void pool_close(struct ib_pod *p)
{
	for (int f = 0; f < 2; f++)
		while (p->n_pool[f])
			uv_close((uv_handle_t *)p->pool[f][--p->n_pool[f]], free_handle);
}

static void pod_free_if_done(struct ib_pod *p)
{
	if (!p->gone || p->asking)
		return;
	for (struct ib_pod **pp = &p->ib->pods; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	free(p);
}

void km_inbound_pod(struct km_inbound *ib, const struct km_tunnel_pod *pod, int added)
{
	struct ib_pod *p;

	for (p = ib->pods; p && (p->gone || strcmp(p->uid, pod->uid)); p = p->next)
		;
	if (!added) {
		if (!p)
			return;
		p->gone = 1;
		pool_close(p);
		if (p->listener) {
			uv_close((uv_handle_t *)p->listener, free_handle);
			p->listener = NULL;
			ib->listeners--;
		}
		pod_free_if_done(p); /* else when its listener's answer comes */
		return;
	}
	if (p) { /* a change: the identity follows the account */
		snprintf(p->identity, sizeof(p->identity), "%s", pod->identity);
		return;
	}
	if (!(p = calloc(1, sizeof(*p))))
		return;
	p->ib = ib;
	snprintf(p->uid, sizeof(p->uid), "%s", pod->uid);
	snprintf(p->name, sizeof(p->name), "%s/%s", pod->ns, pod->name);
	snprintf(p->identity, sizeof(p->identity), "%s", pod->identity);
	p->cookie = pod->netns_cookie;
	p->next = ib->pods;
	ib->pods = p;
	ask_listener(p);
}

/* ---- sockets for streams ----------------------------------------------------------------- */

static struct ib_pod *pod_by_cookie(struct km_inbound *ib, uint64_t cookie)
{
	for (struct ib_pod *p = ib->pods; p; p = p->next)
		if (p->cookie == cookie && !p->gone)
			return p;
	return NULL;
}

struct ib_refill { /* sockets asked for a pod's pool: the pod found again by its cookie */
	struct km_inbound *ib;
	uint64_t cookie;
	int fam;
};

static void got_refill(struct km_peer_link *l, void *arg, const Kmesh__Ipc__Reply *reply)
{
	struct ib_refill *r = arg;
	struct ib_pod *p = r->ib->stopping ? NULL : pod_by_cookie(r->ib, r->cookie);

	pod_sockets_reply(l, reply);
	if (p)
		p->refilling[r->fam] = 0;
	while (p && reply && reply->code == KMESH__IPC__CODE__OK &&
	       p->n_pool[r->fam] < KM_SOCKET_POOL) {
		uv_tcp_t *tcp = malloc(sizeof(*tcp));

		if (!tcp)
			break;
		uv_tcp_init(r->ib->loop, tcp);
		if (km_peer_link_take_socket(&r->ib->mw, tcp) != 0) {
			uv_close((uv_handle_t *)tcp, free_handle);
			break;
		}
		p->pool[r->fam][p->n_pool[r->fam]++] = tcp;
	}
	free(r); /* sockets not taken are closed by the link */
}

/* Ask for the pod's pool to be filled, when it runs low. */
static void refill(struct km_inbound *ib, struct ib_pod *p, int fam)
{
	km_envelope env = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__PodSockets ps = KMESH__IPC__POD_SOCKETS__INIT;
	struct ib_refill *r;

	if (p->refilling[fam] || p->n_pool[fam] > KM_SOCKET_POOL_LOW || !ib->mw.up ||
	    !(r = malloc(sizeof(*r))))
		return;
	*r = (struct ib_refill){ ib, p->cookie, fam };
	ps.netns_cookie = p->cookie;
	ps.connect = KM_SOCKET_POOL - p->n_pool[fam];
	ps.family = fam ? 6 : 4;
	env.body_case = KMESH__IPC__ENVELOPE__BODY_POD_SOCKETS;
	env.pod_sockets = &ps;
	if (km_peer_link_send(&ib->mw, &env, got_refill, r) != 0) {
		free(r);
		return;
	}
	p->refilling[fam] = 1;
	ib->stats.sockets_asked++;
}

/* Asks for a stream's socket go to the map writer at most KM_INBOUND_ASKS_INFLIGHT at a time:
 * each reply carries a socket, and a burst of them would not fit our socket's buffer (the map
 * writer would make sockets it cannot send, and answer "ask again"). The others wait in a
 * queue, in order, sent as replies come; one the map writer still could not send
 * (RESOURCE_EXHAUSTED) goes back to the queue's end and is sent again after
 * KM_INBOUND_ASK_AGAIN_MS, at most KM_INBOUND_ASK_AGAIN_TRIES times, before its stream gets a
 * 503. The queue holds at most one ask per open stream. */
static int send_ask(struct ib_ask *a);

static void queue_ask(struct km_inbound *ib, struct ib_ask *a)
{
	a->next = NULL;
	if (ib->again_tail)
		ib->again_tail->next = a;
	else
		ib->again_head = a;
	ib->again_tail = a;
}

/* Send queued asks while the window has room. */
static void pump(struct km_inbound *ib)
{
	while (!ib->stopping && ib->asks_inflight < KM_INBOUND_ASKS_INFLIGHT && ib->again_head) {
		struct ib_ask *a = ib->again_head;

		ib->again_head = a->next;
		if (!ib->again_head)
			ib->again_tail = NULL;
		if (send_ask(a) != 0) {
			ib->stats.sockets_failed++;
			a->cb(a->arg, NULL, "the map writer is away");
			free(a);
		}
	}
}

static void on_ask_again(uv_timer_t *t)
{
	pump(t->data);
}

/* Every ask still waiting, answered without a socket (the tunnel stops). */
static void asks_fail(struct km_inbound *ib)
{
	while (ib->again_head) {
		struct ib_ask *a = ib->again_head;

		ib->again_head = a->next;
		a->cb(a->arg, NULL, "the tunnel is stopping");
		free(a);
	}
	ib->again_tail = NULL;
}

static void got_socket(struct km_peer_link *l, void *arg, const Kmesh__Ipc__Reply *reply)
{
	struct ib_ask *a = arg;
	struct km_inbound *ib = a->ib;
	uv_tcp_t *tcp;

	pod_sockets_reply(l, reply);
	ib->asks_inflight--;
	if (reply && reply->code == KMESH__IPC__CODE__RESOURCE_EXHAUSTED && !ib->stopping &&
	    a->tries < KM_INBOUND_ASK_AGAIN_TRIES) {
		a->tries++;
		ib->stats.sockets_asked_again++;
		queue_ask(ib, a);
		if (!uv_is_active((uv_handle_t *)&ib->ask_again))
			uv_timer_start(&ib->ask_again, on_ask_again, KM_INBOUND_ASK_AGAIN_MS, 0);
		return;
	}
	tcp = malloc(sizeof(*tcp));
	if (tcp)
		uv_tcp_init(ib->loop, tcp);
	if (!tcp || !reply || reply->code != KMESH__IPC__CODE__OK ||
	    km_peer_link_take_socket(&ib->mw, tcp) != 0) {
		ib->stats.sockets_failed++;
		if (tcp)
			uv_close((uv_handle_t *)tcp, free_handle);
		a->cb(a->arg, NULL, reply ? reply->message : "the map writer did not answer");
	} else {
		a->cb(a->arg, tcp, NULL);
	}
	free(a);
	pump(ib);
}

/* A socket inside the stream's pod: from its pool at once, else asked of the map writer (the
 * pool refilled meanwhile). */
static int get_socket(struct km_hbone_conn *h, int family, km_hbone_socket_cb cb, void *arg)
{
	struct ib_conn *c = (struct ib_conn *)h;
	struct ib_pod *p = pod_by_cookie(c->ib, c->cookie);
	int fam = family == 6;
	struct ib_ask *a;

	if (p && p->n_pool[fam]) {
		uv_tcp_t *tcp = p->pool[fam][--p->n_pool[fam]];

		refill(c->ib, p, fam);
		c->ib->stats.sockets_pooled++;
		cb(arg, tcp, NULL);
		return 0;
	}
	if (p)
		refill(c->ib, p, fam);
	if (!(a = malloc(sizeof(*a))))
		return -1;
	*a = (struct ib_ask){ .ib = c->ib, .cb = cb, .arg = arg, .cookie = c->cookie,
			      .family = family };
	c->ib->stats.sockets_asked++;
	if (c->ib->asks_inflight >= KM_INBOUND_ASKS_INFLIGHT || c->ib->again_head) {
		queue_ask(c->ib, a); /* its turn comes with the replies (never a callback from here) */
		return 0;
	}
	if (send_ask(a) != 0) {
		free(a);
		return -1;
	}
	return 0;
}

static int send_ask(struct ib_ask *a)
{
	km_envelope env = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__PodSockets ps = KMESH__IPC__POD_SOCKETS__INIT;

	ps.netns_cookie = a->cookie;
	ps.connect = 1;
	ps.family = (uint32_t)a->family;
	env.body_case = KMESH__IPC__ENVELOPE__BODY_POD_SOCKETS;
	env.pod_sockets = &ps;
	if (km_peer_link_send(&a->ib->mw, &env, got_socket, a) != 0)
		return -1;
	a->ib->asks_inflight++;
	return 0;
}

/* ---- authorization ----------------------------------------------------------------------- */

struct ib_authz {
	struct km_inbound *ib;
	km_hbone_authz_cb cb;
	void *arg;
	struct km_authz_key key; /* its principal: */
	char principal[sizeof(((struct km_hbone_conn *)0)->principal)];
};

static void got_decision(struct km_peer_link *l, void *arg, const Kmesh__Ipc__Reply *reply)
{
	struct ib_authz *a = arg;

	(void)l;
	if (!reply) {
		a->cb(a->arg, 0, "the xDS agent did not answer", NULL);
	} else {
		const Kmesh__Ipc__AuthorizeReply *ar =
			reply->body_case == KMESH__IPC__REPLY__BODY_AUTHORIZED ? reply->authorized
									       : NULL;

		km_debug("HBONE: the xDS agent says %s", reply->message);
		if (ar && (reply->code == KMESH__IPC__CODE__OK ||
			   reply->code == KMESH__IPC__CODE__PERMISSION_DENIED)) {
			const struct km_authz_verdict v = { reply->code == KMESH__IPC__CODE__OK,
							    reply->message, ar->dst_baggage };

			km_authz_cache_put(&a->ib->authz_cache, &a->key, &v, ar->policy_generation,
					   ar->workload_generation);
		}
		a->cb(a->arg, reply->code == KMESH__IPC__CODE__OK, reply->message,
		      ar ? ar->dst_baggage : NULL);
	}
	free(a);
}

static int authorize(struct km_hbone_conn *h, const struct sockaddr_storage *to,
		     km_hbone_authz_cb cb, void *arg)
{
	struct ib_conn *c = (struct ib_conn *)h;
	struct km_inbound *ib = c->ib;
	km_envelope env = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Authorize q = KMESH__IPC__AUTHORIZE__INIT;
	const struct km_authz_verdict *v;
	struct ib_authz *a;

	if (!ib->xds_on) {
		cb(arg, 1, "", NULL);
		return 0;
	}
	if (!ib->xds.up) { /* fail closed */
		cb(arg, 0, "the xDS agent is not connected: no policy can be evaluated", NULL);
		return 0;
	}
	if (!(a = malloc(sizeof(*a))))
		return -1;
	a->ib = ib;
	a->cb = cb;
	a->arg = arg;
	memcpy(a->principal, h->principal, sizeof(a->principal));
	a->key.principal = a->principal;
	a->key.src_len = (uint8_t)km_sockaddr_to_bytes(&h->peer, a->key.src, NULL);
	a->key.dst_len = (uint8_t)km_sockaddr_to_bytes(to, a->key.dst, &a->key.port);
	if ((v = km_authz_cache_get(&ib->authz_cache, &a->key))) {
		km_debug("HBONE: decided before at these generations: %s", v->why);
		cb(arg, v->allowed, v->why, v->baggage);
		free(a);
		return 0;
	}
	ib->stats.decisions_asked++;
	q.src.len = a->key.src_len;
	q.src.data = a->key.src;
	q.dst.len = a->key.dst_len;
	q.dst.data = a->key.dst;
	q.dst_port = a->key.port;
	q.principal = a->principal;
	env.body_case = KMESH__IPC__ENVELOPE__BODY_AUTHORIZE;
	env.authorize = &q;
	if (km_peer_link_send(&c->ib->xds, &env, got_decision, a) != 0) {
		free(a);
		return -1;
	}
	return 0;
}

/* ---- open streams asked again when the policies change ------------------------------------
 * The agent tells the tunnel of each change of its policies or workloads (a notice; asked for
 * when the link comes up), or, an agent that cannot, is polled every sweep (250 ms) while
 * connections are open. When the policy generation moves, every stream the policies allowed is
 * asked again, at most KM_INBOUND_RECHECK_INFLIGHT at once, connection by connection, and one
 * now denied (PERMISSION_DENIED, nothing else: an agent away closes nothing) is reset, as the
 * map writer's re-check resets the kernel's. While notices come, decisions are kept for reuse
 * until the next one (authz_cache.h). */

struct ib_recheck {
	struct ib_conn *c;
	int32_t id;
};

static void got_recheck(struct km_peer_link *l, void *arg, const Kmesh__Ipc__Reply *reply)
{
	struct ib_recheck *r = arg;
	struct ib_conn *c = r->c;
	struct km_inbound *ib = c->ib;

	(void)l;
	ib->recheck_inflight--;
	ib->stats.streams_rechecked++;
	c->rechecks--;
	if (!c->gone && reply && reply->code == KMESH__IPC__CODE__PERMISSION_DENIED &&
	    km_hbone_conn_deny(&c->h, r->id, reply->message))
		ib->stats.streams_policy_closed++;
	if (c->gone && !c->rechecks)
		free(c);
	free(r);
}

struct ask_again {
	struct ib_conn *c;
};

static void ask_again(void *arg, int32_t id, const struct sockaddr_storage *to)
{
	struct ib_conn *c = ((struct ask_again *)arg)->c;
	struct km_inbound *ib = c->ib;
	km_envelope env = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Authorize q = KMESH__IPC__AUTHORIZE__INIT;
	uint8_t src[16], dst[16];
	uint16_t port;
	struct ib_recheck *r = malloc(sizeof(*r));

	if (!r)
		return;
	*r = (struct ib_recheck){ .c = c, .id = id };
	q.src.len = km_sockaddr_to_bytes(&c->h.peer, src, NULL);
	q.src.data = src;
	q.dst.len = km_sockaddr_to_bytes(to, dst, &port);
	q.dst.data = dst;
	q.dst_port = port;
	q.principal = c->h.principal;
	env.body_case = KMESH__IPC__ENVELOPE__BODY_AUTHORIZE;
	env.authorize = &q;
	if (km_peer_link_send(&ib->xds, &env, got_recheck, r) != 0) {
		free(r);
		return;
	}
	ib->recheck_inflight++;
	c->rechecks++;
}

/* Ask again for the streams of connections decided at another generation, while room is left. */
static void recheck_some(struct km_inbound *ib)
{
	for (struct ib_conn *c = ib->conns; c; c = c->next) {
		struct ask_again a = { c };

		if (c->policy_gen == ib->policy_gen || c->handshaking || c->h.closing)
			continue;
		if (ib->recheck_inflight + c->h.n_streams > KM_INBOUND_RECHECK_INFLIGHT)
			return; /* the rest at the next sweep, or as answers come */
		c->policy_gen = ib->policy_gen;
		km_hbone_conn_each_authorized(&c->h, ask_again, &a);
	}
}

/* The agent's generations now (a poll's answer or a notice). */
static void generations(struct km_inbound *ib, const Kmesh__Ipc__AuthorizeReply *ar)
{
	if (ib->notified)
		km_authz_cache_generations(&ib->authz_cache, ar->policy_generation,
					   ar->workload_generation);
	if (ar->policy_generation != ib->policy_gen)
		km_debug("HBONE: the policies changed (generation %llu): open streams asked again",
			 (unsigned long long)ar->policy_generation);
	ib->policy_gen = ar->policy_generation;
	recheck_some(ib);
}

static void got_generation(struct km_peer_link *l, void *arg, const Kmesh__Ipc__Reply *reply)
{
	struct km_inbound *ib = arg;

	(void)l;
	ib->gen_asking = 0;
	if (!reply || reply->code != KMESH__IPC__CODE__OK ||
	    reply->body_case != KMESH__IPC__REPLY__BODY_AUTHORIZED)
		return;
	if (reply->authorized->workload_generation && !ib->notified) { /* notices from now on */
		ib->notified = 1;
		km_authz_cache_on(&ib->authz_cache, reply->authorized->policy_generation,
				  reply->authorized->workload_generation);
		km_debug("HBONE: the xDS agent tells its changes: decisions kept until the next");
	}
	generations(ib, reply->authorized);
}

/* Ask for the generations and for notices; force: even with no connection open (the link just
 * came up). Once notices come, never again on this link. */
static void ask_generation(struct km_inbound *ib, int force)
{
	km_envelope env = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__PolicyGeneration q = KMESH__IPC__POLICY_GENERATION__INIT;

	if (!ib->xds_on || !ib->xds.up || ib->gen_asking || ib->notified ||
	    (!ib->n_conns && !force))
		return;
	q.notify = 1;
	env.body_case = KMESH__IPC__ENVELOPE__BODY_POLICY_GENERATION;
	env.policy_generation = &q;
	if (km_peer_link_send(&ib->xds, &env, got_generation, ib) == 0)
		ib->gen_asking = 1;
}

static void xds_up(struct km_peer_link *l)
{
	ask_generation(l->data, 1);
}

static void xds_down(struct km_peer_link *l, const char *why)
{
	struct km_inbound *ib = l->data;

	(void)why;
	ib->notified = 0;
	km_authz_cache_off(&ib->authz_cache);
}

static void xds_notice(struct km_peer_link *l, const Kmesh__Ipc__Reply *reply)
{
	struct km_inbound *ib = l->data;

	if (ib->notified && reply->body_case == KMESH__IPC__REPLY__BODY_AUTHORIZED)
		generations(ib, reply->authorized);
}

/* ---- connections ------------------------------------------------------------------------- */

static void report(struct km_hbone_conn *h, const struct km_hbone_report *r)
{
	struct ib_conn *c = (struct ib_conn *)h;

	static const unsigned kinds[] = { [KM_HBONE_OPENED] = KM_CONN_OPEN,
					  [KM_HBONE_PROGRESS] = KM_CONN_PROGRESS,
					  [KM_HBONE_CLOSED] = KM_CONN_CLOSE };

	const struct km_stream_report rep = {
		.kind = kinds[r->kind], .direction = KM_CONN_INBOUND, .client = &h->peer,
		.server = r->to, .cookie = r->cookie, .client_bytes = r->to_app,
		.server_bytes = r->from_app, .principal = h->principal, .baggage = r->baggage,
	};

	km_stream_reports_add(&c->ib->reports, &rep);
}

static void conn_closed(struct km_hbone_conn *h)
{
	struct ib_conn *c = (struct ib_conn *)h;
	struct km_inbound *ib = c->ib;

	ib->stats.streams += h->streams_total;
	ib->stats.refused_400 += h->refused_400;
	ib->stats.refused_401 += h->refused_401;
	ib->stats.refused_503 += h->refused_503;
	for (struct ib_conn **pp = &ib->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	ib->n_conns--;
	if (c->rechecks)
		c->gone = 1; /* freed with the last answer */
	else
		free(c);
}

static void tls_ready(struct km_tls_stream *s)
{
	struct ib_conn *c = s->data;
	char why[300], desc[96];

	c->handshaking = 0;
	if (km_server_tls_peer(s->ssl, c->ib->trust_domain, c->h.principal, sizeof(c->h.principal),
			       why, sizeof(why)) != 0) {
		c->ib->stats.client_refused++;
		km_info("HBONE: a client refused: %s", why);
		km_hbone_conn_close(&c->h);
		return;
	}
	km_debug("HBONE: %s connected (%s)", c->h.principal, km_tls_stream_describe(s, desc,
										     sizeof(desc)));
	if (km_hbone_conn_start(&c->h) != 0)
		km_hbone_conn_close(&c->h);
}

static void tls_data(struct km_tls_stream *s, const uint8_t *data, size_t len)
{
	struct ib_conn *c = s->data;

	km_hbone_conn_data(&c->h, data, len);
}

static void tls_error(struct km_tls_stream *s, const char *what, int eof)
{
	struct ib_conn *c = s->data;

	if (c->handshaking) {
		c->ib->stats.handshake_failed++;
		km_info("HBONE: a TLS handshake failed: %s", what);
	} else if (!eof) {
		km_debug("HBONE from %s: %s", c->h.principal, what);
	}
	km_hbone_conn_close(&c->h);
}

static void tls_drained(struct km_tls_stream *s)
{
	struct ib_conn *c = s->data;

	km_hbone_conn_drained(&c->h);
}

static void on_connection(uv_stream_t *server, int status)
{
	static const struct km_hbone_ops ops = { authorize, get_socket, conn_closed, report };
	static const struct km_tls_stream_cbs cbs = { tls_ready, tls_data, tls_error, tls_drained };
	struct ib_pod *p = server->data;
	struct km_inbound *ib = p->ib;
	struct ib_conn *c;
	int len = sizeof(struct sockaddr_storage), plen = sizeof(struct sockaddr_storage);
	void *ctx;
	char why[300];

	if (status < 0 || !(c = calloc(1, sizeof(*c))))
		return;
	c->ib = ib;
	c->cookie = p->cookie;
	c->accepted_ms = uv_now(ib->loop);
	c->policy_gen = ib->policy_gen; /* its streams are decided from now on */
	c->handshaking = 1;
	km_hbone_conn_init(&c->h, ib->loop, &ops);
	c->h.app_from_caller = ib->app_from_caller;
	c->h.turns = &ib->turns;
	c->h.app_sources = ib->stats.app_sources;
	uv_tcp_init(ib->loop, &c->h.tcp);
	c->next = ib->conns;
	ib->conns = c;
	ib->n_conns++;
	if (uv_accept(server, (uv_stream_t *)&c->h.tcp) != 0) {
		km_hbone_conn_close(&c->h);
		return;
	}
	ib->stats.accepted++;
	if (ib->n_conns > KM_INBOUND_MAX_CONNS) {
		ib->stats.refused_full++;
		km_hbone_conn_close(&c->h);
		return;
	}
	uv_tcp_getsockname(&c->h.tcp, (struct sockaddr *)&c->h.local, &len);
	uv_tcp_getpeername(&c->h.tcp, (struct sockaddr *)&c->h.peer, &plen);
	uv_tcp_nodelay(&c->h.tcp, 1);
	if (!(ctx = km_certs_server_ctx(ib->certs, p->identity, why, sizeof(why)))) {
		ib->stats.no_certificate++;
		km_info("HBONE to pod %s refused: %s", p->name, why);
		km_hbone_conn_close(&c->h);
		return;
	}
	c->h.tls.data = c;
	if (km_tls_stream_start(&c->h.tls, &km_tls_openssl, (uv_stream_t *)&c->h.tcp, ctx, 1, NULL,
				"h2", &cbs) != 0) {
		km_hbone_conn_close(&c->h);
		return;
	}
}

/* Connections still shaking hands after handshake_ms are closed; the others are pinged when
 * silent, and closed when they do not answer. */
static void on_sweep(uv_timer_t *t)
{
	struct km_inbound *ib = t->data;
	uint64_t now = uv_now(ib->loop);

	int progress = ib->reports_on && ib->report_ms && now - ib->last_progress_ms >= ib->report_ms;

	if (progress)
		ib->last_progress_ms = now;
	for (struct ib_conn *c = ib->conns, *next; c; c = next) {
		next = c->next;
		if (c->h.closing)
			continue;
		if (progress && !c->handshaking)
			km_hbone_conn_progress(&c->h);
		if (c->handshaking && now - c->accepted_ms >= ib->handshake_ms) {
			ib->stats.handshake_timeouts++;
			km_hbone_conn_close(&c->h);
		} else if (!c->handshaking && km_hbone_conn_tick(&c->h, now, ib->ping_ms)) {
			ib->stats.ping_timeouts++;
			km_info("HBONE: %s did not answer a PING in %u ms: closed", c->h.principal,
				2 * ib->ping_ms);
			km_hbone_conn_close(&c->h);
		}
	}
	ask_generation(ib, 0);
	recheck_some(ib);
}

void km_inbound_open_streams(const struct km_inbound *ib, uint64_t *streams, uint64_t *r400,
			     uint64_t *r401, uint64_t *r503)
{
	for (const struct ib_conn *c = ib->conns; c; c = c->next) {
		*streams += c->h.streams_total;
		*r400 += c->h.refused_400;
		*r401 += c->h.refused_401;
		*r503 += c->h.refused_503;
	}
}

int km_inbound_start(struct km_inbound *ib, uv_loop_t *loop, struct km_certs *certs,
		     const char *trust_domain, const char *mw_socket, const char *xds_socket)
{
	memset(ib, 0, sizeof(*ib));
	ib->loop = loop;
	ib->certs = certs;
	ib->trust_domain = trust_domain;
	ib->handshake_ms = KM_INBOUND_HANDSHAKE_MS;
	ib->ping_ms = KM_INBOUND_PING_MS;
	ib->report_ms = KM_INBOUND_REPORT_MS;
	ib->app_from_caller = 1;
	ib->authz_cache.max = KM_AUTHZ_CACHE_MAX;
	uv_timer_init(loop, &ib->sweep);
	ib->sweep.data = ib;
	uv_timer_init(loop, &ib->ask_again);
	ib->ask_again.data = ib;
	km_turn_queue_init(&ib->turns, loop);
	uv_timer_start(&ib->sweep, on_sweep, 250, 250);
	if (mw_socket && *mw_socket) {
		const struct km_peer_link_config cfg = {
			.path = mw_socket, .role = KMESH__IPC__ROLE__ROLE_TUNNEL,
			.process = "kmesh-tunnel", .peer = "the map writer", .receiving = 1,
			.on_up = mw_up,
		};

		ib->mw.data = ib;
		if (km_peer_link_start(&ib->mw, loop, &cfg) != 0)
			return -1;
		ib->mw_on = 1;
	}
	if (xds_socket && *xds_socket) {
		const struct km_peer_link_config cfg = {
			.path = xds_socket, .role = KMESH__IPC__ROLE__ROLE_TUNNEL,
			.process = "kmesh-tunnel", .peer = "the xDS agent",
			.on_up = xds_up, .on_down = xds_down, .on_notice = xds_notice,
		};

		ib->xds.data = ib;
		if (km_peer_link_start(&ib->xds, loop, &cfg) != 0)
			return -1;
		ib->xds_on = 1;
		km_stream_reports_start(&ib->reports, loop, &ib->xds);
		ib->reports_on = 1;
	} else {
		km_warn("no --xds-socket: HBONE streams are let through without their principal's "
			"authorization");
	}
	return 0;
}

void km_inbound_stop(struct km_inbound *ib)
{
	ib->stopping = 1;
	uv_close((uv_handle_t *)&ib->sweep, NULL);
	uv_close((uv_handle_t *)&ib->ask_again, NULL);
	asks_fail(ib);
	for (struct ib_conn *c = ib->conns, *next; c; c = next) {
		next = c->next;
		km_hbone_conn_close(&c->h);
	}
	km_turn_queue_close(&ib->turns);
	if (ib->reports_on) { /* the closes above, if the agent can take them */
		km_stream_reports_flush(&ib->reports);
		km_stream_reports_stop(&ib->reports);
	}
	if (ib->mw_on) /* every request answered now, with none */
		km_peer_link_stop(&ib->mw, NULL);
	if (ib->xds_on)
		km_peer_link_stop(&ib->xds, NULL);
	km_authz_cache_off(&ib->authz_cache);
	for (struct ib_pod *p = ib->pods; p; p = p->next) {
		pool_close(p);
		if (p->listener) {
			uv_close((uv_handle_t *)p->listener, free_handle);
			p->listener = NULL;
		}
	}
	while (ib->pods) {
		struct ib_pod *p = ib->pods;

		ib->pods = p->next;
		free(p);
	}
}
