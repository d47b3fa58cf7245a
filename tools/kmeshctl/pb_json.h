/* pb_json.h — any protobuf-c message as JSON, from its descriptor: field names as in the
 * .proto, enums by name, 4- or 16-byte bytes fields as IP address text (every bytes field in
 * kmesh_ipc.proto is an address), other bytes as hex; of a oneof only the field that is set.
 * So the map writer's table rows print without a converter per row type. */
#ifndef KM_KMESHCTL_PB_JSON_H
#define KM_KMESHCTL_PB_JSON_H

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>

/* A new reference, or NULL when out of memory. */
json_t *km_pb_json(const ProtobufCMessage *m);

#endif
