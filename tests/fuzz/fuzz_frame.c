/* fuzz_frame.c — libFuzzer target for what the map writer does with a peer's bytes: the frame
 * decoder fed in arbitrary chunks (a stranger's 4 KiB limit until its first frame, as before a
 * hello, then 64 KiB; a shared budget of 32 KiB that must be whole again at the end), then
 * every frame unpacked as an Envelope and, for table batches, each row validated the way the
 * map writer would (without a kernel). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/frame.h"
#include "ipc/message.h"

static int on_frame(void *arg, const uint8_t *p, size_t len)
{
	km_envelope *env = km_msg_unpack(p, len);

	km_frame_decoder_set_max(arg, 1 << 16); /* "hello accepted" */
	if (env && env->body_case == KMESH__IPC__ENVELOPE__BODY_BATCH) {
		/* touch every row the way the validator does */
		for (size_t i = 0; i < env->batch->n_ops; i++) {
			const Kmesh__Ipc__TableOp *op = env->batch->ops[i];

			if (op->row_case == KMESH__IPC__TABLE_OP__ROW_BACKEND)
				for (size_t j = 0; j < op->backend->n_addresses; j++)
					(void)op->backend->addresses[j].len;
		}
	}
	km_msg_free(env);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct km_frame_decoder d;
	struct km_frame_budget budget = { .max = 32u << 10 };
	size_t chunk;

	if (size < 1)
		return 0;
	/* first byte chooses the read size, so partial frames are exercised */
	chunk = (size_t)data[0] % 64 + 1;
	data++;
	size--;
	km_frame_decoder_init(&d, 4096);
	km_frame_decoder_set_budget(&d, &budget);
	while (size > 0) {
		size_t n = size < chunk ? size : chunk;

		if (km_frame_decoder_feed(&d, data, n, on_frame, &d) != KM_FRAME_OK)
			break;
		data += n;
		size -= n;
	}
	km_frame_decoder_free(&d);
	if (budget.used != 0)
		abort(); /* every byte charged is given back */
	return 0;
}
