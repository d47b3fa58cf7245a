/* dns_answer.c — see dns_answer.h. */
#include "services/xds-agent/dns/dns_answer.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ldns/ldns.h>

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

/* The reply: the question, and the answers unless truncated. */
static ldns_pkt *reply_of(const struct km_dns_resolver *r, const ldns_pkt *q, const ldns_rr *question,
			  const struct km_addr *addrs, int n, int v4, int with_answers)
{
	ldns_pkt *a = ldns_pkt_new();

	if (!a)
		return NULL;
	ldns_pkt_set_id(a, ldns_pkt_id(q));
	ldns_pkt_set_qr(a, true);
	ldns_pkt_set_aa(a, true);
	ldns_pkt_set_rd(a, ldns_pkt_rd(q));
	ldns_pkt_set_ra(a, true);
	ldns_pkt_set_opcode(a, LDNS_PACKET_QUERY);
	ldns_pkt_set_rcode(a, LDNS_RCODE_NOERROR);
	ldns_pkt_set_tc(a, !with_answers);
	if (ldns_pkt_edns(q))
		ldns_pkt_set_edns_udp_size(a, 1232);
	ldns_pkt_push_rr(a, LDNS_SECTION_QUESTION, ldns_rr_clone(question));
	for (int i = 0; with_answers && i < n; i++) {
		ldns_rr *rr = ldns_rr_new();

		if (!rr)
			break;
		ldns_rr_set_owner(rr, ldns_rdf_clone(ldns_rr_owner(question)));
		ldns_rr_set_type(rr, v4 ? LDNS_RR_TYPE_A : LDNS_RR_TYPE_AAAA);
		ldns_rr_set_class(rr, LDNS_RR_CLASS_IN);
		ldns_rr_set_ttl(rr, r->ttl);
		ldns_rr_push_rdf(rr, v4 ? ldns_rdf_new_frm_data(LDNS_RDF_TYPE_A, 4, &addrs[i].bytes[12])
				   : ldns_rdf_new_frm_data(LDNS_RDF_TYPE_AAAA, 16, addrs[i].bytes));
		ldns_pkt_push_rr(a, LDNS_SECTION_ANSWER, rr);
	}
	return a;
}

enum km_dns_verdict km_dns_answer(struct km_dns_resolver *r, const uint8_t *query, size_t len,
				  size_t max_udp, uint8_t **reply, size_t *reply_len)
{
	struct km_addr addrs[KM_DNS_MAX_ANSWERS];
	enum km_dns_verdict v = KM_DNS_FORWARD;
	ldns_pkt *q = NULL, *a = NULL;
	ldns_rr *question;
	ldns_rr_type type;
	char *owner = NULL;
	const char *svc;
	size_t limit;
	int n, v4;

	*reply = NULL;
	*reply_len = 0;
	if (len < 12 || ldns_wire2pkt(&q, query, len) != LDNS_STATUS_OK) {
		r->refused++;
		return KM_DNS_DROP; /* not DNS: nothing to answer it with */
	}
	if (ldns_pkt_qr(q) || ldns_pkt_qdcount(q) == 0) {
		v = KM_DNS_DROP; /* a response sent to us, or no question: nothing to answer */
		r->refused++;
		goto out;
	}
	if (ldns_pkt_get_opcode(q) != LDNS_PACKET_QUERY || ldns_pkt_qdcount(q) != 1)
		goto out;
	question = ldns_rr_list_rr(ldns_pkt_question(q), 0);
	type = ldns_rr_get_type(question);
	if ((type != LDNS_RR_TYPE_A && type != LDNS_RR_TYPE_AAAA) ||
	    ldns_rr_get_class(question) != LDNS_RR_CLASS_IN)
		goto out;
	if (!(owner = ldns_rdf2str(ldns_rr_owner(question))))
		goto out;
	for (char *p = owner; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	if (*owner && owner[strlen(owner) - 1] == '.')
		owner[strlen(owner) - 1] = '\0';
	if (!(svc = lookup(r, owner)))
		goto out;
	v4 = type == LDNS_RR_TYPE_A;
	n = km_model_service_addresses(r->model, svc, v4, addrs, KM_DNS_MAX_ANSWERS);
	if (n < 0)
		goto out; /* gone meanwhile */
	limit = max_udp;
	if (max_udp && ldns_pkt_edns(q))
		limit = ldns_pkt_edns_udp_size(q) < 512 ? 512
			: ldns_pkt_edns_udp_size(q) < max_udp ? ldns_pkt_edns_udp_size(q) : max_udp;
	else if (max_udp)
		limit = 512;
	a = reply_of(r, q, question, addrs, n, v4, 1);
	if (!a || ldns_pkt2wire(reply, a, reply_len) != LDNS_STATUS_OK)
		goto fail;
	if (limit && *reply_len > limit) { /* over UDP: truncated, the client asks over TCP */
		free(*reply);
		*reply = NULL;
		ldns_pkt_free(a);
		a = reply_of(r, q, question, addrs, n, v4, 0);
		if (!a || ldns_pkt2wire(reply, a, reply_len) != LDNS_STATUS_OK)
			goto fail;
		r->truncated++;
	}
	if (n == 0)
		r->nodata++; /* the name is the mesh's; it has no address of this family */
	else
		r->answered++;
	v = KM_DNS_ANSWERED;
	goto out;
fail:
	free(*reply);
	*reply = NULL;
	*reply_len = 0;
	v = KM_DNS_FORWARD; /* out of memory: upstream may still answer */
out:
	if (v == KM_DNS_FORWARD)
		r->forwarded++;
	free(owner);
	ldns_pkt_free(a);
	ldns_pkt_free(q);
	return v;
}
