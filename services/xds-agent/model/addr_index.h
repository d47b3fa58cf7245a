/* addr_index.h — which resource an IP belongs to, for naming connections in metrics and the
 * access log: the model keeps one index of workload addresses (to workload uids) and one of
 * service VIPs (to service names) as resources come and go, when telemetry asks for them. An
 * address several resources hold (host-network workloads share the node's) names the one that
 * took it last and still holds it. Lookups are O(1).
 *
 * Names are not copied: the index keeps the pointer it was given, which must stay valid until
 * that name is removed from the address (the model passes its resources' own uid and name
 * strings, and removes a resource's addresses before it frees the resource). */
#ifndef KM_XDS_ADDR_INDEX_H
#define KM_XDS_ADDR_INDEX_H

#include <stddef.h>

#include "shared/addr.h"

struct km_addr_index;

struct km_addr_index *km_addr_index_new(void);
void km_addr_index_free(struct km_addr_index *x);
/* Returns 0, or -1 when out of memory (the address then stays unknown). */
int km_addr_index_add(struct km_addr_index *x, const struct km_addr *a, const char *name);
void km_addr_index_remove(struct km_addr_index *x, const struct km_addr *a, const char *name);
/* The name, or NULL; valid until the next change of that address. */
const char *km_addr_index_find(const struct km_addr_index *x, const struct km_addr *a);
size_t km_addr_index_size(const struct km_addr_index *x);

#endif
