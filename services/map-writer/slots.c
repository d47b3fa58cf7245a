/* slots.c — placing each service's endpoint rows in km_slot (see slots.h). */
#include "services/map-writer/slots.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "shared/log.h"

#define NONE KM_SLOT_NONE
_Static_assert(KM_SLOT_NONE == KM_SLOT_ALLOC_NONE, "one 'no slot' value");
_Static_assert(sizeof(struct km_endpoint_value) == 2 * sizeof(uint64_t),
	       "a slot is two words: (backend id, addr4) and the cumulative weight");
_Static_assert(offsetof(struct km_endpoint_value, addr4) == 4 &&
		       offsetof(struct km_endpoint_value, cum_weight) == 8,
	       "the first word of a slot is backend id then addr4");

struct pair_key {
	uint32_t service_id, prio;
};

/* One (service, priority): the range its service row names and the range its rows are written
 * to (the same, except between a growth and the next service row write). */
struct km_slots_pair {
	uint32_t live;         /* the service row's slot_base (NONE: none) */
	uint32_t cur;          /* where rows are written (NONE: none) */
	uint32_t rows;         /* the pair's rows in km_endpoint */
	uint8_t live_order, cur_order;
	uint8_t cur_was_live;  /* a service row has named cur: released through quarantine */
	uint8_t refused;       /* no range could be had: km_endpoint until the pair empties */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int km_slots_enabled(const struct km_slots *s)
{
	return s->mem != NULL;
}

static int load_pair(const struct km_slots *s, uint32_t svc, uint32_t prio, struct km_slots_pair *p)
{
	struct pair_key k = { svc, prio };
	const void *v = km_keyset_value(&s->pairs, &k);

	if (!v)
		return 0;
	memcpy(p, v, sizeof(*p)); /* key set values are unaligned */
	return 1;
}

/* ---- releasing ranges ------------------------------------------------------------------------ */

static void drain_quarantine(struct km_slots *s, uint64_t now)
{
	while (s->q_head < s->q_len && s->q[s->q_head].until_ns <= now) {
		km_slot_alloc_put(&s->alloc, s->q[s->q_head].base, s->q[s->q_head].order);
		s->q_head++;
	}
	if (s->q_head == s->q_len)
		s->q_head = s->q_len = 0;
}

/* A range no row names any more; one a service row named waits out the quarantine. */
static void release(struct km_slots *s, uint32_t base, uint8_t order, int was_live)
{
	if (!was_live) {
		km_slot_alloc_put(&s->alloc, base, order);
		return;
	}
	if (s->q_len == s->q_cap) {
		if (s->q_head) { /* room at the front */
			memmove(s->q, s->q + s->q_head, (s->q_len - s->q_head) * sizeof(*s->q));
			s->q_len -= s->q_head;
			s->q_head = 0;
		} else {
			size_t cap = s->q_cap ? s->q_cap * 2 : 64;
			void *q = realloc(s->q, cap * sizeof(*s->q));

			if (!q) { /* kept for good rather than reused too soon */
				km_warn("km_slot: no memory to queue a freed range of %u slots; "
					"it stays unused", 1u << order);
				return;
			}
			s->q = q;
			s->q_cap = cap;
		}
	}
	s->q[s->q_len++] = (struct km_slots_quarantined){
		.base = base,
		.order = order,
		.until_ns = now_ns() + (uint64_t)KM_SLOTS_QUARANTINE_MS * 1000000u,
	};
}

/* Keep the pair, or forget it once it has no rows and no service row names a range of it. */
static void save_pair(struct km_slots *s, uint32_t svc, uint32_t prio, struct km_slots_pair *p)
{
	struct pair_key k = { svc, prio };
	void *v;

	if (p->rows == 0 && p->live == NONE) {
		if (p->cur != NONE)
			release(s, p->cur, p->cur_order, p->cur_was_live);
		km_keyset_del(&s->pairs, &k);
		return;
	}
	if (km_keyset_add(&s->pairs, &k) != 0 || !(v = km_keyset_value(&s->pairs, &k))) {
		/* no memory: a range not yet named goes back, and the pair reads km_endpoint (its
		 * service row is filled from this set); a named one stays unused */
		if (p->cur != NONE && p->cur != p->live && !p->cur_was_live)
			km_slot_alloc_put(&s->alloc, p->cur, p->cur_order);
		if (!s->lost)
			km_warn("km_slot: no memory to record service %u's ranges; from now on every "
				"service row is written to read km_endpoint", svc);
		s->lost = 1;
		return;
	}
	memcpy(v, p, sizeof(*p));
}

/* ---- the slots themselves -------------------------------------------------------------------- */

static void store(struct km_slots *s, uint32_t slot, const struct km_endpoint_value *v)
{
	uint64_t word = (uint64_t)v->backend_id | (uint64_t)v->addr4 << 32;

	__atomic_store_n(&s->mem[2 * (size_t)slot + 1], (uint64_t)v->cum_weight, __ATOMIC_RELAXED);
	__atomic_store_n(&s->mem[2 * (size_t)slot], word, __ATOMIC_RELEASE);
}

static void store_pair(struct km_slots *s, const struct km_slots_pair *p, uint32_t index,
		       const struct km_endpoint_value *v)
{
	static const struct km_endpoint_value zero;

	if (!v)
		v = &zero;
	if (p->cur != NONE && index < (1u << p->cur_order))
		store(s, p->cur + index, v);
	if (p->live != NONE && p->live != p->cur && index < (1u << p->live_order))
		store(s, p->live + index, v);
}

/* Make cur hold index: a first range, or one twice as big with the old one's slots. */
static void place(struct km_slots *s, uint32_t svc, struct km_slots_pair *p, uint32_t index)
{
	uint8_t need = km_slot_order_for(index + 1), order;
	uint32_t base;

	if (p->cur != NONE && need <= p->cur_order)
		return;
	order = p->cur == NONE || need > p->cur_order + 1 ? need : (uint8_t)(p->cur_order + 1);
	drain_quarantine(s, now_ns());
	base = km_slot_alloc_get(&s->alloc, order);
	if (base == NONE) {
		if (s->ranges_refused++ < 8 || (s->ranges_refused & (s->ranges_refused - 1)) == 0)
			km_warn("km_slot: no free range of %u slots for service %u (%llu refused so "
				"far); it reads km_endpoint, which is slower. Raise --max-endpoints.",
				1u << order, svc, (unsigned long long)s->ranges_refused);
		if (p->cur != NONE && p->cur != p->live)
			release(s, p->cur, p->cur_order, p->cur_was_live);
		p->cur = NONE;
		p->refused = 1;
		return;
	}
	memset(&s->mem[2 * (size_t)base], 0, sizeof(struct km_endpoint_value) << order);
	if (p->cur != NONE) {
		memcpy(&s->mem[2 * (size_t)base], &s->mem[2 * (size_t)p->cur],
		       sizeof(struct km_endpoint_value) << p->cur_order);
		if (p->cur != p->live) /* never named by a service row: no reader can be in it */
			release(s, p->cur, p->cur_order, p->cur_was_live);
		s->ranges_grown++;
	}
	p->cur = base;
	p->cur_order = order;
	p->cur_was_live = 0;
	s->ranges_made++;
}

void km_slots_endpoint(struct km_slots *s, const struct km_endpoint_key *k,
		       const struct km_endpoint_value *v, int was_present)
{
	struct km_slots_pair p;

	if (!km_slots_enabled(s) || k->prio >= KM_PRIO_COUNT)
		return;
	if (!load_pair(s, k->service_id, k->prio, &p)) {
		if (!v)
			return;
		memset(&p, 0, sizeof(p));
		p.live = p.cur = NONE;
	}
	if (v) {
		if (!was_present)
			p.rows++;
		if (!p.refused)
			place(s, k->service_id, &p, k->index);
		s->rows_placed++;
	} else if (was_present && p.rows) {
		p.rows--;
	}
	store_pair(s, &p, k->index, v);
	save_pair(s, k->service_id, k->prio, &p);
}

/* ---- service rows ---------------------------------------------------------------------------- */

void km_slots_fill_service(struct km_slots *s, uint32_t service_id, struct km_service_value *v)
{
	for (uint32_t prio = 0; prio < KM_PRIO_COUNT; prio++) {
		struct km_slots_pair p;

		v->slot_base[prio] = NONE;
		v->slot_order[prio] = 0;
		/* a group whose rows are all gone names no range: it goes back (after the
		 * quarantine) once this row is written */
		if (!km_slots_enabled(s) || s->lost || !load_pair(s, service_id, prio, &p) || p.cur == NONE ||
		    p.refused || p.rows == 0 || v->endpoint_count[prio] > (1u << p.cur_order))
			continue;
		v->slot_base[prio] = p.cur;
		v->slot_order[prio] = p.cur_order;
	}
}

void km_slots_service(struct km_slots *s, uint32_t service_id, const struct km_service_value *v)
{
	if (!km_slots_enabled(s))
		return;
	for (uint32_t prio = 0; prio < KM_PRIO_COUNT; prio++) {
		uint32_t named = v ? v->slot_base[prio] : NONE;
		struct km_slots_pair p;

		if (!load_pair(s, service_id, prio, &p))
			continue;
		if (p.live != NONE && p.live != named && p.live != p.cur)
			release(s, p.live, p.live_order, 1);
		p.live = named;
		p.live_order = named == NONE ? 0 : v->slot_order[prio];
		if (named != NONE && named == p.cur)
			p.cur_was_live = 1;
		save_pair(s, service_id, prio, &p);
	}
}

unsigned km_slots_repoint_services(struct km_slots *s)
{
	struct km_service_key k, cur;
	struct km_service_value v, filled;
	const void *prev = NULL;
	unsigned n = 0;

	if (!km_slots_enabled(s))
		return 0;
	while (bpf_map_get_next_key(s->fd_service, prev, &cur) == 0) {
		k = cur;
		prev = &k;
		if (bpf_map_lookup_elem(s->fd_service, &k, &v) != 0)
			continue;
		filled = v;
		km_slots_fill_service(s, k.service_id, &filled);
		if (!memcmp(filled.slot_base, v.slot_base, sizeof(v.slot_base)) &&
		    !memcmp(filled.slot_order, v.slot_order, sizeof(v.slot_order)))
			continue;
		if (bpf_map_update_elem(s->fd_service, &k, &filled, BPF_EXIST) != 0) {
			km_warn("km_slot: cannot point service %u at its slots: %s", k.service_id,
				strerror(errno));
			continue;
		}
		km_slots_service(s, k.service_id, &filled);
		n++;
	}
	return n;
}

/* ---- opening: the ranges the service rows name ----------------------------------------------- */

static int recover(struct km_slots *s)
{
	struct km_service_key k, cur;
	struct km_service_value v;
	const void *prev = NULL;
	unsigned ranges = 0, bad = 0;

	while (bpf_map_get_next_key(s->fd_service, prev, &cur) == 0) {
		int dirty = 0;

		k = cur;
		prev = &k;
		if (bpf_map_lookup_elem(s->fd_service, &k, &v) != 0)
			continue;
		for (uint32_t prio = 0; prio < KM_PRIO_COUNT; prio++) {
			struct km_slots_pair p = { .live = v.slot_base[prio], .cur = v.slot_base[prio],
						   .live_order = v.slot_order[prio],
						   .cur_order = v.slot_order[prio], .cur_was_live = 1 };
			struct pair_key pk = { k.service_id, prio };
			void *val;

			if (p.live == NONE)
				continue;
			if (km_slot_alloc_reserve(&s->alloc, p.live, p.live_order) != 0) {
				v.slot_base[prio] = NONE; /* invalid or overlapping: km_endpoint */
				v.slot_order[prio] = 0;
				dirty = 1;
				bad++;
				continue;
			}
			if (km_keyset_add(&s->pairs, &pk) != 0 || !(val = km_keyset_value(&s->pairs, &pk)))
				return -1;
			memcpy(val, &p, sizeof(p));
			ranges++;
		}
		if (dirty && bpf_map_update_elem(s->fd_service, &k, &v, BPF_EXIST) != 0)
			km_warn("km_slot: cannot clear service %u's invalid ranges: %s", k.service_id,
				strerror(errno));
	}
	if (ranges || bad)
		km_info("km_slot: %u ranges named by the service rows%s", ranges,
			bad ? "; some were invalid or overlapping and read km_endpoint now" : "");
	return 0;
}

int km_slots_open(struct km_slots *s, int fd, int fd_service)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);
	long page = sysconf(_SC_PAGESIZE);
	void *mem;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->fd_service = fd_service;
	km_keyset_init_values(&s->pairs, sizeof(struct pair_key), sizeof(struct km_slots_pair));
	km_slot_alloc_init(&s->alloc, 0);
	if (fd < 0)
		return 0;
	if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0 || info.type != BPF_MAP_TYPE_ARRAY ||
	    info.value_size != sizeof(struct km_endpoint_value) || !(info.map_flags & BPF_F_MMAPABLE)) {
		km_warn("km_slot is not an mmap-able array of %zu-byte slots; every service reads "
			"km_endpoint", sizeof(struct km_endpoint_value));
		return 0;
	}
	s->mem_len = ((size_t)info.max_entries * sizeof(struct km_endpoint_value) + (size_t)page - 1) &
		     ~((size_t)page - 1);
	mem = mmap(NULL, s->mem_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED) {
		km_warn("cannot map km_slot (%s); every service reads km_endpoint", strerror(errno));
		s->mem_len = 0;
		return 0;
	}
	s->mem = mem;
	s->fd = fd;
	if (km_slot_alloc_init(&s->alloc, info.max_entries) != 0 || recover(s) != 0) {
		km_slots_close(s);
		return -1;
	}
	return 0;
}

void km_slots_close(struct km_slots *s)
{
	if (s->mem)
		munmap(s->mem, s->mem_len);
	km_slot_alloc_free(&s->alloc);
	km_keyset_free(&s->pairs);
	free(s->q);
	s->mem = NULL;
	s->q = NULL;
	s->q_head = s->q_len = s->q_cap = 0;
}

void km_slots_usage(const struct km_slots *s, uint64_t *size, uint64_t *free_slots,
		    uint64_t *quarantined)
{
	*size = s->alloc.size;
	*free_slots = s->alloc.free_slots;
	*quarantined = 0;
	for (size_t i = s->q_head; i < s->q_len; i++)
		*quarantined += 1u << s->q[i].order;
}
