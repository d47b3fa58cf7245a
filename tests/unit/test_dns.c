/* test_dns.c — the DNS proxy's decisions (services/xds-agent/dns/dns_answer.c) against a model:
 * the name forms a pod's search list makes, NODATA for a family a service lacks, a headless
 * service's pods, answers too large for UDP truncated (TC, no answers) under 512 bytes or the
 * client's EDNS size, whole over TCP; other types and other names left to upstream; a response
 * or garbage dropped; the name table following services as they come and go. The proxy's wire
 * code (dns_wire.c) is checked against ldns, an independent reader and writer: answers ldns
 * reads as they were meant, and messages malformed in each way a reader must catch dropped. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <ldns/ldns.h>

#include "services/xds-agent/dns/dns_answer.h"
#include "services/xds-agent/dns/dns_wire.h"
#include "services/xds-agent/sources/resource_json.h"
#include "services/xds-agent/sources/snapshot.h"
#include "shared/log.h"

struct fx {
	struct km_oplist ops;
	struct km_model m;
	struct km_dns_resolver r;
};

static void apply(struct fx *f, const char *doc)
{
	struct km_resource_set set;
	struct km_snapshot_stats st;
	char err[256];

	assert_int_equal(km_json_decode_document(doc, strlen(doc), &set, err, sizeof(err)), 0);
	km_snapshot_apply(&f->m, &set, &st);
	km_resource_set_free(&set);
	km_oplist_clear(&f->ops);
}

/* web (both families), a ServiceEntry host (IPv4 only), a headless service of n pods, and extra
 * resources (JSON, each after a comma). */
static void load_with(struct fx *f, int n, const char *extra)
{
	char *doc = malloc(2000 + (size_t)n * 200 + strlen(extra));
	size_t off;

	km_log_set_level(KM_LOG_ERROR);
	memset(f, 0, sizeof(*f));
	km_oplist_init(&f->ops);
	km_model_init(&f->m, &f->ops, NULL);
	f->r.model = &f->m;
	f->r.ttl = 30;
	strcpy(f->r.domain, "cluster.local");
	km_model_watch_services(&f->m, km_dns_names_service, &f->r.names);
	off = (size_t)sprintf(doc, "{\"resources\": ["
		" {\"service\": {\"name\": \"web\", \"namespace\": \"t\", \"hostname\": \"Web.T.svc.cluster.local\","
		"  \"addresses\": [{\"address\": \"10.96.0.1\"}, {\"address\": \"fd00::1\"}], \"ports\": [{\"servicePort\": 80}]}},"
		" {\"service\": {\"name\": \"api.ex.com\", \"namespace\": \"t\", \"hostname\": \"api.ex.com\","
		"  \"addresses\": [{\"address\": \"240.0.0.5\"}], \"ports\": [{\"servicePort\": 443}]}},"
		" {\"service\": {\"name\": \"hl\", \"namespace\": \"t\", \"hostname\": \"hl.t.svc.cluster.local\","
		"  \"ports\": [{\"servicePort\": 80}]}}");
	for (int i = 0; i < n; i++)
		off += (size_t)sprintf(doc + off, ", {\"workload\": {\"uid\": \"p%d\", \"name\": \"p%d\", "
				       "\"namespace\": \"t\", \"addresses\": [\"10.1.%d.%d\"], \"services\": "
				       "{\"t/hl.t.svc.cluster.local\": {}}}}", i, i, i / 256, i % 256);
	sprintf(doc + off, "%s]}", extra);
	apply(f, doc);
	free(doc);
}

static void load(struct fx *f, int n)
{
	load_with(f, n, "");
}

static void unload(struct fx *f)
{
	km_model_watch_services(&f->m, NULL, NULL);
	km_dns_resolver_free(&f->r);
	km_model_free(&f->m);
	km_oplist_free(&f->ops);
}

/* The query's wire form; edns 0: none. */
static uint8_t *query(const char *name, ldns_rr_type type, uint16_t edns, size_t *len)
{
	ldns_pkt *p = NULL;
	uint8_t *wire = NULL;

	assert_int_equal(ldns_pkt_query_new_frm_str(&p, name, type, LDNS_RR_CLASS_IN, LDNS_RD), LDNS_STATUS_OK);
	ldns_pkt_set_id(p, 0x4242);
	if (edns)
		ldns_pkt_set_edns_udp_size(p, edns);
	assert_int_equal(ldns_pkt2wire(&wire, p, len), LDNS_STATUS_OK);
	ldns_pkt_free(p);
	return wire;
}

/* Ask; on an answer, its answer count and flags. */
static enum km_dns_verdict ask(struct fx *f, const char *name, ldns_rr_type type, uint16_t edns,
			       size_t udp, size_t *answers, int *tc, size_t *reply_len)
{
	size_t len;
	uint8_t *q = query(name, type, edns, &len), *reply;
	enum km_dns_verdict v = km_dns_answer(&f->r, q, len, udp, &reply, reply_len);

	if (v == KM_DNS_ANSWERED) {
		ldns_pkt *p = NULL;

		assert_int_equal(ldns_wire2pkt(&p, reply, *reply_len), LDNS_STATUS_OK);
		assert_int_equal(ldns_pkt_id(p), 0x4242);
		assert_true(ldns_pkt_aa(p) && ldns_pkt_qr(p));
		*answers = ldns_pkt_ancount(p);
		*tc = ldns_pkt_tc(p);
		ldns_pkt_free(p);
		free(reply);
	}
	free(q);
	return v;
}

struct unknowns {
	char keys[8][600];
	int n;
};

static int on_unknown(void *arg, const char *key)
{
	struct unknowns *u = arg;

	assert_true(u->n < 8);
	snprintf(u->keys[u->n++], sizeof(u->keys[0]), "%s", key);
	return 1;
}

static int refuse_all(void *arg, const char *key)
{
	(void)arg;
	(void)key;
	return 0;
}

/* A positive answer for a service not held, with the demand refused: 0. */
static void upstream_answers_refused(struct fx *f)
{
	ldns_pkt *p = NULL;
	ldns_rr *rr = NULL;
	uint8_t *a = NULL;
	size_t len;

	assert_int_equal(ldns_pkt_query_new_frm_str(&p, "api.shop.svc.cluster.local", LDNS_RR_TYPE_A,
						    LDNS_RR_CLASS_IN, LDNS_RD), LDNS_STATUS_OK);
	ldns_pkt_set_qr(p, 1);
	assert_int_equal(ldns_rr_new_frm_str(&rr, "api.shop.svc.cluster.local 30 IN A 10.96.0.1", 0, NULL, NULL),
			 LDNS_STATUS_OK);
	ldns_pkt_push_rr(p, LDNS_SECTION_ANSWER, rr);
	assert_int_equal(ldns_pkt2wire(&a, p, &len), LDNS_STATUS_OK);
	assert_int_equal(km_dns_upstream_answered(&f->r, a, len, NULL), 0);
	ldns_pkt_free(p);
	free(a);
}

/* An upstream answer passing back, as ldns writes it: rcode, and answers records of the type. */
static void upstream_answers(struct fx *f, const char *name, ldns_rr_type type, int rcode, int answers)
{
	ldns_pkt *p = NULL;
	uint8_t *a = NULL;
	size_t len;

	assert_int_equal(ldns_pkt_query_new_frm_str(&p, name, type, LDNS_RR_CLASS_IN, LDNS_RD), LDNS_STATUS_OK);
	ldns_pkt_set_qr(p, 1);
	ldns_pkt_set_rcode(p, (uint8_t)rcode);
	for (int i = 0; i < answers; i++) {
		ldns_rr *rr = NULL;
		char text[400];

		snprintf(text, sizeof(text), "%s 30 IN %s", name,
			 type == LDNS_RR_TYPE_AAAA ? "AAAA fd00::1" :
			 type == LDNS_RR_TYPE_TXT ? "TXT \"10.96.0.1\"" : "A 10.96.0.1");
		assert_int_equal(ldns_rr_new_frm_str(&rr, text, 0, NULL, NULL), LDNS_STATUS_OK);
		ldns_pkt_push_rr(p, LDNS_SECTION_ANSWER, rr);
	}
	assert_int_equal(ldns_pkt2wire(&a, p, &len), LDNS_STATUS_OK);
	{
		char got[KM_DNS_MAX_NAME] = "";
		int before = ((struct unknowns *)f->r.unknown_arg)->n;
		int demanded = km_dns_upstream_answered(&f->r, a, len, got);

		/* 1 exactly when the callback was called, and then the query's name */
		assert_int_equal(demanded, ((struct unknowns *)f->r.unknown_arg)->n - before);
		if (demanded)
			assert_false(km_dns_name_held(&f->r, got));
	}
	a[2] &= 0x7f; /* the same as a query: not an answer */
	assert_int_equal(km_dns_upstream_answered(&f->r, a, len, NULL), 0);
	ldns_pkt_free(p);
	free(a);
}

/* An agent on demand hears of an upstream's addresses for "<svc>.<ns>.svc.<domain>" that it does
 * not hold, as the key istiod names the service by; a held name, other forms, other types, an
 * empty answer, an error, and the query itself say nothing. */
static void unknown_service_demanded(void **state)
{
	struct unknowns u = { .n = 0 };
	struct fx f;

	(void)state;
	load(&f, 1);
	f.r.on_unknown_service = on_unknown;
	f.r.unknown_arg = &u;
	upstream_answers(&f, "api.shop.svc.cluster.local.", LDNS_RR_TYPE_A, 0, 1);
	upstream_answers(&f, "API.Shop.svc.cluster.local", LDNS_RR_TYPE_AAAA, 0, 2);
	assert_int_equal(u.n, 2);
	assert_string_equal(u.keys[0], "shop/api.shop.svc.cluster.local");
	assert_string_equal(u.keys[1], "shop/api.shop.svc.cluster.local");
	upstream_answers(&f, "api.shop.svc.cluster.local", LDNS_RR_TYPE_A, 3, 0); /* NXDOMAIN */
	upstream_answers(&f, "api.shop.svc.cluster.local", LDNS_RR_TYPE_A, 0, 0); /* no data */
	upstream_answers(&f, "api.shop.svc.cluster.local", LDNS_RR_TYPE_A, 2, 1); /* SERVFAIL */
	upstream_answers(&f, "api.shop.svc.cluster.local", LDNS_RR_TYPE_TXT, 0, 1);
	upstream_answers(&f, "web.t.svc.cluster.local", LDNS_RR_TYPE_A, 0, 1); /* held */
	const char *not_services[] = { "api.shop.svc.cluster.local.shop.svc.cluster.local",
				       "api.svc.cluster.local", "a.b.c.svc.cluster.local",
				       "api.shop.svc.example.com", "shop.svc.cluster.local",
				       "example.com", "svc.cluster.local",
				       "-pi.sho-.svc.cluster.local" /* labels no service has (fuzz_dns) */ };
	for (size_t i = 0; i < sizeof(not_services) / sizeof(*not_services); i++)
		upstream_answers(&f, not_services[i], LDNS_RR_TYPE_A, 0, 1);
	assert_int_equal(u.n, 2);
	assert_int_equal(km_dns_upstream_answered(&f.r, (const uint8_t *)"short", 5, NULL), 0);
	assert_true(km_dns_name_held(&f.r, "web.t.svc.cluster.local"));
	assert_true(km_dns_name_held(&f.r, "web.t"));
	assert_false(km_dns_name_held(&f.r, "api.shop.svc.cluster.local"));
	/* a demand the agent refuses (its bound reached): not one to wait for */
	f.r.on_unknown_service = refuse_all;
	{
		size_t len;
		uint8_t *a = query("api.shop.svc.cluster.local", LDNS_RR_TYPE_A, 0, &len);

		a[2] |= 0x80;
		a[7] = 0; /* no answers: nothing */
		assert_int_equal(km_dns_upstream_answered(&f.r, a, len, NULL), 0);
		free(a);
	}
	upstream_answers_refused(&f);
	assert_int_equal(u.n, 2);
	unload(&f);
}

static void names_and_forms(void **state)
{
	struct fx f;
	size_t n, len;
	int tc;

	(void)state;
	load(&f, 2);
	assert_int_equal(f.r.names.n, 3);
	const char *forms[] = { "web.t.svc.cluster.local.", "WEB.t.svc.cluster.local", "web.t",
				"web.t.svc", "web.t.svc.cluster.local.t.svc.cluster.local",
				"web.t.svc.cluster.local.svc.cluster.local",
				"web.t.svc.cluster.local.cluster.local" };
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		assert_int_equal(ask(&f, forms[i], LDNS_RR_TYPE_A, 0, 512, &n, &tc, &len), KM_DNS_ANSWERED);
		assert_int_equal(n, 1);
	}
	assert_int_equal(ask(&f, "web.t", LDNS_RR_TYPE_AAAA, 0, 512, &n, &tc, &len), KM_DNS_ANSWERED);
	assert_int_equal(n, 1);
	assert_int_equal(ask(&f, "api.ex.com.t.svc.cluster.local", LDNS_RR_TYPE_A, 0, 512, &n, &tc, &len),
			 KM_DNS_ANSWERED);
	/* NODATA: the mesh's name, no IPv6 address */
	assert_int_equal(ask(&f, "api.ex.com", LDNS_RR_TYPE_AAAA, 0, 512, &n, &tc, &len), KM_DNS_ANSWERED);
	assert_int_equal(n, 0);
	assert_int_equal(f.r.nodata, 1);
	assert_int_equal(ask(&f, "hl.t", LDNS_RR_TYPE_A, 0, 512, &n, &tc, &len), KM_DNS_ANSWERED);
	assert_int_equal(n, 2);
	/* not the mesh's: upstream's; nor a search suffix that is not one ("x.y.svc.cluster.local"
	 * has two labels before svc) */
	assert_int_equal(ask(&f, "web.t.svc.cluster.local", LDNS_RR_TYPE_TXT, 0, 512, &n, &tc, &len),
			 KM_DNS_FORWARD);
	assert_int_equal(ask(&f, "other.example.com", LDNS_RR_TYPE_A, 0, 512, &n, &tc, &len), KM_DNS_FORWARD);
	assert_int_equal(ask(&f, "api.ex.com.x.y.svc.cluster.local", LDNS_RR_TYPE_A, 0, 512, &n, &tc, &len),
			 KM_DNS_FORWARD);
	assert_int_equal(ask(&f, "web.t.svc.example.com", LDNS_RR_TYPE_A, 0, 512, &n, &tc, &len),
			 KM_DNS_FORWARD);
	/* a service that goes takes its name; one that comes brings its own */
	apply(&f, "{\"resources\": [{\"service\": {\"name\": \"new\", \"namespace\": \"t\", "
		  "\"hostname\": \"new.t.svc.cluster.local\", \"addresses\": [{\"address\": \"10.96.0.9\"}]}}]}");
	assert_int_equal(f.r.names.n, 1); /* the snapshot holds only it now */
	assert_int_equal(ask(&f, "web.t", LDNS_RR_TYPE_A, 0, 512, &n, &tc, &len), KM_DNS_FORWARD);
	assert_int_equal(ask(&f, "new.t", LDNS_RR_TYPE_A, 0, 512, &n, &tc, &len), KM_DNS_ANSWERED);
	unload(&f);
}

/* Ask over transport udp (0: TCP); the answer's IPv4 addresses (host order) into out (at most
 * max), their count returned; tc and the reply's length too. */
static size_t ask_v4(struct fx *f, const char *name, uint16_t edns, size_t udp, uint32_t *out,
		     size_t max, int *tc, size_t *reply_len)
{
	size_t len, n = 0;
	uint8_t *q = query(name, LDNS_RR_TYPE_A, edns, &len), *reply;
	ldns_pkt *p = NULL;
	ldns_rr_list *an;

	assert_int_equal(km_dns_answer(&f->r, q, len, udp, &reply, reply_len), KM_DNS_ANSWERED);
	assert_int_equal(ldns_wire2pkt(&p, reply, *reply_len), LDNS_STATUS_OK);
	*tc = ldns_pkt_tc(p);
	an = ldns_pkt_answer(p);
	assert_int_equal(ldns_rr_list_rr_count(an), ldns_pkt_ancount(p));
	for (size_t i = 0; i < ldns_rr_list_rr_count(an); i++) {
		ldns_rdf *rd = ldns_rr_rdf(ldns_rr_list_rr(an, i), 0);
		uint32_t a;

		assert_int_equal(ldns_rr_get_type(ldns_rr_list_rr(an, i)), LDNS_RR_TYPE_A);
		assert_int_equal(ldns_rdf_size(rd), 4);
		memcpy(&a, ldns_rdf_data(rd), 4);
		assert_true(n < max);
		out[n++] = ntohl(a);
	}
	ldns_pkt_free(p);
	free(reply);
	free(q);
	return n;
}

/* The pod index an answered address names (load's 10.1.i/256.i%256), checked to be one */
static size_t pod_of(uint32_t a, int pods)
{
	size_t i = ((a >> 8) & 0xff) * 256 + (a & 0xff);

	assert_int_equal(a >> 16, 0x0a01);
	assert_true(i < (size_t)pods);
	return i;
}

/* Over UDP, as many as fit with TC set (the client asks over TCP); over TCP, all of them. */
static void truncation(void **state)
{
	uint32_t got[64];
	struct fx f;
	size_t len, n;
	int tc;

	(void)state;
	load(&f, 60); /* 60 A records: ~1 KiB */
	/* no EDNS: 512 bytes, 12 + 24 (the name) + 4 of question, 16 per record: 29 */
	n = ask_v4(&f, "hl.t.svc.cluster.local", 0, 4096, got, 64, &tc, &len);
	assert_true(tc && n == 29 && len <= 512 && len > 512 - 16);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(pod_of(got[i], 60), i); /* valid ones, the model's order */
	n = ask_v4(&f, "hl.t.svc.cluster.local", 4096, 4096, got, 64, &tc, &len);
	assert_true(!tc && n == 60); /* the client takes 4096 */
	n = ask_v4(&f, "hl.t.svc.cluster.local", 1232, 512, got, 64, &tc, &len);
	assert_true(tc && n == 28 && len <= 512); /* our own bound wins; the OPT record takes 11 */
	n = ask_v4(&f, "hl.t.svc.cluster.local", 0, 0, got, 64, &tc, &len);
	assert_true(!tc && n == 60); /* TCP */
	assert_int_equal(f.r.truncated, 2);
	assert_int_equal(f.r.clipped, 0);
	unload(&f);
}

/* A StatefulSet's 200 pods (issue 47: the proxy answered 64 of them): every one over TCP, each
 * once (a pod of the host's network repeating another's address counts once); over UDP as many
 * as the client takes, TC set when some do not fit. */
static void headless_every_pod(void **state)
{
	static uint32_t got[4096];
	uint8_t seen[200];
	struct fx f;
	size_t len, n;
	int tc;

	(void)state;
	load_with(&f, 200, ", {\"workload\": {\"uid\": \"hostnet\", \"name\": \"hostnet\", "
		  "\"namespace\": \"t\", \"addresses\": [\"10.1.0.7\"], \"services\": "
		  "{\"t/hl.t.svc.cluster.local\": {}}}}");
	n = ask_v4(&f, "hl.t.svc.cluster.local", 0, 0, got, 4096, &tc, &len);
	assert_true(!tc && n == 200);
	memset(seen, 0, sizeof(seen));
	for (size_t i = 0; i < n; i++)
		seen[pod_of(got[i], 200)]++;
	for (size_t i = 0; i < 200; i++)
		assert_int_equal(seen[i], 1);
	n = ask_v4(&f, "hl.t.svc.cluster.local", 4096, 4096, got, 4096, &tc, &len);
	assert_true(!tc && n == 200); /* 3,251 bytes: one UDP answer */
	n = ask_v4(&f, "hl.t.svc.cluster.local", 1232, 4096, got, 4096, &tc, &len);
	assert_true(tc && n == (1232 - 51) / 16 && len <= 1232);
	for (size_t i = 0; i < n; i++)
		pod_of(got[i], 200);
	assert_int_equal(f.r.clipped, 0);
	unload(&f);
}

/* 5,000 pods: more than one message holds (65,535 bytes: 4,093 A records for this name without
 * EDNS). Each TCP answer is full, TC clear, and the next starts where it stopped: two answers
 * name every pod. Over UDP the client's size, TC set. */
static void headless_past_one_message(void **state)
{
	static uint32_t got[8192];
	static uint8_t seen[5000];
	struct fx f;
	size_t len, n, fit = (65535 - 40) / 16, total = 0;
	int tc;

	(void)state;
	load(&f, 5000);
	memset(seen, 0, sizeof(seen));
	for (int round = 0; round < 2; round++) {
		n = ask_v4(&f, "hl.t.svc.cluster.local", 0, 0, got, 8192, &tc, &len);
		assert_true(!tc && n == fit && len <= 65535 && len > 65535 - 16);
		for (size_t i = 0; i < n; i++)
			if (!seen[pod_of(got[i], 5000)]++)
				total++;
	}
	assert_int_equal(total, 5000); /* every pod in one of the two */
	assert_int_equal(f.r.clipped, 2);
	n = ask_v4(&f, "hl.t.svc.cluster.local", 4096, 4096, got, 8192, &tc, &len);
	assert_true(tc && n == (4096 - 51) / 16 && len <= 4096);
	assert_int_equal(f.r.truncated, 1);
	unload(&f);
}

static void not_queries(void **state)
{
	struct fx f;
	uint8_t junk[40] = { 1, 2, 3 }, *reply;
	size_t len, qlen;
	uint8_t *q;

	(void)state;
	load(&f, 0);
	assert_int_equal(km_dns_answer(&f.r, junk, 5, 512, &reply, &len), KM_DNS_DROP);
	assert_int_equal(km_dns_answer(&f.r, junk, sizeof(junk), 512, &reply, &len), KM_DNS_DROP);
	q = query("web.t", LDNS_RR_TYPE_A, 0, &qlen);
	q[2] |= 0x80; /* QR: a response */
	assert_int_equal(km_dns_answer(&f.r, q, qlen, 512, &reply, &len), KM_DNS_DROP);
	assert_null(reply);
	free(q);
	unload(&f);
}

/* The reply to a hand-written message (header counts qd, an, ns, ar, then body). */
static enum km_dns_verdict raw(struct fx *f, uint16_t qd, uint16_t an, uint16_t ns, uint16_t ar,
			       const uint8_t *body, size_t body_len, uint8_t **reply, size_t *len)
{
	uint8_t msg[1024] = { 0x12, 0x34, 0x01, 0x00, qd >> 8, qd & 0xff, an >> 8, an & 0xff,
			      ns >> 8, ns & 0xff, ar >> 8, ar & 0xff };

	assert_true(body_len <= sizeof(msg) - 12);
	memcpy(msg + 12, body, body_len);
	return km_dns_answer(&f->r, msg, 12 + body_len, 512, reply, len);
}

static void answer_as_ldns_reads_it(void **state)
{
	struct fx f;
	uint8_t *q, *reply;
	size_t qlen, len;
	ldns_pkt *p = NULL;
	ldns_rr *rr;
	char *text;

	(void)state;
	load(&f, 0);
	q = query("WEB.t", LDNS_RR_TYPE_AAAA, 1400, &qlen);
	assert_int_equal(km_dns_answer(&f.r, q, qlen, 512, &reply, &len), KM_DNS_ANSWERED);
	assert_int_equal(ldns_wire2pkt(&p, reply, len), LDNS_STATUS_OK);
	assert_int_equal(ldns_pkt_id(p), 0x4242);
	assert_true(ldns_pkt_qr(p) && ldns_pkt_aa(p) && ldns_pkt_rd(p) && ldns_pkt_ra(p) && !ldns_pkt_tc(p));
	assert_int_equal(ldns_pkt_get_opcode(p), LDNS_PACKET_QUERY);
	assert_int_equal(ldns_pkt_get_rcode(p), LDNS_RCODE_NOERROR);
	assert_int_equal(ldns_pkt_qdcount(p), 1);
	rr = ldns_rr_list_rr(ldns_pkt_question(p), 0);
	text = ldns_rdf2str(ldns_rr_owner(rr));
	assert_string_equal(text, "WEB.t."); /* the question as asked, letters as sent */
	free(text);
	assert_int_equal(ldns_rr_get_type(rr), LDNS_RR_TYPE_AAAA);
	assert_int_equal(ldns_pkt_ancount(p), 1);
	rr = ldns_rr_list_rr(ldns_pkt_answer(p), 0);
	text = ldns_rr2str(rr);
	assert_string_equal(text, "WEB.t.\t30\tIN\tAAAA\tfd00::1\n");
	free(text);
	assert_true(ldns_pkt_edns(p));
	assert_int_equal(ldns_pkt_edns_udp_size(p), 1232);
	assert_int_equal(len, 12 + 7 + 4 + 2 + 10 + 16 + 11); /* the answer's name a pointer */
	ldns_pkt_free(p);
	free(reply);
	free(q);
	unload(&f);
}

static void malformed_dropped(void **state)
{
	static const struct {
		const char *what;
		uint16_t qd, ar;
		uint8_t body[300];
		size_t len;
	} bad[] = {
		{ "a question the message does not hold", 1, 0, { 0 }, 0 },
		{ "a label past the end", 1, 0, { 10, 'w', 'e', 'b' }, 4 },
		{ "no type and class", 1, 0, { 1, 'a', 0, 0, 1 }, 5 },
		{ "a label kind RFC 1035 does not define", 1, 0, { 0x41, 'a', 0, 0, 1, 0, 1 }, 7 },
		{ "a pointer to itself", 1, 0, { 0xc0, 12, 0, 1, 0, 1 }, 6 },
		{ "a pointer forward", 1, 0, { 0xc0, 14, 1, 'a', 0, 0, 1, 0, 1 }, 9 },
		{ "a pointer back to its own labels: a loop", 1, 0, { 1, 'a', 0xc0, 12, 0, 1, 0, 1 }, 8 },
		{ "a name of 256 bytes", 1, 0, { 63, [64] = 63, [128] = 63, [192] = 62, [255] = 0, 0, 1, 0, 1 }, 260 },
		{ "a record's data past the end", 1, 1, { 1, 'a', 0, 0, 1, 0, 1, 0, 0, 41, 2, 0, 0, 0, 0, 0, 0, 9, 1 }, 19 },
		{ "a second question cut short", 2, 0, { 1, 'a', 0, 0, 1, 0, 1, 1, 'b' }, 9 },
	};
	struct fx f;
	uint8_t *reply;
	size_t len;

	(void)state;
	load(&f, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		print_message("%s\n", bad[i].what);
		assert_int_equal(raw(&f, bad[i].qd, 0, 0, bad[i].ar, bad[i].body, bad[i].len, &reply, &len),
				 KM_DNS_DROP);
		assert_null(reply);
	}
	assert_int_equal(f.r.refused, sizeof(bad) / sizeof(bad[0]));
	unload(&f);
}

static void wire_edges_read(void **state)
{
	/* the longest name there is (255 bytes): read, and not the mesh's */
	static const uint8_t longest[] = { 63, [64] = 63, [128] = 63, [192] = 61, [254] = 0, 0, 1, 0, 1 };
	/* web.t, its OPT record's name a pointer to the question's (unusual, valid) */
	static const uint8_t opt_by_pointer[] = { 3, 'w', 'e', 'b', 1, 't', 0, 0, 1, 0, 1,
						  0xc0, 12, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0 };
	/* a label holding a dot: "we.b" "t" is not "we.b.t", and no mesh name */
	static const uint8_t dotted[] = { 4, 'w', 'e', '.', 'b', 1, 't', 0, 0, 1, 0, 1 };
	struct fx f;
	uint8_t *reply;
	size_t len;
	ldns_pkt *p = NULL;

	(void)state;
	load(&f, 0);
	assert_int_equal(raw(&f, 1, 0, 0, 0, longest, sizeof(longest), &reply, &len), KM_DNS_FORWARD);
	assert_int_equal(raw(&f, 1, 0, 0, 1, opt_by_pointer, sizeof(opt_by_pointer), &reply, &len),
			 KM_DNS_ANSWERED);
	assert_int_equal(ldns_wire2pkt(&p, reply, len), LDNS_STATUS_OK);
	assert_true(ldns_pkt_edns(p) && ldns_pkt_ancount(p) == 1);
	ldns_pkt_free(p);
	free(reply);
	assert_int_equal(raw(&f, 1, 0, 0, 0, dotted, sizeof(dotted), &reply, &len), KM_DNS_FORWARD);
	assert_int_equal(f.r.refused, 0);
	unload(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names_and_forms),
		cmocka_unit_test(unknown_service_demanded),
		cmocka_unit_test(truncation),
		cmocka_unit_test(headless_every_pod),
		cmocka_unit_test(headless_past_one_message),
		cmocka_unit_test(not_queries),
		cmocka_unit_test(answer_as_ldns_reads_it),
		cmocka_unit_test(malformed_dropped),
		cmocka_unit_test(wire_edges_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
