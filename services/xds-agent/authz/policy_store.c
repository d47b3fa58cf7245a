/* policy_store.c — Authorization resources by name (see policy_store.h). */
#include "shared/errbuf.h"
#include "services/xds-agent/authz/policy_store.h"
#include "services/xds-agent/authz/authz_compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uthash.h>

#define MAX_ITEMS 4096 /* rules, clauses, matches and list entries, each */
#define MAX_NAME 253

struct km_policy {
	char *name;
	char *version;
	int unconfirmed; /* marked for a sweep; a put replaces the entry, unmarked */
	Kmesh__Security__Authorization *msg;
	UT_hash_handle hh;
};

static int check_addrs(Kmesh__Security__Address *const *a, size_t n, const char *field, char *err,
		       size_t errlen)
{
	if (n > MAX_ITEMS)
		return km_errf(err, errlen, "%s: %zu entries, at most %d", field, n, MAX_ITEMS);
	for (size_t i = 0; i < n; i++) {
		size_t len = a[i]->address.len;

		if (len != 4 && len != 16)
			return km_errf(err, errlen, "%s[%zu]: address must be 4 or 16 bytes", field, i);
		if (a[i]->length > len * 8)
			return km_errf(err, errlen, "%s[%zu]: prefix length %u too long for the address",
				   field, i, a[i]->length);
	}
	return 0;
}

static int check_ports(const uint32_t *p, size_t n, const char *field, char *err, size_t errlen)
{
	if (n > MAX_ITEMS)
		return km_errf(err, errlen, "%s: %zu entries, at most %d", field, n, MAX_ITEMS);
	for (size_t i = 0; i < n; i++)
		if (p[i] > 65535)
			return km_errf(err, errlen, "%s[%zu]: port %u out of range", field, i, p[i]);
	return 0;
}

static int check_strings(Kmesh__Security__StringMatch *const *s, size_t n, const char *field,
			 char *err, size_t errlen)
{
	if (n > MAX_ITEMS)
		return km_errf(err, errlen, "%s: %zu entries, at most %d", field, n, MAX_ITEMS);
	for (size_t i = 0; i < n; i++)
		if (s[i]->match_type_case == KMESH__SECURITY__STRING_MATCH__MATCH_TYPE__NOT_SET)
			return km_errf(err, errlen, "%s[%zu]: no exact, prefix, suffix or presence", field, i);
	return 0;
}

static int validate(const Kmesh__Security__Authorization *a, char *err, size_t errlen)
{
	if (!a->name || !*a->name || strlen(a->name) > MAX_NAME)
		return km_errf(err, errlen, "'name' is required (at most %d bytes)", MAX_NAME);
	if (a->namespace_ && strlen(a->namespace_) > MAX_NAME)
		return km_errf(err, errlen, "'namespace' is too long");
	if ((unsigned)a->scope > KMESH__SECURITY__SCOPE__WORKLOAD_SELECTOR ||
	    (unsigned)a->action > KMESH__SECURITY__ACTION__DENY)
		return km_errf(err, errlen, "unknown scope %d or action %d", a->scope, a->action);
	size_t rows = 0;

	if (a->n_rules > MAX_ITEMS)
		return km_errf(err, errlen, "%zu rules, at most %d", a->n_rules, MAX_ITEMS);
	for (size_t r = 0; r < a->n_rules; r++) {
		const Kmesh__Security__Rule *rule = a->rules[r];

		if (rule->n_clauses > MAX_ITEMS)
			return km_errf(err, errlen, "rule %zu: too many clauses", r);
		for (size_t c = 0; c < rule->n_clauses; c++) {
			const Kmesh__Security__Clause *cl = rule->clauses[c];

			if (cl->n_matches > MAX_ITEMS)
				return km_errf(err, errlen, "rule %zu clause %zu: too many matches", r, c);
			/* each match is one compiled row (kmesh_maps.h km_authz_match) */
			if ((rows += cl->n_matches) > KM_AUTHZ_MATCHES_MAX)
				return km_errf(err, errlen, "more than %d matches in all", KM_AUTHZ_MATCHES_MAX);
			for (size_t m = 0; m < cl->n_matches; m++) {
				const Kmesh__Security__Match *x = cl->matches[m];

				if (check_strings(x->namespaces, x->n_namespaces, "namespaces", err, errlen) ||
				    check_strings(x->not_namespaces, x->n_not_namespaces, "not_namespaces", err, errlen) ||
				    check_strings(x->principals, x->n_principals, "principals", err, errlen) ||
				    check_strings(x->not_principals, x->n_not_principals, "not_principals", err, errlen) ||
				    check_addrs(x->source_ips, x->n_source_ips, "source_ips", err, errlen) ||
				    check_addrs(x->not_source_ips, x->n_not_source_ips, "not_source_ips", err, errlen) ||
				    check_addrs(x->destination_ips, x->n_destination_ips, "destination_ips", err, errlen) ||
				    check_addrs(x->not_destination_ips, x->n_not_destination_ips, "not_destination_ips", err, errlen) ||
				    check_ports(x->destination_ports, x->n_destination_ports, "destination_ports", err, errlen) ||
				    check_ports(x->not_destination_ports, x->n_not_destination_ports, "not_destination_ports", err, errlen))
					return -1;
			}
		}
	}
	return 0;
}

void km_policy_store_init(struct km_policy_store *ps)
{
	struct timespec t;

	memset(ps, 0, sizeof(*ps));
	/* from a value of this process's own: a restarted agent's generation never equals its
	 * predecessor's by chance, so the tunnel asks again for its open streams */
	clock_gettime(CLOCK_REALTIME, &t);
	ps->generation = ((uint64_t)t.tv_sec << 30) ^ (uint64_t)t.tv_nsec ^ ((uint64_t)getpid() << 48);
}

static void policy_free(struct km_policy *p)
{
	kmesh__security__authorization__free_unpacked(p->msg, NULL);
	free(p->version);
	free(p->name);
	free(p);
}

void km_policy_store_free(struct km_policy_store *ps)
{
	struct km_policy *p, *tmp;

	HASH_ITER(hh, ps->by_name, p, tmp) {
		HASH_DEL(ps->by_name, p);
		policy_free(p);
	}
	ps->count = 0;
}

int km_policy_store_put(struct km_policy_store *ps, const uint8_t *data, size_t len, char **name,
			char *err, size_t errlen)
{
	Kmesh__Security__Authorization *a = kmesh__security__authorization__unpack(NULL, len, data);
	struct km_policy *p, *old;
	size_t n;

	*name = NULL;
	if (!a)
		return km_errf(err, errlen, "not a valid istio.security.Authorization message");
	if (a->name && *a->name && strlen(a->name) <= MAX_NAME && strlen(a->namespace_) <= MAX_NAME) {
		n = strlen(a->namespace_) + strlen(a->name) + 2;
		if ((*name = malloc(n)))
			snprintf(*name, n, "%s/%s", a->namespace_, a->name);
	}
	if (validate(a, err, errlen) != 0 || !*name) {
		if (!*name)
			km_errf(err, errlen, "out of memory");
		kmesh__security__authorization__free_unpacked(a, NULL);
		return -1;
	}
	p = calloc(1, sizeof(*p));
	if (!p || !(p->name = strdup(*name))) {
		free(p);
		kmesh__security__authorization__free_unpacked(a, NULL);
		return km_errf(err, errlen, "out of memory");
	}
	p->msg = a;
	HASH_FIND_STR(ps->by_name, p->name, old);
	if (old) {
		HASH_DEL(ps->by_name, old);
		policy_free(old);
		ps->count--;
	}
	HASH_ADD_KEYPTR(hh, ps->by_name, p->name, strlen(p->name), p);
	ps->count++;
	ps->generation++;
	if (ps->authz)
		km_authz_put_policy(ps->authz, p->name, p->msg);
	return 0;
}

int km_policy_store_remove(struct km_policy_store *ps, const char *name)
{
	struct km_policy *p;

	HASH_FIND_STR(ps->by_name, name, p);
	if (!p)
		return 0;
	if (ps->authz)
		km_authz_remove_policy(ps->authz, name);
	HASH_DEL(ps->by_name, p);
	policy_free(p);
	ps->count--;
	ps->generation++;
	return 1;
}

const Kmesh__Security__Authorization *km_policy_store_find(const struct km_policy_store *ps,
							   const char *name)
{
	struct km_policy *p;

	HASH_FIND_STR(ps->by_name, name, p);
	return p ? p->msg : NULL;
}

void km_policy_store_set_version(struct km_policy_store *ps, const char *name, const char *version)
{
	struct km_policy *p;
	char *copy;

	HASH_FIND_STR(ps->by_name, name, p);
	if (!p || !(copy = strdup(version ? version : "")))
		return;
	free(p->version);
	p->version = copy;
}

size_t km_policy_store_each_version(const struct km_policy_store *ps, km_version_cb cb, void *arg)
{
	struct km_policy *p, *tmp;
	size_t n = 0;

	HASH_ITER(hh, ps->by_name, p, tmp) {
		if (!p->version)
			continue;
		if (cb)
			cb(arg, p->name, p->version);
		n++;
	}
	return n;
}

size_t km_policy_store_mark_unconfirmed(struct km_policy_store *ps)
{
	struct km_policy *p, *tmp;

	HASH_ITER(hh, ps->by_name, p, tmp)
		p->unconfirmed = 1;
	return ps->count;
}

void km_policy_store_confirm(struct km_policy_store *ps, const char *name)
{
	struct km_policy *p;

	HASH_FIND_STR(ps->by_name, name, p);
	if (p)
		p->unconfirmed = 0;
}

size_t km_policy_store_sweep_unconfirmed(struct km_policy_store *ps)
{
	struct km_policy *p, *tmp;
	size_t n = 0;

	HASH_ITER(hh, ps->by_name, p, tmp) { /* removes only the current entry: safe here */
		if (!p->unconfirmed)
			continue;
		if (ps->authz)
			km_authz_remove_policy(ps->authz, p->name);
		HASH_DEL(ps->by_name, p);
		policy_free(p);
		ps->count--;
		n++;
	}
	ps->generation += n;
	return n;
}

void km_policy_store_each(const struct km_policy_store *ps, km_policy_cb cb, void *arg)
{
	struct km_policy *p, *tmp;

	HASH_ITER(hh, ps->by_name, p, tmp)
		cb(arg, p->name, p->msg);
}
