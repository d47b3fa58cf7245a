/* main.c — kmesh-xds-agent: turns Istio workload-API resources into table operations for the
 * map writer. Runs with no privileges. Its source is istiod over Delta xDS, or the embedded
 * configuration file (--config-file). Flags and wiring only. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "ipc/server.h"
#include "services/xds-agent/admin.h"
#include "services/xds-agent/telemetry/agent_metrics.h"
#include "services/xds-agent/ads/ads_client.h"
#include "services/xds-agent/sources/file_source.h"
#include "services/xds-agent/telemetry/metrics_http.h"
#include "services/xds-agent/telemetry/telemetry.h"
#include "services/xds-agent/model/model.h"
#include "services/xds-agent/dns/dns_server.h"
#include "services/xds-agent/dns/hostname_resolver.h"
#include "services/xds-agent/core/oplist.h"
#include "services/xds-agent/transport/resync.h"
#include "services/xds-agent/transport/writer_link.h"
#include "shared/addr.h"
#include "shared/fd_limit.h"
#include "shared/log.h"
#include "services/xds-agent/authz/authz_compile.h"
#include "shared/options.h"
#include "shared/signals.h"
#include "shared/daemon/service_manager.h"

/* after a refusal, the whole model is written again: first after --rewrite-after-refusal-ms, then
 * twice as long each time it is refused again, up to this */
#define REWRITE_WAIT_MAX_MS (300u * 1000u)

struct agent {
	uv_loop_t *loop;
	struct km_oplist ops;
	struct km_model model;
	struct km_file_source file;
	struct km_ads_client ads;
	struct km_policy_store policies;
	struct km_authz authz;
	int use_xds;
	struct km_writer_link link;
	struct km_ipc_server admin;
	struct km_tunnel_notices notices; /* the tunnel told of the policies' and workloads' changes */
	struct km_agent_state state;
	struct km_latency update_latency; /* xDS response received -> its ops applied */
	struct {
		uint64_t ops_end; /* the response's ops are done when link.ops_done reaches this */
		uint64_t recv_us;
	} pending[1024];
	size_t pending_head, pending_n;
	uint64_t ops_seen; /* link.ops_queued as of the last response */
	char source[512];
	int sweep_pending; /* a Sync BEGIN was sent; END follows once the whole state is known */
	struct km_signals signals;
	struct km_resync resync;
	struct km_telemetry telemetry;
	struct km_authz_metrics azm; /* the policies' decision counters, for /metrics */
	uv_timer_t expire_timer; /* series of workloads that are gone, removed every 30 s */
	struct km_metrics_http http;
	int http_on;
	const char *metrics_dir;
	struct km_service_manager sm;
	struct km_dns_resolver dns_resolver;
	struct km_dns_server dns;
	struct km_hostname_resolver hostnames;
};

/* Hand whatever the model emitted to the map writer (or drop it: a reconnect replays all). */
static void submit(struct agent *a)
{
	if (a->ops.oom) {
		km_error("out of memory building table operations; a full resync follows");
		km_oplist_clear(&a->ops);
		a->ops.oom = 0;
		km_resync_refused(&a->resync);
		return;
	}
	km_writer_link_submit(&a->link, &a->ops);
	km_oplist_clear(&a->ops);
}

static void replay(struct agent *a)
{
	km_oplist_clear(&a->ops);
	km_model_replay(&a->model);
	km_info("sending the whole model to the map writer: %zu ops", a->ops.n);
	submit(a);
}

/* The model holds the whole configuration: the file was read, or istiod's first Address
 * response has been applied. Before that, rows in the tables may be ones it is about to send. */
static int state_complete(const struct agent *a)
{
	return !a->use_xds || a->ads.address.responses > 0;
}

/* Once the whole state has been written since the Sync BEGIN, rows not written are stale. */
static void end_sweep_if_complete(struct agent *a)
{
	if (!a->sweep_pending || !state_complete(a) || !km_writer_link_ready(&a->link))
		return;
	a->sweep_pending = 0;
	km_writer_link_sync(&a->link, 1);
}

/* (Re)connected to the map writer: its tables may hold rows this agent no longer wants (removed
 * while either process was down, or written by an earlier agent). Mark, rewrite everything,
 * then sweep. */
/* Mark and sweep: write the whole model between Sync BEGIN and END, so rows it no longer holds
 * go (after a reconnect, or after a refusal that left some of its changes unwritten). */
static void sync_all(struct agent *a)
{
	km_writer_link_sync(&a->link, 0);
	a->sweep_pending = 1;
	km_resync_started(&a->resync);
	replay(a);
	end_sweep_if_complete(a);
}

static void on_subscribed(void *arg, const Kmesh__Ipc__Reply *r)
{
	(void)arg;
	if (r && r->code != KMESH__IPC__CODE__OK)
		km_warn("the map writer will not send connection reports (no metrics, no access log): "
			"%s: %s", km_msg_code_name(r->code), r->message);
}

/* The map writer's connection reports, for metrics and the access log: with open reports only
 * while the access log is on (they cost a program on every connection's path). Sent again when
 * the access log is switched. */
static void subscribe(struct agent *a)
{
	km_envelope req = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Subscribe sub = KMESH__IPC__SUBSCRIBE__INIT;

	sub.conn_events = 1;
	sub.opens = a->telemetry.access_log;
	req.body_case = KMESH__IPC__ENVELOPE__BODY_SUBSCRIBE;
	req.subscribe = &sub;
	if (km_writer_link_query(&a->link, &req, on_subscribed, a) != 0)
		km_warn("cannot subscribe to connection reports");
}

static void on_access_log(void *arg)
{
	struct agent *a = arg;

	if (km_writer_link_ready(&a->link))
		subscribe(a);
}

static void on_ready(void *arg)
{
	struct agent *a = arg;

	km_telemetry_forget_open(&a->telemetry, KM_CONN_FROM_KERNEL);
	/* a map writer with km_authz_index gets the candidate index with the replay's lists */
	a->authz.index_min =
		a->link.features & (1u << KMESH__IPC__FEATURE__FEATURE_AUTHZ_INDEX) ? KM_AUTHZ_INDEX_MIN : 0;
	a->state.last_synced_unix_us = 0; /* a new map writer: ready once the replay is in */
	subscribe(a);
	sync_all(a);
}

static void on_conn_events(void *arg, const Kmesh__Ipc__ConnEvents *events)
{
	struct agent *a = arg;

	km_telemetry_events(&a->telemetry, events, KM_CONN_FROM_KERNEL);
}

static char *render_metrics(void *arg, size_t *len)
{
	struct agent *a = arg;

	/* asked for now, shown from the next scrape: the page is not held up by the map writer */
	km_authz_metrics_refresh(&a->azm, km_now_us());
	return km_agent_metrics(&a->state, &a->telemetry, a->metrics_dir, len);
}

/* Ready: the whole configuration is held and written to the tables. */
static int metrics_ready(void *arg)
{
	struct agent *a = arg;

	return km_writer_link_ready(&a->link) && a->state.last_synced_unix_us != 0;
}

/* Every op sent is answered. Only once the whole configuration was among them (istiod's first
 * Address response applied, or the file read) is this the sync /ready and kmeshctl ready wait
 * for: the reply to the Sync BEGIN sent on connecting comes before any of istiod's. */
static void on_synced(void *arg)
{
	struct agent *a = arg;

	if (!state_complete(a))
		return;
	km_resync_synced(&a->resync);
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		a->state.last_synced_unix_us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	}
	km_debug("in sync with the map writer (%llu ops applied so far)",
		 (unsigned long long)a->link.ops_acked);
	km_sm_status("ready: the configuration of the source is in the map writer's tables");
}

/* Ops handed to the link and not yet answered, beyond which istiod's responses wait. */
#define BACKLOG_BATCHES 6

static int writer_backlogged(void *arg)
{
	struct agent *a = arg;

	return km_writer_link_ready(&a->link) &&
	       a->link.ops_queued - a->link.ops_done > (uint64_t)a->link.batch_ops * BACKLOG_BATCHES;
}

/* A batch was answered: every response whose ops are all done has reached the tables. */
static void on_progress(void *arg)
{
	struct agent *a = arg;
	uint64_t now = km_now_us();

	if (a->use_xds && !writer_backlogged(a))
		km_ads_client_resume(&a->ads);

	while (a->pending_n && a->pending[a->pending_head].ops_end <= a->link.ops_done) {
		km_latency_add(&a->update_latency, now - a->pending[a->pending_head].recv_us);
		a->pending_head = (a->pending_head + 1) % 1024;
		a->pending_n--;
	}
}

static void on_rewrite_due(void *arg)
{
	struct agent *a = arg;

	if (km_writer_link_ready(&a->link)) /* else the next connection rewrites everything */
		sync_all(a);
}

static void on_refused(void *arg)
{
	struct agent *a = arg;

	/* Refused rows (and deletes that came with them) may be missing; write everything again,
	 * with a sweep, once the cause may have gone (e.g. rows removed, a table enlarged). */
	km_resync_refused(&a->resync);
}

static void on_file_applied(struct km_file_source *fs, void *arg)
{
	(void)fs;
	submit(arg);
}

static void on_injected(void *arg)
{
	struct agent *a = arg;

	submit(a);
	end_sweep_if_complete(a);
}

/* The model's op list reached its chunk size during a large update: send what is there. */
static void on_ops_chunk(struct km_oplist *l, void *arg)
{
	(void)l;
	submit(arg);
}

static void on_xds_applied(void *arg)
{
	struct agent *a = arg;

	submit(a);
	end_sweep_if_complete(a);
	/* measured from when the response was complete, so decoding counts too; chunks sent while
	 * the response was being applied count towards it */
	if (a->link.ops_queued > a->ops_seen && a->pending_n < 1024) {
		size_t tail = (a->pending_head + a->pending_n) % 1024;

		a->pending[tail].ops_end = a->link.ops_queued;
		a->pending[tail].recv_us = a->ads.last_response_us;
		a->pending_n++;
	}
	a->ops_seen = a->link.ops_queued;
}


static void on_shutdown(void *arg, int signum)
{
	struct agent *a = arg;

	(void)signum;
	km_sm_stopping(&a->sm);
	if (a->use_xds)
		km_ads_client_stop(&a->ads);
	else
		km_file_source_stop(&a->file);
	km_writer_link_stop(&a->link);
	km_dns_server_stop(&a->dns);
	km_hostname_resolver_stop(&a->hostnames);
	if (a->http_on)
		km_metrics_http_stop(&a->http);
	km_resync_close(&a->resync);
	uv_close((uv_handle_t *)&a->expire_timer, NULL);
	km_tunnel_notices_stop(&a->notices);
	km_ipc_server_stop(&a->admin, NULL);
	km_signals_close(&a->signals);
}

static void on_expire(uv_timer_t *t)
{
	struct agent *a = t->data;
	size_t n = km_telemetry_expire(&a->telemetry, km_now_us() / 1000000u, KM_TELEMETRY_GONE_TTL_S);

	if (n)
		km_debug("metrics: %zu series of workloads gone for %d s removed", n,
			 KM_TELEMETRY_GONE_TTL_S);
}

/* Every row the model has made so far is in the map writer's tables: no response being applied,
 * nothing waiting to be handed on, every op answered. */
static int rows_written(void *arg)
{
	struct agent *a = arg;

	return !a->ads.job.active && !a->ads.queue_head && a->ops.n == 0 &&
	       a->link.ops_queued == a->link.ops_done;
}

/* The DNS proxy was asked for a service this node does not hold: ask istiod for it (on demand). */
static int dns_demand(void *arg, const char *key)
{
	return km_ads_client_demand(arg, key) >= 0;
}

int main(int argc, char **argv)
{
	static struct agent a;
	const char *config = NULL, *socket_path = "/run/kmesh/map-writer.sock", *level = NULL;
	const char *admin_socket = "/run/kmesh/xds-agent/admin.sock";
	const char *xds_address = "istiod.istio-system.svc:15012";
	const char *ca_file = "/var/run/secrets/istio/root-cert.pem";
	const char *server_name = "istiod.istio-system.svc";
	const char *token_file = "/var/run/secrets/tokens/istio-token";
	struct km_ads_node node = { .instance_ip = "127.0.0.1", .pod_name = "kmesh",
				    .pod_namespace = "kmesh-system", .cluster_id = "Kubernetes",
				    .mesh_id = "cluster.local" };
	int insecure = 0;
	uint64_t max_config = 64u << 20, batch_ops = 4096, max_message = 64u << 20;
	uint64_t max_queued = KM_ADS_MAX_QUEUED_DEFAULT;
	uint64_t max_initial = KM_ADS_MAX_INITIAL_DEFAULT;
	uint64_t handshake_s = 10;
	int on_demand = 0;
	uint64_t on_demand_max = KM_DEMAND_MAX_DEFAULT;
	const char *on_demand_file = "/run/kmesh/xds-agent/on-demand.keys";
	uint64_t on_demand_refresh = 30, dns_demand_wait_ms = 100;
	uint64_t keepalive_s = 30, waypoint_data_port = 15019, rewrite_after_ms = 5000;
	const char *p2c = "none";
	const char *metrics_address = "0.0.0.0:15020", *metrics_dir = "/run/kmesh/metrics";
	const char *dns_address = "", *dns_upstream = NULL, *dns_domain = "cluster.local";
	const char *tunnel_address = "", *waypoint_protocol = "", *hbone_over_ipsec = "kernel";
	const char *hostname_server = NULL;
	uint64_t dns_ttl = 30, tunnel_uid = (uint64_t)(uid_t)-1;
	const char *access_log_format = "text", *plaintext_identity = "address";
	int access_log = 0;
	const struct km_option opts[] = {
		{ "xds-address", KM_OPT_STRING, &xds_address, "HOST:PORT", "istiod's xDS address",
		  "XDS_ADDRESS" },
		{ "xds-insecure", KM_OPT_BOOL, &insecure, NULL,
		  "plaintext HTTP/2 (istiod port 15010) instead of TLS", "KMESH_XDS_INSECURE" },
		{ "xds-ca-file", KM_OPT_STRING, &ca_file, "PATH", "Istio root CA (PEM) that signs istiod",
		  "KMESH_XDS_CA_FILE" },
		{ "xds-server-name", KM_OPT_STRING, &server_name, "NAME",
		  "TLS server name (SNI, and the name istiod's certificate must carry)",
		  "KMESH_XDS_SERVER_NAME" },
		{ "xds-token-file", KM_OPT_STRING, &token_file, "PATH",
		  "service-account token sent as 'authorization: Bearer', read for every connection "
		  "(empty: none)", "KMESH_XDS_TOKEN_FILE" },
		{ "xds-max-message", KM_OPT_UINT, &max_message, "BYTES",
		  "largest xDS response accepted (default 64 MiB: ~150k workloads in one push; the "
		  "agent holds a response's bytes while it applies it)",
		  "KMESH_XDS_MAX_MESSAGE", 1u << 20, 1u << 31 },
		{ "xds-max-queued", KM_OPT_UINT, &max_queued, "BYTES",
		  "responses received while one is applied are queued up to this many bytes; past "
		  "it, what waits is applied at once and nothing more is read meanwhile (default "
		  "64 MiB)", "KMESH_XDS_MAX_QUEUED", 1u << 20, 1u << 31 },
		{ "xds-max-initial-request", KM_OPT_UINT, &max_initial, "BYTES",
		  "largest first request per type on a new stream (istiod refuses requests over "
		  "4 MiB); past it, the versions held are not named: istiod sends its whole state "
		  "and what it does not name is removed", "KMESH_XDS_MAX_INITIAL_REQUEST", 1024,
		  1u << 30 },
		{ "xds-on-demand", KM_OPT_BOOL, &on_demand, NULL,
		  "ask istiod only for the workloads and services this node uses (kmeshctl demand, "
		  "and the DNS proxy's queries for service names), not the whole mesh; a connection "
		  "to a service not asked for yet is not balanced (docs/decisions.md)",
		  "KMESH_XDS_ON_DEMAND" },
		{ "xds-on-demand-max", KM_OPT_UINT, &on_demand_max, "KEYS",
		  "most Address keys demanded on demand (default 65536); past it a demand is refused "
		  "and counted", "KMESH_XDS_ON_DEMAND_MAX", 1, 1u << 24 },
		{ "xds-on-demand-file", KM_OPT_STRING, &on_demand_file, "PATH",
		  "where the demanded keys are kept, so a restarted agent asks for them again at once "
		  "(empty: not kept)", "KMESH_XDS_ON_DEMAND_FILE" },
		{ "dns-demand-wait-ms", KM_OPT_UINT, &dns_demand_wait_ms, "MS",
		  "on demand: a DNS answer that made the agent ask istiod for a service waits until "
		  "the service's rows are written, so the pod's first connection is balanced; at most "
		  "this long (default 100; 0: never waits)", "KMESH_DNS_DEMAND_WAIT_MS", 0, 5000 },
		{ "xds-on-demand-refresh", KM_OPT_UINT, &on_demand_refresh, "SECONDS",
		  "ask istiod for every demanded key again this often (default 30; 0: never): istiod "
		  "does not push a workload that joins a demanded service, so new endpoints reach the "
		  "node at the next refresh", "KMESH_XDS_ON_DEMAND_REFRESH", 0, 86400 },
		{ "xds-handshake-timeout", KM_OPT_UINT, &handshake_s, "SECONDS",
		  "bound on setting up a connection to istiod: TCP connect, TLS handshake, and until "
		  "istiod's HTTP/2 SETTINGS arrive; past it the agent logs the stage that stuck, "
		  "backs off and retries", "KMESH_XDS_HANDSHAKE_TIMEOUT", 1, 600 },
		{ "xds-keepalive", KM_OPT_UINT, &keepalive_s, "SECONDS",
		  "HTTP/2 ping interval (istiod refuses pings more often than every 15 s)",
		  "KMESH_XDS_KEEPALIVE", 15, 3600 },
		{ "instance-ip", KM_OPT_STRING, &node.instance_ip, "IP", "this agent's IP (node id)",
		  "INSTANCE_IP" },
		{ "pod-name", KM_OPT_STRING, &node.pod_name, "NAME", "this agent's pod name", "POD_NAME" },
		{ "pod-namespace", KM_OPT_STRING, &node.pod_namespace, "NS", "this agent's namespace",
		  "POD_NAMESPACE" },
		{ "node-name", KM_OPT_STRING, &node.node_name, "NAME",
		  "the Kubernetes node (locality-aware load balancing compares against it)",
		  "NODE_NAME" },
		{ "cluster-id", KM_OPT_STRING, &node.cluster_id, "ID", "cluster id (clusterid header)",
		  "CLUSTER_ID" },
		{ "mesh-id", KM_OPT_STRING, &node.mesh_id, "ID", "mesh id", "MESH_ID" },
		{ "network", KM_OPT_STRING, &node.network, "NAME", "this node's network",
		  "ISTIO_META_NETWORK" },
		{ "service-account", KM_OPT_STRING, &node.service_account, "NAME",
		  "this agent's service account (must match the token's)", "SERVICE_ACCOUNT" },
		{ "config-file", KM_OPT_STRING, &config, "PATH",
		  "instead of istiod: a JSON file of workload-API resources, watched for changes",
		  "KMESH_CONFIG_FILE" },
		{ "map-writer-socket", KM_OPT_STRING, &socket_path, "PATH",
		  "the map writer's Unix socket", "KMESH_MAP_WRITER_SOCKET" },
		{ "admin-socket", KM_OPT_STRING, &admin_socket, "PATH",
		  "this agent's admin socket (state dump, log level; root or this agent's uid)",
		  "KMESH_XDS_ADMIN_SOCKET" },
		{ "plaintext-identity", KM_OPT_STRING, &plaintext_identity, "address|none",
		  "what a plaintext connection's source is to the policies: the workload holding its "
		  "address (address: PeerAuthentication STRICT is met by pods of the mesh), or no one "
		  "(none: as ztunnel, only HBONE carries a principal, so STRICT denies all plaintext) "
		  "(default address)", "KMESH_PLAINTEXT_IDENTITY" },
		{ "tunnel-uid", KM_OPT_UINT, &tunnel_uid, "UID",
		  "the tunnel's uid: it may ask the admin socket for HBONE streams' authorization "
		  "(role tunnel; default: root alone)", "KMESH_TUNNEL_UID", 0, 0xfffffffe },
		{ "max-config-bytes", KM_OPT_UINT, &max_config, "BYTES",
		  "largest configuration file accepted", "KMESH_MAX_CONFIG_BYTES", 1024, 1u << 30 },
		{ "batch-ops", KM_OPT_UINT, &batch_ops, "N",
		  "table operations per message to the map writer", "KMESH_BATCH_OPS", 1, 65536 },
		{ "rewrite-after-refusal-ms", KM_OPT_UINT, &rewrite_after_ms, "MS",
		  "after the map writer refuses rows (a table full), write the whole model again this "
		  "much later; each rewrite refused again doubles the wait, up to 300 s",
		  "KMESH_REWRITE_AFTER_REFUSAL_MS", 10, 300000 },
		{ "p2c-services", KM_OPT_STRING, &p2c, "all|none|NS/HOST,...",
		  "services whose endpoints are picked by power of two choices on live connections "
		  "(the less loaded of two); others by weight at random (default none)",
		  "KMESH_P2C_SERVICES" },
		{ "waypoint-data-port", KM_OPT_UINT, &waypoint_data_port, "PORT",
		  "port dialled on waypoint pods, where they read the original-destination TLV",
		  "KMESH_WAYPOINT_DATA_PORT", 1, 65535 },
		{ "tunnel-address", KM_OPT_STRING, &tunnel_address, "IP",
		  "HBONE outbound: send connections to workloads reached over HBONE (tunnel_protocol "
		  "HBONE, on another node) to the tunnel's outbound listener at IP, port 15001 (the "
		  "map writer's --tunnel-address; empty: off, the default)", "KMESH_TUNNEL_ADDRESS" },
		{ "waypoint-protocol", KM_OPT_STRING, &waypoint_protocol, "hbone|tlv",
		  "how connections reach waypoints: hbone (mutual TLS and CONNECT to their 15008, as "
		  "ztunnel: any Istio waypoint; through the tunnel, so needs --tunnel-address) or tlv "
		  "(Kmesh's waypoint image, plaintext on --waypoint-data-port); default hbone with "
		  "--tunnel-address, else tlv", "KMESH_WAYPOINT_PROTOCOL" },
		{ "hbone-over-ipsec", KM_OPT_STRING, &hbone_over_ipsec, "kernel|hbone",
		  "with --tunnel-address, how a pod of a node this one exchanges IPsec with (a node of "
		  "this data plane) is reached when xDS says HBONE: kernel (the default: the kernel "
		  "path, which IPsec already protects; identities from addresses) or hbone (the tunnel "
		  "anyway: each pod's certificate, over IPsec). Without IPsec to a node, HBONE always",
		  "KMESH_HBONE_OVER_IPSEC" },
		{ "dns-address", KM_OPT_STRING, &dns_address, "IP:PORT",
		  "serve DNS (UDP and TCP) here: the mesh's service hostnames answered from the model, "
		  "the rest forwarded upstream; point the map writer's --dns-resolver/--dns-port at it "
		  "(empty: off)", "KMESH_DNS_ADDRESS" },
		{ "dns-upstream", KM_OPT_STRING, &dns_upstream, "IP[:PORT]",
		  "where other names are asked (default: the first nameserver of /etc/resolv.conf)",
		  "KMESH_DNS_UPSTREAM" },
		{ "dns-domain", KM_OPT_STRING, &dns_domain, "DOMAIN",
		  "the cluster domain, for the short names a pod's search list makes",
		  "KMESH_DNS_DOMAIN" },
		{ "hostname-dns-server", KM_OPT_STRING, &hostname_server, "IP[:PORT]",
		  "where workloads named by hostname (ServiceEntry resolution DNS) are resolved "
		  "(default: the system's resolver configuration)", "KMESH_HOSTNAME_DNS_SERVER" },
		{ "dns-ttl", KM_OPT_UINT, &dns_ttl, "SECONDS", "TTL of the proxy's own answers",
		  "KMESH_DNS_TTL", 0, 86400 },
		{ "metrics-address", KM_OPT_STRING, &metrics_address, "IP:PORT",
		  "serve /metrics (Prometheus) and /ready here (empty: no endpoint)",
		  "KMESH_METRICS_ADDRESS" },
		{ "metrics-dir", KM_OPT_STRING, &metrics_dir, "DIR",
		  "the other processes' metrics files (*.prom), served with this agent's",
		  "KMESH_METRICS_DIR" },
		{ "access-log", KM_OPT_FUNC, &access_log, "on|off",
		  "a line on stdout per connection opened and closed by an enrolled pod (default "
		  "off; kmeshctl accesslog switches it at run time)", "KMESH_ACCESS_LOG", 0, 0,
		  km_option_on_off },
		{ "access-log-format", KM_OPT_STRING, &access_log_format, "text|json",
		  "the access log's lines (default text)", "KMESH_ACCESS_LOG_FORMAT" },
		{ "log-level", KM_OPT_FUNC, &level, "LEVEL", "error, warn, info (default) or debug",
		  "KMESH_LOG_LEVEL", 0, 0, km_option_log_level },
		{ "log-format", KM_OPT_FUNC, &level, "FORMAT",
		  "text (default) or json: one JSON object per line (time, level, scope, msg)",
		  "KMESH_LOG_FORMAT", 0, 0, km_option_log_format },
		{ 0 },
	};
	char host[256];
	uint16_t port = 0;
	int rc;

	km_log_init("kmesh-xds-agent");
	rc = km_options_parse(opts, argc, argv, "[OPTIONS]",
			      "Turns Istio workload-API resources, from istiod over Delta xDS or from a "
			      "file, into load-balancing\ntable operations for kmesh-map-writer. Needs no "
			      "privileges.",
			      NULL);
	if (rc)
		return rc > 0 ? 0 : 2;
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	km_oplist_init(&a.ops);
	a.ops.drain = on_ops_chunk;
	a.ops.drain_arg = &a;
	a.ops.drain_at = (size_t)batch_ops;
	km_model_init(&a.model, &a.ops, NULL);
	km_policy_store_init(&a.policies);
	km_authz_init(&a.authz, &a.ops, node.network);
	if (strcmp(plaintext_identity, "address") && strcmp(plaintext_identity, "none")) {
		fprintf(stderr, "%s: --plaintext-identity '%s' is not address or none\n", argv[0],
			plaintext_identity);
		return 2;
	}
	a.authz.plaintext_identity = !strcmp(plaintext_identity, "address");
	km_model_set_authz(&a.model, &a.authz);
	a.policies.authz = &a.authz;
	km_model_set_local_node(&a.model, node.node_name);
	km_model_set_waypoint_data_port(&a.model, (uint16_t)waypoint_data_port);
	if (*waypoint_protocol && strcmp(waypoint_protocol, "hbone") && strcmp(waypoint_protocol, "tlv")) {
		km_error("--waypoint-protocol '%s' is not hbone or tlv", waypoint_protocol);
		return 2;
	}
	if (!strcmp(waypoint_protocol, "hbone") && !*tunnel_address) {
		km_error("--waypoint-protocol hbone needs the tunnel: give --tunnel-address");
		return 2;
	}
	if (strcmp(hbone_over_ipsec, "kernel") && strcmp(hbone_over_ipsec, "hbone")) {
		km_error("--hbone-over-ipsec '%s' is not kernel or hbone", hbone_over_ipsec);
		return 2;
	}
	if (*tunnel_address) {
		struct km_addr ta;

		if (km_addr_parse(tunnel_address, &ta) != 0 || !km_addr_is_v4(&ta) ||
		    km_addr_is_unspecified(&ta)) {
			km_error("--tunnel-address '%s' is not an IPv4 address", tunnel_address);
			return 2;
		}
		km_model_set_tunnel(&a.model, &ta);
		km_model_set_waypoint_hbone(&a.model, strcmp(waypoint_protocol, "tlv") != 0);
		km_model_set_hbone_over_ipsec(&a.model, !strcmp(hbone_over_ipsec, "hbone"));
		km_info("HBONE outbound: workloads reached over HBONE%s go through the tunnel at %s:%d; "
			"pods of nodes this one exchanges IPsec with: %s",
			strcmp(waypoint_protocol, "tlv") ? ", and waypoints," : "", tunnel_address,
			KM_TUNNEL_OUTBOUND_PORT,
			strcmp(hbone_over_ipsec, "hbone") ? "the kernel path" : "the tunnel too");
	}
	if (km_model_set_p2c(&a.model, p2c) != 0) {
		fprintf(stderr, "%s: --p2c-services '%s' is not all, none or a list of "
			"namespace/hostname\n", argv[0], p2c);
		return 2;
	}
	if (km_access_log_format_parse(access_log_format, &a.telemetry.format) != 0) {
		fprintf(stderr, "%s: --access-log-format '%s' is not text or json\n", argv[0],
			access_log_format);
		return 2;
	}
	{
		enum km_access_log_format format = a.telemetry.format;

		if (km_telemetry_init(&a.telemetry, &a.model, stdout) != 0) {
			fprintf(stderr, "%s: out of memory\n", argv[0]);
			return 1;
		}
		a.telemetry.format = format;
		a.telemetry.access_log = access_log;
	}
	a.metrics_dir = metrics_dir;
	a.use_xds = config == NULL;
	if (a.use_xds && km_split_host_port(xds_address, host, sizeof(host), &port) != 0) {
		fprintf(stderr, "%s: --xds-address '%s' is not HOST:PORT\n", argv[0], xds_address);
		return 2;
	}
	if (on_demand && !a.use_xds) {
		fprintf(stderr, "%s: --xds-on-demand asks istiod for what the node uses; with "
			"--config-file the file is the whole state\n", argv[0]);
		return 2;
	}
	if (!a.use_xds) {
		if (km_file_source_load(&a.file, config, (size_t)max_config, &a.model) != 0)
			return 1;
		km_oplist_clear(&a.ops); /* the first connection replays the whole model */
	}

	a.loop = uv_default_loop();
	km_resync_init(&a.resync, a.loop, rewrite_after_ms, REWRITE_WAIT_MAX_MS, on_rewrite_due, &a);
	{
		const struct km_writer_link_cbs cbs = { on_ready, on_synced, on_refused, on_progress,
							on_conn_events };

		if (km_signals_init(a.loop, &a.signals, on_shutdown, &a) != 0 ||
		    km_writer_link_start(&a.link, a.loop, socket_path, (size_t)batch_ops, &cbs, &a) != 0)
			return 1;
	}
	a.state.model = &a.model;
	a.state.policies = &a.policies;
	a.state.authz = &a.authz;
	a.state.link = &a.link;
	a.state.resync = &a.resync;
	a.state.ads = a.use_xds ? &a.ads : NULL;
	snprintf(a.source, sizeof(a.source), "%s %s", a.use_xds ? "istiod" : "file",
		 a.use_xds ? xds_address : config);
	a.state.source = a.source;
	a.state.update_latency = &a.update_latency;
	a.state.on_injected = on_injected;
	a.state.arg = &a;
	a.state.telemetry = &a.telemetry;
	a.state.on_access_log = on_access_log;
	a.state.tunnel_uid = (uid_t)tunnel_uid;
	km_authz_metrics_init(&a.azm, &a.link, &a.authz, &a.model);
	a.state.authz_metrics = &a.azm;
	{
		char err[512];

		if (km_hostname_resolver_start(&a.hostnames, a.loop, &a.model, hostname_server,
					       on_injected, &a, err, sizeof(err)) != 0) {
			km_error("%s", err);
			return 1;
		}
		a.state.hostnames = &a.hostnames;
	}
	if (*dns_address) {
		char err[512];
		size_t dl = strlen(dns_domain);

		a.dns_resolver.model = &a.model;
		a.dns_resolver.ttl = (uint32_t)dns_ttl;
		while (dl && dns_domain[dl - 1] == '.')
			dl--;
		if (!dl || dl >= sizeof(a.dns_resolver.domain)) {
			km_error("--dns-domain '%s' is not a domain", dns_domain);
			return 2;
		}
		for (size_t i = 0; i < dl; i++)
			a.dns_resolver.domain[i] = (char)tolower((unsigned char)dns_domain[i]);
		km_model_watch_services(&a.model, km_dns_names_service, &a.dns_resolver.names);
		if (km_dns_server_start(&a.dns, a.loop, &a.dns_resolver, dns_address, dns_upstream, err,
					sizeof(err)) != 0) {
			km_error("%s", err);
			return 1;
		}
		a.state.dns = &a.dns;
		km_info("serving DNS on %s (UDP and TCP), the rest to the upstream resolver",
			dns_address);
	}
	if (*metrics_address) {
		char err[512];

		if (km_metrics_http_start(&a.http, a.loop, metrics_address, render_metrics,
					  metrics_ready, &a, err, sizeof(err)) != 0) {
			km_error("%s", err);
			return 1;
		}
		a.http_on = 1;
		km_info("serving metrics on %s (port %u)", metrics_address, a.http.port);
	}
	{
		/* 0660, group the agent's own: a root without CAP_DAC_OVERRIDE in that group (kmeshctl
		 * in the chart's map-writer container) can open it; the peer check still admits only
		 * root and this uid */
		const struct km_ipc_server_config acfg = { .path = admin_socket, .mode = 0660,
							   .gid = (gid_t)-1, .max_frame = 64u << 20,
							   .name = "kmesh-xds-agent" };
		const struct km_ipc_server_ops aops = { km_agent_admin_allowed, km_agent_admin_request,
							NULL, km_agent_admin_closed };

		km_fd_limit_raise(2048); /* admin peers (capped by the server), HTTP clients, files */
		if (km_ipc_server_start(&a.admin, a.loop, &acfg, &aops, &a.state) != 0)
			return 1;
		if (km_tunnel_notices_start(&a.notices, a.loop, &a.admin, &a.model, &a.policies) == 0)
			a.state.notices = &a.notices;
		else /* the tunnel polls then */
			km_warn("the tunnel cannot be told of policy changes: it will poll for them");
	}
	a.expire_timer.data = &a;
	if (uv_timer_init(a.loop, &a.expire_timer) != 0 ||
	    uv_timer_start(&a.expire_timer, on_expire, KM_TELEMETRY_EXPIRE_EVERY_S * 1000u,
			   KM_TELEMETRY_EXPIRE_EVERY_S * 1000u) != 0)
		return 1;
	/* up: its admin socket answers (`kmeshctl ready --live`); being in sync with the map
	 * writer (`kmeshctl ready`) is said in STATUS= as it comes and goes */
	km_sm_ready(&a.sm, a.loop, "started; waiting for the map writer and the first configuration");
	if (a.use_xds) {
		struct km_grpc_stream_config g = {
			.conn = { .host = host, .port = port, .insecure = insecure, .ca_file = ca_file,
				  .server_name = server_name, .connect_timeout_ms = 5000 },
			.authority = xds_address,
			.path = "/envoy.service.discovery.v3.AggregatedDiscoveryService/"
				"DeltaAggregatedResources",
			.token_file = token_file && *token_file ? token_file : NULL,
			.cluster_id = node.cluster_id,
			.max_message = (size_t)max_message,
			.window = 16u << 20,
			.ping_interval_ms = (unsigned)keepalive_s * 1000,
			.ping_timeout_ms = 10000,
			.setup_timeout_ms = (unsigned)handshake_s * 1000,
		};

		km_ads_client_start(&a.ads, a.loop, &g, &node, &a.model, &a.policies, on_xds_applied, &a);
		a.ads.backlogged = writer_backlogged;
		a.ads.max_initial = (size_t)max_initial; /* read at the stream's opening */
		a.ads.max_queued = (size_t)max_queued;
		if (on_demand) {
			km_ads_client_set_on_demand(&a.ads, (size_t)on_demand_max, on_demand_file,
						    (unsigned)on_demand_refresh);
			a.dns_resolver.on_unknown_service = dns_demand;
			a.dns_resolver.unknown_arg = &a.ads;
			if (a.dns.started)
				km_dns_server_wait_for_demand(&a.dns, (uint32_t)dns_demand_wait_ms,
							      rows_written, &a);
		}
	} else if (km_file_source_watch(&a.file, a.loop, on_file_applied, &a) != 0) {
		return 1;
	}
	uv_run(a.loop, UV_RUN_DEFAULT);
	km_info("stopped");
	km_telemetry_free(&a.telemetry);
	km_authz_metrics_free(&a.azm);
	km_model_watch_services(&a.model, NULL, NULL);
	km_dns_resolver_free(&a.dns_resolver);
	km_model_free(&a.model);
	km_policy_store_free(&a.policies);
	km_authz_free(&a.authz);
	km_oplist_free(&a.ops);
	uv_loop_close(a.loop);
	return 0;
}
