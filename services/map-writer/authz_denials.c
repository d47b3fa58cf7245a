/* authz_denials.c — the denials BPF counts per destination workload and policy
 * (km_authz_denials, kmesh_maps.h): read back for a dump, and kept within bound by removing the
 * rows of workloads that no km_authz_ident row names any more (the workload is gone), once the
 * table is three-quarters full. Part of the tables module (declared in tables.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>

#include "kmesh_maps.h"
#include "services/map-writer/tables.h"
#include "shared/grow.h"
#include "shared/log.h"

#define COLLECT_AT (KM_AUTHZ_DENIALS_MAX / 4 * 3)
#define COLLECT_EVERY_S 60 /* at most: it reads every identity row */

static uint64_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec + 1; /* never 0, which means "never ran" */
}

struct denial {
	struct km_authz_denials_key key;
	uint64_t denied;
};

static int by_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The workload ids the identity rows name, sorted; NULL with *n 0 when there are none or no
 * memory (then nothing is collected). */
static uint32_t *live_workloads(const struct km_tables *t, size_t *n)
{
	struct km_addr key, next;
	struct km_authz_ident_value v;
	const void *prev = NULL;
	uint32_t *ids = NULL;
	size_t cap = 0;

	*n = 0;
	while (bpf_map_get_next_key(t->fd_authz_ident, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(t->fd_authz_ident, &key, &v) != 0)
			continue;
		if (km_grow((void **)&ids, &cap, *n + 1, sizeof(*ids)) != 0) {
			free(ids);
			*n = 0;
			return NULL;
		}
		ids[(*n)++] = v.workload_id;
	}
	if (*n)
		qsort(ids, *n, sizeof(*ids), by_u32);
	return ids;
}

/* Remove the rows of workloads gone. Returns how many went. */
static size_t collect(struct km_tables *t, const struct denial *rows, size_t n)
{
	size_t n_live, gone = 0;
	uint32_t *live = live_workloads(t, &n_live);

	if (!live)
		return 0; /* no identities at all, or no memory: keep everything */
	for (size_t i = 0; i < n; i++) {
		uint32_t id = rows[i].key.workload_id;

		if (id == 0 || id == KM_AUTHZ_DENIALS_OTHER ||
		    bsearch(&id, live, n_live, sizeof(*live), by_u32))
			continue;
		if (bpf_map_delete_elem(t->fd_authz_denials, &rows[i].key) == 0)
			gone++;
	}
	free(live);
	return gone;
}

static Kmesh__Ipc__Code add_row(Kmesh__Ipc__DumpReply *reply, size_t *cap, const struct denial *d)
{
	Kmesh__Ipc__AuthzDenialRow *r;

	if (km_grow((void **)&reply->authz_denials, cap, reply->n_authz_denials + 1,
		    sizeof(*reply->authz_denials)) != 0 ||
	    !(r = malloc(sizeof(*r))))
		return KMESH__IPC__CODE__INTERNAL;
	kmesh__ipc__authz_denial_row__init(r);
	r->workload_id = d->key.workload_id;
	r->stat_id = d->key.stat_id;
	r->denied = d->denied;
	reply->authz_denials[reply->n_authz_denials++] = r;
	return KMESH__IPC__CODE__OK;
}

Kmesh__Ipc__Code km_tables_dump_denials(struct km_tables *t, Kmesh__Ipc__DumpReply *reply)
{
	struct km_authz_denials_key key, next;
	struct km_authz_denials_value v;
	struct denial *rows = NULL;
	const void *prev = NULL;
	size_t n = 0, cap = 0, gone;

	/* read whole first (at most KM_AUTHZ_DENIALS_MAX rows): deleting while walking would
	 * restart the walk */
	while (n < KM_AUTHZ_DENIALS_MAX && bpf_map_get_next_key(t->fd_authz_denials, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(t->fd_authz_denials, &key, &v) != 0)
			continue;
		if (km_grow((void **)&rows, &cap, n + 1, sizeof(*rows)) != 0) {
			free(rows);
			return KMESH__IPC__CODE__INTERNAL;
		}
		rows[n].key = key;
		rows[n++].denied = v.denied;
	}
	if (n >= COLLECT_AT &&
	    (!t->denials_collect_s || now_s() >= t->denials_collect_s + COLLECT_EVERY_S) &&
	    (t->denials_collect_s = now_s(), gone = collect(t, rows, n)) > 0) {
		t->denials_collected += gone;
		km_info("authz: removed the denial counters of %zu rows of workloads gone (the table "
			"was %zu of %d rows full)", gone, n, KM_AUTHZ_DENIALS_MAX);
	}
	cap = 0;
	for (size_t i = 0; i < n; i++)
		if (add_row(reply, &cap, &rows[i]) != KMESH__IPC__CODE__OK) {
			free(rows);
			return KMESH__IPC__CODE__INTERNAL;
		}
	free(rows);
	return KMESH__IPC__CODE__OK;
}
