/* authz_query.c — see authz_query.h. */
#include "services/xds-agent/authz/authz_query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/authz/authz_eval.h"

struct applying {
	const struct km_workload_res *dst;
	const Kmesh__Security__Authorization **policies;
	const char **names;
	size_t n;
};

static void collect(void *arg, const char *name, const Kmesh__Security__Authorization *p)
{
	struct applying *a = arg;

	if (km_authz_policy_applies(p, name, a->dst)) {
		a->policies[a->n] = p;
		a->names[a->n++] = name;
	}
}

/* "<td>/ns/<ns>/sa/<sa>" into its parts (pointers into buf). Returns 0, or -1. */
static int parse_principal(const char *principal, char *buf, size_t len, struct km_authz_peer *peer)
{
	char *ns, *sa;

	if (!principal || snprintf(buf, len, "%s", principal) >= (int)len)
		return -1;
	if (!(ns = strstr(buf, "/ns/")) || !(sa = strstr(ns + 4, "/sa/")) || ns == buf ||
	    sa == ns + 4 || !sa[4] || strchr(sa + 4, '/'))
		return -1;
	*ns = '\0';
	*sa = '\0';
	peer->trust_domain = buf;
	peer->namespace = ns + 4;
	peer->service_account = sa + 4;
	return 0;
}

int km_authz_query(const struct km_model *m, const struct km_policy_store *ps,
		   const struct km_addr *src, const struct km_addr *dst, uint16_t dst_port,
		   const char *principal, char *why, size_t whylen)
{
	struct applying a = { .dst = km_model_workload_at(m, dst) };
	struct km_authz_peer peer;
	struct km_authz_conn_ref c = { .src = *src, .dst = *dst, .dst_port = dst_port };
	char buf[600];
	long decider = -1;
	int verdict;

	if (parse_principal(principal, buf, sizeof(buf), &peer) == 0)
		c.peer = &peer;
	a.policies = calloc(ps->count + 1, sizeof(*a.policies));
	a.names = calloc(ps->count + 1, sizeof(*a.names));
	if (!a.policies || !a.names) {
		free(a.policies);
		free(a.names);
		snprintf(why, whylen, "out of memory");
		return 0;
	}
	km_policy_store_each(ps, collect, &a);
	verdict = km_authz_decide(a.policies, a.n, &c, &decider);
	if (decider >= 0)
		snprintf(why, whylen, "%s by %s", verdict == KM_AUTHZ_ALLOW ? "allowed" : "denied",
			 a.names[decider]);
	else if (verdict == KM_AUTHZ_ALLOW)
		snprintf(why, whylen, "allowed: no ALLOW policy applies%s",
			 a.dst ? "" : " (the destination is no workload known)");
	else
		snprintf(why, whylen, "denied: no ALLOW policy matches");
	free(a.policies);
	free(a.names);
	return verdict == KM_AUTHZ_ALLOW;
}
