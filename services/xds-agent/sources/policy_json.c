/* policy_json.c — Authorization JSON onto the protobuf-c message (see policy_json.h). */
#include "services/xds-agent/sources/policy_json.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/sources/json_pb.h"

#define MAX_ITEMS 4096 /* per list, as the policy store allows */

typedef Kmesh__Security__Match pb_match;

static int string_match(const json_t *o, Kmesh__Security__StringMatch **out, const char *path,
			char *err)
{
	static const char *const kinds[] = { "exact", "prefix", "suffix" };
	Kmesh__Security__StringMatch *m = malloc(sizeof(*m));
	int found = 0;

	if (!m)
		return km_jbad(err, path, "out of memory");
	kmesh__security__string_match__init(m);
	*out = m;
	if (!json_is_object(o) || json_object_size(o) != 1)
		return km_jbad(err, path, "must be an object with one of exact, prefix, suffix, presence");
	for (int i = 0; i < 3; i++) {
		char *text = NULL;

		if (!km_jfield(o, kinds[i], NULL))
			continue;
		if (km_jstring(o, kinds[i], NULL, &text, path, err))
			return -1;
		m->match_type_case = (Kmesh__Security__StringMatch__MatchTypeCase)(
			KMESH__SECURITY__STRING_MATCH__MATCH_TYPE_EXACT + i);
		m->exact = text; /* the union's members are all char * */
		found = 1;
	}
	if (!found && km_jfield(o, "presence", NULL)) {
		if (!(m->presence = malloc(sizeof(*m->presence))))
			return km_jbad(err, path, "out of memory");
		kmesh__security__empty__init(m->presence);
		m->match_type_case = KMESH__SECURITY__STRING_MATCH__MATCH_TYPE_PRESENCE;
		found = 1;
	}
	return found ? 0 : km_jbad(err, path, "must hold one of exact, prefix, suffix, presence");
}

static int address(const json_t *o, Kmesh__Security__Address **out, const char *path, char *err)
{
	Kmesh__Security__Address *a = malloc(sizeof(*a));
	json_t *ip, *len;

	if (!a)
		return km_jbad(err, path, "out of memory");
	kmesh__security__address__init(a);
	*out = a;
	if (!json_is_object(o) || !(ip = km_jfield(o, "address", NULL)))
		return km_jbad(err, path, "must be an object with an 'address'");
	if (km_jip_bytes(ip, &a->address, path, err))
		return -1;
	len = km_jfield(o, "length", NULL);
	return len ? km_ju32(len, &a->length, path, "length", err) : 0;
}

static int account(const json_t *o, Kmesh__Security__ServiceAccountMatch **out, const char *path,
		   char *err)
{
	Kmesh__Security__ServiceAccountMatch *a = malloc(sizeof(*a));

	if (!a)
		return km_jbad(err, path, "out of memory");
	kmesh__security__service_account_match__init(a);
	*out = a;
	if (!json_is_object(o))
		return km_jbad(err, path, "must be an object");
	return km_jstring(o, "namespace", NULL, &a->namespace_, path, err) ||
	       km_jstring(o, "serviceAccount", "service_account", &a->serviceaccount, path, err);
}

enum list_kind { STRINGS, ADDRESSES, PORTS, ACCOUNTS };

/* The twelve lists of a Match: where each one's count and array are. */
static const struct match_list {
	const char *json, *proto;
	enum list_kind kind;
	size_t n_off, arr_off;
} match_lists[] = {
#define L(j, p, k, f) { j, p, k, offsetof(pb_match, n_##f), offsetof(pb_match, f) }
	L("namespaces", NULL, STRINGS, namespaces),
	L("notNamespaces", "not_namespaces", STRINGS, not_namespaces),
	L("principals", NULL, STRINGS, principals),
	L("notPrincipals", "not_principals", STRINGS, not_principals),
	L("sourceIps", "source_ips", ADDRESSES, source_ips),
	L("notSourceIps", "not_source_ips", ADDRESSES, not_source_ips),
	L("destinationIps", "destination_ips", ADDRESSES, destination_ips),
	L("notDestinationIps", "not_destination_ips", ADDRESSES, not_destination_ips),
	L("destinationPorts", "destination_ports", PORTS, destination_ports),
	L("notDestinationPorts", "not_destination_ports", PORTS, not_destination_ports),
	L("serviceAccounts", "service_accounts", ACCOUNTS, service_accounts),
	L("notServiceAccounts", "not_service_accounts", ACCOUNTS, not_service_accounts),
#undef L
};

static int match_list(const json_t *o, const struct match_list *l, pb_match *m, const char *path,
		      char *err)
{
	size_t *n = (size_t *)((char *)m + l->n_off);
	void **arr = (void **)((char *)m + l->arr_off);
	json_t *list, *item;
	char sub[128];
	size_t i;

	if (km_jarray(o, l->json, l->proto, MAX_ITEMS, &list, path, err))
		return -1;
	if (!list)
		return 0;
	*arr = calloc(json_array_size(list) ? json_array_size(list) : 1,
		      l->kind == PORTS ? sizeof(uint32_t) : sizeof(void *));
	if (!*arr)
		return km_jbad(err, path, "out of memory");
	json_array_foreach(list, i, item) {
		int rc;

		snprintf(sub, sizeof(sub), "%s.%s[%zu]", path, l->json, i);
		switch (l->kind) {
		case STRINGS:
			rc = string_match(item, &((Kmesh__Security__StringMatch **)*arr)[i], sub, err);
			break;
		case ADDRESSES:
			rc = address(item, &((Kmesh__Security__Address **)*arr)[i], sub, err);
			break;
		case ACCOUNTS:
			rc = account(item, &((Kmesh__Security__ServiceAccountMatch **)*arr)[i], sub, err);
			break;
		default:
			rc = km_ju32(item, &((uint32_t *)*arr)[i], sub, "port", err);
		}
		/* counted once allocated, so free_unpacked frees what failed half-way */
		if (l->kind == PORTS ? rc == 0 : ((void **)*arr)[i] != NULL)
			(*n)++;
		if (rc)
			return -1;
	}
	return 0;
}

static int match(const json_t *o, pb_match **out, const char *path, char *err)
{
	pb_match *m = malloc(sizeof(*m));

	if (!m)
		return km_jbad(err, path, "out of memory");
	kmesh__security__match__init(m);
	*out = m;
	if (!json_is_object(o))
		return km_jbad(err, path, "must be an object");
	for (size_t i = 0; i < sizeof(match_lists) / sizeof(match_lists[0]); i++)
		if (match_list(o, &match_lists[i], m, path, err))
			return -1;
	return 0;
}

/* {"LIST": [ITEM, ...]} into a counted array of messages made by one(). */
static int messages(const json_t *o, const char *name, void ***arr, size_t *n, const char *path,
		    char *err, int (*one)(const json_t *, void **, const char *, char *))
{
	json_t *list, *item;
	char sub[128];
	size_t i;

	if (!json_is_object(o))
		return km_jbad(err, path, "must be an object");
	if (km_jarray(o, name, NULL, MAX_ITEMS, &list, path, err))
		return -1;
	if (!list)
		return 0;
	if (!KM_JALLOC_ARRAY(*arr, json_array_size(list)))
		return km_jbad(err, path, "out of memory");
	json_array_foreach(list, i, item) {
		int rc;

		snprintf(sub, sizeof(sub), "%s.%s[%zu]", path, name, i);
		rc = one(item, &(*arr)[i], sub, err);
		if ((*arr)[i])
			(*n)++;
		if (rc)
			return -1;
	}
	return 0;
}

static int one_match(const json_t *o, void **out, const char *path, char *err)
{
	return match(o, (pb_match **)out, path, err);
}

static int one_clause(const json_t *o, void **out, const char *path, char *err)
{
	Kmesh__Security__Clause *c = malloc(sizeof(*c));

	if (!(*out = c))
		return km_jbad(err, path, "out of memory");
	kmesh__security__clause__init(c);
	return messages(o, "matches", (void ***)&c->matches, &c->n_matches, path, err, one_match);
}

static int one_rule(const json_t *o, void **out, const char *path, char *err)
{
	Kmesh__Security__Rule *r = malloc(sizeof(*r));

	if (!(*out = r))
		return km_jbad(err, path, "out of memory");
	kmesh__security__rule__init(r);
	return messages(o, "clauses", (void ***)&r->clauses, &r->n_clauses, path, err, one_clause);
}

int km_json_policy_pb(const json_t *o, const char *path, Kmesh__Security__Authorization **out,
		      char *err)
{
	static const char *const scopes[] = { "GLOBAL", "NAMESPACE", "WORKLOAD_SELECTOR" };
	static const char *const actions[] = { "ALLOW", "DENY" };
	Kmesh__Security__Authorization *a = malloc(sizeof(*a));
	json_t *v;
	int e, dry;

	if (!(*out = a))
		return km_jbad(err, path, "out of memory");
	kmesh__security__authorization__init(a);
	if (!json_is_object(o))
		return km_jbad(err, path, "must be an object");
	if (km_jstring(o, "name", NULL, &a->name, path, err) ||
	    km_jstring(o, "namespace", NULL, &a->namespace_, path, err))
		return -1;
	if ((v = km_jfield(o, "scope", NULL))) {
		if (km_jenum(v, scopes, 3, &e, path, "scope", err))
			return -1;
		a->scope = (Kmesh__Security__Scope)e;
	}
	if ((v = km_jfield(o, "action", NULL))) {
		if (km_jenum(v, actions, 2, &e, path, "action", err))
			return -1;
		a->action = (Kmesh__Security__Action)e;
	}
	if ((v = km_jfield(o, "dryRun", "dry_run"))) {
		if (km_jbool(v, &dry, path, "dryRun", err))
			return -1;
		a->dry_run = dry;
	}
	return messages(o, "rules", (void ***)&a->rules, &a->n_rules, path, err, one_rule);
}
