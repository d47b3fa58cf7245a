/* authz_compile.c — policies and identities into km_authz_* rows (see authz_compile.h): the
 * public API, policy compilation into match rows, workloads' identity rows, flush and replay.
 * Sets and interned strings are in authz_sets.c, lists in authz_lists.c. */
#include "services/xds-agent/authz/authz_compile.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/authz/authz_eval.h"
#include "services/xds-agent/authz/authz_internal.h"
#include "shared/log.h"

void km_authz_init(struct km_authz *a, struct km_oplist *out, const char *network)
{
	memset(a, 0, sizeof(*a));
	a->out = out;
	a->network = strdup(network ? network : "");
	a->plaintext_identity = 1;
	km_ids_init(&a->ids, NULL);
}


/* ---- emission ---------------------------------------------------------------------------- */

static void emit_rows(struct km_authz *a, const struct az_policy *p, int del)
{
	for (size_t i = 0; i < p->n_rows; i++) {
		struct km_op *op = az_emit(a, KM_OP_AUTHZ_MATCH, del, 0);

		if (!op)
			return;
		op->match.policy_id = p->id;
		op->match.index = (uint32_t)i;
		op->match.flags = p->rows[i][0];
		memcpy(op->match.sets, &p->rows[i][1], sizeof(op->match.sets));
	}
}

static void emit_ident(struct km_authz *a, const struct km_authz_wl *w, uint32_t id,
		       const struct km_addr *addr, int del)
{
	struct km_op *op = az_emit(a, KM_OP_AUTHZ_IDENT, del, 0);

	if (!op)
		return;
	op->ident.addr = *addr;
	if (del)
		return;
	op->ident.workload_id = id;
	if (!a->plaintext_identity)
		return; /* the workload (its policies, its denials), not who sent it */
	op->ident.ns_id = w->ident->str[AZ_NS] ? w->ident->str[AZ_NS]->id : 0;
	op->ident.sa_id = w->ident->str[AZ_SA] ? w->ident->str[AZ_SA]->id : 0;
	op->ident.principal_id = w->ident->str[AZ_PRINCIPAL] ? w->ident->str[AZ_PRINCIPAL]->id : 0;
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

static void add_row(struct km_authz *a, struct az_policy *p, const Kmesh__Security__Match *m,
		    uint32_t flags)
{
	uint32_t *row;

	if (!GROW(a, p->rows, p->cap_rows, p->n_rows + 1))
		return;
	row = p->rows[p->n_rows++];
	memset(row, 0, sizeof(p->rows[0]));
	row[0] = flags;
	az_filter_add_row(a, p, m);
	if (!m)
		return; /* a rule that always holds: every list empty */
	row[1 + KM_AF_NAMESPACES] = az_string_set(a, p, AZ_NS, m->namespaces, m->n_namespaces);
	row[1 + KM_AF_NOT_NAMESPACES] = az_string_set(a, p, AZ_NS, m->not_namespaces, m->n_not_namespaces);
	row[1 + KM_AF_PRINCIPALS] = az_string_set(a, p, AZ_PRINCIPAL, m->principals, m->n_principals);
	row[1 + KM_AF_NOT_PRINCIPALS] =
		az_string_set(a, p, AZ_PRINCIPAL, m->not_principals, m->n_not_principals);
	row[1 + KM_AF_SERVICE_ACCOUNTS] = az_sa_set(a, p, m->service_accounts, m->n_service_accounts);
	row[1 + KM_AF_NOT_SERVICE_ACCOUNTS] =
		az_sa_set(a, p, m->not_service_accounts, m->n_not_service_accounts);
	row[1 + KM_AF_SOURCE_IPS] = az_cidr_set(a, p, m->source_ips, m->n_source_ips);
	row[1 + KM_AF_NOT_SOURCE_IPS] = az_cidr_set(a, p, m->not_source_ips, m->n_not_source_ips);
	row[1 + KM_AF_DESTINATION_IPS] = az_cidr_set(a, p, m->destination_ips, m->n_destination_ips);
	row[1 + KM_AF_NOT_DESTINATION_IPS] =
		az_cidr_set(a, p, m->not_destination_ips, m->n_not_destination_ips);
	row[1 + KM_AF_DESTINATION_PORTS] = az_port_set(a, p, m->destination_ports, m->n_destination_ports);
	row[1 + KM_AF_NOT_DESTINATION_PORTS] =
		az_port_set(a, p, m->not_destination_ports, m->n_not_destination_ports);
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
	for (size_t i = 0; i < p->n_sets; i++)
		az_set_free(a, p->sets[i]);
	az_filter_free(a, p);
	if (p->ns) {
		p->ns->pol_refs--;
		az_str_put(a, p->ns);
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
			az_emit_set(a, p->sets[i], 1);
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
	if (!a->identities_on) { /* the first policy: the identities it reads go first */
		a->identities_on = 1;
		if (a->identities_needed)
			a->identities_needed(a->identities_arg);
	}
	p->hash = fnv64(buf, len);
	free(buf);
	p->scope = (uint32_t)src->scope;
	p->flags = (src->action == KMESH__SECURITY__ACTION__DENY ? KM_AUTHZ_P_DENY : 0) |
		   (src->dry_run ? KM_AUTHZ_P_DRY_RUN : 0);
	if (src->scope == KMESH__SECURITY__SCOPE__NAMESPACE && *src->namespace_ &&
	    (p->ns = az_str_get(a, AZ_NS, src->namespace_)))
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
		az_mark_lists_of(a, old, name);
		HASH_DEL(a->policies, old);
		a->n_rows -= old->n_rows;
		retire(a, old);
	}
	HASH_ADD_KEYPTR(hh, a->policies, p->name, strlen(p->name), p);
	az_mark_lists_of(a, p, name);
	km_debug("authz: %s compiled: policy %u, %zu rows, %zu sets", name, p->id, p->n_rows,
		 p->n_sets);
}

void km_authz_remove_policy(struct km_authz *a, const char *name)
{
	struct az_policy *p;

	HASH_FIND_STR(a->policies, name, p);
	if (!p)
		return;
	az_mark_lists_of(a, p, name);
	HASH_DEL(a->policies, p);
	a->n_rows -= p->n_rows;
	retire(a, p);
}

/* The workload's own policy list (by its id: found, made once it names a policy) follows r. */
static void wl_set_policies(struct km_authz *a, const struct km_workload_res *r, uint32_t id)
{
	struct az_list *l = az_list_get(a, KM_AUTHZ_OWNER_WORKLOAD, id, 0);
	const struct km_workload_res *old = l ? l->res : NULL;
	size_t n_old = old ? old->n_policies : 0, n_new = r ? r->n_policies : 0;
	int same = n_old == n_new;

	for (size_t i = 0; same && i < n_old; i++)
		same = strcmp(old->policies[i], r->policies[i]) == 0;
	if (!same && !l && n_new)
		l = az_list_get(a, KM_AUTHZ_OWNER_WORKLOAD, id, 1);
	if (!l)
		return;
	l->res = r; /* always: the caller frees the resource r replaces */
	if (!same)
		l->dirty = 1;
}

/* The identity of r's who profile, one more workload using it (NULL when out of memory). */
static struct az_ident *ident_get(struct km_authz *a, const struct km_workload_res *r)
{
	const struct km_wl_who *who = r->who;
	struct km_authz_peer peer;
	char buf[3 * KM_RES_MAX_STRING + 32];
	struct az_ident *e;

	HASH_FIND_PTR(a->idents, &who, e);
	if (e) {
		e->refs++;
		return e;
	}
	if (!(e = calloc(1, sizeof(*e)))) {
		a->oom = 1;
		return NULL;
	}
	e->who = who;
	e->refs = 1;
	km_authz_peer_of(r, &peer);
	if (*peer.namespace)
		e->str[AZ_NS] = az_str_get(a, AZ_NS, peer.namespace);
	az_sa_key(buf, sizeof(buf), peer.namespace, peer.service_account);
	e->str[AZ_SA] = az_str_get(a, AZ_SA, buf);
	km_authz_principal(&peer, buf, sizeof(buf));
	e->str[AZ_PRINCIPAL] = az_str_get(a, AZ_PRINCIPAL, buf);
	for (int k = 0; k < AZ_STRING_KINDS; k++)
		az_str_wl_ref(a, e->str[k]);
	HASH_ADD_PTR(a->idents, who, e);
	return e;
}

/* One workload fewer uses e: the last one takes it (and its strings' reference) away. */
static void ident_put(struct km_authz *a, struct az_ident *e)
{
	if (!e || --e->refs)
		return;
	HASH_DEL(a->idents, e);
	for (int k = 0; k < AZ_STRING_KINDS; k++)
		az_str_wl_unref(a, e->str[k]);
	free(e);
}

static int same_identity(const struct az_ident *x, const struct az_ident *y)
{
	if (x == y)
		return 1;
	return x && y && memcmp(x->str, y->str, sizeof(x->str)) == 0;
}

/* Give w the identity r has here (r NULL: none). Returns 1 when what its rows would say
 * changed: it became or stopped being an identity, or became another one. */
static int wl_set_identity(struct km_authz *a, struct km_authz_wl *w, const struct km_workload_res *r)
{
	struct az_ident *next = NULL, *prev = w->ident;
	int changed;

	if (r && !r->host_network && strcmp(r->who->network ? r->who->network : "", a->network) == 0 &&
	    r->n_addrs)
		next = ident_get(a, r); /* NULL when out of memory: no identity */
	/* another profile of the same identity (the workload's name changed) writes nothing */
	changed = !same_identity(next, prev);
	w->ident = next;
	ident_put(a, prev);
	return changed;
}

void km_authz_write_address(struct km_authz *a, const struct km_addr *addr, int had_row,
			    const struct km_authz_wl *owner, uint32_t owner_id)
{
	int has_row = km_authz_is_identity(owner);

	if (!a->identities_on || (!has_row && !had_row))
		return;
	emit_ident(a, has_row ? owner : NULL, owner_id, addr, !has_row);
	a->n_ident_rows += (size_t)has_row - (size_t)had_row;
}

int km_authz_is_identity(const struct km_authz_wl *w)
{
	return w && w->ident;
}

int km_authz_put_workload(struct km_authz *a, struct km_authz_wl *w, const struct km_workload_res *r,
			  uint32_t id)
{
	int changed = wl_set_identity(a, w, r);

	wl_set_policies(a, r, id);
	return changed;
}

void km_authz_remove_workload(struct km_authz *a, struct km_authz_wl *w, uint32_t id)
{
	wl_set_identity(a, w, NULL);
	wl_set_policies(a, NULL, id); /* its list (if any) is rebuilt empty at the flush, then freed */
	memset(w, 0, sizeof(*w));
}

/* ---- flush, replay, free ----------------------------------------------------------------- */

void km_authz_flush(struct km_authz *a)
{
	struct az_list *l, *tmp;

	HASH_ITER(hh, a->lists, l, tmp) {
		if (l->dirty)
			az_list_rebuild(a, l);
		if (!l->head_written && !l->res) { /* empty, and no workload will fill it */
			HASH_DEL(a->lists, l);
			free(l->idx);
			free(l);
		}
	}
	for (size_t i = 0; i < a->n_retired; i++) {
		struct az_policy *p = a->retired[i];

		emit_rows(a, p, 1);
		for (size_t j = 0; j < p->n_sets; j++)
			az_emit_set(a, p->sets[j], 1);
		policy_free(a, p);
	}
	a->n_retired = 0;
}

void km_authz_replay(struct km_authz *a)
{
	struct az_policy *p, *ptmp;
	struct az_list *l, *ltmp;

	km_authz_flush(a);
	HASH_ITER(hh, a->policies, p, ptmp) {
		for (size_t i = 0; i < p->n_sets; i++)
			az_emit_set(a, p->sets[i], 0);
		emit_rows(a, p, 0);
	}
	HASH_ITER(hh, a->lists, l, ltmp)
		l->dirty = 1;
	km_authz_flush(a);
}

void km_authz_free(struct km_authz *a)
{
	struct az_policy *p, *ptmp;
	struct az_list *l, *ltmp;
	struct az_ident *e, *etmp;

	/* rows are left in the tables: freeing is not uninstalling */

	HASH_ITER(hh, a->idents, e, etmp) {
		HASH_DEL(a->idents, e);
		for (int k = 0; k < AZ_STRING_KINDS; k++)
			if (e->str[k])
				e->str[k]->wl_refs = 0;
		free(e);
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
		free(l->idx);
		free(l);
	}
	{
		struct az_str *s, *stmp;

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
	st->identities = a->n_ident_rows;
	st->strings = HASH_COUNT(a->strs);
	st->index_rows = a->index_rows;
	HASH_ITER(hh, a->policies, p, tmp)
		for (size_t i = 0; i < p->n_sets; i++)
			st->set_members += p->sets[i]->n_values + p->sets[i]->n_cidrs;
}
