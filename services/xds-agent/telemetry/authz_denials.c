/* authz_denials.c — see authz_denials.h. */
#include "services/xds-agent/telemetry/authz_denials.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "kmesh_maps.h"
#include "shared/grow.h"

struct az_denial_key {
	uint32_t workload_id, stat_id;
};

struct az_denial_row {
	struct az_denial_key key;
	uint64_t denied;
	char *labels; /* NULL: never named */
	uint32_t gen;
	UT_hash_handle hh;
};

/* Policy names by stat id, for one take. */
struct policy_name {
	uint32_t stat_id;
	const char *name;
};

struct names_ctx {
	struct policy_name *v;
	size_t n, cap;
	int oom;
};

static void collect_name(void *arg, const struct km_authz_policy_info *i)
{
	struct names_ctx *c = arg;

	if (c->oom)
		return;
	if (km_grow((void **)&c->v, &c->cap, c->n + 1, sizeof(*c->v)) != 0) {
		c->oom = 1;
		return;
	}
	c->v[c->n].stat_id = i->stat_id;
	c->v[c->n++].name = i->name;
}

static int by_stat(const void *a, const void *b)
{
	uint32_t x = ((const struct policy_name *)a)->stat_id;
	uint32_t y = ((const struct policy_name *)b)->stat_id;

	return x < y ? -1 : x > y;
}

static const char *policy_of(const struct names_ctx *c, uint32_t stat_id)
{
	struct policy_name key = { .stat_id = stat_id };
	const struct policy_name *hit;

	if (stat_id == KM_AUTHZ_STAT_DEFAULT)
		return "none"; /* ALLOW policies applied and none matched */
	hit = c->n ? bsearch(&key, c->v, c->n, sizeof(*c->v), by_stat) : NULL;
	return hit ? hit->name : NULL;
}

/* The row's labels if its workload (or "no workload": id 0) and policy are known now. */
static char *name_row(const struct az_denial_key *k, const struct names_ctx *names,
		      const struct km_model *model)
{
	const struct km_workload_res *w = NULL;
	const char *policy = policy_of(names, k->stat_id);
	const char *pairs[6] = { "destination_workload", NULL, "destination_workload_namespace",
				 NULL, "policy", policy };
	char labels[1024];

	if (!policy || k->workload_id == KM_AUTHZ_DENIALS_OTHER)
		return NULL;
	if (k->workload_id) { /* else a destination no workload describes: "unknown" */
		if (!model || !(w = km_model_workload_by_id(model, k->workload_id)))
			return NULL;
		pairs[1] = w->who->workload_name && *w->who->workload_name ? w->who->workload_name : w->name;
		pairs[3] = w->who->namespace;
	}
	if (km_prom_labels(labels, sizeof(labels), pairs, 3, "unknown") < 0)
		return NULL;
	return strdup(labels);
}

static void row_free(struct km_authz_denials *d, struct az_denial_row *r)
{
	HASH_DEL(d->rows, r);
	free(r->labels);
	free(r);
	d->n--;
}

void km_authz_denials_take(struct km_authz_denials *d, const Kmesh__Ipc__AuthzDenialRow *const *rows,
			   size_t n, const struct km_authz *authz, const struct km_model *model)
{
	struct names_ctx names = { 0 };
	struct az_denial_row *r, *tmp;

	if (authz)
		km_authz_each_policy(authz, collect_name, &names);
	if (names.n)
		qsort(names.v, names.n, sizeof(*names.v), by_stat);
	d->gen++;
	for (size_t i = 0; i < n; i++) {
		struct az_denial_key k = { rows[i]->workload_id, rows[i]->stat_id };

		HASH_FIND(hh, d->rows, &k, sizeof(k), r);
		if (!r) {
			if (!(r = calloc(1, sizeof(*r))))
				continue; /* counted as unlisted: it has no row here */
			r->key = k;
			HASH_ADD(hh, d->rows, key, sizeof(r->key), r);
			d->n++;
		}
		r->denied = rows[i]->denied;
		r->gen = d->gen;
		if (!r->labels)
			r->labels = name_row(&k, &names, model);
	}
	HASH_ITER(hh, d->rows, r, tmp)
		if (r->gen != d->gen)
			row_free(d, r); /* removed by the map writer */
	free(names.v);
}

/* One series: its labels and the denials of every row that has them. */
struct series {
	const char *labels;
	uint64_t denied;
	UT_hash_handle hh;
};

void km_authz_denials_render(const struct km_authz_denials *d, struct km_prom *p)
{
	struct series *all = NULL, *s, *tmp;
	const struct az_denial_row *r, *rtmp;
	uint64_t unlisted = 0;
	size_t count = 0;

	HASH_ITER(hh, d->rows, r, rtmp) {
		if (!r->denied)
			continue;
		s = NULL;
		if (r->labels)
			HASH_FIND_STR(all, r->labels, s);
		if (!s && r->labels && count < KM_AUTHZ_DENIAL_SERIES && (s = calloc(1, sizeof(*s)))) {
			s->labels = r->labels;
			HASH_ADD_KEYPTR(hh, all, s->labels, strlen(s->labels), s);
			count++;
		}
		if (s)
			s->denied += r->denied;
		else
			unlisted += r->denied;
	}
	km_prom_family(p, "kmesh_authz_denied_connections_total", "counter",
		       "inbound connections denied, by destination workload and deciding policy (at "
		       "most 1000 series; policy \"none\": ALLOW policies applied and none matched)");
	HASH_ITER(hh, all, s, tmp) {
		km_prom_sample(p, "kmesh_authz_denied_connections_total", s->labels, s->denied);
		HASH_DEL(all, s);
		free(s);
	}
	km_prom_metric(p, "kmesh_authz_unlisted_denied_connections_total", "counter",
		       "denials not in kmesh_authz_denied_connections_total: past its bound, or of a "
		       "workload or policy never known here", unlisted);
}

void km_authz_denials_free(struct km_authz_denials *d)
{
	struct az_denial_row *r, *tmp;

	HASH_ITER(hh, d->rows, r, tmp)
		row_free(d, r);
}
