/* policy_json.h — an istio.security.Authorization from its proto3 JSON mapping (kmeshctl
 * inject), mapped onto the message istiod sends; the policy store validates it as it does
 * istiod's. Field names in either spelling; StringMatch as {"exact"|"prefix"|"suffix": TEXT} or
 * {"presence": {}}; addresses as {"address": IP text or base64, "length": N}. */
#ifndef KM_XDS_POLICY_JSON_H
#define KM_XDS_POLICY_JSON_H

#include <jansson.h>

#include "authorization.pb-c.h"

/* Returns 0, or -1 with err (KM_JERR_LEN bytes) filled; *out is set either way when allocated
 * (free with kmesh__security__authorization__free_unpacked). */
int km_json_policy_pb(const json_t *o, const char *path, Kmesh__Security__Authorization **out,
		      char *err);

#endif
