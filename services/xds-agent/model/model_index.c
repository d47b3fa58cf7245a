/* model_index.c — the model's optional address indexes for telemetry (addr_index.h): kept in
 * step with every service and workload upsert and removal. */
#include "services/xds-agent/model/model_internal.h"

#include <uthash.h>

void mdl_index_service(struct km_model *m, const struct km_service_res *r, int add)
{
	if (!m->vips || !r)
		return;
	for (size_t i = 0; i < r->n_vips; i++) {
		if (!add)
			km_addr_index_remove(m->vips, &r->vips[i], r->name);
		else if (km_addr_index_add(m->vips, &r->vips[i], r->name) != 0)
			m->index_oom = 1;
	}
}

void mdl_index_workload(struct km_model *m, const struct km_workload_res *r, int add)
{
	if (!m->wl_addrs || !r)
		return;
	for (size_t i = 0; i < r->n_addrs; i++) {
		if (!add)
			km_addr_index_remove(m->wl_addrs, &r->addrs[i], r->uid);
		else if (km_addr_index_add(m->wl_addrs, &r->addrs[i], r->uid) != 0)
			m->index_oom = 1;
	}
}

static int index_one_workload(void *arg, const char *uid)
{
	struct km_model *m = arg;

	mdl_index_workload(m, km_model_find_workload(m, uid), 1);
	return 0;
}

int km_model_index_addresses(struct km_model *m)
{
	struct km_model_svc *s, *tmp;

	if (m->wl_addrs)
		return 0;
	m->wl_addrs = km_addr_index_new();
	m->vips = km_addr_index_new();
	if (!m->wl_addrs || !m->vips) {
		km_addr_index_free(m->wl_addrs);
		km_addr_index_free(m->vips);
		m->wl_addrs = m->vips = NULL;
		return -1;
	}
	HASH_ITER(hh, m->services, s, tmp)
		mdl_index_service(m, s->res, 1);
	km_model_each_workload(m, index_one_workload, m);
	return m->index_oom ? -1 : 0;
}
