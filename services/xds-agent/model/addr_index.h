/* addr_index.h — which resources hold an IP address: the model keeps one index of workload
 * addresses (to the workloads' model entries) and one of service VIPs (to the services'), kept
 * in step with every upsert and removal. Authorization asks it whose identity an address
 * carries, telemetry whom a connection names; nothing else keeps a per-address entry. An address
 * several resources hold (host-network workloads share the node's; a pod's address reused
 * before the old pod is gone) keeps its holders in order: the one that took it last is the
 * newest, and when it goes the next newest holds it again. Lookups are O(1).
 *
 * Holders are opaque pointers compared by identity, not copied: each must stay valid until it is
 * removed from the address (the model passes its entries, which outlive their resources'
 * versions, and removes an entry's addresses before it frees the entry). */
#ifndef KM_XDS_ADDR_INDEX_H
#define KM_XDS_ADDR_INDEX_H

#include <stddef.h>

#include "services/xds-agent/core/addr_map.h"
#include "shared/addr.h"

struct km_addr_index {
	struct km_addr_map newest; /* each address -> its newest holder */
	struct km_addr_map shared; /* addresses with several holders -> struct km_addr_holders */
};

void km_addr_index_init(struct km_addr_index *x);
void km_addr_index_free(struct km_addr_index *x);
/* Make holder the newest holder of a (moved there if it holds a already). Returns 0, or -1 when
 * out of memory (the index is then unchanged). */
int km_addr_index_add(struct km_addr_index *x, const struct km_addr *a, const void *holder);
/* holder no longer holds a (nothing happens if it did not). */
void km_addr_index_remove(struct km_addr_index *x, const struct km_addr *a, const void *holder);
/* The newest holder, or NULL. */
/* Load a's slot into the cache ahead of a lookup or a change (a hint: nothing changes). */
void km_addr_index_prefetch(const struct km_addr_index *x, const struct km_addr *a);
const void *km_addr_index_find(const struct km_addr_index *x, const struct km_addr *a);
/* Every holder of a, oldest first, with their count in *n (0: none, NULL returned). Valid until
 * the next change of the index. */
const void *const *km_addr_index_holders(const struct km_addr_index *x, const struct km_addr *a,
					 size_t *n);
/* Addresses held. */
size_t km_addr_index_size(const struct km_addr_index *x);
/* Visit every address with its newest holder: size_t pos = 0; while (km_addr_index_next(x,
 * &pos, &a, &holder)) ...; 0 after the last. No change of the index during a visit. */
int km_addr_index_next(const struct km_addr_index *x, size_t *pos, struct km_addr *a,
		       const void **holder);

#endif
