/* model_frontends.c — who holds each frontend key, and whose row the table carries.
 *
 * A frontend row is keyed by (address, port) alone: port 0 for a pod IP, the service port for a
 * VIP. Pods reuse IPs and a VIP can move between services, so for a while two resources may hold
 * one key (the new pod listed before the old one's removal, in one response or two). The model
 * keeps every holder of every key here; the row always carries the holder with the smallest
 * name, whatever the order the changes came in, and when a holder lets go the row is handed to
 * the next one instead of being deleted under it.
 *
 * The index is an open-addressing table (linear probing, backward-shift deletion): 32 bytes a
 * slot, one holder inline; a key held by several points at an array (rare). A holder is a tagged
 * entry pointer (MDL_OWNER_WORKLOAD marks a workload). */
#include "services/xds-agent/model/model_internal.h"

#include <stdlib.h>
#include <string.h>

struct mdl_fe_slot {
	struct km_addr addr;
	uint16_t port;
	uint16_t cap;  /* of many; 0 while the holder is inline */
	uint32_t n;    /* holders; 0 = free slot */
	union {
		uintptr_t one;
		uintptr_t *many;
	};
};

#define FE_MIN_CAP 64

static size_t fe_hash(const struct km_addr *a, uint16_t port, size_t mask)
{
	uint64_t w[2], h;

	memcpy(w, a, sizeof(w));
	h = (w[0] * 0x9e3779b97f4a7c15ull) ^ (w[1] + port) * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return (size_t)h & mask;
}

static int fe_key_eq(const struct mdl_fe_slot *s, const struct km_addr *a, uint16_t port)
{
	return s->n && s->port == port && memcmp(&s->addr, a, sizeof(*a)) == 0;
}

static struct mdl_fe_slot *fe_find(const struct km_model *m, const struct km_addr *a, uint16_t port)
{
	size_t mask = m->fe_cap - 1;

	if (!m->fe_cap)
		return NULL;
	for (size_t i = fe_hash(a, port, mask);; i = (i + 1) & mask) {
		if (!m->fe_slots[i].n)
			return NULL;
		if (fe_key_eq(&m->fe_slots[i], a, port))
			return &m->fe_slots[i];
	}
}

static const uintptr_t *fe_holders(const struct mdl_fe_slot *s)
{
	return s->cap ? s->many : &s->one;
}

static int fe_grow(struct km_model *m)
{
	size_t cap = m->fe_cap ? m->fe_cap * 2 : FE_MIN_CAP, mask = cap - 1;
	struct mdl_fe_slot *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -1;
	for (size_t i = 0; i < m->fe_cap; i++) {
		size_t j;

		if (!m->fe_slots[i].n)
			continue;
		for (j = fe_hash(&m->fe_slots[i].addr, m->fe_slots[i].port, mask); slots[j].n;
		     j = (j + 1) & mask)
			;
		slots[j] = m->fe_slots[i];
	}
	free(m->fe_slots);
	m->fe_slots = slots;
	m->fe_cap = cap;
	return 0;
}

/* Add h to the holders of (a, port). Returns 0, or -1 without memory. */
static int fe_hold(struct km_model *m, const struct km_addr *a, uint16_t port, uintptr_t h)
{
	struct mdl_fe_slot *s = fe_find(m, a, port);
	size_t mask, i;

	if (s) {
		const uintptr_t *hs = fe_holders(s);

		for (uint32_t k = 0; k < s->n; k++)
			if (hs[k] == h)
				return 0;
		if (s->n >= s->cap) {
			size_t cap = s->cap ? (size_t)s->cap * 2 : 4;
			uintptr_t *many = cap <= UINT16_MAX ? malloc(cap * sizeof(*many)) : NULL;

			if (!many)
				return -1;
			memcpy(many, hs, s->n * sizeof(*many));
			if (s->cap)
				free(s->many);
			s->many = many;
			s->cap = (uint16_t)cap;
		}
		s->many[s->n++] = h;
		return 0;
	}
	if ((m->fe_used + 1) * 4 > m->fe_cap * 3 && fe_grow(m) != 0)
		return -1;
	mask = m->fe_cap - 1;
	for (i = fe_hash(a, port, mask); m->fe_slots[i].n; i = (i + 1) & mask)
		;
	s = &m->fe_slots[i];
	s->addr = *a;
	s->port = port;
	s->cap = 0;
	s->n = 1;
	s->one = h;
	m->fe_used++;
	return 0;
}

/* Empty slot i, moving later entries of its probe run back so lookups still find them. */
static void fe_vacate(struct km_model *m, size_t i)
{
	size_t mask = m->fe_cap - 1, j = i;

	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!m->fe_slots[j].n)
			break;
		home = fe_hash(&m->fe_slots[j].addr, m->fe_slots[j].port, mask);
		/* j may move to i unless its home lies cyclically in (i, j] */
		if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
			continue;
		m->fe_slots[i] = m->fe_slots[j];
		i = j;
	}
	memset(&m->fe_slots[i], 0, sizeof(m->fe_slots[i]));
	m->fe_used--;
}

static void fe_release(struct km_model *m, const struct km_addr *a, uint16_t port, uintptr_t h)
{
	struct mdl_fe_slot *s = fe_find(m, a, port);

	if (!s)
		return;
	if (!s->cap) {
		if (s->one == h)
			fe_vacate(m, (size_t)(s - m->fe_slots));
		return;
	}
	for (uint32_t k = 0; k < s->n; k++) {
		if (s->many[k] != h)
			continue;
		s->many[k] = s->many[--s->n];
		if (s->n == 1) { /* back to inline */
			uintptr_t last = s->many[0];

			free(s->many);
			s->cap = 0;
			s->one = last;
		}
		return;
	}
}

/* A holder's name (a workload's uid written into buf when it keeps it split). */
static const char *holder_name(uintptr_t h, char *buf)
{
	return h & MDL_OWNER_WORKLOAD ? km_workload_uid(mdl_owner_workload(h)->res, buf)
				      : ((const struct km_model_svc *)h)->name;
}

/* The holder whose row (a, port) carries: the smallest name; 0 if nobody holds it. */
static uintptr_t fe_winner(const struct km_model *m, const struct km_addr *a, uint16_t port)
{
	const struct mdl_fe_slot *s = fe_find(m, a, port);
	const uintptr_t *hs;
	uintptr_t best;
	char a_buf[KM_UID_BUF], b_buf[KM_UID_BUF];

	if (!s)
		return 0;
	hs = fe_holders(s);
	best = hs[0];
	for (uint32_t k = 1; k < s->n; k++)
		if (strcmp(holder_name(hs[k], a_buf), holder_name(best, b_buf)) < 0)
			best = hs[k];
	return best;
}

/* ---- rows ---------------------------------------------------------------------------------- */

static void put_service_row(struct km_model *m, const struct km_model_svc *s,
			    const struct km_addr *vip, uint16_t port, uint32_t target)
{
	struct km_op *op = km_oplist_add(m->out, KM_OP_FRONTEND, 0);

	if (!op)
		return;
	op->fe.addr = *vip;
	op->fe.port = port;
	op->fe.kind = KM_FRONTEND_SERVICE;
	op->fe.upstream_id = s->id;
	op->fe.target_port = (uint16_t)(target ? target : port);
	op->fe.flags = s->fe_flag_written ? KM_FE_F_PORT_OVERRIDES : 0;
}

static void put_workload_row(struct km_model *m, const struct km_model_wl *w,
			     const struct km_addr *addr)
{
	struct km_op *op = km_oplist_add(m->out, KM_OP_FRONTEND, 0);

	if (!op)
		return;
	op->fe.addr = *addr;
	op->fe.kind = KM_FRONTEND_WORKLOAD;
	op->fe.upstream_id = w->id;
}

/* The key lost a holder: write the row of the next one, or delete it if none is left. */
static void hand_over(struct km_model *m, const struct km_addr *a, uint16_t port)
{
	uintptr_t next = fe_winner(m, a, port);
	struct km_op *op;

	if (next & MDL_OWNER_WORKLOAD) {
		put_workload_row(m, mdl_owner_workload(next), a);
	} else if (next) {
		const struct km_model_svc *s = (const struct km_model_svc *)next;

		put_service_row(m, s, a, port, km_target_port(s->res, NULL, NULL, port));
	} else if ((op = km_oplist_add(m->out, KM_OP_FRONTEND, 1))) {
		op->fe.addr = *a;
		op->fe.port = port;
		op->fe.kind = port ? KM_FRONTEND_SERVICE : KM_FRONTEND_WORKLOAD;
	}
}

/* Hold the key; 1 if h's row is the one to write. Without memory the row is written anyway
 * (routing stays right; the oplist's oom asks for a full rewrite). */
static int take(struct km_model *m, const struct km_addr *a, uint16_t port, uintptr_t h)
{
	if (fe_hold(m, a, port, h) != 0) {
		m->out->oom = 1;
		return 1;
	}
	return fe_winner(m, a, port) == h;
}

void mdl_emit_service_frontend(struct km_model *m, const struct km_model_svc *s,
			       const struct km_addr *vip, const struct km_port *port, int del)
{
	uint16_t sp = (uint16_t)port->service_port;

	if (del) {
		fe_release(m, vip, sp, (uintptr_t)s);
		hand_over(m, vip, sp);
	} else if (take(m, vip, sp, (uintptr_t)s)) {
		put_service_row(m, s, vip, sp, port->target_port);
	}
}

void mdl_emit_service_frontends(struct km_model *m, const struct km_model_svc *s, int del)
{
	for (size_t v = 0; v < s->res->n_vips; v++)
		for (size_t p = 0; p < s->res->n_ports; p++)
			mdl_emit_service_frontend(m, s, &s->res->vips[v], &s->res->ports[p], del);
}

void mdl_emit_workload_frontend(struct km_model *m, const struct km_model_wl *w,
				const struct km_addr *addr, int del)
{
	uintptr_t h = (uintptr_t)w | MDL_OWNER_WORKLOAD;

	if (del) {
		fe_release(m, addr, 0, h);
		hand_over(m, addr, 0);
	} else if (take(m, addr, 0, h)) {
		put_workload_row(m, w, addr);
	}
}

void mdl_frontends_free(struct km_model *m)
{
	for (size_t i = 0; i < m->fe_cap; i++)
		if (m->fe_slots[i].n && m->fe_slots[i].cap)
			free(m->fe_slots[i].many);
	free(m->fe_slots);
	m->fe_slots = NULL;
	m->fe_cap = m->fe_used = 0;
}
