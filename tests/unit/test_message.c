/* test_message.c — unpacking is bounded: a message may take at most KM_MSG_EXPANSION times its
 * wire size. A frame of empty sub-messages (two bytes each on the wire, a struct each unpacked)
 * is refused; a real table batch of the same size is not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ipc/message.h"

/* A TableBatch envelope of n ops, each empty (bare) or a frontend row (real). */
static uint8_t *batch(size_t n, int real, size_t *len)
{
	km_envelope env = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__TableBatch b = KMESH__IPC__TABLE_BATCH__INIT;
	Kmesh__Ipc__TableOp *ops = calloc(n, sizeof(*ops)), **ptrs = calloc(n, sizeof(*ptrs));
	Kmesh__Ipc__FrontendRow *rows = calloc(n, sizeof(*rows));
	uint8_t addr[4] = { 10, 96, 0, 1 };
	uint8_t *out;

	assert_non_null(ops);
	assert_non_null(ptrs);
	assert_non_null(rows);
	for (size_t i = 0; i < n; i++) {
		kmesh__ipc__table_op__init(&ops[i]);
		if (real) {
			kmesh__ipc__frontend_row__init(&rows[i]);
			rows[i].address.data = addr;
			rows[i].address.len = sizeof(addr);
			rows[i].port = (uint32_t)(i % 65535 + 1);
			rows[i].upstream_id = (uint32_t)i + 1;
			ops[i].row_case = KMESH__IPC__TABLE_OP__ROW_FRONTEND;
			ops[i].frontend = &rows[i];
		}
		ptrs[i] = &ops[i];
	}
	b.ops = ptrs;
	b.n_ops = n;
	env.request_id = 1;
	env.body_case = KMESH__IPC__ENVELOPE__BODY_BATCH;
	env.batch = &b;
	out = km_msg_pack(&env, len);
	assert_non_null(out);
	free(ops);
	free(ptrs);
	free(rows);
	return out;
}

static void test_empty_ops_refused(void **state)
{
	size_t len;
	uint8_t *wire = batch(100000, 0, &len);

	(void)state;
	assert_null(km_msg_unpack(wire, len)); /* ~50x its size unpacked: refused */
	free(wire);
}

static void test_real_batch_unpacks(void **state)
{
	size_t len;
	uint8_t *wire = batch(100000, 1, &len);
	km_envelope *env;

	(void)state;
	env = km_msg_unpack(wire, len);
	assert_non_null(env);
	assert_int_equal(env->batch->n_ops, 100000);
	assert_int_equal(env->batch->ops[99999]->frontend->upstream_id, 100000);
	km_msg_free(env);
	free(wire);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_ops_refused),
		cmocka_unit_test(test_real_batch_unpacks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
