/* main.c — kmesh-ipsec-agent: encrypts pod traffic between nodes with ESP, one key per ordered
 * pair of nodes derived from a shared key file (Kmesh-compatible). Holds CAP_NET_ADMIN only.
 * Flags and wiring; the work is in agent.c (events), plan.c (the XFRM objects), key_watch.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "ipc/server.h"
#include "services/ipsec-agent/admin.h"
#include "services/ipsec-agent/agent.h"
#include "services/ipsec-agent/key_watch.h"
#include "services/ipsec-agent/mw_link.h"
#include "services/ipsec-agent/node_advert.h"
#include "services/ipsec-agent/node_cidrs.h"
#include "services/ipsec-agent/node_spec.h"
#include "services/ipsec-agent/node_watch.h"
#include "shared/fd_limit.h"
#include "shared/log.h"
#include "shared/options.h"
#include "services/ipsec-agent/metrics.h"
#include "shared/signals.h"
#include "shared/daemon/service_manager.h"

#define TICK_MS 1000

struct ipsec_main {
	uv_loop_t *loop;
	struct km_ipsec_agent agent;
	struct km_key_watch keys;
	struct km_ipsec_mw_link mw;
	struct km_node_advert advert;
	struct km_node_watch watch;
	int kube;
	struct km_ipc_server admin;
	struct km_signals signals;
	uv_timer_t tick;
	struct km_ipsec_metrics metrics;
	struct km_service_manager sm;
};

static int on_key(void *arg, const struct km_ipsec_key *k, char *err, size_t errlen)
{
	return km_ipsec_agent_key(arg, k, err, errlen);
}

static void on_key_refused(void *arg, const char *why)
{
	km_ipsec_agent_key_refused(arg, why);
}

static void on_tick(uv_timer_t *t)
{
	struct ipsec_main *m = t->data;

	km_ipsec_agent_tick(&m->agent);
	km_ipsec_metrics_write(&m->metrics, &m->agent);
}

static void on_shutdown(void *arg, int signum)
{
	struct ipsec_main *m = arg;

	(void)signum;
	km_sm_stopping(&m->sm);
	km_key_watch_stop(&m->keys);
	km_ipsec_mw_link_stop(&m->mw);
	if (m->kube) {
		km_node_watch_stop(&m->watch);
		km_node_advert_stop(&m->advert);
	}
	uv_close((uv_handle_t *)&m->tick, NULL);
	km_ipc_server_stop(&m->admin, NULL);
	km_signals_close(&m->signals);
}

/* "a,b,c" into at most max strings (pointers into buf). Returns the count, or -1. */
static int split(char *buf, char **out, int max)
{
	int n = 0;

	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == max)
			return -1;
		out[n++] = tok;
	}
	return n;
}

/* This node from the flags, validated as a peer's spec is. */
static int self_node(const char *name, const char *addresses, const char *cidrs,
		     const char *boot_id_file, struct km_ipsec_node *self)
{
	Kmesh__Ipc__IpsecNode msg = KMESH__IPC__IPSEC_NODE__INIT;
	char abuf[512], cbuf[512], boot[64] = "", err[256];
	char *addrs[KM_IPSEC_ADDRS_MAX + 1], *nets[KM_IPSEC_CIDRS_MAX + 1];
	int na, nc;
	FILE *f;

	snprintf(abuf, sizeof(abuf), "%s", addresses ? addresses : "");
	snprintf(cbuf, sizeof(cbuf), "%s", cidrs ? cidrs : "");
	na = split(abuf, addrs, KM_IPSEC_ADDRS_MAX + 1);
	nc = split(cbuf, nets, KM_IPSEC_CIDRS_MAX + 1);
	f = fopen(boot_id_file, "r");
	if (!f || !fgets(boot, sizeof(boot), f)) {
		km_error("cannot read this node's boot id from %s", boot_id_file);
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	boot[strcspn(boot, "\n")] = '\0';
	msg.name = (char *)name;
	msg.addresses = addrs;
	msg.n_addresses = na < 0 ? KM_IPSEC_ADDRS_MAX + 1 : (size_t)na;
	msg.pod_cidrs = nets;
	msg.n_pod_cidrs = nc < 0 ? KM_IPSEC_CIDRS_MAX + 1 : (size_t)nc;
	msg.boot_id = boot;
	if (km_ipsec_node_from_msg(&msg, self, err, sizeof(err)) != 0) {
		km_error("this node: %s (see --node-name, --addresses, --pod-cidrs)", err);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct ipsec_main m;
	const char *node_name = NULL, *addresses = NULL, *cidrs = NULL, *level = NULL;
	const char *key_file = "/etc/kmesh/ipsec/ipSec", *admin_socket = "/run/kmesh/ipsec-agent.sock";
	const char *boot_id_file = "/proc/sys/kernel/random/boot_id";
	const char *mw_socket = "/run/kmesh/map-writer.sock", *kubeconfig = "";
	const char *metrics_dir = "/run/kmesh/metrics";
	static char node_cidrs[512];
	uint64_t grace_s = 60, resync_s = 300;
	int uninstall = 0;
	const struct km_option opts[] = {
		{ "node-name", KM_OPT_STRING, &node_name, "NAME", "this node's name (required)",
		  "NODE_NAME" },
		{ "addresses", KM_OPT_STRING, &addresses, "IP[,IP]",
		  "this node's addresses as its KmeshNodeInfo lists them (required; at most 4)",
		  "KMESH_NODE_IPS" },
		{ "pod-cidrs", KM_OPT_STRING, &cidrs, "CIDR[,CIDR]",
		  "this node's pod CIDRs: traffic to them is taken only decrypted (at most 4; 'none'; "
		  "default: the Node object's spec.podCIDRs when --kubeconfig is given)",
		  "KMESH_POD_CIDRS" },
		{ "boot-id-file", KM_OPT_STRING, &boot_id_file, "PATH",
		  "where this node's boot id is read (part of every pair key)", NULL },
		{ "key-file", KM_OPT_STRING, &key_file, "PATH",
		  "the key file (JSON spi, aeadKeyName, aeadKey, length), watched for rotations",
		  "KMESH_IPSEC_KEY_FILE" },
		{ "map-writer-socket", KM_OPT_STRING, &mw_socket, "PATH",
		  "the map writer (role ipsec), told each peer's addresses and pod CIDRs for the tc "
		  "programs; empty: none", NULL },
		{ "admin-socket", KM_OPT_STRING, &admin_socket, "PATH",
		  "admin socket (peers by hand, dump, log level)", NULL },
		{ "kubeconfig", KM_OPT_STRING, &kubeconfig, "PATH",
		  "the Kubernetes API: peers from the KmeshNodeInfo objects in kmesh-system, and this "
		  "node's own written there once its ingress is ready; 'in-cluster': the pod's service "
		  "account; empty: no API (peers only over the admin socket)", "KUBECONFIG" },
		{ "kube-resync", KM_OPT_UINT, &resync_s, "SECONDS",
		  "list the KmeshNodeInfo objects again this often (the watch carries changes between)",
		  NULL, 10, 86400 },
		{ "grace", KM_OPT_UINT, &grace_s, "SECONDS",
		  "how long states of an older SPI stay once a peer advertises our current SPI and can "
		  "see ours", NULL, 1, 86400 },
		{ "uninstall-on-exit", KM_OPT_BOOL, &uninstall, NULL,
		  "on shutdown remove every XFRM state and policy this agent installed, and have the "
		  "map writer take the IPsec tc programs off and empty its IPsec tables", NULL },
		{ "metrics-dir", KM_OPT_STRING, &metrics_dir, "DIR",
		  "write this agent's metrics to DIR/ipsec-agent.prom, which the xDS agent serves "
		  "(empty: none)", "KMESH_METRICS_DIR" },
		{ "log-level", KM_OPT_FUNC, &level, "LEVEL", "error, warn, info (default) or debug",
		  "KMESH_LOG_LEVEL", 0, 0, km_option_log_level },
		{ "log-format", KM_OPT_FUNC, &level, "FORMAT",
		  "text (default) or json: one JSON object per line (time, level, scope, msg)",
		  "KMESH_LOG_FORMAT", 0, 0, km_option_log_format },
		{ 0 },
	};
	struct km_ipsec_node self;
	int rc;

	km_log_init("kmesh-ipsec-agent");
	rc = km_options_parse(opts, argc, argv, "[OPTIONS]",
			      "Encrypts pod traffic between nodes with ESP (XFRM), one key per ordered "
			      "pair of nodes derived\nfrom a shared key file as Kmesh derives it. Needs "
			      "CAP_NET_ADMIN.",
			      NULL);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (!node_name || !addresses) {
		km_error("--node-name and --addresses are required");
		return 2;
	}
	if (cidrs && !strcmp(cidrs, "none")) {
		cidrs = NULL; /* none, and not looked up */
	} else if ((!cidrs || !*cidrs) && *kubeconfig) {
		char err[512];

		if (km_node_pod_cidrs_fetch(kubeconfig, node_name, 10000, node_cidrs,
					    sizeof(node_cidrs), err, sizeof(err)) != 0) {
			km_error("no --pod-cidrs, and this node's are not known: %s", err);
			return 1;
		}
		km_info("pod CIDRs from node %s: %s", node_name, *node_cidrs ? node_cidrs : "none");
		cidrs = node_cidrs;
	}
	if (self_node(node_name, addresses, cidrs, boot_id_file, &self) != 0)
		return 2;
	m.loop = uv_default_loop();
	if (km_ipsec_agent_init(&m.agent, m.loop, &self, grace_s * 1000) != 0)
		return 1;
	{
		const struct km_ipc_server_config acfg = { .path = admin_socket, .mode = 0600,
							   .gid = (gid_t)-1, .max_frame = 4u << 20,
							   .name = "kmesh-ipsec-agent" };
		const struct km_ipc_server_ops aops = { km_ipsec_admin_allowed, km_ipsec_admin_request };

		km_fd_limit_raise(1024); /* admin peers (capped by the server), netlink, files */
		if (km_signals_init(m.loop, &m.signals, on_shutdown, &m) != 0 ||
		    km_ipc_server_start(&m.admin, m.loop, &acfg, &aops, &m.agent) != 0 ||
		    uv_timer_init(m.loop, &m.tick) != 0) {
			km_ipsec_agent_free(&m.agent, 0);
			return 1;
		}
	}
	if (*mw_socket) {
		if (km_ipsec_mw_link_start(&m.mw, m.loop, mw_socket, &m.agent.plan) != 0)
			return 2;
		m.agent.mw = &m.mw;
	}
	if (*kubeconfig) {
		char err[256] = "the kubeconfig path is too long";

		if (km_node_advert_init(&m.advert, m.loop, kubeconfig, km_ipsec_agent_published,
					&m.agent) != 0 ||
		    km_node_watch_start(&m.watch, m.loop, &m.agent, kubeconfig, (long)resync_s * 1000,
					err, sizeof(err)) != 0) {
			km_error("cannot watch KmeshNodeInfo objects: %s", err);
			return 1;
		}
		m.kube = 1;
		m.agent.advert = &m.advert;
		m.agent.watch = &m.watch;
	}
	km_ipsec_metrics_init(&m.metrics, metrics_dir);
	m.tick.data = &m;
	uv_timer_start(&m.tick, on_tick, TICK_MS, TICK_MS);
	km_info("node %s (%zu addresses, %zu pod CIDRs), key file %s", self.name, self.n_addrs,
		self.n_cidrs, key_file);
	if (km_key_watch_start(&m.keys, m.loop, key_file,
			       &(struct km_key_watch_ops){ on_key, on_key_refused }, &m.agent) != 0)
		km_error("cannot watch the key file %s", key_file);
	km_sm_ready(&m.sm, m.loop, "started: keys, peers and XFRM follow");
	uv_run(m.loop, UV_RUN_DEFAULT);
	if (uninstall && *mw_socket)
		km_ipsec_mw_link_turn_off(mw_socket, 2000);
	km_ipsec_agent_free(&m.agent, uninstall);
	km_ipsec_metrics_free(&m.metrics);
	uv_loop_close(m.loop);
	km_info("stopped");
	return 0;
}
