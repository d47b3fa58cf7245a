/* resources.c — resource ownership and comparison (see resources.h). */
#include "services/xds-agent/resources.h"

#include <stdlib.h>
#include <string.h>

static int str_eq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

/* memcmp of two arrays of n elements that may be NULL when n == 0 */
static int same_bytes(const void *a, const void *b, size_t n)
{
	return n == 0 || memcmp(a, b, n) == 0;
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
	free(w->addrs);
	for (size_t i = 0; i < w->n_services; i++)
		free(w->services[i]);
	free(w->services);
	free(w);
}

int km_service_res_equal(const struct km_service_res *a, const struct km_service_res *b)
{
	return str_eq(a->name, b->name) && a->lb_mode == b->lb_mode && a->n_vips == b->n_vips &&
	       a->n_ports == b->n_ports &&
	       same_bytes(a->vips, b->vips, a->n_vips * sizeof(*a->vips)) &&
	       same_bytes(a->ports, b->ports, a->n_ports * sizeof(*a->ports));
}

int km_workload_res_equal(const struct km_workload_res *a, const struct km_workload_res *b)
{
	if (!str_eq(a->uid, b->uid) || a->status != b->status || a->n_addrs != b->n_addrs ||
	    a->n_services != b->n_services || !str_eq(a->node, b->node) ||
	    !str_eq(a->network, b->network))
		return 0;
	if (!same_bytes(a->addrs, b->addrs, a->n_addrs * sizeof(*a->addrs)))
		return 0;
	for (size_t i = 0; i < a->n_services; i++)
		if (strcmp(a->services[i], b->services[i]) != 0)
			return 0;
	return 1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void km_workload_res_normalize(struct km_workload_res *w)
{
	size_t out = 0;

	if (w->n_services == 0)
		return;
	qsort(w->services, w->n_services, sizeof(*w->services), cmp_str);
	for (size_t i = 0; i < w->n_services; i++) {
		if (out > 0 && strcmp(w->services[out - 1], w->services[i]) == 0) {
			free(w->services[i]);
			continue;
		}
		w->services[out++] = w->services[i];
	}
	w->n_services = out;
}

int km_workload_has_service(const struct km_workload_res *w, const char *service)
{
	const char *key = service;

	if (w->n_services == 0)
		return 0;
	return bsearch(&key, w->services, w->n_services, sizeof(*w->services), cmp_str) != NULL;
}
