/* agent_metrics.c — the metrics page (see agent_metrics.h). */
#include "services/xds-agent/telemetry/agent_metrics.h"
#include "services/xds-agent/dns/dns_server.h"
#include "services/xds-agent/dns/hostname_resolver.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "services/xds-agent/sources/file_source.h"
#include "shared/log.h"
#include "shared/version.h"
#include "shared/process_metrics.h"

#define gauge(p, name, help, v) km_prom_metric(p, name, "gauge", help, v)
#define counter(p, name, help, v) km_prom_metric(p, name, "counter", help, v)

static void by_type(struct km_prom *p, const struct km_ads_client *ads, const char *name,
		    const char *help, size_t field)
{
	const struct km_ads_type *types[2] = { &ads->address, &ads->authz };
	static const char *const labels[2] = { "type=\"address\"", "type=\"authorization\"" };

	km_prom_family(p, name, "counter", help);
	for (int i = 0; i < 2; i++)
		km_prom_sample(p, name, labels[i], *(const uint64_t *)((const char *)types[i] + field));
}

/* The DNS proxy's counters. */
static void dns_metrics(const struct km_dns_server *d, struct km_prom *p)
{
	const struct km_dns_resolver *r = d->resolver;

	km_prom_family(p, "kmesh_dns_queries_total", "counter",
		       "DNS queries the node proxy received, by how they were answered");
	km_prom_sample(p, "kmesh_dns_queries_total", "result=\"answered\"", r->answered);
	km_prom_sample(p, "kmesh_dns_queries_total", "result=\"nodata\"", r->nodata);
	km_prom_sample(p, "kmesh_dns_queries_total", "result=\"forwarded\"", r->forwarded);
	km_prom_sample(p, "kmesh_dns_queries_total", "result=\"dropped\"", r->refused);
	km_prom_metric(p, "kmesh_dns_truncated_total", "counter",
		       "answers too large for UDP, sent truncated (the client asks over TCP)",
		       r->truncated);
	km_prom_metric(p, "kmesh_dns_clipped_total", "counter",
		       "answers with more addresses than one DNS message holds (65,535 bytes): as many "
		       "as fit, each answer starting where the last stopped",
		       r->clipped);
	km_prom_metric(p, "kmesh_dns_names", "gauge", "service hostnames the proxy answers for",
		       r->names.n);
	km_prom_metric(p, "kmesh_dns_upstream_timeouts_total", "counter",
		       "queries forwarded upstream that got no answer in 5 s", d->upstream_timeouts);
	km_prom_metric(p, "kmesh_dns_upstream_errors_total", "counter",
		       "queries that could not be forwarded upstream", d->upstream_errors);
	km_prom_metric(p, "kmesh_dns_dropped_total", "counter",
		       "UDP queries dropped: 4096 already waiting for upstream", d->pending_full);
	km_prom_metric(p, "kmesh_dns_tcp_refused_total", "counter",
		       "TCP connections refused: 256 already open", d->tcp_refused);
	km_prom_metric(p, "kmesh_dns_tcp_slow_closed_total", "counter",
		       "TCP clients closed for leaving 256 KiB of answers unread", d->tcp_slow_closed);
	km_prom_family(p, "kmesh_dns_demand_waits_total", "counter",
		       "on demand: answers that waited for the service they made the agent demand, "
		       "by how the wait ended");
	km_prom_sample(p, "kmesh_dns_demand_waits_total", "result=\"written\"", d->waited);
	km_prom_sample(p, "kmesh_dns_demand_waits_total", "result=\"expired\"", d->wait_expired);
	km_prom_sample(p, "kmesh_dns_demand_waits_total", "result=\"full\"", d->wait_full);
}

static void own(struct km_prom *p, const struct km_agent_state *st)
{
	struct km_model_stats ms;
	const struct km_latency *l = st->update_latency;
	double bounds[KM_LATENCY_BUCKETS];

	km_prom_family(p, "kmesh_xds_agent_build_info", "gauge", "the xDS agent's build");
	km_prom_printf(p, "kmesh_xds_agent_build_info{version=\"%s\"} 1\n", km_version());
	/* Istio's own build metric (istiod and ztunnel export it), so version panels of Istio's
	 * dashboards list the node's data plane too */
	km_prom_family(p, "istio_build", "gauge", "Istio component build info");
	km_prom_printf(p, "istio_build{component=\"kmesh\",tag=\"%s\"} 1\n", km_version());
	if (st->ads) {
		gauge(p, "kmesh_xds_connected", "1 while the stream to istiod is open",
		      (uint64_t)st->ads->connected);
		counter(p, "kmesh_xds_connects_total", "streams to istiod opened", st->ads->connects);
		counter(p, "kmesh_xds_disconnects_total", "streams to istiod that ended",
			st->ads->disconnects);
		by_type(p, st->ads, "kmesh_xds_responses_total", "responses received from istiod",
			offsetof(struct km_ads_type, responses));
		by_type(p, st->ads, "kmesh_xds_acks_total", "responses accepted (ACK)",
			offsetof(struct km_ads_type, acks));
		by_type(p, st->ads, "kmesh_xds_nacks_total", "responses refused (NACK)",
			offsetof(struct km_ads_type, nacks));
		by_type(p, st->ads, "kmesh_xds_versions_withheld_total",
			"streams whose first request named no versions (too many): istiod's whole "
			"state followed", offsetof(struct km_ads_type, withholds));
		by_type(p, st->ads, "kmesh_xds_swept_total",
			"resources removed because istiod's whole state did not name them",
			offsetof(struct km_ads_type, swept));
		by_type(p, st->ads, "kmesh_xds_streamed_total",
			"responses over 1 MiB whose applying began while they were still arriving",
			offsetof(struct km_ads_type, streamed));
	}
	if (l) {
		for (size_t i = 0; i < KM_LATENCY_BUCKETS; i++)
			bounds[i] = km_latency_bounds_s[i];
		km_prom_family(p, "kmesh_xds_apply_seconds", "histogram",
			       "from a response received (its first bytes, if it was streamed) to "
			       "its table operations applied");
		km_prom_histogram(p, "kmesh_xds_apply_seconds", "", bounds, l->buckets,
				  KM_LATENCY_BUCKETS, (double)l->sum_us / 1e6);
	}
	gauge(p, "kmesh_map_writer_connected", "1 while the link to the map writer is up",
	      (uint64_t)km_writer_link_ready(st->link));
	counter(p, "kmesh_table_ops_applied_total", "table operations the map writer applied",
		st->link->ops_acked);
	counter(p, "kmesh_table_ops_refused_total", "table operations the map writer refused",
		st->link->ops_refused);
	if (st->resync) {
		counter(p, "kmesh_table_rewrites_total",
			"whole-model rewrites run because the map writer refused rows",
			st->resync->rewrites);
		km_prom_family(p, "kmesh_table_rewrite_wait_seconds", "gauge",
			       "the wait before the next whole-model rewrite (0: none due)");
		km_prom_printf(p, "kmesh_table_rewrite_wait_seconds %.3f\n",
			       (double)st->resync->armed_ms / 1000.0);
	}
	if (st->authz_metrics)
		km_authz_metrics_render(st->authz_metrics, p);
	if (st->dns)
		dns_metrics(st->dns, p);
	if (st->hostnames) {
		km_prom_metric(p, "kmesh_hostname_workloads", "gauge",
			       "workloads named by hostname, resolved on the loop", st->hostnames->n);
		km_prom_metric(p, "kmesh_hostname_resolutions_total", "counter",
			       "their names resolved", st->hostnames->resolutions);
		km_prom_metric(p, "kmesh_hostname_resolution_failures_total", "counter",
			       "resolutions that failed (the last good addresses kept)",
			       st->hostnames->failures);
		km_prom_metric(p, "kmesh_hostname_changes_total", "counter",
			       "answers that changed a workload's addresses", st->hostnames->changes);
	}
	km_model_stats(st->model, &ms);
	gauge(p, "kmesh_model_services", "services known", ms.services);
	gauge(p, "kmesh_model_workloads", "workloads known", ms.workloads);
	gauge(p, "kmesh_model_endpoints", "service endpoints", ms.endpoints);
	gauge(p, "kmesh_authz_policies", "authorization policies known", st->policies->count);
}

static int is_prom_file(const char *name)
{
	size_t n = strlen(name);

	return name[0] != '.' && n > 5 && !strcmp(name + n - 5, ".prom");
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.prom files of dir (sub: as "sub/name"), added to names up to KM_METRICS_FILES; with
 * depth 1 the files of its subdirectories too. */
static void collect(const char *dir, const char *sub, int depth, char **names, size_t *n)
{
	char path[4096];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "%s%s%s", dir, sub ? "/" : "", sub ? sub : "");
	if (!(d = opendir(path)))
		return; /* none written yet */
	while ((e = readdir(d)) && *n < KM_METRICS_FILES) {
		if (e->d_name[0] == '.')
			continue;
		if ((e->d_type == DT_REG || e->d_type == DT_UNKNOWN) && is_prom_file(e->d_name)) {
			char name[600];

			snprintf(name, sizeof(name), "%s%s%s", sub ? sub : "", sub ? "/" : "", e->d_name);
			if ((names[*n] = strdup(name)))
				(*n)++;
		} else if (e->d_type == DT_DIR && depth > 0 && strlen(e->d_name) < 256) {
			collect(dir, e->d_name, depth - 1, names, n);
		}
	}
	closedir(d);
}

/* The other processes' files, in name order: DIR/NAME.prom, and DIR/SUB/NAME.prom of a process
 * that may not write DIR itself (the unprivileged tunnel's, under systemd). */
static void files(struct km_prom *p, const char *dir)
{
	char *names[KM_METRICS_FILES];
	size_t n = 0;

	collect(dir, NULL, 1, names, &n);
	qsort(names, n, sizeof(*names), by_name);
	for (size_t i = 0; i < n; i++) {
		char path[4096], err[256];
		struct stat st;
		size_t len;
		char *text;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (stat(path, &st) != 0 || time(NULL) - st.st_mtime > KM_METRICS_FILE_STALE_S) {
			/* its writer stopped (killed: a stopped one removes it): not served as current */
			km_debug("metrics: %s is older than %d s; left out", path, KM_METRICS_FILE_STALE_S);
			free(names[i]);
			continue;
		}
		text = km_file_read_all(path, KM_METRICS_FILE_MAX, &len, err, sizeof(err));
		if (text) {
			km_prom_append(p, text, len);
			if (len && text[len - 1] != '\n')
				km_prom_append(p, "\n", 1);
		} else {
			km_debug("metrics: %s", err);
		}
		free(text);
		free(names[i]);
	}
}

char *km_agent_metrics(const struct km_agent_state *st, const struct km_telemetry *t,
		       const char *metrics_dir, size_t *len)
{
	struct km_prom p;

	km_prom_init(&p);
	own(&p, st);
	km_process_metrics(&p, "xds-agent");
	if (t)
		km_telemetry_render(t, &p);
	if (metrics_dir && *metrics_dir)
		files(&p, metrics_dir);
	/* the processes' files name some families too (process_*): one block each */
	if (p.oom || km_prom_group(&p) != 0) {
		km_prom_free(&p);
		return NULL;
	}
	*len = p.len;
	return p.buf ? p.buf : strdup("");
}
