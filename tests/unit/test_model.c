/* test_model.c — the model's table operations: exact order for the basic cases (new service,
 * back-fill, swap-with-last removal, unhealthy, service removal), and a randomized run that
 * applies every emitted op to a simulated set of tables and checks after EACH op what BPF
 * relies on (no frontend, count or endpoint ever points at a missing row), and after each flush
 * that the tables hold exactly the model's state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "services/xds-agent/model.h"
#include "shared/addr.h"
#include "shared/log.h"

#define SIM_SVCS_MAX 8

/* ---- resource builders ----------------------------------------------------------------------- */

static struct km_service_res *svc(const char *name, const char *vip, uint32_t port, uint32_t target)
{
	struct km_service_res *s = calloc(1, sizeof(*s));

	s->name = strdup(name);
	s->vips = calloc(1, sizeof(*s->vips));
	if (vip) {
		km_addr_parse(vip, &s->vips[0]);
		s->n_vips = 1;
	}
	s->ports = calloc(1, sizeof(*s->ports));
	s->ports[0].service_port = port;
	s->ports[0].target_port = target;
	s->n_ports = 1;
	return s;
}

static struct km_workload_res *wl(const char *uid, const char *ip, uint32_t status, int n_svcs, ...)
{
	struct km_workload_res *w = calloc(1, sizeof(*w));
	va_list ap;

	w->uid = strdup(uid);
	w->addrs = calloc(1, sizeof(*w->addrs));
	if (ip) {
		km_addr_parse(ip, &w->addrs[0]);
		w->n_addrs = 1;
	}
	w->status = status;
	w->services = calloc((size_t)n_svcs + SIM_SVCS_MAX, sizeof(*w->services)); /* room for the random test */
	va_start(ap, n_svcs);
	for (int i = 0; i < n_svcs; i++)
		w->services[w->n_services++].service = strdup(va_arg(ap, const char *));
	va_end(ap);
	assert_int_equal(km_workload_res_normalize(w), 0);
	w->capacity = 1;
	return w;
}

/* The workload with a waypoint of its own (an address): only such a workload gets pod-IP
 * frontend rows, since a connect() to a pod IP reads its row only to go to that waypoint. */
static struct km_workload_res *with_wp(struct km_workload_res *w)
{
	w->waypoint = (struct km_waypoint){ .kind = KM_WAYPOINT_ADDRESS, .hbone_port = 15008 };
	km_addr_parse("10.99.0.1", &w->waypoint.addr);
	return w;
}

/* ---- op matching ----------------------------------------------------------------------------- */

/* A compact text form of an op: "BE+ 5", "EP+ s/0/1=w", "SVC+ s 2", "FE- 10.0.0.1:80" ... */
static const char *name_of(const struct km_model *m, uint32_t id)
{
	const char *n = km_model_name_of(m, id);

	return n ? n : "?"; /* released ids (rows being deleted) */
}

static void op_text(const struct km_model *m, const struct km_op *o, char *buf, size_t len)
{
	char a[KM_ADDR_STRLEN];
	const char *sign = o->del ? "-" : "+";

	switch (o->table) {
	case KM_OP_BACKEND:
		snprintf(buf, len, "BE%s %s", sign, name_of(m, o->be.id));
		break;
	case KM_OP_SERVICE:
		snprintf(buf, len, "SVC%s %s %u", sign, name_of(m, o->svc.id),
			 o->del ? 0 : o->svc.count[0]);
		break;
	case KM_OP_ENDPOINT:
		snprintf(buf, len, "EP%s %u=%s", sign, o->ep.index,
			 o->del ? "" : name_of(m, o->ep.backend_id));
		break;
	case KM_OP_PORT_OVERRIDE:
		snprintf(buf, len, "PO%s %u=%u", sign, o->po.port, o->po.target_port);
		break;
	default:
		snprintf(buf, len, "FE%s %s:%u", sign, km_addr_format(&o->fe.addr, a), o->fe.port);
		break;
	}
}

static void expect_ops(struct km_model *m, struct km_oplist *l, const char *const *want, size_t n)
{
	char got[128];

	for (size_t i = 0; i < l->n && i < n; i++) {
		op_text(m, &l->ops[i], got, sizeof(got));
		if (strcmp(got, want[i]) != 0)
			fail_msg("op %zu: got '%s', want '%s'", i, got, want[i]);
	}
	if (l->n != n) {
		for (size_t i = 0; i < l->n; i++) {
			op_text(m, &l->ops[i], got, sizeof(got));
			print_message("  op %zu: %s\n", i, got);
		}
		fail_msg("got %zu ops, want %zu", l->n, n);
	}
	km_oplist_clear(l);
}

#define EXPECT(m, l, ...)                                                                          \
	do {                                                                                       \
		const char *const w_[] = { __VA_ARGS__ };                                          \
		expect_ops(m, l, w_, sizeof(w_) / sizeof(w_[0]));                                  \
	} while (0)

#define SVC "demo/web"

struct fx {
	struct km_oplist l;
	struct km_model m;
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	km_oplist_init(&f->l);
	km_model_init(&f->m, &f->l, NULL);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	km_model_free(&f->m);
	km_oplist_free(&f->l);
	free(f);
	return 0;
}

/* The service with VIP 10.96.0.1:80 and n healthy workloads w1..wn (10.0.0.1..n), flushed;
 * the ops list is left empty. */
static void seed(struct fx *f, int n, uint32_t target)
{
	km_model_upsert_service(&f->m, svc(SVC, "10.96.0.1", 80, target));
	for (int i = 1; i <= n; i++) {
		char uid[8], ip[16];

		snprintf(uid, sizeof(uid), "w%d", i);
		snprintf(ip, sizeof(ip), "10.0.0.%d", i);
		km_model_upsert_workload(&f->m, wl(uid, ip, KM_WORKLOAD_HEALTHY, 1, SVC));
	}
	km_model_flush(&f->m);
	km_oplist_clear(&f->l);
}

static void test_new_service_then_workloads(void **state)
{
	struct fx *f = *state;

	km_model_upsert_service(&f->m, svc(SVC, "10.96.0.1", 80, 8080));
	km_model_flush(&f->m);
	EXPECT(&f->m, &f->l, "SVC+ demo/web 0", "FE+ 10.96.0.1:80");
	assert_int_equal(f->l.n, 0);

	km_model_upsert_workload(&f->m, wl("w1", "10.0.0.1", KM_WORKLOAD_HEALTHY, 1, SVC));
	km_model_upsert_workload(&f->m, with_wp(wl("w2", "10.0.0.2", KM_WORKLOAD_HEALTHY, 1, SVC)));
	km_model_flush(&f->m);
	/* backend before endpoint before the count; one count row for the whole group; a pod-IP
	 * row only for w2, which has a waypoint of its own */
	EXPECT(&f->m, &f->l, "BE+ w1", "BE+ w2", "EP+ 0=w1", "EP+ 1=w2", "SVC+ demo/web 2",
	       "FE+ 10.0.0.2:0");

	/* an identical update emits nothing */
	km_model_upsert_workload(&f->m, wl("w1", "10.0.0.1", KM_WORKLOAD_HEALTHY, 1, SVC));
	km_model_upsert_service(&f->m, svc(SVC, "10.96.0.1", 80, 8080));
	km_model_flush(&f->m);
	assert_int_equal(f->l.n, 0);
}

static void test_workload_before_service_is_back_filled(void **state)
{
	struct fx *f = *state;

	km_model_upsert_workload(&f->m, wl("w1", "10.0.0.1", KM_WORKLOAD_HEALTHY, 1, SVC));
	km_model_flush(&f->m);
	EXPECT(&f->m, &f->l, "BE+ w1");
	km_model_upsert_service(&f->m, svc(SVC, "10.96.0.1", 80, 8080));
	km_model_flush(&f->m);
	EXPECT(&f->m, &f->l, "EP+ 0=w1", "SVC+ demo/web 1", "FE+ 10.96.0.1:80");
}

/* A hash with three values: nearly every workload is displaced from its home id by a collision
 * and must still be found, named, listed, versioned, replayed and removed by its uid. */
static uint32_t crowded_hash(const char *name)
{
	return 1000u + (uint32_t)(strlen(name) % 3);
}

static void count_name(void *arg, const char *name)
{
	(void)name;
	(*(size_t *)arg)++;
}

#define LONG_VERSION "a-version-longer-than-the-inline-buffer-0123456789"

static void check_versions(void *arg, const char *name, const char *version)
{
	(void)arg;
	assert_string_equal(version, strcmp(name, "Kubernetes//Pod/ns/w1") == 0 ? LONG_VERSION : "v1");
}

static void test_workloads_found_despite_id_collisions(void **state)
{
	enum { N = 40 };
	struct km_oplist l;
	struct km_model m;
	char uid[N][48], ip[32];
	uint32_t ids[N];
	size_t listed = 0, backends = 0;

	(void)state;
	km_oplist_init(&l);
	km_model_init(&m, &l, crowded_hash);
	for (int i = 0; i < N; i++) {
		snprintf(uid[i], sizeof(uid[i]), "Kubernetes//Pod/ns/w%d", i);
		snprintf(ip, sizeof(ip), "10.0.1.%d", i + 1);
		km_model_upsert_workload(&m, wl(uid[i], ip, KM_WORKLOAD_HEALTHY, 0));
	}
	for (int i = 0; i < N; i++) {
		ids[i] = km_model_id_of(&m, uid[i]);
		assert_true(ids[i] != 0);
		assert_non_null(km_model_find_workload(&m, uid[i]));
		assert_string_equal(km_model_name_of(&m, ids[i]), uid[i]);
		for (int j = 0; j < i; j++)
			assert_true(ids[i] != ids[j]);
	}
	/* an update keeps the id; removals leave the others findable */
	km_model_upsert_workload(&m, wl(uid[5], "10.0.2.5", KM_WORKLOAD_HEALTHY, 0));
	assert_int_equal(km_model_id_of(&m, uid[5]), ids[5]);
	for (int i = 0; i < N; i += 3)
		km_model_remove_workload(&m, uid[i]);
	for (int i = 0; i < N; i++) {
		assert_true((km_model_find_workload(&m, uid[i]) == NULL) == (i % 3 == 0));
		if (i % 3)
			km_model_set_version(&m, uid[i], "v1");
	}
	km_model_set_version(&m, uid[1], LONG_VERSION); /* replaces a short one */
	km_model_set_version(&m, uid[2], LONG_VERSION);
	km_model_set_version(&m, uid[2], "v1"); /* and back */
	km_model_each_version(&m, check_versions, NULL);
	km_model_each_workload(&m, count_name, &listed);
	assert_int_equal(listed, N - (N + 2) / 3);
	assert_int_equal(km_model_each_version(&m, NULL, NULL), listed);
	km_model_flush(&m);
	km_oplist_clear(&l);
	km_model_replay(&m);
	for (size_t k = 0; k < l.n; k++)
		backends += l.ops[k].table == KM_OP_BACKEND && !l.ops[k].del;
	assert_int_equal(backends, listed);
	km_model_free(&m);
	km_oplist_free(&l);
}

static void test_remove_swaps_last_into_hole(void **state)
{
	struct fx *f = *state;
	const uint32_t *eps;

	seed(f, 3, 0);

	km_model_remove_workload(&f->m, "w1");
	km_model_flush(&f->m);
	/* the last slot moves into the hole before the count shrinks; the old
	 * last slot goes after the count; the backend row goes last */
	EXPECT(&f->m, &f->l, "EP+ 0=w3", "SVC+ demo/web 2", "EP- 2=", "BE- ?");
	assert_int_equal(km_model_endpoints(&f->m, SVC, 0, &eps), 2);
	assert_int_equal(eps[0], km_model_id_of(&f->m, "w3"));
	assert_int_equal(eps[1], km_model_id_of(&f->m, "w2"));

	/* removing the last slot needs no move */
	km_model_remove_workload(&f->m, "w2");
	km_model_flush(&f->m);
	EXPECT(&f->m, &f->l, "SVC+ demo/web 1", "EP- 1=", "BE- ?");
}

static void test_unhealthy_leaves_endpoints_but_keeps_backend(void **state)
{
	struct fx *f = *state;

	seed(f, 2, 0);
	km_model_upsert_workload(&f->m, wl("w1", "10.0.0.1", KM_WORKLOAD_UNHEALTHY, 1, SVC));
	km_model_flush(&f->m);
	EXPECT(&f->m, &f->l, "EP+ 0=w2", "SVC+ demo/web 1", "EP- 1=");
	km_model_upsert_workload(&f->m, wl("w1", "10.0.0.1", KM_WORKLOAD_HEALTHY, 1, SVC));
	km_model_flush(&f->m);
	EXPECT(&f->m, &f->l, "EP+ 1=w1", "SVC+ demo/web 2");
}

static void test_service_changes_and_removal(void **state)
{
	struct fx *f = *state;

	seed(f, 1, 8080);

	/* new VIP: the old frontend goes, the new one comes */
	km_model_upsert_service(&f->m, svc(SVC, "10.96.0.2", 80, 8080));
	km_model_flush(&f->m);
	EXPECT(&f->m, &f->l, "FE- 10.96.0.1:80", "FE+ 10.96.0.2:80");
	/* new target port only: the frontend is rewritten in place */
	km_model_upsert_service(&f->m, svc(SVC, "10.96.0.2", 80, 9090));
	km_model_flush(&f->m);
	assert_int_equal(f->l.n, 1);
	assert_int_equal(f->l.ops[0].fe.target_port, 9090);
	km_oplist_clear(&f->l);

	km_model_remove_service(&f->m, SVC);
	km_model_flush(&f->m);
	EXPECT(&f->m, &f->l, "FE- 10.96.0.2:80", "SVC- ? 0", "EP- 0=");
	/* the workload still lists it: when it comes back it is back-filled */
	km_model_upsert_service(&f->m, svc(SVC, "10.96.0.2", 80, 9090));
	km_model_flush(&f->m);
	EXPECT(&f->m, &f->l, "EP+ 0=w1", "SVC+ demo/web 1", "FE+ 10.96.0.2:80");
}

static void test_workload_loses_address(void **state)
{
	struct fx *f = *state;

	seed(f, 1, 0);
	km_model_upsert_workload(&f->m, with_wp(wl("w1", "10.0.0.1", KM_WORKLOAD_HEALTHY, 1, SVC)));
	km_model_flush(&f->m);
	EXPECT(&f->m, &f->l, "BE+ w1", "FE+ 10.0.0.1:0");
	/* its pod-IP frontend first, the backend row last */
	km_model_upsert_workload(&f->m, with_wp(wl("w1", NULL, KM_WORKLOAD_HEALTHY, 1, SVC)));
	km_model_flush(&f->m);
	EXPECT(&f->m, &f->l, "FE- 10.0.0.1:0", "SVC+ demo/web 0", "EP- 0=", "BE- w1");
}

/* The pod-IP row follows the workload's own waypoint: written when it gains one (after the
 * backend row that carries it), deleted when it loses it. */
static void test_pod_ip_row_only_with_a_waypoint(void **state)
{
	struct fx *f = *state;

	seed(f, 1, 0);
	km_model_upsert_workload(&f->m, with_wp(wl("w1", "10.0.0.1", KM_WORKLOAD_HEALTHY, 1, SVC)));
	km_model_flush(&f->m);
	EXPECT(&f->m, &f->l, "BE+ w1", "FE+ 10.0.0.1:0");
	km_model_upsert_workload(&f->m, wl("w1", "10.0.0.1", KM_WORKLOAD_HEALTHY, 1, SVC));
	km_model_flush(&f->m);
	EXPECT(&f->m, &f->l, "BE+ w1", "FE- 10.0.0.1:0");
	km_model_remove_workload(&f->m, "w1");
	km_model_flush(&f->m);
	EXPECT(&f->m, &f->l, "SVC+ demo/web 0", "EP- 0=", "BE- ?");
}


/* ---- scale ------------------------------------------------------------------------------------ */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Load n workloads, into one service (one) or each into its own (its own service per workload:
 * the same work per workload with no list that grows). Returns seconds. */
static double load_members(int n, int one)
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
		km_model_upsert_workload(&m, wl(uid, ip, KM_WORKLOAD_HEALTHY, 1, svc_name));
		if (i % 4096 == 4095) { /* as the agent does: flushed per slice of a response */
			km_model_flush(&m);
			km_oplist_clear(&l);
		}
	}
	km_model_flush(&m);
	t0 = now_s() - t0;
	{
		const uint32_t *eps;

		assert_int_equal(km_model_endpoints(&m, "ns/s0", 0, &eps), one ? (size_t)n : 1);
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
	own = load_members(30000, 0);
	big = load_members(30000, 1);
	print_message("30000 members: %.3f s in one service, %.3f s in their own\n", big, own);
	assert_true(big <= 3 * own);
}

/* ---- an address held by two resources ---------------------------------------------------------- */

/* The frontend rows as the table would hold them after applying ops: (address, port) -> row. */
struct fe_rows {
	struct km_op rows[64];
	size_t n;
};

static struct km_op *fe_row(struct fe_rows *t, const char *ip, uint16_t port)
{
	struct km_addr a;

	km_addr_parse(ip, &a);
	for (size_t i = 0; i < t->n; i++)
		if (!memcmp(&t->rows[i].fe.addr, &a, sizeof(a)) && t->rows[i].fe.port == port)
			return &t->rows[i];
	return NULL;
}

static void fe_apply(struct fe_rows *t, const struct km_op *o)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (!memcmp(&t->rows[i].fe.addr, &o->fe.addr, sizeof(o->fe.addr)) &&
		    t->rows[i].fe.port == o->fe.port)
			break;
	if (o->del) {
		if (i < t->n)
			t->rows[i] = t->rows[--t->n];
		return;
	}
	assert_true(i < 64);
	t->rows[i] = *o;
	t->n += i == t->n;
}

/* Flush, and apply the frontend ops to t. */
static void flush_into(struct fx *f, struct fe_rows *t)
{
	km_model_flush(&f->m);
	for (size_t i = 0; i < f->l.n; i++)
		if (f->l.ops[i].table == KM_OP_FRONTEND)
			fe_apply(t, &f->l.ops[i]);
	km_oplist_clear(&f->l);
}

static void expect_fe(struct fe_rows *t, const char *ip, uint16_t port, const char *owner)
{
	struct km_op *r = fe_row(t, ip, port);

	if (!owner) {
		if (r)
			fail_msg("%s:%u still has a row (upstream %u)", ip, port, r->fe.upstream_id);
		return;
	}
	if (!r)
		fail_msg("%s:%u has no row; %s holds it", ip, port, owner);
	assert_int_equal(r->fe.upstream_id, km_ids_fnv1a(owner));
}

/* Pods reuse IPs: the new pod's workload may arrive before the old one's removal, in one
 * response or in two, or the old one may move to another address. The row of the address must
 * end up naming the holder that remains, never be deleted under it. */
static void test_address_taken_over_keeps_its_frontend(void **state)
{
	struct fx *f = *state;
	struct fe_rows t = { .n = 0 };

	/* in one response: new listed, old removed */
	km_model_upsert_workload(&f->m, with_wp(wl("old", "10.244.0.12", KM_WORKLOAD_HEALTHY, 0)));
	flush_into(f, &t);
	expect_fe(&t, "10.244.0.12", 0, "old");
	km_model_upsert_workload(&f->m, with_wp(wl("new", "10.244.0.12", KM_WORKLOAD_HEALTHY, 0)));
	km_model_remove_workload(&f->m, "old");
	flush_into(f, &t);
	expect_fe(&t, "10.244.0.12", 0, "new");

	/* in two responses */
	km_model_upsert_workload(&f->m, with_wp(wl("next", "10.244.0.12", KM_WORKLOAD_HEALTHY, 0)));
	flush_into(f, &t);
	km_model_remove_workload(&f->m, "new");
	flush_into(f, &t);
	expect_fe(&t, "10.244.0.12", 0, "next");

	/* the old holder moves to another address */
	km_model_upsert_workload(&f->m, with_wp(wl("after", "10.244.0.12", KM_WORKLOAD_HEALTHY, 0)));
	flush_into(f, &t);
	km_model_upsert_workload(&f->m, with_wp(wl("next", "10.244.0.13", KM_WORKLOAD_HEALTHY, 0)));
	flush_into(f, &t);
	expect_fe(&t, "10.244.0.12", 0, "after");
	expect_fe(&t, "10.244.0.13", 0, "next");
	/* ... or loses every address */
	km_model_upsert_workload(&f->m, with_wp(wl("again", "10.244.0.13", KM_WORKLOAD_HEALTHY, 0)));
	km_model_upsert_workload(&f->m, with_wp(wl("next", NULL, KM_WORKLOAD_HEALTHY, 0)));
	flush_into(f, &t);
	expect_fe(&t, "10.244.0.13", 0, "again");

	/* the last holder goes: the row goes */
	km_model_remove_workload(&f->m, "again");
	flush_into(f, &t);
	expect_fe(&t, "10.244.0.13", 0, NULL);
	expect_fe(&t, "10.244.0.12", 0, "after");

	/* a VIP moving between services, both ways */
	km_model_upsert_service(&f->m, svc("ns/a", "10.96.0.10", 80, 8080));
	flush_into(f, &t);
	km_model_upsert_service(&f->m, svc("ns/b", "10.96.0.10", 80, 9090));
	km_model_remove_service(&f->m, "ns/a");
	flush_into(f, &t);
	expect_fe(&t, "10.96.0.10", 80, "ns/b");
	assert_int_equal(fe_row(&t, "10.96.0.10", 80)->fe.target_port, 9090);
	km_model_upsert_service(&f->m, svc("ns/a", "10.96.0.10", 80, 8080));
	flush_into(f, &t);
	km_model_upsert_service(&f->m, svc("ns/b", "10.96.0.11", 80, 9090));
	flush_into(f, &t);
	expect_fe(&t, "10.96.0.10", 80, "ns/a");
	assert_int_equal(fe_row(&t, "10.96.0.10", 80)->fe.target_port, 8080);
	expect_fe(&t, "10.96.0.11", 80, "ns/b");
}

/* ---- locality, waypoints, overrides, host network --------------------------------------------- */

static struct km_workload_res *located(const char *uid, const char *ip, const char *node,
				       const char *region, const char *zone)
{
	struct km_workload_res *w = wl(uid, ip, KM_WORKLOAD_HEALTHY, 1, SVC);

	w->node = strdup(node);
	w->region = strdup(region);
	w->zone = strdup(zone);
	return w;
}

static struct km_service_res *with_mode(struct km_service_res *s, uint32_t mode, int n_scopes, ...)
{
	va_list ap;

	s->lb_mode = mode;
	va_start(ap, n_scopes);
	for (int i = 0; i < n_scopes; i++)
		s->scopes[s->n_scopes++] = va_arg(ap, uint32_t);
	va_end(ap);
	return s;
}

static uint32_t prio_of(struct fx *f, const char *uid)
{
	uint32_t id = km_model_id_of(&f->m, uid);

	for (uint32_t p = 0; p < KM_PRIO_COUNT; p++) {
		const uint32_t *eps;
		size_t n = km_model_endpoints(&f->m, SVC, p, &eps);

		for (size_t i = 0; i < n; i++)
			if (eps[i] == id)
				return p;
	}
	return 99;
}

static void test_locality_priorities(void **state)
{
	struct fx *f = *state;

	km_model_set_local_node(&f->m, "n1");
	km_model_upsert_service(&f->m, with_mode(svc(SVC, "10.96.0.1", 80, 0), KM_LB_FAILOVER, 2,
						 KM_SCOPE_REGION, KM_SCOPE_ZONE));
	/* before this node's locality is known everything is group 0 (as Kmesh) */
	km_model_upsert_workload(&f->m, located("far", "10.0.0.3", "n3", "r2", "z1"));
	assert_int_equal(prio_of(f, "far"), 0);
	/* a workload on this node teaches the locality; everything is re-prioritised */
	km_model_upsert_workload(&f->m, located("local", "10.0.0.1", "n1", "r1", "z1"));
	km_model_upsert_workload(&f->m, located("zone2", "10.0.0.2", "n2", "r1", "z2"));
	km_model_flush(&f->m);
	assert_int_equal(prio_of(f, "local"), 0); /* shares region and zone */
	assert_int_equal(prio_of(f, "zone2"), 1); /* shares the region only */
	assert_int_equal(prio_of(f, "far"), 2);   /* shares nothing */
	/* back to RANDOM: everyone in group 0 */
	km_oplist_clear(&f->l);
	km_model_upsert_service(&f->m, svc(SVC, "10.96.0.1", 80, 0));
	km_model_flush(&f->m);
	assert_int_equal(prio_of(f, "zone2"), 0);
	assert_int_equal(prio_of(f, "far"), 0);
	{
		const uint32_t *eps;

		assert_int_equal(km_model_endpoints(&f->m, SVC, 0, &eps), 3);
		assert_int_equal(km_model_endpoints(&f->m, SVC, 1, &eps), 0);
	}
}

static void test_waypoint_resolution_order(void **state)
{
	struct fx *f = *state;
	struct km_service_res *s = svc(SVC, "10.96.0.1", 80, 0);
	struct km_workload_res *w = wl("w1", "10.0.0.1", KM_WORKLOAD_HEALTHY, 0);
	struct km_model_stats st;

	s->waypoint = (struct km_waypoint){ .kind = KM_WAYPOINT_HOSTNAME, .service = strdup("ns/wp"),
					    .hbone_port = 15008 };
	w->waypoint = (struct km_waypoint){ .kind = KM_WAYPOINT_HOSTNAME, .service = strdup("ns/wp"),
					    .hbone_port = 15008 };
	km_model_upsert_service(&f->m, s);
	km_model_upsert_workload(&f->m, w);
	km_model_flush(&f->m);
	/* the waypoint service is not known yet: pending (port, no address) */
	for (size_t i = 0; i < f->l.n; i++) {
		if (f->l.ops[i].table != KM_OP_SERVICE)
			continue;
		assert_int_equal(f->l.ops[i].svc.waypoint.port, 15008);
		assert_false(f->l.ops[i].svc.waypoint.has_addr);
	}
	km_model_stats(&f->m, &st);
	assert_int_equal(st.pending_waypoints, 2);
	km_oplist_clear(&f->l);

	/* it arrives: both dependents are rewritten with its first VIP */
	km_model_upsert_service(&f->m, svc("ns/wp", "10.96.9.9", 15008, 0));
	km_model_flush(&f->m);
	{
		int svc_rows = 0, be_rows = 0;
		char buf[KM_ADDR_STRLEN];

		for (size_t i = 0; i < f->l.n; i++) {
			const struct km_op *o = &f->l.ops[i];

			if (o->table == KM_OP_SERVICE && o->svc.id == km_model_id_of(&f->m, SVC)) {
				assert_true(o->svc.waypoint.has_addr);
				assert_string_equal(km_addr_format(&o->svc.waypoint.addr, buf), "10.96.9.9");
				svc_rows++;
			}
			if (o->table == KM_OP_BACKEND) {
				assert_string_equal(km_addr_format(&o->be.waypoint.addr, buf), "10.96.9.9");
				be_rows++;
			}
		}
		assert_int_equal(svc_rows, 1);
		assert_int_equal(be_rows, 1);
	}
	km_model_stats(&f->m, &st);
	assert_int_equal(st.pending_waypoints, 0);
	km_oplist_clear(&f->l);
	/* its VIP changes: rewritten again; it goes: pending again */
	km_model_upsert_service(&f->m, svc("ns/wp", "10.96.9.10", 15008, 0));
	km_model_flush(&f->m);
	assert_int_equal(f->l.n, 4); /* FE-, FE+, and the two dependents */
	km_oplist_clear(&f->l);
	km_model_remove_service(&f->m, "ns/wp");
	km_model_flush(&f->m);
	km_model_stats(&f->m, &st);
	assert_int_equal(st.pending_waypoints, 2);
}

static void test_waypoint_pointing_at_itself_is_ignored(void **state)
{
	struct fx *f = *state;
	struct km_service_res *s = svc(SVC, "10.96.0.1", 15008, 0);

	s->waypoint = (struct km_waypoint){ .kind = KM_WAYPOINT_ADDRESS, .hbone_port = 15008 };
	km_addr_parse("10.96.0.1", &s->waypoint.addr);
	km_model_upsert_service(&f->m, s);
	km_model_flush(&f->m);
	assert_int_equal(f->l.ops[0].table, KM_OP_SERVICE);
	assert_int_equal(f->l.ops[0].svc.waypoint.port, 0);
}

static void test_port_override_order(void **state)
{
	struct fx *f = *state;
	struct km_workload_res *w;

	seed(f, 1, 8080); /* w1 uses the service's 80 -> 8080 */
	w = with_wp(wl("w2", "10.0.0.2", KM_WORKLOAD_HEALTHY, 1, SVC));
	w->services[0].ports = calloc(1, sizeof(struct km_port));
	w->services[0].ports[0] = (struct km_port){ 80, 9090 };
	w->services[0].n_ports = 1;
	km_model_upsert_workload(&f->m, w);
	km_model_flush(&f->m);
	/* the override row, then the frontend saying "look overrides up", then the endpoint */
	EXPECT(&f->m, &f->l, "BE+ w2", "PO+ 80=9090", "FE+ 10.96.0.1:80", "EP+ 1=w2",
	       "SVC+ demo/web 2", "FE+ 10.0.0.2:0");
	km_model_remove_workload(&f->m, "w2");
	km_model_flush(&f->m);
	/* gone from the endpoints first, then its override, then the flag cleared */
	EXPECT(&f->m, &f->l, "FE- 10.0.0.2:0", "SVC+ demo/web 1", "EP- 1=", "PO- 80=0",
	       "FE+ 10.96.0.1:80", "BE- ?");
}

static void test_host_network_health_policy_capacity(void **state)
{
	struct fx *f = *state;
	struct km_service_res *s = svc(SVC, "10.96.0.1", 80, 0);
	struct km_workload_res *w = wl("hn", "10.0.0.9", KM_WORKLOAD_UNHEALTHY, 1, SVC);

	s->allow_unhealthy = 1;
	w->host_network = 1;
	w->capacity = 5;
	km_model_upsert_service(&f->m, s);
	km_oplist_clear(&f->l);
	km_model_upsert_workload(&f->m, w);
	km_model_flush(&f->m);
	/* no pod-IP frontend for a host-network workload; unhealthy but ALLOW_ALL: an endpoint */
	EXPECT(&f->m, &f->l, "BE+ hn", "EP+ 0=hn", "SVC+ demo/web 1");
	km_model_upsert_workload(&f->m, wl("hn", "10.0.0.9", KM_WORKLOAD_UNHEALTHY, 1, SVC));
	km_model_flush(&f->m);
	/* back to a normal pod: its frontend appears, weight back to 1 */
	assert_int_equal(f->l.ops[0].table, KM_OP_BACKEND);
	assert_int_equal(f->l.ops[0].be.weight, 1);
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
			uint32_t t = want ? km_target_port(sr, ms, 80) : 0;
			int times = 0;

			for (int p = 0; p < KM_PRIO_COUNT; p++)
				for (uint32_t k = 0; k < s->svc_count[i][p]; k++)
					times += s->ep[i][p][k] == id;
			assert_int_equal(times, want);
			/* an override row exactly where the workload's port differs */
			assert_int_equal(s->ovr[i][w], want && t != km_target_port(sr, NULL, 80) ? t : 0);
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

				sum += r->capacity ? r->capacity : 1;
				assert_int_equal(s->cum[i][p][k], sum);
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
	res->node = strdup(sim_nodes[sp->node]);
	res->capacity = sp->mode;
	for (int i = 0; i < SIM_SVCS; i++) {
		struct km_membership *ms;

		if (!(sp->mask & (1 << i)))
			continue;
		ms = &res->services[res->n_services++];
		ms->service = strdup(sim_names[i]);
		if (sp->own[i]) {
			ms->ports = calloc(1, sizeof(*ms->ports));
			ms->ports[0] = (struct km_port){ 80, sp->own[i] };
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
		cmocka_unit_test_setup_teardown(test_new_service_then_workloads, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_workload_before_service_is_back_filled, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_remove_swaps_last_into_hole, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_unhealthy_leaves_endpoints_but_keeps_backend, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_service_changes_and_removal, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_workload_loses_address, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_pod_ip_row_only_with_a_waypoint, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_address_taken_over_keeps_its_frontend, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_locality_priorities, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_waypoint_resolution_order, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_waypoint_pointing_at_itself_is_ignored, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_port_override_order, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_host_network_health_policy_capacity, fx_setup, fx_teardown),
		cmocka_unit_test(test_random_sequences_keep_invariants),
		cmocka_unit_test(test_workloads_found_despite_id_collisions),
		cmocka_unit_test(test_big_service_loads_in_linear_time),
	};

	return cmocka_run_group_tests_name("model", tests, NULL, NULL);
}
