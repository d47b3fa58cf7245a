/* authz_metrics.c — the policies' decision counters as metrics (see authz_metrics.h). */
#include "services/xds-agent/telemetry/authz_metrics.h"

#include <stdlib.h>
#include <string.h>

#include "kmesh_maps.h"
#include "shared/latency.h"

void km_authz_metrics_init(struct km_authz_metrics *m, struct km_writer_link *link,
			   const struct km_authz *authz, const struct km_model *model)
{
	memset(m, 0, sizeof(*m));
	m->link = link;
	m->authz = authz;
	m->model = model;
}

void km_authz_metrics_free(struct km_authz_metrics *m)
{
	free(m->rows);
	m->rows = NULL;
	m->n = 0;
	km_authz_denials_free(&m->denials);
}

static int by_id(const void *a, const void *b)
{
	uint32_t x = ((const struct km_authz_tally *)a)->stat_id;
	uint32_t y = ((const struct km_authz_tally *)b)->stat_id;

	return x < y ? -1 : x > y;
}

void km_authz_metrics_take(struct km_authz_metrics *m, const Kmesh__Ipc__DumpReply *reply,
			   uint64_t now_us)
{
	size_t n = reply->n_authz_stats;
	struct km_authz_tally *t = n ? calloc(n, sizeof(*t)) : NULL;

	if (n && !t)
		return; /* the last counters stay */
	for (size_t i = 0; i < n; i++) {
		t[i].stat_id = reply->authz_stats[i]->stat_id;
		t[i].allowed = reply->authz_stats[i]->allowed;
		t[i].denied = reply->authz_stats[i]->denied;
	}
	if (n)
		qsort(t, n, sizeof(*t), by_id);
	km_authz_denials_take(&m->denials, (const Kmesh__Ipc__AuthzDenialRow *const *)
			      reply->authz_denials, reply->n_authz_denials, m->authz, m->model);
	free(m->rows);
	m->rows = t;
	m->n = n;
	m->answered_us = now_us;
}

static void on_reply(void *arg, const Kmesh__Ipc__Reply *r)
{
	struct km_authz_metrics *m = arg;

	m->in_flight = 0;
	if (!r || r->code != KMESH__IPC__CODE__OK || r->body_case != KMESH__IPC__REPLY__BODY_DUMP)
		return; /* the link dropped or the map writer refused: the last counters stay */
	km_authz_metrics_take(m, r->dump, km_now_us());
	m->refreshes++;
}

void km_authz_metrics_refresh(struct km_authz_metrics *m, uint64_t now_us)
{
	km_envelope q = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__DumpRequest d = KMESH__IPC__DUMP_REQUEST__INIT;

	if (m->in_flight || !m->link || !m->authz || now_us - m->asked_us < KM_AUTHZ_METRICS_MAX_AGE_US)
		return;
	d.table = KMESH__IPC__TABLE__TABLE_AUTHZ_STATS;
	q.body_case = KMESH__IPC__ENVELOPE__BODY_DUMP;
	q.dump = &d;
	m->asked_us = now_us;
	if (km_writer_link_query(m->link, &q, on_reply, m) == 0)
		m->in_flight = 1;
}

static const struct km_authz_tally *tally_of(const struct km_authz_metrics *m, uint32_t id)
{
	struct km_authz_tally key = { .stat_id = id };

	return m->n ? bsearch(&key, m->rows, m->n, sizeof(*m->rows), by_id) : NULL;
}

struct render_ctx {
	const struct km_authz_metrics *m;
	struct km_prom *p;
	size_t listed;
	uint64_t unlisted_allowed, unlisted_denied;
};

static void policy_series(void *arg, const struct km_authz_policy_info *i)
{
	struct render_ctx *c = arg;
	const struct km_authz_tally *t = tally_of(c->m, i->stat_id);
	const char *decisions[] = { "allowed", "denied" };
	char labels[512];

	if (!t || (!t->allowed && !t->denied))
		return;
	if (c->listed >= KM_AUTHZ_METRICS_POLICIES) {
		c->unlisted_allowed += t->allowed;
		c->unlisted_denied += t->denied;
		return;
	}
	c->listed++;
	for (int d = 0; d < 2; d++) {
		const char *pairs[] = { "policy", i->name, "action", i->deny ? "DENY" : "ALLOW",
					"dry_run", i->dry_run ? "true" : "false", "decision",
					decisions[d] };

		if (km_prom_labels(labels, sizeof(labels), pairs, 4, "") >= 0)
			km_prom_sample(c->p, "kmesh_authz_policy_decisions_total", labels,
				       d ? t->denied : t->allowed);
	}
}

void km_authz_metrics_render(const struct km_authz_metrics *m, struct km_prom *p)
{
	struct render_ctx c = { .m = m, .p = p };
	const struct km_authz_tally *none = tally_of(m, KM_AUTHZ_STAT_DEFAULT);
	uint64_t allowed = 0, denied = 0;

	if (!m->answered_us)
		return; /* nothing asked for yet */
	for (size_t i = 0; i < m->n; i++) {
		allowed += m->rows[i].allowed;
		denied += m->rows[i].denied;
	}
	km_prom_family(p, "kmesh_authz_decisions_total", "counter",
		       "inbound connections to enrolled pods decided by authorization, since the tables "
		       "were made");
	km_prom_sample(p, "kmesh_authz_decisions_total", "decision=\"allowed\"", allowed);
	km_prom_sample(p, "kmesh_authz_decisions_total", "decision=\"denied\"", denied);
	km_prom_family(p, "kmesh_authz_no_policy_decisions_total", "counter",
		       "connections no policy decided: denied when ALLOW policies apply and none matched");
	km_prom_sample(p, "kmesh_authz_no_policy_decisions_total", "decision=\"allowed\"",
		       none ? none->allowed : 0);
	km_prom_sample(p, "kmesh_authz_no_policy_decisions_total", "decision=\"denied\"",
		       none ? none->denied : 0);
	km_prom_family(p, "kmesh_authz_policy_decisions_total", "counter",
		       "connections a policy decided (at most 256 policies, those that decided any)");
	if (m->authz)
		km_authz_each_policy(m->authz, policy_series, &c);
	km_prom_family(p, "kmesh_authz_unlisted_policy_decisions_total", "counter",
		       "connections decided by policies past the listed ones");
	km_prom_sample(p, "kmesh_authz_unlisted_policy_decisions_total", "decision=\"allowed\"",
		       c.unlisted_allowed);
	km_prom_sample(p, "kmesh_authz_unlisted_policy_decisions_total", "decision=\"denied\"",
		       c.unlisted_denied);
	km_authz_denials_render(&m->denials, p);
}
