/* main.c — kmesh-tunnel: the node's workload certificates from istiod's CA, for the pods the CNI
 * agent enrolls (and, as issue 48 goes on, HBONE on their port 15008). Runs with no capability:
 * flags and wiring here; pods.c, certs.c, admin.c, metrics.c do the work. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "services/tunnel/tunnel.h"
#include "shared/addr.h"
#include "shared/daemon/service_manager.h"
#include "shared/fd_limit.h"
#include "shared/log.h"
#include "shared/options.h"
#include "shared/signals.h"

#define TICK_MS 1000

struct tunnel_main {
	struct km_tunnel t;
	struct km_signals signals;
	struct km_service_manager sm;
	uv_timer_t tick;
};

static void on_identity(void *arg, const char *identity, int delta)
{
	struct km_tunnel *t = arg;

	if (delta > 0)
		km_certs_want(&t->certs, identity);
	else
		km_certs_drop(&t->certs, identity);
}

static void on_pod(void *arg, const struct km_tunnel_pod *pod, int added)
{
	struct km_tunnel *t = arg;

	if (t->inbound_on)
		km_inbound_pod(&t->inbound, pod, added);
}

static void on_tick(uv_timer_t *h)
{
	struct tunnel_main *m = h->data;

	km_tunnel_metrics_write(&m->t);
}

static void on_shutdown(void *arg, int signum)
{
	struct tunnel_main *m = arg;

	(void)signum;
	km_sm_stopping(&m->sm);
	if (m->t.inbound_on)
		km_inbound_stop(&m->t.inbound);
	if (m->t.outbound_on)
		km_outbound_stop(&m->t.outbound);
	km_certs_stop(&m->t.certs, NULL); /* every key wiped now */
	uv_close((uv_handle_t *)&m->tick, NULL);
	km_ipc_server_stop(&m->t.srv, NULL);
	km_signals_close(&m->signals);
}

/* --hbone-app-source: caller (1) or pod (0). */
static int app_source(const char *arg, void *target, char *err, size_t errlen)
{
	if (strcmp(arg, "caller") && strcmp(arg, "pod")) {
		snprintf(err, errlen, "'%s' is not caller or pod", arg);
		return -1;
	}
	*(int *)target = !strcmp(arg, "caller");
	return 0;
}

int main(int argc, char **argv)
{
	static struct tunnel_main m;
	const char *socket_path = "/run/kmesh/tunnel/tunnel.sock", *level = NULL;
	const char *ca_address = "istiod.istio-system.svc:15012";
	const char *ca_root = "/var/run/secrets/istio/root-cert.pem";
	const char *server_name = "istiod.istio-system.svc";
	const char *token_file = "/var/run/secrets/tokens/istio-token";
	const char *cluster_id = "Kubernetes", *trust_domain = "cluster.local";
	const char *metrics_dir = "/run/kmesh/metrics";
	const char *mw_socket = "/run/kmesh/map-writer.sock";
	const char *xds_socket = "/run/kmesh/xds-agent/admin.sock";
	int inbound = 0;
	const char *outbound_address = "";
	uint64_t outbound_connect_ms = KM_OUTBOUND_CONNECT_MS, outbound_idle_ms = KM_OUTBOUND_IDLE_MS;
	uint64_t outbound_cert_wait_ms = KM_OUTBOUND_CERT_WAIT_MS;
	uint64_t handshake_ms = KM_INBOUND_HANDSHAKE_MS, ping_ms = KM_INBOUND_PING_MS;
	uint64_t report_s = KM_INBOUND_REPORT_MS / 1000;
	uint64_t ttl_s = 86400, timeout_s = 30, inflight = 8;
	int impersonate = 1;
	int app_from_caller = 1;
	uint64_t decision_cache = KM_AUTHZ_CACHE_MAX;
	const struct km_option opts[] = {
		{ "socket", KM_OPT_STRING, &socket_path, "PATH",
		  "this process's socket: the CNI agent names the node's enrolled pods here (root "
		  "only), kmeshctl reads the state (root or this uid)", "KMESH_TUNNEL_SOCKET" },
		{ "ca-address", KM_OPT_STRING, &ca_address, "HOST:PORT",
		  "istiod's CA (gRPC IstioCertificateService over TLS)", "CA_ADDRESS" },
		{ "ca-root-file", KM_OPT_STRING, &ca_root, "PATH",
		  "Istio root CA (PEM) that signs istiod's serving certificate", "KMESH_CA_ROOT_FILE" },
		{ "ca-server-name", KM_OPT_STRING, &server_name, "NAME",
		  "TLS server name (SNI, and the name istiod's certificate must carry)",
		  "KMESH_CA_SERVER_NAME" },
		{ "ca-token-file", KM_OPT_STRING, &token_file, "PATH",
		  "service-account token of audience istio-ca, sent as 'authorization: Bearer', read "
		  "for every call", "KMESH_CA_TOKEN_FILE" },
		{ "cluster-id", KM_OPT_STRING, &cluster_id, "ID", "cluster id (clusterid header)",
		  "CLUSTER_ID" },
		{ "trust-domain", KM_OPT_STRING, &trust_domain, "DOMAIN",
		  "the mesh's trust domain: identities are spiffe://DOMAIN/ns/NS/sa/ACCOUNT",
		  "TRUST_DOMAIN" },
		{ "cert-ttl", KM_OPT_UINT, &ttl_s, "SECONDS",
		  "validity asked for each workload certificate (default 86400, ztunnel's; istiod "
		  "refuses more than its maximum); renewed at about half of it",
		  "KMESH_CERT_TTL", 10, 90u * 86400 },
		{ "ca-timeout", KM_OPT_UINT, &timeout_s, "SECONDS",
		  "one CreateCertificate call, at most (then tried again after a backoff)",
		  "KMESH_CA_TIMEOUT", 1, 600 },
		{ "ca-max-inflight", KM_OPT_UINT, &inflight, "N",
		  "CreateCertificate calls at once; others wait their turn", "KMESH_CA_MAX_INFLIGHT",
		  1, 256 },
		{ "impersonate", KM_OPT_FUNC, &impersonate, "on|off",
		  "ask for each pod's identity as a node proxy (ImpersonatedIdentity; istiod must list "
		  "this process's service account in CA_TRUSTED_NODE_ACCOUNTS); off: the token's own "
		  "identity only (default on)", "KMESH_CA_IMPERSONATE", 0, 0, km_option_on_off },
		{ "hbone-inbound", KM_OPT_FUNC, &inbound, "on|off",
		  "serve HBONE (mutual TLS, HTTP/2 CONNECT) on each enrolled pod's port 15008, with "
		  "sockets the map writer makes inside the pods (default off)", "KMESH_HBONE_INBOUND",
		  0, 0, km_option_on_off },
		{ "hbone-outbound-address", KM_OPT_STRING, &outbound_address, "IP",
		  "HBONE outbound: listen on IP:15001 for the connections the kernel sends here to "
		  "leave over HBONE (the map writer's --tunnel-address; this process must run in its "
		  "--tunnel-cgroup) (default: off)", "KMESH_TUNNEL_ADDRESS" },
		{ "hbone-outbound-connect-timeout-ms", KM_OPT_UINT, &outbound_connect_ms, "MS",
		  "HBONE outbound: a connection to a server (TCP and TLS) not made this long fails, "
		  "and its streams' applications are reset (default 10000)",
		  "KMESH_HBONE_OUTBOUND_CONNECT_TIMEOUT_MS", 100, 600000 },
		{ "hbone-outbound-idle-ms", KM_OPT_UINT, &outbound_idle_ms, "MS",
		  "HBONE outbound: a pooled connection without a stream this long is closed (default "
		  "60000)", "KMESH_HBONE_OUTBOUND_IDLE_MS", 100, 3600000 },
		{ "hbone-outbound-cert-wait-ms", KM_OPT_UINT, &outbound_cert_wait_ms, "MS",
		  "HBONE outbound: a pod that connects before its identity's certificate came from "
		  "the CA waits for it this long at most, then is reset (0: reset at once; default "
		  "5000)", "KMESH_HBONE_OUTBOUND_CERT_WAIT_MS", 0, 60000 },
		{ "hbone-handshake-timeout-ms", KM_OPT_UINT, &handshake_ms, "MS",
		  "an HBONE client that has not finished its TLS handshake this long after connecting "
		  "is cut off", "KMESH_HBONE_HANDSHAKE_TIMEOUT_MS", 100, 600000 },
		{ "conn-report-interval", KM_OPT_UINT, &report_s, "SECONDS",
		  "report the bytes of open HBONE streams to the xDS agent this often, so metrics "
		  "move while long streams live (0: at their end only; as the map writer's flag)",
		  "KMESH_CONN_REPORT_INTERVAL", 0, 3600 },
		{ "hbone-ping-ms", KM_OPT_UINT, &ping_ms, "MS",
		  "an HBONE client (or, outbound, a pooled server) silent this long is sent an "
		  "HTTP/2 PING, and cut off when it has not answered it in twice as long (ztunnel: "
		  "10 s)", "KMESH_HBONE_PING_MS", 100,
		  600000 },
		{ "hbone-app-source", KM_OPT_FUNC, &app_from_caller, "caller|pod",
		  "the source address an application sees on an HBONE stream's connection: caller "
		  "(the HBONE client's, as with ztunnel; the map writer makes the sockets transparent "
		  "and marked, and routes them inside the pod) or pod (127.0.0.6, as behind a "
		  "sidecar; IPv6: the pod's own address) (default caller)",
		  "KMESH_HBONE_APP_SOURCE", 0, 0, app_source },
		{ "hbone-decision-cache", KM_OPT_UINT, &decision_cache, "N",
		  "the xDS agent's decisions kept for reuse, per (principal, client address, "
		  "destination address and port), until it tells of a change of its policies or "
		  "workloads (0: the agent asked for every stream; default 4096)",
		  "KMESH_HBONE_DECISION_CACHE", 0, KM_AUTHZ_CACHE_LIMIT },
		{ "map-writer-socket", KM_OPT_STRING, &mw_socket, "PATH",
		  "the map writer's socket (role tunnel: sockets inside pods)",
		  "KMESH_MAP_WRITER_SOCKET" },
		{ "xds-socket", KM_OPT_STRING, &xds_socket, "PATH",
		  "the xDS agent's admin socket (role tunnel): each HBONE stream's authorization by "
		  "the client's principal (empty: none, every stream let through)",
		  "KMESH_XDS_SOCKET" },
		{ "metrics-dir", KM_OPT_STRING, &metrics_dir, "DIR",
		  "write this process's metrics to DIR/tunnel.prom, which the xDS agent serves "
		  "(empty: none)", "KMESH_METRICS_DIR" },
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

	km_log_init("kmesh-tunnel");
	rc = km_options_parse(opts, argc, argv, "[OPTIONS]",
			      "Holds the workload certificates of the pods enrolled on this node, from "
			      "istiod's CA (keys in\nmemory only). Needs no capability.",
			      NULL);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (km_split_host_port(ca_address, host, sizeof(host), &port) != 0) {
		fprintf(stderr, "%s: --ca-address '%s' is not HOST:PORT\n", argv[0], ca_address);
		return 2;
	}
	m.t.loop = uv_default_loop();
	m.t.ca_address = ca_address;
	if (km_tunnel_pods_init(&m.t.pods, trust_domain, on_identity, &m.t) != 0) {
		fprintf(stderr, "%s: --trust-domain '%s' is not a DNS name\n", argv[0], trust_domain);
		return 2;
	}
	{
		const struct km_certs_config cc = {
			.grpc = { .conn = { .host = host, .port = port, .ca_file = ca_root,
					    .server_name = server_name, .connect_timeout_ms = 5000 },
				  .authority = ca_address,
				  .token_file = token_file && *token_file ? token_file : NULL,
				  .cluster_id = cluster_id,
				  .setup_timeout_ms = (unsigned)timeout_s * 1000 },
			.ttl_seconds = (int64_t)ttl_s,
			.timeout_ms = (unsigned)timeout_s * 1000,
			.max_inflight = (unsigned)inflight,
			.impersonate = impersonate,
		};

		km_certs_init(&m.t.certs, m.t.loop, &cc);
	}
	{
		/* 0660 in the tunnel's group: the CNI agent (root without CAP_DAC_OVERRIDE in the
		 * chart) is given that group; the peer check still admits role cni from root only */
		const struct km_ipc_server_config scfg = { .path = socket_path, .mode = 0660,
							   .gid = (gid_t)-1, .max_frame = 16u << 20,
							   .name = "kmesh-tunnel" };
		const struct km_ipc_server_ops ops = { km_tunnel_allowed, km_tunnel_request };

		/* peers (capped by the server), CA connections; HBONE: its connections (16,384) and a
		 * socket to the application per stream */
		km_fd_limit_raise(inbound || *outbound_address ? 65536 : 2048);
		if (km_signals_init(m.t.loop, &m.signals, on_shutdown, &m) != 0 ||
		    km_ipc_server_start(&m.t.srv, m.t.loop, &scfg, &ops, &m.t) != 0 ||
		    uv_timer_init(m.t.loop, &m.tick) != 0)
			return 1;
	}
	if (inbound) {
		if (km_inbound_start(&m.t.inbound, m.t.loop, &m.t.certs, m.t.pods.trust_domain,
				     mw_socket, xds_socket) != 0)
			return 1;
		m.t.inbound_on = 1;
		m.t.inbound.handshake_ms = (unsigned)handshake_ms;
		m.t.inbound.ping_ms = (unsigned)ping_ms;
		m.t.inbound.report_ms = (unsigned)report_s * 1000;
		m.t.inbound.app_from_caller = app_from_caller;
		m.t.inbound.authz_cache.max = (size_t)decision_cache;
		m.t.pods.on_pod = on_pod;
	}
	if (*outbound_address) {
		if (km_outbound_start(&m.t.outbound, m.t.loop, &m.t.certs, &m.t.pods,
				      outbound_address, xds_socket, mw_socket) != 0)
			return 1;
		m.t.outbound_on = 1;
		m.t.outbound.connect_ms = (unsigned)outbound_connect_ms;
		m.t.outbound.idle_ms = (unsigned)outbound_idle_ms;
		m.t.outbound.cert_wait_ms = (unsigned)outbound_cert_wait_ms;
		m.t.outbound.ping_ms = (unsigned)ping_ms;
	}
	km_prom_file_init(&m.t.metrics, metrics_dir, "tunnel");
	m.tick.data = &m;
	uv_timer_start(&m.tick, on_tick, 0, TICK_MS);
	km_info("trust domain %s, istiod's CA at %s (%s), certificates of %llu s%s", trust_domain,
		ca_address, server_name, (unsigned long long)ttl_s,
		impersonate ? ", asked by impersonation" : "");
	km_sm_ready(&m.sm, m.t.loop, "started: waiting for the CNI agent's pods");
	uv_run(m.t.loop, UV_RUN_DEFAULT);
	km_tunnel_pods_free(&m.t.pods);
	km_prom_file_free(&m.t.metrics);
	uv_loop_close(m.t.loop);
	km_info("stopped");
	return 0;
}
