/* dns_answer.h — one DNS query decided: answered from the mesh's names (A and AAAA of a service
 * hostname the model holds: its VIPs, or a headless service's pods), or left to the upstream
 * resolver. The wire format is dns_wire.c's (every length checked; fuzzed). Names are matched as a pod's
 * resolv.conf produces them: the hostname itself; "name.ns" and "name.ns.svc" completed with the
 * cluster domain; and a hostname followed by one of the search domains under the cluster domain
 * ("<host>.<ns>.svc.<domain>", "<host>.svc.<domain>", "<host>.<domain>"), which a pod asks first
 * for any name with fewer dots than ndots (5), so a ServiceEntry host is answered at the first
 * query, not after three NXDOMAINs from upstream.
 *
 * Every address is answered (a headless service's every healthy pod, as CoreDNS and ztunnel do).
 * Over UDP a reply larger than the client takes (512 bytes, or its EDNS size up to the proxy's)
 * carries as many addresses as fit with TC set, and the client asks again over TCP. Over TCP a
 * reply carries them all up to DNS's own limit of 65,535 bytes (about 4,090 A or 2,340 AAAA
 * records for a short name, OPT included); past it, as many as fit, TC clear (TCP has nothing
 * larger to retry on), and the window moves along the list at each such answer so that every
 * address is in some answer: a client asking again finds the pods the last answer left out
 * (`clipped` counts these answers). Pure: no I/O, so the fuzz target drives it. */
#ifndef KM_XDS_DNS_ANSWER_H
#define KM_XDS_DNS_ANSWER_H

#include <stddef.h>
#include <stdint.h>

#include "services/xds-agent/dns/dns_names.h"
#include "services/xds-agent/dns/dns_wire.h"
#include "services/xds-agent/model/model.h"

#define KM_DNS_MAX_MESSAGE 65535 /* a DNS message's largest size (its TCP length prefix) */

struct km_dns_resolver {
	struct km_dns_names names;
	const struct km_model *model;
	char domain[254]; /* the cluster domain, lowercase, no dots around: "cluster.local" */
	uint32_t ttl;     /* seconds */
	/* counts, for metrics: truncated over UDP (TC set); clipped: more addresses than a
	 * message holds, even over TCP */
	uint64_t answered, nodata, forwarded, refused, truncated, clipped;
	/* the service's addresses of one query (grown to the largest service asked for; freed by
	 * km_dns_resolver_free), and where the next clipped answer's window starts */
	struct km_addr *scratch;
	size_t scratch_cap;
	uint64_t window;
	/* Optional (an agent on demand): called with "<ns>/<svc>.<ns>.svc.<domain>" when the
	 * upstream answers an A or AAAA query of that name, which the model does not hold, with
	 * addresses (km_dns_upstream_answered). Returns 1 when istiod is (or will be) asked for
	 * it, 0 when the demand was refused. */
	int (*on_unknown_service)(void *arg, const char *key);
	void *unknown_arg;
};

enum km_dns_verdict {
	KM_DNS_ANSWERED, /* *reply holds the answer (free it) */
	KM_DNS_FORWARD,  /* not a mesh name (or not A/AAAA): ask upstream */
	KM_DNS_DROP,     /* not a query at all: no answer */
};

/* max_udp: 0 for a TCP query (no size limit), else the transport's (the client's EDNS size is
 * honoured up to it). */
enum km_dns_verdict km_dns_answer(struct km_dns_resolver *r, const uint8_t *query, size_t len,
				  size_t max_udp, uint8_t **reply, size_t *reply_len);

/* The resolver's names and scratch memory (the rest is the caller's). */
void km_dns_resolver_free(struct km_dns_resolver *r);

/* An upstream's answer on its way back to a pod: if it gives addresses (NOERROR, answers) for
 * an A or AAAA query of "<svc>.<ns>.svc.<domain>" that the model does not hold, the service is
 * demanded (on_unknown_service). Only names the cluster's DNS knows are demanded, so a pod
 * asking random names spends no demand. Returns 1 when the service is demanded (name, if not
 * NULL, gets the query's name: KM_DNS_MAX_NAME bytes), else 0. */
int km_dns_upstream_answered(const struct km_dns_resolver *r, const uint8_t *answer, size_t len,
			     char *name);
/* Does the model hold the service a query name (as km_dns_upstream_answered gave it) names? */
int km_dns_name_held(const struct km_dns_resolver *r, const char *name);

#endif
