/* test_telemetry.c — connection reports to Istio's TCP metrics and access log lines: labels
 * named from the workloads and the VIP (or the server's service by target port), unknown ends,
 * both reporters, bytes as request and response, a close without its open, the series bound;
 * the Prometheus writer's escaping and histograms; the address index's holders; denials by
 * destination workload and policy; the tunnel's HBONE streams (principal, baggage, mutual_tls)
 * and the baggage header both ways. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "services/xds-agent/model/addr_index.h"
#include "services/xds-agent/sources/resource_json.h"
#include "services/xds-agent/sources/snapshot.h"
#include "services/xds-agent/telemetry/authz_denials.h"
#include "services/xds-agent/telemetry/baggage.h"
#include "services/xds-agent/telemetry/telemetry.h"
#include "shared/log.h"
#include "shared/prom.h"

static const char MESH[] =
	"{\"resources\": ["
	" {\"service\": {\"name\": \"web\", \"namespace\": \"t\", \"hostname\": \"web.t\","
	"  \"addresses\": [{\"address\": \"10.96.0.1\"}], \"ports\": [{\"servicePort\": 80, \"targetPort\": 8080}]}},"
	" {\"service\": {\"name\": \"api\", \"namespace\": \"t\", \"hostname\": \"api.t\","
	"  \"addresses\": [{\"address\": \"10.96.0.2\"}], \"ports\": [{\"servicePort\": 90, \"targetPort\": 9090}]}},"
	" {\"workload\": {\"uid\": \"c\", \"name\": \"c\", \"namespace\": \"t\", \"workloadName\": \"c-wl\","
	"  \"canonicalName\": \"capp\", \"canonicalRevision\": \"v2\", \"serviceAccount\": \"csa\", \"clusterId\": \"k\","
	"  \"addresses\": [\"10.0.0.1\"]}},"
	" {\"workload\": {\"uid\": \"s\", \"name\": \"s\", \"namespace\": \"u\", \"addresses\": [\"10.0.0.2\"],"
	"  \"services\": {\"t/web.t\": {}, \"t/api.t\": {}}}}]}";

struct fixture {
	struct km_oplist ops;
	struct km_model m;
	struct km_telemetry t;
	char *log;
	size_t log_len;
	FILE *out;
};

static void load(struct fixture *f)
{
	struct km_resource_set set;
	struct km_snapshot_stats st;
	char err[256];

	km_log_set_level(KM_LOG_ERROR);
	km_oplist_init(&f->ops);
	km_model_init(&f->m, &f->ops, NULL);
	f->out = open_memstream(&f->log, &f->log_len);
	/* the indexes are built from what the model holds at init, and kept from then on */
	assert_int_equal(km_json_decode_document(MESH, strlen(MESH), &set, err, sizeof(err)), 0);
	km_snapshot_apply(&f->m, &set, &st);
	km_resource_set_free(&set);
	assert_int_equal(km_telemetry_init(&f->t, &f->m, f->out), 0);
}

static void unload(struct fixture *f)
{
	km_telemetry_free(&f->t);
	km_model_free(&f->m);
	km_oplist_free(&f->ops);
	fclose(f->out);
	free(f->log);
	km_log_set_level(KM_LOG_INFO);
}

struct ev {
	Kmesh__Ipc__ConnEvent e;
	uint8_t src[4], dst[4], orig[4];
};

static void ev_init(struct ev *v, uint32_t kind, uint32_t dir, const char *src, const char *dst,
		    uint32_t dport, const char *orig, uint32_t orig_port, uint64_t cookie)
{
	kmesh__ipc__conn_event__init(&v->e);
	v->e.kind = kind;
	v->e.direction = dir;
	sscanf(src, "%hhu.%hhu.%hhu.%hhu", &v->src[0], &v->src[1], &v->src[2], &v->src[3]);
	sscanf(dst, "%hhu.%hhu.%hhu.%hhu", &v->dst[0], &v->dst[1], &v->dst[2], &v->dst[3]);
	v->e.src.data = v->src;
	v->e.src.len = 4;
	v->e.sport = 40000;
	v->e.dst.data = v->dst;
	v->e.dst.len = 4;
	v->e.dport = dport;
	if (orig) {
		sscanf(orig, "%hhu.%hhu.%hhu.%hhu", &v->orig[0], &v->orig[1], &v->orig[2], &v->orig[3]);
		v->e.orig_dst.data = v->orig;
		v->e.orig_dst.len = 4;
		v->e.orig_dport = orig_port;
	}
	v->e.cookie = cookie;
	v->e.mono_ns = 1000000000ull * cookie;
}

static void deliver_from(struct fixture *f, struct ev *v, size_t n, enum km_conn_origin origin)
{
	Kmesh__Ipc__ConnEvents b = KMESH__IPC__CONN_EVENTS__INIT;
	Kmesh__Ipc__ConnEvent *p[8];

	for (size_t i = 0; i < n; i++)
		p[i] = &v[i].e;
	b.events = p;
	b.n_events = n;
	km_telemetry_events(&f->t, &b, origin);
}

/* The map writer's reports. */
static void deliver(struct fixture *f, struct ev *v, size_t n)
{
	deliver_from(f, v, n, KM_CONN_FROM_KERNEL);
}

static char *render(struct fixture *f)
{
	struct km_prom p;

	km_prom_init(&p);
	km_telemetry_render(&f->t, &p);
	assert_false(p.oom);
	return p.buf;
}

static void test_labels_and_counts(void **state)
{
	struct fixture f;
	struct ev v[4];
	char *page;

	(void)state;
	load(&f);
	/* c -> web VIP (rewritten to s:8080), then its close with 5 bytes out and 7 back */
	ev_init(&v[0], KM_CONN_OPEN, KM_CONN_OUTBOUND, "10.0.0.1", "10.0.0.2", 8080, "10.96.0.1", 80, 1);
	ev_init(&v[1], KM_CONN_CLOSE, KM_CONN_OUTBOUND, "10.0.0.1", "10.0.0.2", 8080, "10.96.0.1", 80, 1);
	v[1].e.sent_bytes = 5;
	v[1].e.received_bytes = 7;
	v[1].e.mono_ns += 2500000; /* 2.5 ms */
	/* s's side of a connection to 9090: the service whose target port it is (api, not web) */
	ev_init(&v[2], KM_CONN_OPEN, KM_CONN_INBOUND, "10.0.0.1", "10.0.0.2", 9090, NULL, 0, 2);
	/* from an address nobody holds */
	ev_init(&v[3], KM_CONN_OPEN, KM_CONN_INBOUND, "10.9.9.9", "10.0.0.2", 8080, NULL, 0, 3);
	f.t.access_log = 1;
	deliver(&f, v, 4);
	page = render(&f);
	assert_non_null(strstr(page,
		"istio_tcp_connections_opened_total{reporter=\"source\",source_workload=\"c-wl\","
		"source_canonical_service=\"capp\",source_canonical_revision=\"v2\","
		"source_workload_namespace=\"t\",source_principal=\"spiffe://cluster.local/ns/t/sa/csa\","
		"source_app=\"capp\",source_version=\"v2\",source_cluster=\"k\","
		"destination_service=\"web.t\",destination_service_namespace=\"t\","
		"destination_service_name=\"web\",destination_workload=\"unknown\","
		"destination_canonical_service=\"unknown\",destination_canonical_revision=\"unknown\","
		"destination_workload_namespace=\"u\",destination_principal=\"unknown\","
		"destination_app=\"unknown\",destination_version=\"unknown\",destination_cluster=\"unknown\","
		"request_protocol=\"tcp\",response_flags=\"-\",connection_security_policy=\"unknown\"} 1\n"));
	/* outbound: the pod sent the request (5) and received the response (7) */
	{
		const char *web = "destination_service=\"web.t\"";
		const char *rx = strstr(page, "istio_tcp_received_bytes_total{reporter=\"source\"");
		const char *tx = strstr(page, "istio_tcp_sent_bytes_total{reporter=\"source\"");
		char rx_line[2048], tx_line[2048];

		assert_non_null(rx);
		assert_non_null(tx);
		snprintf(rx_line, sizeof(rx_line), "%.*s", (int)strcspn(rx, "\n"), rx);
		snprintf(tx_line, sizeof(tx_line), "%.*s", (int)strcspn(tx, "\n"), tx);
		assert_non_null(strstr(rx_line, web));
		assert_non_null(strstr(tx_line, web));
		assert_string_equal(rx_line + strlen(rx_line) - 2, " 5");
		assert_string_equal(tx_line + strlen(tx_line) - 2, " 7");
	}
	assert_non_null(strstr(page, "{reporter=\"destination\",source_workload=\"c-wl\""));
	assert_non_null(strstr(page, "destination_service=\"api.t\""));
	assert_non_null(strstr(page, "{reporter=\"destination\",source_workload=\"unknown\",source_canonical_service=\"unknown\""));
	assert_non_null(strstr(page, "kmesh_telemetry_open_connections 2\n"));
	assert_non_null(strstr(page, "kmesh_telemetry_reports_total 4\n"));
	free(page);
	fflush(f.out);
	assert_non_null(strstr(f.log, " close outbound src=10.0.0.1:40000 src.workload=c src.namespace=t "
				      "dst=10.0.0.2:8080 dst.service=web.t dst.workload=s dst.namespace=u "
				      "sent_bytes=5 received_bytes=7 retransmissions=0 srtt=0us duration=2.500ms "
				      "route=kernel route.why=no_hbone\n"));
	assert_non_null(strstr(f.log, " open inbound src=10.9.9.9:40000 src.workload=unknown"));

	/* JSON lines; a close whose open this agent never saw still counts, by its own labels */
	f.t.format = KM_ACCESS_LOG_JSON;
	ev_init(&v[0], KM_CONN_CLOSE, KM_CONN_INBOUND, "10.0.0.1", "10.0.0.2", 9090, NULL, 0, 99);
	v[0].e.sent_bytes = 11;
	deliver(&f, v, 1);
	assert_int_equal(f.t.closes_unmatched, 1);
	fflush(f.out);
	assert_non_null(strstr(f.log, "{\"time\":\"")); /* one compact object per line */
	assert_non_null(strstr(f.log, "\"dst_service\":\"api.t\""));
	assert_non_null(strstr(f.log, "\"sent_bytes\":11"));
	assert_non_null(strstr(f.log, "\"route\":\"kernel\"")); /* inbound: no route_why */
	assert_null(strstr(f.log, "\"route_why\""));
	assert_null(strstr(f.log, "duration_ms")); /* no open: no duration */
	unload(&f);
}

/* The tunnel's reports: the principal is the certificate's and the policy mutual_tls; the source
 * is the address's workload only when it has that principal, else the baggage, taken only when
 * its namespace is the certificate's; a principal in the kernel's reports is not believed; the
 * access log names both identities; forgetting one origin's open connections keeps the other's. */
static void test_hbone_streams(void **state)
{
	struct fixture f;
	struct ev v[6];
	char *page;

	(void)state;
	load(&f);
	f.t.access_log = 1;
	/* from c's address with c's principal */
	ev_init(&v[0], KM_CONN_OPEN, KM_CONN_INBOUND, "10.0.0.1", "10.0.0.2", 8080, NULL, 0, 1);
	v[0].e.principal = "cluster.local/ns/t/sa/csa";
	v[0].e.baggage = "k8s.namespace.name=t,k8s.deployment.name=ignored";
	/* from an address nobody holds, with baggage in the certificate's namespace */
	ev_init(&v[1], KM_CONN_OPEN, KM_CONN_INBOUND, "10.9.9.9", "10.0.0.2", 8080, NULL, 0, 2);
	v[1].e.principal = "cluster.local/ns/far/sa/x";
	v[1].e.baggage = "k8s.cluster.name=east, k8s.namespace.name=far;p=1,k8s.deployment.name=far-wl,"
			 "service.name=farapp,service.version=v9,other=1";
	/* baggage that claims another namespace than the certificate's: not taken */
	ev_init(&v[2], KM_CONN_OPEN, KM_CONN_INBOUND, "10.9.9.8", "10.0.0.2", 8080, NULL, 0, 3);
	v[2].e.principal = "cluster.local/ns/far/sa/y";
	v[2].e.baggage = "k8s.namespace.name=t,k8s.deployment.name=liar";
	/* c's address, another principal: not c */
	ev_init(&v[3], KM_CONN_OPEN, KM_CONN_INBOUND, "10.0.0.1", "10.0.0.2", 9090, NULL, 0, 4);
	v[3].e.principal = "cluster.local/ns/z/sa/q";
	deliver_from(&f, v, 4, KM_CONN_FROM_TUNNEL);
	/* a principal in the map writer's reports is the tunnel's to give: dropped */
	ev_init(&v[4], KM_CONN_OPEN, KM_CONN_INBOUND, "10.0.0.1", "10.0.0.2", 8080, NULL, 0, 5);
	v[4].e.principal = "cluster.local/ns/t/sa/csa";
	deliver_from(&f, &v[4], 1, KM_CONN_FROM_KERNEL);
	/* a kernel connection, open */
	ev_init(&v[5], KM_CONN_OPEN, KM_CONN_INBOUND, "10.0.0.1", "10.0.0.2", 7070, NULL, 0, 6);
	deliver_from(&f, &v[5], 1, KM_CONN_FROM_KERNEL);

	page = render(&f);
	assert_non_null(strstr(page,
		"istio_tcp_connections_opened_total{reporter=\"destination\",source_workload=\"c-wl\","
		"source_canonical_service=\"capp\",source_canonical_revision=\"v2\","
		"source_workload_namespace=\"t\",source_principal=\"spiffe://cluster.local/ns/t/sa/csa\","
		"source_app=\"capp\",source_version=\"v2\",source_cluster=\"k\","
		"destination_service=\"web.t\""));
	assert_non_null(strstr(page, "source_principal=\"spiffe://cluster.local/ns/t/sa/csa\""));
	assert_non_null(strstr(page,
		"{reporter=\"destination\",source_workload=\"far-wl\",source_canonical_service=\"farapp\","
		"source_canonical_revision=\"v9\",source_workload_namespace=\"far\","
		"source_principal=\"spiffe://cluster.local/ns/far/sa/x\",source_app=\"farapp\","
		"source_version=\"v9\",source_cluster=\"east\","));
	assert_non_null(strstr(page,
		"{reporter=\"destination\",source_workload=\"unknown\",source_canonical_service=\"unknown\","
		"source_canonical_revision=\"unknown\",source_workload_namespace=\"far\","
		"source_principal=\"spiffe://cluster.local/ns/far/sa/y\""));
	assert_null(strstr(page, "liar"));
	assert_non_null(strstr(page,
		"{reporter=\"destination\",source_workload=\"unknown\",source_canonical_service=\"unknown\","
		"source_canonical_revision=\"unknown\",source_workload_namespace=\"z\","
		"source_principal=\"spiffe://cluster.local/ns/z/sa/q\""));
	/* four mutual_tls series, each 1; the kernel's one plain, the kernel's claim nowhere */
	{
		int mtls = 0;

		for (const char *q = page; (q = strstr(q, "connection_security_policy=\"mutual_tls\"}")); q++)
			mtls++;
		assert_int_equal(mtls, 4 * 4); /* 4 series in each of the 4 families */
	}
	assert_non_null(strstr(page, "kmesh_telemetry_open_connections 5\n"));
	free(page);
	fflush(f.out);
	assert_non_null(strstr(f.log, " open inbound src=10.9.9.9:40000 src.workload=far-wl "
				      "src.namespace=far dst=10.0.0.2:8080 dst.service=web.t "
				      "dst.workload=s dst.namespace=u "
				      "src.identity=\"spiffe://cluster.local/ns/far/sa/x\" "
				      "dst.identity=\"unknown\" route=hbone\n"));
	assert_null(strstr(f.log, "src=10.0.0.1:40000 src.workload=c src.namespace=t dst=10.0.0.2:7070 "
				  "dst.service=web.t dst.workload=s dst.namespace=u src.identity"));

	/* the tunnel gone: its opens forgotten, the kernel's kept */
	km_telemetry_forget_open(&f.t, KM_CONN_FROM_TUNNEL);
	assert_int_equal(f.t.n_open, 1);
	assert_int_equal(f.t.open_dropped, 4);
	km_telemetry_forget_open(&f.t, KM_CONN_FROM_KERNEL);
	assert_int_equal(f.t.n_open, 0);
	unload(&f);
}

/* Reading a peer's baggage: known keys, properties and whitespace dropped, the first of a repeat,
 * values limited to names, the whole bounded; writing a workload's. */
static void test_baggage(void **state)
{
	struct km_baggage b;
	char big[KM_BAGGAGE_MAX + 2], out[512];
	struct km_wl_who who = { .namespace = "ns", .cluster_id = "c1", .workload_name = "wl",
				 .canonical_name = "app", .canonical_revision = "v1" };
	struct km_wl_where where = { .region = "r", .zone = "z" };
	const char *h = "k8s.cluster.name=c ,  k8s.namespace.name = n;prop=x,k8s.job.name=j,"
			"k8s.pod.name=p,service.name=s,service.version=v,cloud.region=r,junk";
	const char *bad = "service.name=a\"b,k8s.namespace.name=,service.version=%41";

	(void)state;
	assert_int_equal(km_baggage_parse(h, strlen(h), &b), 5);
	assert_string_equal(b.cluster, "c");
	assert_string_equal(b.namespace, "n");
	assert_string_equal(b.workload, "j"); /* the first of the workload keys */
	assert_string_equal(b.service, "s");
	assert_string_equal(b.version, "v");
	/* a value that is not a name, or empty, is not taken */
	assert_int_equal(km_baggage_parse(bad, strlen(bad), &b), 0);
	assert_string_equal(b.service, "");
	/* bounded: a header past KM_BAGGAGE_MAX is not read at all */
	memset(big, 'a', sizeof(big));
	memcpy(big, "service.name=", 13);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(km_baggage_parse(big, strlen(big), &b), -1);
	/* a value past KM_BAGGAGE_VALUE_MAX */
	big[13 + KM_BAGGAGE_VALUE_MAX + 1] = '\0';
	assert_int_equal(km_baggage_parse(big, strlen(big), &b), 0);
	big[13 + KM_BAGGAGE_VALUE_MAX] = '\0';
	assert_int_equal(km_baggage_parse(big, strlen(big), &b), 1);

	assert_true(km_baggage_format(&who, &where, out, sizeof(out)) > 0);
	assert_string_equal(out, "k8s.cluster.name=c1,k8s.namespace.name=ns,k8s.deployment.name=wl,"
				 "service.name=app,service.version=v1,cloud.region=r,"
				 "cloud.availability_zone=z");
	who.workload_kind = "job";
	who.cluster_id = NULL;
	assert_true(km_baggage_format(&who, NULL, out, sizeof(out)) > 0);
	assert_string_equal(out, "k8s.namespace.name=ns,k8s.job.name=wl,service.name=app,"
				 "service.version=v1");
	/* what it writes, it reads */
	assert_int_equal(km_baggage_parse(out, strlen(out), &b), 4);
	assert_string_equal(b.workload, "wl");
	assert_int_equal(km_baggage_format(&who, NULL, out, 10), -1);
}

/* The bytes of the outbound series to web.t, request (received) or response (sent). */
static uint64_t web_bytes(struct fixture *f, const char *family)
{
	char *page = render(f), prefix[128];
	const char *line;
	unsigned long long v = 0;

	snprintf(prefix, sizeof(prefix), "%s{reporter=\"source\"", family);
	line = strstr(page, prefix);
	assert_non_null(line);
	assert_true(sscanf(line + strcspn(line, "}") + 1, " %llu", &v) == 1);
	free(page);
	return v;
}

/* An open connection's reports move the byte counters while it lives; its close adds only the
 * rest; a report never takes a counter back; a connection first heard of by a report or its close
 * is counted opened once, then. */
static void test_progress(void **state)
{
	struct fixture f;
	struct ev v[2];

	(void)state;
	load(&f);
	ev_init(&v[0], KM_CONN_OPEN, KM_CONN_OUTBOUND, "10.0.0.1", "10.0.0.2", 8080, "10.96.0.1", 80, 1);
	deliver(&f, v, 1);
	ev_init(&v[0], KM_CONN_PROGRESS, KM_CONN_OUTBOUND, "10.0.0.1", "10.0.0.2", 8080, NULL, 0, 1);
	v[0].e.sent_bytes = 6;
	v[0].e.received_bytes = 3;
	deliver(&f, v, 1);
	assert_int_equal(web_bytes(&f, "istio_tcp_received_bytes_total"), 6);
	assert_int_equal(web_bytes(&f, "istio_tcp_sent_bytes_total"), 3);
	assert_int_equal(f.t.progress, 1);
	/* the next report adds the growth; one that went down (it cannot) adds nothing */
	v[0].e.sent_bytes = 10;
	v[0].e.received_bytes = 2;
	deliver(&f, v, 1);
	assert_int_equal(web_bytes(&f, "istio_tcp_received_bytes_total"), 10);
	assert_int_equal(web_bytes(&f, "istio_tcp_sent_bytes_total"), 3);
	/* the close: totals 12 and 5, so +2 each, not the whole again */
	ev_init(&v[0], KM_CONN_CLOSE, KM_CONN_OUTBOUND, "10.0.0.1", "10.0.0.2", 8080, NULL, 0, 1);
	v[0].e.sent_bytes = 12;
	v[0].e.received_bytes = 5;
	deliver(&f, v, 1);
	assert_int_equal(web_bytes(&f, "istio_tcp_received_bytes_total"), 12);
	assert_int_equal(web_bytes(&f, "istio_tcp_sent_bytes_total"), 5);
	assert_int_equal(f.t.n_open, 0);
	/* a connection first heard of by its report (no open report: sockops detached) is counted
	 * opened then, with its bytes so far, and its close adds only the rest, opening nothing */
	ev_init(&v[0], KM_CONN_PROGRESS, KM_CONN_OUTBOUND, "10.0.0.1", "10.0.0.2", 8080, "10.96.0.1", 80, 7);
	v[0].e.sent_bytes = 1000;
	deliver(&f, v, 1);
	assert_int_equal(web_bytes(&f, "istio_tcp_received_bytes_total"), 1012);
	assert_int_equal(web_bytes(&f, "istio_tcp_connections_opened_total"), 2);
	assert_int_equal(f.t.progress_unmatched, 1);
	assert_int_equal(f.t.n_open, 1);
	ev_init(&v[0], KM_CONN_CLOSE, KM_CONN_OUTBOUND, "10.0.0.1", "10.0.0.2", 8080, NULL, 0, 7);
	v[0].e.sent_bytes = 1500;
	deliver(&f, v, 1);
	assert_int_equal(web_bytes(&f, "istio_tcp_received_bytes_total"), 1512);
	assert_int_equal(web_bytes(&f, "istio_tcp_connections_opened_total"), 2);
	assert_int_equal(web_bytes(&f, "istio_tcp_connections_closed_total"), 2);
	assert_int_equal(f.t.n_open, 0);
	/* one first heard of at its close: opened and closed, all its bytes */
	ev_init(&v[0], KM_CONN_CLOSE, KM_CONN_OUTBOUND, "10.0.0.1", "10.0.0.2", 8080, "10.96.0.1", 80, 9);
	v[0].e.sent_bytes = 100;
	deliver(&f, v, 1);
	assert_int_equal(web_bytes(&f, "istio_tcp_received_bytes_total"), 1612);
	assert_int_equal(web_bytes(&f, "istio_tcp_connections_opened_total"), 3);
	assert_int_equal(web_bytes(&f, "istio_tcp_connections_closed_total"), 3);
	assert_int_equal(f.t.closes_unmatched, 1);
	unload(&f);
}

static void test_series_bound(void **state)
{
	struct fixture f;
	struct ev v;
	char src[32];

	(void)state;
	load(&f);
	/* each unknown source is still one series (all "unknown"): the bound is on distinct label
	 * sets, so make them distinct through the reporter and the services */
	for (uint64_t i = 0; i < 3; i++) {
		snprintf(src, sizeof(src), "10.1.%u.%u", (unsigned)(i >> 8), (unsigned)(i & 255));
		ev_init(&v, KM_CONN_OPEN, KM_CONN_OUTBOUND, src, "10.0.0.2", 8080, "10.96.0.1", 80, i + 1);
		deliver(&f, &v, 1);
	}
	assert_int_equal(f.t.n_series, 1);
	assert_int_equal(f.t.n_open, 3);
	f.t.n_series = KM_TELEMETRY_MAX_SERIES; /* full: a new label set is counted, not kept */
	ev_init(&v, KM_CONN_OPEN, KM_CONN_INBOUND, "10.0.0.1", "10.0.0.2", 8080, NULL, 0, 9);
	deliver(&f, &v, 1);
	assert_int_equal(f.t.series_dropped, 1);
	f.t.n_series = 1;
	unload(&f);
}

/* A series naming a workload that is gone is removed once the workload has been gone for the
 * TTL (its last values scrapeable until then), not while a connection counted into it is open,
 * and series of workloads still there stay. */
static void test_series_expire(void **state)
{
	struct fixture f;
	struct ev v[3];
	char *page;

	(void)state;
	load(&f);
	/* c -> s (closed), and c -> s again, left open, under another reporter */
	ev_init(&v[0], KM_CONN_OPEN, KM_CONN_OUTBOUND, "10.0.0.1", "10.0.0.2", 8080, "10.96.0.1", 80, 1);
	ev_init(&v[1], KM_CONN_CLOSE, KM_CONN_OUTBOUND, "10.0.0.1", "10.0.0.2", 8080, "10.96.0.1", 80, 1);
	ev_init(&v[2], KM_CONN_OPEN, KM_CONN_INBOUND, "10.0.0.1", "10.0.0.2", 8080, NULL, 0, 2);
	deliver(&f, v, 3);
	/* an unknown client to c: names no workload that can go but c */
	ev_init(&v[0], KM_CONN_OPEN, KM_CONN_INBOUND, "10.9.9.9", "10.0.0.1", 7000, NULL, 0, 3);
	deliver(&f, v, 1);
	assert_int_equal(f.t.n_series, 3);
	assert_int_equal(km_telemetry_expire(&f.t, 1000, 300), 0); /* all there */
	km_model_remove_workload(&f.m, "s");
	km_model_flush(&f.m);
	assert_int_equal(km_telemetry_expire(&f.t, 1000, 300), 0); /* first seen gone */
	assert_int_equal(km_telemetry_expire(&f.t, 1299, 300), 0); /* still scrapeable */
	assert_int_equal(km_telemetry_expire(&f.t, 1300, 300), 1); /* the closed one goes */
	page = render(&f);
	assert_int_equal(f.t.n_series, 2);
	assert_non_null(strstr(page, "kmesh_telemetry_series_expired_total 1"));
	assert_null(strstr(page, "reporter=\"source\""));
	free(page);
	/* the open one goes once its connection closes */
	ev_init(&v[0], KM_CONN_CLOSE, KM_CONN_INBOUND, "10.0.0.1", "10.0.0.2", 8080, NULL, 0, 2);
	deliver(&f, v, 1);
	assert_int_equal(km_telemetry_expire(&f.t, 1400, 300), 1);
	assert_int_equal(f.t.n_series, 1); /* the unknown client's, to c, which is still there */
	assert_int_equal(km_telemetry_expire(&f.t, 99999, 300), 0);
	unload(&f);
}

static void test_prom_and_index(void **state)
{
	const char *pairs[] = { "a", "x\"y\\z\nw", "b", NULL };
	char out[128];
	struct km_prom p;
	double bounds[2] = { 0.001, 0.5 };
	uint64_t counts[3] = { 2, 1, 4 };
	struct km_addr_index x;
	struct km_addr a;
	int one, two, three;
	const void *const *h;
	size_t n;

	(void)state;
	assert_int_equal(km_prom_labels(out, sizeof(out), pairs, 2, "-"), 20);
	assert_string_equal(out, "a=\"x\\\"y\\\\z\\nw\",b=\"-\"");
	assert_int_equal(km_prom_labels(out, 8, pairs, 2, "-"), -1);
	for (size_t len = 0; len < 25; len++) { /* 20 bytes and the NUL: never more, never cut */
		char small[25];

		memset(small, 'X', sizeof(small));
		assert_int_equal(km_prom_labels(small, len, pairs, 2, "-"), len > 20 ? 20 : -1);
		if (len > 20)
			assert_string_equal(small, "a=\"x\\\"y\\\\z\\nw\",b=\"-\"");
		for (size_t i = len; i < sizeof(small); i++)
			assert_int_equal(small[i], 'X');
	}
	km_prom_init(&p);
	km_prom_histogram(&p, "h", "k=\"v\"", bounds, counts, 2, 1.5);
	assert_string_equal(p.buf, "h_bucket{k=\"v\",le=\"0.001\"} 2\nh_bucket{k=\"v\",le=\"0.5\"} 3\n"
				   "h_bucket{k=\"v\",le=\"+Inf\"} 7\nh_sum{k=\"v\"} 1.5\nh_count{k=\"v\"} 7\n");
	km_prom_free(&p);

	km_addr_index_init(&x);
	/* holders are the model's entries, compared by identity */
	km_addr_parse("10.0.0.1", &a);
	assert_int_equal(km_addr_index_add(&x, &a, &one), 0);
	assert_int_equal(km_addr_index_add(&x, &a, &two), 0);
	assert_ptr_equal(km_addr_index_find(&x, &a), &two); /* the newest holder */
	assert_int_equal(km_addr_index_add(&x, &a, &one), 0);  /* taken again */
	assert_ptr_equal(km_addr_index_find(&x, &a), &one);
	h = km_addr_index_holders(&x, &a, &n); /* oldest first */
	assert_int_equal(n, 2);
	assert_ptr_equal(h[0], &two);
	assert_ptr_equal(h[1], &one);
	km_addr_index_remove(&x, &a, &one);
	assert_ptr_equal(km_addr_index_find(&x, &a), &two);
	h = km_addr_index_holders(&x, &a, &n);
	assert_int_equal(n, 1);
	assert_ptr_equal(h[0], &two);
	km_addr_index_remove(&x, &a, &two);
	assert_null(km_addr_index_find(&x, &a));
	assert_null(km_addr_index_holders(&x, &a, &n));
	assert_int_equal(n, 0);
	assert_int_equal(km_addr_index_size(&x), 0);
	/* three holders, the middle one leaves, then another: back to one, no array */
	assert_int_equal(km_addr_index_add(&x, &a, &one), 0);
	assert_int_equal(km_addr_index_add(&x, &a, &two), 0);
	assert_int_equal(km_addr_index_add(&x, &a, &three), 0);
	assert_int_equal(km_addr_index_add(&x, &a, &three), 0); /* already the newest: no change */
	km_addr_index_remove(&x, &a, &two);
	assert_ptr_equal(km_addr_index_find(&x, &a), &three);
	h = km_addr_index_holders(&x, &a, &n);
	assert_int_equal(n, 2);
	assert_ptr_equal(h[0], &one);
	km_addr_index_remove(&x, &a, &three);
	assert_ptr_equal(km_addr_index_find(&x, &a), &one);
	assert_int_equal(km_addr_index_size(&x), 1);
	assert_int_equal(x.shared.n, 0);
	km_addr_index_remove(&x, &a, &two); /* not a holder: nothing changes */
	assert_ptr_equal(km_addr_index_find(&x, &a), &one);
	/* another address held by a second holder: left for the free (ASan: the array freed) */
	km_addr_parse("10.0.0.2", &a);
	assert_int_equal(km_addr_index_add(&x, &a, &two), 0);
	assert_int_equal(km_addr_index_add(&x, &a, &three), 0);
	km_addr_index_free(&x); /* with entries left: freed whole (ASan) */
}

/* The value of the one sample of name with labels on the page, or -1. */
static long long sample_of(const char *page, const char *name, const char *labels)
{
	char want[512];
	const char *at;

	snprintf(want, sizeof(want), "\n%s%s%s%s ", name, labels ? "{" : "", labels ? labels : "",
		 labels ? "}" : "");
	at = strstr(page, want);
	return at ? strtoll(at + strlen(want), NULL, 10) : -1;
}

static char *render_denials(const struct km_authz_denials *d)
{
	struct km_prom p;

	km_prom_init(&p);
	km_authz_denials_render(d, &p);
	assert_false(p.oom);
	return p.buf;
}

/* Denials by destination workload and policy: named from the model, kept named once the workload
 * is gone (a counter never goes down while its row lives), forgotten with their row; rows that
 * cannot be named (the kernel's overflow row, a workload or policy never known) are counted
 * together, never silently. */
static void test_denials(void **state)
{
	struct fixture f;
	struct km_authz_denials d = { 0 };
	uint32_t s_id;
	char *page;
	const char *s_none = "destination_workload=\"s\",destination_workload_namespace=\"u\","
			     "policy=\"none\"";
	const char *unknown = "destination_workload=\"unknown\","
			      "destination_workload_namespace=\"unknown\",policy=\"none\"";

	(void)state;
	load(&f);
	s_id = km_model_id_of(&f.m, "s");
	assert_true(s_id != 0);
	{
		Kmesh__Ipc__AuthzDenialRow r[5];
		const Kmesh__Ipc__AuthzDenialRow *rows[5];
		const uint32_t spec[5][3] = {
			{ s_id, KM_AUTHZ_STAT_DEFAULT, 5 },
			{ s_id, 77, 2 },             /* a policy not known here */
			{ 0, KM_AUTHZ_STAT_DEFAULT, 1 }, /* a destination no workload describes */
			{ KM_AUTHZ_DENIALS_OTHER, KM_AUTHZ_DENIALS_OTHER, 4 }, /* the table was full */
			{ 12345, KM_AUTHZ_STAT_DEFAULT, 3 }, /* a workload never known here */
		};

		for (int i = 0; i < 5; i++) {
			kmesh__ipc__authz_denial_row__init(&r[i]);
			r[i].workload_id = spec[i][0];
			r[i].stat_id = spec[i][1];
			r[i].denied = spec[i][2];
			rows[i] = &r[i];
		}
		km_authz_denials_take(&d, rows, 5, NULL, &f.m);
		page = render_denials(&d);
		assert_int_equal(sample_of(page, "kmesh_authz_denied_connections_total", s_none), 5);
		assert_int_equal(sample_of(page, "kmesh_authz_denied_connections_total", unknown), 1);
		assert_int_equal(sample_of(page, "kmesh_authz_unlisted_denied_connections_total", NULL), 9);
		free(page);

		/* the workload goes; its row stays named and counts on */
		km_model_remove_workload(&f.m, "s");
		assert_null(km_model_workload_by_id(&f.m, s_id));
		r[0].denied = 6;
		km_authz_denials_take(&d, rows, 5, NULL, &f.m);
		page = render_denials(&d);
		assert_int_equal(sample_of(page, "kmesh_authz_denied_connections_total", s_none), 6);
		free(page);

		/* the map writer removed its row: the series goes */
		km_authz_denials_take(&d, rows + 1, 4, NULL, &f.m);
		page = render_denials(&d);
		assert_int_equal(sample_of(page, "kmesh_authz_denied_connections_total", s_none), -1);
		assert_int_equal(d.n, 4);
		free(page);
	}
	km_authz_denials_free(&d);
	unload(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_labels_and_counts),
		cmocka_unit_test(test_progress),
		cmocka_unit_test(test_hbone_streams),
		cmocka_unit_test(test_baggage),
		cmocka_unit_test(test_denials),
		cmocka_unit_test(test_series_bound),
		cmocka_unit_test(test_series_expire),
		cmocka_unit_test(test_prom_and_index),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
