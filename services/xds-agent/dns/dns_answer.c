/* dns_answer.c — see dns_answer.h. */
#include "services/xds-agent/dns/dns_answer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/ads/demand.h"
#include "services/xds-agent/dns/dns_wire.h"

/* Does s (a suffix of a query name) name a search domain under the cluster domain: "<domain>",
 * "svc.<domain>" or "<ns>.svc.<domain>"? */
static int search_suffix(const struct km_dns_resolver *r, const char *s)
{
	size_t n = strlen(s), d = strlen(r->domain);
	const char *dot;

	if (n < d || strcmp(s + n - d, r->domain) || (n > d && s[n - d - 1] != '.'))
		return 0;
	if (n == d)
		return 1;
	/* what is before the domain: "svc." or "<ns>.svc." */
	if (n - d == 4)
		return !strncmp(s, "svc.", 4);
	dot = strchr(s, '.');
	return dot && (size_t)(dot - s) + 5 == n - d && !strncmp(dot + 1, "svc.", 4);
}

/* The service a query name (lowercase, no trailing dot) names, or NULL. */
static const char *lookup(const struct km_dns_resolver *r, const char *q)
{
	char buf[600];
	const char *svc = km_dns_names_find(&r->names, q);

	if (svc)
		return svc;
	/* "name.ns" and "name.ns.svc" */
	snprintf(buf, sizeof(buf), "%s.svc.%s", q, r->domain);
	if (strlen(q) < 256 && (svc = km_dns_names_find(&r->names, buf)))
		return svc;
	snprintf(buf, sizeof(buf), "%s.%s", q, r->domain);
	if (strlen(q) < 256 && (svc = km_dns_names_find(&r->names, buf)))
		return svc;
	/* a hostname followed by a search domain */
	for (const char *dot = strchr(q, '.'); dot; dot = strchr(dot + 1, '.')) {
		size_t n = (size_t)(dot - q);

		if (!search_suffix(r, dot + 1) || n >= sizeof(buf))
			continue;
		memcpy(buf, q, n);
		buf[n] = '\0';
		if ((svc = km_dns_names_find(&r->names, buf)))
			return svc;
	}
	return NULL;
}

/* An answer for "<svc>.<ns>.svc.<domain>", a name the model does not hold: the service istiod
 * would name "<ns>/<svc>.<ns>.svc.<domain>", which an agent on demand asks for. Other forms (a
 * search domain appended to a longer name) are left alone: a pod asks the full name in turn. */
static int unknown_service(const struct km_dns_resolver *r, const char *q)
{
	size_t n = strlen(q), d = strlen(r->domain);
	const char *ns, *svc_end;
	char key[600];

	if (!r->on_unknown_service || n <= d + 5 || strcmp(q + n - d, r->domain) ||
	    strncmp(q + n - d - 5, ".svc.", 5))
		return 0;
	svc_end = strchr(q, '.');
	ns = svc_end + 1;
	if (svc_end == q || ns >= q + n - d - 5 || strchr(ns, '.') != q + n - d - 5)
		return 0;
	snprintf(key, sizeof(key), "%.*s/%s", (int)(q + n - d - 5 - ns), ns, q);
	/* a name no Kubernetes service has is no key */
	return km_demand_key_valid(key) && r->on_unknown_service(r->unknown_arg, key);
}

/* The addresses of svc of one family into r->scratch, grown to hold them all. Returns how many,
 * or -1 when the service is gone or memory is short. */
static int service_addresses(struct km_dns_resolver *r, const char *svc, int v4)
{
	size_t bound = km_model_service_address_bound(r->model, svc);

	if (bound > r->scratch_cap) {
		struct km_addr *p = realloc(r->scratch, bound * sizeof(*p));

		if (!p)
			return -1;
		r->scratch = p;
		r->scratch_cap = bound;
	}
	return km_model_service_addresses(r->model, svc, v4, r->scratch, r->scratch_cap);
}

static void reverse(struct km_addr *a, size_t lo, size_t hi) /* [lo, hi) */
{
	for (; hi > lo + 1; lo++, hi--) {
		struct km_addr t = a[lo];

		a[lo] = a[hi - 1];
		a[hi - 1] = t;
	}
}

/* a[0..n) turned so that a[k] comes first (the order kept round the ring) */
static void rotate(struct km_addr *a, size_t n, size_t k)
{
	reverse(a, 0, k);
	reverse(a, k, n);
	reverse(a, 0, n);
}

enum km_dns_verdict km_dns_answer(struct km_dns_resolver *r, const uint8_t *query, size_t len,
				  size_t max_udp, uint8_t **reply, size_t *reply_len)
{
	struct km_dns_query q;
	char name[KM_DNS_MAX_NAME];
	const char *svc;
	size_t limit, fixed, fit;
	int n, v4, tc = 0;

	*reply = NULL;
	*reply_len = 0;
	if (km_dns_query_read(query, len, &q) != 0 || (q.flags & KM_DNS_F_QR) || q.qdcount == 0) {
		r->refused++;
		return KM_DNS_DROP; /* not DNS, a response sent to us, or no question: no answer */
	}
	if (KM_DNS_OPCODE(q.flags) != 0 || q.qdcount != 1 || q.qclass != KM_DNS_CLASS_IN ||
	    (q.qtype != KM_DNS_TYPE_A && q.qtype != KM_DNS_TYPE_AAAA))
		goto forward;
	if (km_dns_qname_text(&q, name) != 0 || !(svc = lookup(r, name)))
		goto forward;
	v4 = q.qtype == KM_DNS_TYPE_A;
	n = service_addresses(r, svc, v4);
	if (n < 0)
		goto forward; /* gone meanwhile, or no memory: upstream may still answer */
	limit = KM_DNS_MAX_MESSAGE;
	if (max_udp && q.edns)
		limit = q.edns_udp < 512 ? 512 : q.edns_udp < max_udp ? q.edns_udp : max_udp;
	else if (max_udp)
		limit = 512;
	fixed = km_dns_answer_size(&q, 0, v4);
	fit = limit > fixed ? (limit - fixed) / (km_dns_answer_size(&q, 1, v4) - fixed) : 0;
	if ((size_t)n > fit) {
		/* over UDP: as many as fit, TC set, and the client asks over TCP; over TCP (or a
		 * UDP size past a TCP message's): a window that moves at each answer */
		rotate(r->scratch, (size_t)n, (size_t)(r->window % (size_t)n));
		r->window += fit;
		if ((tc = max_udp && limit < KM_DNS_MAX_MESSAGE))
			r->truncated++;
		else
			r->clipped++;
		n = (int)fit;
	}
	if (!(*reply = malloc(km_dns_answer_size(&q, n, v4))))
		goto forward; /* out of memory: upstream may still answer */
	*reply_len = km_dns_answer_write(&q, r->scratch, n, v4, r->ttl, tc, *reply);
	if (n == 0 && !tc)
		r->nodata++; /* the name is the mesh's; it has no address of this family */
	else
		r->answered++;
	return KM_DNS_ANSWERED;
forward:
	r->forwarded++;
	return KM_DNS_FORWARD;
}

void km_dns_resolver_free(struct km_dns_resolver *r)
{
	km_dns_names_free(&r->names);
	free(r->scratch);
	r->scratch = NULL;
	r->scratch_cap = 0;
}

int km_dns_upstream_answered(const struct km_dns_resolver *r, const uint8_t *answer, size_t len,
			     char *name_out)
{
	struct km_dns_query q;
	char name[KM_DNS_MAX_NAME];

	if (!r->on_unknown_service || len < 12 || km_dns_query_read(answer, len, &q) != 0 ||
	    !(q.flags & KM_DNS_F_QR) || (q.flags & 0xf) != 0 || (answer[6] | answer[7]) == 0 ||
	    q.qdcount != 1 || (q.qtype != KM_DNS_TYPE_A && q.qtype != KM_DNS_TYPE_AAAA) ||
	    km_dns_qname_text(&q, name) != 0 || lookup(r, name) || !unknown_service(r, name))
		return 0;
	if (name_out)
		memcpy(name_out, name, strlen(name) + 1);
	return 1;
}

int km_dns_name_held(const struct km_dns_resolver *r, const char *name)
{
	return lookup(r, name) != NULL;
}
