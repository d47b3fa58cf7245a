/* fe_pick.c — a service's uniform pick copied into its frontend rows (see fe_pick.h). */
#include "services/map-writer/fe_pick.h"

#include <errno.h>
#include <string.h>

#include <bpf/bpf.h>

#include "shared/log.h"

/* services: a service's pick and how many frontend rows name it. */
struct pick_service {
	uint32_t base, count; /* count 0: no uniform pick */
	uint32_t n_fronts;
};
/* members: (service id, ordinal 0..n_fronts-1) -> the frontend key; fronts: frontend key ->
 * (service id, ordinal). A row leaving a service swaps the service's last member into its
 * place. */
struct member_key {
	uint32_t service_id, ordinal;
};

void km_fe_pick_init(struct km_fe_pick *p, int fd_frontend, int fd_service)
{
	memset(p, 0, sizeof(*p));
	p->fd_frontend = fd_frontend;
	p->fd_service = fd_service;
	km_keyset_init_values(&p->services, sizeof(uint32_t), sizeof(struct pick_service));
	km_keyset_init_values(&p->members, sizeof(struct member_key), sizeof(struct km_frontend_key));
	km_keyset_init_values(&p->fronts, sizeof(struct km_frontend_key), sizeof(struct member_key));
}

void km_fe_pick_free(struct km_fe_pick *p)
{
	km_keyset_free(&p->services);
	km_keyset_free(&p->members);
	km_keyset_free(&p->fronts);
}

int km_fe_pick_of(const struct km_service_value *v, uint32_t *base, uint32_t *count)
{
	uint32_t g = 0;

	*base = *count = 0;
	if (v->waypoint.port || v->lb_mode == KM_LB_PASSTHROUGH || (v->flags & KM_SVC_F_P2C))
		return 0;
	if (v->lb_mode == KM_LB_FAILOVER) /* as lb.h: the first group with endpoints */
		while (g < KM_PRIO_COUNT - 1 && v->endpoint_count[g] == 0)
			g++;
	if (v->endpoint_count[g] == 0 || v->weight_total[g] > v->endpoint_count[g] ||
	    v->slot_base[g] == KM_SLOT_NONE)
		return 0;
	*base = v->slot_base[g];
	*count = v->endpoint_count[g];
	return 1;
}

/* Key set values are unaligned: copied in and out. */
static int load_service(const struct km_fe_pick *p, uint32_t id, struct pick_service *s)
{
	const void *v = km_keyset_value(&p->services, &id);

	if (!v)
		return 0;
	memcpy(s, v, sizeof(*s));
	return 1;
}

static void store_service(struct km_fe_pick *p, uint32_t id, const struct pick_service *s)
{
	void *v = km_keyset_value(&p->services, &id);

	if (v)
		memcpy(v, s, sizeof(*s));
}

static void set_pick(struct km_frontend_value *v, uint32_t base, uint32_t count)
{
	v->flags = (uint16_t)(count ? v->flags | KM_FE_F_PICK : v->flags & ~KM_FE_F_PICK);
	v->pick_base = count ? base : 0;
	v->pick_count = count;
}

/* Follow a service not followed yet: its pick from its row in km_service (none if absent). */
static void follow_service(struct km_fe_pick *p, uint32_t id)
{
	struct km_service_key k = { .service_id = id };
	struct km_service_value v;

	if (p->fd_service >= 0 && bpf_map_lookup_elem(p->fd_service, &k, &v) == 0)
		km_fe_pick_service(p, id, &v, 0);
}

void km_fe_pick_fill(struct km_fe_pick *p, struct km_frontend_value *v)
{
	struct pick_service s = { 0 };

	if (!p->lost && v->kind == KM_FRONTEND_SERVICE && !load_service(p, v->upstream_id, &s)) {
		follow_service(p, v->upstream_id);
		load_service(p, v->upstream_id, &s);
	}
	if (p->lost || v->kind != KM_FRONTEND_SERVICE)
		s.count = 0;
	set_pick(v, s.base, s.count);
}

static void lose(struct km_fe_pick *p);

/* The frontend row k no longer names the service it was indexed under. */
static void unlink_front(struct km_fe_pick *p, const struct km_frontend_key *k)
{
	const void *fv = km_keyset_value(&p->fronts, k);
	struct member_key m, last;
	struct pick_service s;
	struct km_frontend_key moved;
	void *slot;

	if (!fv)
		return;
	memcpy(&m, fv, sizeof(m));
	km_keyset_del(&p->fronts, k);
	if (!load_service(p, m.service_id, &s) || s.n_fronts == 0)
		return;
	last = (struct member_key){ m.service_id, s.n_fronts - 1 };
	if (last.ordinal != m.ordinal) { /* the last member takes the freed ordinal */
		memcpy(&moved, km_keyset_value(&p->members, &last), sizeof(moved));
		memcpy(km_keyset_value(&p->members, &m), &moved, sizeof(moved));
		if ((slot = km_keyset_value(&p->fronts, &moved)))
			memcpy(slot, &m, sizeof(m));
	}
	km_keyset_del(&p->members, &last);
	s.n_fronts--;
	if (s.n_fronts == 0 && s.count == 0)
		km_keyset_del(&p->services, &m.service_id); /* neither a row nor a pick to keep */
	else
		store_service(p, m.service_id, &s);
}

void km_fe_pick_frontend(struct km_fe_pick *p, const struct km_frontend_key *k,
			 const struct km_frontend_value *v)
{
	struct pick_service s = { 0 };
	struct member_key m;

	if (p->lost)
		return;
	unlink_front(p, k);
	if (!v || v->kind != KM_FRONTEND_SERVICE)
		return;
	if (!load_service(p, v->upstream_id, &s) && km_keyset_add(&p->services, &v->upstream_id) != 0)
		goto no_memory;
	m = (struct member_key){ v->upstream_id, s.n_fronts };
	if (km_keyset_add(&p->members, &m) != 0)
		goto no_memory;
	if (km_keyset_add(&p->fronts, k) != 0) {
		km_keyset_del(&p->members, &m);
		goto no_memory;
	}
	memcpy(km_keyset_value(&p->members, &m), k, sizeof(*k));
	memcpy(km_keyset_value(&p->fronts, k), &m, sizeof(m));
	s.n_fronts++;
	store_service(p, v->upstream_id, &s);
	return;
no_memory:
	lose(p);
}

/* Rewrite frontend row k with the pick (base, count). Returns 1 if it was rewritten. */
static int rewrite_front(struct km_fe_pick *p, const struct km_frontend_key *k, uint32_t base,
			 uint32_t count)
{
	struct km_frontend_value v;

	if (bpf_map_lookup_elem(p->fd_frontend, k, &v) != 0)
		return 0; /* gone already (a sync sweep deletes it next) */
	if (((v.flags & KM_FE_F_PICK) != 0) == (count != 0) && v.pick_base == (count ? base : 0) &&
	    v.pick_count == count)
		return 0;
	set_pick(&v, base, count);
	if (bpf_map_update_elem(p->fd_frontend, k, &v, BPF_EXIST) == 0) {
		p->rows_rewritten++;
		return 1;
	}
	/* an update of a present key allocates only its new element: so rare that it is logged,
	 * and the row is deleted rather than left naming a range that may be reused */
	p->rewrite_failed++;
	km_error("km_frontend: cannot rewrite a row's pick (%s); removing the row until the xDS "
		 "agent writes it again", strerror(errno));
	bpf_map_delete_elem(p->fd_frontend, k);
	return 0;
}

/* Indexing failed for want of memory: from now on no row carries a pick. Rows written before
 * would keep theirs only until their service changes, which cannot be followed any more: they
 * are cleared now (a row that cannot be rewritten goes, as in rewrite_front). */
static void lose(struct km_fe_pick *p)
{
	struct km_frontend_key k, next;
	const void *prev = NULL;

	if (p->lost)
		return;
	p->lost = 1;
	km_error("km_frontend: no memory to follow the services' picks; connects read the service "
		 "rows from now on (slower, still correct)");
	while (p->fd_frontend >= 0 && bpf_map_get_next_key(p->fd_frontend, prev, &next) == 0) {
		rewrite_front(p, &next, 0, 0);
		k = next;
		prev = &k;
	}
}

static unsigned rewrite_service(struct km_fe_pick *p, uint32_t id, const struct pick_service *s)
{
	unsigned n = 0;

	for (uint32_t i = 0; i < s->n_fronts; i++) {
		struct member_key m = { id, i };
		const void *kv = km_keyset_value(&p->members, &m);
		struct km_frontend_key k;

		if (!kv)
			continue;
		memcpy(&k, kv, sizeof(k));
		n += (unsigned)rewrite_front(p, &k, s->base, s->count);
	}
	return n;
}

void km_fe_pick_service(struct km_fe_pick *p, uint32_t service_id, const struct km_service_value *v,
			int rewrite)
{
	struct pick_service s = { 0 }, old;
	int had = load_service(p, service_id, &old);

	if (p->lost)
		return;
	if (v)
		km_fe_pick_of(v, &s.base, &s.count);
	if (!had) {
		if (s.count == 0)
			return; /* no pick and no frontend row: nothing to keep */
		if (km_keyset_add(&p->services, &service_id) != 0) {
			lose(p);
			return;
		}
		old = (struct pick_service){ 0 };
	}
	s.n_fronts = old.n_fronts;
	if (s.base == old.base && s.count == old.count)
		return;
	store_service(p, service_id, &s);
	if (rewrite)
		rewrite_service(p, service_id, &s);
	if (s.count == 0 && s.n_fronts == 0)
		km_keyset_del(&p->services, &service_id);
}

unsigned km_fe_pick_recheck(struct km_fe_pick *p)
{
	struct km_frontend_key k, next;
	struct km_frontend_value v;
	const void *prev = NULL;
	unsigned n = 0;

	if (p->fd_frontend < 0)
		return 0;
	while (!p->lost && bpf_map_get_next_key(p->fd_frontend, prev, &next) == 0) {
		if (bpf_map_lookup_elem(p->fd_frontend, &next, &v) == 0) {
			struct km_frontend_value want = v;

			km_fe_pick_frontend(p, &next, &v);
			if (v.kind == KM_FRONTEND_SERVICE) /* its row, read now: the ranges are settled */
				follow_service(p, v.upstream_id);
			km_fe_pick_fill(p, &want);
			if (want.flags != v.flags || want.pick_base != v.pick_base ||
			    want.pick_count != v.pick_count)
				n += (unsigned)rewrite_front(p, &next, want.pick_base, want.pick_count);
		}
		k = next;
		prev = &k;
	}
	return n;
}
