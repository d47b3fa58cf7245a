/* test_slots.c — km_slot, where BPF picks endpoints from, as the map writer keeps it (slots.c),
 * against real BPF maps (needs CAP_BPF; skipped otherwise): each service's endpoint rows copied
 * to a range its row names, growth named only on the row's next write, the quarantine, refusal
 * when full, ranges recovered at restart and rows of an older layout placed at start. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "tests/unit/tables_fixture.h"

static struct km_endpoint_value slot_at(struct km_tables *t, uint32_t slot)
{
	struct km_endpoint_value v;

	memset(&v, 0xee, sizeof(v));
	assert_int_equal(bpf_map_lookup_elem(t->fd_slot, &slot, &v), 0);
	return v;
}

static void write_endpoints(struct km_tables *t, uint32_t svc, uint32_t from, uint32_t to,
			    uint32_t backend0)
{
	struct rows r;
	char err[256];

	for (uint32_t i = from; i < to; i++)
		assert_int_equal(apply(t, endpoint(&r, svc, 0, i, backend0 + i % 3), err), OK);
}

/* Each service's endpoint rows are copied to a range of km_slot that its row names; a range that
 * grows is named only once the service row is written again, the old one is kept a while, and a
 * restart finds the ranges again. Rows of a layout before slots are placed at start. */
static void test_endpoint_slots(void **state)
{
	struct km_tables tt, *t = &tt;
	struct km_service_value sv;
	struct km_endpoint_value ev;
	uint64_t size, free_slots, quarantined;
	uint32_t old_base;
	struct rows r;
	char err[256];

	(void)state;
	tables_open_slots(t, 16);

	/* three endpoints: one range of four slots, named by the service row */
	write_endpoints(t, 900, 0, 3, 90);
	assert_int_equal(apply(t, service(&r, 900, 3, 0), err), OK);
	sv = service_at(t, 900);
	assert_int_not_equal(sv.slot_base[0], KM_SLOT_NONE);
	assert_int_equal(sv.slot_order[0], 2);
	for (int p = 1; p < KM_PRIO_COUNT; p++)
		assert_int_equal(sv.slot_base[p], KM_SLOT_NONE);
	for (uint32_t i = 0; i < 3; i++) {
		ev = slot_at(t, sv.slot_base[0] + i);
		assert_int_equal(ev.backend_id, 90 + i);
		assert_int_equal(ev.cum_weight, i + 1);
	}
	old_base = sv.slot_base[0];

	/* two more: copied to a range of eight; the row names the old one until it is written */
	write_endpoints(t, 900, 3, 5, 90);
	assert_int_equal(service_at(t, 900).slot_base[0], old_base);
	assert_int_equal(slot_at(t, old_base + 2).backend_id, 92); /* the old range is intact */
	assert_int_equal(apply(t, endpoint(&r, 900, 0, 1, 92), err), OK); /* a rewrite in place */
	assert_int_equal(slot_at(t, old_base + 1).backend_id, 92);  /* reaches both ranges */
	assert_int_equal(apply(t, service(&r, 900, 5, 0), err), OK);
	sv = service_at(t, 900);
	assert_int_not_equal(sv.slot_base[0], old_base);
	assert_int_equal(sv.slot_order[0], 3);
	assert_int_equal(slot_at(t, sv.slot_base[0] + 0).backend_id, 90);
	assert_int_equal(slot_at(t, sv.slot_base[0] + 1).backend_id, 92);
	assert_int_equal(slot_at(t, sv.slot_base[0] + 4).backend_id, 91);
	km_slots_usage(&t->slots, &size, &free_slots, &quarantined);
	assert_int_equal(size, 16);
	assert_int_equal(quarantined, 4); /* the old range: a connect may have just read it */
	assert_int_equal(free_slots, 16 - 8 - 4);

	/* a slot a lower count no longer exposes is deleted, and cleared */
	assert_int_equal(apply(t, service(&r, 900, 4, 0), err), OK);
	endpoint(&r, 900, 0, 4, 0);
	r.op.kind = KMESH__IPC__TABLE_OP__KIND__DELETE;
	assert_int_equal(apply(t, &r.op, err), OK);
	assert_int_equal(slot_at(t, sv.slot_base[0] + 4).backend_id, 0);

	/* a restart finds the ranges the rows name */
	km_tables_free(t);
	assert_int_equal(km_tables_load_present(t), 0);
	km_slots_usage(&t->slots, &size, &free_slots, &quarantined);
	assert_int_equal(free_slots, 16 - 8);
	assert_int_equal(service_at(t, 900).slot_base[0], sv.slot_base[0]);
	assert_int_equal(slot_at(t, sv.slot_base[0] + 1).backend_id, 92);

	/* rows of a layout before slots (base KM_SLOT_NONE) are placed at start */
	sv = service_at(t, 900);
	sv.slot_base[0] = KM_SLOT_NONE;
	sv.slot_order[0] = 0;
	{
		struct km_service_key k = { .service_id = 900 };

		assert_int_equal(bpf_map_update_elem(t->fd_service, &k, &sv, BPF_EXIST), 0);
	}
	km_tables_free(t);
	assert_int_equal(km_tables_load_present(t), 0);
	sv = service_at(t, 900);
	assert_int_not_equal(sv.slot_base[0], KM_SLOT_NONE);
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(slot_at(t, sv.slot_base[0] + i).backend_id, i == 1 ? 92 : 90 + i % 3);

	/* no range of sixteen is left: a big service reads km_endpoint */
	write_endpoints(t, 901, 0, 9, 90);
	assert_int_equal(apply(t, service(&r, 901, 9, 0), err), OK);
	assert_int_equal(service_at(t, 901).slot_base[0], KM_SLOT_NONE);
	assert_true(t->slots.ranges_refused >= 1);

	/* a service left with no endpoints names no range (its range goes, through the quarantine),
	 * and so does a service's removal */
	assert_int_equal(apply(t, service(&r, 900, 0, 0), err), OK);
	for (uint32_t i = 0; i < 4; i++) {
		endpoint(&r, 900, 0, i, 0);
		r.op.kind = KMESH__IPC__TABLE_OP__KIND__DELETE;
		assert_int_equal(apply(t, &r.op, err), OK);
	}
	assert_int_equal(service_at(t, 900).slot_base[0], sv.slot_base[0]); /* not written since */
	assert_int_equal(apply(t, service(&r, 900, 0, 0), err), OK);
	assert_int_equal(service_at(t, 900).slot_base[0], KM_SLOT_NONE);
	km_slots_usage(&t->slots, &size, &free_slots, &quarantined);
	assert_int_equal(free_slots + quarantined, 16);
	assert_int_equal(quarantined, 4);
	service(&r, 900, 0, 0);
	r.op.kind = KMESH__IPC__TABLE_OP__KIND__DELETE;
	assert_int_equal(apply(t, &r.op, err), OK);
	km_slots_usage(&t->slots, &size, &free_slots, &quarantined);
	assert_int_equal(free_slots + quarantined, 16);
	tables_close(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_endpoint_slots),
	};

	return cmocka_run_group_tests_name("slots", tests, NULL, NULL);
}
