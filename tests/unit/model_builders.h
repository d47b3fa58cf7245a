/* model_builders.h — what the model's unit tests (test_model.c, test_model_waypoint.c,
 * test_model_sim.c) share: resource builders and the frontend rows as a table would hold them.
 * Include after cmocka.h. */
#ifndef KM_TEST_MODEL_BUILDERS_H
#define KM_TEST_MODEL_BUILDERS_H

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/model/model.h"
#include "shared/addr.h"

#define SIM_SVCS_MAX 8

/* ---- resource builders ----------------------------------------------------------------------- */

static inline struct km_service_res *svc(const char *name, const char *vip, uint32_t port, uint32_t target)
{
	struct km_service_res *s = calloc(1, sizeof(*s));

	s->name = strdup(name);
	s->vips = calloc(1, sizeof(*s->vips));
	if (vip) {
		km_addr_parse(vip, &s->vips[0]);
		s->n_vips = 1;
	}
	s->ports = calloc(1, sizeof(*s->ports));
	s->ports[0].service_port = port;
	s->ports[0].target_port = target;
	s->n_ports = 1;
	return s;
}

static inline struct km_workload_res *wl(const char *uid, const char *ip, uint32_t status, int n_svcs, ...)
{
	struct km_workload_res *w = km_workload_res_new();
	va_list ap;

	w->uid_text = strdup(uid);
	w->addrs = calloc(1, sizeof(*w->addrs));
	if (ip) {
		km_addr_parse(ip, &w->addrs[0]);
		w->n_addrs = 1;
	}
	w->status = status;
	w->services = calloc((size_t)n_svcs + SIM_SVCS_MAX, sizeof(*w->services)); /* room for the random test */
	va_start(ap, n_svcs);
	for (int i = 0; i < n_svcs; i++)
		w->services[w->n_services++].service = strdup(va_arg(ap, const char *));
	va_end(ap);
	assert_int_equal(km_workload_res_normalize(w), 0);
	w->rare->capacity = 1;
	return w;
}

/* The workload with a waypoint of its own (an address): only such a workload gets pod-IP
 * frontend rows, since a connect() to a pod IP reads its row only to go to that waypoint. */
static inline struct km_workload_res *with_wp(struct km_workload_res *w)
{
	w->rare->wp = (struct km_waypoint){ .kind = KM_WAYPOINT_ADDRESS, .hbone_port = 15008 };
	km_addr_parse("10.99.0.1", &w->rare->wp.addr);
	return w;
}

static inline struct km_service_res *with_mode(struct km_service_res *s, uint32_t mode, int n_scopes, ...)
{
	va_list ap;

	s->lb_mode = mode;
	va_start(ap, n_scopes);
	for (int i = 0; i < n_scopes; i++)
		s->scopes[s->n_scopes++] = va_arg(ap, uint32_t);
	va_end(ap);
	return s;
}

/* The frontend rows as the table would hold them after applying ops: (address, port) -> row. */
struct fe_rows {
	struct km_op rows[64];
	size_t n;
};

static inline struct km_op *fe_row(struct fe_rows *t, const char *ip, uint16_t port)
{
	struct km_addr a;

	km_addr_parse(ip, &a);
	for (size_t i = 0; i < t->n; i++)
		if (!memcmp(&t->rows[i].fe.addr, &a, sizeof(a)) && t->rows[i].fe.port == port)
			return &t->rows[i];
	return NULL;
}

static inline void fe_apply(struct fe_rows *t, const struct km_op *o)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (!memcmp(&t->rows[i].fe.addr, &o->fe.addr, sizeof(o->fe.addr)) &&
		    t->rows[i].fe.port == o->fe.port)
			break;
	if (o->del) {
		if (i < t->n)
			t->rows[i] = t->rows[--t->n];
		return;
	}
	assert_true(i < 64);
	t->rows[i] = *o;
	t->n += i == t->n;
}

#endif
