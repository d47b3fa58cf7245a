/* test_migrate.c — the layout converters: entries pinned by an older map writer, as raw bytes of
 * that layout, come out as this layout's rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kmesh_maps.h"
#include "services/map-writer/migrate.h"

/* Layout 2 byte offsets: service value = counts[7] @0, lb_mode @28, waypoint addr @32, port @48
 * (52 B); endpoint value = backend_id (4 B); backend value = addr4 @0, addr6 @16, waypoint addr
 * @32, port @48, weight @52 (56 B). */
static void test_layout_2_to_5(void **state)
{
	const struct km_map_migration *m = km_migration_from(2), *svc, *ep, *be;
	uint8_t old[64] = { 0 };
	struct km_service_key sk = { .service_id = 5 }, nsk = { 0 };
	struct km_service_value sv;
	struct km_endpoint_key ek = { .service_id = 5, .prio = 1, .index = 6 }, nek;
	struct km_endpoint_value ev;
	struct km_backend_key bk = { .backend_id = 9 }, nbk;
	struct km_backend_value bv;
	uint32_t u;
	uint16_t port = 0x983a; /* 15000 in network order on a little-endian host */

	(void)state;
	assert_non_null(m);
	assert_null(km_migration_from(1));
	assert_non_null(km_migration_for(m, KM_MAP_FRONTEND)); /* the pick, since layout 5 */
	svc = km_migration_for(m, KM_MAP_SERVICE);
	ep = km_migration_for(m, KM_MAP_ENDPOINT);
	be = km_migration_for(m, KM_MAP_BACKEND);
	assert_non_null(svc);
	assert_int_equal(svc->old_value, 52);
	assert_int_equal(ep->old_value, 4);
	assert_int_equal(be->old_value, 56);

	u = 3;
	memcpy(old + 4, &u, 4); /* 3 endpoints at priority 1 */
	u = KM_LB_FAILOVER;
	memcpy(old + 28, &u, 4);
	old[32 + 10] = old[32 + 11] = 0xff;
	old[32 + 12] = 10;
	memcpy(old + 48, &port, 2);
	memset(&sv, 0, sizeof(sv));
	svc->convert(&sk, old, &nsk, &sv);
	assert_int_equal(nsk.service_id, 5);
	assert_int_equal(sv.endpoint_count[1], 3);
	assert_int_equal(sv.weight_total[1], 3); /* no weights before: total = count */
	assert_int_equal(sv.lb_mode, KM_LB_FAILOVER);
	assert_int_equal(sv.waypoint.port, port);
	assert_int_equal(sv.waypoint.data_port, port); /* layout 2 dialled the HBONE port */
	assert_int_equal(sv.waypoint.addr.bytes[12], 10);
	for (int p = 0; p < KM_PRIO_COUNT; p++) /* no range yet: placed by the map writer */
		assert_int_equal(sv.slot_base[p], KM_SLOT_NONE);

	memset(old, 0, sizeof(old));
	u = 9;
	memcpy(old, &u, 4);
	memset(&ev, 0, sizeof(ev));
	ep->convert(&ek, old, &nek, &ev);
	assert_int_equal(nek.index, 6);
	assert_int_equal(ev.backend_id, 9);
	assert_int_equal(ev.cum_weight, 7); /* slot 6 of weight-1 slots */

	memset(old, 0, sizeof(old));
	old[10] = old[11] = 0xff;
	old[12] = 10;
	old[15] = 7;
	u = 4;
	memcpy(old + 52, &u, 4);
	memset(&bv, 0, sizeof(bv));
	be->convert(&bk, old, &nbk, &bv);
	assert_int_equal(nbk.backend_id, 9);
	assert_int_equal(bv.addr4.bytes[15], 7);
	assert_int_equal(bv.weight, 4);
	assert_int_equal(bv.waypoint.port, 0);
}

/* Layout 3's service value is layout 4's without the slot fields (112 B): kept, slots none. */
static void test_layout_3_to_5(void **state)
{
	const struct km_map_migration *m = km_migration_from(3), *svc;
	struct km_service_key sk = { .service_id = 8 }, nsk = { 0 };
	struct km_service_value old, sv;

	(void)state;
	assert_non_null(m);
	assert_null(km_migration_for(m, KM_MAP_ENDPOINT)); /* unchanged: adopted */
	assert_null(km_migration_for(m, KM_MAP_BACKEND));
	svc = km_migration_for(m, KM_MAP_SERVICE);
	assert_non_null(svc);
	assert_int_equal(svc->old_value, 112);
	memset(&old, 0, sizeof(old));
	old.endpoint_count[2] = 5;
	old.lb_mode = KM_LB_FAILOVER;
	old.flags = KM_SVC_F_P2C;
	old.weight_total[2] = 9;
	old.waypoint.port = 0x983a;
	memset(&sv, 0, sizeof(sv)); /* as migrate_entries passes it */
	svc->convert(&sk, &old, &nsk, &sv);
	assert_int_equal(nsk.service_id, 8);
	assert_int_equal(sv.endpoint_count[2], 5);
	assert_int_equal(sv.lb_mode, KM_LB_FAILOVER);
	assert_int_equal(sv.flags, KM_SVC_F_P2C);
	assert_int_equal(sv.weight_total[2], 9);
	assert_int_equal(sv.waypoint.port, 0x983a);
	for (int p = 0; p < KM_PRIO_COUNT; p++)
		assert_int_equal(sv.slot_base[p], KM_SLOT_NONE);
	assert_non_null(km_migration_for(m, KM_MAP_FRONTEND));
}

/* Layouts 2 to 4's frontend value is layout 5's without the pick (12 B): kept, no pick (BPF reads
 * the service row until the map writer fills it in at start). */
static void test_layout_4_to_5(void **state)
{
	const struct km_map_migration *m = km_migration_from(4), *fe;
	struct km_frontend_key fk = { .port = 0x5000, .proto = 6 }, nfk;
	struct km_frontend_value fv;
	uint8_t old[12];
	uint32_t u;
	uint16_t h;

	(void)state;
	assert_non_null(m);
	assert_null(km_migration_for(m, KM_MAP_SERVICE)); /* unchanged: adopted */
	assert_null(km_migration_for(m, KM_MAP_ENDPOINT));
	assert_null(km_migration_for(m, KM_MAP_BACKEND));
	fe = km_migration_for(m, KM_MAP_FRONTEND);
	assert_non_null(fe);
	assert_int_equal(fe->old_value, 12);
	assert_ptr_equal(km_migration_for(km_migration_from(2), KM_MAP_FRONTEND)->convert, fe->convert);
	fk.addr.bytes[15] = 7;
	u = KM_FRONTEND_SERVICE;
	memcpy(old, &u, 4);
	u = 321;
	memcpy(old + 4, &u, 4);
	h = 0x901f; /* 8080 in network order */
	memcpy(old + 8, &h, 2);
	h = KM_FE_F_PORT_OVERRIDES | KM_FE_F_PICK; /* a stray bit of the map writer's: cleared */
	memcpy(old + 10, &h, 2);
	memset(&fv, 0xee, sizeof(fv));
	fe->convert(&fk, old, &nfk, &fv);
	assert_memory_equal(&nfk, &fk, sizeof(fk));
	assert_int_equal(fv.kind, KM_FRONTEND_SERVICE);
	assert_int_equal(fv.upstream_id, 321);
	assert_int_equal(fv.target_port, 0x901f);
	assert_int_equal(fv.flags, KM_FE_F_PORT_OVERRIDES);
	assert_int_equal(fv.pick_base, 0);
	assert_int_equal(fv.pick_count, 0);
	assert_null(km_migration_from(5)); /* this build's own */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_2_to_5),
		cmocka_unit_test(test_layout_3_to_5),
		cmocka_unit_test(test_layout_4_to_5),
	};

	return cmocka_run_group_tests_name("migrate", tests, NULL, NULL);
}
