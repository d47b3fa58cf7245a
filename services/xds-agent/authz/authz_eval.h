/* authz_eval.h — the reference evaluator of Istio L4 authorization: ztunnel's semantics
 * (istio-wire.md 2.2-2.3) written as plain C over the decoded policies. It is the specification
 * the BPF program (bpf/lib/authz.h, fed by authz_compile.c) is tested against, and the source of
 * the string-match rules the compiler expands. No state, no allocation. */
#ifndef KM_XDS_AUTHZ_EVAL_H
#define KM_XDS_AUTHZ_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include "authorization.pb-c.h"
#include "kmesh_maps.h"
#include "services/xds-agent/core/resources.h"

/* The identity of a connection's source workload, defaults applied (km_authz_peer_of). */
struct km_authz_peer {
	const char *trust_domain;
	const char *namespace;
	const char *service_account;
};

struct km_authz_conn_ref {
	struct km_addr src, dst; /* v4-mapped for IPv4: compared as IPv4 */
	uint16_t dst_port;
	const struct km_authz_peer *peer; /* NULL: the source is not a known workload */
};

/* ztunnel's defaults for a workload's identity: trust domain "cluster.local", service account
 * "default". */
void km_authz_peer_of(const struct km_workload_res *w, struct km_authz_peer *out);
/* The principal as policies compare it: "<td>/ns/<ns>/sa/<sa>" (the SPIFFE id without its
 * spiffe:// prefix). Returns the length written (truncated to cap - 1), or -1. */
int km_authz_principal(const struct km_authz_peer *p, char *buf, size_t cap);

/* One StringMatch against text (exact, prefix, suffix; presence = text not empty). */
int km_authz_string_matches(const Kmesh__Security__StringMatch *m, const char *text);
/* A CIDR (4-byte = IPv4, 16-byte = IPv6) against an address; an IPv4 address (v4-mapped in a)
 * is only in IPv4 CIDRs, as ztunnel's IpNet. */
int km_authz_cidr_contains(const Kmesh__Security__Address *cidr, const struct km_addr *a);
/* A Match with every list empty: skipped inside a clause. */
int km_authz_match_empty(const Kmesh__Security__Match *m);

/* Does the policy match the connection? */
int km_authz_policy_matches(const Kmesh__Security__Authorization *p,
			    const struct km_authz_conn_ref *c);
/* Does a policy named name apply to the destination workload dst (NULL: a destination no
 * workload describes, to which only mesh-wide policies apply)? */
int km_authz_policy_applies(const Kmesh__Security__Authorization *p, const char *name,
			    const struct km_workload_res *dst);

enum km_authz_verdict { KM_AUTHZ_ALLOW = 0, KM_AUTHZ_DENY = 1 };

/* The decision over the policies that apply: a matching enforced DENY denies; else no enforced
 * ALLOW allows; else a matching ALLOW allows; else deny. *decider (may be NULL) is the index of
 * the deciding policy, or -1 when none decided. */
int km_authz_decide(const Kmesh__Security__Authorization *const *policies, size_t n,
		    const struct km_authz_conn_ref *c, long *decider);

#endif
