/* snapshot.c — full snapshot to model delta (see snapshot.h). */
#include "services/xds-agent/sources/snapshot.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "shared/log.h"

struct name_entry {
	const char *name;
	size_t last; /* index of the last definition in the snapshot */
	UT_hash_handle hh;
};

struct name_set {
	struct name_entry *head;
	struct name_entry *pool;
	size_t used;
	int oom;
};

static void set_init(struct name_set *s, size_t capacity)
{
	memset(s, 0, sizeof(*s));
	s->pool = calloc(capacity ? capacity : 1, sizeof(*s->pool));
	s->oom = !s->pool;
}

/* Returns 1 if name was already present (its last index moves to index). */
static int set_add(struct name_set *s, const char *name, size_t index)
{
	struct name_entry *e;

	if (s->oom)
		return 0;
	HASH_FIND_STR(s->head, name, e);
	if (e) {
		e->last = index;
		return 1;
	}
	e = &s->pool[s->used++];
	e->name = name;
	e->last = index;
	HASH_ADD_KEYPTR(hh, s->head, e->name, strlen(e->name), e);
	return 0;
}

/* Is index the last definition of name? (Earlier ones are dropped, not applied in turn.) */
static int is_last(const struct name_set *s, const char *name, size_t index)
{
	struct name_entry *e;

	HASH_FIND_STR(s->head, name, e);
	return !e || e->last == index;
}

static int set_has(const struct name_set *s, const char *name)
{
	struct name_entry *e;

	HASH_FIND_STR(s->head, name, e);
	return e != NULL;
}

static void set_free(struct name_set *s)
{
	HASH_CLEAR(hh, s->head);
	free(s->pool);
}

struct stale {
	const struct name_set *keep;
	char **names;
	size_t n, cap;
};

static int collect_stale(void *arg, const char *name)
{
	struct stale *st = arg;

	if (set_has(st->keep, name))
		return 0;
	if (st->n == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 64;
		char **p = realloc(st->names, cap * sizeof(*p));

		if (!p)
			return 0;
		st->names = p;
		st->cap = cap;
	}
	st->names[st->n] = strdup(name);
	if (st->names[st->n])
		st->n++;
	return 0;
}

static void remove_stale(struct stale *st, struct km_model *m, int services, size_t *count)
{
	for (size_t i = 0; i < st->n; i++) {
		if (services)
			km_model_remove_service(m, st->names[i]);
		else
			km_model_remove_workload(m, st->names[i]);
		free(st->names[i]);
	}
	*count = st->n;
	free(st->names);
}

void km_snapshot_apply(struct km_model *m, struct km_resource_set *set, struct km_snapshot_stats *stats)
{
	struct name_set svc_names, wl_names;
	struct stale stale_wl = { .keep = &wl_names }, stale_svc = { .keep = &svc_names };
	char *keep_svc = NULL, *keep_wl = NULL;

	memset(stats, 0, sizeof(*stats));
	set_init(&svc_names, set->n_services + set->n_failed);
	set_init(&wl_names, set->n_workloads + set->n_failed);
	if (svc_names.oom || wl_names.oom) {
		km_error("out of memory applying the configuration; nothing changed");
		set_free(&svc_names);
		set_free(&wl_names);
		return;
	}
	for (size_t i = 0; i < set->n_services; i++)
		stats->duplicates += (size_t)set_add(&svc_names, set->services[i]->name, i);
	/* decoded resources: their uid is whole (only a kept workload splits it) */
	for (size_t i = 0; i < set->n_workloads; i++)
		stats->duplicates += (size_t)set_add(&wl_names, set->workloads[i]->uid_text, i);
	/* A failed resource's name protects its previous version from removal. It may be either
	 * kind; adding it to both sets is harmless (names of the two kinds differ in form). */
	for (size_t i = 0; i < set->n_failed; i++) {
		set_add(&svc_names, set->failed[i], SIZE_MAX);
		set_add(&wl_names, set->failed[i], SIZE_MAX);
	}
	if (stats->duplicates)
		km_warn("config: %zu resources are defined more than once; the last definition wins",
			stats->duplicates);

	/* A resource that failed before its name was read could be any of the current ones: remove
	 * nothing this time rather than take down what it may have meant to keep. */
	if (set->n_errors > set->n_failed) {
		km_warn("config: %zu resources without a readable name were rejected; not removing "
			"anything until the file is fixed", set->n_errors - set->n_failed);
	} else {
		km_model_each_workload(m, collect_stale, &stale_wl);
		km_model_each_service(m, collect_stale, &stale_svc);
		remove_stale(&stale_wl, m, 0, &stats->removed_workloads);
		remove_stale(&stale_svc, m, 1, &stats->removed_services);
	}

	/* Only the last definition of a name is applied; decide for all before applying any (the
	 * name sets point into the resources that applying frees). */
	keep_svc = calloc(set->n_services + 1, 1);
	keep_wl = calloc(set->n_workloads + 1, 1);
	if (!keep_svc || !keep_wl) {
		km_error("out of memory applying the configuration");
		goto out;
	}
	for (size_t i = 0; i < set->n_services; i++)
		keep_svc[i] = (char)is_last(&svc_names, set->services[i]->name, i);
	for (size_t i = 0; i < set->n_workloads; i++)
		keep_wl[i] = (char)is_last(&wl_names, set->workloads[i]->uid_text, i);
	for (size_t i = 0; i < set->n_services; i++) {
		if (keep_svc[i])
			km_model_upsert_service(m, set->services[i]);
		else
			km_service_res_free(set->services[i]);
		set->services[i] = NULL;
	}
	stats->upserted_services = set->n_services;
	set->n_services = 0;
	for (size_t i = 0; i < set->n_workloads; i++) {
		if (keep_wl[i])
			km_model_upsert_workload(m, set->workloads[i]);
		else
			km_workload_res_free(set->workloads[i]);
		set->workloads[i] = NULL;
	}
	stats->upserted_workloads = set->n_workloads;
	set->n_workloads = 0;
out:
	km_model_flush(m);
	free(keep_svc);
	free(keep_wl);
	set_free(&svc_names);
	set_free(&wl_names);
}
