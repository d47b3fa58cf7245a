/* dns_server.c — see dns_server.h. */
#include "services/xds-agent/dns/dns_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <uthash.h>

#include "shared/log.h"

#define TCP_MSG_MAX 65535

/* A UDP query waiting for the upstream's answer. */
struct dns_pending {
	uint16_t up_id;   /* the id it was sent upstream with (the key) */
	uint16_t id;      /* the client's */
	struct sockaddr_storage client;
	uint64_t sent_ms;
	UT_hash_handle hh;
};

/* A client's TCP connection; one query at a time (the next is read once this one is answered). */
struct dns_tcp_client {
	uv_tcp_t h;
	struct km_dns_server *s;
	uv_timer_t idle;
	uint8_t *buf; /* what arrived, not yet a whole message */
	size_t len;
	int closing;
	int handles; /* initialized handles not closed yet: freed at 0 once closing */
	/* the query forwarded upstream, if any */
	uv_tcp_t up;
	uv_connect_t up_connect;
	int up_open;
	uint8_t *up_q;   /* the query, framed */
	uint8_t *up_ans; /* the answer as it arrives, framed */
	size_t up_len;
};

struct write_req {
	uv_write_t w;
	uint8_t *data;
};

int km_dns_parse_endpoint(const char *text, uint16_t default_port, struct sockaddr_storage *sa)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *port = NULL;
	unsigned long p = default_port;
	char *end;

	memset(sa, 0, sizeof(*sa));
	if (text[0] == '[') {
		const char *close = strchr(text, ']');

		if (!close || (size_t)(close - text - 1) >= sizeof(host))
			return -1;
		memcpy(host, text + 1, (size_t)(close - text - 1));
		host[close - text - 1] = '\0';
		if (close[1] == ':')
			port = close + 2;
		else if (close[1])
			return -1;
	} else {
		const char *colon = strchr(text, ':');

		if (colon && strchr(colon + 1, ':'))
			colon = NULL; /* a bare IPv6 address */
		if (strlen(text) >= sizeof(host))
			return -1;
		snprintf(host, sizeof(host), "%.*s", colon ? (int)(colon - text) : (int)strlen(text),
			 text);
		port = colon ? colon + 1 : NULL;
	}
	if (port) {
		p = strtoul(port, &end, 10);
		if (end == port || *end || p == 0 || p > 65535)
			return -1;
	}
	if (uv_ip4_addr(host, (int)p, (struct sockaddr_in *)sa) == 0)
		return 0;
	return uv_ip6_addr(host, (int)p, (struct sockaddr_in6 *)sa) == 0 ? 0 : -1;
}

/* The first nameserver of /etc/resolv.conf, port 53. */
static int resolv_conf_upstream(struct sockaddr_storage *sa)
{
	FILE *f = fopen("/etc/resolv.conf", "r");
	char line[512], addr[256];
	int rc = -1;

	if (!f)
		return -1;
	while (rc && fgets(line, sizeof(line), f))
		if (sscanf(line, " nameserver %255s", addr) == 1)
			rc = km_dns_parse_endpoint(addr, 53, sa);
	fclose(f);
	return rc;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static uint8_t udp_buf[65536];

	(void)h;
	(void)suggested;
	*buf = uv_buf_init((char *)udp_buf, sizeof(udp_buf));
}

/* ---- UDP ---------------------------------------------------------------------------------- */

static void forward_udp(struct km_dns_server *s, const uint8_t *q, size_t len,
			const struct sockaddr *from)
{
	struct dns_pending *p;
	uint8_t copy[65536];
	uv_buf_t b;
	uint16_t up_id;
	int tries = 0;

	if (s->n_pending >= KM_DNS_PENDING_MAX) {
		s->pending_full++;
		return;
	}
	do { /* an unpredictable id (getrandom), not waiting already */
		if (getrandom(&up_id, sizeof(up_id), GRND_NONBLOCK) != sizeof(up_id))
			up_id = (uint16_t)(random() & 0xffff);
		HASH_FIND(hh, s->pending, &up_id, sizeof(up_id), p);
	} while (p && ++tries < 16);
	if (p || !(p = calloc(1, sizeof(*p)))) {
		s->pending_full++;
		return;
	}
	p->up_id = up_id;
	p->id = (uint16_t)(q[0] << 8 | q[1]);
	memcpy(&p->client, from, from->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
							     : sizeof(struct sockaddr_in));
	p->sent_ms = uv_now(s->loop);
	memcpy(copy, q, len);
	copy[0] = (uint8_t)(up_id >> 8);
	copy[1] = (uint8_t)up_id;
	b = uv_buf_init((char *)copy, (unsigned)len);
	if (uv_udp_try_send(&s->up_udp, &b, 1, (const struct sockaddr *)&s->upstream) < 0) {
		s->upstream_errors++;
		free(p);
		return;
	}
	HASH_ADD(hh, s->pending, up_id, sizeof(p->up_id), p);
	s->n_pending++;
}

static void on_client_udp(uv_udp_t *h, ssize_t n, const uv_buf_t *buf, const struct sockaddr *from,
			  unsigned flags)
{
	struct km_dns_server *s = h->data;
	uint8_t *reply;
	size_t reply_len;

	(void)flags;
	if (n <= 0 || !from)
		return;
	s->udp_queries++;
	switch (km_dns_answer(s->resolver, (const uint8_t *)buf->base, (size_t)n, KM_DNS_UDP_MAX,
			      &reply, &reply_len)) {
	case KM_DNS_ANSWERED: {
		uv_buf_t b = uv_buf_init((char *)reply, (unsigned)reply_len);

		uv_udp_try_send(&s->udp, &b, 1, from); /* a full socket buffer: the client asks again */
		free(reply);
		break;
	}
	case KM_DNS_FORWARD:
		forward_udp(s, (const uint8_t *)buf->base, (size_t)n, from);
		break;
	case KM_DNS_DROP:
		break;
	}
}

static int same_endpoint(const struct sockaddr *a, const struct sockaddr_storage *b)
{
	if (a->sa_family != b->ss_family)
		return 0;
	if (a->sa_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;

		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	{
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;

		return x->sin6_port == y->sin6_port &&
		       !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr));
	}
}

/* ---- answers waiting for a demanded service (on demand) --------------------------------- */

static void on_wait_tick(uv_timer_t *t);

struct dns_waiting {
	struct dns_waiting *next;
	struct sockaddr_storage client;
	uint64_t until_ms;
	char name[KM_DNS_MAX_NAME];
	size_t len;
	uint8_t msg[];
};

static void send_udp(struct km_dns_server *s, const uint8_t *m, size_t len,
		     const struct sockaddr_storage *to)
{
	uv_buf_t b = uv_buf_init((char *)m, (unsigned)len);

	uv_udp_try_send(&s->udp, &b, 1, (const struct sockaddr *)to); /* full: the client asks again */
}

/* Keep the answer m for the pod until name's service is in the tables. Returns 0, or -1 (full:
 * send it now). */
static int wait_for_service(struct km_dns_server *s, const uint8_t *m, size_t len,
			    const struct sockaddr_storage *client, const char *name)
{
	struct dns_waiting *w;

	if (s->n_waiting >= KM_DNS_WAITING_MAX || !(w = malloc(sizeof(*w) + len))) {
		s->wait_full++;
		return -1;
	}
	w->client = *client;
	w->until_ms = uv_now(s->loop) + s->wait_ms;
	memcpy(w->name, name, strlen(name) + 1);
	w->len = len;
	memcpy(w->msg, m, len);
	w->next = s->waiting;
	s->waiting = w;
	if (s->n_waiting++ == 0)
		uv_timer_start(&s->wait_tick, on_wait_tick, KM_DNS_WAIT_TICK_MS, KM_DNS_WAIT_TICK_MS);
	return 0;
}

/* Send the answers whose service is in the tables now, and those that waited long enough. */
static void on_wait_tick(uv_timer_t *t)
{
	struct km_dns_server *s = t->data;
	uint64_t now = uv_now(s->loop);
	int written = !s->rows_written || s->rows_written(s->rows_arg);

	for (struct dns_waiting **pw = &s->waiting, *w; (w = *pw);) {
		int ready = written && km_dns_name_held(s->resolver, w->name);

		if (!ready && now < w->until_ms) {
			pw = &w->next;
			continue;
		}
		if (ready)
			s->waited++;
		else
			s->wait_expired++;
		send_udp(s, w->msg, w->len, &w->client);
		*pw = w->next;
		free(w);
		s->n_waiting--;
	}
	if (!s->n_waiting)
		uv_timer_stop(&s->wait_tick);
}

void km_dns_server_wait_for_demand(struct km_dns_server *s, uint32_t wait_ms,
				   int (*rows_written)(void *arg), void *arg)
{
	s->wait_ms = wait_ms;
	s->rows_written = rows_written;
	s->rows_arg = arg;
}

static void on_upstream_udp(uv_udp_t *h, ssize_t n, const uv_buf_t *buf, const struct sockaddr *from,
			    unsigned flags)
{
	struct km_dns_server *s = h->data;
	struct dns_pending *p;
	uint8_t *m = (uint8_t *)buf->base;
	char name[KM_DNS_MAX_NAME];
	uint16_t id;

	(void)flags;
	if (n < 12 || !from || !same_endpoint(from, &s->upstream))
		return; /* only the upstream answers: another sender cannot guess its way in by id */
	id = (uint16_t)(m[0] << 8 | m[1]);
	HASH_FIND(hh, s->pending, &id, sizeof(id), p);
	if (!p)
		return; /* late (expired), or not ours */
	m[0] = (uint8_t)(p->id >> 8);
	m[1] = (uint8_t)p->id;
	if (!km_dns_upstream_answered(s->resolver, m, (size_t)n, name) || !s->wait_ms ||
	    wait_for_service(s, m, (size_t)n, &p->client, name) != 0)
		send_udp(s, m, (size_t)n, &p->client);
	HASH_DEL(s->pending, p);
	s->n_pending--;
	free(p);
}

static void on_sweep(uv_timer_t *t)
{
	struct km_dns_server *s = t->data;
	struct dns_pending *p, *tmp;
	uint64_t now = uv_now(s->loop);

	HASH_ITER(hh, s->pending, p, tmp)
		if (now - p->sent_ms >= KM_DNS_UPSTREAM_TIMEOUT_MS) {
			HASH_DEL(s->pending, p);
			s->n_pending--;
			s->upstream_timeouts++;
			free(p); /* no answer: the client's own timeout retries */
		}
}

/* ---- TCP ---------------------------------------------------------------------------------- */

static void handle_closed(uv_handle_t *h)
{
	struct dns_tcp_client *c = h->data;

	if (--c->handles || !c->closing)
		return;
	c->s->n_tcp--;
	free(c->buf);
	free(c->up_q);
	free(c->up_ans);
	free(c);
}

static void up_close(struct dns_tcp_client *c)
{
	if (!c->up_open)
		return;
	c->up_open = 0;
	uv_close((uv_handle_t *)&c->up, handle_closed);
}

static void client_close(struct dns_tcp_client *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	up_close(c);
	uv_close((uv_handle_t *)&c->h, handle_closed);
	uv_close((uv_handle_t *)&c->idle, handle_closed);
}

static void free_write(uv_write_t *w, int status)
{
	(void)status;
	free(w);
}

static void on_written(uv_write_t *w, int status)
{
	struct write_req *r = (struct write_req *)w;

	(void)status;
	free(r->data);
	free(r);
}

/* Write a framed message (its length, then its bytes) to stream. */
static int write_framed(uv_stream_t *st, const uint8_t *msg, size_t len)
{
	struct write_req *r = malloc(sizeof(*r));
	uv_buf_t b;

	if (!r || !(r->data = malloc(len + 2))) {
		free(r);
		return -1;
	}
	r->data[0] = (uint8_t)(len >> 8);
	r->data[1] = (uint8_t)len;
	memcpy(r->data + 2, msg, len);
	b = uv_buf_init((char *)r->data, (unsigned)(len + 2));
	if (uv_write(&r->w, st, &b, 1, on_written) != 0) {
		free(r->data);
		free(r);
		return -1;
	}
	return 0;
}

static void on_tcp_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf);
static void handle_next(struct dns_tcp_client *c);

static void tcp_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static uint8_t b[65536];

	(void)h;
	(void)suggested;
	*buf = uv_buf_init((char *)b, sizeof(b));
}

/* The upstream's answer to the forwarded query (or its failure): back to the client, then the
 * next query. */
static void up_done(struct dns_tcp_client *c, const uint8_t *answer, size_t len)
{
	if (c->closing)
		return;
	if (answer) {
		km_dns_upstream_answered(c->s->resolver, answer, len, NULL); /* TCP: no wait */
		write_framed((uv_stream_t *)&c->h, answer, len);
	} else
		c->s->upstream_errors++;
	c->up_len = 0;
	up_close(c);
	uv_read_start((uv_stream_t *)&c->h, tcp_alloc, on_tcp_read);
	handle_next(c);
}

static void on_up_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct dns_tcp_client *c = st->data;
	size_t want;

	if (n < 0 || c->up_len + (size_t)n > TCP_MSG_MAX + 2) {
		up_done(c, NULL, 0);
		return;
	}
	memcpy(c->up_ans + c->up_len, buf->base, (size_t)n);
	c->up_len += (size_t)n;
	if (c->up_len < 2)
		return;
	want = (size_t)(c->up_ans[0] << 8 | c->up_ans[1]);
	if (c->up_len >= want + 2) {
		uv_read_stop(st);
		up_done(c, c->up_ans + 2, want);
	}
}

static void on_up_connected(uv_connect_t *req, int status)
{
	struct dns_tcp_client *c = req->data;
	uv_write_t *w;
	uv_buf_t b;

	if (c->closing || !c->up_open)
		return;
	if (status < 0) {
		up_done(c, NULL, 0);
		return;
	}
	b = uv_buf_init((char *)c->up_q, (unsigned)((size_t)(c->up_q[0] << 8 | c->up_q[1]) + 2));
	if (!(w = malloc(sizeof(*w))) || uv_write(w, (uv_stream_t *)&c->up, &b, 1, free_write) != 0) {
		free(w);
		up_done(c, NULL, 0);
		return;
	}
	c->up_len = 0;
	uv_read_start((uv_stream_t *)&c->up, tcp_alloc, on_up_read);
}

static void forward_tcp(struct dns_tcp_client *c, const uint8_t *q, size_t len)
{
	struct km_dns_server *s = c->s;

	if ((!c->up_q && !(c->up_q = malloc(TCP_MSG_MAX + 2))) ||
	    (!c->up_ans && !(c->up_ans = malloc(TCP_MSG_MAX + 2)))) {
		c->s->upstream_errors++;
		return; /* the client's own timeout retries */
	}
	c->up_q[0] = (uint8_t)(len >> 8);
	c->up_q[1] = (uint8_t)len;
	memcpy(c->up_q + 2, q, len);
	uv_read_stop((uv_stream_t *)&c->h); /* one query at a time */
	uv_tcp_init(s->loop, &c->up);
	c->up.data = c;
	c->up_open = 1;
	c->handles++;
	c->up_connect.data = c;
	if (uv_tcp_connect(&c->up_connect, &c->up, (const struct sockaddr *)&s->upstream,
			   on_up_connected) != 0)
		up_done(c, NULL, 0);
}

/* Answer or forward the whole messages in c->buf, one at a time: while one is upstream, the rest
 * wait. */
static void handle_next(struct dns_tcp_client *c)
{
	static uint8_t msg[TCP_MSG_MAX];
	uint8_t *reply;
	size_t want, reply_len;

	while (!c->closing && !c->up_open && c->len >= 2) {
		if (uv_stream_get_write_queue_size((uv_stream_t *)&c->h) > KM_DNS_TCP_UNSENT_MAX) {
			c->s->tcp_slow_closed++; /* asks and never reads: its answers would pile up */
			client_close(c);
			return;
		}
		want = (size_t)(c->buf[0] << 8 | c->buf[1]);
		if (c->len < want + 2)
			return;
		memcpy(msg, c->buf + 2, want);
		memmove(c->buf, c->buf + 2 + want, c->len - 2 - want);
		c->len -= 2 + want;
		c->s->tcp_queries++;
		uv_timer_again(&c->idle);
		switch (km_dns_answer(c->s->resolver, msg, want, 0, &reply, &reply_len)) {
		case KM_DNS_ANSWERED:
			write_framed((uv_stream_t *)&c->h, reply, reply_len);
			free(reply);
			break;
		case KM_DNS_FORWARD:
			forward_tcp(c, msg, want);
			break;
		case KM_DNS_DROP:
			client_close(c); /* not DNS: nothing more to read on this connection */
			return;
		}
	}
}

static void on_tcp_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct dns_tcp_client *c = st->data;

	if (n < 0) {
		client_close(c);
		return;
	}
	if (c->len + (size_t)n > 2 * (TCP_MSG_MAX + 2)) {
		client_close(c); /* more than two whole messages unread: not a DNS client */
		return;
	}
	memcpy(c->buf + c->len, buf->base, (size_t)n);
	c->len += (size_t)n;
	handle_next(c);
}

static void on_idle(uv_timer_t *t)
{
	struct dns_tcp_client *c = t->data;

	if (!c->up_open)
		client_close(c);
}

static void free_handle(uv_handle_t *h)
{
	free(h);
}

static void on_tcp_connection(uv_stream_t *server, int status)
{
	struct km_dns_server *s = server->data;
	struct dns_tcp_client *c = NULL;

	if (status < 0)
		return;
	if (s->n_tcp >= KM_DNS_TCP_MAX || !(c = calloc(1, sizeof(*c))) ||
	    !(c->buf = malloc(2 * (TCP_MSG_MAX + 2)))) {
		uv_tcp_t *refuse = malloc(sizeof(*refuse));

		if (c)
			free(c);
		s->tcp_refused++;
		/* accepted and closed at once, so the kernel's queue does not keep it */
		if (refuse) {
			uv_tcp_init(s->loop, refuse);
			uv_accept(server, (uv_stream_t *)refuse);
			uv_close((uv_handle_t *)refuse, free_handle);
		}
		return;
	}
	c->s = s;
	uv_tcp_init(s->loop, &c->h);
	c->h.data = c;
	uv_timer_init(s->loop, &c->idle);
	c->idle.data = c;
	c->handles = 2;
	s->n_tcp++;
	if (uv_accept(server, (uv_stream_t *)&c->h) != 0) {
		client_close(c);
		return;
	}
	uv_timer_start(&c->idle, on_idle, KM_DNS_TCP_IDLE_MS, KM_DNS_TCP_IDLE_MS);
	uv_read_start((uv_stream_t *)&c->h, tcp_alloc, on_tcp_read);
}

/* ---- start, stop -------------------------------------------------------------------------- */

int km_dns_server_start(struct km_dns_server *s, uv_loop_t *loop, struct km_dns_resolver *r,
			const char *address, const char *upstream, char *err, size_t errlen)
{
	struct sockaddr_storage listen_at, up_from;
	int rc;

	memset(s, 0, sizeof(*s));
	s->loop = loop;
	s->resolver = r;
	snprintf(s->listen_text, sizeof(s->listen_text), "%s", address);
	if (km_dns_parse_endpoint(address, 53, &listen_at) != 0) {
		snprintf(err, errlen, "--dns-address '%s' is not ADDRESS:PORT", address);
		return -1;
	}
	if (upstream ? km_dns_parse_endpoint(upstream, 53, &s->upstream) != 0
		     : resolv_conf_upstream(&s->upstream) != 0) {
		snprintf(err, errlen, upstream ? "--dns-upstream '%s' is not ADDRESS[:PORT]"
					       : "no nameserver in /etc/resolv.conf: give --dns-upstream%s",
			 upstream ? upstream : "");
		return -1;
	}
	memset(&up_from, 0, sizeof(up_from));
	up_from.ss_family = s->upstream.ss_family; /* any address, any port */
	uv_udp_init(loop, &s->udp);
	uv_udp_init(loop, &s->up_udp);
	uv_tcp_init(loop, &s->tcp);
	uv_timer_init(loop, &s->sweep);
	uv_timer_init(loop, &s->wait_tick);
	s->udp.data = s->up_udp.data = s->tcp.data = s->sweep.data = s->wait_tick.data = s;
	s->started = 1;
	if ((rc = uv_udp_bind(&s->udp, (const struct sockaddr *)&listen_at, 0)) != 0 ||
	    (rc = uv_tcp_bind(&s->tcp, (const struct sockaddr *)&listen_at, 0)) != 0 ||
	    (rc = uv_listen((uv_stream_t *)&s->tcp, 128, on_tcp_connection)) != 0 ||
	    (rc = uv_udp_bind(&s->up_udp, (const struct sockaddr *)&up_from, 0)) != 0 ||
	    (rc = uv_udp_recv_start(&s->udp, on_alloc, on_client_udp)) != 0 ||
	    (rc = uv_udp_recv_start(&s->up_udp, on_alloc, on_upstream_udp)) != 0) {
		snprintf(err, errlen, "cannot serve DNS on %s: %s", address, uv_strerror(rc));
		km_dns_server_stop(s);
		return -1;
	}
	uv_timer_start(&s->sweep, on_sweep, 1000, 1000);
	return 0;
}

void km_dns_server_stop(struct km_dns_server *s)
{
	struct dns_pending *p, *tmp;

	if (!s->started)
		return;
	s->started = 0;
	uv_close((uv_handle_t *)&s->udp, NULL);
	uv_close((uv_handle_t *)&s->up_udp, NULL);
	uv_close((uv_handle_t *)&s->tcp, NULL);
	uv_close((uv_handle_t *)&s->sweep, NULL);
	uv_close((uv_handle_t *)&s->wait_tick, NULL);
	while (s->waiting) {
		struct dns_waiting *w = s->waiting;

		s->waiting = w->next;
		free(w);
	}
	s->n_waiting = 0;
	HASH_ITER(hh, s->pending, p, tmp) {
		HASH_DEL(s->pending, p);
		free(p);
	}
	s->n_pending = 0;
}
