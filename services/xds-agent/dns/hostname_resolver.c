/* hostname_resolver.c — see hostname_resolver.h. c-ares on libuv: its sockets polled by uv_poll
 * handles it asks for (sock_state_cb), its timeouts and the refreshes driven by one tick. */
#include "services/xds-agent/dns/hostname_resolver.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include <ares.h>

#include "shared/log.h"

#define TICK_MS 250

struct hn_entry {
	char *uid;
	char *hostname;
	struct km_workload_res *res; /* istiod's version (no addresses), unpacked */
	struct km_addr addrs[KM_RES_MAX_ADDRESSES]; /* the last good answer */
	size_t n;
	uint64_t due_ms;  /* next resolution */
	int in_flight;
	uint32_t failures; /* in a row */
	UT_hash_handle hh;
};

struct hn_poll {
	uv_poll_t h;
	struct km_hostname_resolver *r;
	int fd;
	struct hn_poll *next;
};

/* A query in flight: the entry is found again by uid (it may be gone, or renamed). */
struct ticket {
	struct km_hostname_resolver *r;
	char *uid, *hostname;
};

static void entry_free(struct hn_entry *e)
{
	free(e->uid);
	free(e->hostname);
	km_workload_res_free(e->res);
	free(e);
}

/* ---- c-ares on the loop ------------------------------------------------------------------- */

static void on_poll(uv_poll_t *h, int status, int events)
{
	struct hn_poll *p = h->data;
	ares_socket_t fd = (ares_socket_t)p->fd;

	ares_process_fd(p->r->channel, status < 0 || (events & UV_READABLE) ? fd : ARES_SOCKET_BAD,
			status < 0 || (events & UV_WRITABLE) ? fd : ARES_SOCKET_BAD);
}

static void poll_closed(uv_handle_t *h)
{
	free(h->data);
}

static void sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
	struct km_hostname_resolver *r = data;
	struct hn_poll **at = &r->polls, *p;

	while (*at && (*at)->fd != (int)fd)
		at = &(*at)->next;
	p = *at;
	if (!readable && !writable) {
		if (p) {
			*at = p->next;
			uv_poll_stop(&p->h);
			uv_close((uv_handle_t *)&p->h, poll_closed);
		}
		return;
	}
	if (!p) {
		if (!(p = calloc(1, sizeof(*p))))
			return; /* its queries time out, and are tried again */
		p->r = r;
		p->fd = (int)fd;
		if (uv_poll_init_socket(r->loop, &p->h, fd) != 0) {
			free(p);
			return;
		}
		p->h.data = p;
		p->next = r->polls;
		r->polls = p;
	}
	uv_poll_start(&p->h, (readable ? UV_READABLE : 0) | (writable ? UV_WRITABLE : 0), on_poll);
}

/* ---- answers -------------------------------------------------------------------------------- */

static int same_addrs(const struct km_addr *a, size_t na, const struct km_addr *b, size_t nb)
{
	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++) {
		size_t j = 0;

		while (j < nb && memcmp(&a[i], &b[j], sizeof(*a)))
			j++;
		if (j == nb)
			return 0;
	}
	return 1;
}

/* The workload again, with these addresses. */
static void apply(struct km_hostname_resolver *r, struct hn_entry *e)
{
	struct km_workload_res *w = km_workload_res_with_addrs(e->res, e->addrs, e->n);

	if (!w) {
		km_warn("hostname %s of workload %s: out of memory applying its addresses", e->hostname,
			e->uid);
		return;
	}
	km_model_upsert_workload(r->model, w);
	km_model_flush(r->model);
	r->changes++;
	if (r->on_change)
		r->on_change(r->arg);
}

static void on_answer(void *arg, int status, int timeouts, struct ares_addrinfo *ai)
{
	struct ticket *t = arg;
	struct km_hostname_resolver *r = t->r;
	struct km_addr got[KM_RES_MAX_ADDRESSES];
	size_t n = 0;
	int ttl = KM_HOSTNAME_MAX_REFRESH_S;
	struct hn_entry *e;

	(void)timeouts;
	for (struct ares_addrinfo_node *a = ai ? ai->nodes : NULL; a && n < KM_RES_MAX_ADDRESSES;
	     a = a->ai_next) {
		struct km_addr x;
		const uint8_t *b;
		size_t len;

		if (a->ai_family == AF_INET) {
			b = (const uint8_t *)&((const struct sockaddr_in *)a->ai_addr)->sin_addr;
			len = 4;
		} else if (a->ai_family == AF_INET6) {
			b = (const uint8_t *)&((const struct sockaddr_in6 *)a->ai_addr)->sin6_addr;
			len = 16;
		} else {
			continue;
		}
		if (km_addr_from_bytes(b, len, &x) != 0 || (n && same_addrs(&x, 1, got, n)))
			continue;
		got[n++] = x;
		if (a->ai_ttl >= 0 && a->ai_ttl < ttl)
			ttl = a->ai_ttl;
	}
	if (ai)
		ares_freeaddrinfo(ai);
	if (!r->started)
		goto out; /* stopping: the channel is being destroyed */
	HASH_FIND_STR(r->entries, t->uid, e);
	if (!e || strcmp(e->hostname, t->hostname))
		goto out; /* gone, or renamed meanwhile (its new name is asked already) */
	e->in_flight = 0;
	r->resolutions++;
	if (status != ARES_SUCCESS || !n) {
		r->failures++;
		if (!e->failures++)
			km_warn("hostname %s of workload %s: %s; %s", e->hostname, e->uid,
				status != ARES_SUCCESS ? ares_strerror(status) : "no address",
				e->n ? "its last addresses are kept" : "it has no address yet");
		e->due_ms = uv_now(r->loop) + KM_HOSTNAME_RETRY_S * 1000u;
		goto out;
	}
	if (e->failures)
		km_info("hostname %s of workload %s resolves again", e->hostname, e->uid);
	e->failures = 0;
	/* before the TTL runs out */
	ttl = ttl - ttl / 10;
	if (ttl < KM_HOSTNAME_MIN_REFRESH_S)
		ttl = KM_HOSTNAME_MIN_REFRESH_S;
	e->due_ms = uv_now(r->loop) + (uint64_t)ttl * 1000u;
	if (!same_addrs(got, n, e->addrs, e->n)) {
		memcpy(e->addrs, got, n * sizeof(*got));
		e->n = n;
		km_debug("hostname %s of workload %s: %zu addresses", e->hostname, e->uid, n);
		apply(r, e);
	}
out:
	free(t->uid);
	free(t->hostname);
	free(t);
}

static void resolve(struct km_hostname_resolver *r, struct hn_entry *e)
{
	struct ares_addrinfo_hints hints = { .ai_family = AF_UNSPEC, .ai_flags = ARES_AI_NOSORT };
	struct ticket *t = calloc(1, sizeof(*t));

	if (!t || !(t->uid = strdup(e->uid)) || !(t->hostname = strdup(e->hostname))) {
		if (t)
			free(t->uid);
		free(t);
		e->due_ms = uv_now(r->loop) + KM_HOSTNAME_RETRY_S * 1000u;
		return;
	}
	t->r = r;
	e->in_flight = 1;
	ares_getaddrinfo(r->channel, e->hostname, NULL, &hints, on_answer, t);
}

static void on_tick(uv_timer_t *h)
{
	struct km_hostname_resolver *r = h->data;
	struct hn_entry *e, *tmp;
	uint64_t now = uv_now(r->loop);

	ares_process_fd(r->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD); /* its timeouts */
	HASH_ITER(hh, r->entries, e, tmp)
		if (!e->in_flight && e->due_ms <= now)
			resolve(r, e);
}

/* ---- the model's hooks ------------------------------------------------------------------------ */

static struct km_workload_res *on_put(void *arg, struct km_workload_res *res)
{
	struct km_hostname_resolver *r = arg;
	struct hn_entry *e;
	struct km_workload_res *copy, *out;
	char ubuf[KM_UID_BUF];
	const char *uid = km_workload_uid(res, ubuf);

	HASH_FIND_STR(r->entries, uid, e);
	if (!e) {
		if (r->n >= KM_HOSTNAME_MAX) {
			if (!r->over_limit++)
				km_warn("more than %d workloads named by hostname: %s is not resolved",
					KM_HOSTNAME_MAX, uid);
			return res;
		}
		if (!(e = calloc(1, sizeof(*e))) || !(e->uid = strdup(uid))) {
			free(e);
			return res;
		}
		HASH_ADD_KEYPTR(hh, r->entries, e->uid, strlen(e->uid), e);
		r->n++;
	}
	if (!e->hostname || strcmp(e->hostname, km_wl_hostname(res))) { /* new, or another name */
		char *h = strdup(km_wl_hostname(res));

		if (!h)
			return res;
		free(e->hostname);
		e->hostname = h;
		e->n = 0;
		e->failures = 0;
		e->in_flight = 0; /* an answer for the old name is ignored */
		e->due_ms = 0;    /* asked at the next tick, not now: c-ares may answer at once
				   * (an address, /etc/hosts), and its answer puts the workload
				   * into the model, which is inside this very put */
	}
	copy = km_workload_res_with_addrs(res, NULL, 0);
	if (copy) {
		km_workload_res_free(e->res);
		e->res = copy;
	}
	if (!e->n)
		return res; /* no address yet: kept as it came, until the answer */
	out = km_workload_res_with_addrs(res, e->addrs, e->n);
	if (!out)
		return res;
	km_workload_res_free(res);
	return out;
}

static void on_gone(void *arg, const char *uid)
{
	struct km_hostname_resolver *r = arg;
	struct hn_entry *e;

	HASH_FIND_STR(r->entries, uid, e);
	if (!e)
		return;
	HASH_DEL(r->entries, e);
	r->n--;
	entry_free(e); /* an answer in flight finds no entry */
}

/* ---- start, stop ---------------------------------------------------------------------------- */

int km_hostname_resolver_start(struct km_hostname_resolver *r, uv_loop_t *loop,
			       struct km_model *m, const char *server,
			       void (*on_change)(void *arg), void *arg, char *err, size_t errlen)
{
	struct ares_options o = { 0 };
	ares_channel ch;
	int rc;

	memset(r, 0, sizeof(*r));
	r->loop = loop;
	r->model = m;
	r->on_change = on_change;
	r->arg = arg;
	if ((rc = ares_library_init(ARES_LIB_INIT_ALL)) != ARES_SUCCESS) {
		snprintf(err, errlen, "c-ares: %s", ares_strerror(rc));
		return -1;
	}
	o.sock_state_cb = sock_state;
	o.sock_state_cb_data = r;
	if ((rc = ares_init_options(&ch, &o, ARES_OPT_SOCK_STATE_CB)) != ARES_SUCCESS) {
		snprintf(err, errlen, "c-ares: %s", ares_strerror(rc));
		return -1;
	}
	r->channel = ch;
	if (server && *server) {
		char csv[300];

		/* c-ares wants "[v6]:port" for IPv6 with a port, "v4:port" else */
		snprintf(csv, sizeof(csv), "%s", server);
		if ((rc = ares_set_servers_ports_csv(ch, csv)) != ARES_SUCCESS) {
			snprintf(err, errlen, "the hostname resolver's server '%s': %s", server,
				 ares_strerror(rc));
			ares_destroy(ch);
			return -1;
		}
	}
	uv_timer_init(loop, &r->tick);
	r->tick.data = r;
	uv_timer_start(&r->tick, on_tick, TICK_MS, TICK_MS);
	r->started = 1;
	km_model_watch_hostnames(m, on_put, on_gone, r);
	return 0;
}

void km_hostname_resolver_stop(struct km_hostname_resolver *r)
{
	struct hn_entry *e, *tmp;

	if (!r->started)
		return;
	km_model_watch_hostnames(r->model, NULL, NULL, NULL);
	uv_close((uv_handle_t *)&r->tick, NULL);
	r->started = 0;
	ares_destroy(r->channel); /* calls on_answer for what is in flight (ignored) and closes its
				   * sockets: sock_state closes their polls */
	HASH_ITER(hh, r->entries, e, tmp) {
		HASH_DEL(r->entries, e);
		entry_free(e);
	}
	r->n = 0;
	ares_library_cleanup();
}
