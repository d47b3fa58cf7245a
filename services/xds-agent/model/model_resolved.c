/* model_resolved.c — a workload reached by name (a ServiceEntry with resolution DNS): its
 * resolved addresses as backends of their own.
 *
 * A backend row carries one address of each family, and a name may resolve to a dozen. The
 * workload's entry keeps the first pair; each further pair is an entry derived from it, named
 * "<uid>#2", "<uid>#3"... (istiod's names never hold '#'), a copy of the workload with those
 * addresses: its own backend id, endpoint slot in every service the workload lists, pod-IP rows
 * and authorization, so a service's connections spread over every address. Pair i takes the
 * i-th address of each family, the shorter family's repeated from its start, so every backend
 * has both families when the name has both (a socket of one family can only use its family).
 *
 * Derived entries are the workload's: put and removed with it, never marked for a reconnect's
 * sweep (istiod never names them; the workload's own mark decides). */
#include "services/xds-agent/model/model_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/addr.h"

/* "<uid>#<n>" (n >= 2) into buf; 0, or -1 when it does not fit. */
static int derived_name(char *buf, size_t len, const char *uid, size_t n)
{
	int k = snprintf(buf, len, "%s#%zu", uid, n);

	return k < 0 || (size_t)k >= len ? -1 : 0;
}

void mdl_drop_derived(struct km_model *m, struct km_model_wl *w, size_t keep)
{
	char name[KM_RES_MAX_STRING + 16]; /* a uid is at most KM_RES_MAX_STRING */
	char ubuf[KM_UID_BUF];
	const char *uid = km_workload_uid(w->res, ubuf);
	struct km_model_wl *d;

	/* every index a pair may have had: one left out by a failed put is not the last */
	for (size_t n = keep + 1; n <= KM_RES_MAX_ADDRESSES; n++)
		if (derived_name(name, sizeof(name), uid, n) == 0 &&
		    (d = mdl_wl_find(m, name)) && d->derived)
			mdl_remove_entry(m, d);
	if (keep <= 1)
		w->has_derived = 0;
}

void mdl_put_resolved(struct km_model *m, struct km_workload_res *res)
{
	struct km_addr v4[KM_RES_MAX_ADDRESSES], v6[KM_RES_MAX_ADDRESSES], pair[2];
	size_t n4 = 0, n6 = 0, pairs;
	char name[KM_RES_MAX_STRING + 16]; /* a uid is at most KM_RES_MAX_STRING */
	char ubuf[KM_UID_BUF];
	struct km_workload_res *first = NULL;
	struct km_model_wl *w;

	for (size_t i = 0; i < res->n_addrs && i < KM_RES_MAX_ADDRESSES; i++) {
		if (km_addr_is_v4(&res->addrs[i]))
			v4[n4++] = res->addrs[i];
		else
			v6[n6++] = res->addrs[i];
	}
	pairs = n4 > n6 ? n4 : n6;
	if (pairs <= 1) { /* the workload's entry holds them all */
		if ((w = mdl_put_entry(m, res, 0)) && w->has_derived)
			mdl_drop_derived(m, w, 1);
		return;
	}
	for (size_t i = 0; i < pairs; i++) {
		size_t k = 0;
		struct km_workload_res *r;

		if (n4)
			pair[k++] = v4[i % n4];
		if (n6)
			pair[k++] = v6[i % n6];
		if (!(r = km_workload_res_with_addrs(res, pair, k)))
			goto oom;
		if (i == 0) {
			first = r;
			continue;
		}
		free(r->uid_text);
		if (derived_name(name, sizeof(name), km_workload_uid(res, ubuf), i + 1) != 0 ||
		    !(r->uid_text = strdup(name))) {
			r->uid_text = NULL;
			km_workload_res_free(r);
			goto oom;
		}
		mdl_put_entry(m, r, 1);
	}
	if ((w = mdl_put_entry(m, first, 0))) {
		w->has_derived = 1;
		mdl_drop_derived(m, w, pairs); /* those of a longer answer before */
	}
	km_workload_res_free(res);
	return;
oom:
	km_workload_res_free(first);
	km_workload_res_free(res);
	m->out->oom = 1; /* the agent resyncs on it */
}
