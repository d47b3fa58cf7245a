/* message.c — Envelope pack/unpack, names of codes and roles (see message.h); sending them on a
 * connection is message_send.c. */
#include "ipc/message.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "ipc/batch_wire.h"

uint8_t *km_msg_pack(const km_envelope *env, size_t *len)
{
	size_t n = kmesh__ipc__envelope__get_packed_size(env);
	uint8_t *buf = malloc(n ? n : 1);

	if (!buf)
		return NULL;
	*len = kmesh__ipc__envelope__pack(env, buf);
	return buf;
}


/*
 * Unpacked envelopes live in an arena: a table batch unpacks into thousands of small structs,
 * and one arena freed at once costs far less than a malloc and a free for each (the map writer
 * spent a sixth of its time there). A batch (the bulk of the traffic) is read by hand
 * (batch_wire.h), the rest by protobuf-c. The arena's header sits just before the envelope,
 * which is either decoder's first allocation for a message; km_msg_unpack checks that it is.
 *
 * Bounded: a message may take at most KM_MSG_EXPANSION times its wire size once unpacked, plus
 * KM_MSG_SLACK. Real messages take 6-15 times; a frame of empty sub-messages (two bytes each on
 * the wire, a struct each unpacked) would take ~54 times, and is refused as not valid.
 */
struct km_arena_chunk {
	struct km_arena_chunk *next;
	size_t used, cap;
	max_align_t data[];
};

struct km_arena {
	struct km_arena_chunk *chunks; /* the newest first; the last one holds this header */
	void *first;                   /* the first allocation: the envelope */
	size_t total, limit;           /* bytes of every chunk, and their bound */
};

#define KM_ARENA_ALIGN (sizeof(max_align_t))
#define KM_ARENA_HEADER                                                                         \
	((sizeof(struct km_arena) + KM_ARENA_ALIGN - 1) / KM_ARENA_ALIGN * KM_ARENA_ALIGN)

static struct km_arena_chunk *arena_chunk(size_t cap)
{
	struct km_arena_chunk *c = malloc(sizeof(*c) + cap);

	if (c) {
		c->next = NULL;
		c->used = 0;
		c->cap = cap;
	}
	return c;
}

static void *arena_alloc(void *data, size_t size)
{
	struct km_arena *a = data;
	struct km_arena_chunk *c = a->chunks;
	size_t need = (size + KM_ARENA_ALIGN - 1) / KM_ARENA_ALIGN * KM_ARENA_ALIGN;
	void *p;

	if (c->cap - c->used < need) {
		size_t cap = need > c->cap * 2 ? need : c->cap * 2;
		struct km_arena_chunk *n;

		if (a->total + cap > a->limit)
			cap = need; /* what is left of the bound, one allocation at a time */
		if (a->total + cap > a->limit || !(n = arena_chunk(cap)))
			return NULL;
		a->total += cap;
		n->next = c;
		a->chunks = c = n;
	}
	p = (char *)c->data + c->used;
	c->used += need;
	if (!a->first)
		a->first = p;
	return p;
}

static void arena_free(void *data, void *p)
{
	(void)data; /* everything goes at once, in km_msg_free */
	(void)p;
}

static void arena_release(struct km_arena *a)
{
	struct km_arena_chunk *c = a->chunks;

	while (c) { /* the header is in the last chunk: read the links before it goes */
		struct km_arena_chunk *next = c->next;

		free(c);
		c = next;
	}
}

km_envelope *km_msg_unpack(const uint8_t *data, size_t len)
{
	/* decoded structs take a few times their wire size; a batch fits in one or two chunks */
	size_t first = KM_ARENA_HEADER + len * 4 + 256;
	struct km_arena_chunk *c = arena_chunk(first);
	struct km_arena *a;
	ProtobufCAllocator alloc = { .alloc = arena_alloc, .free = arena_free };
	km_envelope *env;

	if (!c)
		return NULL;
	a = (struct km_arena *)c->data;
	c->used = KM_ARENA_HEADER;
	a->chunks = c;
	a->first = NULL;
	a->total = first;
	a->limit = KM_ARENA_HEADER + len * KM_MSG_EXPANSION + KM_MSG_SLACK;
	alloc.allocator_data = a;
	env = km_batch_wire_is_batch(data, len) ? km_batch_wire_read(&alloc, data, len)
						 : kmesh__ipc__envelope__unpack(&alloc, len, data);
	if (env && (void *)env != (char *)c->data + KM_ARENA_HEADER) {
		/* protobuf-c changed its allocation order: the header cannot be found from env */
		fprintf(stderr, "km_msg_unpack: the envelope is not the arena's first allocation\n");
		abort();
	}
	if (!env || env->body_case == KMESH__IPC__ENVELOPE__BODY__NOT_SET) {
		arena_release(a);
		return NULL;
	}
	return env;
}

void km_msg_free(km_envelope *env)
{
	if (env)
		arena_release((struct km_arena *)((char *)env - KM_ARENA_HEADER));
}

const char *km_msg_code_name(Kmesh__Ipc__Code code)
{
	switch (code) {
	case KMESH__IPC__CODE__OK:
		return "OK";
	case KMESH__IPC__CODE__BAD_REQUEST:
		return "BAD_REQUEST";
	case KMESH__IPC__CODE__PERMISSION_DENIED:
		return "PERMISSION_DENIED";
	case KMESH__IPC__CODE__TABLE_FULL:
		return "TABLE_FULL";
	case KMESH__IPC__CODE__NOT_FOUND:
		return "NOT_FOUND";
	case KMESH__IPC__CODE__INTERNAL:
		return "INTERNAL";
	case KMESH__IPC__CODE__VERSION_MISMATCH:
		return "VERSION_MISMATCH";
	case KMESH__IPC__CODE__ENCRYPTION_UNAVAILABLE:
		return "ENCRYPTION_UNAVAILABLE";
	case KMESH__IPC__CODE__RESOURCE_EXHAUSTED:
		return "RESOURCE_EXHAUSTED";
	default:
		return "UNKNOWN";
	}
}

const char *km_msg_role_name(Kmesh__Ipc__Role role)
{
	switch (role) {
	case KMESH__IPC__ROLE__ROLE_XDS:
		return "xds";
	case KMESH__IPC__ROLE__ROLE_CNI:
		return "cni";
	case KMESH__IPC__ROLE__ROLE_ADMIN:
		return "admin";
	case KMESH__IPC__ROLE__ROLE_IPSEC:
		return "ipsec";
	case KMESH__IPC__ROLE__ROLE_TUNNEL:
		return "tunnel";
	default:
		return "unspecified";
	}
}


void km_msg_enroll_set(Kmesh__Ipc__Enroll *e, struct km_enroll_addrs *buf, uint64_t cookie,
		       const struct km_addr *addrs, size_t n)
{
	if (n > KM_ENROLL_MAX_ADDRS)
		n = KM_ENROLL_MAX_ADDRS;
	for (size_t i = 0; i < n; i++) {
		buf->bytes[i].len = km_addr_to_bytes(&addrs[i], buf->raw[i]);
		buf->bytes[i].data = buf->raw[i];
	}
	e->netns_cookie = cookie;
	e->n_addresses = n;
	e->addresses = buf->bytes;
}
