/* main.c — kmesh-map-writer: the only process that holds CAP_BPF. Loads and attaches the BPF
 * programs, owns the pinned tables, and applies validated table operations that its peers send
 * over its Unix socket. Flags and wiring only; the work is in dataplane.c, tables.c, server.c. */
#include <grp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <uv.h>
#include <bpf/libbpf.h>

#include "ipc/frame.h"
#include "services/map-writer/access.h"
#include "services/map-writer/authz_lookup.h"
#include "services/map-writer/authz_recheck.h"
#include "services/map-writer/conn_progress.h"
#include "services/map-writer/dataplane.h"
#include "services/map-writer/dns_link.h"
#include "services/map-writer/events.h"
#include "services/map-writer/cni_pending.h"
#include "services/map-writer/metrics_file.h"
#include "services/map-writer/ipsec_tc.h"
#include "ipc/server.h"
#include "services/map-writer/requests.h"
#include "services/map-writer/demand.h"
#include "services/map-writer/tables.h"
#include "shared/addr.h"
#include "shared/fd_limit.h"
#include "shared/log.h"
#include "shared/options.h"
#include "shared/signals.h"
#include "shared/daemon/service_manager.h"

struct writer {
	uv_loop_t *loop;
	struct km_dataplane dp;
	struct km_tables tables;
	struct km_ipc_server server;
	struct km_cni_pending pending;
	struct km_mw_requests requests;
	struct km_dump_queue dumps;
	struct km_authz_recheck recheck;
	struct km_authz_lookup lookup;
	struct km_ipsec_tc ipsec_tc;
	struct km_signals signals;
	struct km_access access;
	struct km_mw_events events;
	struct km_conn_progress progress;
	struct km_mw_metrics metrics;
	struct km_service_manager sm;
	int detach_on_exit;
};

static int parse_allow(const char *arg, void *target, char *err, size_t errlen)
{
	return km_access_add(target, arg, err, errlen);
}

static int parse_mode(const char *arg, void *target, char *err, size_t errlen)
{
	char *end;
	unsigned long m = strtoul(arg, &end, 8);

	if (end == arg || *end || m > 0777) {
		snprintf(err, errlen, "'%s' is not an octal file mode", arg);
		return -1;
	}
	*(mode_t *)target = (mode_t)m;
	return 0;
}

static int parse_group(const char *arg, void *target, char *err, size_t errlen)
{
	char *end;
	unsigned long g = strtoul(arg, &end, 10);
	struct group *gr;

	if (end != arg && !*end) {
		*(gid_t *)target = (gid_t)g;
		return 0;
	}
	gr = getgrnam(arg);
	if (!gr) {
		snprintf(err, errlen, "no group named '%s'", arg);
		return -1;
	}
	*(gid_t *)target = gr->gr_gid;
	return 0;
}

static int parse_bpf_level(const char *arg, void *target, char *err, size_t errlen)
{
	if (km_log_parse_level(arg, target) == 0)
		return 0;
	snprintf(err, errlen, "'%s' is not error, warn, info or debug", arg);
	return -1;
}

/* --dns-resolver ADDR, once per family: the node-local resolver a pod's DNS is sent to. */
static int parse_resolver(const char *arg, void *target, char *err, size_t errlen)
{
	struct km_node_config *node = target;
	struct km_addr a;

	if (km_addr_parse(arg, &a) != 0 || km_addr_is_unspecified(&a)) {
		snprintf(err, errlen, "'%s' is not an IPv4 or IPv6 address", arg);
		return -1;
	}
	if (km_addr_is_v4(&a))
		node->dns4 = a;
	else
		node->dns6 = a;
	return 0;
}

/* --tunnel-address ADDR: where the tunnel's outbound listener is (an IPv4 address). */
static int parse_tunnel_address(const char *arg, void *target, char *err, size_t errlen)
{
	struct km_addr *a = target;

	if (km_addr_parse(arg, a) != 0 || !km_addr_is_v4(a) || km_addr_is_unspecified(a)) {
		snprintf(err, errlen, "'%s' is not an IPv4 address", arg);
		return -1;
	}
	return 0;
}

/* --dns-interface: the resolver addresses and the tunnel's outbound address on a dummy interface
 * of ours (dns_link.h). */
static int start_dns_link(const char *ifname, const struct km_node_config *node,
			  const struct km_addr *tunnel)
{
	struct km_addr addrs[3];
	size_t n = 0, dns;
	char err[256], text[3][KM_ADDR_STRLEN];

	if (!km_addr_is_unspecified(&node->dns4))
		addrs[n++] = node->dns4;
	if (!km_addr_is_unspecified(&node->dns6))
		addrs[n++] = node->dns6;
	if (!km_addr_is_unspecified(tunnel))
		addrs[n++] = *tunnel;
	if (!n) {
		km_error("--dns-interface %s needs the address to put there: give --dns-resolver "
			 "or --tunnel-address", ifname);
		return -1;
	}
	if (km_dns_link_up(ifname, addrs, n, err, sizeof(err)) != 0) {
		km_error("%s", err);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		km_addr_format(&addrs[i], text[i]);
	dns = n - !km_addr_is_unspecified(tunnel);
	if (dns)
		km_info("DNS: %s holds %s%s%s for the node DNS proxy", ifname, text[0],
			dns > 1 ? " and " : "", dns > 1 ? text[1] : "");
	if (dns < n)
		km_info("HBONE outbound: %s holds %s for the tunnel's listener", ifname, text[dns]);
	return 0;
}

static void on_server_stopped(struct km_ipc_server *srv)
{
	struct writer *w = (struct writer *)((char *)srv - offsetof(struct writer, server));

	km_signals_close(&w->signals);
}

static void on_shutdown(void *arg, int signum)
{
	struct writer *w = arg;

	(void)signum;
	km_sm_stopping(&w->sm);
	km_authz_recheck_close(&w->recheck);
	km_conn_progress_stop(&w->progress);
	km_mw_events_stop(&w->events);
	km_mw_metrics_stop(&w->metrics);
	km_cni_pending_stop(&w->pending);
	km_dump_queue_stop(&w->dumps, NULL); /* a page being read stops; the loop waits for it */
	km_ipc_server_stop(&w->server, on_server_stopped);
}

int main(int argc, char **argv)
{
	static struct writer w;
	const char *bpffs_dir = "/sys/fs/bpf/kmesh";
	const char *cgroup = "/sys/fs/cgroup";
	const char *socket_path = "/run/kmesh/map-writer.sock";
	const char *level = NULL;
	int monitoring = 1, authz = 1;
	const char *metrics_dir = "/run/kmesh/metrics", *cni_metrics = "/run/kmesh/cni/metrics.prom";
	const char *cni_state = "/run/kmesh/cni", *dns_interface = "", *tunnel_cgroup = "";
	struct km_addr tunnel_address = { 0 };
	uint64_t metrics_interval = 15, report_interval = 5;
	enum km_log_level bpf_level = KM_LOG_ERROR;
	uint64_t max_manage = 16384, max_frontend = 262144, max_service = 65536,
		 max_endpoint = 262144, max_backend = 131072, max_override = 65536,
		 max_authz_idents = 131072, max_authz_rows = 131072, max_authz_cidrs = 32768,
		 max_waypoint_sockets = 65536, dns_port = 53, max_frame = KM_FRAME_MAX_DEFAULT,
		 max_conns = 512, max_conns_uid = 64;
	struct km_node_config node = { 0 };
	mode_t socket_mode = 0660;
	int preallocate = 0, compat_programs = 0;
	gid_t socket_gid = (gid_t)-1;
	const uint64_t table_min = 16, table_max = 1u << 24;
	const struct km_option opts[] = {
		{ "bpffs-dir", KM_OPT_STRING, &bpffs_dir, "DIR",
		  "directory on a bpf filesystem where maps and links are pinned", "KMESH_BPFFS_DIR" },
		{ "cgroup", KM_OPT_STRING, &cgroup, "PATH",
		  "cgroup-v2 directory the programs attach to (all pods must be below it)",
		  "KMESH_CGROUP" },
		{ "socket", KM_OPT_STRING, &socket_path, "PATH", "Unix socket the peers connect to",
		  "KMESH_MAP_WRITER_SOCKET" },
		{ "socket-mode", KM_OPT_FUNC, &socket_mode, "OCTAL",
		  "permissions of the socket file (default 0660)", NULL, 0, 0, parse_mode },
		{ "socket-group", KM_OPT_FUNC, &socket_gid, "GROUP",
		  "group (name or gid) owning the socket file (default: unchanged)", NULL, 0, 0,
		  parse_group },
		{ "allow", KM_OPT_FUNC, &w.access, "ROLE:uid=N|ROLE:gid=N",
		  "let a peer uid or gid (a number or a name) take a role (xds, cni, admin, ipsec, "
		  "tunnel); repeatable; uid 0 may take any",
		  NULL, 0, 0, parse_allow },
		{ "max-pods", KM_OPT_UINT, &max_manage, "N", "size of km_manage (enrolled pods)",
		  "KMESH_MAX_PODS", table_min, table_max },
		{ "max-frontends", KM_OPT_UINT, &max_frontend, "N",
		  "size of km_frontend (VIP:port and pod IP rows)", "KMESH_MAX_FRONTENDS", table_min,
		  table_max },
		{ "max-services", KM_OPT_UINT, &max_service, "N", "size of km_service",
		  "KMESH_MAX_SERVICES", table_min, table_max },
		{ "max-endpoints", KM_OPT_UINT, &max_endpoint, "N", "size of km_endpoint",
		  "KMESH_MAX_ENDPOINTS", table_min, table_max },
		{ "max-backends", KM_OPT_UINT, &max_backend, "N", "size of km_backend (workloads)",
		  "KMESH_MAX_BACKENDS", table_min, table_max },
		{ "max-port-overrides", KM_OPT_UINT, &max_override, "N",
		  "size of km_port_ovr (backends with their own target port)",
		  "KMESH_MAX_PORT_OVERRIDES", table_min, table_max },
		{ "max-waypoint-sockets", KM_OPT_UINT, &max_waypoint_sockets, "N",
		  "size of km_sockhash (connections to a waypoint not yet past their first send)",
		  "KMESH_MAX_WAYPOINT_SOCKETS", table_min, table_max },
		{ "max-authz-addresses", KM_OPT_UINT, &max_authz_idents, "N",
		  "size of km_authz_ident (workload addresses whose identity authorization uses)",
		  "KMESH_MAX_AUTHZ_ADDRESSES", table_min, table_max },
		{ "max-authz-rows", KM_OPT_UINT, &max_authz_rows, "N",
		  "size of each of km_authz_list, km_authz_match, km_authz_set, km_authz_stats and "
		  "km_authz_index (compiled authorization policies)", "KMESH_MAX_AUTHZ_ROWS", table_min, table_max },
		{ "max-authz-cidrs", KM_OPT_UINT, &max_authz_cidrs, "N",
		  "size of km_authz_cidr (CIDRs in authorization policies)", "KMESH_MAX_AUTHZ_CIDRS",
		  table_min, table_max },
		{ "dns-resolver", KM_OPT_FUNC, &node, "ADDR",
		  "send enrolled pods' DNS (port 53) to this node-local resolver; once per family "
		  "(IPv4, IPv6); default: no redirect", NULL, 0, 0, parse_resolver },
		{ "dns-port", KM_OPT_UINT, &dns_port, "PORT", "the resolver's port (default 53)",
		  "KMESH_DNS_PORT", 1, 65535 },
		{ "dns-interface", KM_OPT_STRING, &dns_interface, "NAME",
		  "put the --dns-resolver addresses on this dummy interface (made if missing), so the "
		  "xDS agent's DNS proxy listens where this node's pods reach and the network does "
		  "not, e.g. a link-local 169.254.20.53, and --tunnel-address (default: none)",
		  "KMESH_DNS_INTERFACE" },
		{ "tunnel-address", KM_OPT_FUNC, &tunnel_address, "ADDR",
		  "the tunnel's outbound listener (HBONE outbound): an IPv4 link-local address put on "
		  "--dns-interface, e.g. 169.254.20.15 (default: none)", "KMESH_TUNNEL_ADDRESS", 0, 0,
		  parse_tunnel_address },
		{ "tunnel-cgroup", KM_OPT_STRING, &tunnel_cgroup, "PATH",
		  "the cgroup-v2 directory kmesh-tunnel runs in, or auto (the tunnel names it when it "
		  "connects): its getsockopt program there tells the tunnel where each connection it "
		  "accepts for HBONE was for (default: none; HBONE outbound then resets every "
		  "connection)", "KMESH_TUNNEL_CGROUP" },
		{ "max-frame", KM_OPT_UINT, &max_frame, "BYTES", "largest message accepted",
		  "KMESH_MAX_FRAME", 4096, KM_FRAME_MAX_LIMIT },
		{ "max-connections", KM_OPT_UINT, &max_conns, "N",
		  "connections the socket holds at once (default 512); 64 of them are kept for peers "
		  "that may take the cni or admin role", "KMESH_MAX_CONNECTIONS", 128, 65536 },
		{ "max-connections-per-uid", KM_OPT_UINT, &max_conns_uid, "N",
		  "connections one uid may hold at once (default 64)", "KMESH_MAX_CONNECTIONS_PER_UID",
		  1, 65536 },
		{ "preallocate-tables", KM_OPT_BOOL, &preallocate, NULL,
		  "allocate every routing-table entry at start (kernel memory for the full sizes, "
		  "see docs/performance.md): about 1.5x the table write rate and no allocation at "
		  "update time; applies to maps created from now on", "KMESH_PREALLOCATE_TABLES" },
		{ "compat-programs", KM_OPT_BOOL, &compat_programs, NULL,
		  "load the variants of the programs written for kernels that lack newer BPF features "
		  "(e.g. bpf_rdonly_cast, Linux 6.2), even where the kernel has them: to test them",
		  "KMESH_COMPAT_PROGRAMS" },
		{ "detach-on-exit", KM_OPT_BOOL, &w.detach_on_exit, NULL,
		  "on shutdown detach the programs and unpin every map (uninstall); by default they "
		  "stay so traffic keeps flowing", "KMESH_DETACH_ON_EXIT" },
		{ "monitoring", KM_OPT_FUNC, &monitoring, "on|off",
		  "report enrolled pods' connections for metrics and the access log (default on; "
		  "kmeshctl monitoring switches it at run time)", "KMESH_MONITORING", 0, 0,
		  km_option_on_off },
		{ "conn-report-interval", KM_OPT_UINT, &report_interval, "SECONDS",
		  "while monitoring is on, report the bytes of enrolled pods' open connections this "
		  "often, so metrics move while long connections live (0: at close only)",
		  "KMESH_CONN_REPORT_INTERVAL", 0, 3600 },
		{ "authz", KM_OPT_FUNC, &authz, "on|off",
		  "enforce authorization policies (default on; kmeshctl authz switches it at run time)",
		  "KMESH_AUTHZ", 0, 0, km_option_on_off },
		{ "bpf-log-level", KM_OPT_FUNC, &bpf_level, "LEVEL",
		  "the programs' log level: error (default), warn, info or debug; logged as bpf: ...",
		  "KMESH_BPF_LOG_LEVEL", 0, 0, parse_bpf_level },
		{ "metrics-dir", KM_OPT_STRING, &metrics_dir, "DIR",
		  "write this process's metrics to DIR/map-writer.prom, which the xDS agent serves "
		  "(empty: none)", "KMESH_METRICS_DIR" },
		{ "metrics-interval", KM_OPT_UINT, &metrics_interval, "SECONDS",
		  "how often the metrics file is written (default 15; the page leaves out files older "
		  "than 120 s)", "KMESH_METRICS_INTERVAL", 1, 60 },
		{ "cni-state-dir", KM_OPT_STRING, &cni_state, "DIR",
		  "the CNI plugin's state directory: pods that started while the map writer was "
		  "unavailable (fail-open) are enrolled from DIR/pending (empty: none)",
		  "KMESH_CNI_STATE_DIR" },
		{ "cni-metrics-file", KM_OPT_STRING, &cni_metrics, "PATH",
		  "the CNI plugin's counters, copied into the metrics file (empty: none)",
		  "KMESH_CNI_METRICS_FILE" },
		{ "log-level", KM_OPT_FUNC, &level, "LEVEL", "error, warn, info (default) or debug",
		  "KMESH_LOG_LEVEL", 0, 0, km_option_log_level },
		{ "log-format", KM_OPT_FUNC, &level, "FORMAT",
		  "text (default) or json: one JSON object per line (time, level, scope, msg)",
		  "KMESH_LOG_FORMAT", 0, 0, km_option_log_format },
		{ 0 },
	};
	struct km_dataplane_config dcfg;
	struct km_ipc_server_config scfg = { 0 };
	const struct km_ipc_server_ops ops = { km_mw_allowed, km_mw_handle_request,
					       km_mw_frame_limit, km_mw_session_closed };
	int rc;

	km_log_init("kmesh-map-writer");
	rc = km_options_parse(opts, argc, argv, "[OPTIONS]",
			      "Loads the kmesh BPF programs, attaches them to a cgroup, and applies "
			      "validated table operations\nfrom the xDS agent, the CNI plugin and "
			      "kmeshctl received on its Unix socket.",
			      NULL);
	if (rc)
		return rc > 0 ? 0 : 2;

	if (!*dns_interface && !km_addr_is_unspecified(&tunnel_address)) {
		km_error("--tunnel-address needs --dns-interface, the interface to put it on");
		return 2;
	}
	if (*dns_interface && start_dns_link(dns_interface, &node, &tunnel_address) != 0)
		return 1;
	dcfg.tunnel_cgroup_path = tunnel_cgroup;
	dcfg.bpffs_dir = bpffs_dir;
	dcfg.cgroup_path = cgroup;
	dcfg.sizes.manage = (uint32_t)max_manage;
	dcfg.sizes.frontend = (uint32_t)max_frontend;
	dcfg.sizes.service = (uint32_t)max_service;
	dcfg.sizes.endpoint = (uint32_t)max_endpoint;
	dcfg.sizes.backend = (uint32_t)max_backend;
	dcfg.sizes.port_override = (uint32_t)max_override;
	dcfg.sizes.waypoint_sockets = (uint32_t)max_waypoint_sockets;
	dcfg.sizes.authz_idents = (uint32_t)max_authz_idents;
	dcfg.sizes.authz_rows = (uint32_t)max_authz_rows;
	dcfg.sizes.authz_cidrs = (uint32_t)max_authz_cidrs;
	dcfg.preallocate = preallocate;
	dcfg.compat_programs = compat_programs;
	dcfg.node = node;
	dcfg.node.dns_port = (uint16_t)dns_port;
	dcfg.node.flags = (uint16_t)((monitoring ? KM_CFG_F_MONITORING : 0) |
				     (authz ? 0 : KM_CFG_F_AUTHZ_OFF) |
				     ((unsigned)bpf_level << KM_CFG_LOG_SHIFT));
	if (km_dataplane_open(&w.dp, &dcfg) != 0) {
		km_dataplane_close(&w.dp, 0);
		return 1;
	}
	if (km_tables_init(&w.tables, &w.dp) != 0) {
		km_error("out of memory reading the rows already in the maps");
		km_tables_free(&w.tables);
		km_dataplane_close(&w.dp, 0);
		return 1;
	}

	if (km_authz_lookup_init(&w.lookup, w.dp.fd_authz_lookup, w.dp.links_dir, w.dp.fd_manage,
				 w.dp.fd_pod_netns) != 0) {
		km_tables_free(&w.tables);
		km_dataplane_close(&w.dp, 0);
		return 1;
	}

	w.loop = uv_default_loop();
	scfg.path = socket_path;
	scfg.mode = socket_mode;
	scfg.gid = socket_gid;
	scfg.max_frame = (size_t)max_frame;
	scfg.name = "kmesh-map-writer";
	scfg.features = 1u << KMESH__IPC__FEATURE__FEATURE_AUTHZ_INDEX;
	scfg.exclusive_roles = 1u << KMESH__IPC__ROLE__ROLE_XDS; /* one xDS agent writes the tables */
	/* the agent may be busy for seconds (a large push) while connection reports queue for it:
	 * those are bounded by events.c, and it is never cut off for it */
	scfg.unpaused_roles = 1u << KMESH__IPC__ROLE__ROLE_XDS;
	scfg.limits.total = (unsigned)max_conns;
	scfg.limits.per_uid = (unsigned)max_conns_uid;
	/* the peers, the pinned maps and links it holds, and room to spare */
	km_fd_limit_raise((unsigned long)max_conns + 1024);
	w.requests.tables = &w.tables;
	w.requests.access = &w.access;
	w.requests.recheck = &w.recheck;
	w.requests.ipsec_tc = &w.ipsec_tc;
	w.requests.lookup = &w.lookup;
	w.requests.dp = &w.dp;
	w.requests.events = &w.events;
	w.requests.progress = &w.progress;
	km_dump_queue_init(&w.dumps, w.loop, &w.tables, &w.server);
	w.requests.dumps = &w.dumps;
	km_demand_start(&w.dp, &w.lookup); /* authz_ingress only for pods without sk_lookup */
	km_ipsec_tc_init(&w.ipsec_tc, w.dp.fd_ipsec_encrypt, w.dp.fd_ipsec_decrypt, w.dp.fd_manage);
	km_authz_recheck_init(&w.recheck, w.loop,
			      w.dp.recheck_link ? bpf_link__fd(w.dp.recheck_link) : -1, w.dp.fd_manage,
			      w.dp.fd_pod_netns, &w.tables.sync_active);
	if (km_signals_init(w.loop, &w.signals, on_shutdown, &w) != 0 ||
	    km_ipc_server_start(&w.server, w.loop, &scfg, &ops, &w.requests) != 0 ||
	    km_mw_events_start(&w.events, w.loop, &w.server, w.dp.fd_conn_events, w.dp.fd_bpf_log,
			       w.dp.fd_event_drops) != 0 ||
	    km_conn_progress_start(&w.progress, w.loop,
				   w.dp.progress_link ? bpf_link__fd(w.dp.progress_link) : -1,
				   report_interval * 1000, w.dp.fd_manage, w.dp.fd_pod_netns, &w.events,
				   &w.dp.node.flags) != 0 ||
	    km_mw_metrics_start(&w.metrics, w.loop, metrics_dir, cni_metrics,
				(unsigned)metrics_interval * 1000, &w.requests) != 0 ||
	    km_cni_pending_start(&w.pending, w.loop, cni_state, &w.requests) != 0) {
		km_tables_free(&w.tables);
		km_dataplane_close(&w.dp, 0);
		return 1;
	}
	w.metrics.server = &w.server;
	w.metrics.pending = &w.pending;
	{
		char status[600];

		snprintf(status, sizeof(status), "programs attached, tables open, serving on %s",
			 socket_path);
		km_sm_ready(&w.sm, w.loop, status);
	}
	uv_run(w.loop, UV_RUN_DEFAULT);
	km_info("stopped after %llu ops applied, %llu refused",
		(unsigned long long)w.tables.ops_applied, (unsigned long long)w.tables.ops_failed);
	if (w.detach_on_exit && w.ipsec_tc.enabled)
		km_info("IPsec: tc programs taken off %d interfaces", km_ipsec_tc_disable(&w.ipsec_tc));
	km_tables_free(&w.tables);
	if (w.detach_on_exit)
		km_authz_lookup_remove_all(&w.lookup);
	km_dataplane_close(&w.dp, w.detach_on_exit);
	if (w.detach_on_exit && *dns_interface) {
		char err[256];

		if (km_dns_link_remove(dns_interface, err, sizeof(err)) != 0)
			km_warn("%s", err);
	}
	uv_loop_close(w.loop);
	return 0;
}
