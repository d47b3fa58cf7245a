/* policy_store.h — istio.security.Authorization resources by name ("<ns>/<name>"), validated and
 * kept as decoded messages, and handed to the authorization compiler (authz_compile.h) when one
 * is attached. */
#ifndef KM_XDS_POLICY_STORE_H
#define KM_XDS_POLICY_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "authorization.pb-c.h"
#include "services/xds-agent/core/resources.h"

struct km_policy;
struct km_authz;

struct km_policy_store {
	struct km_policy *by_name;
	size_t count;
	struct km_authz *authz; /* optional: every change is compiled (the caller flushes it) */
	uint64_t generation;    /* moves with every policy put, removed or swept (from a start of
				 * the process's own) */
};

void km_policy_store_init(struct km_policy_store *ps);
void km_policy_store_free(struct km_policy_store *ps);
/* Decode and validate bytes of an Authorization; on success store it under its name (replacing
 * the previous version). Returns 0, or -1 with err filled and the previous version kept.
 * *name is set to the policy's name when it could be read (caller frees). */
int km_policy_store_put(struct km_policy_store *ps, const uint8_t *data, size_t len, char **name,
			char *err, size_t errlen);
/* Returns 1 if a policy was removed. */
int km_policy_store_remove(struct km_policy_store *ps, const char *name);
const Kmesh__Security__Authorization *km_policy_store_find(const struct km_policy_store *ps,
							   const char *name);
/* istiod's version of a policy (kept for initial_resource_versions; goes with the policy). */
void km_policy_store_set_version(struct km_policy_store *ps, const char *name, const char *version);
size_t km_policy_store_each_version(const struct km_policy_store *ps, km_version_cb cb, void *arg);
/* Mark and sweep against istiod's whole state, as the model's (model.h): mark every policy, a
 * put or a confirm (named but rejected) unmarks one, the sweep removes the rest (the caller
 * flushes the compiler). */
size_t km_policy_store_mark_unconfirmed(struct km_policy_store *ps);
void km_policy_store_confirm(struct km_policy_store *ps, const char *name);
size_t km_policy_store_sweep_unconfirmed(struct km_policy_store *ps);
typedef void (*km_policy_cb)(void *arg, const char *name, const Kmesh__Security__Authorization *p);
void km_policy_store_each(const struct km_policy_store *ps, km_policy_cb cb, void *arg);

#endif
