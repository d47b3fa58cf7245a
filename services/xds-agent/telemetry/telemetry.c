/* telemetry.c — connection reports to metrics and access log lines (see telemetry.h). */
#include "services/xds-agent/telemetry/telemetry.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uthash.h>

#include <jansson.h>

#include "services/xds-agent/telemetry/baggage.h"
#include "shared/addr.h"
#include "shared/log.h"

#define UNKNOWN "unknown"
#define N_LABELS 23
#define LABELS_MAX 4096

struct tm_series {
	char *labels; /* the Prometheus label text: the key */
	uint64_t opened, closed, sent, received;
	char *src_uid, *dst_uid; /* the workloads it names (NULL: unknown), to expire it when gone */
	uint64_t gone_since_s;   /* when one of them was first seen gone (0: both there) */
	uint32_t refs;           /* open connections counting into it */
	UT_hash_handle hh;
};

struct tm_open {
	uint64_t cookie;
	uint64_t mono_ns;
	enum km_conn_origin origin;
	uint64_t req_counted, resp_counted; /* bytes already added to the series */
	struct tm_series *series; /* NULL when the series table was full */
	UT_hash_handle hh;
};

/* The client as a report names it: its workload's fields, or (an HBONE client the model does not
 * place at its address) what its certificate and baggage say. Any may be NULL. */
struct source {
	const char *name, *workload, *canonical, *revision, *namespace, *cluster;
	char principal[768]; /* "spiffe://..." or "" */
	char ns[KM_BAGGAGE_VALUE_MAX + 1]; /* the certificate's namespace */
};

/* The resources a report names (any may be NULL). */
struct names {
	const struct km_workload_res *src, *dst;
	const struct km_service_res *svc;
	struct km_addr src_addr, dst_addr;
	struct source from;
	struct km_baggage baggage; /* the HBONE client's, when its workload is not known */
	int mtls;                  /* an HBONE stream: the client's principal is verified */
	const char *route_why;     /* outbound: why this road (km_model_route_why); inbound NULL */
};

/* The server workload's service for this port: the one whose target port it is, else its first
 * known one. */
static const struct km_service_res *service_of(const struct km_model *m,
					       const struct km_workload_res *w, uint32_t port)
{
	const struct km_service_res *first = NULL;

	for (size_t i = 0; w && i < w->n_services; i++) {
		const struct km_service_res *s = km_model_find_service(m, w->services[i].service);

		if (!s)
			continue;
		if (!first)
			first = s;
		for (size_t p = 0; p < s->n_ports; p++)
			if (km_target_port(s, w, &w->services[i], s->ports[p].service_port) == port)
				return s;
	}
	return first;
}

static void principal(const struct km_workload_res *w, char *out, size_t len)
{
	if (w && w->who->namespace && *w->who->namespace && w->who->service_account && *w->who->service_account)
		snprintf(out, len, "spiffe://%s/ns/%s/sa/%s",
			 w->who->trust_domain && *w->who->trust_domain ? w->who->trust_domain : "cluster.local",
			 w->who->namespace, w->who->service_account);
	else
		out[0] = '\0';
}

static void source_of_workload(const struct km_workload_res *w, struct source *f)
{
	f->name = w ? w->name : NULL;
	f->workload = w ? w->who->workload_name : NULL;
	f->canonical = w ? w->who->canonical_name : NULL;
	f->revision = w ? w->who->canonical_revision : NULL;
	f->namespace = w ? w->who->namespace : NULL;
	f->cluster = w ? w->who->cluster_id : NULL;
	principal(w, f->principal, sizeof(f->principal));
}

/* An HBONE stream's client: the principal is its certificate's. Its labels are the workload's at
 * its address when that workload has this principal (as ztunnel, which finds the source by
 * address); else what its baggage says, taken only when the baggage's namespace, if it names
 * one, is the certificate's (the namespace label is always the certificate's). */
static void source_of_hbone(const Kmesh__Ipc__ConnEvent *e, struct names *n)
{
	struct source *f = &n->from;
	const char *ns = strstr(e->principal, "/ns/"), *ns_end;

	source_of_workload(n->src, f);
	if (n->src && !strncmp(f->principal, "spiffe://", 9) && !strcmp(f->principal + 9, e->principal))
		return;
	n->src = NULL; /* the address's workload is not this client */
	source_of_workload(NULL, f);
	if (ns && (ns_end = strstr(ns + 4, "/sa/")) && ns_end - ns - 4 <= KM_BAGGAGE_VALUE_MAX) {
		memcpy(f->ns, ns + 4, (size_t)(ns_end - ns - 4));
		f->ns[ns_end - ns - 4] = '\0';
	}
	f->namespace = f->ns[0] ? f->ns : NULL;
	if (e->baggage && km_baggage_parse(e->baggage, strlen(e->baggage), &n->baggage) > 0 &&
	    (!n->baggage.namespace[0] || !strcmp(n->baggage.namespace, f->ns))) {
		f->name = f->workload = n->baggage.workload[0] ? n->baggage.workload : NULL;
		f->canonical = n->baggage.service[0] ? n->baggage.service : NULL;
		f->revision = n->baggage.version[0] ? n->baggage.version : NULL;
		f->cluster = n->baggage.cluster[0] ? n->baggage.cluster : NULL;
	}
	snprintf(f->principal, sizeof(f->principal), "spiffe://%s", e->principal);
}

static void resolve(const struct km_telemetry *t, const Kmesh__Ipc__ConnEvent *e, struct names *n)
{
	const struct km_service_res *asked = NULL; /* the VIP the application connected to */
	struct km_addr orig;

	memset(n, 0, sizeof(*n));
	km_addr_from_bytes(e->src.data, e->src.len, &n->src_addr);
	km_addr_from_bytes(e->dst.data, e->dst.len, &n->dst_addr);
	n->src = km_model_workload_at(t->model, &n->src_addr);
	n->dst = km_model_workload_at(t->model, &n->dst_addr);
	if (e->orig_dst.len && km_addr_from_bytes(e->orig_dst.data, e->orig_dst.len, &orig) == 0)
		asked = n->svc = km_model_service_at(t->model, &orig);
	if (!n->svc)
		n->svc = service_of(t->model, n->dst, e->dport);
	n->mtls = e->principal && *e->principal;
	if (e->direction != KM_CONN_INBOUND)
		n->route_why = km_model_route_why(t->model, n->dst, asked, n->mtls);
	if (n->mtls)
		source_of_hbone(e, n);
	else
		source_of_workload(n->src, &n->from);
}

/* Istio's CommonTrafficLabels for this report. Returns the length, or -1 if too long. */
static int labels_of(const Kmesh__Ipc__ConnEvent *e, const struct names *n, char *out, size_t len)
{
	const struct source *s = &n->from;
	const struct km_workload_res *d = n->dst;
	char dp[768];
	const char *pairs[2 * N_LABELS] = {
		"reporter", e->direction == KM_CONN_INBOUND ? "destination" : "source",
		"source_workload", s->workload,
		"source_canonical_service", s->canonical,
		"source_canonical_revision", s->revision,
		"source_workload_namespace", s->namespace,
		"source_principal", s->principal,
		"source_app", s->canonical,
		"source_version", s->revision,
		"source_cluster", s->cluster,
		"destination_service", n->svc ? n->svc->hostname : NULL,
		"destination_service_namespace", n->svc ? n->svc->namespace : NULL,
		"destination_service_name", n->svc ? n->svc->svc_name : NULL,
		"destination_workload", d ? d->who->workload_name : NULL,
		"destination_canonical_service", d ? d->who->canonical_name : NULL,
		"destination_canonical_revision", d ? d->who->canonical_revision : NULL,
		"destination_workload_namespace", d ? d->who->namespace : NULL,
		"destination_principal", dp,
		"destination_app", d ? d->who->canonical_name : NULL,
		"destination_version", d ? d->who->canonical_revision : NULL,
		"destination_cluster", d ? d->who->cluster_id : NULL,
		"request_protocol", "tcp",
		"response_flags", "-",
		"connection_security_policy", n->mtls ? "mutual_tls" : UNKNOWN,
	};

	principal(d, dp, sizeof(dp));
	return km_prom_labels(out, len, pairs, N_LABELS, UNKNOWN);
}

static void series_free(struct tm_series *s)
{
	free(s->labels);
	free(s->src_uid);
	free(s->dst_uid);
	free(s);
}

static struct tm_series *series_get(struct km_telemetry *t, const char *labels,
				    const struct names *n)
{
	struct tm_series *s;

	HASH_FIND_STR(t->series, labels, s);
	if (s)
		return s;
	if (t->n_series >= KM_TELEMETRY_MAX_SERIES || !(s = calloc(1, sizeof(*s))) ||
	    !(s->labels = strdup(labels)) ||
	    (n->src && n->src->uid_text && !(s->src_uid = km_workload_uid_dup(n->src))) ||
	    (n->dst && n->dst->uid_text && !(s->dst_uid = km_workload_uid_dup(n->dst)))) {
		if (s)
			series_free(s);
		t->series_dropped++;
		return NULL;
	}
	HASH_ADD_KEYPTR(hh, t->series, s->labels, strlen(s->labels), s);
	t->n_series++;
	return s;
}

/* Monotonic nanoseconds of the report to wall-clock time. */
static void wall_time(uint64_t mono_ns, char *out, size_t len)
{
	struct timespec now_mono, now_real;
	int64_t ns;
	time_t sec;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_MONOTONIC, &now_mono);
	clock_gettime(CLOCK_REALTIME, &now_real);
	ns = (int64_t)now_real.tv_sec * 1000000000 + now_real.tv_nsec -
	     ((int64_t)now_mono.tv_sec * 1000000000 + now_mono.tv_nsec - (int64_t)mono_ns);
	sec = (time_t)(ns / 1000000000);
	gmtime_r(&sec, &tm);
	n = strftime(out, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, len - n, ".%06uZ", (unsigned)((uint64_t)ns % 1000000000u / 1000u));
}

static const char *or_unknown(const char *s)
{
	return s && *s ? s : UNKNOWN;
}

/* "10.0.0.1:80" or "[fd00::1]:80". */
static void host_port(const struct km_addr *addr, uint32_t port, char *out, size_t len)
{
	char a[KM_ADDR_STRLEN];
	int v4 = km_addr_is_v4(addr);

	snprintf(out, len, "%s%s%s:%u", v4 ? "" : "[", km_addr_format(addr, a), v4 ? "" : "]", port);
}

static void access_log(struct km_telemetry *t, const Kmesh__Ipc__ConnEvent *e,
		       const struct names *n, int64_t duration_ns)
{
	char when[40], src[KM_ADDR_STRLEN + 8], dst[KM_ADDR_STRLEN + 8];
	int close = e->kind == KM_CONN_CLOSE;
	const char *dir = e->direction == KM_CONN_INBOUND ? "inbound" : "outbound";
	char dst_id[768];
	/* sent and received as the reporter's pod sees them */

	principal(n->dst, dst_id, sizeof(dst_id));
	wall_time(e->mono_ns, when, sizeof(when));
	host_port(&n->src_addr, e->sport, src, sizeof(src));
	host_port(&n->dst_addr, e->dport, dst, sizeof(dst));
	if (t->format == KM_ACCESS_LOG_JSON) {
		json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "time", when,
				      "event", close ? "close" : "open", "direction", dir, "src", src,
				      "src_workload", or_unknown(n->from.name),
				      "src_namespace", or_unknown(n->from.namespace),
				      "dst", dst, "dst_service",
				      or_unknown(n->svc ? n->svc->hostname : NULL), "dst_workload",
				      or_unknown(n->dst ? n->dst->name : NULL), "dst_namespace",
				      or_unknown(n->dst ? n->dst->who->namespace : NULL));
		char *text;

		if (o) {
			json_object_set_new(o, "route", json_string(n->mtls ? "hbone" : "kernel"));
			if (n->route_why)
				json_object_set_new(o, "route_why", json_string(n->route_why));
		}
		if (o && n->mtls) {
			json_object_set_new(o, "src_identity", json_string(n->from.principal));
			json_object_set_new(o, "dst_identity", json_string(or_unknown(dst_id)));
		}
		if (o && close) {
			json_object_set_new(o, "sent_bytes", json_integer((json_int_t)e->sent_bytes));
			json_object_set_new(o, "received_bytes",
					    json_integer((json_int_t)e->received_bytes));
			json_object_set_new(o, "retransmissions", json_integer(e->retrans));
			json_object_set_new(o, "srtt_us", json_integer(e->srtt_us));
			if (duration_ns >= 0)
				json_object_set_new(o, "duration_ms",
						    json_real((double)duration_ns / 1e6));
		}
		text = o ? json_dumps(o, JSON_COMPACT) : NULL;
		if (text)
			fprintf(t->out, "%s\n", text);
		free(text);
		json_decref(o);
	} else {
		fprintf(t->out, "accesslog: %s %s %s src=%s src.workload=%s src.namespace=%s dst=%s "
				"dst.service=%s dst.workload=%s dst.namespace=%s",
			when, close ? "close" : "open", dir, src,
			or_unknown(n->from.name), or_unknown(n->from.namespace), dst,
			or_unknown(n->svc ? n->svc->hostname : NULL),
			or_unknown(n->dst ? n->dst->name : NULL),
			or_unknown(n->dst ? n->dst->who->namespace : NULL));
		if (n->mtls) /* as ztunnel's access log names them */
			fprintf(t->out, " src.identity=\"%s\" dst.identity=\"%s\"", n->from.principal,
				or_unknown(dst_id));
		if (close) {
			fprintf(t->out, " sent_bytes=%llu received_bytes=%llu retransmissions=%u srtt=%uus",
				(unsigned long long)e->sent_bytes,
				(unsigned long long)e->received_bytes, e->retrans, e->srtt_us);
			if (duration_ns >= 0)
				fprintf(t->out, " duration=%.3fms", (double)duration_ns / 1e6);
		}
		/* last, after the fields older parsers know: the road, and why (outbound) */
		fprintf(t->out, " route=%s", n->mtls ? "hbone" : "kernel");
		if (n->route_why)
			fprintf(t->out, " route.why=%s", n->route_why);
		fputc('\n', t->out);
	}
	fflush(t->out);
	t->log_lines++;
}

/* Count a connection opened and track it for its progress and close. mono_ns: when it opened,
 * 0 when unknown (first heard of by a later report: no duration). Returns its entry, or NULL. */
static struct tm_open *track_open(struct km_telemetry *t, const Kmesh__Ipc__ConnEvent *e,
				  const struct names *n, enum km_conn_origin origin, uint64_t mono_ns)
{
	char labels[LABELS_MAX];
	struct tm_series *s = NULL;
	struct tm_open *o;

	if (labels_of(e, n, labels, sizeof(labels)) >= 0)
		s = series_get(t, labels, n);
	else
		t->series_dropped++;
	if (s)
		s->opened++;
	HASH_FIND(hh, t->open, &e->cookie, sizeof(e->cookie), o);
	if (!o && t->n_open >= KM_TELEMETRY_MAX_OPEN) {
		/* full (closes were lost): the oldest goes, so the table heals instead of staying full */
		struct tm_open *oldest = t->open;

		HASH_DEL(t->open, oldest);
		if (oldest->series)
			oldest->series->refs--;
		free(oldest);
		t->n_open--;
		t->open_dropped++;
	}
	if (!o) {
		if (!(o = calloc(1, sizeof(*o)))) {
			t->open_dropped++;
		} else {
			o->cookie = e->cookie;
			o->origin = origin;
			HASH_ADD(hh, t->open, cookie, sizeof(o->cookie), o);
			t->n_open++;
		}
	}
	if (o) {
		o->mono_ns = mono_ns;
		o->req_counted = o->resp_counted = 0;
		if (o->series)
			o->series->refs--;
		o->series = s;
		if (s)
			s->refs++;
	}
	return o;
}

static void on_open(struct km_telemetry *t, const Kmesh__Ipc__ConnEvent *e,
		    enum km_conn_origin origin)
{
	struct names n;

	resolve(t, e, &n);
	track_open(t, e, &n, origin, e->mono_ns);
	if (t->access_log)
		access_log(t, e, &n, -1);
}

/* The pod's bytes: outbound it is the client (sent = request), inbound the server. */
static void request_response(const Kmesh__Ipc__ConnEvent *e, uint64_t *req, uint64_t *resp)
{
	*req = e->direction == KM_CONN_OUTBOUND ? e->sent_bytes : e->received_bytes;
	*resp = e->direction == KM_CONN_OUTBOUND ? e->received_bytes : e->sent_bytes;
}

/* What grew since the last report of this connection: counted once, never backwards. */
static uint64_t grown(uint64_t now, uint64_t *counted)
{
	uint64_t d = now > *counted ? now - *counted : 0;

	if (now > *counted)
		*counted = now;
	return d;
}

/* An open connection's counters so far: the series gets what moved since its last report. A
 * connection first heard of here (no open report: the map writer reports opens only while the
 * access log wants them; or it opened before this agent subscribed) is counted opened now. (The
 * map writer never sends a connection's report after its close.) */
static void on_progress(struct km_telemetry *t, const Kmesh__Ipc__ConnEvent *e,
			enum km_conn_origin origin)
{
	struct tm_open *o;
	uint64_t req, resp, d_req, d_resp;

	HASH_FIND(hh, t->open, &e->cookie, sizeof(e->cookie), o);
	if (!o) {
		struct names n;

		t->progress_unmatched++;
		resolve(t, e, &n);
		if (!(o = track_open(t, e, &n, origin, 0)))
			return;
	}
	t->progress++;
	request_response(e, &req, &resp);
	d_req = grown(req, &o->req_counted);
	d_resp = grown(resp, &o->resp_counted);
	if (o->series) {
		o->series->received += d_req;
		o->series->sent += d_resp;
	}
}

static void on_close(struct km_telemetry *t, const Kmesh__Ipc__ConnEvent *e)
{
	struct names n;
	struct tm_series *s = NULL;
	struct tm_open *o;
	int64_t duration = -1;
	uint64_t req, resp, req_counted = 0, resp_counted = 0;

	resolve(t, e, &n);
	HASH_FIND(hh, t->open, &e->cookie, sizeof(e->cookie), o);
	if (o) {
		req_counted = o->req_counted;
		resp_counted = o->resp_counted;
		s = o->series;
		if (s)
			s->refs--;
		if (o->mono_ns)
			duration = (int64_t)(e->mono_ns - o->mono_ns);
		HASH_DEL(t->open, o);
		free(o);
		t->n_open--;
	} else {
		char labels[LABELS_MAX];

		/* first heard of at its close (no open report: see on_progress): opened and closed */
		t->closes_unmatched++;
		if (labels_of(e, &n, labels, sizeof(labels)) >= 0)
			s = series_get(t, labels, &n);
		else
			t->series_dropped++;
		if (s)
			s->opened++;
	}
	request_response(e, &req, &resp);
	if (s) {
		s->closed++;
		s->received += grown(req, &req_counted);
		s->sent += grown(resp, &resp_counted);
	}
	if (t->access_log)
		access_log(t, e, &n, duration);
}

void km_telemetry_events(struct km_telemetry *t, const Kmesh__Ipc__ConnEvents *b,
			 enum km_conn_origin origin)
{
	if (b->lost) {
		km_warn("%llu connection reports were lost before reaching this agent from %s "
			"(metrics undercount them)", (unsigned long long)b->lost,
			origin == KM_CONN_FROM_TUNNEL ? "the tunnel" : "the map writer");
		t->lost += b->lost;
	}
	for (size_t i = 0; i < b->n_events; i++) {
		const Kmesh__Ipc__ConnEvent *e = b->events[i];

		t->reports++;
		if (origin == KM_CONN_FROM_KERNEL && e->principal && *e->principal)
			continue; /* a principal is the tunnel's to report */
		if (e->kind == KM_CONN_OPEN)
			on_open(t, e, origin);
		else if (e->kind == KM_CONN_CLOSE)
			on_close(t, e);
		else if (e->kind == KM_CONN_PROGRESS)
			on_progress(t, e, origin);
	}
}

static void family(const struct km_telemetry *t, struct km_prom *p, const char *name,
		   const char *help, size_t field)
{
	const struct tm_series *s, *tmp;

	km_prom_family(p, name, "counter", help);
	HASH_ITER(hh, t->series, s, tmp)
		km_prom_sample(p, name, s->labels, *(const uint64_t *)((const char *)s + field));
}

void km_telemetry_render(const struct km_telemetry *t, struct km_prom *p)
{
	family(t, p, "istio_tcp_connections_opened_total", "TCP connections opened",
	       offsetof(struct tm_series, opened));
	family(t, p, "istio_tcp_connections_closed_total", "TCP connections closed",
	       offsetof(struct tm_series, closed));
	family(t, p, "istio_tcp_received_bytes_total",
	       "bytes of the request (client to server), counted while open and at close",
	       offsetof(struct tm_series, received));
	family(t, p, "istio_tcp_sent_bytes_total",
	       "bytes of the response (server to client), counted while open and at close",
	       offsetof(struct tm_series, sent));
	km_prom_metric(p, "kmesh_telemetry_reports_total", "counter",
		       "connection reports received from the map writer", t->reports);
	km_prom_metric(p, "kmesh_telemetry_reports_lost_total", "counter",
		       "connection reports lost on the way (ring buffer full or a slow reader)", t->lost);
	km_prom_metric(p, "kmesh_telemetry_series_expired_total", "counter",
		       "series removed once a workload they name had been gone for a while",
		       t->series_expired);
	km_prom_metric(p, "kmesh_telemetry_series_dropped_total", "counter",
		       "reports not counted because the series table was full", t->series_dropped);
	km_prom_metric(p, "kmesh_telemetry_open_connections", "gauge",
		       "connections open (as reported) and tracked for their close", t->n_open);
	km_prom_metric(p, "kmesh_telemetry_open_dropped_total", "counter",
		       "open connections forgotten (the table full, or a new connection to the map writer)",
		       t->open_dropped);
	km_prom_metric(p, "kmesh_telemetry_progress_reports_total", "counter",
		       "open connections' byte counters received and counted", t->progress);
	km_prom_metric(p, "kmesh_telemetry_progress_unmatched_total", "counter",
		       "open connections first heard of by their open connections' report (counted opened then)",
		       t->progress_unmatched);
	km_prom_metric(p, "kmesh_telemetry_closes_unmatched_total", "counter",
		       "connections first heard of at their close (counted opened then)",
		       t->closes_unmatched);
	km_prom_metric(p, "kmesh_access_log_lines_total", "counter", "access log lines written",
		       t->log_lines);
}

void km_telemetry_forget_open(struct km_telemetry *t, enum km_conn_origin origin)
{
	struct tm_open *o, *tmp;

	HASH_ITER(hh, t->open, o, tmp) {
		if (o->origin != origin)
			continue;
		HASH_DEL(t->open, o);
		if (o->series)
			o->series->refs--;
		free(o);
		t->n_open--;
		t->open_dropped++;
	}
}

int km_access_log_format_parse(const char *name, enum km_access_log_format *out)
{
	if (!strcmp(name, "text"))
		*out = KM_ACCESS_LOG_TEXT;
	else if (!strcmp(name, "json"))
		*out = KM_ACCESS_LOG_JSON;
	else
		return -1;
	return 0;
}

const char *km_access_log_format_name(enum km_access_log_format f)
{
	return f == KM_ACCESS_LOG_JSON ? "json" : "text";
}

int km_telemetry_init(struct km_telemetry *t, struct km_model *m, FILE *out)
{
	memset(t, 0, sizeof(*t));
	t->model = m;
	t->out = out;
	return 0;
}

void km_telemetry_free(struct km_telemetry *t)
{
	struct tm_series *s, *stmp;
	struct tm_open *o, *otmp;

	HASH_ITER(hh, t->series, s, stmp) {
		HASH_DEL(t->series, s);
		series_free(s);
	}
	HASH_ITER(hh, t->open, o, otmp) {
		HASH_DEL(t->open, o);
		free(o);
	}
}

/* Is the workload uid (NULL: an unknown end, which never goes) still in the model? */
static int still_there(const struct km_model *m, const char *uid)
{
	return !uid || km_model_find_workload(m, uid) != NULL;
}

size_t km_telemetry_expire(struct km_telemetry *t, uint64_t now_s, uint64_t ttl_s)
{
	struct tm_series *s, *tmp;
	size_t n = 0;

	HASH_ITER(hh, t->series, s, tmp) {
		if (still_there(t->model, s->src_uid) && still_there(t->model, s->dst_uid)) {
			s->gone_since_s = 0;
			continue;
		}
		if (!s->gone_since_s) {
			s->gone_since_s = now_s ? now_s : 1;
			continue;
		}
		if (now_s - s->gone_since_s < ttl_s || s->refs)
			continue; /* its last values are still to be scraped, or a connection is open */
		HASH_DEL(t->series, s);
		series_free(s);
		t->n_series--;
		n++;
	}
	t->series_expired += n;
	return n;
}
