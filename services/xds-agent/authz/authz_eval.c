/* authz_eval.c — the reference evaluator (see authz_eval.h). */
#include "services/xds-agent/authz/authz_eval.h"

#include <stdio.h>
#include <string.h>

#include "shared/addr.h"

void km_authz_peer_of(const struct km_workload_res *w, struct km_authz_peer *out)
{
	out->trust_domain = w->who->trust_domain && *w->who->trust_domain ? w->who->trust_domain : "cluster.local";
	out->namespace = w->who->namespace ? w->who->namespace : "";
	out->service_account =
		w->who->service_account && *w->who->service_account ? w->who->service_account : "default";
}

int km_authz_principal(const struct km_authz_peer *p, char *buf, size_t cap)
{
	return snprintf(buf, cap, "%s/ns/%s/sa/%s", p->trust_domain, p->namespace,
			p->service_account);
}

int km_authz_string_matches(const Kmesh__Security__StringMatch *m, const char *text)
{
	size_t tl = strlen(text), pl;

	switch (m->match_type_case) {
	case KMESH__SECURITY__STRING_MATCH__MATCH_TYPE_EXACT:
		return strcmp(m->exact, text) == 0;
	case KMESH__SECURITY__STRING_MATCH__MATCH_TYPE_PREFIX:
		pl = strlen(m->prefix);
		return pl <= tl && memcmp(text, m->prefix, pl) == 0;
	case KMESH__SECURITY__STRING_MATCH__MATCH_TYPE_SUFFIX:
		pl = strlen(m->suffix);
		return pl <= tl && memcmp(text + tl - pl, m->suffix, pl) == 0;
	case KMESH__SECURITY__STRING_MATCH__MATCH_TYPE_PRESENCE:
		return tl > 0;
	default:
		return 0;
	}
}

int km_authz_cidr_contains(const Kmesh__Security__Address *cidr, const struct km_addr *a)
{
	const uint8_t *addr, *net = cidr->address.data;
	size_t len = cidr->address.len;
	uint32_t bits = cidr->length;

	if (km_addr_is_v4(a)) {
		if (len != 4)
			return 0;
		addr = a->bytes + 12;
	} else {
		if (len != 16)
			return 0;
		addr = a->bytes;
	}
	if (bits > len * 8)
		return 0;
	for (uint32_t i = 0; i < bits / 8; i++)
		if (addr[i] != net[i])
			return 0;
	if (bits % 8) {
		uint8_t mask = (uint8_t)(0xff00u >> (bits % 8));

		if ((addr[bits / 8] & mask) != (net[bits / 8] & mask))
			return 0;
	}
	return 1;
}

int km_authz_match_empty(const Kmesh__Security__Match *m)
{
	return !m->n_namespaces && !m->n_not_namespaces && !m->n_principals &&
	       !m->n_not_principals && !m->n_source_ips && !m->n_not_source_ips &&
	       !m->n_destination_ips && !m->n_not_destination_ips && !m->n_destination_ports &&
	       !m->n_not_destination_ports && !m->n_service_accounts && !m->n_not_service_accounts;
}

/* What one field compares, for one element. */
struct field_input {
	const struct km_authz_conn_ref *c;
	const char *ns;        /* the peer's namespace, "" without a peer */
	const char *principal; /* NULL without a peer */
};

static int any_string(Kmesh__Security__StringMatch *const *l, size_t n, const char *text)
{
	if (!text)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (km_authz_string_matches(l[i], text))
			return 1;
	return 0;
}

static int any_cidr(Kmesh__Security__Address *const *l, size_t n, const struct km_addr *a)
{
	for (size_t i = 0; i < n; i++)
		if (km_authz_cidr_contains(l[i], a))
			return 1;
	return 0;
}

static int any_port(const uint32_t *l, size_t n, uint16_t port)
{
	for (size_t i = 0; i < n; i++)
		if (l[i] == port)
			return 1;
	return 0;
}

static int any_sa(Kmesh__Security__ServiceAccountMatch *const *l, size_t n,
		  const struct km_authz_peer *p)
{
	if (!p)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (strcmp(l[i]->namespace_, p->namespace) == 0 &&
		    strcmp(l[i]->serviceaccount, p->service_account) == 0)
			return 1;
	return 0;
}

/* positive list empty or some element matches, and not_ list empty or none does */
static int pair(size_t n_pos, int pos_hit, size_t n_neg, int neg_hit)
{
	return (!n_pos || pos_hit) && (!n_neg || !neg_hit);
}

static int match_holds(const Kmesh__Security__Match *m, const struct field_input *in)
{
	const struct km_authz_conn_ref *c = in->c;

	return pair(m->n_destination_ips, any_cidr(m->destination_ips, m->n_destination_ips, &c->dst),
		    m->n_not_destination_ips,
		    any_cidr(m->not_destination_ips, m->n_not_destination_ips, &c->dst)) &&
	       pair(m->n_source_ips, any_cidr(m->source_ips, m->n_source_ips, &c->src),
		    m->n_not_source_ips, any_cidr(m->not_source_ips, m->n_not_source_ips, &c->src)) &&
	       pair(m->n_destination_ports,
		    any_port(m->destination_ports, m->n_destination_ports, c->dst_port),
		    m->n_not_destination_ports,
		    any_port(m->not_destination_ports, m->n_not_destination_ports, c->dst_port)) &&
	       pair(m->n_service_accounts, any_sa(m->service_accounts, m->n_service_accounts, c->peer),
		    m->n_not_service_accounts,
		    any_sa(m->not_service_accounts, m->n_not_service_accounts, c->peer)) &&
	       pair(m->n_principals, any_string(m->principals, m->n_principals, in->principal),
		    m->n_not_principals,
		    any_string(m->not_principals, m->n_not_principals, in->principal)) &&
	       pair(m->n_namespaces, any_string(m->namespaces, m->n_namespaces, in->ns),
		    m->n_not_namespaces, any_string(m->not_namespaces, m->n_not_namespaces, in->ns));
}

int km_authz_policy_matches(const Kmesh__Security__Authorization *p,
			    const struct km_authz_conn_ref *c)
{
	char principal[3 * KM_RES_MAX_STRING + 16];
	struct field_input in = { .c = c, .ns = c->peer ? c->peer->namespace : "" };

	if (c->peer) {
		km_authz_principal(c->peer, principal, sizeof(principal));
		in.principal = principal;
	}
	/* rules OR-ed; clauses AND-ed (an empty clause holds); matches OR-ed (empty ones skipped) */
	for (size_t r = 0; r < p->n_rules; r++) {
		const Kmesh__Security__Rule *rule = p->rules[r];
		int rule_ok = 1;

		for (size_t cl = 0; cl < rule->n_clauses && rule_ok; cl++) {
			const Kmesh__Security__Clause *clause = rule->clauses[cl];
			int clause_ok = clause->n_matches == 0;

			for (size_t m = 0; m < clause->n_matches && !clause_ok; m++)
				if (!km_authz_match_empty(clause->matches[m]) &&
				    match_holds(clause->matches[m], &in))
					clause_ok = 1;
			rule_ok = clause_ok;
		}
		if (rule_ok)
			return 1;
	}
	return 0;
}

int km_authz_policy_applies(const Kmesh__Security__Authorization *p, const char *name,
			    const struct km_workload_res *dst)
{
	/* ztunnel indexes GLOBAL policies under namespace "", NAMESPACE ones under theirs */
	const char *ns = p->scope == KMESH__SECURITY__SCOPE__NAMESPACE ? p->namespace_ : "";

	if (p->scope != KMESH__SECURITY__SCOPE__WORKLOAD_SELECTOR && !*ns)
		return 1;
	if (!dst)
		return 0;
	if (p->scope == KMESH__SECURITY__SCOPE__NAMESPACE &&
	    strcmp(ns, dst->who->namespace ? dst->who->namespace : "") == 0)
		return 1;
	for (uint32_t i = 0; i < dst->n_policies; i++)
		if (strcmp(dst->policies[i], name) == 0)
			return 1;
	return 0;
}

int km_authz_decide(const Kmesh__Security__Authorization *const *policies, size_t n,
		    const struct km_authz_conn_ref *c, long *decider)
{
	long allow_hit = -1;
	int allows = 0;

	if (decider)
		*decider = -1;
	for (size_t i = 0; i < n; i++) {
		const Kmesh__Security__Authorization *p = policies[i];

		if (p->dry_run)
			continue;
		if (p->action == KMESH__SECURITY__ACTION__DENY) {
			if (km_authz_policy_matches(p, c)) {
				if (decider)
					*decider = (long)i;
				return KM_AUTHZ_DENY;
			}
		} else {
			allows = 1;
			if (allow_hit < 0 && km_authz_policy_matches(p, c))
				allow_hit = (long)i;
		}
	}
	if (!allows)
		return KM_AUTHZ_ALLOW;
	if (decider)
		*decider = allow_hit;
	return allow_hit >= 0 ? KM_AUTHZ_ALLOW : KM_AUTHZ_DENY;
}
