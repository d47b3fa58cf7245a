/* fuzz_xds.c — libFuzzer target for what istiod (or anything in its place) sends: arbitrary bytes
 * as a DeltaDiscoveryResponse, applied as Address and as Authorization to a model and a policy
 * store, exactly as the ADS client does; and as a response arriving in pieces (applied while it
 * arrives, as the ADS client does for large ones), which must be refused exactly when the whole
 * is refused. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "services/xds-agent/ads/xds_apply.h"
#include "shared/log.h"

/* The bytes arriving in steps of a size taken from the first byte, applied as they come. */
static void apply_arriving(struct km_model *m, const uint8_t *data, size_t size, int whole_ok)
{
	struct km_response_view v;
	struct km_xds_result res = { 0 };
	size_t step = size ? (size_t)data[0] % 64 + 1 : 1, have = 0;
	int ok = 1;

	km_response_view_begin(&v, data, size);
	while (ok) {
		have = size - have < step ? size : have + step;
		if (km_response_view_grow(&v, have) != 0) {
			ok = 0;
			break;
		}
		while (km_xds_apply_address_some(m, &v, 3, NULL, NULL, &res) == KM_XDS_APPLY_MORE)
			;
		if (have == size)
			break;
	}
	if (ok != whole_ok) /* a piecewise reading disagrees with the whole one */
		abort();
	if (ok)
		km_xds_apply_address_end(m, &v, &res);
	km_response_view_free(&v);
}

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
	int whole_ok = km_response_view_init(&v, data, size) == 0;

	if (whole_ok)
		km_response_view_free(&v);
	apply_arriving(&m, data, size, whole_ok);
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
