/* metrics_file.c — the map writer's metrics file (see metrics_file.h). */
#include "services/map-writer/metrics_file.h"
#include "services/map-writer/authz_lookup.h"
#include "services/map-writer/conn_progress.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kmesh_maps.h"

#include "shared/atomic_file.h"
#include "shared/log.h"
#include "shared/process_metrics.h"
#include "shared/prom.h"
#include "shared/version.h"

#define CNI_FILE_MAX (1u << 20)

/* Entries in a map, walked where the kernel cannot count them (map_count.h): read in batches of
 * COUNT_CHUNK rows, a system call per batch rather than per key; still O(rows), with the loop
 * held (~60 ms per 100k rows). */
#define COUNT_CHUNK 4096

static uint64_t count_entries(int fd, size_t key_len, size_t value_len)
{
	uint64_t n = 0;
	uint8_t token_in[16], token_out[16];
	void *in = NULL, *buf;
	__u32 count;
	int rc;

	if (fd < 0 || !(buf = malloc(COUNT_CHUNK * (key_len + value_len))))
		return 0;
	do {
		count = COUNT_CHUNK;
		rc = bpf_map_lookup_batch(fd, in, token_out, buf,
					  (uint8_t *)buf + COUNT_CHUNK * key_len, &count, NULL);
		if (rc != 0 && errno != ENOENT)
			break; /* ENOSPC: a bucket larger than a chunk; the count is a floor */
		n += count;
		memcpy(token_in, token_out, sizeof(token_in));
		in = token_in;
	} while (rc == 0);
	free(buf);
	return n;
}

static void table(struct km_prom *p, const char *name, uint64_t entries, uint64_t capacity)
{
	char labels[64];

	snprintf(labels, sizeof(labels), "table=\"%s\"", name);
	km_prom_sample(p, "kmesh_table_entries", labels, entries);
	km_prom_sample(p, "kmesh_table_capacity", labels, capacity);
}

/* Rows of the tables the map writer keeps no key set for: counted by the kernel (map_count.h),
 * or else by walking them. */
struct counted {
	int fd;
	size_t key_len, value_len;
};

static void row_counts(struct km_mw_metrics *m, const struct counted *c, uint64_t *counts,
		       size_t n)
{
	int fds[KM_MAP_COUNT_MAX];

	for (size_t i = 0; i < n && i < KM_MAP_COUNT_MAX; i++)
		fds[i] = c[i].fd;
	if (km_map_count_read(&m->counter, fds, counts, n) == 0) { /* -1 if not open */
		int all = 1;

		for (size_t i = 0; i < n; i++)
			all &= fds[i] < 0 || counts[i] != KM_MAP_COUNT_UNKNOWN;
		if (all)
			return;
	}
	for (size_t i = 0; i < n; i++)
		counts[i] = count_entries(c[i].fd, c[i].key_len, c[i].value_len);
}

static void tables(struct km_mw_metrics *m, struct km_prom *p, const struct km_tables *t)
{
	const struct km_table_sizes *z = &t->sizes;
#define ROW(fd, k, v) { fd, sizeof(struct k), sizeof(struct v) }
	const struct counted c[] = {
		ROW(t->fd_manage, km_manage_key, km_manage_value),
		ROW(t->fd_frontend, km_frontend_key, km_frontend_value),
		ROW(t->fd_port_override, km_port_override_key, km_port_override_value),
		ROW(t->fd_authz_ident, km_authz_ident_key, km_authz_ident_value),
		ROW(t->fd_authz_list, km_authz_list_key, km_authz_list_value),
	};
#undef ROW
	uint64_t n[5];

	row_counts(m, c, n, 5);
	km_prom_family(p, "kmesh_table_entries", "gauge", "rows in a BPF table");
	km_prom_family(p, "kmesh_table_capacity", "gauge", "rows a BPF table can hold");
	table(p, "manage", n[0], z->manage);
	table(p, "frontend", n[1], z->frontend);
	table(p, "service", t->present_service.count, z->service);
	table(p, "endpoint", t->present_endpoint.count, z->endpoint);
	table(p, "backend", t->present_backend.count, z->backend);
	table(p, "port_override", n[2], z->port_override);
	table(p, "authz_ident", n[3], z->authz_idents);
	table(p, "authz_list", n[4], z->authz_rows);
}

#define gauge(p, name, help, v) km_prom_metric(p, name, "gauge", help, v)
#define counter(p, name, help, v) km_prom_metric(p, name, "counter", help, v)

static void requests(struct km_prom *p, const struct km_mw_requests *rq)
{
	km_prom_family(p, "kmesh_ipc_requests_total", "counter",
		       "requests to the map writer by the asker's role, the request and the result");
	for (size_t r = 0; r < KM_MW_ROLES; r++)
		for (size_t k = 0; k < KM_MW_KINDS; k++)
			for (size_t c = 0; c < KM_MW_CODES; c++) {
				char labels[160];

				if (!rq->counts[r][k][c])
					continue;
				snprintf(labels, sizeof(labels), "role=\"%s\",request=\"%s\",result=\"%s\"",
					 km_mw_role_label(r), km_mw_kind_label(k), km_mw_code_label(c));
				km_prom_sample(p, "kmesh_ipc_requests_total", labels, rq->counts[r][k][c]);
			}
}

/* The socket server's bounds at work (ipc/server.h). */
static void ipc_server(struct km_prom *p, const struct km_ipc_server *srv)
{
	const struct km_ipc_server_stats *st = &srv->stats;

	gauge(p, "kmesh_ipc_connections", "connections open to the map writer's socket",
	      srv->n_sessions);
	km_prom_family(p, "kmesh_ipc_connections_refused_total", "counter",
		       "connections refused at accept by a connection limit");
	km_prom_sample(p, "kmesh_ipc_connections_refused_total", "limit=\"per_uid\"",
		       st->refused_per_uid);
	km_prom_sample(p, "kmesh_ipc_connections_refused_total", "limit=\"no_role\"",
		       st->refused_strangers);
	km_prom_sample(p, "kmesh_ipc_connections_refused_total", "limit=\"total\"",
		       st->refused_total);
	counter(p, "kmesh_ipc_accept_errors_total", "accept() failures (e.g. out of descriptors)",
		st->accept_errors);
	counter(p, "kmesh_ipc_hello_timeouts_total", "connections closed for sending no hello",
		st->hello_timeouts);
	km_prom_family(p, "kmesh_ipc_peers_cut_total", "counter",
		       "connections cut off for not reading their replies");
	km_prom_sample(p, "kmesh_ipc_peers_cut_total", "reason=\"slow_reader\"", st->slow_readers);
	km_prom_sample(p, "kmesh_ipc_peers_cut_total", "reason=\"queue_full\"",
		       st->queue_overflows);
}

/* connect() calls the programs refused, per reason (km_refused: per-CPU counters, summed). */
static void refused(struct km_prom *p, int fd)
{
	static const char *const reasons[KM_REFUSED_REASONS] = { "no_endpoint", "waypoint" };
	int ncpu = libbpf_num_possible_cpus();
	uint64_t per_cpu[512];

	if (fd < 0 || ncpu <= 0 || ncpu > (int)(sizeof(per_cpu) / sizeof(per_cpu[0])))
		return;
	km_prom_family(p, "kmesh_connections_refused_total", "counter",
		       "connect() calls refused with ECONNREFUSED: a STRICT service with no endpoint in "
		       "reach (no_endpoint), a waypoint that cannot be reached (waypoint)");
	for (uint32_t r = 0; r < KM_REFUSED_REASONS; r++) {
		uint64_t sum = 0;
		char labels[64];

		if (bpf_map_lookup_elem(fd, &r, per_cpu) == 0)
			for (int c = 0; c < ncpu; c++)
				sum += per_cpu[c];
		snprintf(labels, sizeof(labels), "reason=\"%s\"", reasons[r]);
		km_prom_sample(p, "kmesh_connections_refused_total", labels, sum);
	}
}

static void render(struct km_mw_metrics *m, struct km_prom *p)
{
	struct km_mw_requests *rq = m->rq;
	const struct km_tables *t = rq->tables;
	uint64_t lost_conn, lost_log;

	/* a name of its own: the page joins the files, and a family may appear only once */
	km_prom_family(p, "kmesh_map_writer_build_info", "gauge", "the map writer's build");
	km_prom_printf(p, "kmesh_map_writer_build_info{version=\"%s\"} 1\n", km_version());
	tables(m, p, t);
	counter(p, "kmesh_table_rows_applied_total", "table operations applied", t->ops_applied);
	counter(p, "kmesh_table_rows_refused_total", "table operations refused", t->ops_failed);
	counter(p, "kmesh_table_full_total", "rows refused because their table was full",
		t->table_full);
	if (rq->dumps) {
		counter(p, "kmesh_table_dump_pages_total",
			"pages of table dumps read (off the loop, one at a time)", rq->dumps->pages);
		counter(p, "kmesh_table_dump_rows_total", "rows those pages held", rq->dumps->rows);
		km_prom_printf(p, "# HELP kmesh_table_dump_seconds_total time spent reading and "
				  "packing them\n# TYPE kmesh_table_dump_seconds_total counter\n"
				  "kmesh_table_dump_seconds_total %.6f\n",
			       (double)rq->dumps->busy_us / 1e6);
		gauge(p, "kmesh_table_dumps_waiting", "dumps waiting for the one being read",
		      rq->dumps->waiting);
		counter(p, "kmesh_table_dump_failures_total",
			"pages that could not be read (a bad cursor, out of memory, stopping)",
			rq->dumps->failed);
	}
	refused(p, rq->dp->fd_refused);
	counter(p, "kmesh_table_rows_swept_total", "stale rows removed after an agent's resync",
		t->rows_swept);
	requests(p, rq);
	if (m->server)
		ipc_server(p, m->server);
	if (m->pending) {
		counter(p, "kmesh_cni_pending_enrolled_total",
			"pods enrolled after starting while the map writer was unavailable (fail-open)",
			m->pending->enrolled);
		counter(p, "kmesh_cni_pending_dropped_total",
			"pending enrollments dropped: the pod was gone, or the request invalid",
			m->pending->dropped);
		gauge(p, "kmesh_cni_pending", "pending enrollments left for a later pass",
		      m->pending->waiting);
	}
	km_mw_events_lost(rq->events, &lost_conn, &lost_log);
	counter(p, "kmesh_conn_reports_total", "connection reports read from the programs",
		rq->events->conn_reports);
	counter(p, "kmesh_conn_dials_total",
		"original destinations reported at connect(), joined to the connections' opens",
		rq->events->dials);
	counter(p, "kmesh_conn_dials_evicted_total",
		"original destinations forgotten before their open was read (bounded cache)",
		rq->events->dials_pending.evicted);
	counter(p, "kmesh_conn_reports_lost_total",
		"connection reports lost (ring buffer full, or a subscriber too slow)", lost_conn);
	counter(p, "kmesh_bpf_log_lines_lost_total", "BPF log lines lost (ring buffer full)",
		lost_log);
	gauge(p, "kmesh_conn_report_subscribers", "sessions receiving connection reports",
	      km_mw_events_subscribers(rq->events));
	counter(p, "kmesh_conn_progress_passes_total",
		"passes over enrolled pods' open connections (--conn-report-interval)",
		rq->progress->passes);
	counter(p, "kmesh_conn_progress_reports_total",
		"open connections' byte counters reported between their open and close",
		rq->progress->reported);
	counter(p, "kmesh_conn_progress_skipped_total",
		"open connections a pass left out (past its bound; reported at close)",
		rq->progress->skipped);
	counter(p, "kmesh_conn_progress_after_close_total",
		"a pass's reports of connections whose close was read meanwhile (not sent: the close "
		"counted them)",
		rq->events->progress_after_close);
	km_prom_family(p, "kmesh_bpf_program_attached", "gauge",
		       "1 while a program attached only on demand is on the connections' path "
		       "(sockops: waypoints, the tunnel, open reports; authz_ingress: pods without "
		       "sk_lookup)");
	km_prom_sample(p, "kmesh_bpf_program_attached", "program=\"sockops\"",
		       km_dataplane_attached(rq->dp, KM_HOOK_SOCKOPS));
	km_prom_sample(p, "kmesh_bpf_program_attached", "program=\"authz_ingress\"",
		       km_dataplane_attached(rq->dp, KM_HOOK_AUTHZ_INGRESS));
	gauge(p, "kmesh_monitoring_enabled", "1 while connections are reported",
	      !!(rq->dp->node.flags & KM_CFG_F_MONITORING));
	gauge(p, "kmesh_authz_enabled", "1 while authorization is enforced",
	      !(rq->dp->node.flags & KM_CFG_F_AUTHZ_OFF));
	gauge(p, "kmesh_authz_lookup_pods",
	      "enrolled pods whose connections are decided at the socket lookup (refused at once)",
	      km_authz_lookup_count(rq->lookup));
	counter(p, "kmesh_authz_lookup_attach_failures_total",
		"pods left to the cgroup_skb decision (denials time out) because the lookup program "
		"could not be attached to their namespace", rq->lookup->failed);
	counter(p, "kmesh_authz_denial_rows_collected_total",
		"denial counters of workloads gone, removed to keep km_authz_denials in bound",
		rq->tables->denials_collected);
	counter(p, "kmesh_authz_rechecks_total", "passes over open connections after policy changes",
		rq->recheck->passes);
	counter(p, "kmesh_authz_rechecks_closed_total",
		"open connections closed because a policy change denies them", rq->recheck->closed);
	gauge(p, "kmesh_ipsec_dataplane_enabled", "1 while the IPsec programs are attached",
	      (uint64_t)rq->ipsec_tc->enabled);
	gauge(p, "kmesh_ipsec_interfaces", "interfaces with the IPsec decrypt program",
	      rq->ipsec_tc->n_nics);
	counter(p, "kmesh_ipsec_attach_failures_total", "IPsec program attaches that failed",
		rq->ipsec_tc->failures);
}

void km_mw_metrics_write(struct km_mw_metrics *m)
{
	struct km_prom p;
	char err[256], *cni = NULL;
	long n;

	if (!m->path[0])
		return;
	km_prom_init(&p);
	render(m, &p);
	km_process_metrics(&p, "map-writer");
	if (m->cni_path[0] && (n = km_read_file(m->cni_path, CNI_FILE_MAX, &cni, err, sizeof(err))) >= 0) {
		km_prom_append(&p, cni, (size_t)n);
		free(cni);
	}
	if (p.oom || km_atomic_write(m->path, p.buf, p.len, 0644, (uid_t)-1, (gid_t)-1,
				     KM_ATOMIC_NOSYNC, err, sizeof(err)) != 0) {
		if (!m->failures++)
			km_warn("cannot write the metrics file %s: %s", m->path,
				p.oom ? "out of memory" : err);
	} else {
		m->writes++;
	}
	km_prom_free(&p);
}

static void on_timer(uv_timer_t *t)
{
	km_mw_metrics_write(t->data);
}

int km_mw_metrics_start(struct km_mw_metrics *m, uv_loop_t *loop, const char *dir,
			const char *cni_file, unsigned interval_ms, struct km_mw_requests *rq)
{
	memset(m, 0, sizeof(*m));
	m->loop = loop;
	m->rq = rq;
	if (!dir || !*dir)
		return 0;
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) { /* metrics are not worth stopping for */
		km_warn("cannot make the metrics directory %s: %s; no metrics file", dir,
			strerror(errno));
		return 0;
	}
	snprintf(m->path, sizeof(m->path), "%s/map-writer.prom", dir);
	snprintf(m->cni_path, sizeof(m->cni_path), "%s", cni_file ? cni_file : "");
	{
		char err[256];

		if (km_map_count_open(&m->counter, err, sizeof(err)) != 0)
			km_info("%s; table fill gauges walk the rows instead", err);
	}
	uv_timer_init(loop, &m->timer);
	m->timer.data = m;
	km_mw_metrics_write(m);
	uv_timer_start(&m->timer, on_timer, interval_ms, interval_ms);
	return 0;
}

void km_mw_metrics_stop(struct km_mw_metrics *m)
{
	if (m->path[0] && !uv_is_closing((uv_handle_t *)&m->timer)) {
		uv_close((uv_handle_t *)&m->timer, NULL);
		unlink(m->path); /* a stopped process has no metrics to serve */
	}
	km_map_count_close(&m->counter);
}
