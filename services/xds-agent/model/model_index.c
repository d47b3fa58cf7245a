/* model_index.c — the model's address indexes (addr_index.h), kept in step with every service and
 * workload upsert and removal, and the identity each workload address carries for
 * authorization: its newest holder that is an identity here. When that holder goes, the next
 * newest one's identity is written again (a pod's address reused before the old pod is gone,
 * host-network workloads sharing the node's address); authorization keeps no address map of
 * its own. */
#include "services/xds-agent/model/model_internal.h"

#include "services/xds-agent/authz/authz_compile.h"

void mdl_index_service(struct km_model *m, const struct km_model_svc *s,
		       const struct km_service_res *r, int add)
{
	for (size_t i = 0; r && i < r->n_vips; i++) {
		if (!add)
			km_addr_index_remove(&m->vips, &r->vips[i], s);
		else if (km_addr_index_add(&m->vips, &r->vips[i], s) != 0)
			m->index_oom = 1;
	}
}

/* The entry whose identity a carries: its newest holder that is an identity here, w counted as
 * one when w_is (so w's state before a change can be asked after it). */
static const struct km_model_wl *ident_owner(const struct km_model *m, const struct km_addr *a,
					     const struct km_model_wl *w, int w_is)
{
	size_t n;
	const void *const *h = km_addr_index_holders(&m->wl_addrs, a, &n);

	while (n--) {
		const struct km_model_wl *x = h[n];

		if (x == w ? w_is : km_authz_is_identity(&x->authz))
			return x;
	}
	return NULL;
}

void mdl_index_workload(struct km_model *m, struct km_model_wl *w, const struct km_workload_res *old,
			const struct km_workload_res *res)
{
	struct km_addr addrs[2 * KM_RES_MAX_ADDRESSES];
	const struct km_model_wl *before[2 * KM_RES_MAX_ADDRESSES];
	size_t n = 0, n_old = old ? old->n_addrs : 0, n_new = res ? res->n_addrs : 0;
	int was = m->authz && km_authz_is_identity(&w->authz), is = 0, changed = 0;

	/* every address w held or will hold, once */
	for (size_t i = 0; i < n_old && n < 2 * KM_RES_MAX_ADDRESSES; i++)
		if (!mdl_addr_in(addrs, n, &old->addrs[i]))
			addrs[n++] = old->addrs[i];
	for (size_t i = 0; i < n_new && n < 2 * KM_RES_MAX_ADDRESSES; i++)
		if (!mdl_addr_in(addrs, n, &res->addrs[i]))
			addrs[n++] = res->addrs[i];
	for (size_t i = 0; m->authz && i < n; i++)
		before[i] = ident_owner(m, &addrs[i], w, was);
	/* authorization reads the old version as it takes the new one */
	if (m->authz && res) {
		changed = km_authz_put_workload(m->authz, &w->authz, res, w->id);
		is = km_authz_is_identity(&w->authz);
	} else if (m->authz) {
		km_authz_remove_workload(m->authz, &w->authz, w->id);
	}
	for (size_t i = 0; i < n_old; i++)
		if (!mdl_addr_in(res ? res->addrs : NULL, n_new, &old->addrs[i]))
			km_addr_index_remove(&m->wl_addrs, &old->addrs[i], w);
	for (size_t i = 0; i < n_new; i++)
		if (km_addr_index_add(&m->wl_addrs, &res->addrs[i], w) != 0)
			m->index_oom = m->out->oom = 1; /* a resync rebuilds what is missing */
	for (size_t i = 0; m->authz && i < n; i++) {
		const struct km_model_wl *after = ident_owner(m, &addrs[i], w, is);

		if (after != before[i] || (after == w && changed))
			km_authz_write_address(m->authz, &addrs[i], before[i] != NULL,
					       after ? &after->authz : NULL, after ? after->id : 0);
	}
}

void mdl_replay_identities(struct km_model *m, int fresh)
{
	struct km_addr a;
	const void *newest;
	size_t pos = 0;

	while (km_addr_index_next(&m->wl_addrs, &pos, &a, &newest)) {
		const struct km_model_wl *owner = ident_owner(m, &a, NULL, 0);

		if (owner)
			km_authz_write_address(m->authz, &a, !fresh, &owner->authz, owner->id);
	}
}

const struct km_workload_res *km_model_workload_at(const struct km_model *m,
						   const struct km_addr *a)
{
	const struct km_model_wl *w = km_addr_index_find(&m->wl_addrs, a);

	return w ? w->res : NULL;
}

const struct km_service_res *km_model_service_at(const struct km_model *m, const struct km_addr *a)
{
	const struct km_model_svc *s = km_addr_index_find(&m->vips, a);

	return s ? s->res : NULL;
}
