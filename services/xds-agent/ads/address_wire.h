/* address_wire.h — an istio.workload.Address read from its wire bytes by hand, into the same
 * generated structs protobuf-c's unpack makes (so resource_pb.c converts either), without the
 * generic descriptor-driven machinery: each field the agent reads is decoded where it lies, any
 * other is checked (pb_wire.h) and skipped. What it accepts, and what it makes of what it
 * accepts, is what protobuf-c 1.4 would (fuzz_address_wire compares the two), quirks included:
 * a singular message given twice is merged as protobuf-c merges it (its scalars are the later
 * occurrence's even where that one leaves them out), a oneof given twice keeps the last one
 * whole. */
#ifndef KM_XDS_ADDRESS_WIRE_H
#define KM_XDS_ADDRESS_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "workload.pb-c.h"

/* The message, allocated from a, which must be a scratch allocator (pb_scratch.h): nothing of
 * it is freed on its own, whatever the outcome. NULL if protobuf-c would refuse the bytes (or
 * out of memory). */
Kmesh__Workload__Address *km_address_wire_read(ProtobufCAllocator *a, const uint8_t *data,
					       size_t len);

#endif
