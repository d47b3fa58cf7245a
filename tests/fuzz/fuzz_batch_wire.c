/* fuzz_batch_wire.c — differential libFuzzer target: the map writer's hand-written reader of a
 * table batch (batch_wire.h, behind km_msg_unpack) against protobuf-c's generic unpack, the
 * decoder it replaced. Arbitrary bytes as an Envelope must be refused by both or by neither, and
 * what both accept must be the same message: protobuf-c packs each the same, byte for byte (the
 * unknown fields protobuf-c keeps are dropped first: the reader skips them, but keeps those of
 * the rows it leaves to protobuf-c). Any difference aborts. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/message.h"
#include "tests/fuzz/differential.h"

/* Drop m's unknown fields, and its sub-messages' (freed when m was unpacked with malloc; an
 * arena's go with it). The reader's rows that protobuf-c reads for it keep theirs too. */
static void drop_unknown(ProtobufCMessage *m, int malloced)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;

	for (unsigned i = 0; malloced && i < m->n_unknown_fields; i++)
		free(m->unknown_fields[i].data);
	if (malloced)
		free(m->unknown_fields);
	m->unknown_fields = NULL;
	m->n_unknown_fields = 0;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		char *at = (char *)m + f->offset;

		if (f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
		    *(uint32_t *)((char *)m + f->quantifier_offset) != f->id)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(size_t *)((char *)m + f->quantifier_offset);

			for (size_t k = 0; k < n; k++)
				drop_unknown((*(ProtobufCMessage ***)at)[k], malloced);
		} else if (*(ProtobufCMessage **)at) {
			drop_unknown(*(ProtobufCMessage **)at, malloced);
		}
	}
}

static uint8_t *packed(const km_envelope *e, size_t *len)
{
	uint8_t *b = malloc(kmesh__ipc__envelope__get_packed_size(e) + 1);

	if (!b)
		abort();
	*len = kmesh__ipc__envelope__pack(e, b);
	return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	km_envelope *ref = kmesh__ipc__envelope__unpack(NULL, size, data);
	km_envelope *env = km_msg_unpack(size ? data : NULL, size);

	if (!ref || ref->body_case == KMESH__IPC__ENVELOPE__BODY__NOT_SET) {
		same(env == NULL);
	} else {
		uint8_t *a, *b;
		size_t na, nb;

		same(env != NULL); /* the expansion bound is megabytes above what fuzz inputs reach */
		drop_unknown(&ref->base, 1);
		drop_unknown(&env->base, 0);
		a = packed(ref, &na);
		b = packed(env, &nb);
		same(na == nb && memcmp(a, b, na) == 0);
		free(a);
		free(b);
	}
	kmesh__ipc__envelope__free_unpacked(ref, NULL);
	km_msg_free(env);
	return 0;
}
