/* model_ops.h — what the model's exact-order tests (test_model.c, test_model_waypoint.c) share:
 * ops in a compact text form matched in order (EXPECT), the fixture (a model writing into an op
 * list) and a seeded service with n workloads. Include after cmocka.h and model_builders.h. */
#ifndef KM_TEST_MODEL_OPS_H
#define KM_TEST_MODEL_OPS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/model/model.h"
#include "tests/unit/model_builders.h"
#include "shared/addr.h"

/* ---- op matching ----------------------------------------------------------------------------- */

/* A compact text form of an op: "BE+ 5", "EP+ s/0/1=w", "SVC+ s 2", "FE- 10.0.0.1:80" ... */
static inline const char *name_of(const struct km_model *m, uint32_t id)
{
	static char bufs[4][KM_UID_BUF]; /* an op's text names up to two */
	static unsigned k;
	const char *n = km_model_name_of(m, id, bufs[k++ % 4]);

	return n ? n : "?"; /* released ids (rows being deleted) */
}

static inline void op_text(const struct km_model *m, const struct km_op *o, char *buf, size_t len)
{
	char a[KM_ADDR_STRLEN];
	const char *sign = o->del ? "-" : "+";

	switch (o->table) {
	case KM_OP_BACKEND:
		snprintf(buf, len, "BE%s %s", sign, name_of(m, o->be.id));
		break;
	case KM_OP_SERVICE:
		snprintf(buf, len, "SVC%s %s %u", sign, name_of(m, o->svc.id),
			 o->del ? 0 : o->svc.count[0]);
		break;
	case KM_OP_ENDPOINT:
		snprintf(buf, len, "EP%s %u=%s", sign, o->ep.index,
			 o->del ? "" : name_of(m, o->ep.backend_id));
		break;
	case KM_OP_PORT_OVERRIDE:
		snprintf(buf, len, "PO%s %u=%u", sign, o->po.port, o->po.target_port);
		break;
	default:
		snprintf(buf, len, "FE%s %s:%u", sign, km_addr_format(&o->fe.addr, a), o->fe.port);
		break;
	}
}

static inline void expect_ops(struct km_model *m, struct km_oplist *l, const char *const *want, size_t n)
{
	char got[128];

	for (size_t i = 0; i < l->n && i < n; i++) {
		op_text(m, &l->ops[i], got, sizeof(got));
		if (strcmp(got, want[i]) != 0)
			fail_msg("op %zu: got '%s', want '%s'", i, got, want[i]);
	}
	if (l->n != n) {
		for (size_t i = 0; i < l->n; i++) {
			op_text(m, &l->ops[i], got, sizeof(got));
			print_message("  op %zu: %s\n", i, got);
		}
		fail_msg("got %zu ops, want %zu", l->n, n);
	}
	km_oplist_clear(l);
}

#define EXPECT(m, l, ...)                                                                          \
	do {                                                                                       \
		const char *const w_[] = { __VA_ARGS__ };                                          \
		expect_ops(m, l, w_, sizeof(w_) / sizeof(w_[0]));                                  \
	} while (0)

#define SVC "demo/web"

struct fx {
	struct km_oplist l;
	struct km_model m;
};

static inline int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	km_oplist_init(&f->l);
	km_model_init(&f->m, &f->l, NULL);
	*state = f;
	return 0;
}

static inline int fx_teardown(void **state)
{
	struct fx *f = *state;

	km_model_free(&f->m);
	km_oplist_free(&f->l);
	free(f);
	return 0;
}

/* The service with VIP 10.96.0.1:80 and n healthy workloads w1..wn (10.0.0.1..n), flushed;
 * the ops list is left empty. */
static inline void seed(struct fx *f, int n, uint32_t target)
{
	km_model_upsert_service(&f->m, svc(SVC, "10.96.0.1", 80, target));
	for (int i = 1; i <= n; i++) {
		char uid[16], ip[24];

		snprintf(uid, sizeof(uid), "w%d", i);
		snprintf(ip, sizeof(ip), "10.0.0.%d", i);
		km_model_upsert_workload(&f->m, wl(uid, ip, KM_WORKLOAD_HEALTHY, 1, SVC));
	}
	km_model_flush(&f->m);
	km_oplist_clear(&f->l);
}

#endif
