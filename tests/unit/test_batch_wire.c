/* test_batch_wire.c — the map writer's hand-written batch reader (batch_wire.h, behind
 * km_msg_unpack) on envelopes built byte by byte: what it makes of each, and, through the
 * differential fuzz target's own check (included here), that protobuf-c makes the same of it:
 * repeated numbers packed and not, a row given twice in one op, unknown fields, rows left to
 * protobuf-c, wire types protobuf-c refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../fuzz/fuzz_batch_wire.c"
#include "ipc/batch_wire.h"

/* An envelope of one batch of the ops given as raw TableOp bytes. */
static size_t batch_of(uint8_t *out, uint64_t request_id, const uint8_t *const *ops,
		       const size_t *lens, size_t n)
{
	uint8_t batch[512];
	size_t b = 0, o = 0;

	for (size_t i = 0; i < n; i++) {
		batch[b++] = 1 << 3 | 2;
		batch[b++] = (uint8_t)lens[i];
		memcpy(batch + b, ops[i], lens[i]);
		b += lens[i];
	}
	out[o++] = 1 << 3;
	out[o++] = (uint8_t)request_id;
	out[o++] = 3 << 3 | 2;
	out[o++] = (uint8_t)b;
	memcpy(out + o, batch, b);
	return o + b;
}

static km_envelope *read_one(const uint8_t *op, size_t len, uint8_t *frame, size_t *flen)
{
	*flen = batch_of(frame, 7, &op, &len, 1);
	LLVMFuzzerTestOneInput(frame, *flen); /* protobuf-c agrees, or this aborts */
	return km_msg_unpack(frame, *flen);
}

/* A service row with its per-priority counts half unpacked, half packed, a weight total of ten
 * bytes, and an unknown field: the counts in order, the unknown one skipped. */
static void test_service_row_numbers(void **state)
{
	static const uint8_t op[] = {
		1 << 3, 1,                                  /* kind UPSERT */
		3 << 3 | 2, 23,                             /* ServiceRow */
		1 << 3, 42,                                 /* id */
		2 << 3, 5, 2 << 3, 6,                       /* endpoint_count 5, 6 */
		2 << 3 | 2, 2, 7, 8,                        /* ... packed 7, 8 */
		8 << 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, /* weight_total */
		15 << 3, 1,                                 /* unknown 15 */
	};
	uint8_t frame[256];
	size_t len;
	km_envelope *e = read_one(op, sizeof(op), frame, &len);
	const Kmesh__Ipc__ServiceRow *s;

	(void)state;
	assert_non_null(e);
	assert_int_equal(e->request_id, 7);
	assert_int_equal(e->batch->n_ops, 1);
	s = e->batch->ops[0]->service;
	assert_int_equal(s->id, 42);
	assert_int_equal(s->n_endpoint_count, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(s->endpoint_count[i], 5 + i);
	assert_int_equal(s->n_weight_total, 1);
	assert_true(s->weight_total[0] == UINT64_MAX);
	km_msg_free(e);
}

/* Two rows in one op: the last one, whole; a row the reader leaves to protobuf-c (a port
 * override) read all the same; an endpoint's address as a fixed32. */
static void test_rows(void **state)
{
	static const uint8_t two[] = {
		4 << 3 | 2, 2, 1 << 3, 9,         /* an endpoint of service 9 */
		5 << 3 | 2, 2, 1 << 3, 3,         /* then a backend 3: this one */
	};
	static const uint8_t po[] = { 1 << 3, 2, 6 << 3 | 2, 4, 1 << 3, 1, 4 << 3, 81 };
	static const uint8_t ep[] = { 4 << 3 | 2, 5, 6 << 3 | 5, 10, 0, 0, 1 };
	uint8_t frame[256];
	size_t len;
	km_envelope *e;

	(void)state;
	e = read_one(two, sizeof(two), frame, &len);
	assert_non_null(e);
	assert_int_equal(e->batch->ops[0]->row_case, KMESH__IPC__TABLE_OP__ROW_BACKEND);
	assert_int_equal(e->batch->ops[0]->backend->id, 3);
	km_msg_free(e);
	e = read_one(po, sizeof(po), frame, &len);
	assert_non_null(e);
	assert_int_equal(e->batch->ops[0]->kind, KMESH__IPC__TABLE_OP__KIND__DELETE);
	assert_int_equal(e->batch->ops[0]->port_override->target_port, 81);
	km_msg_free(e);
	e = read_one(ep, sizeof(ep), frame, &len);
	assert_non_null(e);
	assert_int_equal(e->batch->ops[0]->endpoint->addr4, 0x0100000a);
	km_msg_free(e);
}

/* Refused as protobuf-c refuses: a row field of the wrong wire type (read by hand, or left to
 * protobuf-c), a packed count cut short, an endpoint's address as a varint, a group. */
static void test_refused(void **state)
{
	static const uint8_t bad[][8] = {
		{ 4 << 3 | 2, 2, 1 << 3 | 2, 0 },           /* endpoint.service_id as bytes */
		{ 10 << 3 | 2, 2, 2 << 3 | 5, 0 },           /* authz_set.value cut short */
		{ 3 << 3 | 2, 3, 2 << 3 | 2, 1, 0x80 },      /* a packed count cut short */
		{ 4 << 3 | 2, 2, 6 << 3, 1 },                /* endpoint.addr4 as a varint */
		{ 4 << 3, 1 },                               /* a row as a varint */
		{ 4 << 3 | 2, 2, 1 << 3 | 3, 0 },            /* a group */
	};
	static const size_t lens[] = { 4, 4, 5, 4, 2, 4 };
	uint8_t frame[256];
	size_t len;

	(void)state;
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		if (read_one(bad[i], lens[i], frame, &len))
			fail_msg("case %zu was not refused", i);
}

/* An envelope with another body (a hello) before its batch goes to protobuf-c whole: the batch,
 * the last body given, is what it holds. */
static void test_other_body_first(void **state)
{
	static const uint8_t ep[] = { 4 << 3 | 2, 2, 1 << 3, 9 };
	static const uint8_t hello[] = { 2 << 3 | 2, 2, 1 << 3, 1 };
	uint8_t frame[256], both[300];
	size_t len;
	km_envelope *e;
	const uint8_t *op = ep;
	size_t oplen = sizeof(ep);

	(void)state;
	len = batch_of(frame, 7, &op, &oplen, 1);
	memcpy(both, hello, sizeof(hello));
	memcpy(both + sizeof(hello), frame, len);
	LLVMFuzzerTestOneInput(both, sizeof(hello) + len);
	assert_false(km_batch_wire_is_batch(both, sizeof(hello) + len));
	assert_true(km_batch_wire_is_batch(frame, len));
	e = km_msg_unpack(both, sizeof(hello) + len);
	assert_non_null(e);
	assert_int_equal(e->body_case, KMESH__IPC__ENVELOPE__BODY_BATCH);
	assert_int_equal(e->batch->ops[0]->endpoint->service_id, 9);
	km_msg_free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_service_row_numbers),
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_other_body_first),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
