/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* authz.h — the L4 authorization decision for one connection, over the km_authz_* tables
 * (layouts and their meaning in kmesh_maps.h). Istio's order (istio-wire.md 2.3): a matching
 * enforced DENY policy denies; else, with no enforced ALLOW policy, allow; else a matching ALLOW
 * policy allows; else deny. Dry-run policies are evaluated and counted, never enforced.
 * Bounded: lists and policies are walked with bpf_loop (at most KM_AUTHZ_LIST_MAX entries per
 * list and KM_AUTHZ_MATCHES_MAX rows per policy), each row costs at most twelve lookups. A list
 * generation with km_authz_index rows is walked only at its candidates: the policies that every
 * indexed field admits (a few lookups per list, then per candidate), so the cost of a SYN follows
 * the policies that could match it, not all that apply. */
#ifndef KM_BPF_AUTHZ_H
#define KM_BPF_AUTHZ_H

#include "maps.h"
#include "addr.h"

/* A connection as the decision sees it. */
struct km_authz_conn {
	struct km_addr src, dst; /* v4-mapped for IPv4 */
	__u32 dport;             /* host order */
	__u32 src_known;         /* src_id is valid: the source is a known workload */
	__u32 dst_known;
	__u32 recheck;           /* an open connection re-decided: dry runs skipped, nothing counted */
	struct km_authz_ident_value src_id;
	struct km_authz_ident_value dst_id;
};

struct km_authz_result {
	__u32 deny;
	__u32 stat_id; /* the deciding policy's, or KM_AUTHZ_STAT_DEFAULT */
};

/* Look up both ends' identities in this node's network. */
static __always_inline void km_authz_identify(struct km_authz_conn *c)
{
	struct km_authz_ident_value *v;

	v = bpf_map_lookup_elem(&km_authz_ident, &c->src);
	if (v) {
		c->src_id = *v;
		c->src_known = 1;
	}
	v = bpf_map_lookup_elem(&km_authz_ident, &c->dst);
	if (v) {
		c->dst_id = *v;
		c->dst_known = 1;
	}
}

static __always_inline int az_in_set(__u32 set, __u32 value)
{
	struct km_authz_set_key k = { .set_id = set, .value = value };

	return bpf_map_lookup_elem(&km_authz_set, &k) != NULL;
}

static __always_inline int az_in_cidr(__u32 set, const struct km_addr *a)
{
	struct km_authz_cidr_key k = { .set_id = set };

	if (km_addr_is_v4mapped(a)) {
		k.prefixlen = 64 + 32;
		k.family = 4;
		__builtin_memcpy(k.addr, &a->words[3], 4);
	} else {
		k.prefixlen = 64 + 128;
		k.family = 6;
		__builtin_memcpy(k.addr, a->bytes, 16);
	}
	return bpf_map_lookup_elem(&km_authz_cidr, &k) != NULL;
}

/* Is the connection's value for field f (either sense) in set? */
static __always_inline int az_member(const struct km_authz_conn *c, __u32 f, __u32 set)
{
	__u32 kind = f >> 1, value;

	if (kind == KM_AF_SOURCE_IPS >> 1)
		return az_in_cidr(set, &c->src);
	if (kind == KM_AF_DESTINATION_IPS >> 1)
		return az_in_cidr(set, &c->dst);
	if (kind == KM_AF_NAMESPACES >> 1) {
		value = c->src_known ? c->src_id.ns_id : 0; /* no identity: "" (id 0) */
	} else if (kind == KM_AF_DESTINATION_PORTS >> 1) {
		value = c->dport;
	} else {
		if (!c->src_known) /* no identity: no principal or service account matches */
			return 0;
		value = kind == KM_AF_PRINCIPALS >> 1 ? c->src_id.principal_id : c->src_id.sa_id;
	}
	return az_in_set(set, value);
}

/* Does one Match hold? Every non-empty list must (a positive list: some element matches; a not_
 * list: none does). Unrolled: it runs inside the global az_entry_eval, which the verifier checks
 * once. */
static __always_inline int az_row_holds(const struct km_authz_conn *c,
					const struct km_authz_match_value *m)
{
#pragma unroll
	for (__u32 f = 0; f < KM_AF_COUNT; f++) {
		__u32 set = m->set[f];

		if (set && az_member(c, f, set) == (int)(f & 1))
			return 0;
	}
	return 1;
}

/* A walk over one policy's match rows. */
#define AZ_CLAUSE_OK 0x1
#define AZ_RULE_OK 0x2
#define AZ_MATCHED 0x4
struct az_policy_walk {
	const struct km_authz_conn *c;
	__u32 policy_id;
	__u32 state; /* AZ_* */
};

static long az_row_cb(__u64 i, void *arg)
{
	struct az_policy_walk *p = arg;
	struct km_authz_match_key k = { .policy_id = p->policy_id, .index = (__u32)i };
	struct km_authz_match_value *m = bpf_map_lookup_elem(&km_authz_match, &k);
	__u32 flags, st = p->state;

	if (!m)
		return 1; /* a missing row: the policy does not match */
	flags = m->flags;
	if ((st & AZ_RULE_OK) && !(st & AZ_CLAUSE_OK) && az_row_holds(p->c, m))
		st |= AZ_CLAUSE_OK;
	if (flags & KM_AUTHZ_M_END_CLAUSE) {
		if (!(st & AZ_CLAUSE_OK))
			st &= ~AZ_RULE_OK;
		st &= ~AZ_CLAUSE_OK;
	}
	if (flags & KM_AUTHZ_M_END_RULE) {
		if (st & AZ_RULE_OK) {
			p->state = AZ_MATCHED;
			return 1;
		}
		st |= AZ_RULE_OK;
	}
	p->state = st;
	return 0;
}

static __always_inline void az_count(__u32 stat_id, int deny)
{
	struct km_authz_stats_key k = { .stat_id = stat_id };
	struct km_authz_stats_value *v = bpf_map_lookup_elem(&km_authz_stats, &k);

	if (!v) {
		struct km_authz_stats_value zero = {};

		bpf_map_update_elem(&km_authz_stats, &k, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&km_authz_stats, &k);
		if (!v)
			return;
	}
	if (deny)
		__sync_fetch_and_add(&v->denied, 1);
	else
		__sync_fetch_and_add(&v->allowed, 1);
}

/* A denied connection, by its destination workload and the deciding policy (km_authz_denials):
 * its row, made on the first denial, or the overflow row when the table is full. */
static __always_inline void az_count_denial(const struct km_authz_conn *c, __u32 stat_id)
{
	struct km_authz_denials_key k = { .workload_id = c->dst_known ? c->dst_id.workload_id : 0,
					  .stat_id = stat_id };
	struct km_authz_denials_value one = { .denied = 1 }, *v;

	v = bpf_map_lookup_elem(&km_authz_denials, &k);
	if (v) {
		__sync_fetch_and_add(&v->denied, 1);
		return;
	}
	if (bpf_map_update_elem(&km_authz_denials, &k, &one, BPF_NOEXIST) == 0)
		return;
	v = bpf_map_lookup_elem(&km_authz_denials, &k); /* made meanwhile on another CPU */
	if (!v) {
		k.workload_id = k.stat_id = KM_AUTHZ_DENIALS_OTHER; /* full */
		v = bpf_map_lookup_elem(&km_authz_denials, &k);
	}
	if (v)
		__sync_fetch_and_add(&v->denied, 1);
}

enum az_segment { AZ_SEG_DENY, AZ_SEG_ALLOW, AZ_SEG_DRY_RUN };


/* A walk over one segment of one list. No pointer in it: the global function that is given it
 * may have written anything there, so the verifier forgets what it held. */
struct az_seg {
	__u32 kind, owner, gen_bit, base;
	__u32 segment; /* enum az_segment */
	__u32 found;
	__u32 stat_id;
};

struct az_list_walk {
	const struct km_authz_conn *c;
	struct az_seg s;
};

/* Evaluate the policy at position base + i of the segment; 1 when the walk is decided. A global
 * function: the verifier checks it once, not once per state of the walks that call it (__weak:
 * one copy where several objects include this header). Its pointers are checked as if they could
 * be NULL. */
__weak __noinline int az_entry_eval(const struct km_authz_conn *c, struct az_seg *l, __u32 i)
{
	struct km_authz_list_key k = {};
	struct az_policy_walk p = { .c = c, .state = AZ_RULE_OK };
	struct km_authz_list_value *e;
	__u32 n;

	if (!l || !c)
		return 0;
	k.kind = l->kind;
	k.owner = l->owner;
	k.index = (l->base + i) | l->gen_bit;
	e = bpf_map_lookup_elem(&km_authz_list, &k);
	if (!e)
		return 0;
	p.policy_id = e->policy_id;
	n = e->n_matches;
	if (n > KM_AUTHZ_MATCHES_MAX)
		n = KM_AUTHZ_MATCHES_MAX;
	if (n)
		bpf_loop(n, az_row_cb, &p, 0);
	if (p.state != AZ_MATCHED)
		return 0;
	if (l->segment == AZ_SEG_DRY_RUN) {
		az_count(e->stat_id, e->flags & KM_AUTHZ_P_DENY);
		return 0;
	}
	l->found = 1;
	l->stat_id = e->stat_id;
	return 1;
}

static long az_entry_cb(__u64 i, void *arg)
{
	struct az_list_walk *l = arg;

	return az_entry_eval(l->c, &l->s, (__u32)i) ? 1 : 0;
}

/* ---- candidates from km_authz_index ------------------------------------------------------- */

/* What a candidate walk keeps: per CPU, not on the stack (the call chain down to a policy's rows
 * leaves too little of the 512 bytes). One walk at a time per CPU: busy says a walk holds it, and
 * a walk that finds it held (a nested or preempting one) walks its lists whole. */
struct az_scratch {
	__u32 busy;
	__u32 gen;
	__u32 first, end; /* the segment [first, end) */
	__u32 chunk;      /* the chunk whose AND is in bits, or KM_AZX_SUMMARY while summing */
	__u32 k;          /* the word at hand */
	__u32 indexed;    /* the namespace field had a summary row: the generation has an index */
	__u32 pad;
	__u64 x;          /* the word's candidates not yet evaluated */
	__u64 sum[2];     /* chunks that may hold candidates */
	__u64 bits[KM_AZX_CHUNK_BITS / 64];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct az_scratch);
	__uint(max_entries, 1);
} km_authz_scratch SEC(".maps") __weak;

static __always_inline struct az_scratch *az_scratch_take(void)
{
	__u32 zero = 0;
	struct az_scratch *sc = bpf_map_lookup_elem(&km_authz_scratch, &zero);

	if (!sc || sc->busy)
		return NULL;
	sc->busy = 1;
	return sc;
}

/* Trailing zeros of x != 0, without branches: the population count of the bits below the lowest
 * set one. */
static __always_inline __u32 az_ctz64(__u64 x)
{
	x = (x & -x) - 1;
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (__u32)((x * 0x0101010101010101ULL) >> 56);
}

/* Field f's index row for chunk (or KM_AZX_SUMMARY): the row of the connection's value, else the
 * default row; NULL when neither exists (read as all ones). A source without identity has no
 * service-account or principal value: only the default row applies. */
static __always_inline const struct km_authz_index_value *
az_index_row(const struct km_authz_conn *c, const struct az_seg *s, __u32 gen, __u32 f,
	     __u32 chunk)
{
	struct km_authz_index_key k = { .kind = s->kind, .owner = s->owner, .gen = (__u8)gen,
					.chunk = (__u8)chunk };
	const struct km_authz_index_value *v;
	__u32 value = 0;
	int known = 1;

	if (f == KM_AZX_NAMESPACE)
		value = c->src_known ? c->src_id.ns_id : 0;
	else if (f == KM_AZX_PORT)
		value = c->dport;
	else if (!c->src_known)
		known = 0;
	else
		value = f == KM_AZX_SERVICE_ACCOUNT ? c->src_id.sa_id : c->src_id.principal_id;
	if (known) {
		k.field = (__u8)f;
		k.value = value;
		v = bpf_map_lookup_elem(&km_authz_index, &k);
		if (v)
			return v;
	}
	k.field = (__u8)(f | KM_AZX_F_DEFAULT);
	k.value = 0;
	return bpf_map_lookup_elem(&km_authz_index, &k);
}

/* A candidate walk's context: the segment (and connection) and the scratch. */
struct az_cand {
	struct az_list_walk *w;
	struct az_scratch *sc;
};

/* AND field f's row for sc->chunk into sc->bits, or its summary into sc->sum. */
static long az_and_cb(__u64 f, void *arg)
{
	struct az_cand *cd = arg;
	struct az_scratch *sc = cd->sc;
	const struct km_authz_index_value *v =
		az_index_row(cd->w->c, &cd->w->s, sc->gen, (__u32)f, sc->chunk);

	if (!v) /* no namespace summary: no index, and no need to look further */
		return sc->chunk == KM_AZX_SUMMARY && f == KM_AZX_NAMESPACE ? 1 : 0;
	if (sc->chunk == KM_AZX_SUMMARY) {
		if (f == KM_AZX_NAMESPACE)
			sc->indexed = 1;
		sc->sum[0] &= v->bits[0];
		sc->sum[1] &= v->bits[1];
		return 0;
	}
#pragma unroll
	for (int k = 0; k < KM_AZX_CHUNK_BITS / 64; k++)
		sc->bits[k] &= v->bits[k];
	return 0;
}

/* Word k of the chunk, without the positions outside [first, end). */
static __always_inline __u64 az_word(const struct az_scratch *sc, __u32 k)
{
	__u32 at = sc->chunk * KM_AZX_CHUNK_BITS + k * 64;
	__u64 x = sc->bits[k % (KM_AZX_CHUNK_BITS / 64)];

	if (at + 64 <= sc->first || at >= sc->end)
		return 0;
	if (at < sc->first)
		x &= ~0ULL << ((sc->first - at) & 63);
	if (sc->end - at < 64)
		x &= (1ULL << ((sc->end - at) & 63)) - 1;
	return x;
}

/* One step of the bit walk: evaluate the lowest candidate of the word at hand, or move on to the
 * next word. */
static long az_bit_cb(__u64 i, void *arg)
{
	struct az_cand *cd = arg;
	struct az_scratch *sc = cd->sc;
	__u64 x = sc->x;
	__u32 pos;

	if (!x) {
		if (sc->k >= KM_AZX_CHUNK_BITS / 64 - 1)
			return 1;
		sc->k++;
		sc->x = az_word(sc, sc->k);
		return 0;
	}
	sc->x = x & (x - 1);
	pos = sc->chunk * KM_AZX_CHUNK_BITS + sc->k * 64 + az_ctz64(x);
	return az_entry_eval(cd->w->c, &cd->w->s, pos - cd->w->s.base) ? 1 : 0;
}

static long az_chunk_cb(__u64 i, void *arg)
{
	struct az_cand *cd = arg;
	struct az_scratch *sc = cd->sc;
	__u32 c = sc->first / KM_AZX_CHUNK_BITS + (__u32)i;

	if (c >= KM_AZX_CHUNKS || c * KM_AZX_CHUNK_BITS >= sc->end)
		return 1;
	if (!((c < 64 ? sc->sum[0] >> c : sc->sum[1] >> (c - 64)) & 1))
		return 0;
	sc->chunk = c;
#pragma unroll
	for (int k = 0; k < KM_AZX_CHUNK_BITS / 64; k++)
		sc->bits[k] = ~0ULL;
	bpf_loop(KM_AZX_FIELDS, az_and_cb, cd, 0);
	sc->k = 0;
	sc->x = az_word(sc, 0);
	/* each step evaluates a candidate or moves to the next word */
	bpf_loop(KM_AZX_CHUNK_BITS + KM_AZX_CHUNK_BITS / 64, az_bit_cb, cd, 0);
	return cd->w->s.found ? 1 : 0;
}

/* Walk the segment [base, base + n) of a list generation at its candidates only. 0 when the
 * generation has no index: the caller walks it whole. */
static __always_inline int az_walk_candidates(struct az_list_walk *w, struct az_scratch *sc,
					      __u32 gen, __u32 base, __u32 n)
{
	struct az_cand cd = { .w = w, .sc = sc };

	sc->gen = gen;
	sc->chunk = KM_AZX_SUMMARY;
	sc->indexed = 0;
	sc->sum[0] = sc->sum[1] = ~0ULL;
	bpf_loop(KM_AZX_FIELDS, az_and_cb, &cd, 0);
	if (!sc->indexed)
		return 0;
	sc->first = base;
	sc->end = base + n;
	bpf_loop((base + n - 1) / KM_AZX_CHUNK_BITS - base / KM_AZX_CHUNK_BITS + 1, az_chunk_cb,
		 &cd, 0);
	/* keeps clang from merging this call with the caller's whole walk into one bpf_loop call
	 * with either callback: the verifier inlines a bpf_loop only if its callback is fixed */
	asm volatile("" ::: "memory");
	return 1;
}

/* The whole decision is one walk of nine steps, segment-major: the DENY segments of the three
 * lists (global, the destination's namespace, the destination's own), then their ALLOW segments,
 * then their dry-run segments. One bpf_loop call site per level keeps verification small. */
struct az_decide_walk {
	const struct km_authz_conn *c;
	struct az_scratch *sc; /* held for candidate walks, or NULL: walk every list whole */
	struct km_authz_list_value head[3];
	__u32 present[3];
	__u32 n_allow; /* enforced ALLOW policies over the three lists */
	__u32 decided, deny, stat_id;
};

static long az_step_cb(__u64 i, void *arg)
{
	struct az_decide_walk *d = arg;
	__u32 seg = (__u32)i / 3, li = (__u32)i % 3, base, n;
	const struct km_authz_list_value *h;
	struct az_list_walk w = {}; /* here, not in *d: a callback may not store stack pointers
				     * into its caller's frame */

	asm volatile("" : "+r"(li)); /* keep the bound check below: the verifier needs it */
	if (li >= 3 || seg > AZ_SEG_DRY_RUN)
		return 1;
	if (!d->present[li])
		return 0;
	if (seg != AZ_SEG_DRY_RUN && d->decided)
		return 0;
	if (seg == AZ_SEG_DRY_RUN && d->c->recheck)
		return 1;
	h = &d->head[li];
	if (seg == AZ_SEG_DENY) {
		base = 0;
		n = h->n_deny;
	} else if (seg == AZ_SEG_ALLOW) {
		base = h->n_deny;
		n = h->n_allow;
	} else {
		base = h->n_deny + h->n_allow;
		n = h->n_dry_run;
	}
	if (!n)
		return 0;
	if (n > KM_AUTHZ_LIST_MAX)
		n = KM_AUTHZ_LIST_MAX;
	w.c = d->c;
	w.s.kind = KM_AUTHZ_OWNER_GLOBAL + li; /* lists 0, 1, 2: global, namespace, workload */
	w.s.owner = li == 0 ? 0 : li == 1 ? d->c->dst_id.ns_id : d->c->dst_id.workload_id;
	w.s.gen_bit = h->gen ? KM_AUTHZ_GEN_BIT : 0;
	w.s.base = base;
	w.s.segment = seg;
	/* lists shorter than KM_AZX_MIN_POLICIES have no index: not even looked for */
	if (!d->sc || h->n_deny + h->n_allow + h->n_dry_run < KM_AZX_MIN_POLICIES ||
	    !az_walk_candidates(&w, d->sc, h->gen ? 1 : 0, base, n))
		bpf_loop(n, az_entry_cb, &w, 0);
	if (seg != AZ_SEG_DRY_RUN && w.s.found) {
		d->decided = 1;
		d->deny = seg == AZ_SEG_DENY;
		d->stat_id = w.s.stat_id;
	}
	return 0;
}

/* Decide c (identities already looked up) and count the decision (unless c->recheck). */
static __always_inline void km_authz_decide(const struct km_authz_conn *c,
					    struct km_authz_result *r)
{
	struct az_decide_walk d = { .c = c };

	for (int i = 0; i < 3; i++) {
		struct km_authz_list_key k = { .kind = KM_AUTHZ_OWNER_GLOBAL + i,
					       .owner = i == 0 ? 0 : i == 1 ? c->dst_id.ns_id
									: c->dst_id.workload_id,
					       .index = KM_AUTHZ_HEAD };
		struct km_authz_list_value *h;

		if (i > 0 && !c->dst_known)
			break; /* an undescribed destination: only mesh-wide policies apply */
		h = bpf_map_lookup_elem(&km_authz_list, &k);
		if (!h)
			continue;
		d.head[i] = *h;
		d.present[i] = 1;
		d.n_allow += h->n_allow;
	}
	d.stat_id = KM_AUTHZ_STAT_DEFAULT;
	if (d.present[0] | d.present[1] | d.present[2]) {
		d.sc = az_scratch_take();
		bpf_loop(9, az_step_cb, &d, 0);
		if (d.sc)
			d.sc->busy = 0;
	}
	if (!d.decided && d.n_allow)
		d.deny = 1; /* ALLOW policies apply and none matched */
	r->deny = d.deny;
	r->stat_id = d.stat_id;
	if (!c->recheck) {
		az_count(r->stat_id, r->deny);
		if (r->deny)
			az_count_denial(c, r->stat_id);
	}
}

#endif
