/* authz_index.c — the candidate index of a policy list (km_authz_index, kmesh_maps.h): per list
 * generation and per indexed field (source namespace, source service account, source principal,
 * destination port), which positions may match a connection with a given value, so BPF evaluates
 * only those. Built from each policy's filter (what its matches name exactly), which depends on
 * the policy's text alone: the rows are written with the generation and never change after.
 * Part of the authorization compiler (authz_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/authz/authz_internal.h"
#include "shared/log.h"

/* Rows one field may take in one list generation. Past it the field is left unindexed (its
 * default summary all ones, no other row): BPF then filters on the other fields only. Bounds
 * the table and the compiler's work whatever the policies name. */
#define AZX_FIELD_ROWS_MAX 8192

#define WORDS_PER_CHUNK (KM_AZX_CHUNK_BITS / 64)

/* ---- filters ----------------------------------------------------------------------------- */

static void filter_add(struct km_authz *a, struct az_filter *f, uint32_t v)
{
	if (GROW(a, f->values, f->cap, f->n + 1))
		f->values[f->n++] = v;
}

/* Name s's id in f, holding s so the id stays its own. Without memory to hold it, s may be
 * gone (its id free for another name): the field admits any value instead. */
static void hold_value(struct km_authz *a, struct az_policy *p, struct az_filter *f,
		       struct az_str *s)
{
	if (!s || !GROW(a, p->refs, p->cap_refs, p->n_refs + 1)) {
		if (s)
			az_str_put(a, s);
		f->any = 1;
		return;
	}
	s->pol_refs++;
	p->refs[p->n_refs++] = s;
	filter_add(a, f, s->id);
}

/* A positive string list: its exact names as interned ids (held), or any. */
static void filter_strings(struct km_authz *a, struct az_policy *p, struct az_filter *f, int kind,
			   Kmesh__Security__StringMatch *const *l, size_t n)
{
	if (!n) {
		f->any = 1;
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (l[i]->match_type_case != KMESH__SECURITY__STRING_MATCH__MATCH_TYPE_EXACT) {
			f->any = 1;
			return;
		}
	for (size_t i = 0; i < n; i++) {
		struct az_str *s;

		if (kind == AZ_NS && !*l[i]->exact) {
			filter_add(a, f, 0); /* the namespace "" (and no identity) is id 0 */
			continue;
		}
		s = az_str_get(a, kind, l[i]->exact); /* NULL: no memory */
		hold_value(a, p, f, s);
	}
}

void az_filter_add_row(struct km_authz *a, struct az_policy *p, const Kmesh__Security__Match *m)
{
	struct az_filter *f = p->filter;

	if (!m) { /* a rule that always holds */
		for (int i = 0; i < KM_AZX_FIELDS; i++)
			f[i].any = 1;
		return;
	}
	filter_strings(a, p, &f[KM_AZX_NAMESPACE], AZ_NS, m->namespaces, m->n_namespaces);
	filter_strings(a, p, &f[KM_AZX_PRINCIPAL], AZ_PRINCIPAL, m->principals, m->n_principals);
	if (!m->n_service_accounts) {
		f[KM_AZX_SERVICE_ACCOUNT].any = 1;
	} else {
		for (size_t i = 0; i < m->n_service_accounts; i++) {
			char key[2 * KM_RES_MAX_STRING + 32];
			struct az_str *s;

			az_sa_key(key, sizeof(key), m->service_accounts[i]->namespace_,
				  m->service_accounts[i]->serviceaccount);
			s = az_str_get(a, AZ_SA, key);
			hold_value(a, p, &f[KM_AZX_SERVICE_ACCOUNT], s);
		}
	}
	if (!m->n_destination_ports)
		f[KM_AZX_PORT].any = 1;
	for (size_t i = 0; i < m->n_destination_ports; i++)
		filter_add(a, &f[KM_AZX_PORT], m->destination_ports[i]);
}

void az_filter_free(struct km_authz *a, struct az_policy *p)
{
	for (int i = 0; i < KM_AZX_FIELDS; i++)
		free(p->filter[i].values);
	for (size_t i = 0; i < p->n_refs; i++) {
		p->refs[i]->pol_refs--;
		az_str_put(a, p->refs[i]);
	}
	free(p->refs);
	memset(p->filter, 0, sizeof(p->filter));
	p->refs = NULL;
	p->n_refs = p->cap_refs = 0;
}

/* ---- rows -------------------------------------------------------------------------------- */

struct pair {
	uint32_t value, pos;
};

static int cmp_pair(const void *x, const void *y)
{
	const struct pair *a = x, *b = y;

	if (a->value != b->value)
		return a->value < b->value ? -1 : 1;
	return a->pos < b->pos ? -1 : a->pos > b->pos;
}

struct writer {
	struct km_authz *a;
	const struct az_list *l;
	uint32_t gen;
	struct az_index_key *keys;
	size_t n_keys, cap_keys;
};

static void emit(struct writer *w, uint8_t field, uint8_t chunk, uint32_t value,
		 const uint64_t *bits, size_t n_words)
{
	struct km_op *op = az_emit(w->a, KM_OP_AUTHZ_INDEX, 0, 1);

	if (!op || !GROW(w->a, w->keys, w->cap_keys, w->n_keys + 1))
		return;
	op->index.kind = (uint32_t)(w->l->key >> 32);
	op->index.owner = (uint32_t)w->l->key;
	op->index.gen = (uint8_t)w->gen;
	op->index.field = field;
	op->index.chunk = chunk;
	op->index.value = value;
	memcpy(op->index.bits, bits, n_words * sizeof(uint64_t));
	w->keys[w->n_keys++] = (struct az_index_key){ field, chunk, value };
}

/* Write one bitset (words of the list's positions) as its nonzero chunks and its summary. */
static void emit_bitset(struct writer *w, uint8_t field, uint32_t value, const uint64_t *words,
			size_t n_words)
{
	uint64_t sum[2] = { 0, 0 };

	for (size_t c = 0; c * WORDS_PER_CHUNK < n_words; c++) {
		uint64_t chunk[WORDS_PER_CHUNK] = { 0 };
		int nonzero = 0;

		for (size_t k = 0; k < WORDS_PER_CHUNK && c * WORDS_PER_CHUNK + k < n_words; k++)
			nonzero |= (chunk[k] = words[c * WORDS_PER_CHUNK + k]) != 0;
		if (!nonzero)
			continue;
		sum[c / 64] |= 1ull << (c % 64);
		emit(w, field, (uint8_t)c, value, chunk, WORDS_PER_CHUNK);
	}
	emit(w, field, KM_AZX_SUMMARY, value, sum, 2);
}

static size_t nonzero_chunks(const uint64_t *words, size_t n_words)
{
	size_t nz = 0;

	for (size_t c = 0; c * WORDS_PER_CHUNK < n_words; c++)
		for (size_t k = 0; k < WORDS_PER_CHUNK && c * WORDS_PER_CHUNK + k < n_words; k++)
			if (words[c * WORDS_PER_CHUNK + k]) {
				nz++;
				break;
			}
	return nz;
}

/* One field of the index: the default row (positions that admit any value) and a row per value
 * named exactly (the default's positions and the value's own). */
static void write_field(struct writer *w, uint8_t field, struct az_policy *const *ps, size_t n)
{
	size_t n_words = (n + 63) / 64, n_pairs = 0, cap_pairs = 0, rows;
	uint64_t *def = calloc(n_words, sizeof(uint64_t)), *row = calloc(n_words, sizeof(uint64_t));
	struct pair *pairs = NULL;

	if (!def || !row) {
		w->a->oom = 1;
		goto out;
	}
	for (size_t p = 0; p < n; p++) {
		const struct az_filter *f = &ps[p]->filter[field];

		if (!ps[p]->n_rows)
			continue; /* never matches */
		if (f->any) {
			def[p / 64] |= 1ull << (p % 64);
			continue;
		}
		for (size_t i = 0; i < f->n; i++)
			if (GROW(w->a, pairs, cap_pairs, n_pairs + 1))
				pairs[n_pairs++] = (struct pair){ f->values[i], (uint32_t)p };
	}
	if (n_pairs)
		qsort(pairs, n_pairs, sizeof(*pairs), cmp_pair);
	/* the rows it would take: the default, then per value the default's chunks and its own */
	rows = 1 + nonzero_chunks(def, n_words);
	for (size_t i = 0; i < n_pairs && rows <= AZX_FIELD_ROWS_MAX;) {
		size_t j = i, own = 0;

		for (; j < n_pairs && pairs[j].value == pairs[i].value; j++)
			own += j == i || pairs[j].pos / KM_AZX_CHUNK_BITS !=
						 pairs[j - 1].pos / KM_AZX_CHUNK_BITS;
		rows += 1 + nonzero_chunks(def, n_words) + own; /* at most */
		i = j;
	}
	if (rows > AZX_FIELD_ROWS_MAX) {
		uint64_t all[2] = { 0, 0 };

		km_info("authz: list %u/%u: field %u of its index would take %zu rows; left unindexed",
			(uint32_t)(w->l->key >> 32), (uint32_t)w->l->key, field, rows);
		for (size_t c = 0; c * KM_AZX_CHUNK_BITS < n; c++)
			all[c / 64] |= 1ull << (c % 64);
		emit(w, field | KM_AZX_F_DEFAULT, KM_AZX_SUMMARY, 0, all, 2);
		goto out;
	}
	emit_bitset(w, field | KM_AZX_F_DEFAULT, 0, def, n_words);
	for (size_t i = 0; i < n_pairs;) {
		size_t j = i;

		memcpy(row, def, n_words * sizeof(uint64_t));
		for (; j < n_pairs && pairs[j].value == pairs[i].value; j++)
			row[pairs[j].pos / 64] |= 1ull << (pairs[j].pos % 64);
		emit_bitset(w, field, pairs[i].value, row, n_words);
		i = j;
	}
out:
	free(def);
	free(row);
	free(pairs);
}

struct az_index_key *az_index_write(struct km_authz *a, const struct az_list *l, uint32_t gen,
				    struct az_policy *const *ps, size_t n, size_t *n_keys)
{
	struct writer w = { .a = a, .l = l, .gen = gen };

	*n_keys = 0;
	if (!a->index_min || n < a->index_min)
		return NULL;
	for (uint8_t f = 0; f < KM_AZX_FIELDS; f++)
		write_field(&w, f, ps, n);
	*n_keys = w.n_keys;
	return w.keys;
}

void az_index_drop(struct km_authz *a, const struct az_list *l, uint32_t gen,
		   const struct az_index_key *keys, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct km_op *op = az_emit(a, KM_OP_AUTHZ_INDEX, 1, 1);

		if (!op)
			return;
		op->index.kind = (uint32_t)(l->key >> 32);
		op->index.owner = (uint32_t)l->key;
		op->index.gen = (uint8_t)gen;
		op->index.field = keys[i].field;
		op->index.chunk = keys[i].chunk;
		op->index.value = keys[i].value;
	}
}
