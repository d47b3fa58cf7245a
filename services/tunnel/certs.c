/* certs.c — see certs.h. */
#include "services/tunnel/certs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "services/tunnel/client_tls.h"
#include "services/tunnel/server_tls.h"
#include "shared/backoff.h"
#include "shared/log.h"
#include "shared/sorted.h"

#define MAX_INFLIGHT_DEFAULT 8u

static uint32_t rnd(void)
{
	static uint32_t s;

	if (!s)
		s = (uint32_t)time(NULL) ^ (uint32_t)uv_os_getpid() ^ 0x9e3779b9u;
	s ^= s << 13;
	s ^= s >> 17;
	s ^= s << 5;
	return s;
}

int64_t km_certs_renew_at(int64_t received, int64_t not_after, uint32_t r)
{
	int64_t life = not_after - received;

	if (life <= 2)
		return received + 1;
	return received + life / 2 - (int64_t)((uint64_t)(life / 10) * r / UINT32_MAX);
}

enum km_cert_state km_cert_state(const struct km_cert *e, int64_t now)
{
	if (!e->has_cert)
		return e->call || e->queued || !e->failures ? KM_CERT_PENDING : KM_CERT_FAILED;
	if (now >= e->cert.not_after)
		return KM_CERT_EXPIRED;
	return e->call || e->queued ? KM_CERT_RENEWING : KM_CERT_VALID;
}

const char *km_cert_state_name(enum km_cert_state s)
{
	static const char *const names[] = { "pending", "failed", "valid", "renewing", "expired" };

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

void km_certs_init(struct km_certs *c, uv_loop_t *loop, const struct km_certs_config *cfg)
{
	memset(c, 0, sizeof(*c));
	c->loop = loop;
	c->cfg = *cfg;
	if (!c->cfg.max_inflight)
		c->cfg.max_inflight = MAX_INFLIGHT_DEFAULT;
}

static const char *cert_identity(const void *e)
{
	return (*(struct km_cert *const *)e)->identity;
}

static size_t find(const struct km_certs *c, const char *identity, int *hit)
{
	return km_sorted_find(c->by_id, c->n, sizeof(*c->by_id), identity, cert_identity, hit);
}

static void maybe_free(struct km_cert *e)
{
	struct km_certs *c = e->owner;

	if (e->handles)
		return;
	km_workload_cert_free(&e->cert);
	free(e);
	if (c->stopping && !c->n && !c->inflight && c->on_stopped) {
		void (*cb)(struct km_certs *) = c->on_stopped;

		c->on_stopped = NULL;
		cb(c);
	}
}

static void on_timer_closed(uv_handle_t *h)
{
	struct km_cert *e = h->data;

	e->handles--;
	maybe_free(e);
}

static void start_call(struct km_cert *e);

/* Calls that waited for a slot, in order, as slots free up. */
static void run_queue(struct km_certs *c)
{
	while (c->qhead && c->inflight < c->cfg.max_inflight && !c->stopping) {
		struct km_cert *e = c->qhead;

		c->qhead = e->qnext;
		if (!c->qhead)
			c->qtail = NULL;
		e->qnext = NULL;
		e->queued = 0;
		start_call(e);
	}
}

static void on_due(uv_timer_t *t);

static void plan_in(struct km_cert *e, uint64_t ms)
{
	e->next_at = (int64_t)time(NULL) + (int64_t)((ms + 999) / 1000);
	uv_timer_start(&e->timer, on_due, ms, 0);
}

/* Ask now, or when a slot frees up. */
static void ask(struct km_cert *e)
{
	struct km_certs *c = e->owner;

	if (e->call || e->queued || e->dropped || c->stopping)
		return;
	uv_timer_stop(&e->timer);
	e->next_at = 0;
	if (c->inflight < c->cfg.max_inflight) {
		start_call(e);
		return;
	}
	e->queued = 1;
	if (c->qtail)
		c->qtail->qnext = e;
	else
		c->qhead = e;
	c->qtail = e;
}

static void on_due(uv_timer_t *t)
{
	ask(t->data);
}

static void failed(struct km_cert *e, const char *why)
{
	uint64_t delay = km_backoff_delay(&e->backoff_ms, KM_CERTS_RETRY_MAX_MS, rnd());
	int64_t now = (int64_t)time(NULL);

	e->failures++;
	e->owner->stats.failed++;
	snprintf(e->last_error, sizeof(e->last_error), "%s", why);
	/* never later than the held certificate's expiry */
	if (e->has_cert && e->cert.not_after > now &&
	    (uint64_t)(e->cert.not_after - now) * 1000u < delay)
		delay = (uint64_t)(e->cert.not_after - now) * 1000u;
	km_warn("certificate for %s: %s; asking again in %llu ms%s", e->identity, why,
		(unsigned long long)delay, e->has_cert ? " (the current one is served meanwhile)" : "");
	plan_in(e, delay);
}

static void on_call_done(struct km_ca_call *call, int ok, const char *why)
{
	struct km_cert *e = call->data;
	struct km_certs *c = e->owner;

	e->call = NULL;
	e->handles--;
	c->inflight--;
	if (e->dropped || c->stopping) {
		km_workload_cert_free(&call->cert); /* nothing kept */
	} else if (!ok) {
		failed(e, why);
	} else {
		int renewal = e->has_cert;
		int64_t at;

		km_workload_cert_free(&e->cert);
		km_server_tls_ctx_free(e->server_ctx); /* new sessions take the new certificate */
		e->server_ctx = NULL;
		km_client_tls_ctx_free(e->client_ctx);
		e->client_ctx = NULL;
		km_ca_call_take(call, &e->cert);
		e->has_cert = 1;
		e->fetches++;
		e->backoff_ms = KM_CERTS_RETRY_MIN_MS;
		e->last_error[0] = '\0';
		if (renewal)
			c->stats.renewed++;
		else
			c->stats.fetched++;
		at = km_certs_renew_at((int64_t)time(NULL), e->cert.not_after, rnd());
		km_info("certificate for %s %s: serial %s, valid %lld s more; renewed in %lld s",
			e->identity, renewal ? "renewed" : "issued", e->cert.serial,
			(long long)(e->cert.not_after - (int64_t)time(NULL)),
			(long long)(at - (int64_t)time(NULL)));
		plan_in(e, at > (int64_t)time(NULL) ? (uint64_t)(at - (int64_t)time(NULL)) * 1000u : 0);
	}
	free(call);
	maybe_free(e);
	run_queue(c);
}

static void start_call(struct km_cert *e)
{
	struct km_certs *c = e->owner;
	struct km_ca_call *call = calloc(1, sizeof(*call));
	struct km_ca_call_config cfg = {
		.grpc = c->cfg.grpc,
		.identity = e->identity,
		.impersonate = c->cfg.impersonate,
		.ttl_seconds = c->cfg.ttl_seconds,
		.timeout_ms = c->cfg.timeout_ms,
	};

	if (!call) {
		failed(e, "out of memory");
		return;
	}
	call->data = e;
	if (km_ca_call_start(call, c->loop, &cfg, on_call_done) != 0) {
		char why[sizeof(call->why)];

		snprintf(why, sizeof(why), "%s", call->why);
		free(call);
		failed(e, why);
		return;
	}
	e->call = call;
	e->handles++;
	c->inflight++;
	km_debug("certificate for %s: asking istiod's CA", e->identity);
}

int km_certs_want(struct km_certs *c, const char *identity)
{
	int hit;
	size_t i = find(c, identity, &hit);
	struct km_cert *e;

	if (hit || c->stopping)
		return 0;
	if (strlen(identity) > KM_CSR_MAX_ID) {
		km_error("identity %.64s...: longer than %d bytes", identity, KM_CSR_MAX_ID);
		return -1;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct km_cert **n = realloc(c->by_id, cap * sizeof(*n));

		if (!n)
			goto oom;
		c->by_id = n;
		c->cap = cap;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		goto oom;
	snprintf(e->identity, sizeof(e->identity), "%s", identity);
	e->owner = c;
	e->backoff_ms = KM_CERTS_RETRY_MIN_MS;
	uv_timer_init(c->loop, &e->timer);
	e->timer.data = e;
	e->handles = 1;
	memmove(&c->by_id[i + 1], &c->by_id[i], (c->n - i) * sizeof(c->by_id[0]));
	c->by_id[i] = e;
	c->n++;
	ask(e);
	return 0;
oom:
	km_error("certificate for %s: out of memory", identity);
	return -1;
}

static void unqueue(struct km_certs *c, struct km_cert *e)
{
	struct km_cert **pp = &c->qhead, *prev = NULL;

	while (*pp && *pp != e) {
		prev = *pp;
		pp = &(*pp)->qnext;
	}
	if (!*pp)
		return;
	*pp = e->qnext;
	if (c->qtail == e)
		c->qtail = prev;
	e->qnext = NULL;
	e->queued = 0;
}

static void drop_at(struct km_certs *c, size_t i)
{
	struct km_cert *e = c->by_id[i];

	memmove(&c->by_id[i], &c->by_id[i + 1], (c->n - i - 1) * sizeof(c->by_id[0]));
	c->n--;
	e->dropped = 1;
	unqueue(c, e);
	km_workload_cert_free(&e->cert); /* the key is wiped now, whatever is still closing */
	km_server_tls_ctx_free(e->server_ctx);
	e->server_ctx = NULL;
	km_client_tls_ctx_free(e->client_ctx);
	e->client_ctx = NULL;
	e->has_cert = 0;
	c->stats.dropped++;
	if (e->call)
		km_ca_call_cancel(e->call);
	uv_close((uv_handle_t *)&e->timer, on_timer_closed);
}

void km_certs_drop(struct km_certs *c, const char *identity)
{
	int hit;
	size_t i = find(c, identity, &hit);

	if (!hit)
		return;
	km_info("certificate for %s dropped: its last pod left the node", identity);
	drop_at(c, i);
}

/* The identity's entry if it holds a certificate in date, else NULL with why. */
static struct km_cert *in_date(struct km_certs *c, const char *identity, char *why, size_t whylen)
{
	int hit;
	size_t i = find(c, identity, &hit);
	struct km_cert *e = hit ? c->by_id[i] : NULL;

	if (!e || !e->has_cert || e->cert.not_after <= (int64_t)time(NULL)) {
		snprintf(why, whylen, "no certificate in date for %.300s (%s)", identity,
			 e ? km_cert_state_name(km_cert_state(e, (int64_t)time(NULL))) : "no pod");
		return NULL;
	}
	return e;
}

void *km_certs_server_ctx(struct km_certs *c, const char *identity, char *why, size_t whylen)
{
	struct km_cert *e = in_date(c, identity, why, whylen);

	if (e && !e->server_ctx)
		e->server_ctx = km_server_tls_ctx(&e->cert, why, whylen);
	return e ? e->server_ctx : NULL;
}

void *km_certs_client_ctx(struct km_certs *c, const char *identity, char *why, size_t whylen)
{
	struct km_cert *e = in_date(c, identity, why, whylen);

	if (e && !e->client_ctx)
		e->client_ctx = km_client_tls_ctx(&e->cert, why, whylen);
	return e ? e->client_ctx : NULL;
}

const struct km_workload_cert *km_certs_get(const struct km_certs *c, const char *identity)
{
	int hit;
	size_t i = find(c, identity, &hit);

	if (!hit || !c->by_id[i]->has_cert || c->by_id[i]->cert.not_after <= (int64_t)time(NULL))
		return NULL;
	return &c->by_id[i]->cert;
}

static json_t *utc(int64_t t)
{
	struct tm tm;
	time_t tt = (time_t)t;
	char buf[32];

	if (!t || !gmtime_r(&tt, &tm))
		return json_null();
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return json_string(buf);
}

json_t *km_certs_dump(const struct km_certs *c)
{
	json_t *list = json_array();
	int64_t now = (int64_t)time(NULL);

	for (size_t i = 0; i < c->n; i++) {
		const struct km_cert *e = c->by_id[i];
		json_t *o = json_object();

		json_object_set_new(o, "identity", json_string(e->identity));
		json_object_set_new(o, "state", json_string(km_cert_state_name(km_cert_state(e, now))));
		json_object_set_new(o, "serial", e->has_cert ? json_string(e->cert.serial) : json_null());
		json_object_set_new(o, "not_before", e->has_cert ? utc(e->cert.not_before) : json_null());
		json_object_set_new(o, "not_after", e->has_cert ? utc(e->cert.not_after) : json_null());
		json_object_set_new(o, "next", utc(e->next_at));
		json_object_set_new(o, "fetches", json_integer((json_int_t)e->fetches));
		json_object_set_new(o, "failures", json_integer((json_int_t)e->failures));
		json_object_set_new(o, "last_error", json_string(e->last_error));
		json_array_append_new(list, o);
	}
	return list;
}

void km_certs_stop(struct km_certs *c, void (*on_stopped)(struct km_certs *c))
{
	c->on_stopped = on_stopped;
	c->stopping = 1;
	c->qhead = c->qtail = NULL;
	while (c->n)
		drop_at(c, c->n - 1);
	free(c->by_id);
	c->by_id = NULL;
	c->cap = 0;
	if (!c->inflight && c->on_stopped) {
		/* the timers close in the loop's next turn; nothing waits on them but the loop */
		void (*cb)(struct km_certs *) = c->on_stopped;

		c->on_stopped = NULL;
		cb(c);
	}
}
