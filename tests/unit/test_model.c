/* test_model.c — the model's table operations in exact order for the basic cases (new service,
 * back-fill, swap-with-last removal, unhealthy, service removal, pod-IP rows, an address taken
 * over, locality, host network). Waypoints and port overrides are in test_model_waypoint.c, the
 * randomized run and the scale ceiling in test_model_sim.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "services/xds-agent/model/model.h"
#include "services/xds-agent/model/model_internal.h"
#include "tests/unit/model_builders.h"
#include "tests/unit/model_ops.h"
#include "shared/addr.h"
#include "shared/log.h"

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

static int count_name(void *arg, const char *name)
{
	(void)name;
	(*(size_t *)arg)++;
	return 0;
}

/* Counts down *arg names, then asks the visit to stop (dumps list the first N of millions). */
static int count_down(void *arg, const char *name)
{
	(void)name;
	return --*(size_t *)arg == 0;
}

#define LONG_VERSION "a-version-longer-than-the-inline-buffer-0123456789"

static void check_versions(void *arg, const char *name, const char *version)
{
	(void)arg;
	assert_string_equal(version, strcmp(name, "Kubernetes//Pod/ns/w1") == 0 ? LONG_VERSION : "v1");
}

/* istiod's versions are kept as numbers where they are numbers (xds_version.h) and must go back
 * in a reconnect's first request byte for byte, whatever their form. */
static const char *const versions[] = {
	"0", "7", "18446744073709551615", /* decimal, up to UINT64_MAX */
	"18446744073709551616",           /* one past: text */
	"0123", "00ab", "deadbeef00000001", "f", /* hex, leading zeros kept */
	"DEADBEEF", "12345678901234567890123", "v1", "1.2", "", /* text, and empty */
};
#define N_VERSIONS (sizeof(versions) / sizeof(versions[0]))

static void note_version_seen(void *arg, const char *name, const char *version)
{
	unsigned i = (unsigned)atoi(name + 1);

	assert_true(i < N_VERSIONS);
	assert_string_equal(version, versions[i]);
	((int *)arg)[i]++;
}

static void test_versions_come_back_as_they_came(void **state)
{
	struct fx *f = *state;
	int seen[N_VERSIONS] = { 0 };
	char uid[16], ip[16];

	for (unsigned i = 0; i < N_VERSIONS; i++) {
		snprintf(uid, sizeof(uid), "w%u", i);
		snprintf(ip, sizeof(ip), "10.0.3.%u", i + 1);
		km_model_upsert_workload(&f->m, wl(uid, ip, KM_WORKLOAD_HEALTHY, 0));
		km_model_set_version(&f->m, uid, "older-text-version"); /* replaced below */
		km_model_set_version(&f->m, uid, versions[i]);
	}
	km_model_upsert_workload(&f->m, wl("nov", "10.0.3.99", KM_WORKLOAD_HEALTHY, 0)); /* none */
	assert_int_equal(km_model_each_version(&f->m, note_version_seen, seen), N_VERSIONS);
	for (unsigned i = 0; i < N_VERSIONS; i++)
		assert_int_equal(seen[i], 1);
}

static void test_workloads_found_despite_id_collisions(void **state)
{
	enum { N = 40 };
	struct km_oplist l;
	struct km_model m;
	char uid[N][48], ip[32], ubuf[KM_UID_BUF];
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
		assert_string_equal(km_model_name_of(&m, ids[i], ubuf), uid[i]);
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
	{
		size_t left = 3;

		km_model_each_workload(&m, count_down, &left);
		assert_int_equal(left, 0); /* and not wrapped around: the visit stopped at 0 */
	}
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
	EXPECT(&f->m, &f->l, "BE+ w1", "EP+ 0=w1", "FE+ 10.0.0.1:0");
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
	EXPECT(&f->m, &f->l, "BE+ w1", "EP+ 0=w1", "FE+ 10.0.0.1:0");
	km_model_upsert_workload(&f->m, wl("w1", "10.0.0.1", KM_WORKLOAD_HEALTHY, 1, SVC));
	km_model_flush(&f->m);
	EXPECT(&f->m, &f->l, "BE+ w1", "FE- 10.0.0.1:0", "EP+ 0=w1");
	km_model_remove_workload(&f->m, "w1");
	km_model_flush(&f->m);
	EXPECT(&f->m, &f->l, "SVC+ demo/web 0", "EP- 0=", "BE- ?");
}


/* ---- an address held by two resources ---------------------------------------------------------- */

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

	w->where->node = strdup(node);
	w->where->region = strdup(region);
	w->where->zone = strdup(zone);
	return w;
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

/* ---- the address an endpoint row carries ----------------------------------------------------- */

/* The last endpoint op of the list, which must be there. */
static const struct km_op *last_ep(const struct km_oplist *l)
{
	for (size_t i = l->n; i-- > 0;)
		if (l->ops[i].table == KM_OP_ENDPOINT && !l->ops[i].del)
			return &l->ops[i];
	fail_msg("no endpoint op");
	return NULL;
}

static uint32_t ip4(const char *text)
{
	struct km_addr a;

	assert_int_equal(km_addr_parse(text, &a), 0);
	return a.words[3];
}

/* A slot carries its backend's IPv4 address exactly while a connection may go straight there
 * (BPF then skips the backend row): not with a waypoint of its own, not without IPv4; a change
 * rewrites the slot, after the backend row. */
static void test_endpoint_rows_carry_the_address(void **state)
{
	struct fx *f = *state;

	km_model_upsert_service(&f->m, svc(SVC, "10.96.0.1", 80, 0));
	km_model_upsert_workload(&f->m, wl("w1", "10.0.0.1", KM_WORKLOAD_HEALTHY, 1, SVC));
	km_model_flush(&f->m);
	assert_int_equal(last_ep(&f->l)->ep.addr4, ip4("10.0.0.1"));
	km_oplist_clear(&f->l);

	km_model_upsert_workload(&f->m, with_wp(wl("w1", "10.0.0.1", KM_WORKLOAD_HEALTHY, 1, SVC)));
	km_model_flush(&f->m);
	assert_int_equal(last_ep(&f->l)->ep.addr4, 0); /* its waypoint must see the connection */
	EXPECT(&f->m, &f->l, "BE+ w1", "EP+ 0=w1", "FE+ 10.0.0.1:0");

	km_model_upsert_workload(&f->m, wl("w1", "10.0.0.9", KM_WORKLOAD_HEALTHY, 1, SVC));
	km_model_flush(&f->m);
	assert_int_equal(last_ep(&f->l)->ep.addr4, ip4("10.0.0.9"));
	EXPECT(&f->m, &f->l, "BE+ w1", "FE- 10.0.0.1:0", "EP+ 0=w1");

	km_model_upsert_workload(&f->m, wl("w1", "10.0.0.5", KM_WORKLOAD_HEALTHY, 1, SVC));
	km_model_flush(&f->m);
	assert_int_equal(last_ep(&f->l)->ep.addr4, ip4("10.0.0.5"));
	EXPECT(&f->m, &f->l, "BE+ w1", "EP+ 0=w1"); /* a moved pod: the slot follows */

	km_model_upsert_workload(&f->m, wl("w6", "fd00::6", KM_WORKLOAD_HEALTHY, 1, SVC));
	km_model_flush(&f->m);
	assert_int_equal(last_ep(&f->l)->ep.addr4, 0); /* IPv6 only: read from its backend row */
	km_oplist_clear(&f->l);

	km_model_replay(&f->m); /* a new map writer gets the same */
	for (size_t i = 0; i < f->l.n; i++)
		if (f->l.ops[i].table == KM_OP_ENDPOINT)
			assert_int_equal(f->l.ops[i].ep.addr4,
					 f->l.ops[i].ep.backend_id == km_ids_fnv1a("w1")
						 ? ip4("10.0.0.5")
						 : 0);
}

/* A workload reached by name (a ServiceEntry with resolution DNS) whose name resolves to three
 * IPv4 addresses and one IPv6: a backend row carries one of each family, so each further pair
 * is an entry of its own ("w#2", "w#3", the IPv6 address repeated), all endpoints of the
 * service. They go with the workload: when the answer shrinks, when a reconnect's sweep
 * removes it (never on their own: istiod never names them), and when it is removed. */
static struct km_workload_res *named(const char *uid, int n, const char *const *ips)
{
	struct km_workload_res *w = wl(uid, NULL, KM_WORKLOAD_HEALTHY, 1, SVC);

	w->rare->hostname = strdup("app.example.com");
	free(w->addrs);
	w->addrs = calloc((size_t)n, sizeof(*w->addrs));
	for (int i = 0; i < n; i++)
		km_addr_parse(ips[i], &w->addrs[i]);
	w->n_addrs = (uint16_t)n;
	return w;
}

static void test_name_resolved_to_several_addresses(void **state)
{
	static const char *const three[] = { "192.0.2.10", "192.0.2.11", "fd00::10", "192.0.2.12" };
	static const char *const one[] = { "192.0.2.11" };
	struct fx *f = *state;
	struct km_addr got[8];
	const struct km_workload_res *r;
	char a[KM_ADDR_STRLEN];

	km_model_upsert_service(&f->m, svc(SVC, NULL, 80, 0)); /* headless: DNS answers its members */
	km_model_flush(&f->m);
	km_oplist_clear(&f->l);
	km_model_upsert_workload(&f->m, named("w", 4, three));
	km_model_flush(&f->m);
	EXPECT(&f->m, &f->l, "BE+ w#2", "BE+ w#3", "BE+ w", "EP+ 0=w#2", "EP+ 1=w#3", "EP+ 2=w",
	       "SVC+ demo/web 3");
	r = km_model_find_workload(&f->m, "w#3");
	assert_non_null(r);
	assert_int_equal(r->n_addrs, 2);
	assert_string_equal(km_addr_format(&r->addrs[0], a), "192.0.2.12");
	assert_string_equal(km_addr_format(&r->addrs[1], a), "fd00::10");
	assert_int_equal(km_model_find_workload(&f->m, "w")->n_addrs, 2);
	/* every address once in a name's answer, though the IPv6 one is on three entries */
	assert_int_equal(km_model_service_addresses(&f->m, SVC, 1, got, 8), 3);
	assert_int_equal(km_model_service_addresses(&f->m, SVC, 0, got, 8), 1);

	/* the same answer again: nothing */
	km_model_upsert_workload(&f->m, named("w", 4, three));
	km_model_flush(&f->m);
	assert_int_equal(f->l.n, 0);

	/* a reconnect that names the workload (not its derived entries) keeps them all */
	km_model_mark_unconfirmed(&f->m);
	km_model_confirm(&f->m, SVC);
	km_model_confirm(&f->m, "w");
	assert_int_equal(km_model_sweep_unconfirmed(&f->m), 0);
	assert_non_null(km_model_find_workload(&f->m, "w#3"));

	/* the answer shrinks to one address: the derived entries go */
	km_model_upsert_workload(&f->m, named("w", 1, one));
	km_model_flush(&f->m);
	assert_null(km_model_find_workload(&f->m, "w#2"));
	assert_null(km_model_find_workload(&f->m, "w#3"));
	assert_int_equal(km_model_service_addresses(&f->m, SVC, 1, got, 8), 1);
	km_oplist_clear(&f->l);

	/* grows again, then the workload is removed: all of it */
	km_model_upsert_workload(&f->m, named("w", 4, three));
	km_model_flush(&f->m);
	km_oplist_clear(&f->l);
	km_model_remove_workload(&f->m, "w");
	km_model_flush(&f->m);
	assert_null(km_model_find_workload(&f->m, "w#2"));
	assert_int_equal(km_model_service_addresses(&f->m, SVC, 1, got, 8), 0);

	/* and a sweep that finds the workload unnamed removes its derived entries with it */
	km_model_upsert_workload(&f->m, named("w", 4, three));
	km_model_mark_unconfirmed(&f->m);
	km_model_confirm(&f->m, SVC);
	assert_int_equal(km_model_sweep_unconfirmed(&f->m), 1);
	assert_null(km_model_find_workload(&f->m, "w#3"));
	km_model_flush(&f->m);
}

/* A uid as long as a resource may have (KM_RES_MAX_STRING): its derived entries are named too,
 * not taken for an allocation failure (which makes the agent resync, again and again). */
static void test_name_resolved_with_the_longest_uid(void **state)
{
	static const char *const two[] = { "192.0.2.10", "192.0.2.11" };
	struct fx *f = *state;
	char uid[1001], derived[1010];

	memset(uid, 'u', sizeof(uid) - 1);
	uid[sizeof(uid) - 1] = '\0';
	snprintf(derived, sizeof(derived), "%s#2", uid);
	km_model_upsert_service(&f->m, svc(SVC, NULL, 80, 0));
	km_model_upsert_workload(&f->m, named(uid, 2, two));
	km_model_flush(&f->m);
	assert_false(f->l.oom);
	assert_non_null(km_model_find_workload(&f->m, derived));
	km_model_remove_workload(&f->m, uid);
	assert_null(km_model_find_workload(&f->m, derived));
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

static void test_host_network_health_policy_capacity(void **state)
{
	struct fx *f = *state;
	struct km_service_res *s = svc(SVC, "10.96.0.1", 80, 0);
	struct km_workload_res *w = wl("hn", "10.0.0.9", KM_WORKLOAD_UNHEALTHY, 1, SVC);

	s->allow_unhealthy = 1;
	w->host_network = 1;
	w->rare->capacity = 5;
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

/* A workload's backend row is rewritten only when its checksum changes: a change of any one bit
 * of the row must change it (so no change is missed), and equal rows must agree. */
static void test_backend_row_sum_sees_every_bit(void **state)
{
	struct km_op row, copy;
	uint64_t sum;

	(void)state;
	memset(&row, 0, sizeof(row));
	row.table = KM_OP_BACKEND;
	row.be.id = 7;
	row.be.has4 = 1;
	km_addr_parse("10.0.0.1", &row.be.addr4);
	row.be.weight = 1;
	sum = mdl_row_sum(&row);
	copy = row;
	assert_true(mdl_row_sum(&copy) == sum);
	for (size_t i = 0; i < sizeof(row); i++)
		for (int bit = 0; bit < 8; bit++) {
			copy = row;
			((uint8_t *)&copy)[i] ^= (uint8_t)(1u << bit);
			if (mdl_row_sum(&copy) == sum)
				fail_msg("byte %zu bit %d of the row changes nothing in its sum", i, bit);
		}
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
		cmocka_unit_test_setup_teardown(test_endpoint_rows_carry_the_address, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_address_taken_over_keeps_its_frontend, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_name_resolved_to_several_addresses, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_name_resolved_with_the_longest_uid, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_locality_priorities, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_host_network_health_policy_capacity, fx_setup, fx_teardown),
		cmocka_unit_test(test_workloads_found_despite_id_collisions),
		cmocka_unit_test(test_backend_row_sum_sees_every_bit),
		cmocka_unit_test_setup_teardown(test_versions_come_back_as_they_came, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests_name("model", tests, NULL, NULL);
}
