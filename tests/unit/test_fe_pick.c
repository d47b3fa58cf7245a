/* test_fe_pick.c — a service's uniform pick in its frontend rows, as the map writer keeps it
 * (fe_pick.c), against real BPF maps (needs CAP_BPF; skipped otherwise): a row written gets its
 * service's range and count; every row of a service follows each change of its pick (count,
 * range growth, waypoint, P2C, weights, PASSTHROUGH, FAILOVER's group); a deleted row is
 * forgotten; batches; rows without a pick (an older layout) get one at start. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <arpa/inet.h>

#include "tests/unit/tables_fixture.h"

#define SVC_KIND KMESH__IPC__FRONTEND_KIND__FRONTEND_KIND_SERVICE

static uint8_t vip[4] = { 10, 96, 0, 7 };

static struct km_frontend_key fe_key(uint16_t port)
{
	struct km_frontend_key k = { .port = htons(port), .proto = 6 };

	k.addr.bytes[10] = k.addr.bytes[11] = 0xff;
	memcpy(&k.addr.bytes[12], vip, 4);
	return k;
}

static struct km_frontend_value fe_at(struct km_tables *t, uint16_t port)
{
	struct km_frontend_key k = fe_key(port);
	struct km_frontend_value v;

	memset(&v, 0xee, sizeof(v));
	assert_int_equal(bpf_map_lookup_elem(t->fd_frontend, &k, &v), 0);
	return v;
}

/* The row's pick is the service's group g range and count, or none (count 0). */
static void assert_pick(struct km_tables *t, uint16_t port, uint32_t svc, int g, uint32_t count)
{
	struct km_frontend_value v = fe_at(t, port);

	assert_int_equal(v.upstream_id, svc);
	if (!count) {
		assert_int_equal(v.flags & KM_FE_F_PICK, 0);
		assert_int_equal(v.pick_count, 0);
		assert_int_equal(v.pick_base, 0);
		return;
	}
	assert_int_equal(v.flags & KM_FE_F_PICK, KM_FE_F_PICK);
	assert_int_equal(v.pick_count, count);
	assert_int_equal(v.pick_base, service_at(t, svc).slot_base[g]);
	assert_int_not_equal(v.pick_base, KM_SLOT_NONE);
}

static void write_endpoints(struct km_tables *t, uint32_t svc, uint32_t prio, uint32_t from,
			    uint32_t to)
{
	struct rows r;
	char err[256];

	for (uint32_t i = from; i < to; i++)
		assert_int_equal(apply(t, endpoint(&r, svc, prio, i, 90 + i % 3), err), OK);
}

static void test_pick_follows_service(void **state)
{
	struct km_tables tt, *t = &tt;
	uint64_t totals[KM_PRIO_COUNT] = { 0 };
	struct km_frontend_value fv;
	struct rows r;
	char err[256];

	(void)state;
	tables_open_slots(t, 64);

	/* a service of three endpoints, then its frontend rows: each carries the pick */
	write_endpoints(t, 900, 0, 0, 3);
	assert_int_equal(apply(t, service(&r, 900, 3, KM_LB_RANDOM), err), OK);
	assert_int_equal(apply(t, frontend(&r, vip, 4, 80, SVC_KIND, 900, 8080), err), OK);
	assert_int_equal(apply(t, frontend(&r, vip, 4, 81, SVC_KIND, 900, 8081), err), OK);
	assert_pick(t, 80, 900, 0, 3);
	assert_pick(t, 81, 900, 0, 3);
	fv = fe_at(t, 80);
	assert_int_equal(fv.target_port, htons(8080)); /* the agent's fields are kept */

	/* the pick is the map writer's alone: an agent's row that sets the flag is refused, and a
	 * pick it sends (a dump-only field) is not what is written */
	frontend(&r, vip, 4, 82, SVC_KIND, 900, 8080);
	r.fe.flags = KM_FE_F_PICK;
	assert_int_equal(apply(t, &r.op, err), BAD);
	frontend(&r, vip, 4, 82, SVC_KIND, 900, 8080);
	r.fe.pick_base = 40;
	r.fe.pick_count = 9;
	assert_int_equal(apply(t, &r.op, err), OK);
	assert_pick(t, 82, 900, 0, 3);
	frontend(&r, vip, 4, 82, SVC_KIND, 900, 8080);
	r.op.kind = KMESH__IPC__TABLE_OP__KIND__DELETE;
	assert_int_equal(apply(t, &r.op, err), OK);

	/* the range grows with the service: both rows follow its next write, not before */
	write_endpoints(t, 900, 0, 3, 6);
	assert_pick(t, 80, 900, 0, 3);
	assert_int_equal(apply(t, service(&r, 900, 6, KM_LB_RANDOM), err), OK);
	assert_pick(t, 80, 900, 0, 6);
	assert_pick(t, 81, 900, 0, 6);

	/* a lower count */
	assert_int_equal(apply(t, service(&r, 900, 5, KM_LB_RANDOM), err), OK);
	assert_pick(t, 80, 900, 0, 5);

	/* a waypoint, P2C, weights and PASSTHROUGH each take the pick away; it comes back */
	service(&r, 900, 5, KM_LB_RANDOM);
	r.svc.waypoint_port = 15008;
	r.svc.waypoint_data_port = 15019;
	r.svc.waypoint_address = (ProtobufCBinaryData){ .len = 4, .data = vip };
	assert_int_equal(apply(t, &r.op, err), OK);
	assert_pick(t, 80, 900, 0, 0);
	assert_pick(t, 81, 900, 0, 0);
	assert_int_equal(apply(t, service(&r, 900, 5, KM_LB_RANDOM), err), OK);
	assert_pick(t, 80, 900, 0, 5);
	service(&r, 900, 5, KM_LB_RANDOM);
	r.svc.flags = KM_SVC_F_P2C;
	assert_int_equal(apply(t, &r.op, err), OK);
	assert_pick(t, 80, 900, 0, 0);
	service(&r, 900, 5, KM_LB_RANDOM);
	totals[0] = 9;
	r.svc.weight_total = totals;
	r.svc.n_weight_total = KM_PRIO_COUNT;
	assert_int_equal(apply(t, &r.op, err), OK);
	assert_pick(t, 80, 900, 0, 0);
	assert_int_equal(apply(t, service(&r, 900, 5, KM_LB_PASSTHROUGH), err), OK);
	assert_pick(t, 80, 900, 0, 0);
	assert_int_equal(apply(t, service(&r, 900, 5, KM_LB_STRICT), err), OK);
	assert_pick(t, 80, 900, 0, 5);
	assert_int_equal(apply(t, service(&r, 900, 0, KM_LB_STRICT), err), OK);
	assert_pick(t, 80, 900, 0, 0); /* no endpoint: the service row says STRICT refuses */

	/* FAILOVER picks from the first group with endpoints */
	write_endpoints(t, 900, 1, 0, 2);
	service(&r, 900, 0, KM_LB_FAILOVER);
	r.counts[1] = 2;
	assert_int_equal(apply(t, &r.op, err), OK);
	assert_pick(t, 80, 900, 1, 2);
	service(&r, 900, 5, KM_LB_FAILOVER);
	r.counts[1] = 2;
	assert_int_equal(apply(t, &r.op, err), OK);
	assert_pick(t, 80, 900, 0, 5);

	/* a row moved to another service follows that one; a deleted row is forgotten */
	write_endpoints(t, 901, 0, 0, 1);
	assert_int_equal(apply(t, service(&r, 901, 1, KM_LB_RANDOM), err), OK);
	assert_int_equal(apply(t, frontend(&r, vip, 4, 81, SVC_KIND, 901, 8081), err), OK);
	assert_pick(t, 81, 901, 0, 1);
	assert_int_equal(apply(t, service(&r, 900, 4, KM_LB_RANDOM), err), OK);
	assert_pick(t, 80, 900, 0, 4);
	assert_pick(t, 81, 901, 0, 1); /* not 900's any more */
	frontend(&r, vip, 4, 80, SVC_KIND, 900, 8080);
	r.op.kind = KMESH__IPC__TABLE_OP__KIND__DELETE;
	assert_int_equal(apply(t, &r.op, err), OK);
	assert_int_equal(apply(t, service(&r, 900, 3, KM_LB_RANDOM), err), OK);
	{
		struct km_frontend_key k = fe_key(80);

		assert_int_not_equal(bpf_map_lookup_elem(t->fd_frontend, &k, &fv), 0); /* not made again */
	}
	assert_int_equal(t->fe_pick.rewrite_failed, 0);
	assert_true(t->fe_pick.rows_rewritten >= 10);

	/* a batch: the service row, then a frontend row, as one message */
	{
		Kmesh__Ipc__TableOp ops[2], *opp[2] = { &ops[0], &ops[1] };
		Kmesh__Ipc__TableBatch b = KMESH__IPC__TABLE_BATCH__INIT;
		struct rows r2;
		uint32_t applied = 0;

		write_endpoints(t, 900, 0, 3, 6);
		service(&r, 900, 6, KM_LB_RANDOM);
		frontend(&r2, vip, 4, 80, SVC_KIND, 900, 8080);
		ops[0] = r.op;
		ops[1] = r2.op;
		b.ops = opp;
		b.n_ops = 2;
		assert_int_equal(km_tables_apply_batch(t, &b, &applied, err, sizeof(err)), OK);
		assert_int_equal(applied, 2);
		assert_pick(t, 80, 900, 0, 6);
	}

	/* rows without a pick (migrated from layout 4) get it at start; a stale one is corrected */
	{
		struct km_frontend_key k = fe_key(80), k81 = fe_key(81);

		fv = fe_at(t, 80);
		fv.flags &= (uint16_t)~KM_FE_F_PICK;
		fv.pick_base = fv.pick_count = 0;
		assert_int_equal(bpf_map_update_elem(t->fd_frontend, &k, &fv, BPF_EXIST), 0);
		fv = fe_at(t, 81);
		fv.pick_count = 77;
		assert_int_equal(bpf_map_update_elem(t->fd_frontend, &k81, &fv, BPF_EXIST), 0);
	}
	write_endpoints(t, 902, 0, 0, 2); /* and a service with no frontend row yet */
	assert_int_equal(apply(t, service(&r, 902, 2, KM_LB_RANDOM), err), OK);
	km_tables_free(t);
	assert_int_equal(km_tables_load_present(t), 0);
	assert_pick(t, 80, 900, 0, 6);
	assert_pick(t, 81, 901, 0, 1);
	/* a service written before the restart gets its first frontend row after it: read once */
	assert_int_equal(apply(t, frontend(&r, vip, 4, 83, SVC_KIND, 902, 8080), err), OK);
	assert_pick(t, 83, 902, 0, 2);
	/* and the index is whole again: a change reaches the row */
	assert_int_equal(apply(t, service(&r, 900, 5, KM_LB_RANDOM), err), OK);
	assert_pick(t, 80, 900, 0, 5);

	/* a deleted service leaves its rows without a pick (BPF then finds no service row) */
	assert_int_equal(km_tables_delete_key(t, t->fd_service, &(struct km_service_key){ 901 }), 0);
	assert_pick(t, 81, 901, 0, 0);
	tables_close(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pick_follows_service),
	};

	return cmocka_run_group_tests_name("fe_pick", tests, NULL, NULL);
}
