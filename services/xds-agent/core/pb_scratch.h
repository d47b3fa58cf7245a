/* pb_scratch.h — a protobuf-c allocator for messages decoded, read and dropped together: each
 * allocation is a bump in a reusable block, a free does nothing, and a reset drops everything at
 * once. A full push decodes two messages per resource (the Resource and its Address), a dozen
 * allocations each; with malloc and free they were about a tenth of the agent's time.
 *
 * The first block (KM_PB_SCRATCH_BLOCK bytes) is kept across resets; a message that needs more
 * gets more blocks, freed at the next reset. What one decode may take is bounded by the
 * readers' expansion of the bytes given to them (address_wire.h: a struct per message and
 * arrays that double, where protobuf-c's unpack took a struct per message and a record per
 * field scanned), plus the resource converted from it (resource_pb.h: its arrays; its strings
 * are the message's own). */
#ifndef KM_XDS_PB_SCRATCH_H
#define KM_XDS_PB_SCRATCH_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

#define KM_PB_SCRATCH_BLOCK (64 * 1024)

struct km_pb_scratch_block;

struct km_pb_scratch {
	ProtobufCAllocator alloc;
	struct km_pb_scratch_block *blocks; /* the newest first; the last is the kept one */
};

void km_pb_scratch_init(struct km_pb_scratch *s);
/* The allocator to pass to *_unpack. Messages decoded with it are never *_free_unpacked. */
ProtobufCAllocator *km_pb_scratch_allocator(struct km_pb_scratch *s);
/* Every message decoded with s since the last reset is gone. */
void km_pb_scratch_reset(struct km_pb_scratch *s);
void km_pb_scratch_free(struct km_pb_scratch *s);

#endif
