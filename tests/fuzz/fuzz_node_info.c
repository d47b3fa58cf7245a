/* fuzz_node_info.c — libFuzzer target for KmeshNodeInfo objects (what anyone allowed to write
 * that resource in the cluster can make every node's IPsec agent read): arbitrary bytes as JSON,
 * parsed into a node spec; an accepted spec must hold what the parser promises, and must survive
 * being written out and read back unchanged. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "services/ipsec-agent/node_info.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct km_ipsec_node n, again;
	char err[256];
	json_t *o = json_loadb((const char *)data, size, 0, NULL), *built;

	if (!o)
		return 0;
	if (km_node_info_parse(o, &n, err, sizeof(err)) != 0) {
		if (!err[0])
			abort(); /* a refusal always says why */
		json_decref(o);
		return 0;
	}
	json_decref(o);
	if (!n.name[0] || n.n_addrs < 1 || n.n_addrs > KM_IPSEC_ADDRS_MAX ||
	    n.n_cidrs > KM_IPSEC_CIDRS_MAX)
		abort();
	built = km_node_info_build(&n);
	if (!built)
		return 0;
	if (km_node_info_parse(built, &again, err, sizeof(err)) != 0 || memcmp(&n, &again, sizeof(n)))
		abort(); /* what we write, we read back the same */
	json_decref(built);
	return 0;
}
