/* test_oplist_encode.c — the agent's one-pass encoding of a table batch (oplist.c) writes exactly
 * the bytes protobuf-c would: every kind of row, upserts and deletes, random values up to their
 * widths' limits, empty and large batches, request ids of every varint length. Each frame is
 * read back by protobuf-c (the map writer's decoder), its ops compared with what was encoded,
 * and packed again by protobuf-c: the bytes must be equal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ipc/message.h"
#include "services/xds-agent/core/oplist.h"
#include "shared/addr.h"

static uint64_t rnd_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* 0, small, or anything: each varint length occurs */
static uint32_t r32(void)
{
	switch (rnd() % 4) {
	case 0: return 0;
	case 1: return (uint32_t)(rnd() % 200);
	default: return (uint32_t)(rnd() >> (rnd() % 32));
	}
}

static void rnd_addr(struct km_addr *a)
{
	char text[64];
	uint32_t v = (uint32_t)rnd();

	if (rnd() % 2)
		snprintf(text, sizeof(text), "%u.%u.%u.%u", v >> 24, (v >> 16) & 255, (v >> 8) & 255, v & 255);
	else
		snprintf(text, sizeof(text), "fd00::%x:%x", v >> 16, v & 0xffff);
	assert_int_equal(km_addr_parse(text, a), 0);
}

static void rnd_waypoint(struct km_op_waypoint *w)
{
	w->port = rnd() % 3 ? 0 : (uint16_t)r32();
	w->data_port = (uint16_t)r32();
	if ((w->has_addr = rnd() % 2))
		rnd_addr(&w->addr);
}

static void rnd_op(struct km_op *o)
{
	memset(o, 0, sizeof(*o));
	o->table = (uint8_t)(1 + rnd() % KM_OP_AUTHZ_INDEX);
	o->del = rnd() % 4 == 0;
	switch (o->table) {
	case KM_OP_FRONTEND:
		rnd_addr(&o->fe.addr);
		o->fe.port = (uint16_t)r32();
		o->fe.kind = (uint8_t)(rnd() % 3);
		o->fe.upstream_id = r32();
		o->fe.target_port = (uint16_t)r32();
		o->fe.flags = (uint16_t)(rnd() % 2);
		break;
	case KM_OP_SERVICE:
		o->svc.id = r32();
		for (int p = 0; p < KM_PRIO_COUNT; p++) {
			o->svc.count[p] = r32();
			o->svc.weight_total[p] = (uint64_t)r32() << (rnd() % 32);
		}
		o->svc.lb_mode = (uint32_t)(rnd() % 4);
		o->svc.flags = r32();
		rnd_waypoint(&o->svc.waypoint);
		break;
	case KM_OP_ENDPOINT:
		o->ep.service_id = r32();
		o->ep.prio = (uint32_t)(rnd() % KM_PRIO_COUNT);
		o->ep.index = r32();
		o->ep.backend_id = r32();
		o->ep.addr4 = (uint32_t)rnd();
		o->ep.cum_weight = (uint64_t)r32() << (rnd() % 32);
		break;
	case KM_OP_BACKEND:
		o->be.id = r32();
		if ((o->be.has4 = rnd() % 2))
			assert_int_equal(km_addr_parse("10.1.2.3", &o->be.addr4), 0);
		if ((o->be.has6 = rnd() % 2))
			assert_int_equal(km_addr_parse("fd00::1:2", &o->be.addr6), 0);
		rnd_waypoint(&o->be.waypoint);
		o->be.weight = r32();
		break;
	case KM_OP_PORT_OVERRIDE:
		o->po.service_id = r32();
		o->po.backend_id = r32();
		o->po.port = (uint16_t)r32();
		o->po.target_port = (uint16_t)r32();
		break;
	case KM_OP_AUTHZ_IDENT:
		rnd_addr(&o->ident.addr);
		o->ident.workload_id = r32();
		o->ident.ns_id = r32();
		o->ident.sa_id = r32();
		o->ident.principal_id = r32();
		break;
	case KM_OP_AUTHZ_SET:
		o->set.set_id = r32();
		o->set.value = r32();
		break;
	case KM_OP_AUTHZ_CIDR:
		o->cidr.set_id = r32();
		o->cidr.addr_len = rnd() % 2 ? 4 : 16;
		for (int i = 0; i < o->cidr.addr_len; i++)
			o->cidr.addr[i] = (uint8_t)rnd();
		o->cidr.length = (uint8_t)(rnd() % (o->cidr.addr_len * 8 + 1));
		break;
	case KM_OP_AUTHZ_MATCH:
		o->match.policy_id = r32();
		o->match.index = r32();
		o->match.flags = r32();
		for (int i = 0; i < KM_AF_COUNT; i++)
			o->match.sets[i] = r32();
		break;
	case KM_OP_AUTHZ_LIST:
		o->list.kind = r32();
		o->list.owner = r32();
		o->list.index = r32();
		o->list.policy_id = r32();
		o->list.stat_id = r32();
		o->list.flags = r32();
		o->list.n_matches = r32();
		o->list.n_deny = r32();
		o->list.n_allow = r32();
		o->list.n_dry_run = r32();
		o->list.gen = r32();
		break;
	default:
		o->index.kind = r32();
		o->index.owner = r32();
		o->index.value = r32();
		o->index.gen = (uint8_t)(rnd() % 2);
		o->index.field = (uint8_t)r32();
		o->index.chunk = rnd() % 3 ? (uint8_t)(rnd() % 128) : KM_AZX_SUMMARY;
		for (size_t i = 0; i < KM_AZX_CHUNK_BITS / 64; i++)
			o->index.bits[i] = rnd() % 3 ? rnd() : 0; /* trailing zero words are left out */
		break;
	}
}

/* The row case protobuf-c read must be the op's table, its kind the op's, and the row's first
 * key field the op's. */
static void expect_op(const struct km_op *o, const Kmesh__Ipc__TableOp *p)
{
	static const int row_case[] = {
		[KM_OP_FRONTEND] = KMESH__IPC__TABLE_OP__ROW_FRONTEND,
		[KM_OP_SERVICE] = KMESH__IPC__TABLE_OP__ROW_SERVICE,
		[KM_OP_ENDPOINT] = KMESH__IPC__TABLE_OP__ROW_ENDPOINT,
		[KM_OP_BACKEND] = KMESH__IPC__TABLE_OP__ROW_BACKEND,
		[KM_OP_PORT_OVERRIDE] = KMESH__IPC__TABLE_OP__ROW_PORT_OVERRIDE,
		[KM_OP_AUTHZ_IDENT] = KMESH__IPC__TABLE_OP__ROW_AUTHZ_IDENT,
		[KM_OP_AUTHZ_SET] = KMESH__IPC__TABLE_OP__ROW_AUTHZ_SET,
		[KM_OP_AUTHZ_CIDR] = KMESH__IPC__TABLE_OP__ROW_AUTHZ_CIDR,
		[KM_OP_AUTHZ_MATCH] = KMESH__IPC__TABLE_OP__ROW_AUTHZ_MATCH,
		[KM_OP_AUTHZ_LIST] = KMESH__IPC__TABLE_OP__ROW_AUTHZ_LIST,
		[KM_OP_AUTHZ_INDEX] = KMESH__IPC__TABLE_OP__ROW_AUTHZ_INDEX,
	};

	assert_int_equal(p->row_case, row_case[o->table]);
	assert_int_equal(p->kind, o->del ? KMESH__IPC__TABLE_OP__KIND__DELETE
					 : KMESH__IPC__TABLE_OP__KIND__UPSERT);
	switch (o->table) {
	case KM_OP_FRONTEND: assert_int_equal(p->frontend->upstream_id, o->fe.upstream_id); break;
	case KM_OP_SERVICE: assert_int_equal(p->service->id, o->svc.id); break;
	case KM_OP_ENDPOINT: assert_int_equal(p->endpoint->cum_weight, o->ep.cum_weight); break;
	case KM_OP_BACKEND: assert_int_equal(p->backend->id, o->be.id); break;
	case KM_OP_PORT_OVERRIDE: assert_int_equal(p->port_override->target_port, o->po.target_port); break;
	case KM_OP_AUTHZ_IDENT: assert_int_equal(p->authz_ident->principal_id, o->ident.principal_id); break;
	case KM_OP_AUTHZ_SET: assert_int_equal(p->authz_set->value, o->set.value); break;
	case KM_OP_AUTHZ_CIDR: assert_int_equal(p->authz_cidr->length, o->cidr.length); break;
	case KM_OP_AUTHZ_MATCH: assert_int_equal(p->authz_match->policy_id, o->match.policy_id); break;
	case KM_OP_AUTHZ_LIST: assert_int_equal(p->authz_list->gen, o->list.gen); break;
	default: assert_int_equal(p->authz_index->value, o->index.value); break;
	}
}

static void check_frame(const struct km_op *ops, size_t n, uint64_t request_id)
{
	size_t len, again_len;
	uint8_t *frame = km_oplist_encode(ops, n, request_id, &len), *again;
	Kmesh__Ipc__Envelope *env;

	assert_non_null(frame);
	env = kmesh__ipc__envelope__unpack(NULL, len, frame);
	assert_non_null(env);
	assert_int_equal(env->request_id, request_id);
	assert_int_equal(env->body_case, KMESH__IPC__ENVELOPE__BODY_BATCH);
	assert_int_equal(env->batch->n_ops, n);
	for (size_t i = 0; i < n; i++)
		expect_op(&ops[i], env->batch->ops[i]);
	again_len = kmesh__ipc__envelope__get_packed_size(env);
	assert_int_equal(again_len, len);
	again = malloc(again_len);
	assert_non_null(again);
	kmesh__ipc__envelope__pack(env, again);
	assert_memory_equal(again, frame, len);
	free(again);
	/* the rows packed by hand are the bytes protobuf-c makes of to_pb's messages */
	again = km_oplist_encode_reference(ops, n, request_id, &again_len);
	assert_non_null(again);
	assert_int_equal(again_len, len);
	assert_memory_equal(again, frame, len);
	free(again);
	kmesh__ipc__envelope__free_unpacked(env, NULL);
	free(frame);
}

static void test_every_row_as_protobuf_c_writes_it(void **state)
{
	struct km_op ops[64];

	(void)state;
	for (int round = 0; round < 2000; round++) {
		size_t n = 1 + rnd() % 64;

		for (size_t i = 0; i < n; i++)
			rnd_op(&ops[i]);
		check_frame(ops, n, r32());
	}
}

static void test_empty_and_large_batches(void **state)
{
	enum { N = 50000 }; /* a batch of megabytes: the buffer grows, the lengths take 3-4 bytes */
	struct km_op *ops = calloc(N, sizeof(*ops));

	(void)state;
	assert_non_null(ops);
	check_frame(ops, 0, 0);
	check_frame(ops, 0, UINT64_MAX);
	for (size_t i = 0; i < N; i++)
		rnd_op(&ops[i]);
	check_frame(ops, N, 1);
	check_frame(ops, N, (uint64_t)1 << 63);
	free(ops);
}

/* Each kind of row with every field at its limit (and every optional part present) packs into
 * at most half of KM_OP_PACKED_MAX, the room the encoder gives one op. */
static void test_largest_op_of_each_kind_fits(void **state)
{
	size_t largest = 0;

	(void)state;
	for (int table = KM_OP_FRONTEND; table <= KM_OP_AUTHZ_INDEX; table++) {
		struct km_op o;
		size_t len, op_len;
		uint8_t *frame;
		Kmesh__Ipc__Envelope *env;

		memset(&o, 0xff, sizeof(o)); /* every number at its maximum */
		o.table = (uint8_t)table;
		o.del = 0;
		assert_int_equal(km_addr_parse("fd00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", &o.fe.addr), 0);
		if (table == KM_OP_SERVICE || table == KM_OP_BACKEND) {
			struct km_op_waypoint *w = table == KM_OP_SERVICE ? &o.svc.waypoint : &o.be.waypoint;

			w->has_addr = 1;
			assert_int_equal(km_addr_parse("fd00::ffff", &w->addr), 0);
		}
		if (table == KM_OP_BACKEND) {
			o.be.has4 = o.be.has6 = 1;
			assert_int_equal(km_addr_parse("255.255.255.255", &o.be.addr4), 0);
			assert_int_equal(km_addr_parse("fd00::ffff", &o.be.addr6), 0);
		}
		if (table == KM_OP_AUTHZ_IDENT)
			assert_int_equal(km_addr_parse("fd00::ffff", &o.ident.addr), 0);
		if (table == KM_OP_AUTHZ_CIDR)
			o.cidr.addr_len = 16;
		if (table == KM_OP_AUTHZ_INDEX)
			o.index.chunk = 0; /* a chunk: all eight words */
		frame = km_oplist_encode(&o, 1, 0, &len);
		assert_non_null(frame);
		env = kmesh__ipc__envelope__unpack(NULL, len, frame);
		assert_non_null(env);
		op_len = protobuf_c_message_get_packed_size(&env->batch->ops[0]->base);
		if (op_len > KM_OP_PACKED_MAX / 2)
			fail_msg("table %d: an op of %zu bytes", table, op_len);
		largest = op_len > largest ? op_len : largest;
		kmesh__ipc__envelope__free_unpacked(env, NULL);
		check_frame(&o, 1, 0);
		free(frame);
	}
	print_message("the largest op: %zu bytes\n", largest);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_row_as_protobuf_c_writes_it),
		cmocka_unit_test(test_empty_and_large_batches),
		cmocka_unit_test(test_largest_op_of_each_kind_fits),
	};

	return cmocka_run_group_tests_name("oplist_encode", tests, NULL, NULL);
}
