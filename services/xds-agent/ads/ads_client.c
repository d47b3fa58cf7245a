/* ads_client.c — Delta ADS session with istiod (see ads_client.h). */
#include "services/xds-agent/ads/ads_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/authz/authz_compile.h"
#include "services/xds-agent/ads/ads_demand.h"
#include "services/xds-agent/ads/xds_apply.h"
#include "shared/backoff.h"
#include "shared/latency.h"
#include "shared/log.h"
#include "shared/msgbuf.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 15000
#define FAST_RECONNECT_MS 10
#define SLICE_RESOURCES 1024 /* resources applied per loop iteration (~2 ms) */
/* Below this a response is applied once whole: it arrives in a few reads anyway, and only
 * buffers this large give their applied pages back (shared/msgbuf.c). */
#define STREAM_FROM (1u << 20)
/* Whether to stream is decided by the first resource, if it comes within this many bytes. */
#define STREAM_DECIDE (64u << 10)
#define BACKLOG_RECHECK_MS 50 /* a paused job looks again this often */

/* ---- versions: kept on the model's and the policy store's entries ------------------------- */

static void model_set_version(void *store, const char *name, const char *version)
{
	km_model_set_version(store, name, version);
}

static size_t model_each_version(const void *store, km_version_cb cb, void *arg)
{
	return km_model_each_version(store, cb, arg);
}

static void policy_set_version(void *store, const char *name, const char *version)
{
	km_policy_store_set_version(store, name, version);
}

static size_t policy_each_version(const void *store, km_version_cb cb, void *arg)
{
	return km_policy_store_each_version(store, cb, arg);
}

static size_t model_mark(void *store)
{
	return km_model_mark_unconfirmed(store);
}

static size_t model_sweep(void *store)
{
	size_t n = km_model_sweep_unconfirmed(store);

	km_model_flush(store);
	return n;
}

static size_t policy_mark(void *store)
{
	return km_policy_store_mark_unconfirmed(store);
}

static size_t policy_sweep(void *store)
{
	struct km_policy_store *ps = store;
	size_t n = km_policy_store_sweep_unconfirmed(ps);

	if (ps->authz) {
		km_authz_flush(ps->authz);
		km_oplist_settle(ps->authz->out);
	}
	return n;
}

size_t km_ads_versions_held(const struct km_ads_type *t)
{
	return t->each_version ? t->each_version(t->store, NULL, NULL) : 0;
}

/* The entries of a first request: names and version texts are copied into one block (a store
 * may write either for the call only: km_version_cb; a kept workload's uid is written when it
 * keeps it split). */
struct version_list {
	Kmesh__Xds__DeltaDiscoveryRequest__InitialResourceVersionsEntry *entries, **ptrs;
	size_t n, cap;
	char *text;
	size_t text_used, text_cap;
};

static void count_version_text(void *arg, const char *name, const char *version)
{
	*(size_t *)arg += strlen(name) + 1 + strlen(version ? version : "") + 1;
}

static void collect_version(void *arg, const char *name, const char *version)
{
	struct version_list *l = arg;
	size_t k = strlen(name) + 1, v = strlen(version ? version : "") + 1;

	if (l->n == l->cap || l->text_cap - l->text_used < k + v)
		return; /* counted beforehand; nothing changes in between */
	kmesh__xds__delta_discovery_request__initial_resource_versions_entry__init(&l->entries[l->n]);
	l->entries[l->n].key = memcpy(l->text + l->text_used, name, k);
	l->text_used += k;
	l->entries[l->n].value = memcpy(l->text + l->text_used, version ? version : "", v);
	l->text_used += v;
	l->ptrs[l->n] = &l->entries[l->n];
	l->n++;
}

/* The bytes one initial_resource_versions entry adds to a request, at most: the map entry
 * (field 5, length-delimited) holding key (1) and value (2). */
static size_t varint_len(size_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static void add_entry_size(void *arg, const char *name, const char *version)
{
	size_t k = strlen(name), v = strlen(version ? version : "");
	size_t entry = 1 + varint_len(k) + k + 1 + varint_len(v) + v;

	*(size_t *)arg += 1 + varint_len(entry) + entry;
}

static size_t versions_size(const struct km_ads_type *t)
{
	size_t n = 0;

	if (t->each_version)
		t->each_version(t->store, add_entry_size, &n);
	return n;
}

/* "Address" from its type URL, for logs */
static const char *type_name(const struct km_ads_type *t)
{
	const char *dot = strrchr(t->type_url, '.');

	return dot ? dot + 1 : t->type_url;
}

/* ---- requests ------------------------------------------------------------------------------ */

void km_ads_node_id(const struct km_ads_node *n, char *out, size_t len)
{
	snprintf(out, len, "ztunnel~%s~%s.%s~%s.svc.cluster.local", n->instance_ip, n->pod_name,
		 n->pod_namespace, n->pod_namespace);
}

/* Node metadata: every value a string, as istiod decodes it into typed Go fields. */
struct meta {
	Kmesh__Xds__Struct s;
	Kmesh__Xds__Struct__FieldsEntry entries[8];
	Kmesh__Xds__Struct__FieldsEntry *ptrs[8];
	Kmesh__Xds__Value values[8];
};

static void meta_add(struct meta *m, const char *key, const char *value)
{
	size_t i = m->s.n_fields;

	if (!value || !*value || i == 8)
		return;
	kmesh__xds__struct__fields_entry__init(&m->entries[i]);
	kmesh__xds__value__init(&m->values[i]);
	m->values[i].kind_case = KMESH__XDS__VALUE__KIND_STRING_VALUE;
	m->values[i].string_value = (char *)value;
	m->entries[i].key = (char *)key;
	m->entries[i].value = &m->values[i];
	m->ptrs[i] = &m->entries[i];
	m->s.n_fields++;
}

uint8_t *km_ads_build_request(struct km_ads_client *c, struct km_ads_type *t, int initial,
			      const char *nonce, const char *error, size_t *len)
{
	Kmesh__Xds__DeltaDiscoveryRequest req = KMESH__XDS__DELTA_DISCOVERY_REQUEST__INIT;
	Kmesh__Xds__Node node = KMESH__XDS__NODE__INIT;
	Kmesh__Xds__Status status = KMESH__XDS__STATUS__INIT;
	struct version_list versions = { 0 };
	struct meta meta;
	uint8_t *buf;

	static char *everything[] = { "*" };
	char **sub = NULL;

	req.type_url = (char *)t->type_url;
	if (initial && c->on_demand && t == &c->address) {
		/* istio's convention for "subscribe to nothing" (istio-wire §3.8), then the demanded
		 * keys that fit (km_ads_initial_request): istiod answers them with what they name
		 * now; what is held is named below, which subscribes to it again */
		size_t k = c->demand_initial < c->demand.n ? c->demand_initial : c->demand.n;

		if (!(sub = malloc((k + 1) * sizeof(*sub))))
			return NULL;
		sub[0] = everything[0];
		if (k)
			memcpy(sub + 1, c->demand.keys, k * sizeof(*sub));
		req.n_resource_names_subscribe = k + 1;
		req.resource_names_subscribe = sub;
		req.n_resource_names_unsubscribe = 1;
		req.resource_names_unsubscribe = everything;
	}
	if (initial) {
		kmesh__xds__struct__init(&meta.s);
		meta.s.fields = meta.ptrs;
		meta_add(&meta, "NAME", c->node.pod_name);
		meta_add(&meta, "NAMESPACE", c->node.pod_namespace);
		meta_add(&meta, "INSTANCE_IPS", c->node.instance_ip);
		meta_add(&meta, "NODE_NAME", c->node.node_name);
		meta_add(&meta, "CLUSTER_ID", c->node.cluster_id);
		meta_add(&meta, "MESH_ID", c->node.mesh_id);
		meta_add(&meta, "NETWORK", c->node.network);
		meta_add(&meta, "SERVICE_ACCOUNT", c->node.service_account);
		node.id = c->node_id;
		node.metadata = &meta.s;
		node.user_agent_name = "kmesh-xds-agent";
		req.node = &node;
		/* Everything held, with its version, so istiod skips what is unchanged and names
		 * what went away while we were disconnected (unless withheld: too many). */
		versions.cap = t->withheld ? 0 : km_ads_versions_held(t);
		if (versions.cap && t->each_version)
			t->each_version(t->store, count_version_text, &versions.text_cap);
		versions.entries = calloc(versions.cap + 1, sizeof(*versions.entries));
		versions.ptrs = calloc(versions.cap + 1, sizeof(*versions.ptrs));
		versions.text = malloc(versions.text_cap + 1);
		if (!versions.entries || !versions.ptrs || !versions.text) {
			free(versions.entries);
			free(versions.ptrs);
			free(versions.text);
			free(sub);
			return NULL;
		}
		if (t->each_version && !t->withheld)
			t->each_version(t->store, collect_version, &versions);
		req.n_initial_resource_versions = versions.n;
		req.initial_resource_versions = versions.ptrs;
	}
	if (nonce)
		req.response_nonce = (char *)nonce;
	if (error) {
		status.code = 3; /* INVALID_ARGUMENT */
		status.message = (char *)error;
		req.error_detail = &status;
	}
	*len = kmesh__xds__delta_discovery_request__get_packed_size(&req);
	buf = malloc(*len ? *len : 1);
	if (buf)
		kmesh__xds__delta_discovery_request__pack(&req, buf);
	free(versions.entries);
	free(versions.ptrs);
	free(versions.text);
	free(sub);
	return buf;
}

uint8_t *km_ads_build_subscription(struct km_ads_client *c, struct km_ads_type *t,
				   char *const *sub, size_t n_sub, char *const *unsub,
				   size_t n_unsub, size_t *len)
{
	Kmesh__Xds__DeltaDiscoveryRequest req = KMESH__XDS__DELTA_DISCOVERY_REQUEST__INIT;
	uint8_t *buf;

	(void)c;
	req.type_url = (char *)t->type_url;
	req.n_resource_names_subscribe = n_sub;
	req.resource_names_subscribe = (char **)sub;
	req.n_resource_names_unsubscribe = n_unsub;
	req.resource_names_unsubscribe = (char **)unsub;
	*len = kmesh__xds__delta_discovery_request__get_packed_size(&req);
	buf = malloc(*len ? *len : 1);
	if (buf)
		kmesh__xds__delta_discovery_request__pack(&req, buf);
	return buf;
}

/* Past the limit, versions are withheld altogether rather than in part: istiod's answer to a
 * partial list would be the whole state less what the list showed unchanged, and telling what
 * went from that needs the list kept until the answer; with none, the answer is everything istiod
 * has, and what it does not name is gone (docs/decisions.md). */
uint8_t *km_ads_initial_request(struct km_ads_client *c, struct km_ads_type *t, size_t *len)
{
	size_t base, need;
	uint8_t *buf;

	t->withheld = 1; /* the request without versions (or demanded keys), measured */
	if (t == &c->address)
		c->demand_initial = 0;
	buf = km_ads_build_request(c, t, 1, NULL, NULL, &base);
	free(buf);
	need = base + versions_size(t);
	t->withheld = need > c->max_initial;
	if (t->withheld) {
		size_t marked = t->mark ? t->mark(t->store) : 0;

		t->withholds++;
		km_warn("%zu %s versions held: too many to name in the first request (%zu bytes, over "
			"the limit of %zu, --xds-max-initial-request); naming none: istiod sends its "
			"whole state, and what it does not name of the %zu held is removed after it",
			km_ads_versions_held(t), type_name(t), need, c->max_initial, marked);
	}
	if (c->on_demand && t == &c->address) { /* the demanded keys that fit go along */
		size_t room = c->max_initial - (t->withheld ? base : need);

		while (c->demand_initial < c->demand.n) {
			size_t k = strlen(c->demand.keys[c->demand_initial]) + 3; /* tag, length */

			if (k > room)
				break;
			room -= k;
			c->demand_initial++;
		}
	}
	return km_ads_build_request(c, t, 1, NULL, NULL, len);
}

size_t km_ads_sweep_after_whole_state(struct km_ads_client *c, struct km_ads_type *t,
				      const struct km_xds_result *res)
{
	size_t n;

	(void)c;
	if (!t->withheld)
		return 0;
	t->withheld = 0;
	if (res->unnamed) {
		km_warn("istiod's whole %s state came with %zu resources that could not be named: "
			"nothing is removed this time", type_name(t), res->unnamed);
		return 0;
	}
	n = t->sweep ? t->sweep(t->store) : 0;
	t->swept += n;
	km_info("istiod's whole %s state applied: removed %zu %s it no longer has", type_name(t), n,
		strcmp(t->type_url, KM_TYPE_ADDRESS) == 0 ? "workloads and services" : "policies");
	return n;
}

static int send_request(struct km_ads_client *c, struct km_ads_type *t, int initial,
			const char *nonce, const char *error)
{
	size_t len;
	uint8_t *buf = initial ? km_ads_initial_request(c, t, &len)
			       : km_ads_build_request(c, t, 0, nonce, error, &len);
	int rc;

	if (!buf)
		return -1;
	rc = km_grpc_stream_send(&c->stream, buf, len);
	free(buf);
	return rc;
}

/* ---- stream lifecycle ---------------------------------------------------------------------- */

static void connect_now(struct km_ads_client *c);
static void work_abandon_queue(struct km_ads_client *c);
static void on_recheck(uv_timer_t *t);

static void on_retry(uv_timer_t *t)
{
	connect_now(t->data);
}

static void schedule_reconnect(struct km_ads_client *c)
{
	uint64_t delay;

	if (c->stopping)
		return;
	if (c->fast_reconnect) {
		delay = FAST_RECONNECT_MS + (uint64_t)(rand() % 20);
		c->fast_reconnect = 0;
	} else {
		delay = km_backoff_delay(&c->backoff_ms, BACKOFF_MAX_MS, (uint32_t)rand());
	}
	km_info("reconnecting to istiod in %llu ms", (unsigned long long)delay);
	uv_timer_start(&c->retry, on_retry, delay, 0);
}

static void on_stream_closed(struct km_grpc_stream *g)
{
	struct km_ads_client *c = g->data;

	c->stream_open = 0;
	schedule_reconnect(c);
}

static void on_open(struct km_grpc_stream *g)
{
	struct km_ads_client *c = g->data;

	c->connected = 1;
	c->connects++;
	c->address.synced = c->authz.synced = 0;
	km_info("ADS stream open; subscribing with %zu Address and %zu Authorization versions held",
		km_ads_versions_held(&c->address), km_ads_versions_held(&c->authz));
	if (send_request(c, &c->address, 1, NULL, NULL) != 0 ||
	    send_request(c, &c->authz, 1, NULL, NULL) != 0) {
		km_grpc_stream_close(g);
		return;
	}
	if (c->on_demand)
		km_ads_demand_opened(c);
}

/* istiod refused the credentials (istio-wire §4.3): no valid token is UNAUTHENTICATED, a token
 * whose identity does not match the node's namespace or service account is PERMISSION_DENIED.
 * Either way the fix is in the token file or the flags: name them. Returns 0 for other ends. */
static int log_auth_refusal(const struct km_ads_client *c, int status, const char *message)
{
	const char *file = c->grpc_cfg.token_file;

	if (status == KM_GRPC_UNAUTHENTICATED && file)
		km_error("istiod rejected the token read from %s (grpc-status 16 UNAUTHENTICATED: %s); "
			 "the file is read again at the next connection", file, message);
	else if (status == KM_GRPC_UNAUTHENTICATED)
		km_error("istiod wants a token and none is sent: --xds-token-file is empty "
			 "(grpc-status 16 UNAUTHENTICATED: %s)", message);
	else if (status == KM_GRPC_PERMISSION_DENIED)
		km_error("istiod refused this agent's identity (grpc-status 7 PERMISSION_DENIED: %s): the "
			 "token read from %s must be for namespace '%s' (--pod-namespace) and service "
			 "account '%s' (--service-account)", message, file ? file : "(none)",
			 c->node.pod_namespace ? c->node.pod_namespace : "",
			 c->node.service_account ? c->node.service_account : "");
	else
		return 0;
	return 1;
}

static void on_end(struct km_grpc_stream *g, int status, const char *message, int goaway)
{
	struct km_ads_client *c = g->data;

	snprintf(c->last_error, sizeof(c->last_error), "grpc-status %d: %s", status, message);
	if (c->connected)
		c->disconnects++;
	c->connected = 0;
	work_abandon_queue(c);
	/* Connection-age rotation (GOAWAY) and ordinary server-side ends are not failures. */
	c->fast_reconnect = goaway || status == KM_GRPC_OK;
	if (!c->stopping && !log_auth_refusal(c, status, message))
		km_log(c->fast_reconnect ? KM_LOG_INFO : KM_LOG_WARN, "ADS stream ended: %s%s",
		       c->last_error, goaway ? " (GOAWAY)" : "");
	km_grpc_stream_close(g);
}

static void on_accepted(void *arg, const char *name, const char *version)
{
	struct km_ads_type *t = arg;

	if (name && *name)
		t->set_version(t->store, name, version);
}

static void pending_free(struct km_ads_pending *p)
{
	if (p) {
		if (!p->borrowed)
			km_msgbuf_free(p->msg, p->len);
		free(p);
	}
}

/* The job ends without the Address bookkeeping of job_finish: what was applied is flushed to the
 * map writer, the response dropped. */
static void job_end_unanswered(struct km_ads_client *c)
{
	km_model_flush(c->model);
	km_response_view_free(&c->job.v);
	pending_free(c->job.p);
	memset(&c->job, 0, sizeof(c->job));
	if (c->on_applied)
		c->on_applied(c->arg);
}

/* The job ends before its response has arrived whole (the stream ended, or what arrived is not
 * a response): the resources applied stay (each was whole and valid); nothing is answered and
 * nothing swept, as the response was never complete. */
static void job_drop_partial(struct km_ads_client *c)
{
	struct km_ads_job *j = &c->job;

	km_info("a response of %zu bytes ended at %zu: the %zu resources that had arrived are "
		"applied, the rest is sent again on the next stream",
		j->v.total, j->v.len, j->res.applied + j->res.rejected);
	job_end_unanswered(c);
}

/* The streamed job's response turned out not to be an Address response although its first
 * resource was an Address (the type_url comes after the resources on the wire): what was
 * applied stays, the response is NACKed on its own type. */
static void job_finish_mistyped(struct km_ads_client *c)
{
	struct km_ads_job *j = &c->job;
	struct km_ads_type other = { .type_url = j->v.type_url };

	km_error("istiod sent Address resources in a response of type %.200s: %zu applied; "
		 "NACKing it", j->v.type_url, j->res.applied);
	if (c->connected)
		send_request(c, &other, 0, j->v.nonce, "Address resources in a response of another type");
	job_end_unanswered(c);
}

/* The job's response is applied: removals, flush, then ACK or NACK on the stream it came on. */
static void job_finish(struct km_ads_client *c)
{
	struct km_ads_job *j = &c->job;
	struct km_ads_type *t = &c->address;

	if (strcmp(j->v.type_url, KM_TYPE_ADDRESS) != 0) {
		job_finish_mistyped(c);
		return;
	}
	if (!t->synced) /* the stream's first: if versions were withheld, the whole state */
		km_ads_sweep_after_whole_state(c, t, &j->res);
	km_xds_apply_address_end(c->model, &j->v, &j->res);
	t->responses++;
	snprintf(t->last_nonce, sizeof(t->last_nonce), "%s", j->v.nonce);
	if (j->res.rejected) {
		t->nacks++;
		snprintf(t->last_nack, sizeof(t->last_nack), "%s", j->res.error);
	} else {
		t->acks++;
	}
	/* a response whose stream has ended is applied but not answered: the new stream's
	 * initial_resource_versions tell istiod what is held */
	if (c->connected)
		send_request(c, t, 0, j->v.nonce, j->res.rejected ? j->res.error : NULL);
	if (!t->synced)
		km_info("first Address response on this stream: %zu applied, %zu rejected, %zu removed",
			j->res.applied, j->res.rejected, j->res.removed);
	else
		km_debug("Address response %s: %zu applied, %zu rejected, %zu removed", j->v.nonce,
			 j->res.applied, j->res.rejected, j->res.removed);
	t->synced = 1;
	c->backoff_ms = BACKOFF_MIN_MS; /* a working stream resets the backoff */
	c->last_response_us = j->p->received_us;
	km_response_view_free(&j->v);
	pending_free(j->p);
	memset(j, 0, sizeof(*j));
	if (c->on_applied)
		c->on_applied(c->arg);
}

/* An Authorization response (small: applied at once) or an unsubscribed type. */
static void apply_other(struct km_ads_client *c, struct km_response_view *v)
{
	struct km_ads_type *t = &c->authz;
	struct km_xds_result res;

	if (strcmp(v->type_url, KM_TYPE_AUTHORIZATION) != 0) {
		struct km_ads_type other = { .type_url = v->type_url };

		km_warn("istiod sent an unsubscribed type %.200s; NACKing it", v->type_url);
		if (c->connected)
			send_request(c, &other, 0, v->nonce, "type not subscribed");
		return;
	}
	km_xds_apply_authorization(c->policies, v, on_accepted, t, &res);
	if (!t->synced)
		km_ads_sweep_after_whole_state(c, t, &res);
	t->responses++;
	snprintf(t->last_nonce, sizeof(t->last_nonce), "%s", v->nonce);
	if (res.rejected) {
		t->nacks++;
		snprintf(t->last_nack, sizeof(t->last_nack), "%s", res.error);
	} else {
		t->acks++;
	}
	if (c->connected)
		send_request(c, t, 0, v->nonce, res.rejected ? res.error : NULL);
	km_log(t->synced ? KM_LOG_DEBUG : KM_LOG_INFO,
	       "Authorization response %s: %zu applied, %zu rejected, %zu removed", v->nonce,
	       res.applied, res.rejected, res.removed);
	if (c->on_demand && c->policies->count && !c->warned_policies)
		km_warn("on demand with %zu authorization policies: a caller this node has not "
			"demanded has no identity here, so a DENY naming it does not match and an "
			"ALLOW naming it refuses it; demand the callers' services (kmeshctl demand) or "
			"run without --xds-on-demand (docs/xds-agent.md, On demand)", c->policies->count);
	c->warned_policies = c->policies->count > 0; /* again once they are gone and come back */
	t->synced = 1;
	if (c->on_applied)
		c->on_applied(c->arg); /* the compiled policies go to the map writer */
}

static void stream_malformed(struct km_ads_client *c, size_t len);

/* Take queued responses until one is an Address response to apply in slices. */
static void job_start_next(struct km_ads_client *c)
{
	while (!c->job.active && c->queue_head) {
		struct km_ads_pending *p = c->queue_head;
		struct km_response_view v;

		c->queue_head = p->next;
		if (!c->queue_head)
			c->queue_tail = NULL;
		c->queued_bytes -= p->len;
		if (km_response_view_init(&v, p->msg, p->len) != 0) {
			stream_malformed(c, p->len);
			pending_free(p);
			continue;
		}
		if (strcmp(v.type_url, KM_TYPE_ADDRESS) != 0) {
			apply_other(c, &v);
			km_response_view_free(&v);
			pending_free(p);
			continue;
		}
		c->job.active = 1;
		c->job.p = p;
		c->job.v = v;
		memset(&c->job.res, 0, sizeof(c->job.res));
	}
}

/* One slice of the job; the next response when it is done. Returns 1 while work remains. */
static int job_step(struct km_ads_client *c, size_t max)
{
	job_start_next(c);
	if (!c->job.active)
		return 0;
	switch (km_xds_apply_address_some(c->model, &c->job.v, max, on_accepted, &c->address,
					  &c->job.res)) {
	case KM_XDS_APPLY_DONE:
		job_finish(c);
		break;
	case KM_XDS_APPLY_WAIT: /* resumed when more of the response arrives (on_message_part) */
		km_msgbuf_release(c->job.p->msg, c->job.p->len, km_response_view_consumed(&c->job.v));
		return 0;
	default: /* the bytes applied are not read again */
		km_msgbuf_release(c->job.p->msg, c->job.p->len, km_response_view_consumed(&c->job.v));
	}
	job_start_next(c);
	return c->job.active;
}

static void on_work(uv_idle_t *h)
{
	struct km_ads_client *c = h->data;

	if (c->backlogged && c->backlogged(c->arg)) {
		uv_idle_stop(h); /* resumed by km_ads_client_resume, or by the re-check */
		uv_timer_start(&c->recheck, on_recheck, BACKLOG_RECHECK_MS, 0);
		return;
	}
	if (!job_step(c, c->slice))
		uv_idle_stop(h);
}

void km_ads_client_resume(struct km_ads_client *c)
{
	if (!c->stopping && (c->job.active || c->queue_head) &&
	    !uv_is_active((uv_handle_t *)&c->work)) {
		uv_timer_stop(&c->recheck);
		uv_idle_start(&c->work, on_work);
	}
}

static void on_recheck(uv_timer_t *t)
{
	km_ads_client_resume(t->data);
}

/* Apply everything received now (the stream ended, or too much is waiting). */
static void work_drain(struct km_ads_client *c)
{
	while (job_step(c, SIZE_MAX))
		;
	uv_idle_stop(&c->work);
}

/* Bytes that are not a DeltaDiscoveryResponse: drop the response and reconnect. */
static void stream_malformed(struct km_ads_client *c, size_t len)
{
	km_error("istiod sent %zu bytes that are not a DeltaDiscoveryResponse; reconnecting", len);
	if (c->job.active && c->job.streaming)
		job_drop_partial(c);
	if (c->stream_open)
		km_grpc_stream_close(&c->stream);
}

/* Part of a large response has arrived. With nothing ahead of it, applying it starts now, so the
 * map writer gets rows while the rest is still on the wire (at 1M workloads the ~200 MB push
 * takes ~3 s to arrive) and the pages applied are given back as it arrives. Only a response
 * whose first resource is an Address is begun so: the response's own type_url follows its
 * resources on the wire. */
static void on_message_part(struct km_grpc_stream *g, const uint8_t *msg, size_t have, size_t len)
{
	struct km_ads_client *c = g->data;
	struct km_ads_job *j = &c->job;
	struct km_ads_pending *p;
	const char *type;
	int first;

	if (j->active && j->streaming && j->p->msg == msg) {
		if (km_response_view_grow(&j->v, have) != 0)
			stream_malformed(c, have);
		else
			km_ads_client_resume(c);
		return;
	}
	if (len < STREAM_FROM || j->active || c->queue_head || c->declined == msg || c->stopping)
		return;
	km_response_view_begin(&j->v, msg, len);
	if (km_response_view_grow(&j->v, have) != 0) {
		km_response_view_free(&j->v);
		stream_malformed(c, have);
		return;
	}
	first = km_response_view_first_type(&j->v, &type);
	if (first != 1 || strcmp(type, KM_TYPE_ADDRESS) != 0 || !(p = calloc(1, sizeof(*p)))) {
		km_response_view_free(&j->v);
		/* no resource yet: tried again with the next part, within the first STREAM_DECIDE
		 * bytes only (each try reads them again; a response of 60 MB of removed names
		 * would otherwise be read once per part) */
		if (first != KM_VIEW_WAIT || have >= STREAM_DECIDE)
			c->declined = msg; /* applied once whole, as any response */
		return;
	}
	p->msg = (uint8_t *)msg;
	p->len = len;
	p->received_us = km_now_us();
	p->borrowed = 1;
	j->active = 1;
	j->streaming = 1;
	j->p = p;
	memset(&j->res, 0, sizeof(j->res));
	c->address.streamed++;
	km_ads_client_resume(c);
}

static void on_message(struct km_grpc_stream *g, uint8_t *msg, size_t len)
{
	struct km_ads_client *c = g->data;
	struct km_ads_pending *p;

	c->declined = NULL;
	if (c->job.active && c->job.streaming && c->job.p->msg == msg) {
		c->job.p->borrowed = 0; /* whole: the job's now */
		if (km_response_view_grow(&c->job.v, len) != 0)
			stream_malformed(c, len);
		else
			km_ads_client_resume(c);
		return;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		km_error("out of memory for a response of %zu bytes; reconnecting", len);
		km_msgbuf_free(msg, len);
		km_grpc_stream_close(g);
		return;
	}
	p->msg = msg;
	p->len = len;
	p->received_us = km_now_us();
	if (c->queue_tail)
		c->queue_tail->next = p;
	else
		c->queue_head = p;
	c->queue_tail = p;
	c->queued_bytes += len;
	/* istiod does not wait for ACKs: past this much waiting behind the response being applied,
	 * apply at once (backpressure). One response alone, however large (--xds-max-message bounds
	 * it), is applied in slices: drained at once, it held the loop for its whole length, its ops
	 * piled up unsent and the map writer sat idle until the end (at 1M workloads: ~200 MB more
	 * and no overlap). */
	if (c->queued_bytes > c->max_queued && c->queue_head != p)
		work_drain(c);
	else if (!uv_is_active((uv_handle_t *)&c->recheck)) /* not paused for the backlog */
		uv_idle_start(&c->work, on_work);
}

/* The stream is gone: finish the response being applied (the next stream's
 * initial_resource_versions must describe a whole state) and drop the ones not started (istiod
 * sends them again, as it learns what is held). */
static void work_abandon_queue(struct km_ads_client *c)
{
	if (c->job.active) {
		km_xds_apply_address_some(c->model, &c->job.v, SIZE_MAX, on_accepted, &c->address,
					  &c->job.res);
		if (km_response_view_complete(&c->job.v))
			job_finish(c);
		else
			job_drop_partial(c);
	}
	while (c->queue_head) {
		struct km_ads_pending *p = c->queue_head;

		c->queue_head = p->next;
		pending_free(p);
	}
	c->queue_tail = NULL;
	c->queued_bytes = 0;
	uv_idle_stop(&c->work);
	uv_timer_stop(&c->recheck);
}

static void connect_now(struct km_ads_client *c)
{
	const struct km_grpc_stream_cbs cbs = { .on_open = on_open,
						.on_message = on_message,
						.on_end = on_end,
						.on_closed = on_stream_closed,
						.on_message_part = on_message_part };

	if (c->stopping || c->stream_open)
		return;
	c->stream_open = 1;
	c->stream.data = c;
	if (km_grpc_stream_start(&c->stream, c->loop, &c->grpc_cfg, &cbs) != 0)
		km_grpc_stream_close(&c->stream);
}

int km_ads_client_start(struct km_ads_client *c, uv_loop_t *loop,
			const struct km_grpc_stream_config *grpc, const struct km_ads_node *node,
			struct km_model *model, struct km_policy_store *policies,
			void (*on_applied)(void *arg), void *arg)
{
	memset(c, 0, sizeof(*c));
	c->loop = loop;
	c->grpc_cfg = *grpc;
	c->node = *node;
	c->model = model;
	c->policies = policies;
	c->on_applied = on_applied;
	c->arg = arg;
	c->backoff_ms = BACKOFF_MIN_MS;
	c->max_initial = KM_ADS_MAX_INITIAL_DEFAULT;
	c->max_queued = KM_ADS_MAX_QUEUED_DEFAULT;
	c->address.type_url = KM_TYPE_ADDRESS;
	c->address.set_version = model_set_version;
	c->address.each_version = model_each_version;
	c->address.mark = model_mark;
	c->address.sweep = model_sweep;
	c->address.store = model;
	c->authz.type_url = KM_TYPE_AUTHORIZATION;
	c->authz.set_version = policy_set_version;
	c->authz.each_version = policy_each_version;
	c->authz.mark = policy_mark;
	c->authz.sweep = policy_sweep;
	c->authz.store = policies;
	km_ads_node_id(node, c->node_id, sizeof(c->node_id));
	uv_timer_init(loop, &c->retry);
	c->retry.data = c;
	uv_idle_init(loop, &c->work);
	c->work.data = c;
	uv_timer_init(loop, &c->recheck);
	c->recheck.data = c;
	c->slice = SLICE_RESOURCES;
	km_info("connecting to istiod at %s:%u as %s", grpc->conn.host, grpc->conn.port, c->node_id);
	connect_now(c);
	return 0;
}

void km_ads_client_stop(struct km_ads_client *c)
{
	c->stopping = 1;
	if (c->job.active) { /* shutting down: nothing more is applied */
		km_response_view_free(&c->job.v);
		pending_free(c->job.p);
		memset(&c->job, 0, sizeof(c->job));
	}
	work_abandon_queue(c);
	uv_close((uv_handle_t *)&c->retry, NULL);
	uv_close((uv_handle_t *)&c->work, NULL);
	uv_close((uv_handle_t *)&c->recheck, NULL);
	if (c->on_demand)
		km_ads_demand_stop(c);
	if (c->stream_open)
		km_grpc_stream_close(&c->stream);
}
