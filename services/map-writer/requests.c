/* requests.c — what the map writer does with each request from a peer: role checks per request
 * kind, then table batches, enroll/unenroll, the IPsec switch, dumps and log levels
 * (see requests.h). */
#include "services/map-writer/requests.h"

#include "services/map-writer/authz_lookup.h"
#include "services/map-writer/demand.h"
#include "services/map-writer/pod_sockets.h"

#include <stdio.h>
#include <string.h>

#include "shared/addr.h"
#include "shared/log.h"

int km_mw_allowed(void *arg, Kmesh__Ipc__Role role, uid_t uid, gid_t gid)
{
	struct km_mw_requests *w = arg;

	return km_access_allowed(w->access, role, uid, gid);
}

void km_mw_session_closed(void *arg, struct km_ipc_session *s)
{
	struct km_mw_requests *w = arg;

	km_demand_opens(w->dp, w->events, s->serial); /* its wish for open reports goes with it */
	if (!w->tables->sync_active || w->tables->sync_owner != s->serial)
		return;
	/* its rows stay as they are (some rewritten, none swept); the next agent syncs again */
	w->tables->sync_active = 0;
	km_warn("the xDS agent (pid %d) left during a sync: nothing was swept", (int)s->pid);
	km_authz_recheck_release(w->recheck);
}

size_t km_mw_frame_limit(void *arg, Kmesh__Ipc__Role role)
{
	(void)arg;
	switch (role) {
	case KMESH__IPC__ROLE__ROLE_XDS:
		return 0; /* whole-table batches: --max-frame */
	case KMESH__IPC__ROLE__ROLE_IPSEC:
		return KM_MW_FRAME_IPSEC;
	default: /* cni, admin: one request at a time */
		return KM_MW_FRAME_SMALL;
	}
}

/* The map writer's counters, sent with every dump. */
static void table_stats(struct km_mw_requests *w, Kmesh__Ipc__TableStats *stats)
{
	size_t uncovered;

	kmesh__ipc__table_stats__init(stats);
	stats->ops_applied = w->tables->ops_applied;
	stats->ops_refused = w->tables->ops_failed;
	stats->table_full = w->tables->table_full;
	stats->rows_swept = w->tables->rows_swept;
	stats->migrated_entries = w->tables->migrated_entries;
	stats->authz_rechecks = w->recheck->passes;
	stats->authz_closed = w->recheck->closed;
	stats->ipsec_on = w->ipsec_tc->enabled;
	stats->ipsec_interfaces = (uint32_t)w->ipsec_tc->n_nics;
	stats->ipsec_pods = (uint32_t)km_ipsec_tc_pods(w->ipsec_tc, &uncovered);
	stats->ipsec_pods_uncovered = (uint32_t)uncovered;
	stats->ipsec_tc_failures = w->ipsec_tc->failures;
	km_slots_usage(&w->tables->slots, &stats->slots, &stats->slots_free,
		       &stats->slots_quarantined);
	stats->slot_ranges_grown = w->tables->slots.ranges_grown;
	stats->slot_ranges_refused = w->tables->slots.ranges_refused;
	stats->frontend_pick_rewrites = w->tables->fe_pick.rows_rewritten;
	stats->frontend_pick_rewrites_failed = w->tables->fe_pick.rewrite_failed;
	stats->frontend_picks_off = w->tables->fe_pick.lost;
}

/* A page of a table: read off the loop (dump_queue.h), except the authorization counters, which
 * join rows the loop keeps and are small. */
static void handle_dump(struct km_mw_requests *w, struct km_ipc_session *s, const km_envelope *env)
{
	km_envelope out = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Reply reply = KMESH__IPC__REPLY__INIT;
	Kmesh__Ipc__DumpReply dump;
	Kmesh__Ipc__TableStats stats;
	char err[256];

	if (s->role == KMESH__IPC__ROLE__ROLE_IPSEC &&
	    env->dump->table != KMESH__IPC__TABLE__TABLE_IPSEC_PEER &&
	    env->dump->table != KMESH__IPC__TABLE__TABLE_IPSEC_CIDR) {
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__PERMISSION_DENIED,
			     "role 'ipsec' may dump only the IPsec tables", 0);
		return;
	}
	table_stats(w, &stats);
	if (w->dumps && env->dump->table != KMESH__IPC__TABLE__TABLE_AUTHZ_STATS) {
		km_dump_queue_submit(w->dumps, s, env, &stats);
		return;
	}
	reply.code = km_tables_dump_page(w->tables, env->dump->table, env->dump->max_rows,
					 env->dump->after.data, env->dump->after.len, NULL, &dump,
					 err, sizeof(err));
	reply.message = err;
	if (reply.code == KMESH__IPC__CODE__OK) {
		dump.stats = &stats;
		reply.body_case = KMESH__IPC__REPLY__BODY_DUMP;
		reply.dump = &dump;
	}
	out.request_id = env->request_id;
	out.body_case = KMESH__IPC__ENVELOPE__BODY_REPLY;
	out.reply = &reply;
	if (km_msg_send(&s->conn, &out) != 0) {
		/* every request gets one reply, or the asker waits forever (and the xDS agent, whose
		 * replies come in order, would take the next one for this) */
		km_warn("dump reply to pid %d too large or not sent; ask for fewer rows", (int)s->pid);
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__INTERNAL,
			     "the dump is larger than a frame; ask for fewer rows", 0);
	}
	if (reply.code == KMESH__IPC__CODE__OK)
		km_tables_dump_free(&dump);
}

int km_mw_batch_allowed(Kmesh__Ipc__Role role, const Kmesh__Ipc__TableBatch *b, char *err,
			size_t errlen)
{
	for (size_t i = 0; i < b->n_ops; i++) {
		int ipsec = b->ops[i]->row_case == KMESH__IPC__TABLE_OP__ROW_IPSEC_PEER ||
			    b->ops[i]->row_case == KMESH__IPC__TABLE_OP__ROW_IPSEC_CIDR;

		if (ipsec != (role == KMESH__IPC__ROLE__ROLE_IPSEC)) {
			snprintf(err, errlen, "op %zu: role '%s' may not write %s rows (nothing applied)",
				 i, km_msg_role_name(role), ipsec ? "IPsec" : "these");
			return 0;
		}
	}
	return 1;
}

static int role_may(const struct km_ipc_session *s, Kmesh__Ipc__Envelope__BodyCase body)
{
	switch (body) {
	case KMESH__IPC__ENVELOPE__BODY_BATCH: /* which rows: km_mw_batch_allowed */
		return s->role == KMESH__IPC__ROLE__ROLE_XDS || s->role == KMESH__IPC__ROLE__ROLE_IPSEC;
	case KMESH__IPC__ENVELOPE__BODY_SYNC:
		return s->role == KMESH__IPC__ROLE__ROLE_XDS;
	case KMESH__IPC__ENVELOPE__BODY_ENROLL:
	case KMESH__IPC__ENVELOPE__BODY_UNENROLL:
		return s->role == KMESH__IPC__ROLE__ROLE_CNI;
	case KMESH__IPC__ENVELOPE__BODY_ENROLL_QUERY:
		return s->role == KMESH__IPC__ROLE__ROLE_CNI || s->role == KMESH__IPC__ROLE__ROLE_ADMIN;
	case KMESH__IPC__ENVELOPE__BODY_DUMP: /* the ipsec role: its own tables (handle_dump) */
		return s->role == KMESH__IPC__ROLE__ROLE_ADMIN || s->role == KMESH__IPC__ROLE__ROLE_XDS ||
		       s->role == KMESH__IPC__ROLE__ROLE_IPSEC;
	case KMESH__IPC__ENVELOPE__BODY_SET_LOG_LEVEL:
		return s->role == KMESH__IPC__ROLE__ROLE_ADMIN;
	case KMESH__IPC__ENVELOPE__BODY_IPSEC_DATAPLANE:
		return s->role == KMESH__IPC__ROLE__ROLE_IPSEC;
	case KMESH__IPC__ENVELOPE__BODY_SET_CONFIG:
		return s->role == KMESH__IPC__ROLE__ROLE_ADMIN;
	case KMESH__IPC__ENVELOPE__BODY_SUBSCRIBE:
		return s->role == KMESH__IPC__ROLE__ROLE_ADMIN || s->role == KMESH__IPC__ROLE__ROLE_XDS;
	case KMESH__IPC__ENVELOPE__BODY_POD_SOCKETS:
	case KMESH__IPC__ENVELOPE__BODY_TUNNEL_CGROUP:
		return s->role == KMESH__IPC__ROLE__ROLE_TUNNEL;
	default:
		return 1;
	}
}

static int printable(const char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

/* The encrypt program on the pod's interface first (when IPsec is on), and the authorization
 * link on its namespace, then the rows: a pod is never enrolled with its traffic unmarked. An enroll again (same cookie) that fails leaves the
 * pod as it was; one with another interface takes the program off the old one. */
Kmesh__Ipc__Code km_mw_enroll(struct km_mw_requests *w, const Kmesh__Ipc__Enroll *e, char *err,
			      size_t errlen)
{
	uint32_t old = km_tables_host_ifindex(w->tables, e->netns_cookie), flags;
	Kmesh__Ipc__Code code;
	char why[64];

	/* they go into logs and dumps: a Kubernetes name and a path are printable */
	if (!printable(e->pod) || !printable(e->netns_path)) {
		snprintf(err, errlen, "the pod name and netns path must be printable ASCII");
		return KMESH__IPC__CODE__BAD_REQUEST;
	}
	if (w->ipsec_tc->enabled && km_ipsec_tc_pod(w->ipsec_tc, e->host_ifindex, err, errlen) != 0)
		return KMESH__IPC__CODE__ENCRYPTION_UNAVAILABLE;
	/* the link first, then the row that says the pod has it; without one, authz_ingress decides
	 * its SYNs: attached before the row */
	flags = km_authz_lookup_attach(w->lookup, e->netns_cookie, e->netns_path, e->pod);
	if (!flags && km_demand_pod_without_lookup(w->dp) != 0) {
		snprintf(err, errlen, "no sk_lookup program for the pod, and authz_ingress cannot be "
			 "attached: its connections would not be authorized");
		return KMESH__IPC__CODE__INTERNAL;
	}
	code = km_tables_enroll(w->tables, e, flags, err, errlen);
	if (code != KMESH__IPC__CODE__OK)
		km_demand_ingress_pod_gone(w->dp, w->lookup);
	if (code != KMESH__IPC__CODE__OK && flags &&
	    km_tables_enrolled(w->tables, e->netns_cookie, why, sizeof(why)) != KMESH__IPC__CODE__OK)
		km_authz_lookup_detach(w->lookup, e->netns_cookie); /* not enrolled: no link either */
	if (!w->ipsec_tc->enabled)
		return code;
	if (code != KMESH__IPC__CODE__OK && e->host_ifindex != old)
		km_ipsec_tc_pod_gone(w->ipsec_tc, e->host_ifindex);
	else if (code == KMESH__IPC__CODE__OK && old && old != e->host_ifindex)
		km_ipsec_tc_pod_gone(w->ipsec_tc, old);
	return code;
}

static Kmesh__Ipc__Code ipsec_dataplane(struct km_mw_requests *w, const Kmesh__Ipc__IpsecDataplane *d,
					uint32_t *applied, char *err, size_t errlen)
{
	struct km_addr addrs[KM_IPSEC_TC_MAX_NICS];
	int n;

	if (!d->enabled) {
		n = km_ipsec_tc_disable(w->ipsec_tc);
		*applied = (uint32_t)n;
		snprintf(err, errlen, "programs taken off %d interfaces, %zu IPsec rows removed",
			 n, km_tables_ipsec_clear(w->tables));
		return KMESH__IPC__CODE__OK;
	}
	if (d->n_node_addresses == 0 || d->n_node_addresses > KM_IPSEC_TC_MAX_NICS) {
		snprintf(err, errlen, "IPsec on needs 1 to %d node addresses, not %zu",
			 KM_IPSEC_TC_MAX_NICS, d->n_node_addresses);
		return KMESH__IPC__CODE__BAD_REQUEST;
	}
	for (size_t i = 0; i < d->n_node_addresses; i++)
		if (km_addr_from_bytes(d->node_addresses[i].data, d->node_addresses[i].len,
				       &addrs[i]) != 0) {
			snprintf(err, errlen, "node address %zu is not 4 or 16 bytes", i);
			return KMESH__IPC__CODE__BAD_REQUEST;
		}
	n = km_ipsec_tc_enable(w->ipsec_tc, addrs, d->n_node_addresses, err, errlen);
	if (n < 0)
		return KMESH__IPC__CODE__NOT_FOUND;
	*applied = (uint32_t)n;
	return KMESH__IPC__CODE__OK;
}

static const char *const kind_labels[KM_MW_KINDS] = {
	"other", "batch", "sync", "enroll", "unenroll", "enroll_query", "dump", "set_log_level",
	"ipsec_dataplane", "set_config", "subscribe", "pod_sockets", "tunnel_cgroup",
};

const char *km_mw_role_label(size_t role)
{
	static const char *const roles[KM_MW_ROLES] = { "none", "xds", "cni", "admin", "ipsec",
							"tunnel" };

	return role < KM_MW_ROLES ? roles[role] : "?";
}

const char *km_mw_kind_label(size_t kind)
{
	return kind < KM_MW_KINDS ? kind_labels[kind] : "?";
}

const char *km_mw_code_label(size_t code)
{
	static const char *const codes[KM_MW_CODES] = {
		"ok", "bad_request", "permission_denied", "table_full", "not_found", "internal",
		"version_mismatch", "encryption_unavailable", "resource_exhausted",
	};

	return code < KM_MW_CODES ? codes[code] : "?";
}

static size_t kind_of(Kmesh__Ipc__Envelope__BodyCase body)
{
	switch (body) {
	case KMESH__IPC__ENVELOPE__BODY_BATCH: return 1;
	case KMESH__IPC__ENVELOPE__BODY_SYNC: return 2;
	case KMESH__IPC__ENVELOPE__BODY_ENROLL: return 3;
	case KMESH__IPC__ENVELOPE__BODY_UNENROLL: return 4;
	case KMESH__IPC__ENVELOPE__BODY_ENROLL_QUERY: return 5;
	case KMESH__IPC__ENVELOPE__BODY_DUMP: return 6;
	case KMESH__IPC__ENVELOPE__BODY_SET_LOG_LEVEL: return 7;
	case KMESH__IPC__ENVELOPE__BODY_IPSEC_DATAPLANE: return 8;
	case KMESH__IPC__ENVELOPE__BODY_SET_CONFIG: return 9;
	case KMESH__IPC__ENVELOPE__BODY_SUBSCRIBE: return 10;
	case KMESH__IPC__ENVELOPE__BODY_POD_SOCKETS: return 11;
	case KMESH__IPC__ENVELOPE__BODY_TUNNEL_CGROUP: return 12;
	default: return 0;
	}
}

static void count(struct km_mw_requests *w, const struct km_ipc_session *s,
		  const km_envelope *env, Kmesh__Ipc__Code code)
{
	size_t role = (size_t)s->role < KM_MW_ROLES ? (size_t)s->role : 0;
	size_t c = (size_t)code < KM_MW_CODES ? (size_t)code : KM_MW_CODES - 1;

	w->counts[role][kind_of(env->body_case)][c]++;
}

static uint16_t toggle(uint16_t flags, uint16_t bit, Kmesh__Ipc__Toggle t, int bit_means_on)
{
	if (t == KMESH__IPC__TOGGLE__TOGGLE_UNCHANGED)
		return flags;
	if ((t == KMESH__IPC__TOGGLE__TOGGLE_ON) == bit_means_on)
		return flags | bit;
	return flags & (uint16_t)~bit;
}

/* kmeshctl's switches: monitoring, authz, the BPF log level; then the state, as a reply. */
static Kmesh__Ipc__Code set_config(struct km_mw_requests *w, struct km_ipc_session *s,
				   const km_envelope *env)
{
	const Kmesh__Ipc__SetConfig *c = env->set_config;
	Kmesh__Ipc__ConfigState st = KMESH__IPC__CONFIG_STATE__INIT;
	uint16_t old = w->dp->node.flags, flags = old;
	enum km_log_level level;

	if (c->access_log || (c->access_log_format && *c->access_log_format)) {
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__BAD_REQUEST,
			     "the access log is the xDS agent's switch, not the map writer's", 0);
		return KMESH__IPC__CODE__BAD_REQUEST;
	}
	if (c->bpf_log_level && *c->bpf_log_level) {
		if (km_log_parse_level(c->bpf_log_level, &level) != 0) {
			km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__BAD_REQUEST,
				     "unknown BPF log level (error, warn, info, debug)", 0);
			return KMESH__IPC__CODE__BAD_REQUEST;
		}
		flags = (uint16_t)((flags & ~KM_CFG_LOG_MASK) | ((unsigned)level << KM_CFG_LOG_SHIFT));
	}
	flags = toggle(flags, KM_CFG_F_MONITORING, c->monitoring, 1);
	flags = toggle(flags, KM_CFG_F_AUTHZ_OFF, c->authz, 0);
	if (flags != old) {
		if (km_dataplane_set_flags(w->dp, flags) != 0) {
			km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__INTERNAL,
				     "cannot write km_config (see the map writer's log)", 0);
			return KMESH__IPC__CODE__INTERNAL;
		}
		km_info("pid %d set monitoring %s, authz %s, BPF log level %s", (int)s->pid,
			flags & KM_CFG_F_MONITORING ? "on" : "off",
			flags & KM_CFG_F_AUTHZ_OFF ? "off" : "on",
			km_log_level_name((enum km_log_level)((flags & KM_CFG_LOG_MASK) >> KM_CFG_LOG_SHIFT)));
		/* authz back on: open connections it now denies are closed, as after a policy change */
		if ((old & KM_CFG_F_AUTHZ_OFF) && !(flags & KM_CFG_F_AUTHZ_OFF))
			km_authz_recheck_request(w->recheck);
		km_demand_opens(w->dp, w->events, 0);
	}
	st.monitoring = !!(flags & KM_CFG_F_MONITORING);
	st.authz = !(flags & KM_CFG_F_AUTHZ_OFF);
	st.bpf_log_level = (char *)km_log_level_name(
		(enum km_log_level)((flags & KM_CFG_LOG_MASK) >> KM_CFG_LOG_SHIFT));
	st.subscribers = (uint32_t)km_mw_events_subscribers(w->events);
	km_mw_events_lost(w->events, &st.conn_events_dropped, &st.bpf_log_dropped);
	km_msg_reply_config(&s->conn, env->request_id, &st);
	return KMESH__IPC__CODE__OK;
}

void km_mw_handle_request(void *arg, struct km_ipc_session *s, const km_envelope *env)
{
	struct km_mw_requests *w = arg;
	struct km_tables *t = w->tables;
	uint64_t authz_changes = t->authz_changes;
	Kmesh__Ipc__Code code = KMESH__IPC__CODE__OK;
	uint32_t applied = 0;
	int named = 0; /* the batch names a waypoint */
	char err[512] = "", pod[300];

	if (!role_may(s, env->body_case)) {
		snprintf(err, sizeof(err), "role '%s' may not make this request",
			 km_msg_role_name(s->role));
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__PERMISSION_DENIED, err, 0);
		count(w, s, env, KMESH__IPC__CODE__PERMISSION_DENIED);
		return;
	}
	switch (env->body_case) {
	case KMESH__IPC__ENVELOPE__BODY_BATCH:
		if (!km_mw_batch_allowed(s->role, env->batch, err, sizeof(err))) {
			km_warn("batch from pid %d refused: %s", (int)s->pid, err);
			code = KMESH__IPC__CODE__PERMISSION_DENIED;
			break;
		}
		if (km_demand_batch(w->dp, env->batch, &named) != 0) {
			code = KMESH__IPC__CODE__INTERNAL;
			snprintf(err, sizeof(err), "connections to a waypoint need sockops, which cannot "
				 "be attached (see the map writer's log)");
			break;
		}
		if (named && t->sync_active)
			w->sync_waypoints = 1;
		code = km_tables_apply_batch(t, env->batch, &applied, err, sizeof(err));
		if (code != KMESH__IPC__CODE__OK)
			km_warn("batch from pid %d: applied %u of %zu ops, %s: %s", (int)s->pid, applied,
				env->batch->n_ops, km_msg_code_name(code), err);
		else
			km_debug("batch from pid %d: applied %u ops", (int)s->pid, applied);
		break;
	case KMESH__IPC__ENVELOPE__BODY_ENROLL:
		code = km_mw_enroll(w, env->enroll, err, sizeof(err));
		km_log_safe(pod, sizeof(pod), env->enroll->pod && *env->enroll->pod ? env->enroll->pod
									       : "-");
		km_log(code ? KM_LOG_WARN : KM_LOG_INFO, "enroll netns cookie %llu (%s): %s%s%s",
		       (unsigned long long)env->enroll->netns_cookie, pod, km_msg_code_name(code),
		       *err ? ": " : "", err);
		break;
	case KMESH__IPC__ENVELOPE__BODY_UNENROLL: {
		uint32_t ifindex;

		code = km_tables_unenroll(t, env->unenroll, &ifindex, err, sizeof(err));
		if (code == KMESH__IPC__CODE__OK) {
			km_authz_lookup_detach(w->lookup, env->unenroll->netns_cookie);
			km_mw_pod_sockets_forget(t, env->unenroll->netns_cookie);
			km_demand_ingress_pod_gone(w->dp, w->lookup);
		}
		if (code == KMESH__IPC__CODE__OK && w->ipsec_tc->enabled)
			km_ipsec_tc_pod_gone(w->ipsec_tc, ifindex);
		km_log_safe(pod, sizeof(pod),
			    env->unenroll->pod && *env->unenroll->pod ? env->unenroll->pod : "-");
		km_log(code ? KM_LOG_WARN : KM_LOG_INFO, "unenroll netns cookie %llu (%s): %s%s%s",
		       (unsigned long long)env->unenroll->netns_cookie, pod, km_msg_code_name(code),
		       *err ? ": " : "", err);
		break;
	}
	case KMESH__IPC__ENVELOPE__BODY_IPSEC_DATAPLANE:
		code = ipsec_dataplane(w, env->ipsec_dataplane, &applied, err, sizeof(err));
		km_log(code ? KM_LOG_ERROR : KM_LOG_INFO, "IPsec %s from pid %d: %s",
		       env->ipsec_dataplane->enabled ? "on" : "off", (int)s->pid, err);
		break;
	case KMESH__IPC__ENVELOPE__BODY_ENROLL_QUERY:
		code = km_tables_enrolled(t, env->enroll_query->netns_cookie, err, sizeof(err));
		break;
	case KMESH__IPC__ENVELOPE__BODY_SYNC:
		if (env->sync->phase == KMESH__IPC__SYNC__PHASE__BEGIN) {
			km_tables_sync_begin(t);
			t->sync_owner = s->serial;
			w->sync_waypoints = 0;
			km_info("sync with the xDS agent (pid %d) begins", (int)s->pid);
		} else if (env->sync->phase == KMESH__IPC__SYNC__PHASE__END &&
			   (!t->sync_active || t->sync_owner != s->serial)) {
			/* a sync is the session's that began it: no other may sweep the rows */
			code = KMESH__IPC__CODE__BAD_REQUEST;
			snprintf(err, sizeof(err), "sync END without a BEGIN on this connection");
			km_warn("sync end from pid %d: %s", (int)s->pid, err);
		} else if (env->sync->phase == KMESH__IPC__SYNC__PHASE__END) {
			code = km_tables_sync_end(t, &applied, err, sizeof(err));
			if (code != KMESH__IPC__CODE__OK)
				km_warn("sync end from pid %d: %s", (int)s->pid, err);
			else /* the agent's whole state: does it name a waypoint? */
				km_demand_sync_end(w->dp, w->sync_waypoints);
			km_authz_recheck_release(w->recheck); /* the agent's state is whole again */
		} else {
			code = KMESH__IPC__CODE__BAD_REQUEST;
			snprintf(err, sizeof(err), "sync phase %d unknown", env->sync->phase);
		}
		break;
	case KMESH__IPC__ENVELOPE__BODY_DUMP:
		handle_dump(w, s, env);
		count(w, s, env, KMESH__IPC__CODE__OK);
		return;
	case KMESH__IPC__ENVELOPE__BODY_SET_LOG_LEVEL:
		km_ipc_server_set_log_level(s, env);
		count(w, s, env, KMESH__IPC__CODE__OK);
		return;
	case KMESH__IPC__ENVELOPE__BODY_SET_CONFIG:
		count(w, s, env, set_config(w, s, env));
		return;
	case KMESH__IPC__ENVELOPE__BODY_POD_SOCKETS: /* answered with the sockets attached */
		count(w, s, env, km_mw_pod_sockets(t, s, env));
		return;
	case KMESH__IPC__ENVELOPE__BODY_TUNNEL_CGROUP:
		if (km_dataplane_tunnel_cgroup(w->dp, env->tunnel_cgroup->cgroup_id, err,
					       sizeof(err)) != 0)
			code = KMESH__IPC__CODE__NOT_FOUND;
		break;
	case KMESH__IPC__ENVELOPE__BODY_SUBSCRIBE:
		if (env->subscribe->conn_events &&
		    km_mw_events_subscribe(w->events, s, env->subscribe->opens, err, sizeof(err)) != 0)
			code = KMESH__IPC__CODE__INTERNAL;
		km_demand_opens(w->dp, w->events, 0);
		break;
	default:
		code = KMESH__IPC__CODE__BAD_REQUEST;
		snprintf(err, sizeof(err), "the map writer does not take this message");
		break;
	}
	if (t->authz_changes != authz_changes)
		km_authz_recheck_request(w->recheck); /* open connections may be denied now */
	km_msg_reply(&s->conn, env->request_id, code, err, applied);
	count(w, s, env, code);
}
