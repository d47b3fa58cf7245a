/* authz_compile.c — policies and identities into km_authz_* rows (see authz_compile.h). */
#include "services/xds-agent/authz_compile.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "services/xds-agent/authz_eval.h"
#include "shared/log.h"

/* Kinds of interned identity strings (and of the sets expanded over them). */
enum az_kind { AZ_NS = 0, AZ_SA = 1, AZ_PRINCIPAL = 2, AZ_STRING_KINDS = 3 };
/* Sets: the three string kinds, then ports and CIDRs. */
enum { AZ_SET_PORT = 3, AZ_SET_CIDR = 4 };

struct az_str {
	char *key; /* kind letter, '/', text: the hash key and the id's name */
	int kind;
	uint32_t id;
	uint32_t wl_refs;  /* workloads with this identity: it is "known", sets hold it */
	uint32_t pol_refs; /* NAMESPACE-scoped policies naming it (their list's owner id) */
	UT_hash_handle hh;
};

struct az_cidr {
	uint8_t addr[16];
	uint8_t len; /* 4 or 16 */
	uint8_t length;
};

struct az_set {
	uint32_t id;
	int type;
	Kmesh__Security__StringMatch *pats; /* string kinds (SA: exact pair keys) */
	size_t n_pats;
	int all_exact;
	uint32_t *values; /* written members: string ids, or ports */
	size_t n_values, cap_values;
	struct az_cidr *cidrs;
	size_t n_cidrs;
};

struct az_policy {
	char *name;
	uint64_t hash;
	uint32_t id, stat_id;
	int owns_stat;
	uint32_t flags; /* KM_AUTHZ_P_* */
	uint32_t scope;
	struct az_str *ns; /* NAMESPACE scope, non-empty namespace */
	uint32_t (*rows)[1 + KM_AF_COUNT]; /* [0] = KM_AUTHZ_M_* flags, then the set ids */
	size_t n_rows, cap_rows;
	struct az_set **sets;
	size_t n_sets, cap_sets;
	UT_hash_handle hh;
};

struct az_list {
	uint64_t key; /* kind << 32 | owner */
	uint32_t gen, n_written;
	int head_written, dirty;
	struct az_wl *wl; /* KM_AUTHZ_OWNER_WORKLOAD: its workload while it exists */
	UT_hash_handle hh;
};

struct az_wl {
	char *uid;
	uint32_t id;
	struct az_str *str[AZ_STRING_KINDS]; /* NULL: not an identity here (or namespace "") */
	struct km_addr *addrs;
	size_t n_addrs;
	char **policies;
	size_t n_policies;
	struct az_list *list;
	UT_hash_handle hh;
};

struct az_addr {
	struct km_addr addr;
	struct az_wl *owner;
	UT_hash_handle hh;
};

static void *grow(void *arr, size_t *cap, size_t need, size_t elem, int *oom)
{
	void *n;
	size_t c = *cap ? *cap : 4;

	if (need <= *cap)
		return arr;
	while (c < need)
		c *= 2;
	if (!(n = realloc(arr, c * elem))) {
		*oom = 1;
		return NULL;
	}
	*cap = c;
	return n;
}

#define GROW(a, arr, cap, need) \
	((arr) = grow((arr), &(cap), (need), sizeof(*(arr)), &(a)->oom) ?: (arr), (need) <= (cap))

void km_authz_init(struct km_authz *a, struct km_oplist *out, const char *network)
{
	memset(a, 0, sizeof(*a));
	a->out = out;
	a->network = strdup(network ? network : "");
	km_ids_init(&a->ids, NULL);
}

/* ---- emission ---------------------------------------------------------------------------- */

static struct km_op *emit(struct km_authz *a, enum km_op_table table, int del, int now)
{
	struct km_op *op = now ? km_oplist_add_now(a->out, table, del) : km_oplist_add(a->out, table, del);

	if (!op)
		a->oom = 1;
	return op;
}

static void emit_set_value(struct km_authz *a, const struct az_set *s, uint32_t value, int del)
{
	struct km_op *op = emit(a, KM_OP_AUTHZ_SET, del, 0);

	if (op) {
		op->set.set_id = s->id;
		op->set.value = value;
	}
}

static void emit_cidr(struct km_authz *a, const struct az_set *s, const struct az_cidr *c, int del)
{
	struct km_op *op = emit(a, KM_OP_AUTHZ_CIDR, del, 0);

	if (op) {
		op->cidr.set_id = s->id;
		memcpy(op->cidr.addr, c->addr, sizeof(c->addr));
		op->cidr.addr_len = c->len;
		op->cidr.length = c->length;
	}
}

static void emit_set(struct km_authz *a, const struct az_set *s, int del)
{
	for (size_t i = 0; i < s->n_values; i++)
		emit_set_value(a, s, s->values[i], del);
	for (size_t i = 0; i < s->n_cidrs; i++)
		emit_cidr(a, s, &s->cidrs[i], del);
}

static void emit_rows(struct km_authz *a, const struct az_policy *p, int del)
{
	for (size_t i = 0; i < p->n_rows; i++) {
		struct km_op *op = emit(a, KM_OP_AUTHZ_MATCH, del, 0);

		if (!op)
			return;
		op->match.policy_id = p->id;
		op->match.index = (uint32_t)i;
		op->match.flags = p->rows[i][0];
		memcpy(op->match.sets, &p->rows[i][1], sizeof(op->match.sets));
	}
}

static void emit_ident(struct km_authz *a, const struct az_wl *w, const struct km_addr *addr, int del)
{
	struct km_op *op = emit(a, KM_OP_AUTHZ_IDENT, del, 0);

	if (!op)
		return;
	op->ident.addr = *addr;
	if (del)
		return;
	op->ident.workload_id = w->id;
	op->ident.ns_id = w->str[AZ_NS] ? w->str[AZ_NS]->id : 0;
	op->ident.sa_id = w->str[AZ_SA] ? w->str[AZ_SA]->id : 0;
	op->ident.principal_id = w->str[AZ_PRINCIPAL] ? w->str[AZ_PRINCIPAL]->id : 0;
}

/* ---- sets and their expansion ------------------------------------------------------------ */

static int set_has(const struct az_set *s, uint32_t v)
{
	for (size_t i = 0; i < s->n_values; i++)
		if (s->values[i] == v)
			return 1;
	return 0;
}

static void set_add(struct km_authz *a, struct az_set *s, uint32_t v)
{
	if (set_has(s, v) || !GROW(a, s->values, s->cap_values, s->n_values + 1))
		return;
	s->values[s->n_values++] = v;
	emit_set_value(a, s, v, 0);
}

static void set_del(struct km_authz *a, struct az_set *s, uint32_t v)
{
	for (size_t i = 0; i < s->n_values; i++)
		if (s->values[i] == v) {
			s->values[i] = s->values[--s->n_values];
			emit_set_value(a, s, v, 1);
			return;
		}
}

static int set_matches(const struct az_set *s, const char *text)
{
	for (size_t i = 0; i < s->n_pats; i++)
		if (km_authz_string_matches(&s->pats[i], text))
			return 1;
	return 0;
}

static const char *str_text(const struct az_str *s)
{
	return s->key + 2;
}

/* A string became known: it joins every set of its kind it matches. */
static void expand_add(struct km_authz *a, struct az_str *str)
{
	for (size_t i = 0; i < a->n_string_sets[str->kind]; i++) {
		struct az_set *s = a->string_sets[str->kind][i];

		if (set_matches(s, str_text(str)))
			set_add(a, s, str->id);
	}
}

static void expand_remove(struct km_authz *a, struct az_str *str)
{
	for (size_t i = 0; i < a->n_string_sets[str->kind]; i++)
		set_del(a, a->string_sets[str->kind][i], str->id);
}

/* Fill a new string set from the known strings. */
static void set_fill(struct km_authz *a, struct az_set *s)
{
	static const char letters[] = "nap";
	struct az_str *str, *tmp;

	if (s->type == AZ_NS && set_matches(s, ""))
		set_add(a, s, 0); /* the namespace "" (and "no identity") is id 0 */
	if (s->all_exact) { /* the usual case: look each name up */
		for (size_t i = 0; i < s->n_pats; i++) {
			char key[2 * KM_RES_MAX_STRING + 32];

			snprintf(key, sizeof(key), "%c/%s", letters[s->type], s->pats[i].exact);
			HASH_FIND_STR(a->strs, key, str);
			if (str && str->wl_refs)
				set_add(a, s, str->id);
		}
		return;
	}
	HASH_ITER(hh, a->strs, str, tmp)
		if (str->kind == s->type && str->wl_refs && set_matches(s, str_text(str)))
			set_add(a, s, str->id);
}

/* ---- interned identity strings ----------------------------------------------------------- */

static struct az_str *str_get(struct km_authz *a, int kind, const char *text)
{
	static const char letters[] = "nap";
	struct az_str *s;
	size_t n = strlen(text) + 3;
	char *key = malloc(n);

	if (!key) {
		a->oom = 1;
		return NULL;
	}
	snprintf(key, n, "%c/%s", letters[kind], text);
	HASH_FIND_STR(a->strs, key, s);
	if (s) {
		free(key);
		return s;
	}
	if (!(s = calloc(1, sizeof(*s))) || !(s->id = km_ids_alloc(&a->ids, key, s))) {
		free(s);
		free(key);
		a->oom = 1;
		return NULL;
	}
	s->key = key;
	s->kind = kind;
	HASH_ADD_KEYPTR(hh, a->strs, s->key, n - 1, s);
	return s;
}

static void str_put(struct km_authz *a, struct az_str *s)
{
	if (!s || s->wl_refs || s->pol_refs)
		return;
	HASH_DEL(a->strs, s);
	km_ids_release(&a->ids, s->id);
	free(s->key);
	free(s);
}

static void str_wl_ref(struct km_authz *a, struct az_str *s)
{
	if (s && s->wl_refs++ == 0)
		expand_add(a, s);
}

static void str_wl_unref(struct km_authz *a, struct az_str *s)
{
	if (!s)
		return;
	if (--s->wl_refs == 0)
		expand_remove(a, s);
	str_put(a, s);
}

/* The (namespace, service account) pair as one unambiguous string. */
static void sa_key(char *buf, size_t cap, const char *ns, const char *sa)
{
	snprintf(buf, cap, "%zu:%s%s", strlen(ns), ns, sa);
}

/* ---- lists ------------------------------------------------------------------------------- */

static struct az_list *list_get(struct km_authz *a, uint32_t kind, uint32_t owner, int create)
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
	struct az_list *l = list_get(a, kind, owner, 1);

	if (l)
		l->dirty = 1;
}

static int is_global(const struct az_policy *p)
{
	return p->scope == KMESH__SECURITY__SCOPE__GLOBAL ||
	       (p->scope == KMESH__SECURITY__SCOPE__NAMESPACE && !p->ns);
}

/* The lists a policy named name sits in: its scope's, and those of the workloads naming it. */
static void mark_lists_of(struct km_authz *a, const struct az_policy *p, const char *name)
{
	struct az_wl *w, *tmp;

	if (p && is_global(p))
		mark_list(a, KM_AUTHZ_OWNER_GLOBAL, 0);
	else if (p && p->scope == KMESH__SECURITY__SCOPE__NAMESPACE)
		mark_list(a, KM_AUTHZ_OWNER_NAMESPACE, p->ns->id);
	HASH_ITER(hh, a->workloads, w, tmp)
		for (size_t i = 0; i < w->n_policies; i++)
			if (strcmp(w->policies[i], name) == 0 && w->list) {
				w->list->dirty = 1;
				break;
			}
}

static void emit_entry(struct km_authz *a, const struct az_list *l, uint32_t gen, uint32_t pos,
		       const struct az_policy *p)
{
	struct km_op *op = emit(a, KM_OP_AUTHZ_LIST, p == NULL, 1);

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

static int policy_in_list(const struct km_authz *a, const struct az_list *l,
			  const struct az_policy *p)
{
	uint32_t kind = (uint32_t)(l->key >> 32), owner = (uint32_t)l->key;

	if (kind == KM_AUTHZ_OWNER_GLOBAL)
		return is_global(p);
	if (kind == KM_AUTHZ_OWNER_NAMESPACE)
		return p->scope == KMESH__SECURITY__SCOPE__NAMESPACE && p->ns && p->ns->id == owner;
	(void)a;
	return 0;
}

/* Write the list again in the other generation, switch the head, drop the old generation. */
static void rebuild(struct km_authz *a, struct az_list *l)
{
	struct az_policy **ps = NULL, *p, *tmp;
	size_t n = 0, cap = 0, n_seg[3] = { 0 };
	uint32_t gen = l->head_written ? !l->gen : 0, pos = 0;

	if ((uint32_t)(l->key >> 32) == KM_AUTHZ_OWNER_WORKLOAD) {
		for (size_t i = 0; l->wl && i < l->wl->n_policies; i++) {
			HASH_FIND_STR(a->policies, l->wl->policies[i], p);
			if (p && GROW(a, ps, cap, n + 1))
				ps[n++] = p;
		}
	} else {
		HASH_ITER(hh, a->policies, p, tmp)
			if (policy_in_list(a, l, p) && GROW(a, ps, cap, n + 1))
				ps[n++] = p;
	}
	if (n > KM_AUTHZ_LIST_MAX) {
		km_error("authz: %zu policies apply to one owner, at most %d are enforced", n,
			 KM_AUTHZ_LIST_MAX);
		n = KM_AUTHZ_LIST_MAX;
	}
	/* segments: enforced DENY, enforced ALLOW, dry run */
	for (int seg = 0; seg < 3; seg++)
		for (size_t i = 0; i < n; i++) {
			uint32_t f = ps[i]->flags;
			int s = (f & KM_AUTHZ_P_DRY_RUN) ? 2 : (f & KM_AUTHZ_P_DENY) ? 0 : 1;

			if (s != seg)
				continue;
			emit_entry(a, l, gen, pos++, ps[i]);
			n_seg[seg]++;
		}
	free(ps);
	if (n) {
		struct km_op *op = emit(a, KM_OP_AUTHZ_LIST, 0, 1);

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
		struct km_op *op = emit(a, KM_OP_AUTHZ_LIST, 1, 1);

		if (op) {
			op->list.kind = (uint32_t)(l->key >> 32);
			op->list.owner = (uint32_t)l->key;
			op->list.index = KM_AUTHZ_HEAD;
		}
	}
	if (l->head_written && gen != l->gen)
		for (uint32_t i = 0; i < l->n_written; i++)
			emit_entry(a, l, l->gen, i, NULL);
	l->gen = gen;
	l->n_written = (uint32_t)n;
	l->head_written = n > 0;
	l->dirty = 0;
}

/* ---- policies ---------------------------------------------------------------------------- */

static uint64_t fnv64(const uint8_t *p, size_t n)
{
	uint64_t h = 14695981039346656037ull;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 1099511628211ull;
	}
	return h;
}

static struct az_set *new_set(struct km_authz *a, struct az_policy *p, int type)
{
	char name[64];
	struct az_set *s;

	if (!GROW(a, p->sets, p->cap_sets, p->n_sets + 1) || !(s = calloc(1, sizeof(*s)))) {
		a->oom = 1;
		return NULL;
	}
	snprintf(name, sizeof(name), "S/%" PRIu32 "/%zu", p->id, p->n_sets);
	if (!(s->id = km_ids_alloc(&a->ids, name, s))) {
		free(s);
		a->oom = 1;
		return NULL;
	}
	s->type = type;
	p->sets[p->n_sets++] = s;
	if (type < AZ_STRING_KINDS) {
		if (!GROW(a, a->string_sets[type], a->cap_string_sets[type],
			  a->n_string_sets[type] + 1)) {
			p->n_sets--;
			km_ids_release(&a->ids, s->id);
			free(s);
			return NULL;
		}
		a->string_sets[type][a->n_string_sets[type]++] = s;
	}
	return s;
}

/* A set of n string patterns (filled by the caller, then set_fill), or NULL. */
static struct az_set *pattern_set(struct km_authz *a, struct az_policy *p, int type, size_t n)
{
	struct az_set *s;

	if (!n || !(s = new_set(a, p, type)))
		return NULL;
	if (!(s->pats = calloc(n, sizeof(*s->pats))))
		a->oom = 1;
	s->all_exact = 1;
	return s;
}

static uint32_t string_set(struct km_authz *a, struct az_policy *p, int type,
			   Kmesh__Security__StringMatch *const *l, size_t n)
{
	struct az_set *s = pattern_set(a, p, type, n);

	if (!s || !s->pats)
		return s ? s->id : 0;
	for (size_t i = 0; i < n; i++) {
		Kmesh__Security__StringMatch *m = &s->pats[s->n_pats];

		kmesh__security__string_match__init(m);
		m->match_type_case = l[i]->match_type_case;
		if (m->match_type_case != KMESH__SECURITY__STRING_MATCH__MATCH_TYPE_PRESENCE &&
		    !(m->exact = strdup(l[i]->exact))) { /* the oneof's strings share storage */
			a->oom = 1;
			continue;
		}
		if (m->match_type_case != KMESH__SECURITY__STRING_MATCH__MATCH_TYPE_EXACT)
			s->all_exact = 0;
		s->n_pats++;
	}
	set_fill(a, s);
	return s->id;
}

static uint32_t sa_set(struct km_authz *a, struct az_policy *p,
		       Kmesh__Security__ServiceAccountMatch *const *l, size_t n)
{
	struct az_set *s = pattern_set(a, p, AZ_SA, n);

	if (!s || !s->pats)
		return s ? s->id : 0;
	for (size_t i = 0; i < n; i++) {
		char key[2 * KM_RES_MAX_STRING + 32];
		Kmesh__Security__StringMatch *m = &s->pats[s->n_pats];

		sa_key(key, sizeof(key), l[i]->namespace_, l[i]->serviceaccount);
		kmesh__security__string_match__init(m);
		m->match_type_case = KMESH__SECURITY__STRING_MATCH__MATCH_TYPE_EXACT;
		if ((m->exact = strdup(key)))
			s->n_pats++;
		else
			a->oom = 1;
	}
	set_fill(a, s);
	return s->id;
}

static uint32_t port_set(struct km_authz *a, struct az_policy *p, const uint32_t *l, size_t n)
{
	struct az_set *s;

	if (!n || !(s = new_set(a, p, AZ_SET_PORT)))
		return 0;
	for (size_t i = 0; i < n; i++)
		set_add(a, s, l[i]);
	return s->id;
}

static uint32_t cidr_set(struct km_authz *a, struct az_policy *p, Kmesh__Security__Address *const *l,
			 size_t n)
{
	struct az_set *s;

	if (!n || !(s = new_set(a, p, AZ_SET_CIDR)))
		return 0;
	if (!(s->cidrs = calloc(n, sizeof(*s->cidrs)))) {
		a->oom = 1;
		return s->id;
	}
	for (size_t i = 0; i < n; i++) {
		struct az_cidr *c = &s->cidrs[s->n_cidrs++];

		memcpy(c->addr, l[i]->address.data, l[i]->address.len);
		c->len = (uint8_t)l[i]->address.len;
		c->length = (uint8_t)l[i]->length;
		emit_cidr(a, s, c, 0);
	}
	return s->id;
}

static void add_row(struct km_authz *a, struct az_policy *p, const Kmesh__Security__Match *m,
		    uint32_t flags)
{
	uint32_t *row;

	if (!GROW(a, p->rows, p->cap_rows, p->n_rows + 1))
		return;
	row = p->rows[p->n_rows++];
	memset(row, 0, sizeof(p->rows[0]));
	row[0] = flags;
	if (!m)
		return; /* a rule that always holds: every list empty */
	row[1 + KM_AF_NAMESPACES] = string_set(a, p, AZ_NS, m->namespaces, m->n_namespaces);
	row[1 + KM_AF_NOT_NAMESPACES] = string_set(a, p, AZ_NS, m->not_namespaces, m->n_not_namespaces);
	row[1 + KM_AF_PRINCIPALS] = string_set(a, p, AZ_PRINCIPAL, m->principals, m->n_principals);
	row[1 + KM_AF_NOT_PRINCIPALS] =
		string_set(a, p, AZ_PRINCIPAL, m->not_principals, m->n_not_principals);
	row[1 + KM_AF_SERVICE_ACCOUNTS] = sa_set(a, p, m->service_accounts, m->n_service_accounts);
	row[1 + KM_AF_NOT_SERVICE_ACCOUNTS] =
		sa_set(a, p, m->not_service_accounts, m->n_not_service_accounts);
	row[1 + KM_AF_SOURCE_IPS] = cidr_set(a, p, m->source_ips, m->n_source_ips);
	row[1 + KM_AF_NOT_SOURCE_IPS] = cidr_set(a, p, m->not_source_ips, m->n_not_source_ips);
	row[1 + KM_AF_DESTINATION_IPS] = cidr_set(a, p, m->destination_ips, m->n_destination_ips);
	row[1 + KM_AF_NOT_DESTINATION_IPS] =
		cidr_set(a, p, m->not_destination_ips, m->n_not_destination_ips);
	row[1 + KM_AF_DESTINATION_PORTS] = port_set(a, p, m->destination_ports, m->n_destination_ports);
	row[1 + KM_AF_NOT_DESTINATION_PORTS] =
		port_set(a, p, m->not_destination_ports, m->n_not_destination_ports);
}

/* Rules into rows. Empty clauses hold and are dropped; empty matches are skipped, so a clause of
 * only empty matches fails its rule; a rule with no clause left always holds. */
static void compile_rules(struct km_authz *a, struct az_policy *p,
			  const Kmesh__Security__Authorization *src)
{
	for (size_t r = 0; r < src->n_rules; r++) {
		const Kmesh__Security__Rule *rule = src->rules[r];
		size_t live = 0, last = 0;
		int fails = 0;

		for (size_t c = 0; c < rule->n_clauses && !fails; c++) {
			const Kmesh__Security__Clause *cl = rule->clauses[c];
			size_t nonempty = 0;

			for (size_t m = 0; m < cl->n_matches; m++)
				nonempty += !km_authz_match_empty(cl->matches[m]);
			if (cl->n_matches && !nonempty)
				fails = 1;
			if (nonempty) {
				live++;
				last = c;
			}
		}
		if (fails)
			continue;
		if (!live) {
			add_row(a, p, NULL, KM_AUTHZ_M_END_CLAUSE | KM_AUTHZ_M_END_RULE);
			continue;
		}
		for (size_t c = 0; c < rule->n_clauses; c++) {
			const Kmesh__Security__Clause *cl = rule->clauses[c];
			size_t last_m = 0;

			for (size_t m = 0; m < cl->n_matches; m++)
				if (!km_authz_match_empty(cl->matches[m]))
					last_m = m;
			for (size_t m = 0; m < cl->n_matches; m++) {
				uint32_t f = 0;

				if (km_authz_match_empty(cl->matches[m]))
					continue;
				if (m == last_m)
					f |= KM_AUTHZ_M_END_CLAUSE | (c == last ? KM_AUTHZ_M_END_RULE : 0);
				add_row(a, p, cl->matches[m], f);
			}
		}
	}
}

static void policy_free(struct km_authz *a, struct az_policy *p)
{
	for (size_t i = 0; i < p->n_sets; i++) {
		struct az_set *s = p->sets[i];

		if (s->type < AZ_STRING_KINDS)
			for (size_t j = 0; j < a->n_string_sets[s->type]; j++)
				if (a->string_sets[s->type][j] == s) {
					a->string_sets[s->type][j] =
						a->string_sets[s->type][--a->n_string_sets[s->type]];
					break;
				}
		for (size_t j = 0; j < s->n_pats; j++)
			if (s->pats[j].match_type_case != KMESH__SECURITY__STRING_MATCH__MATCH_TYPE_PRESENCE)
				free(s->pats[j].exact);
		km_ids_release(&a->ids, s->id);
		free(s->pats);
		free(s->values);
		free(s->cidrs);
		free(s);
	}
	if (p->ns) {
		p->ns->pol_refs--;
		str_put(a, p->ns);
	}
	km_ids_release(&a->ids, p->id);
	if (p->owns_stat)
		km_ids_release(&a->ids, p->stat_id);
	free(p->sets);
	free(p->rows);
	free(p->name);
	free(p);
}

static void retire(struct km_authz *a, struct az_policy *p)
{
	if (!GROW(a, a->retired, a->cap_retired, a->n_retired + 1)) {
		/* no memory to wait: its rows go now (lists may briefly name a missing policy,
		 * which BPF reads as "does not match") */
		emit_rows(a, p, 1);
		for (size_t i = 0; i < p->n_sets; i++)
			emit_set(a, p->sets[i], 1);
		policy_free(a, p);
		return;
	}
	a->retired[a->n_retired++] = p;
}

void km_authz_put_policy(struct km_authz *a, const char *name,
			 const Kmesh__Security__Authorization *src)
{
	size_t len = kmesh__security__authorization__get_packed_size(src);
	uint8_t *buf = malloc(len ? len : 1);
	struct az_policy *old, *p;
	char idname[KM_RES_MAX_STRING + 64];

	if (!buf) {
		a->oom = 1;
		return;
	}
	kmesh__security__authorization__pack(src, buf);
	HASH_FIND_STR(a->policies, name, old);
	if (old && old->hash == fnv64(buf, len)) {
		free(buf);
		return; /* same content */
	}
	if (!(p = calloc(1, sizeof(*p))) || !(p->name = strdup(name))) {
		free(p);
		free(buf);
		a->oom = 1;
		return;
	}
	p->hash = fnv64(buf, len);
	free(buf);
	p->scope = (uint32_t)src->scope;
	p->flags = (src->action == KMESH__SECURITY__ACTION__DENY ? KM_AUTHZ_P_DENY : 0) |
		   (src->dry_run ? KM_AUTHZ_P_DRY_RUN : 0);
	if (src->scope == KMESH__SECURITY__SCOPE__NAMESPACE && *src->namespace_ &&
	    (p->ns = str_get(a, AZ_NS, src->namespace_)))
		p->ns->pol_refs++;
	snprintf(idname, sizeof(idname), "P/%s/%016" PRIx64, name, p->hash);
	p->id = km_ids_alloc(&a->ids, idname, p);
	if (old) {
		p->stat_id = old->stat_id; /* the counters follow the name */
		p->owns_stat = 1;
		old->owns_stat = 0;
	} else {
		snprintf(idname, sizeof(idname), "C/%s", name);
		p->stat_id = km_ids_alloc(&a->ids, idname, p);
		p->owns_stat = 1;
	}
	if (!p->id || !p->stat_id)
		a->oom = 1;
	compile_rules(a, p, src);
	emit_rows(a, p, 0);
	a->n_rows += p->n_rows;
	if (old) {
		mark_lists_of(a, old, name);
		HASH_DEL(a->policies, old);
		a->n_rows -= old->n_rows;
		retire(a, old);
	}
	HASH_ADD_KEYPTR(hh, a->policies, p->name, strlen(p->name), p);
	mark_lists_of(a, p, name);
	km_debug("authz: %s compiled: policy %u, %zu rows, %zu sets", name, p->id, p->n_rows,
		 p->n_sets);
}

void km_authz_remove_policy(struct km_authz *a, const char *name)
{
	struct az_policy *p;

	HASH_FIND_STR(a->policies, name, p);
	if (!p)
		return;
	mark_lists_of(a, p, name);
	HASH_DEL(a->policies, p);
	a->n_rows -= p->n_rows;
	retire(a, p);
}

/* ---- workloads --------------------------------------------------------------------------- */

static void wl_set_policies(struct km_authz *a, struct az_wl *w, const struct km_workload_res *r)
{
	int same = r && w->n_policies == r->n_policies;

	for (size_t i = 0; same && i < w->n_policies; i++)
		same = strcmp(w->policies[i], r->policies[i]) == 0;
	if (same)
		return;
	for (size_t i = 0; i < w->n_policies; i++)
		free(w->policies[i]);
	free(w->policies);
	w->policies = NULL;
	w->n_policies = 0;
	if (r && r->n_policies && (w->policies = calloc(r->n_policies, sizeof(char *)))) {
		for (uint32_t i = 0; i < r->n_policies; i++)
			if ((w->policies[w->n_policies] = strdup(r->policies[i])))
				w->n_policies++;
	} else if (r && r->n_policies) {
		a->oom = 1;
	}
	if (!w->list && w->n_policies && (w->list = list_get(a, KM_AUTHZ_OWNER_WORKLOAD, w->id, 1)))
		w->list->wl = w;
	if (w->list)
		w->list->dirty = 1;
}

static int addr_in(const struct km_addr *l, size_t n, const struct km_addr *x)
{
	for (size_t i = 0; i < n; i++)
		if (memcmp(&l[i], x, sizeof(*x)) == 0)
			return 1;
	return 0;
}

/* Make w's identity rows say what r says (r NULL: none). */
static void wl_set_identity(struct km_authz *a, struct az_wl *w, const struct km_workload_res *r)
{
	struct az_str *next[AZ_STRING_KINDS] = { 0 };
	struct km_addr *addrs = NULL;
	size_t n_addrs = 0;
	int changed = 0;

	if (r && !r->host_network && strcmp(r->network ? r->network : "", a->network) == 0 &&
	    r->n_addrs) {
		struct km_authz_peer peer;
		char buf[3 * KM_RES_MAX_STRING + 32];

		km_authz_peer_of(r, &peer);
		if (*peer.namespace)
			next[AZ_NS] = str_get(a, AZ_NS, peer.namespace);
		sa_key(buf, sizeof(buf), peer.namespace, peer.service_account);
		next[AZ_SA] = str_get(a, AZ_SA, buf);
		km_authz_principal(&peer, buf, sizeof(buf));
		next[AZ_PRINCIPAL] = str_get(a, AZ_PRINCIPAL, buf);
		if ((addrs = malloc(r->n_addrs * sizeof(*addrs)))) {
			memcpy(addrs, r->addrs, r->n_addrs * sizeof(*addrs));
			n_addrs = r->n_addrs;
		} else {
			a->oom = 1;
		}
	}
	for (int k = 0; k < AZ_STRING_KINDS; k++) {
		changed |= next[k] != w->str[k];
		str_wl_ref(a, next[k]);
	}
	/* addresses gone: their rows go unless another workload took them since */
	for (size_t i = 0; i < w->n_addrs; i++) {
		struct az_addr *e;

		if (addr_in(addrs, n_addrs, &w->addrs[i]))
			continue;
		HASH_FIND(hh, a->addrs, &w->addrs[i], sizeof(struct km_addr), e);
		if (e && e->owner == w) {
			HASH_DEL(a->addrs, e);
			free(e);
			emit_ident(a, w, &w->addrs[i], 1);
		}
	}
	for (int k = 0; k < AZ_STRING_KINDS; k++) {
		struct az_str *old = w->str[k];

		w->str[k] = next[k];
		str_wl_unref(a, old);
	}
	for (size_t i = 0; i < n_addrs; i++) {
		struct az_addr *e;

		HASH_FIND(hh, a->addrs, &addrs[i], sizeof(struct km_addr), e);
		if (!e && (e = calloc(1, sizeof(*e)))) {
			e->addr = addrs[i];
			HASH_ADD(hh, a->addrs, addr, sizeof(e->addr), e);
		} else if (!e) {
			a->oom = 1;
			continue;
		} else if (e->owner == w && !changed && addr_in(w->addrs, w->n_addrs, &addrs[i])) {
			continue; /* unchanged row */
		}
		e->owner = w;
		emit_ident(a, w, &addrs[i], 0);
	}
	free(w->addrs);
	w->addrs = addrs;
	w->n_addrs = n_addrs;
}

void km_authz_put_workload(struct km_authz *a, const struct km_workload_res *r, uint32_t id)
{
	struct az_wl *w;

	HASH_FIND_STR(a->workloads, r->uid, w);
	if (w && w->id != id) {
		km_authz_remove_workload(a, r->uid);
		w = NULL;
	}
	if (!w) {
		if (!(w = calloc(1, sizeof(*w))) || !(w->uid = strdup(r->uid))) {
			free(w);
			a->oom = 1;
			return;
		}
		w->id = id;
		HASH_ADD_KEYPTR(hh, a->workloads, w->uid, strlen(w->uid), w);
	}
	wl_set_identity(a, w, r);
	wl_set_policies(a, w, r);
}

void km_authz_remove_workload(struct km_authz *a, const char *uid)
{
	struct az_wl *w;

	HASH_FIND_STR(a->workloads, uid, w);
	if (!w)
		return;
	wl_set_identity(a, w, NULL);
	wl_set_policies(a, w, NULL);
	if (w->list)
		w->list->wl = NULL; /* rebuilt empty at the flush, then freed */
	HASH_DEL(a->workloads, w);
	free(w->uid);
	free(w);
}

/* ---- flush, replay, free ----------------------------------------------------------------- */

void km_authz_flush(struct km_authz *a)
{
	struct az_list *l, *tmp;

	HASH_ITER(hh, a->lists, l, tmp) {
		if (l->dirty)
			rebuild(a, l);
		if (!l->head_written && !l->wl) { /* empty, and no workload will fill it */
			HASH_DEL(a->lists, l);
			free(l);
		}
	}
	for (size_t i = 0; i < a->n_retired; i++) {
		struct az_policy *p = a->retired[i];

		emit_rows(a, p, 1);
		for (size_t j = 0; j < p->n_sets; j++)
			emit_set(a, p->sets[j], 1);
		policy_free(a, p);
	}
	a->n_retired = 0;
}

void km_authz_replay(struct km_authz *a)
{
	struct az_addr *e, *etmp;
	struct az_policy *p, *ptmp;
	struct az_list *l, *ltmp;

	km_authz_flush(a);
	HASH_ITER(hh, a->addrs, e, etmp)
		emit_ident(a, e->owner, &e->addr, 0);
	HASH_ITER(hh, a->policies, p, ptmp) {
		for (size_t i = 0; i < p->n_sets; i++)
			emit_set(a, p->sets[i], 0);
		emit_rows(a, p, 0);
	}
	HASH_ITER(hh, a->lists, l, ltmp)
		l->dirty = 1;
	km_authz_flush(a);
}

void km_authz_free(struct km_authz *a)
{
	struct az_wl *w, *wtmp;
	struct az_policy *p, *ptmp;
	struct az_list *l, *ltmp;

	/* rows are left in the tables: freeing is not uninstalling */
	HASH_ITER(hh, a->workloads, w, wtmp) {
		for (size_t i = 0; i < w->n_policies; i++)
			free(w->policies[i]);
		free(w->policies);
		free(w->addrs);
		for (int k = 0; k < AZ_STRING_KINDS; k++)
			if (w->str[k])
				w->str[k]->wl_refs = 0;
		HASH_DEL(a->workloads, w);
		free(w->uid);
		free(w);
	}
	HASH_ITER(hh, a->policies, p, ptmp) {
		HASH_DEL(a->policies, p);
		policy_free(a, p);
	}
	for (size_t i = 0; i < a->n_retired; i++)
		policy_free(a, a->retired[i]);
	free(a->retired);
	HASH_ITER(hh, a->lists, l, ltmp) {
		HASH_DEL(a->lists, l);
		free(l);
	}
	{
		struct az_addr *e, *etmp;
		struct az_str *s, *stmp;

		HASH_ITER(hh, a->addrs, e, etmp) {
			HASH_DEL(a->addrs, e);
			free(e);
		}
		HASH_ITER(hh, a->strs, s, stmp) {
			HASH_DEL(a->strs, s);
			free(s->key);
			free(s);
		}
	}
	for (int k = 0; k < AZ_STRING_KINDS; k++)
		free(a->string_sets[k]);
	km_ids_free(&a->ids);
	free(a->network);
	memset(a, 0, sizeof(*a));
}

void km_authz_each_policy(const struct km_authz *a, km_authz_policy_info_cb cb, void *arg)
{
	struct az_policy *p, *tmp;

	HASH_ITER(hh, a->policies, p, tmp) {
		struct km_authz_policy_info info = {
			.name = p->name, .policy_id = p->id, .stat_id = p->stat_id,
			.deny = !!(p->flags & KM_AUTHZ_P_DENY), .dry_run = !!(p->flags & KM_AUTHZ_P_DRY_RUN),
			.scope = p->scope, .rows = p->n_rows, .sets = p->n_sets,
		};

		cb(arg, &info);
	}
}

void km_authz_stats(const struct km_authz *a, struct km_authz_stats *st)
{
	struct az_policy *p, *tmp;

	memset(st, 0, sizeof(*st));
	st->policies = HASH_COUNT(a->policies);
	st->lists = HASH_COUNT(a->lists);
	st->identities = HASH_COUNT(a->addrs);
	st->strings = HASH_COUNT(a->strs);
	HASH_ITER(hh, a->policies, p, tmp)
		for (size_t i = 0; i < p->n_sets; i++)
			st->set_members += p->sets[i]->n_values + p->sets[i]->n_cidrs;
}
