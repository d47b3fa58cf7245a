/* fuzz_xds.c — libFuzzer target for what istiod (or anything in its place) sends: arbitrary bytes
 * as a DeltaDiscoveryResponse, applied as Address and as Authorization to a model and a policy
 * store, exactly as the ADS client does. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "services/xds-agent/xds_apply.h"
#include "shared/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Kmesh__Xds__DeltaDiscoveryResponse *r = kmesh__xds__delta_discovery_response__unpack(NULL, size, data);
	struct km_oplist ops;
	struct km_model m;
	struct km_policy_store ps;
	struct km_xds_result res;
	uint8_t *accepted;

	if (!r)
		return 0;
	km_log_set_level(KM_LOG_ERROR);
	accepted = calloc(r->n_resources + 1, 1);
	km_oplist_init(&ops);
	km_model_init(&m, &ops, NULL);
	km_policy_store_init(&ps);
	if (accepted) {
		km_xds_apply_address(&m, r, accepted, &res);
		km_xds_apply_address(&m, r, accepted, &res); /* twice: updates of what the first made */
		km_xds_apply_authorization(&ps, r, accepted, &res);
	}
	free(accepted);
	km_policy_store_free(&ps);
	km_model_free(&m);
	km_oplist_free(&ops);
	kmesh__xds__delta_discovery_response__free_unpacked(r, NULL);
	return 0;
}
