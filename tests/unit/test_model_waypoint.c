/* test_model_waypoint.c — the model's rows for waypoints (a waypoint known after or before its
 * dependents, one pointing at itself) and for members that map a service's port their own way
 * (the override rows' order, and rows following the service's ports). The model keeps these in
 * model_waypoint.c and its override table; the basic cases are in test_model.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "services/xds-agent/model/model.h"
#include "tests/unit/model_builders.h"
#include "tests/unit/model_ops.h"
#include "shared/addr.h"

static void test_waypoint_resolution_order(void **state)
{
	struct fx *f = *state;
	struct km_service_res *s = svc(SVC, "10.96.0.1", 80, 0);
	struct km_workload_res *w = wl("w1", "10.0.0.1", KM_WORKLOAD_HEALTHY, 0);
	struct km_model_stats st;

	s->waypoint = (struct km_waypoint){ .kind = KM_WAYPOINT_HOSTNAME, .service = strdup("ns/wp"),
					    .hbone_port = 15008 };
	w->rare->wp = (struct km_waypoint){ .kind = KM_WAYPOINT_HOSTNAME, .service = strdup("ns/wp"),
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

/* The waypoint service first, its dependents after: a dependent is written with the address it
 * has then, and a later change of that address rewrites it (the role a waypoint service keeps for
 * its dependents is made with the first of them, holding the address they were given); a new
 * version with the same address rewrites none. */
static void test_waypoint_known_before_its_dependents(void **state)
{
	struct fx *f = *state;
	struct km_workload_res *w = wl("w1", "10.0.0.1", KM_WORKLOAD_HEALTHY, 0);
	char buf[KM_ADDR_STRLEN];
	int be_rows = 0;

	km_model_upsert_service(&f->m, svc("ns/wp", "10.96.9.9", 15008, 0));
	km_model_flush(&f->m);
	km_oplist_clear(&f->l);
	w->rare->wp = (struct km_waypoint){ .kind = KM_WAYPOINT_HOSTNAME, .service = strdup("ns/wp"),
					    .hbone_port = 15008 };
	km_model_upsert_workload(&f->m, w);
	km_model_flush(&f->m);
	for (size_t i = 0; i < f->l.n; i++)
		if (f->l.ops[i].table == KM_OP_BACKEND) {
			assert_string_equal(km_addr_format(&f->l.ops[i].be.waypoint.addr, buf), "10.96.9.9");
			be_rows++;
		}
	assert_int_equal(be_rows, 1);
	km_oplist_clear(&f->l);
	/* another version of it with the same address (its port changed) */
	km_model_upsert_service(&f->m, svc("ns/wp", "10.96.9.9", 15009, 0));
	km_model_flush(&f->m);
	assert_true(f->l.n > 0); /* its frontend rows */
	for (size_t i = 0; i < f->l.n; i++)
		assert_int_not_equal(f->l.ops[i].table, KM_OP_BACKEND);
	km_oplist_clear(&f->l);
	km_model_upsert_service(&f->m, svc("ns/wp", "10.96.9.10", 15008, 0));
	km_model_flush(&f->m);
	be_rows = 0;
	for (size_t i = 0; i < f->l.n; i++)
		if (f->l.ops[i].table == KM_OP_BACKEND) {
			assert_string_equal(km_addr_format(&f->l.ops[i].be.waypoint.addr, buf), "10.96.9.10");
			be_rows++;
		}
	assert_int_equal(be_rows, 1);
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
	*km_workload_res_port_array(w) = calloc(1, sizeof(struct km_port));
	(*km_workload_res_port_array(w))[0] = (struct km_port){ 80, 9090 };
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

/* A service loses a port its members override: their rows at that port go with it (a member's
 * own sync looks only at the ports the service has), the others stay; a member whose mapping
 * becomes the service's own loses its row. */
static void test_port_overrides_follow_the_service(void **state)
{
	struct fx *f = *state;
	struct km_service_res *s = svc(SVC, "10.96.0.1", 80, 8080);
	struct km_workload_res *w = wl("w1", "10.0.0.1", KM_WORKLOAD_HEALTHY, 1, SVC);
	struct km_model_stats st;
	struct km_port *p;

	s->ports = realloc(s->ports, 2 * sizeof(*s->ports));
	s->ports[1] = (struct km_port){ 443, 8443 };
	s->n_ports = 2;
	km_model_upsert_service(&f->m, s);
	p = calloc(2, sizeof(*p));
	p[0] = (struct km_port){ 80, 9090 };
	p[1] = (struct km_port){ 443, 9443 };
	*km_workload_res_port_array(w) = p;
	w->services[0].n_ports = 2;
	km_model_upsert_workload(&f->m, w);
	km_model_flush(&f->m);
	km_model_stats(&f->m, &st);
	assert_int_equal(st.port_overrides, 2);
	km_oplist_clear(&f->l);
	km_model_upsert_service(&f->m, svc(SVC, "10.96.0.1", 80, 8080)); /* 443 gone */
	km_model_flush(&f->m);
	km_model_stats(&f->m, &st);
	assert_int_equal(st.port_overrides, 1);
	{
		int del443 = 0;

		for (size_t i = 0; i < f->l.n; i++)
			del443 += f->l.ops[i].table == KM_OP_PORT_OVERRIDE && f->l.ops[i].del &&
				  f->l.ops[i].po.port == 443;
		assert_int_equal(del443, 1);
	}
	/* the service now maps 80 to 9090 itself: w1's row says nothing more, and goes */
	km_model_upsert_service(&f->m, svc(SVC, "10.96.0.1", 80, 9090));
	km_model_flush(&f->m);
	km_model_stats(&f->m, &st);
	assert_int_equal(st.port_overrides, 0);
}

/* HBONE outbound: a workload reached over HBONE from here has the tunnel's listener as its
 * waypoint (data port 15001) and pod-IP frontend rows; one on this node, a NONE one, one with
 * a waypoint of its own, and any with the tunnel off: none of that. */
static struct km_workload_res *hbone_wl(const char *uid, const char *ip, const char *node)
{
	struct km_workload_res *w = wl(uid, ip, KM_WORKLOAD_HEALTHY, 0);

	w->tunnel_hbone = 1;
	w->where->node = strdup(node);
	return w;
}

static const struct km_op *backend_op(const struct fx *f, uint32_t id)
{
	for (size_t i = 0; i < f->l.n; i++)
		if (f->l.ops[i].table == KM_OP_BACKEND && f->l.ops[i].be.id == id)
			return &f->l.ops[i];
	return NULL;
}

static size_t fe_ops(const struct fx *f)
{
	size_t n = 0;

	for (size_t i = 0; i < f->l.n; i++)
		n += f->l.ops[i].table == KM_OP_FRONTEND && !f->l.ops[i].del;
	return n;
}

static void test_tunneled_workloads(void **state)
{
	struct fx *f = *state;
	struct km_addr tunnel;
	const struct km_op *o;
	struct km_workload_res *none = wl("none", "10.0.0.3", KM_WORKLOAD_HEALTHY, 0);
	char buf[KM_ADDR_STRLEN];

	km_addr_parse("169.254.20.15", &tunnel);
	km_model_set_local_node(&f->m, "node-1");
	km_model_set_tunnel(&f->m, &tunnel);
	km_model_upsert_workload(&f->m, hbone_wl("far", "10.0.0.1", "node-2"));
	km_model_upsert_workload(&f->m, hbone_wl("near", "10.0.0.2", "node-1"));
	km_model_upsert_workload(&f->m, none);
	km_model_upsert_workload(&f->m, with_wp(hbone_wl("wp", "10.0.0.4", "node-2")));
	km_model_flush(&f->m);
	o = backend_op(f, km_model_id_of(&f->m, "far"));
	assert_non_null(o);
	assert_true(o->be.waypoint.has_addr);
	assert_string_equal(km_addr_format(&o->be.waypoint.addr, buf), "169.254.20.15");
	/* the kernel may keep it if IPsec reaches its node (--hbone-over-ipsec kernel) */
	assert_int_equal(o->be.waypoint.port, KM_TUNNEL_UNLESS_IPSEC);
	assert_int_equal(o->be.waypoint.data_port, KM_TUNNEL_OUTBOUND_PORT);
	assert_int_equal(backend_op(f, km_model_id_of(&f->m, "near"))->be.waypoint.port, 0);
	assert_int_equal(backend_op(f, km_model_id_of(&f->m, "none"))->be.waypoint.port, 0);
	assert_string_equal(km_addr_format(&backend_op(f, km_model_id_of(&f->m, "wp"))->be.waypoint.addr,
					   buf), "10.99.0.1");
	assert_int_equal(fe_ops(f), 2); /* far's pod IP, and wp's (its own waypoint) */
	/* the access log's why: tunneled, or kept by the kernel (far: only by the IPsec rule) */
	assert_string_equal(km_model_route_why(&f->m, km_model_find_workload(&f->m, "far"), NULL, 1),
			    "hbone_workload");
	assert_string_equal(km_model_route_why(&f->m, km_model_find_workload(&f->m, "far"), NULL, 0),
			    "ipsec");
	assert_string_equal(km_model_route_why(&f->m, km_model_find_workload(&f->m, "near"), NULL, 0),
			    "same_node");
	assert_string_equal(km_model_route_why(&f->m, km_model_find_workload(&f->m, "none"), NULL, 0),
			    "no_hbone");
	assert_string_equal(km_model_route_why(&f->m, km_model_find_workload(&f->m, "wp"), NULL, 1),
			    "waypoint");
	assert_string_equal(km_model_route_why(&f->m, NULL, NULL, 0), "outside_mesh");
	km_oplist_clear(&f->l);

	/* far moves to this node: straight to it, and its pod-IP row goes */
	km_model_upsert_workload(&f->m, hbone_wl("far", "10.0.0.1", "node-1"));
	km_model_flush(&f->m);
	assert_int_equal(backend_op(f, km_model_id_of(&f->m, "far"))->be.waypoint.port, 0);
	assert_int_equal(fe_ops(f), 0);
}

/* --hbone-over-ipsec hbone: a workload reached over HBONE is tunneled whatever protects the
 * wire (the kernel never keeps it) */
static void test_hbone_over_ipsec(void **state)
{
	struct fx *f = *state;
	struct km_addr tunnel;
	const struct km_op *o;

	km_addr_parse("169.254.20.15", &tunnel);
	km_model_set_local_node(&f->m, "node-1");
	km_model_set_tunnel(&f->m, &tunnel);
	km_model_set_hbone_over_ipsec(&f->m, 1);
	km_model_upsert_workload(&f->m, hbone_wl("far", "10.0.0.1", "node-2"));
	km_model_flush(&f->m);
	o = backend_op(f, km_model_id_of(&f->m, "far"));
	assert_non_null(o);
	assert_int_equal(o->be.waypoint.port, KM_TUNNEL_OUTBOUND_PORT);
	assert_int_equal(o->be.waypoint.data_port, KM_TUNNEL_OUTBOUND_PORT);
}

/* Waypoints over HBONE: a resolved waypoint is reached through the tunnel's listener (which
 * asks the agent for the waypoint's pod); a pending one stays pending (refused); with tlv, the
 * waypoint itself on its data port. */
static void test_waypoints_through_the_tunnel(void **state)
{
	struct fx *f = *state;
	struct km_addr tunnel;
	struct km_service_res *s = svc(SVC, "10.96.0.1", 80, 0);
	struct km_service_res *pending = svc("ns/pending", "10.96.0.2", 80, 0);
	char buf[KM_ADDR_STRLEN];

	km_addr_parse("169.254.20.15", &tunnel);
	km_model_set_tunnel(&f->m, &tunnel);
	km_model_set_waypoint_hbone(&f->m, 1);
	s->waypoint = (struct km_waypoint){ .kind = KM_WAYPOINT_HOSTNAME, .service = strdup("ns/wp"),
					    .hbone_port = 15008 };
	pending->waypoint = (struct km_waypoint){ .kind = KM_WAYPOINT_HOSTNAME,
						  .service = strdup("ns/none"), .hbone_port = 15008 };
	km_model_upsert_service(&f->m, svc("ns/wp", "10.96.9.9", 15008, 0));
	km_model_upsert_service(&f->m, s);
	km_model_upsert_service(&f->m, pending);
	km_model_upsert_workload(&f->m, with_wp(wl("w1", "10.0.0.1", KM_WORKLOAD_HEALTHY, 0)));
	km_model_flush(&f->m);
	for (size_t i = 0; i < f->l.n; i++) {
		const struct km_op *o = &f->l.ops[i];
		const struct km_op_waypoint *wp = o->table == KM_OP_SERVICE ? &o->svc.waypoint
						  : o->table == KM_OP_BACKEND ? &o->be.waypoint
									      : NULL;

		if (!wp || (o->table == KM_OP_SERVICE && o->svc.id == km_model_id_of(&f->m, "ns/wp")))
			continue;
		if (o->table == KM_OP_SERVICE && o->svc.id == km_model_id_of(&f->m, "ns/pending")) {
			assert_int_equal(wp->port, 15008); /* pending: port, no address */
			assert_false(wp->has_addr);
			continue;
		}
		assert_string_equal(km_addr_format(&wp->addr, buf), "169.254.20.15");
		assert_int_equal(wp->port, KM_TUNNEL_OUTBOUND_PORT);
		assert_int_equal(wp->data_port, KM_TUNNEL_OUTBOUND_PORT);
	}
}

static void test_tunnel_off_tunnels_nothing(void **state)
{
	struct fx *f = *state;

	km_model_set_local_node(&f->m, "node-1");
	km_model_upsert_workload(&f->m, hbone_wl("far", "10.0.0.1", "node-2"));
	km_model_flush(&f->m);
	assert_int_equal(backend_op(f, km_model_id_of(&f->m, "far"))->be.waypoint.port, 0);
	assert_int_equal(fe_ops(f), 0);
	assert_string_equal(km_model_route_why(&f->m, km_model_find_workload(&f->m, "far"), NULL, 0),
			    "tunnel_off");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_waypoint_resolution_order, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_waypoint_known_before_its_dependents, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_waypoint_pointing_at_itself_is_ignored, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_port_override_order, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_port_overrides_follow_the_service, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_tunneled_workloads, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_tunnel_off_tunnels_nothing, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_hbone_over_ipsec, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_waypoints_through_the_tunnel, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests_name("model_waypoint", tests, NULL, NULL);
}
