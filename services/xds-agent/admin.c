/* admin.c — the xDS agent's admin socket and its JSON dump (see admin.h). */
#include "services/xds-agent/admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "kmesh_maps.h"
#include "shared/addr.h"
#include "services/xds-agent/authz/authz_eval.h"
#include "services/xds-agent/authz/authz_query.h"
#include "services/xds-agent/sources/inject.h"
#include "services/xds-agent/telemetry/baggage.h"
#include "services/xds-agent/tunnel_route.h"
#include "shared/log.h"

struct dump_ctx {
	const struct km_model *m;
	json_t *list;
	size_t left;
	const struct km_authz_counters *counters;
};

static json_t *addrs_json(const struct km_addr *a, size_t n)
{
	json_t *arr = json_array();
	char buf[KM_ADDR_STRLEN];

	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, json_string(km_addr_format(&a[i], buf)));
	return arr;
}

static int dump_service(void *arg, const char *name)
{
	struct dump_ctx *c = arg;
	const struct km_service_res *s = km_model_find_service(c->m, name);
	json_t *o, *counts = json_array();

	if (!c->left || !s) {
		json_decref(counts);
		return !c->left; /* stop once the list is full */
	}
	c->left--;
	for (uint32_t p = 0; p < KM_PRIO_COUNT; p++) {
		const uint32_t *eps;

		json_array_append_new(counts, json_integer((json_int_t)km_model_endpoints(c->m, name, p, &eps)));
	}
	o = json_pack("{s:s, s:I, s:o, s:I, s:I, s:o}", "name", name, "id",
		      (json_int_t)km_model_id_of(c->m, name), "vips", addrs_json(s->vips, s->n_vips),
		      "ports", (json_int_t)s->n_ports, "lb_mode", (json_int_t)s->lb_mode,
		      "endpoints_per_priority", counts);
	if (s->waypoint.kind == KM_WAYPOINT_HOSTNAME)
		json_object_set_new(o, "waypoint", json_string(s->waypoint.service));
	json_array_append_new(c->list, o);
	return 0;
}

static int dump_workload(void *arg, const char *uid)
{
	struct dump_ctx *c = arg;
	const struct km_workload_res *w = km_model_find_workload(c->m, uid);
	json_t *svcs;

	if (!c->left || !w)
		return !c->left; /* stop once the list is full */
	c->left--;
	svcs = json_array();
	for (size_t i = 0; i < w->n_services; i++)
		json_array_append_new(svcs, json_string(w->services[i].service));
	json_array_append_new(c->list,
			      json_pack("{s:s, s:I, s:o, s:s, s:s, s:o, s:s}", "uid", uid, "id",
					(json_int_t)km_model_id_of(c->m, uid), "addresses",
					addrs_json(w->addrs, w->n_addrs), "status",
					w->status ? "UNHEALTHY" : "HEALTHY", "node", w->where->node ? w->where->node : "",
					"services", svcs, "tunnel", w->tunnel_hbone ? "HBONE" : "NONE"));
	return 0;
}

static void dump_policy(void *arg, const char *name, const Kmesh__Security__Authorization *p)
{
	struct dump_ctx *c = arg;

	if (!c->left)
		return;
	c->left--;
	json_array_append_new(c->list, json_pack("{s:s, s:s, s:b, s:I}", "name", name, "action",
						 p->action ? "DENY" : "ALLOW", "dry_run", p->dry_run,
						 "rules", (json_int_t)p->n_rules));
}

static const Kmesh__Ipc__AuthzStatRow *counter_of(const struct km_authz_counters *k, uint32_t id)
{
	size_t lo = 0, hi = k ? k->n : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->rows[mid]->stat_id == id)
			return k->rows[mid];
		if (k->rows[mid]->stat_id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static void dump_compiled(void *arg, const struct km_authz_policy_info *i)
{
	static const char *const scopes[] = { "GLOBAL", "NAMESPACE", "WORKLOAD_SELECTOR" };
	struct dump_ctx *c = arg;
	json_t *p;

	if (!c->left)
		return;
	c->left--;
	p = json_pack("{s:s, s:I, s:I, s:s, s:b, s:s, s:I, s:I}", "name", i->name, "policy_id",
		      (json_int_t)i->policy_id, "stat_id", (json_int_t)i->stat_id, "action",
		      i->deny ? "DENY" : "ALLOW", "dry_run", i->dry_run, "scope",
		      i->scope < 3 ? scopes[i->scope] : "?", "rows", (json_int_t)i->rows, "sets",
		      (json_int_t)i->sets);
	if (c->counters && !c->counters->missing) {
		/* no row yet: nothing decided by this policy since its stat id was first written */
		const Kmesh__Ipc__AuthzStatRow *r = counter_of(c->counters, i->stat_id);

		json_object_set_new(p, "allowed", json_integer(r ? (json_int_t)r->allowed : 0));
		json_object_set_new(p, "denied", json_integer(r ? (json_int_t)r->denied : 0));
	}
	json_array_append_new(c->list, p);
}

/* The compiled authorization state: what the BPF tables hold, and what they decided. */
static json_t *authz_json(const struct km_authz *a, size_t max_items,
			  const struct km_authz_counters *counters)
{
	struct km_authz_stats st;
	struct dump_ctx c = { .list = json_array(), .left = max_items, .counters = counters };
	const Kmesh__Ipc__AuthzStatRow *none = counter_of(counters, KM_AUTHZ_STAT_DEFAULT);
	json_t *out;

	km_authz_stats(a, &st);
	km_authz_each_policy(a, dump_compiled, &c);
	out = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:o}", "policies",
			(json_int_t)st.policies, "lists", (json_int_t)st.lists, "identities",
			(json_int_t)st.identities, "strings", (json_int_t)st.strings, "set_members",
			(json_int_t)st.set_members, "index_rows", (json_int_t)st.index_rows,
			"incomplete", a->oom, "compiled", c.list);
	if (counters && counters->missing)
		json_object_set_new(out, "counters_missing", json_string(counters->missing));
	else if (counters)
		json_object_set_new(out, "decided_by_no_policy",
				    json_pack("{s:I, s:I}", "allowed",
					      (json_int_t)(none ? none->allowed : 0), "denied",
					      (json_int_t)(none ? none->denied : 0)));
	return out;
}

static json_t *type_json(const struct km_ads_type *t)
{
	return json_pack("{s:s, s:I, s:I, s:I, s:I, s:s, s:b, s:I, s:I, s:I}", "last_nonce", t->last_nonce,
			 "responses", (json_int_t)t->responses, "acks", (json_int_t)t->acks, "nacks",
			 (json_int_t)t->nacks, "versions_held", (json_int_t)km_ads_versions_held(t), "last_nack",
			 t->last_nack, "synced", t->synced, "versions_withheld",
			 (json_int_t)t->withholds, "swept", (json_int_t)t->swept, "streamed",
			 (json_int_t)t->streamed);
}

char *km_agent_dump_json(const struct km_agent_state *st, size_t max_items,
			 const struct km_authz_counters *counters)
{
	struct km_model_stats ms;
	struct dump_ctx c = { .m = st->model };
	json_t *root, *model;
	char *text;

	km_model_stats(st->model, &ms);
	model = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "services", (json_int_t)ms.services,
			  "workloads", (json_int_t)ms.workloads, "endpoints", (json_int_t)ms.endpoints,
			  "port_overrides", (json_int_t)ms.port_overrides, "pending_waypoints",
			  (json_int_t)ms.pending_waypoints, "policies",
			  (json_int_t)st->policies->count);
	if (max_items == 0)
		max_items = 1000;
	c.list = json_array();
	c.left = max_items;
	km_model_each_service(st->model, dump_service, &c);
	json_object_set_new(model, "service_list", c.list);
	c.list = json_array();
	c.left = max_items;
	km_model_each_workload(st->model, dump_workload, &c);
	json_object_set_new(model, "workload_list", c.list);
	c.list = json_array();
	c.left = max_items;
	km_policy_store_each(st->policies, dump_policy, &c);
	json_object_set_new(model, "policy_list", c.list);

	root = json_pack("{s:s, s:o, s:{s:b, s:I, s:I, s:I}}", "source", st->source, "model", model,
			 "map_writer", "connected", km_writer_link_ready(st->link), "ops_applied",
			 (json_int_t)st->link->ops_acked, "ops_refused",
			 (json_int_t)st->link->ops_refused, "last_synced_unix_us",
			 (json_int_t)st->last_synced_unix_us);
	if (st->resync) {
		json_t *mw = json_object_get(root, "map_writer");

		json_object_set_new(mw, "rewrites_after_refusal",
				    json_integer((json_int_t)st->resync->rewrites));
		json_object_set_new(mw, "next_rewrite_in_ms",
				    json_integer((json_int_t)st->resync->armed_ms));
	}
	if (st->authz)
		json_object_set_new(root, "authz", authz_json(st->authz, max_items, counters));
	if (st->ads)
		json_object_set_new(root, "istiod",
				    json_pack("{s:b, s:s, s:I, s:I, s:s, s:o, s:o}", "connected",
					      st->ads->connected, "node_id", st->ads->node_id,
					      "connects", (json_int_t)st->ads->connects, "disconnects",
					      (json_int_t)st->ads->disconnects, "last_error",
					      st->ads->last_error, "address", type_json(&st->ads->address),
					      "authorization", type_json(&st->ads->authz)));
	if (st->ads && st->ads->on_demand) {
		const struct km_demand *d = &st->ads->demand;

		json_object_set_new(json_object_get(root, "istiod"), "on_demand",
				    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "keys",
					      (json_int_t)d->n, "sent", (json_int_t)d->sent, "max",
					      (json_int_t)d->max, "requests",
					      (json_int_t)st->ads->demand_requests, "refreshes",
					      (json_int_t)st->ads->demand_refreshes, "refused_full",
					      (json_int_t)d->refused_full, "refused_invalid",
					      (json_int_t)d->refused_invalid));
	}
	if (st->update_latency)
		json_object_set_new(root, "update_latency_us",
				    json_pack("{s:I, s:I, s:I, s:I}", "count",
					      (json_int_t)st->update_latency->count, "p50",
					      (json_int_t)km_latency_percentile(st->update_latency, 50),
					      "p99", (json_int_t)km_latency_percentile(st->update_latency, 99),
					      "max", (json_int_t)km_latency_percentile(st->update_latency, 100)));
	text = json_dumps(root, JSON_INDENT(1) | JSON_SORT_KEYS);
	json_decref(root);
	return text;
}

/* max_items: 0 = 1000 */
int km_agent_admin_allowed(void *arg, Kmesh__Ipc__Role role, uid_t uid, gid_t gid)
{
	const struct km_agent_state *st = arg;

	(void)gid;
	if (role == KMESH__IPC__ROLE__ROLE_TUNNEL)
		return uid == 0 || (st->tunnel_uid != (uid_t)-1 && uid == st->tunnel_uid);
	return role == KMESH__IPC__ROLE__ROLE_ADMIN && (uid == 0 || uid == getuid());
}

/* An HBONE stream's decision, for the tunnel (authz_query.h). */
static void authorize(struct km_agent_state *st, struct km_ipc_session *s, const km_envelope *env)
{
	const Kmesh__Ipc__Authorize *a = env->authorize;
	const struct km_workload_res *w;
	struct km_addr src, dst;
	char why[400], baggage[KM_BAGGAGE_MAX];
	int allow;

	if (km_addr_from_bytes(a->src.data, a->src.len, &src) != 0 ||
	    km_addr_from_bytes(a->dst.data, a->dst.len, &dst) != 0 || a->dst_port > 65535) {
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__BAD_REQUEST,
			     "src and dst must be 4 or 16 bytes, dst_port at most 65535", 0);
		return;
	}
	allow = km_authz_query(st->model, st->policies, &src, &dst, (uint16_t)a->dst_port,
			       a->principal, why, sizeof(why));
	if (allow)
		st->authorized++;
	else
		st->denied++;
	/* the destination as ztunnel's response baggage describes it */
	if (!(w = km_model_workload_at(st->model, &dst)) ||
	    km_baggage_format(w->who, w->where, baggage, sizeof(baggage)) < 0)
		baggage[0] = '\0';
	km_authorize_reply(s, env->request_id,
			   allow ? KMESH__IPC__CODE__OK : KMESH__IPC__CODE__PERMISSION_DENIED, why,
			   baggage, st->policies->generation, km_tunnel_notices_workload_gen(st->model));
}

/* Where the tunnel takes an HBONE connection to an address (tunnel_route.h): the server (the
 * workload, or its waypoint's pod), the identity its certificate must carry, and the baggage of
 * the destination and of the source. */
static void destination(struct km_agent_state *st, struct km_ipc_session *s, const km_envelope *env)
{
	km_envelope out = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Reply reply = KMESH__IPC__REPLY__INIT;
	Kmesh__Ipc__DestinationReply dr = KMESH__IPC__DESTINATION_REPLY__INIT;
	const struct km_workload_res *w;
	struct km_authz_peer peer;
	struct km_addr a;
	char id[600], *ids[1] = { id }, baggage[KM_BAGGAGE_MAX], src_baggage[KM_BAGGAGE_MAX];
	const struct km_workload_res *src_w;
	struct km_addr src;
	struct km_tunnel_route route;
	const char *not_found = "";
	uint8_t dial[16];

	if (km_addr_from_bytes(env->destination->address.data, env->destination->address.len,
			       &a) != 0) {
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__BAD_REQUEST,
			     "the address must be 4 or 16 bytes", 0);
		return;
	}
	if (km_tunnel_route(st->model, &a, &route, &not_found) != 0) {
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__NOT_FOUND, not_found, 0);
		return;
	}
	w = route.server;
	if (route.waypoint) {
		dr.dial.len = km_addr_to_bytes(&route.dial, dial);
		dr.dial.data = dial;
		dr.dial_port = route.dial_port;
	}
	km_authz_peer_of(w, &peer);
	snprintf(id, sizeof(id), "spiffe://");
	km_authz_principal(&peer, id + 9, sizeof(id) - 9);
	if (km_baggage_format(w->who, w->where, baggage, sizeof(baggage)) < 0)
		baggage[0] = '\0';
	src_baggage[0] = '\0';
	if (km_addr_from_bytes(env->destination->source.data, env->destination->source.len,
			       &src) == 0 && (src_w = km_model_workload_at(st->model, &src)) &&
	    km_baggage_format(src_w->who, src_w->where, src_baggage, sizeof(src_baggage)) < 0)
		src_baggage[0] = '\0';
	dr.source_baggage = src_baggage;
	dr.n_identities = 1;
	dr.identities = ids;
	dr.baggage = baggage;
	dr.workload_generation = km_tunnel_notices_workload_gen(st->model);
	dr.hbone = w->tunnel_hbone;
	reply.code = KMESH__IPC__CODE__OK;
	reply.message = "";
	reply.body_case = KMESH__IPC__REPLY__BODY_DESTINATION;
	reply.destination = &dr;
	out.request_id = env->request_id;
	out.body_case = KMESH__IPC__ENVELOPE__BODY_REPLY;
	out.reply = &reply;
	km_msg_send(&s->conn, &out);
}

/* The generations only, and with notify the session told of each change from now on
 * (tunnel_notices.h); its workload generation is 0 when it will not be told (then it polls). */
static void policy_generation(struct km_agent_state *st, struct km_ipc_session *s,
			      const km_envelope *env)
{
	int told = env->policy_generation->notify && st->notices &&
		   km_tunnel_notices_add(st->notices, s) == 0;

	km_authorize_reply(s, env->request_id, KMESH__IPC__CODE__OK, "", "", st->policies->generation,
			   told ? km_tunnel_notices_workload_gen(st->model) : 0);
}

/* The tunnel's reports of its HBONE streams: into the metrics and the access log. */
static void tunnel_events(struct km_agent_state *st, struct km_ipc_session *s,
			  const km_envelope *env)
{
	if (st->telemetry)
		km_telemetry_events(st->telemetry, env->conn_events, KM_CONN_FROM_TUNNEL);
	km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__OK, "", 0);
}

void km_agent_admin_closed(void *arg, struct km_ipc_session *s)
{
	struct km_agent_state *st = arg;

	if (st->notices)
		km_tunnel_notices_forget(st->notices, s);
	/* the tunnel's open streams: their closes may never come on this session */
	if (s->role == KMESH__IPC__ROLE__ROLE_TUNNEL && st->telemetry)
		km_telemetry_forget_open(st->telemetry, KM_CONN_FROM_TUNNEL);
}

static void send_dump(const struct km_agent_state *st, struct km_ipc_session *s, uint64_t id,
		      uint32_t max_items, const struct km_authz_counters *counters)
{
	char *json = km_agent_dump_json(st, max_items, counters);

	km_msg_reply_json(&s->conn, id, json);
	free(json);
}

/* A dump waiting for the map writer's counters: answered when they come, or after
 * COUNTERS_WAIT_MS without them; freed once both the query and the timer are done. */
#define COUNTERS_WAIT_MS 2000

struct pending_dump {
	const struct km_agent_state *st;
	struct km_ipc_server *srv;
	uint64_t session, request_id;
	uint32_t max_items;
	uv_timer_t timer;
	int answered, refs;
};

static void pending_unref(struct pending_dump *p)
{
	if (--p->refs == 0)
		free(p);
}

static void timer_closed(uv_handle_t *h)
{
	pending_unref(h->data);
}

static void answer(struct pending_dump *p, const struct km_authz_counters *k)
{
	struct km_ipc_session *s = km_ipc_server_session(p->srv, p->session);

	if (p->answered)
		return;
	p->answered = 1;
	if (s) /* the asker may have gone meanwhile */
		send_dump(p->st, s, p->request_id, p->max_items, k);
	uv_close((uv_handle_t *)&p->timer, timer_closed);
}

static void counters_late(uv_timer_t *t)
{
	struct km_authz_counters k = { .missing = "the map writer did not answer within 2 s" };

	answer(t->data, &k);
}

static int by_stat_id(const void *a, const void *b)
{
	uint32_t x = (*(const Kmesh__Ipc__AuthzStatRow *const *)a)->stat_id;
	uint32_t y = (*(const Kmesh__Ipc__AuthzStatRow *const *)b)->stat_id;

	return x < y ? -1 : x > y;
}

static void on_counters(void *arg, const Kmesh__Ipc__Reply *r)
{
	struct pending_dump *p = arg;
	struct km_authz_counters k = { 0 };

	if (!r)
		k.missing = "the map writer link dropped";
	else if (r->code != KMESH__IPC__CODE__OK || r->body_case != KMESH__IPC__REPLY__BODY_DUMP)
		k.missing = r->message && *r->message ? r->message : km_msg_code_name(r->code);
	else {
		k.rows = (const Kmesh__Ipc__AuthzStatRow **)r->dump->authz_stats;
		k.n = r->dump->n_authz_stats;
		/* the rows are the reply's (freed by the link after this call): sorted in place */
		if (k.n) /* (no rows: the array is NULL, which qsort may not get) */
			qsort(r->dump->authz_stats, k.n, sizeof(*r->dump->authz_stats), by_stat_id);
		if (r->dump->truncated)
			k.missing = "more counters than one dump holds";
	}
	answer(p, &k);
	pending_unref(p);
}

static void inject(struct km_agent_state *st, struct km_ipc_session *s, const km_envelope *env)
{
	struct km_inject_result r;
	const char *json = env->inject->json ? env->inject->json : "";
	int rc;

	if (st->ads && st->ads->job.active) {
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__INTERNAL,
			     "busy applying a push from istiod; try again", 0);
		return;
	}
	rc = km_inject_apply(st->model, st->policies, json, strlen(json), &r);
	if (rc == 0 && st->on_injected)
		st->on_injected(st->arg);
	km_log(rc || r.rejected ? KM_LOG_WARN : KM_LOG_INFO, "inject from pid %d: %s", (int)s->pid,
	       r.message);
	km_msg_reply(&s->conn, env->request_id,
		     rc || r.rejected ? KMESH__IPC__CODE__BAD_REQUEST : KMESH__IPC__CODE__OK, r.message,
		     (uint32_t)(r.applied + r.removed));
}

/* kmeshctl demand: Address keys asked of istiod by an agent on demand. */
static void demand(struct km_agent_state *st, struct km_ipc_session *s, const km_envelope *env)
{
	const Kmesh__Ipc__Demand *d = env->demand;
	char refused[1024] = "";
	size_t len = 0, added = 0, bad = 0;

	if (!st->ads || !st->ads->on_demand) {
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__BAD_REQUEST,
			     "this agent holds the whole mesh: demands need --xds-on-demand", 0);
		return;
	}
	if (d->n_keys > KM_DEMAND_PER_REQUEST) {
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__BAD_REQUEST,
			     "at most 4096 keys per demand", 0);
		return;
	}
	for (size_t i = 0; i < d->n_keys; i++) {
		enum km_demand_rc rc = km_ads_client_demand(st->ads, d->keys[i]);

		if (rc == KM_DEMAND_NEW)
			added++;
		if (rc >= 0)
			continue;
		bad++;
		if (len < sizeof(refused) - 1)
			len += (size_t)snprintf(refused + len, sizeof(refused) - len, "%s'%.*s' %s",
						len ? "; " : "", KM_DEMAND_KEY_MAX, d->keys[i],
						rc == KM_DEMAND_FULL ? "refused: --xds-on-demand-max keys "
						"held already" : "is not <network>/<ip> nor "
						"<namespace>/<hostname>");
		if (len >= sizeof(refused))
			len = sizeof(refused) - 1;
	}
	km_info("pid %d demanded %zu Address keys: %zu new, %zu refused", (int)s->pid, d->n_keys,
		added, bad);
	km_msg_reply(&s->conn, env->request_id, bad ? KMESH__IPC__CODE__BAD_REQUEST :
		     KMESH__IPC__CODE__OK, bad ? refused : "demanded", (uint32_t)added);
}

/* kmeshctl accesslog: the access log on or off, and its format. */
static void set_config(struct km_agent_state *st, struct km_ipc_session *s, const km_envelope *env)
{
	const Kmesh__Ipc__SetConfig *c = env->set_config;
	Kmesh__Ipc__ConfigState out = KMESH__IPC__CONFIG_STATE__INIT;
	struct km_telemetry *t = st->telemetry;
	enum km_access_log_format format = t->format;

	if (c->monitoring || c->authz || (c->bpf_log_level && *c->bpf_log_level)) {
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__BAD_REQUEST,
			     "monitoring, authz and the BPF log level are the map writer's switches", 0);
		return;
	}
	if (c->access_log_format && *c->access_log_format &&
	    km_access_log_format_parse(c->access_log_format, &format) != 0) {
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__BAD_REQUEST,
			     "the access log format is text or json", 0);
		return;
	}
	if (c->access_log || format != t->format) {
		int was = t->access_log;

		if (c->access_log)
			t->access_log = c->access_log == KMESH__IPC__TOGGLE__TOGGLE_ON;
		t->format = format;
		km_info("pid %d set the access log %s (%s)", (int)s->pid, t->access_log ? "on" : "off",
			km_access_log_format_name(t->format));
		if (was != t->access_log && st->on_access_log)
			st->on_access_log(st->arg);
	}
	out.access_log = t->access_log;
	out.access_log_format = (char *)km_access_log_format_name(t->format);
	km_msg_reply_config(&s->conn, env->request_id, &out);
}

void km_agent_admin_request(void *arg, struct km_ipc_session *s, const km_envelope *env)
{
	struct km_agent_state *st = arg;

	if (env->body_case == KMESH__IPC__ENVELOPE__BODY_AUTHORIZE) {
		authorize(st, s, env);
		return;
	}
	if (env->body_case == KMESH__IPC__ENVELOPE__BODY_POLICY_GENERATION) {
		policy_generation(st, s, env);
		return;
	}
	if (env->body_case == KMESH__IPC__ENVELOPE__BODY_DESTINATION) {
		destination(st, s, env);
		return;
	}
	if (env->body_case == KMESH__IPC__ENVELOPE__BODY_CONN_EVENTS &&
	    s->role == KMESH__IPC__ROLE__ROLE_TUNNEL) {
		tunnel_events(st, s, env);
		return;
	}
	if (s->role != KMESH__IPC__ROLE__ROLE_ADMIN) {
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__PERMISSION_DENIED,
			     "the role tunnel may only ask Authorize, PolicyGeneration and Destination and send its "
			     "streams' reports", 0);
		return;
	}
	if (env->body_case == KMESH__IPC__ENVELOPE__BODY_AGENT_DUMP) {
		km_envelope q = KMESH__IPC__ENVELOPE__INIT;
		Kmesh__Ipc__DumpRequest d = KMESH__IPC__DUMP_REQUEST__INIT;
		struct km_authz_counters none = { .missing = "the map writer is not connected" };
		struct pending_dump *p;

		if (!st->authz) {
			send_dump(st, s, env->request_id, env->agent_dump->max_items, NULL);
			return;
		}
		p = malloc(sizeof(*p));
		d.table = KMESH__IPC__TABLE__TABLE_AUTHZ_STATS;
		q.body_case = KMESH__IPC__ENVELOPE__BODY_DUMP;
		q.dump = &d;
		if (p && uv_timer_init(s->srv->loop, &p->timer) == 0) {
			p->st = st;
			p->srv = s->srv;
			p->session = s->serial;
			p->request_id = env->request_id;
			p->max_items = env->agent_dump->max_items;
			p->answered = 0;
			p->refs = 1; /* the timer's, until it is closed */
			p->timer.data = p;
			if (km_writer_link_query(st->link, &q, on_counters, p) == 0) {
				p->refs++; /* answered in on_counters, or by the timer */
				uv_timer_start(&p->timer, counters_late, COUNTERS_WAIT_MS, 0);
				return;
			}
			answer(p, &none); /* closes the timer, which frees p */
			return;
		}
		free(p);
		send_dump(st, s, env->request_id, env->agent_dump->max_items, &none);
		return;
	}
	if (env->body_case == KMESH__IPC__ENVELOPE__BODY_SET_LOG_LEVEL) {
		km_ipc_server_set_log_level(s, env);
		return;
	}
	if (env->body_case == KMESH__IPC__ENVELOPE__BODY_DEMAND) {
		demand(st, s, env);
		return;
	}
	if (env->body_case == KMESH__IPC__ENVELOPE__BODY_INJECT) {
		inject(st, s, env);
		return;
	}
	if (env->body_case == KMESH__IPC__ENVELOPE__BODY_SET_CONFIG) {
		set_config(st, s, env);
		return;
	}
	km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__BAD_REQUEST,
		     "the xDS agent's admin socket takes agent_dump, set_log_level, inject and "
		     "set_config", 0);
}
