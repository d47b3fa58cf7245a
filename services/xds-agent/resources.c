/* resources.c — resource ownership and comparison (see resources.h). */
#include "services/xds-agent/resources.h"

#include <stdlib.h>
#include <string.h>

static int str_eq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

/* memcmp of two arrays of n bytes that may be NULL when n == 0 */
static int same_bytes(const void *a, const void *b, size_t n)
{
	return n == 0 || memcmp(a, b, n) == 0;
}

int km_waypoint_equal(const struct km_waypoint *a, const struct km_waypoint *b)
{
	return a->kind == b->kind && a->hbone_port == b->hbone_port &&
	       memcmp(&a->addr, &b->addr, sizeof(a->addr)) == 0 && str_eq(a->service, b->service);
}

void km_service_res_free(struct km_service_res *s)
{
	if (!s)
		return;
	free(s->name);
	free(s->svc_name);
	free(s->namespace);
	free(s->hostname);
	free(s->vips);
	free(s->ports);
	free(s->waypoint.service);
	free(s);
}

void km_workload_res_free(struct km_workload_res *w)
{
	if (!w)
		return;
	free(w->uid);
	free(w->name);
	free(w->namespace);
	free(w->node);
	free(w->network);
	free(w->cluster_id);
	free(w->trust_domain);
	free(w->service_account);
	free(w->region);
	free(w->zone);
	free(w->subzone);
	free(w->addrs);
	for (size_t i = 0; i < w->n_services; i++) {
		free(w->services[i].service);
		free(w->services[i].ports);
	}
	free(w->services);
	for (size_t i = 0; i < w->n_policies; i++)
		free(w->policies[i]);
	free(w->policies);
	free(w->waypoint.service);
	free(w);
}

int km_service_res_equal(const struct km_service_res *a, const struct km_service_res *b)
{
	return str_eq(a->name, b->name) && a->lb_mode == b->lb_mode && a->n_vips == b->n_vips &&
	       a->n_ports == b->n_ports && a->n_scopes == b->n_scopes &&
	       a->allow_unhealthy == b->allow_unhealthy &&
	       same_bytes(a->vips, b->vips, a->n_vips * sizeof(*a->vips)) &&
	       same_bytes(a->ports, b->ports, a->n_ports * sizeof(*a->ports)) &&
	       same_bytes(a->scopes, b->scopes, a->n_scopes * sizeof(*a->scopes)) &&
	       km_waypoint_equal(&a->waypoint, &b->waypoint);
}

int km_workload_res_equal(const struct km_workload_res *a, const struct km_workload_res *b)
{
	if (!str_eq(a->uid, b->uid) || a->status != b->status || a->n_addrs != b->n_addrs ||
	    a->n_services != b->n_services || a->n_policies != b->n_policies ||
	    a->host_network != b->host_network || a->capacity != b->capacity ||
	    !str_eq(a->node, b->node) || !str_eq(a->network, b->network) ||
	    !str_eq(a->cluster_id, b->cluster_id) || !str_eq(a->region, b->region) ||
	    !str_eq(a->zone, b->zone) || !str_eq(a->subzone, b->subzone) ||
	    !str_eq(a->namespace, b->namespace) || !str_eq(a->trust_domain, b->trust_domain) ||
	    !str_eq(a->service_account, b->service_account) ||
	    !km_waypoint_equal(&a->waypoint, &b->waypoint))
		return 0;
	if (!same_bytes(a->addrs, b->addrs, a->n_addrs * sizeof(*a->addrs)))
		return 0;
	for (size_t i = 0; i < a->n_services; i++) {
		const struct km_membership *x = &a->services[i], *y = &b->services[i];

		if (strcmp(x->service, y->service) != 0 || x->n_ports != y->n_ports ||
		    !same_bytes(x->ports, y->ports, x->n_ports * sizeof(*x->ports)))
			return 0;
	}
	for (size_t i = 0; i < a->n_policies; i++)
		if (strcmp(a->policies[i], b->policies[i]) != 0)
			return 0;
	return 1;
}

static int cmp_membership(const void *a, const void *b)
{
	return strcmp(((const struct km_membership *)a)->service,
		      ((const struct km_membership *)b)->service);
}

int km_workload_res_normalize(struct km_workload_res *w)
{
	if (w->n_services == 0)
		return 0;
	qsort(w->services, w->n_services, sizeof(*w->services), cmp_membership);
	for (size_t i = 1; i < w->n_services; i++)
		if (strcmp(w->services[i - 1].service, w->services[i].service) == 0)
			return -1;
	return 0;
}

const struct km_membership *km_workload_membership(const struct km_workload_res *w,
						   const char *service)
{
	struct km_membership key = { .service = (char *)service };

	if (w->n_services == 0)
		return NULL;
	return bsearch(&key, w->services, w->n_services, sizeof(*w->services), cmp_membership);
}

uint32_t km_target_port(const struct km_service_res *s, const struct km_membership *m,
			uint32_t service_port)
{
	for (size_t i = 0; m && i < m->n_ports; i++)
		if (m->ports[i].service_port == service_port && m->ports[i].target_port)
			return m->ports[i].target_port;
	for (size_t i = 0; i < s->n_ports; i++)
		if (s->ports[i].service_port == service_port)
			return s->ports[i].target_port ? s->ports[i].target_port : service_port;
	return 0;
}
