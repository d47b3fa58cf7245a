/* model_store.c — where the model keeps its objects, and nothing else: services by name, workloads
 * in the id table (and the rare displaced ones by uid), their versions, the dirty list, and the
 * small pointer-array helpers. The lowest layer of the model: it calls no other model file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <utlist.h>

#include "services/xds-agent/model/model_internal.h"
#include "services/xds-agent/core/strpool.h"
#include "shared/grow.h"

/* ---- small helpers ------------------------------------------------------------------------- */

void mdl_parr_append(struct km_model *m, void ***arr, uint32_t *n, uint32_t *cap, void *p)
{
	if (km_grow32((void **)arr, cap, (size_t)*n + 1, sizeof(void *)) != 0) {
		m->out->oom = 1;
		return;
	}
	(*arr)[(*n)++] = p;
}

void mdl_parr_del(void **arr, uint32_t *n, void *p)
{
	for (uint32_t i = 0; i < *n; i++) {
		if (arr[i] == p) {
			arr[i] = arr[--*n];
			return;
		}
	}
}

int mdl_str_eq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

void mdl_mark_dirty(struct km_model *m, struct km_model_svc *s, int count)
{
	if (count)
		s->count_dirty = 1;
	if (s->in_dirty)
		return;
	if (km_grow((void **)&m->dirty, &m->cap_dirty, m->n_dirty + 1, sizeof(*m->dirty)) != 0) {
		m->out->oom = 1;
		return;
	}
	m->dirty[m->n_dirty++] = s;
	s->in_dirty = 1;
}

struct km_model_svc *mdl_svc_find(const struct km_model *m, const char *name)
{
	return km_name_map_find(&m->svc_index, name);
}

struct km_model_svc *mdl_svc_get(struct km_model *m, const char *name, int create)
{
	struct km_model_svc *s = mdl_svc_find(m, name);

	if (s || !create)
		return s;
	s = calloc(1, sizeof(*s));
	/* the name interned: the workloads naming the service hold the same pointer */
	if (!s || !(s->name = (char *)km_str_intern(name)) ||
	    km_name_map_add(&m->svc_index, s->name, s) != 0) {
		if (s)
			km_str_release(s->name);
		free(s);
		m->out->oom = 1;
		return NULL;
	}
	DL_APPEND(m->services, s);
	mdl_mark_dirty(m, s, 0); /* freed at flush if it turns out unused */
	return s;
}

void mdl_svc_forget(struct km_model *m, struct km_model_svc *s)
{
	km_name_map_delete(&m->svc_index, s->name);
	DL_DELETE(m->services, s);
}

/* ---- the workload index: the id table ---------------------------------------------------- */

static struct km_model_wl *mdl_wl_of_owner(uintptr_t owner)
{
	return owner & MDL_OWNER_WORKLOAD ? mdl_owner_workload(owner) : NULL;
}

/* The workload in slot i of the id table, or NULL (free slot or a service). */
struct km_model_wl *mdl_wl_at(const struct km_model *m, size_t i)
{
	return m->ids.keys[i] ? mdl_wl_of_owner((uintptr_t)m->ids.owners[i]) : NULL;
}

struct km_model_wl *mdl_workload_by_id(const struct km_model *m, uint32_t id)
{
	return mdl_wl_of_owner((uintptr_t)km_ids_owner(&m->ids, id));
}

uint32_t mdl_workload_inline4(const struct km_model *m, uint32_t backend_id)
{
	struct km_model_wl *w = mdl_wl_of_owner((uintptr_t)km_ids_owner(&m->ids, backend_id));

	return w ? w->inline4 : 0;
}

struct km_model_wl *mdl_wl_find(const struct km_model *m, const char *uid)
{
	struct km_model_wl *w = mdl_wl_of_owner((uintptr_t)km_ids_owner(&m->ids, km_ids_home(&m->ids, uid)));
	struct mdl_displaced *d;

	if (w && km_workload_uid_is(w->res, uid))
		return w;
	HASH_FIND_STR(m->displaced, uid, d);
	return d ? d->w : NULL;
}

void mdl_wl_drop_version(struct km_model_wl *w)
{
	km_xds_version_clear(&w->version, &w->version_kind, &w->version_width);
}

void mdl_wl_set_version(struct km_model_wl *w, const char *version)
{
	/* without memory the old version stays: istiod resends, nothing is lost */
	(void)km_xds_version_set(&w->version, &w->version_kind, &w->version_width, version);
}

/* A new workload: its id, and its displaced entry if the id is not the home one. */
int mdl_wl_add(struct km_model *m, struct km_model_wl *w, const char *uid)
{
	struct mdl_displaced *d;

	if (!(w->id = km_ids_alloc(&m->ids, uid, (void *)((uintptr_t)w | MDL_OWNER_WORKLOAD))))
		return -1;
	if (w->id == km_ids_home(&m->ids, uid))
		return 0;
	if (!(d = calloc(1, sizeof(*d))) || !(d->uid = strdup(uid))) {
		free(d);
		km_ids_release(&m->ids, w->id);
		return -1;
	}
	d->w = w;
	HASH_ADD_KEYPTR(hh, m->displaced, d->uid, strlen(d->uid), d);
	return 0;
}

void mdl_wl_del(struct km_model *m, struct km_model_wl *w)
{
	struct mdl_displaced *d;
	char ubuf[KM_UID_BUF];
	const char *uid = km_workload_uid(w->res, ubuf);

	if (w->id != km_ids_home(&m->ids, uid)) {
		HASH_FIND_STR(m->displaced, uid, d);
		if (d) {
			HASH_DEL(m->displaced, d);
			free(d->uid);
			free(d);
		}
	}
	km_ids_release(&m->ids, w->id);
}

int mdl_service_p2c(const struct km_model *m, const struct km_model_svc *s)
{
	if (m->p2c_all)
		return 1;
	for (size_t i = 0; i < m->n_p2c_names; i++)
		if (!strcmp(m->p2c_names[i], s->name))
			return 1;
	return 0;
}

const struct km_workload_res *km_model_find_workload(const struct km_model *m, const char *uid)
{
	struct km_model_wl *w = mdl_wl_find(m, uid);

	return w ? w->res : NULL;
}

const struct km_workload_res *km_model_workload_by_id(const struct km_model *m, uint32_t id)
{
	struct km_model_wl *w = mdl_workload_by_id(m, id);

	return w ? w->res : NULL;
}

void km_model_each_workload(const struct km_model *m, km_model_name_cb cb, void *arg)
{
	struct km_model_wl *w;
	char ubuf[KM_UID_BUF];

	for (size_t i = 0; i < m->ids.cap; i++)
		if ((w = mdl_wl_at(m, i)) && cb(arg, km_workload_uid(w->res, ubuf)))
			return;
}


size_t km_model_service_address_bound(const struct km_model *m, const char *name)
{
	const struct km_model_svc *s = mdl_svc_find(m, name);
	size_t n = 0;

	if (!s || !s->res)
		return 0;
	if (s->res->n_vips)
		return s->res->n_vips;
	for (size_t i = 0; i < s->n_members; i++)
		if (s->members[i]->res)
			n += s->members[i]->res->n_addrs;
	return n;
}

static int addr_at_cmp(const void *x, const void *y, void *arg)
{
	const struct km_addr *a = arg;
	uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
	int c = memcmp(&a[i], &a[j], sizeof(*a));

	return c ? c : (i > j) - (i < j);
}

/* Each address of a[0..n) once, the first of equal ones kept where it was: O(n log n) (a
 * headless service may have thousands of pods). Returns the new count; n unchanged when out of
 * memory (duplicates then stay: an answer with a repeated address is still a valid one). */
static size_t addrs_dedupe(struct km_addr *a, size_t n)
{
	uint32_t *idx;
	uint8_t *dup;
	size_t k = 0;

	if (n <= 32) { /* the common case: no allocation */
		for (size_t i = 0; i < n; i++) {
			size_t j = 0;

			while (j < k && memcmp(&a[j], &a[i], sizeof(*a)))
				j++;
			if (j == k)
				a[k++] = a[i];
		}
		return k;
	}
	if (n > UINT32_MAX || !(idx = malloc(n * sizeof(*idx))))
		return n;
	if (!(dup = calloc(n, 1))) {
		free(idx);
		return n;
	}
	for (size_t i = 0; i < n; i++)
		idx[i] = (uint32_t)i;
	qsort_r(idx, n, sizeof(*idx), addr_at_cmp, a);
	for (size_t i = 1; i < n; i++)
		if (!memcmp(&a[idx[i]], &a[idx[i - 1]], sizeof(*a)))
			dup[idx[i]] = 1; /* sorted by index among equals: idx[i - 1] came first */
	for (size_t i = 0; i < n; i++)
		if (!dup[i])
			a[k++] = a[i];
	free(dup);
	free(idx);
	return k;
}

int km_model_service_addresses(const struct km_model *m, const char *name, int v4,
			       struct km_addr *out, size_t max)
{
	const struct km_model_svc *s = mdl_svc_find(m, name);
	size_t n = 0;

	if (!s || !s->res)
		return -1;
	for (size_t i = 0; i < s->res->n_vips && n < max; i++)
		if (km_addr_is_v4(&s->res->vips[i]) == v4)
			out[n++] = s->res->vips[i];
	if (s->res->n_vips)
		return (int)n;
	/* headless: the pods themselves, each address once (a workload reached by name repeats
	 * its shorter family's addresses in its derived entries: model_resolved.c; two pods of
	 * the host's network share the node's) */
	for (size_t i = 0; i < s->n_members && n < max; i++) {
		const struct km_workload_res *w = s->members[i]->res;

		if (!w || w->status != KM_WORKLOAD_HEALTHY)
			continue;
		for (size_t a = 0; a < w->n_addrs && n < max; a++)
			if (km_addr_is_v4(&w->addrs[a]) == v4)
				out[n++] = w->addrs[a];
	}
	n = addrs_dedupe(out, n);
	return n > INT32_MAX ? INT32_MAX : (int)n;
}

static int tell_service(void *arg, const char *name)
{
	struct km_model *m = arg;
	const struct km_model_svc *s = mdl_svc_find(m, name);

	if (s && s->res)
		m->on_service(m->on_service_arg, s->res, 1);
	return 0;
}

void km_model_watch_services(struct km_model *m,
			     void (*f)(void *arg, const struct km_service_res *r, int add), void *arg)
{
	m->on_service = f;
	m->on_service_arg = arg;
	if (f)
		km_model_each_service(m, tell_service, m);
}
