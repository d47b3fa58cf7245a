/* fuzz_xds.c — libFuzzer target for what istiod (or anything in its place) sends: arbitrary bytes
 * as a DeltaDiscoveryResponse, applied as Address and as Authorization to a model and a policy
 * store, exactly as the ADS client does. */
#include <stddef.h>
#include <stdint.h>

#include "services/xds-agent/ads/xds_apply.h"
#include "shared/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct km_response_view v;
	struct km_oplist ops;
	struct km_model m;
	struct km_policy_store ps;
	struct km_xds_result res;

	km_log_set_level(KM_LOG_ERROR);
	km_oplist_init(&ops);
	km_model_init(&m, &ops, NULL);
	km_policy_store_init(&ps);
	for (int pass = 0; pass < 3; pass++) { /* twice as Address (updates), once as Authorization */
		if (km_response_view_init(&v, data, size) != 0)
			break;
		if (pass < 2)
			km_xds_apply_address(&m, &v, NULL, NULL, &res);
		else
			km_xds_apply_authorization(&ps, &v, NULL, NULL, &res);
		km_response_view_free(&v);
	}
	km_policy_store_free(&ps);
	km_model_free(&m);
	km_oplist_free(&ops);
	return 0;
}
