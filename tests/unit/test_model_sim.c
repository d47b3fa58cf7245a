/* test_model_sim.c — the model at random and at scale: a randomized run that applies every
 * emitted op to a simulated set of tables and checks after EACH op what BPF relies on (no
 * frontend, count or endpoint ever points at a missing row), after each flush that the tables hold
 * exactly the model's state and that the frontend rows equal a model built from scratch; a
 * ceiling on loading one big service and on removing one waypoint's dependents (linear, against
 * a same-run baseline), and those dependents tracked through random changes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "services/xds-agent/model/model.h"
#include "shared/addr.h"
#include "shared/log.h"
#include "tests/unit/model_builders.h"

/* ---- scale ------------------------------------------------------------------------------------ */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Load n workloads, into one service (one) or each into its own (its own service per workload:
 * the same work per workload with no list that grows); with own_port, each maps the service's
 * port 80 to 9090 of its own (the service says 8080): a port-override row per workload. Returns
 * seconds. */
static double load_members(int n, int one, int own_port)
{
	struct km_oplist l;
	struct km_model m;
	double t0;

	km_oplist_init(&l);
	km_model_init(&m, &l, NULL);
	t0 = now_s();
	for (int i = 0; i < n; i++) {
		char uid[32], svc_name[32], ip[32];

		snprintf(uid, sizeof(uid), "w%d", i);
		snprintf(svc_name, sizeof(svc_name), "ns/s%d", one ? 0 : i);
		snprintf(ip, sizeof(ip), "10.%d.%d.%d", 64 + (i >> 16), (i >> 8) & 255, i & 255);
		if (!one || i == 0) {
			char vip[32];

			snprintf(vip, sizeof(vip), "10.96.%d.%d", (i >> 8) & 255, i & 255);
			km_model_upsert_service(&m, svc(svc_name, vip, 80, 8080));
		}
		{
			struct km_workload_res *w = wl(uid, ip, KM_WORKLOAD_HEALTHY, 1, svc_name);

			if (own_port) {
				*km_workload_res_port_array(w) = calloc(1, sizeof(struct km_port));
				(*km_workload_res_port_array(w))[0] = (struct km_port){ 80, 9090 };
				w->services[0].n_ports = 1;
			}
			km_model_upsert_workload(&m, w);
		}
		if (i % 4096 == 4095) { /* as the agent does: flushed per slice of a response */
			km_model_flush(&m);
			km_oplist_clear(&l);
		}
	}
	km_model_flush(&m);
	t0 = now_s() - t0;
	{
		const uint32_t *eps;

		struct km_model_stats st;

		assert_int_equal(km_model_endpoints(&m, "ns/s0", 0, &eps), one ? (size_t)n : 1);
		km_model_stats(&m, &st);
		assert_int_equal(st.port_overrides, own_port ? (size_t)n : 0);
	}
	km_model_free(&m);
	km_oplist_free(&l);
	return t0;
}

/* Loading one big service is linear: a new member is appended without searching the member list
 * or the endpoint slots (it cannot be in them). Quadratic, 30,000 members took ~10x the time of
 * 30,000 workloads in services of their own (and 1M took minutes); the ceiling is 3x. */
static void test_big_service_loads_in_linear_time(void **state)
{
	double own, big;

	(void)state;
	own = load_members(30000, 0, 0);
	big = load_members(30000, 1, 0);
	print_message("30000 members: %.3f s in one service, %.3f s in their own\n", big, own);
	assert_true(big <= 3 * own);
}

/* The same with a port-override row per member: a member's rows are found by key, not by a scan
 * of the service's rows (which made loading, and any member's change, O(rows): 20,000 members
 * took 18x the time of services of 10 in bench/big_service_bench.c's variant). */
static void test_big_service_with_overrides_loads_in_linear_time(void **state)
{
	double own, big;

	(void)state;
	own = load_members(30000, 0, 1);
	big = load_members(30000, 1, 1);
	print_message("30000 members with their own port: %.3f s in one service, %.3f s in their own\n",
		      big, own);
	assert_true(big <= 3 * own);
}

/* A workload naming the waypoint service wp by hostname, as every workload of a namespace with a
 * waypoint does. */
static struct km_workload_res *wl_naming_waypoint(int i, const char *wp)
{
	char uid[32], ip[32];
	struct km_workload_res *w;

	snprintf(uid, sizeof(uid), "w%d", i);
	snprintf(ip, sizeof(ip), "10.%d.%d.%d", 64 + (i >> 16), (i >> 8) & 255, i & 255);
	w = wl(uid, ip, KM_WORKLOAD_HEALTHY, 0);
	w->rare->wp = (struct km_waypoint){ .kind = KM_WAYPOINT_HOSTNAME, .hbone_port = 15008 };
	w->rare->wp.service = strdup(wp);
	return w;
}

/* Load n workloads naming one waypoint (one) or each its own, then remove them newest first.
 * Returns the seconds the removals took. */
static double remove_waypoint_dependents(int n, int one)
{
	struct km_oplist l;
	struct km_model m;
	char wp[32], uid[32];
	double t0;

	km_oplist_init(&l);
	km_model_init(&m, &l, NULL);
	for (int i = 0; i < n; i++) {
		snprintf(wp, sizeof(wp), "ns/wp%d", one ? 0 : i);
		km_model_upsert_workload(&m, wl_naming_waypoint(i, wp));
		if (i % 4096 == 4095) {
			km_model_flush(&m);
			km_oplist_clear(&l);
		}
	}
	km_model_flush(&m);
	km_oplist_clear(&l);
	t0 = now_s();
	for (int i = n - 1; i >= 0; i--) {
		snprintf(uid, sizeof(uid), "w%d", i);
		km_model_remove_workload(&m, uid);
		if (i % 4096 == 0) {
			km_model_flush(&m);
			km_oplist_clear(&l);
		}
	}
	km_model_flush(&m);
	t0 = now_s() - t0;
	assert_int_equal(m.n_workloads, 0);
	km_model_free(&m);
	km_oplist_free(&l);
	return t0;
}

/* Removing a workload that names a waypoint is O(1): the waypoint service's list of dependents
 * is not searched (each workload knows its index there). With a search, 30,000 workloads of one
 * namespace's waypoint removed newest first took ~4x the time of 30,000 naming their own (0.65
 * against 0.16 s; it grows with n); the ceiling is 3x. */
static void test_waypoint_dependents_removed_in_linear_time(void **state)
{
	double own, one;

	(void)state;
	own = remove_waypoint_dependents(30000, 0);
	one = remove_waypoint_dependents(30000, 1);
	print_message("30000 dependents removed: %.3f s of one waypoint, %.3f s of their own\n", one, own);
	assert_true(one <= 3 * own);
}

/* The dependents' indexes stay right through removals and moves in any order: when the waypoint
 * gets its address, exactly the workloads still naming it have their backend rows rewritten. */
static void test_waypoint_dependents_tracked(void **state)
{
	enum { N = 400 };
	int names_wp[N], present[N], n_left = 0, seen[N];
	struct km_model_stats st;
	struct km_oplist l;
	struct km_model m;
	char uid[32];

	(void)state;
	srand(7);
	km_oplist_init(&l);
	km_model_init(&m, &l, NULL);
	for (int i = 0; i < N; i++) {
		km_model_upsert_workload(&m, wl_naming_waypoint(i, "ns/wp"));
		names_wp[i] = present[i] = 1;
	}
	km_model_flush(&m);
	for (int k = 0; k < 3 * N; k++) { /* remove, move to another waypoint, or come back */
		int i = rand() % N, what = rand() % 3;

		snprintf(uid, sizeof(uid), "w%d", i);
		if (what == 0 && present[i]) {
			km_model_remove_workload(&m, uid);
			present[i] = 0;
		} else {
			names_wp[i] = what != 1;
			km_model_upsert_workload(&m, wl_naming_waypoint(i, names_wp[i] ? "ns/wp" : "ns/other"));
			present[i] = 1;
		}
		if (k % 50 == 0)
			km_model_flush(&m);
	}
	km_model_flush(&m);
	for (int i = 0; i < N; i++)
		n_left += present[i] && names_wp[i];
	km_model_stats(&m, &st);
	assert_true(n_left > 50);
	assert_true(st.pending_waypoints > (size_t)n_left); /* ns/other's wait too */
	km_oplist_clear(&l);
	km_model_upsert_service(&m, svc("ns/wp", "10.96.9.9", 15008, 15008));
	km_model_flush(&m);
	memset(seen, 0, sizeof(seen));
	for (size_t k = 0; k < l.n; k++) {
		if (l.ops[k].table != KM_OP_BACKEND || l.ops[k].del)
			continue;
		for (int i = 0; i < N; i++) {
			snprintf(uid, sizeof(uid), "w%d", i);
			if (km_ids_fnv1a(uid) == l.ops[k].be.id)
				seen[i] = 1;
		}
	}
	for (int i = 0; i < N; i++)
		if (seen[i] != (present[i] && names_wp[i]))
			fail_msg("w%d: backend rewritten %d, names the waypoint %d", i, seen[i],
				 present[i] && names_wp[i]);
	km_model_stats(&m, &st);
	assert_true(st.pending_waypoints > 0); /* ns/other's */
	km_model_free(&m);
	km_oplist_free(&l);
}

/* ---- randomized simulation ------------------------------------------------------------------- */

#define SIM_SVCS 4
#define SIM_WLS 12
#define SIM_SLOTS 64
#define SIM_NODES 3

/* Simulated tables, indexed by small numbers derived from ids and addresses. */
struct sim {
	int svc_row[SIM_SVCS];
	uint32_t svc_count[SIM_SVCS][KM_PRIO_COUNT];
	uint32_t ep[SIM_SVCS][KM_PRIO_COUNT][SIM_SLOTS]; /* backend id, 0 = no row */
	uint64_t cum[SIM_SVCS][KM_PRIO_COUNT][SIM_SLOTS]; /* cumulative weight of the slot */
	uint32_t ep4[SIM_SVCS][KM_PRIO_COUNT][SIM_SLOTS]; /* the slot's inline IPv4 address */
	uint64_t total[SIM_SVCS][KM_PRIO_COUNT];
	int be_row[SIM_WLS];
	uint16_t ovr[SIM_SVCS][SIM_WLS]; /* override target for port 80, 0 = no row */
	struct fe_rows fe;               /* frontends by (address, port) */
};

static char sim_names[SIM_SVCS + SIM_WLS][32];

/* Ops are applied after the batch that emitted them, when a name may already be released:
 * map ids back through the hash (these names do not collide, so id == FNV-1a(name)). */
static int svc_index(uint32_t id)
{
	for (int i = 0; i < SIM_SVCS; i++)
		if (km_ids_fnv1a(sim_names[i]) == id)
			return i;
	return -1;
}

static int wl_index(uint32_t id)
{
	for (int i = 0; i < SIM_WLS; i++)
		if (km_ids_fnv1a(sim_names[SIM_SVCS + i]) == id)
			return i;
	return -1;
}

static int backend_live(const struct sim *s, uint32_t id)
{
	for (int w = 0; w < SIM_WLS; w++)
		if (s->be_row[w] == (int)id)
			return 1;
	return 0;
}

static void sim_check_exposed(const struct sim *s, int svc, uint32_t backend_id);

/* Addresses are drawn from small pools, so workloads share pod IPs and services share VIPs (a
 * pod IP reused, a VIP moving between services): rows are found by key, owners by id. */
static void sim_apply(struct sim *s, const struct km_op *o)
{
	switch (o->table) {
	case KM_OP_BACKEND: {
		int w = wl_index(o->be.id);

		assert_true(w >= 0);
		s->be_row[w] = o->del ? 0 : (int)o->be.id;
		return;
	}
	case KM_OP_SERVICE: {
		int i = svc_index(o->svc.id);

		assert_true(i >= 0);
		if (o->del) {
			s->svc_row[i] = 0;
			memset(s->svc_count[i], 0, sizeof(s->svc_count[i]));
			return;
		}
		/* the writer's check: a count exposes only written endpoints */
		for (int p = 0; p < KM_PRIO_COUNT; p++)
			for (uint32_t k = 0; k < o->svc.count[p]; k++)
				if (!s->ep[i][p][k])
					fail_msg("service %d prio %d count %u exposes missing slot %u", i, p,
						 o->svc.count[p], k);
		for (int p = 0; p < KM_PRIO_COUNT; p++)
			for (uint32_t k = s->svc_row[i] ? s->svc_count[i][p] : 0; k < o->svc.count[p]; k++)
				sim_check_exposed(s, i, s->ep[i][p][k]);
		s->svc_row[i] = (int)o->svc.id;
		memcpy(s->svc_count[i], o->svc.count, sizeof(s->svc_count[i]));
		memcpy(s->total[i], o->svc.weight_total, sizeof(s->total[i]));
		return;
	}
	case KM_OP_ENDPOINT: {
		int i = svc_index(o->ep.service_id);

		assert_true(i >= 0 && o->ep.index < SIM_SLOTS && o->ep.prio < KM_PRIO_COUNT);
		if (!o->del && !backend_live(s, o->ep.backend_id))
			fail_msg("endpoint names backend %u, which has no row", o->ep.backend_id);
		s->ep[i][o->ep.prio][o->ep.index] = o->del ? 0 : o->ep.backend_id;
		s->cum[i][o->ep.prio][o->ep.index] = o->del ? 0 : o->ep.cum_weight;
		s->ep4[i][o->ep.prio][o->ep.index] = o->del ? 0 : o->ep.addr4;
		if (!o->del && s->svc_row[i] && o->ep.index < s->svc_count[i][o->ep.prio])
			sim_check_exposed(s, i, o->ep.backend_id);
		return;
	}
	case KM_OP_PORT_OVERRIDE: {
		int i = svc_index(o->po.service_id), w = wl_index(o->po.backend_id);

		assert_true(i >= 0 && w >= 0 && o->po.port == 80);
		if (!o->del && !backend_live(s, o->po.backend_id))
			fail_msg("override names backend %u, which has no row", o->po.backend_id);
		s->ovr[i][w] = o->del ? 0 : o->po.target_port;
		return;
	}
	default:
		if (!o->del && o->fe.kind == KM_FRONTEND_SERVICE) {
			int i = svc_index(o->fe.upstream_id);

			assert_true(i >= 0);
			if (s->svc_row[i] != (int)o->fe.upstream_id)
				fail_msg("frontend of service %d written before its service row", i);
		} else if (!o->del && !backend_live(s, o->fe.upstream_id)) {
			fail_msg("workload frontend written before its backend row");
		}
		fe_apply(&s->fe, o);
		return;
	}
}

/* What BPF may rely on at every moment. */
static void sim_invariants(const struct sim *s)
{
	for (size_t k = 0; k < s->fe.n; k++) {
		const struct km_op *r = &s->fe.rows[k];

		if (r->fe.kind == KM_FRONTEND_SERVICE && !s->svc_row[svc_index(r->fe.upstream_id)])
			fail_msg("frontend of service %d without its service row",
				 svc_index(r->fe.upstream_id));
		if (r->fe.kind == KM_FRONTEND_WORKLOAD && !backend_live(s, r->fe.upstream_id))
			fail_msg("pod frontend of %d without backend row", wl_index(r->fe.upstream_id));
	}
	for (int i = 0; i < SIM_SVCS; i++) {
		for (int p = 0; s->svc_row[i] && p < KM_PRIO_COUNT; p++)
			for (uint32_t k = 0; k < s->svc_count[i][p]; k++)
				if (!backend_live(s, s->ep[i][p][k]))
					fail_msg("service %d prio %d slot %u has no live backend", i, p, k);
	}
}

/* A backend newly exposed (by a count increase or a slot overwrite) that has its own target port
 * must only be reachable through frontends that say to look the override up; otherwise its
 * first connections would go to the service's port. */
static void sim_check_exposed(const struct sim *s, int svc, uint32_t backend_id)
{
	int w = wl_index(backend_id);

	for (size_t k = 0; w >= 0 && s->ovr[svc][w] && k < s->fe.n; k++)
		if (s->fe.rows[k].fe.kind == KM_FRONTEND_SERVICE &&
		    svc_index(s->fe.rows[k].fe.upstream_id) == svc &&
		    !(s->fe.rows[k].fe.flags & KM_FE_F_PORT_OVERRIDES))
			fail_msg("service %d exposes backend %d, which has its own port, through a "
				 "frontend without the override flag", svc, w);
}

static uint32_t inline4_of(const struct km_workload_res *r)
{
	if (km_wl_waypoint(r)->kind != KM_WAYPOINT_NONE && km_wl_waypoint(r)->hbone_port)
		return 0;
	for (size_t i = 0; i < r->n_addrs; i++)
		if (km_addr_is_v4(&r->addrs[i]))
			return r->addrs[i].words[3];
	return 0;
}

/* After a flush the tables hold exactly the model's intent, derived here from the resources. */
static void sim_matches_model(const struct sim *s, const struct km_model *m)
{
	for (int i = 0; i < SIM_SVCS; i++) {
		const struct km_service_res *sr = km_model_find_service(m, sim_names[i]);
		int any_override = 0;

		assert_int_equal(!!s->svc_row[i], sr != NULL);
		for (int w = 0; w < SIM_WLS; w++) {
			const struct km_workload_res *r = km_model_find_workload(m, sim_names[SIM_SVCS + w]);
			uint32_t id = km_ids_fnv1a(sim_names[SIM_SVCS + w]);
			const struct km_membership *ms = r ? km_workload_membership(r, sim_names[i]) : NULL;
			int want = sr && ms && r->n_addrs && r->status == KM_WORKLOAD_HEALTHY;
			uint32_t t = want ? km_target_port(sr, r, ms, 80) : 0;
			int times = 0;

			for (int p = 0; p < KM_PRIO_COUNT; p++)
				for (uint32_t k = 0; k < s->svc_count[i][p]; k++)
					times += s->ep[i][p][k] == id;
			assert_int_equal(times, want);
			/* an override row exactly where the workload's port differs */
			assert_int_equal(s->ovr[i][w], want && t != km_target_port(sr, NULL, NULL, 80) ? t : 0);
			any_override |= s->ovr[i][w] != 0;
		}
		for (int p = 0; p < KM_PRIO_COUNT; p++) {
			const uint32_t *eps;
			size_t n = km_model_endpoints(m, sim_names[i], (uint32_t)p, &eps);

			uint64_t sum = 0;

			assert_int_equal(s->svc_count[i][p], sr ? n : 0);
			for (size_t k = 0; k < SIM_SLOTS; k++)
				assert_int_equal(s->ep[i][p][k], sr && k < n ? eps[k] : 0);
			/* weights: each slot's cumulative weight sums the capacities up to it */
			for (size_t k = 0; sr && k < n; k++) {
				const struct km_workload_res *r =
					km_model_find_workload(m, sim_names[SIM_SVCS + wl_index(eps[k])]);

				sum += km_wl_capacity(r) ? km_wl_capacity(r) : 1;
				assert_int_equal(s->cum[i][p][k], sum);
				/* the address the slot carries: the workload's first IPv4, while it has
				 * no waypoint of its own */
				assert_int_equal(s->ep4[i][p][k], inline4_of(r));
			}
			if (sr)
				assert_int_equal(s->total[i][p], sum);
		}
		for (size_t k = 0; k < s->fe.n; k++)
			if (s->fe.rows[k].fe.kind == KM_FRONTEND_SERVICE &&
			    svc_index(s->fe.rows[k].fe.upstream_id) == i)
				assert_int_equal(!!(s->fe.rows[k].fe.flags & KM_FE_F_PORT_OVERRIDES),
						 any_override);
	}
}

/* What each resource was last given, to build the same state again from scratch. */
struct sim_spec {
	int present;
	int addr;             /* pool index, -1 = none */
	uint32_t target;      /* services: target port; workloads: status */
	uint32_t mode;        /* services: lb mode; workloads: capacity */
	int node, mask, wp;   /* workloads */
	uint32_t own[SIM_SVCS]; /* workloads: own target port per service, 0 = none */
};

static const char *sim_nodes[SIM_NODES] = { "n0", "n1", "n2" };

static struct km_service_res *sim_service(int i, const struct sim_spec *sp)
{
	char vip[32];

	snprintf(vip, sizeof(vip), "10.96.0.%d", sp->addr);
	return with_mode(svc(sim_names[i], vip, 80, sp->target), sp->mode, 1, KM_SCOPE_NODE);
}

static struct km_workload_res *sim_workload(int w, const struct sim_spec *sp)
{
	char ip[32];
	struct km_workload_res *res;

	snprintf(ip, sizeof(ip), "10.0.0.%d", sp->addr + 1);
	res = wl(sim_names[SIM_SVCS + w], sp->addr >= 0 ? ip : NULL, sp->target, 0);
	if (sp->wp)
		with_wp(res);
	res->where->node = strdup(sim_nodes[sp->node]);
	res->rare->capacity = sp->mode;
	*km_workload_res_port_array(res) = calloc(SIM_SVCS, sizeof(struct km_port));
	for (int i = 0, n_ports = 0; i < SIM_SVCS; i++) {
		struct km_membership *ms;

		if (!(sp->mask & (1 << i)))
			continue;
		ms = &res->services[res->n_services++];
		ms->service = strdup(sim_names[i]);
		if (sp->own[i]) {
			(*km_workload_res_port_array(res))[n_ports] = (struct km_port){ 80, sp->own[i] };
			ms->port_at = (uint32_t)n_ports++;
			ms->n_ports = 1;
		}
	}
	assert_int_equal(km_workload_res_normalize(res), 0);
	return res;
}

/* The frontend rows a model built from scratch out of the same resources writes, in the
 * opposite order of names, must be the rows the tables hold now: which resource an address
 * names may not depend on the order the changes came in. */
static void sim_matches_scratch(const struct sim *s, const struct sim_spec *spec)
{
	struct km_oplist l;
	struct km_model m;
	static struct fe_rows t;
	char a[KM_ADDR_STRLEN];

	km_oplist_init(&l);
	km_model_init(&m, &l, NULL);
	km_model_set_local_node(&m, "n0");
	memset(&t, 0, sizeof(t));
	for (int i = SIM_SVCS - 1; i >= 0; i--)
		if (spec[i].present)
			km_model_upsert_service(&m, sim_service(i, &spec[i]));
	for (int w = SIM_WLS - 1; w >= 0; w--)
		if (spec[SIM_SVCS + w].present)
			km_model_upsert_workload(&m, sim_workload(w, &spec[SIM_SVCS + w]));
	km_model_flush(&m);
	for (size_t k = 0; k < l.n; k++)
		if (l.ops[k].table == KM_OP_FRONTEND)
			fe_apply(&t, &l.ops[k]);
	assert_int_equal(s->fe.n, t.n);
	for (size_t k = 0; k < t.n; k++) {
		const struct km_op *want = &t.rows[k], *got = NULL;

		for (size_t j = 0; j < s->fe.n; j++)
			if (!memcmp(&s->fe.rows[j].fe.addr, &want->fe.addr, sizeof(want->fe.addr)) &&
			    s->fe.rows[j].fe.port == want->fe.port)
				got = &s->fe.rows[j];
		if (!got)
			fail_msg("%s:%u has no row", km_addr_format(&want->fe.addr, a), want->fe.port);
		if (got->fe.upstream_id != want->fe.upstream_id ||
		    got->fe.target_port != want->fe.target_port || got->fe.flags != want->fe.flags)
			fail_msg("%s:%u names %u (port %u, flags %u), from scratch %u (port %u, flags %u)",
				 km_addr_format(&want->fe.addr, a), want->fe.port, got->fe.upstream_id,
				 got->fe.target_port, got->fe.flags, want->fe.upstream_id,
				 want->fe.target_port, want->fe.flags);
	}
	km_model_free(&m);
	km_oplist_free(&l);
}

static void test_random_sequences_keep_invariants(void **state)
{
	struct km_oplist l;
	struct km_model m;
	static struct sim sim;
	static struct sim_spec spec[SIM_SVCS + SIM_WLS];
	size_t applied = 0, shared = 0;

	(void)state;
	srand(20261121);
	km_log_set_level(KM_LOG_WARN);
	for (int i = 0; i < SIM_SVCS; i++)
		snprintf(sim_names[i], sizeof(sim_names[i]), "ns/svc%d", i);
	for (int i = 0; i < SIM_WLS; i++)
		snprintf(sim_names[SIM_SVCS + i], sizeof(sim_names[0]), "Kubernetes//Pod/ns/w%d", i);
	km_oplist_init(&l);
	km_model_init(&m, &l, NULL);
	km_model_set_local_node(&m, "n0");
	memset(&sim, 0, sizeof(sim));
	memset(spec, 0, sizeof(spec));

	for (int step = 0; step < 4000; step++) {
		int r = rand() % 10;

		if (r < 2) {
			int i = rand() % SIM_SVCS;
			struct sim_spec *sp = &spec[i];
			static const uint32_t modes[] = { KM_LB_RANDOM, KM_LB_FAILOVER, KM_LB_STRICT };

			sp->present = 1;
			sp->addr = rand() % 3; /* 4 services, 3 VIPs */
			sp->target = (uint32_t)(8080 + rand() % 2);
			sp->mode = modes[rand() % 3];
			km_model_upsert_service(&m, sim_service(i, sp));
		} else if (r < 3) {
			int i = rand() % SIM_SVCS;

			spec[i].present = 0;
			km_model_remove_service(&m, sim_names[i]);
		} else if (r < 9) {
			int w = rand() % SIM_WLS;
			struct sim_spec *sp = &spec[SIM_SVCS + w];

			sp->present = 1;
			sp->mask = rand() % 16;
			sp->addr = rand() % 8 ? rand() % 9 : -1; /* 12 workloads, 9 pod IPs */
			sp->target = rand() % 4 ? KM_WORKLOAD_HEALTHY : KM_WORKLOAD_UNHEALTHY;
			sp->node = rand() % SIM_NODES;
			sp->wp = rand() % 4 != 0; /* most have one: their pod IPs get rows */
			sp->mode = rand() % 3 ? 1 : (uint32_t)(rand() % 4); /* 0 reads as 1 */
			for (int i = 0; i < SIM_SVCS; i++) /* this workload's own target port */
				sp->own[i] = rand() % 3 == 0 ? (uint32_t)(9000 + rand() % 2) : 0;
			km_model_upsert_workload(&m, sim_workload(w, sp));
		} else {
			int w = rand() % SIM_WLS;

			spec[SIM_SVCS + w].present = 0;
			km_model_remove_workload(&m, sim_names[SIM_SVCS + w]);
		}
		if (rand() % 3 == 0 || step == 3999) {
			km_model_flush(&m);
			assert_false(l.oom);
			for (size_t k = 0; k < l.n; k++) {
				sim_apply(&sim, &l.ops[k]);
				sim_invariants(&sim);
			}
			applied += l.n;
			km_oplist_clear(&l);
			sim_matches_model(&sim, &m);
			sim_matches_scratch(&sim, spec);
			for (int a = 0; a < SIM_WLS; a++) /* how often an address had two holders */
				for (int b = a + 1; b < SIM_WLS; b++)
					shared += spec[SIM_SVCS + a].present && spec[SIM_SVCS + b].present &&
						  spec[SIM_SVCS + a].addr >= 0 &&
						  spec[SIM_SVCS + a].addr == spec[SIM_SVCS + b].addr;
		}
	}
	assert_true(applied > 1000);
	assert_true(shared > 100);
	km_model_free(&m);
	km_oplist_free(&l);
	km_log_set_level(KM_LOG_INFO);
}
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_sequences_keep_invariants),
		cmocka_unit_test(test_big_service_loads_in_linear_time),
		cmocka_unit_test(test_big_service_with_overrides_loads_in_linear_time),
		cmocka_unit_test(test_waypoint_dependents_removed_in_linear_time),
		cmocka_unit_test(test_waypoint_dependents_tracked),
	};

	return cmocka_run_group_tests_name("model_sim", tests, NULL, NULL);
}
