/* pb_scratch.c — the bump allocator for decoded messages (see pb_scratch.h). */
#include "services/xds-agent/core/pb_scratch.h"

#include <stdint.h>
#include <stdlib.h>

/* Under AddressSanitizer the kept block's space is poisoned at each reset and unpoisoned as it is
 * handed out again, so anything read through a pointer kept across a reset (a scratch resource
 * kept instead of packed, resources.h) is reported, not silently read as the next message. */
#if defined(__SANITIZE_ADDRESS__)
#define KM_SCRATCH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KM_SCRATCH_ASAN 1
#endif
#endif
#ifdef KM_SCRATCH_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

struct km_pb_scratch_block {
	struct km_pb_scratch_block *next;
	size_t used, cap;
	max_align_t data[];
};

#define ALIGN (sizeof(max_align_t))

static struct km_pb_scratch_block *block_new(size_t cap)
{
	struct km_pb_scratch_block *b = malloc(sizeof(*b) + cap);

	if (b) {
		b->next = NULL;
		b->used = 0;
		b->cap = cap;
	}
	return b;
}

static void *scratch_alloc(void *data, size_t size)
{
	struct km_pb_scratch *s = data;
	struct km_pb_scratch_block *b = s->blocks;
	size_t need = (size + ALIGN - 1) / ALIGN * ALIGN;
	void *p;

	if (need < size)
		return NULL;
	if (!b || b->cap - b->used < need) {
		size_t cap = need > KM_PB_SCRATCH_BLOCK ? need : KM_PB_SCRATCH_BLOCK;
		struct km_pb_scratch_block *n = block_new(cap);

		if (!n)
			return NULL;
		n->next = b;
		s->blocks = b = n;
	}
	p = (char *)b->data + b->used;
	b->used += need;
	UNPOISON(p, need);
	return p;
}

static void scratch_free(void *data, void *p)
{
	(void)data; /* everything goes at the reset */
	(void)p;
}

void km_pb_scratch_init(struct km_pb_scratch *s)
{
	s->alloc.alloc = scratch_alloc;
	s->alloc.free = scratch_free;
	s->alloc.allocator_data = s;
	s->blocks = NULL;
}

void km_pb_scratch_reset(struct km_pb_scratch *s)
{
	/* keep the oldest block (the last in the list): it serves nearly every message alone */
	while (s->blocks && s->blocks->next) {
		struct km_pb_scratch_block *next = s->blocks->next;

		free(s->blocks);
		s->blocks = next;
	}
	if (s->blocks && s->blocks->cap > KM_PB_SCRATCH_BLOCK) { /* a big message's: not kept */
		free(s->blocks);
		s->blocks = NULL;
	}
	if (s->blocks) {
		POISON(s->blocks->data, s->blocks->used);
		s->blocks->used = 0;
	}
}

ProtobufCAllocator *km_pb_scratch_allocator(struct km_pb_scratch *s)
{
	s->alloc.allocator_data = s; /* the struct may have moved since init */
	return &s->alloc;
}

void km_pb_scratch_free(struct km_pb_scratch *s)
{
	km_pb_scratch_reset(s);
	if (s->blocks)
		UNPOISON(s->blocks->data, s->blocks->cap);
	free(s->blocks);
	s->blocks = NULL;
}
