/* fuzz_inject.c — libFuzzer target for kmeshctl inject's events in the xDS agent: arbitrary
 * bytes as an event, applied to a model and a policy store with the authorization compiler
 * attached (services, workloads, policies and removals, through the xDS path). */
#include <stddef.h>
#include <stdint.h>

#include "services/xds-agent/authz/authz_compile.h"
#include "services/xds-agent/sources/inject.h"
#include "shared/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct km_oplist ops;
	struct km_model m;
	struct km_policy_store ps;
	struct km_authz authz;
	struct km_inject_result r;

	km_log_set_level(KM_LOG_ERROR);
	km_oplist_init(&ops);
	km_model_init(&m, &ops, NULL);
	km_policy_store_init(&ps);
	km_authz_init(&authz, &ops, NULL);
	km_model_set_authz(&m, &authz);
	ps.authz = &authz;
	km_inject_apply(&m, &ps, (const char *)data, size, &r);
	km_inject_apply(&m, &ps, (const char *)data, size, &r); /* again: updates of itself */
	km_policy_store_free(&ps);
	km_model_free(&m);
	km_authz_free(&authz);
	km_oplist_free(&ops);
	return 0;
}
