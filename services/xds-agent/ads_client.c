/* ads_client.c — Delta ADS session with istiod (see ads_client.h). */
#include "services/xds-agent/ads_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/xds_apply.h"
#include "shared/latency.h"
#include "shared/log.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 15000
#define FAST_RECONNECT_MS 10

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

size_t km_ads_versions_held(const struct km_ads_type *t)
{
	return t->each_version ? t->each_version(t->store, NULL, NULL) : 0;
}

struct version_list {
	Kmesh__Xds__DeltaDiscoveryRequest__InitialResourceVersionsEntry *entries, **ptrs;
	size_t n, cap;
};

static void collect_version(void *arg, const char *name, const char *version)
{
	struct version_list *l = arg;

	if (l->n == l->cap)
		return; /* counted beforehand; nothing changes in between */
	kmesh__xds__delta_discovery_request__initial_resource_versions_entry__init(&l->entries[l->n]);
	l->entries[l->n].key = (char *)name;
	l->entries[l->n].value = (char *)version;
	l->ptrs[l->n] = &l->entries[l->n];
	l->n++;
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

	req.type_url = (char *)t->type_url;
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
		 * what went away while we were disconnected. */
		versions.cap = km_ads_versions_held(t);
		versions.entries = calloc(versions.cap + 1, sizeof(*versions.entries));
		versions.ptrs = calloc(versions.cap + 1, sizeof(*versions.ptrs));
		if (!versions.entries || !versions.ptrs) {
			free(versions.entries);
			free(versions.ptrs);
			return NULL;
		}
		if (t->each_version)
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
	return buf;
}

static int send_request(struct km_ads_client *c, struct km_ads_type *t, int initial,
			const char *nonce, const char *error)
{
	size_t len;
	uint8_t *buf = km_ads_build_request(c, t, initial, nonce, error, &len);
	int rc;

	if (!buf)
		return -1;
	rc = km_grpc_stream_send(&c->stream, buf, len);
	free(buf);
	return rc;
}

/* ---- stream lifecycle ---------------------------------------------------------------------- */

static void connect_now(struct km_ads_client *c);

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
		delay = c->backoff_ms + (uint64_t)rand() % (c->backoff_ms / 2 + 1);
		c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : c->backoff_ms * 2;
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
	    send_request(c, &c->authz, 1, NULL, NULL) != 0)
		km_grpc_stream_close(g);
}

static void on_end(struct km_grpc_stream *g, int status, const char *message, int goaway)
{
	struct km_ads_client *c = g->data;

	snprintf(c->last_error, sizeof(c->last_error), "grpc-status %d: %s", status, message);
	if (c->connected)
		c->disconnects++;
	c->connected = 0;
	/* Connection-age rotation (GOAWAY) and ordinary server-side ends are not failures. */
	c->fast_reconnect = goaway || status == KM_GRPC_OK;
	if (!c->stopping)
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

static void on_message(struct km_grpc_stream *g, const uint8_t *msg, size_t len)
{
	struct km_ads_client *c = g->data;
	struct km_response_view v;
	struct km_xds_result res;
	struct km_ads_type *t;

	c->last_response_us = km_now_us();
	if (km_response_view_init(&v, msg, len) != 0) {
		km_error("istiod sent %zu bytes that are not a DeltaDiscoveryResponse; reconnecting", len);
		km_grpc_stream_close(g);
		return;
	}
	t = strcmp(v.type_url, KM_TYPE_ADDRESS) == 0	      ? &c->address
	    : strcmp(v.type_url, KM_TYPE_AUTHORIZATION) == 0 ? &c->authz
							      : NULL;
	if (!t) {
		struct km_ads_type other = { .type_url = v.type_url };

		km_warn("istiod sent an unsubscribed type %.200s; NACKing it", v.type_url);
		send_request(c, &other, 0, v.nonce, "type not subscribed");
		km_response_view_free(&v);
		return;
	}
	/* resources are decoded and applied one at a time; accepted ones record their version */
	if (t == &c->address)
		km_xds_apply_address(c->model, &v, on_accepted, t, &res);
	else
		km_xds_apply_authorization(c->policies, &v, on_accepted, t, &res);
	t->responses++;
	snprintf(t->last_nonce, sizeof(t->last_nonce), "%s", v.nonce);
	if (res.rejected) {
		t->nacks++;
		snprintf(t->last_nack, sizeof(t->last_nack), "%s", res.error);
		send_request(c, t, 0, v.nonce, res.error);
	} else {
		t->acks++;
		send_request(c, t, 0, v.nonce, NULL);
	}
	if (!t->synced)
		km_info("first %s response on this stream: %zu applied, %zu rejected, %zu removed",
			t == &c->address ? "Address" : "Authorization", res.applied, res.rejected,
			res.removed);
	else
		km_debug("%s response %s: %zu applied, %zu rejected, %zu removed",
			 t == &c->address ? "Address" : "Authorization", v.nonce, res.applied,
			 res.rejected, res.removed);
	t->synced = 1;
	c->backoff_ms = BACKOFF_MIN_MS; /* a working stream resets the backoff */
	km_response_view_free(&v);
	if (t == &c->address && c->on_applied)
		c->on_applied(c->arg);
}

static void connect_now(struct km_ads_client *c)
{
	const struct km_grpc_stream_cbs cbs = { on_open, on_message, on_end, on_stream_closed };

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
	c->address.type_url = KM_TYPE_ADDRESS;
	c->address.set_version = model_set_version;
	c->address.each_version = model_each_version;
	c->address.store = model;
	c->authz.type_url = KM_TYPE_AUTHORIZATION;
	c->authz.set_version = policy_set_version;
	c->authz.each_version = policy_each_version;
	c->authz.store = policies;
	km_ads_node_id(node, c->node_id, sizeof(c->node_id));
	uv_timer_init(loop, &c->retry);
	c->retry.data = c;
	km_info("connecting to istiod at %s:%u as %s", grpc->conn.host, grpc->conn.port, c->node_id);
	connect_now(c);
	return 0;
}

void km_ads_client_stop(struct km_ads_client *c)
{
	c->stopping = 1;
	uv_close((uv_handle_t *)&c->retry, NULL);
	if (c->stream_open)
		km_grpc_stream_close(&c->stream);
}
