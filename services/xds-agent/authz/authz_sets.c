/* authz_sets.c — interned identity strings (namespaces, (namespace, service account) pairs and
 * principals, refcounted by the workloads that hold them) and the sets a compiled Match names:
 * string matches expanded into the ids of known identities and re-expanded as identities come
 * and go, ports, and CIDRs. Part of the authorization compiler (authz_internal.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/authz/authz_eval.h"
#include "services/xds-agent/authz/authz_internal.h"

/* The letter that starts an interned string's key, per enum az_kind. */
static const char kind_letters[] = "nap";

static void emit_set_value(struct km_authz *a, const struct az_set *s, uint32_t value, int del)
{
	struct km_op *op = az_emit(a, KM_OP_AUTHZ_SET, del, 0);

	if (op) {
		op->set.set_id = s->id;
		op->set.value = value;
	}
}

static void emit_cidr(struct km_authz *a, const struct az_set *s, const struct az_cidr *c, int del)
{
	struct km_op *op = az_emit(a, KM_OP_AUTHZ_CIDR, del, 0);

	if (op) {
		op->cidr.set_id = s->id;
		memcpy(op->cidr.addr, c->addr, sizeof(c->addr));
		op->cidr.addr_len = c->len;
		op->cidr.length = c->length;
	}
}

void az_emit_set(struct km_authz *a, const struct az_set *s, int del)
{
	for (size_t i = 0; i < s->n_values; i++)
		emit_set_value(a, s, s->values[i], del);
	for (size_t i = 0; i < s->n_cidrs; i++)
		emit_cidr(a, s, &s->cidrs[i], del);
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
	struct az_str *str, *tmp;

	if (s->type == AZ_NS && set_matches(s, ""))
		set_add(a, s, 0); /* the namespace "" (and "no identity") is id 0 */
	if (s->all_exact) { /* the usual case: look each name up */
		for (size_t i = 0; i < s->n_pats; i++) {
			char key[2 * KM_RES_MAX_STRING + 32];

			snprintf(key, sizeof(key), "%c/%s", kind_letters[s->type], s->pats[i].exact);
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

struct az_str *az_str_get(struct km_authz *a, int kind, const char *text)
{
	struct az_str *s;
	size_t n = strlen(text) + 3;
	char *key = malloc(n);

	if (!key) {
		a->oom = 1;
		return NULL;
	}
	snprintf(key, n, "%c/%s", kind_letters[kind], text);
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

void az_str_put(struct km_authz *a, struct az_str *s)
{
	if (!s || s->wl_refs || s->pol_refs)
		return;
	HASH_DEL(a->strs, s);
	km_ids_release(&a->ids, s->id);
	free(s->key);
	free(s);
}

void az_str_wl_ref(struct km_authz *a, struct az_str *s)
{
	if (s && s->wl_refs++ == 0)
		expand_add(a, s);
}

void az_str_wl_unref(struct km_authz *a, struct az_str *s)
{
	if (!s)
		return;
	if (--s->wl_refs == 0)
		expand_remove(a, s);
	az_str_put(a, s);
}

void az_sa_key(char *buf, size_t cap, const char *ns, const char *sa)
{
	snprintf(buf, cap, "%zu:%s%s", strlen(ns), ns, sa);
}

/* ---- the sets of a policy ---------------------------------------------------------------- */

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

uint32_t az_string_set(struct km_authz *a, struct az_policy *p, int type,
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

uint32_t az_sa_set(struct km_authz *a, struct az_policy *p,
		       Kmesh__Security__ServiceAccountMatch *const *l, size_t n)
{
	struct az_set *s = pattern_set(a, p, AZ_SA, n);

	if (!s || !s->pats)
		return s ? s->id : 0;
	for (size_t i = 0; i < n; i++) {
		char key[2 * KM_RES_MAX_STRING + 32];
		Kmesh__Security__StringMatch *m = &s->pats[s->n_pats];

		az_sa_key(key, sizeof(key), l[i]->namespace_, l[i]->serviceaccount);
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

uint32_t az_port_set(struct km_authz *a, struct az_policy *p, const uint32_t *l, size_t n)
{
	struct az_set *s;

	if (!n || !(s = new_set(a, p, AZ_SET_PORT)))
		return 0;
	for (size_t i = 0; i < n; i++)
		set_add(a, s, l[i]);
	return s->id;
}

uint32_t az_cidr_set(struct km_authz *a, struct az_policy *p, Kmesh__Security__Address *const *l,
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

void az_set_free(struct km_authz *a, struct az_set *s)
{
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
