/* authz_lists.c — the policy lists BPF walks, one per scope owner (the mesh, a namespace, a
 * workload): which policies each holds, in segment order (enforced DENY, enforced ALLOW, dry
 * run), rewritten in the other generation and switched by the head row. Part of the
 * authorization compiler (authz_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/authz/authz_internal.h"
#include "shared/log.h"

struct az_list *az_list_get(struct km_authz *a, uint32_t kind, uint32_t owner, int create)
{
	uint64_t key = (uint64_t)kind << 32 | owner;
	struct az_list *l;

	HASH_FIND(hh, a->lists, &key, sizeof(key), l);
	if (l || !create)
		return l;
	if (!(l = calloc(1, sizeof(*l)))) {
		a->oom = 1;
		return NULL;
	}
	l->key = key;
	HASH_ADD(hh, a->lists, key, sizeof(l->key), l);
	return l;
}

static void mark_list(struct km_authz *a, uint32_t kind, uint32_t owner)
{
	struct az_list *l = az_list_get(a, kind, owner, 1);

	if (l)
		l->dirty = 1;
}

static int is_global(const struct az_policy *p)
{
	return p->scope == KMESH__SECURITY__SCOPE__GLOBAL ||
	       (p->scope == KMESH__SECURITY__SCOPE__NAMESPACE && !p->ns);
}

void az_mark_lists_of(struct km_authz *a, const struct az_policy *p, const char *name)
{
	struct az_list *l, *tmp;

	if (p && is_global(p))
		mark_list(a, KM_AUTHZ_OWNER_GLOBAL, 0);
	else if (p && p->scope == KMESH__SECURITY__SCOPE__NAMESPACE)
		mark_list(a, KM_AUTHZ_OWNER_NAMESPACE, p->ns->id);
	/* the workloads naming it: each one's own list (only a workload with policies has one) */
	HASH_ITER(hh, a->lists, l, tmp)
		for (size_t i = 0; i < az_list_n_policies(l); i++)
			if (strcmp(l->res->policies[i], name) == 0) {
				l->dirty = 1;
				break;
			}
}

static void emit_entry(struct km_authz *a, const struct az_list *l, uint32_t gen, uint32_t pos,
		       const struct az_policy *p)
{
	struct km_op *op = az_emit(a, KM_OP_AUTHZ_LIST, p == NULL, 1);

	if (!op)
		return;
	op->list.kind = (uint32_t)(l->key >> 32);
	op->list.owner = (uint32_t)l->key;
	op->list.index = pos | (gen ? KM_AUTHZ_GEN_BIT : 0);
	if (!p)
		return;
	op->list.policy_id = p->id;
	op->list.stat_id = p->stat_id;
	op->list.flags = p->flags;
	op->list.n_matches = (uint32_t)p->n_rows;
}

static int policy_in_list(const struct az_list *l, const struct az_policy *p)
{
	uint32_t kind = (uint32_t)(l->key >> 32), owner = (uint32_t)l->key;

	if (kind == KM_AUTHZ_OWNER_GLOBAL)
		return is_global(p);
	if (kind == KM_AUTHZ_OWNER_NAMESPACE)
		return p->scope == KMESH__SECURITY__SCOPE__NAMESPACE && p->ns && p->ns->id == owner;
	return 0;
}

void az_list_rebuild(struct km_authz *a, struct az_list *l)
{
	struct az_policy **ps = NULL, **ord = NULL, *p, *tmp;
	struct az_index_key *idx;
	size_t n = 0, cap = 0, n_seg[3] = { 0 }, n_idx = 0;
	uint32_t gen = l->head_written ? !l->gen : 0, pos = 0;

	if ((uint32_t)(l->key >> 32) == KM_AUTHZ_OWNER_WORKLOAD) {
		for (size_t i = 0; i < az_list_n_policies(l); i++) {
			HASH_FIND_STR(a->policies, l->res->policies[i], p);
			if (p && GROW(a, ps, cap, n + 1))
				ps[n++] = p;
		}
	} else {
		HASH_ITER(hh, a->policies, p, tmp)
			if (policy_in_list(l, p) && GROW(a, ps, cap, n + 1))
				ps[n++] = p;
	}
	if (n > KM_AUTHZ_LIST_MAX) {
		km_error("authz: %zu policies apply to one owner, at most %d are enforced", n,
			 KM_AUTHZ_LIST_MAX);
		n = KM_AUTHZ_LIST_MAX;
	}
	/* segments: enforced DENY, enforced ALLOW, dry run */
	if (n && !(ord = malloc(n * sizeof(*ord))))
		a->oom = 1;
	for (int seg = 0; seg < 3; seg++)
		for (size_t i = 0; i < n; i++) {
			uint32_t f = ps[i]->flags;
			int s = (f & KM_AUTHZ_P_DRY_RUN) ? 2 : (f & KM_AUTHZ_P_DENY) ? 0 : 1;

			if (s != seg)
				continue;
			if (ord)
				ord[pos] = ps[i];
			emit_entry(a, l, gen, pos++, ps[i]);
			n_seg[seg]++;
		}
	free(ps);
	/* the generation's index before its head, as its entries */
	idx = ord ? az_index_write(a, l, gen, ord, n, &n_idx) : NULL;
	free(ord);
	if (n) {
		struct km_op *op = az_emit(a, KM_OP_AUTHZ_LIST, 0, 1);

		if (op) {
			op->list.kind = (uint32_t)(l->key >> 32);
			op->list.owner = (uint32_t)l->key;
			op->list.index = KM_AUTHZ_HEAD;
			op->list.n_deny = (uint32_t)n_seg[0];
			op->list.n_allow = (uint32_t)n_seg[1];
			op->list.n_dry_run = (uint32_t)n_seg[2];
			op->list.gen = gen;
		}
	} else if (l->head_written) {
		struct km_op *op = az_emit(a, KM_OP_AUTHZ_LIST, 1, 1);

		if (op) {
			op->list.kind = (uint32_t)(l->key >> 32);
			op->list.owner = (uint32_t)l->key;
			op->list.index = KM_AUTHZ_HEAD;
		}
	}
	if (l->head_written && gen != l->gen)
		for (uint32_t i = 0; i < l->n_written; i++)
			emit_entry(a, l, l->gen, i, NULL);
	/* and its index rows (a walk still reading the old generation finds its entries missing,
	 * indexed or not: "does not match", as before the index) */
	if (a->index_min) /* else a map writer without the table: the rows went with the old one */
		az_index_drop(a, l, l->gen, l->idx, l->n_idx);
	a->index_rows = a->index_rows - l->n_idx + n_idx;
	free(l->idx);
	l->idx = idx;
	l->n_idx = n_idx;
	l->gen = gen;
	l->n_written = (uint32_t)n;
	l->head_written = n > 0;
	l->dirty = 0;
}
