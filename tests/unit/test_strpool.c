/* test_strpool.c — interned strings: one copy per distinct string, counted references, entries
 * found again after others were released (backward-shift deletes across a growing index), and
 * nothing left once every reference is dropped; packed workloads share their repeated strings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "services/xds-agent/core/resources.h"
#include "services/xds-agent/core/strpool.h"
#include "shared/addr.h"

static void one_copy_counted(void **state)
{
	char a[] = "bench", b[] = "bench";
	const char *x, *y;

	(void)state;
	x = km_str_intern(a);
	y = km_str_intern(b);
	assert_non_null(x);
	assert_ptr_equal(x, y); /* one copy */
	assert_ptr_not_equal(x, a);
	assert_string_equal(x, "bench");
	assert_int_equal(km_str_pool_count(), 1);
	km_str_release(x);
	assert_string_equal(y, "bench"); /* still held once */
	km_str_release(y);
	assert_int_equal(km_str_pool_count(), 0);
	km_str_release(NULL);
}

static void many_released_in_any_order(void **state)
{
	enum { N = 5000 };
	static const char *held[N];
	char buf[32];

	(void)state;
	for (int i = 0; i < N; i++) {
		snprintf(buf, sizeof(buf), "ns-%d", i);
		assert_non_null(held[i] = km_str_intern(buf));
	}
	assert_int_equal(km_str_pool_count(), N);
	for (int i = 0; i < N; i += 3) { /* every third goes */
		km_str_release(held[i]);
		held[i] = NULL;
	}
	for (int i = 0; i < N; i++) { /* the others are found again, as the same copies */
		snprintf(buf, sizeof(buf), "ns-%d", i);
		if (!held[i])
			continue;
		assert_ptr_equal(km_str_intern(buf), held[i]);
		km_str_release(held[i]);
	}
	for (int i = 0; i < N; i++)
		km_str_release(held[i]);
	assert_int_equal(km_str_pool_count(), 0);
}

static struct km_workload_res *workload(const char *uid, const char *ns, const char *svc)
{
	struct km_workload_res *w = km_workload_res_new();

	assert_non_null(w);
	w->uid_text = strdup(uid);
	w->who->namespace = strdup(ns);
	w->where->node = strdup("node-1");
	w->services = calloc(1, sizeof(*w->services));
	w->services[0].service = strdup(svc);
	w->n_services = 1;
	return w;
}

static void packed_workloads_share(void **state)
{
	struct km_workload_res *a = km_workload_res_pack(workload("a", "prod", "prod/web.prod"));
	struct km_workload_res *b = km_workload_res_pack(workload("b", "prod", "prod/web.prod"));

	(void)state;
	assert_true(a->packed && b->packed);
	assert_ptr_equal(a->who, b->who); /* one profile each, shared */
	assert_ptr_equal(a->where, b->where);
	assert_int_equal(km_profile_pool_count(), 2);
	assert_ptr_equal(a->services[0].service, b->services[0].service);
	assert_ptr_not_equal(a->uid_text, b->uid_text);
	assert_string_equal(b->uid_text, "b");
	assert_int_equal(km_str_pool_count(), 3);
	assert_true(km_workload_res_equal(a, a));
	km_workload_res_free(a);
	assert_string_equal(b->who->namespace, "prod");
	km_workload_res_free(b);
	assert_int_equal(km_str_pool_count(), 0); /* released with the last holder (and ASan) */
	assert_int_equal(km_profile_pool_count(), 0);
}

/* Profiles: the same strings give the same profile, whatever their copies; one field apart (or
 * NULL against "") gives another; many profiles (the table grows) are all released. */
static void profiles_by_content(void **state)
{
	char ns1[] = "prod", ns2[] = "prod", empty[] = "";
	struct km_wl_who a = { .namespace = ns1 }, b = { .namespace = ns2 };
	struct km_wl_who c = { .namespace = ns1, .service_account = empty };
	struct km_wl_who d = { .namespace = ns1, .service_account = NULL };
	const struct km_wl_who *pa = km_who_intern(&a), *pb = km_who_intern(&b);
	const struct km_wl_who *pc = km_who_intern(&c), *pd = km_who_intern(&d);
	const struct km_wl_where *many[500];

	(void)state;
	assert_non_null(pa);
	assert_ptr_equal(pa, pb);
	assert_ptr_not_equal(pa->namespace, ns1); /* the pool's copy */
	assert_ptr_not_equal(pc, pa);
	assert_ptr_equal(pd, pa);
	assert_string_equal(pc->service_account, "");
	assert_int_equal(km_profile_pool_count(), 2);
	for (int i = 0; i < 500; i++) {
		char node[16];
		struct km_wl_where w = { .node = node };

		snprintf(node, sizeof(node), "node-%d", i % 250);
		many[i] = km_where_intern(&w);
		assert_non_null(many[i]);
		if (i >= 250)
			assert_ptr_equal(many[i], many[i - 250]);
	}
	assert_int_equal(km_profile_pool_count(), 252);
	for (int i = 0; i < 500; i++)
		km_where_release(many[i]);
	km_who_release(pa);
	km_who_release(pb);
	km_who_release(pc);
	km_who_release(pd);
	assert_int_equal(km_profile_pool_count(), 0);
	assert_int_equal(km_str_pool_count(), 0);
}

/* A kept workload copied with other addresses (the hostname resolver's way to put it again): every
 * field the same, its own strings, the addresses given. */
static void copied_with_addresses(void **state)
{
	struct km_workload_res *w = workload("h", "prod", "prod/web.prod");
	struct km_workload_res *p, *c, *same;
	struct km_addr a[2];

	(void)state;
	w->rare->hostname = strdup("app.example.com");
	w->policies = calloc(1, sizeof(*w->policies));
	w->policies[0] = strdup("prod/allow");
	w->n_policies = 1;
	w->rare->wp.kind = KM_WAYPOINT_HOSTNAME;
	w->rare->wp.service = strdup("prod/wp");
	p = km_workload_res_pack(w);
	assert_true(p->packed);
	km_addr_parse("192.0.2.1", &a[0]);
	km_addr_parse("2001:db8::1", &a[1]);
	c = km_workload_res_with_addrs(p, a, 2);
	assert_non_null(c);
	assert_false(c->packed);
	assert_int_equal(c->n_addrs, 2);
	assert_memory_equal(&c->addrs[1], &a[1], sizeof(a[1]));
	assert_string_equal(km_wl_hostname(c), "app.example.com");
	assert_string_equal(c->who->namespace, "prod");
	assert_ptr_not_equal(c->who->namespace, p->who->namespace); /* its own */
	assert_string_equal(km_wl_waypoint(c)->service, "prod/wp");
	same = km_workload_res_with_addrs(p, NULL, 0);
	assert_true(km_workload_res_equal(same, p));
	assert_false(km_workload_res_equal(c, p));
	km_workload_res_free(same);
	km_workload_res_free(c);
	km_workload_res_free(p);
	assert_int_equal(km_str_pool_count(), 0);
	assert_int_equal(km_profile_pool_count(), 0);
}

/* A kept workload carries its rare fields (waypoint, hostname) only when it has one of them,
 * and then exactly as they were. */
static void rare_fields_kept_when_set(void **state)
{
	struct km_workload_res *none = km_workload_res_pack(workload("n", "prod", "prod/web.prod"));
	struct km_workload_res *host = workload("h", "prod", "prod/web.prod"), *wp;

	(void)state;
	assert_true(none->packed);
	assert_null(none->rare);
	assert_null(km_wl_hostname(none));
	assert_int_equal(km_wl_waypoint(none)->kind, KM_WAYPOINT_NONE);
	host->rare->hostname = strdup("db.example.com");
	host = km_workload_res_pack(host);
	assert_non_null(host->rare);
	assert_string_equal(km_wl_hostname(host), "db.example.com");
	assert_int_equal(km_wl_waypoint(host)->kind, KM_WAYPOINT_NONE);
	wp = workload("w", "prod", "prod/web.prod");
	wp->rare->wp = (struct km_waypoint){ .kind = KM_WAYPOINT_ADDRESS, .hbone_port = 15008 };
	km_addr_parse("10.9.9.9", &wp->rare->wp.addr);
	wp = km_workload_res_pack(wp);
	assert_null(km_wl_hostname(wp));
	assert_int_equal(km_wl_waypoint(wp)->kind, KM_WAYPOINT_ADDRESS);
	assert_int_equal(km_wl_waypoint(wp)->addr.bytes[15], 9);
	assert_false(km_workload_res_equal(none, host));
	assert_false(km_workload_res_equal(none, wp));
	km_workload_res_free(none);
	km_workload_res_free(host);
	km_workload_res_free(wp);
	assert_int_equal(km_str_pool_count(), 0);
}

/* Memberships' ports live in one array per workload (port_at, n_ports): kept through sorting,
 * packing (where the array follows the memberships) and copying, each membership's own; a
 * capacity other than 1 is kept (out of line, with the rare fields). */
static void membership_ports_and_capacity_kept(void **state)
{
	static const struct km_port ports[] = { { 443, 8443 }, { 53, 5353 }, { 80, 8080 } };
	struct km_workload_res *w = km_workload_res_new(), *p, *c;
	const char *names[] = { "prod/c.prod", "prod/a.prod", "prod/b.prod" };

	(void)state;
	w->uid_text = strdup("m");
	w->services = calloc(3, sizeof(*w->services));
	*km_workload_res_port_array(w) = malloc(sizeof(ports));
	memcpy(*km_workload_res_port_array(w), ports, sizeof(ports));
	for (int i = 0; i < 3; i++)
		w->services[i].service = strdup(names[i]);
	w->services[0] = (struct km_membership){ w->services[0].service, 0, 2 }; /* c: 443, 53 */
	w->services[2] = (struct km_membership){ w->services[2].service, 2, 1 }; /* b: 80 */
	w->n_services = 3;                                                       /* a: none */
	w->rare->capacity = 7;
	assert_int_equal(km_workload_res_normalize(w), 0);
	c = km_workload_res_with_addrs(w, NULL, 0);
	p = km_workload_res_pack(w);
	for (int k = 0; k < 2; k++) {
		const struct km_workload_res *x = k ? c : p;
		const struct km_membership *m;

		m = km_workload_membership(x, "prod/a.prod");
		assert_true(m && m->n_ports == 0);
		m = km_workload_membership(x, "prod/b.prod");
		assert_true(m && m->n_ports == 1);
		assert_int_equal(km_membership_ports(x, m)[0].target_port, 8080);
		m = km_workload_membership(x, "prod/c.prod");
		assert_true(m && m->n_ports == 2);
		assert_int_equal(km_membership_ports(x, m)[0].target_port, 8443);
		assert_int_equal(km_membership_ports(x, m)[1].target_port, 5353);
		assert_int_equal(km_wl_capacity(x), 7);
	}
	assert_true(p->packed && p->rare);
	assert_true(km_workload_res_equal(p, c));
	/* b's port changed in c's own array: no longer equal */
	((struct km_port *)km_membership_ports(c, km_workload_membership(c, "prod/b.prod")))[0]
		.target_port = 8081;
	assert_false(km_workload_res_equal(p, c));
	km_workload_res_free(c);
	km_workload_res_free(p);
	assert_int_equal(km_str_pool_count(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_copy_counted),
		cmocka_unit_test(many_released_in_any_order),
		cmocka_unit_test(packed_workloads_share),
		cmocka_unit_test(profiles_by_content),
		cmocka_unit_test(copied_with_addresses),
		cmocka_unit_test(rare_fields_kept_when_set),
		cmocka_unit_test(membership_ports_and_capacity_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
