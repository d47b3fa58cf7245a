/* batch_wire.h — an Envelope carrying a TableBatch read by hand (the map writer's hot path: a
 * full sync is hundreds of thousands of ops), into the same generated structs protobuf-c's
 * unpack makes: each op's kind and the rows of a full sync (frontend, service, endpoint, backend,
 * identity) decoded where they lie, any other row by protobuf-c (a oneof member is parsed on its
 * own), any other field checked (pb_wire.h). It accepts exactly what protobuf-c 1.4 accepts and
 * makes the same of it: fuzz_batch_wire compares the two on every input. */
#ifndef KM_IPC_BATCH_WIRE_H
#define KM_IPC_BATCH_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "kmesh_ipc.pb-c.h"

/* Whether data is an Envelope whose every body field is a batch (checked without allocating:
 * the first allocation must be the envelope's). Anything else, malformed bytes included, is
 * for protobuf-c's unpack. */
int km_batch_wire_is_batch(const uint8_t *data, size_t len);

/* The envelope, allocated from a (nothing of it freed on its own: an arena's), or NULL where
 * protobuf-c would refuse the bytes (or out of memory). For bytes km_batch_wire_is_batch took. */
Kmesh__Ipc__Envelope *km_batch_wire_read(ProtobufCAllocator *a, const uint8_t *data, size_t len);

#endif
