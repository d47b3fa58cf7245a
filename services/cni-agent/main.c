/* main.c — kmesh-cni-agent: the node's CNI agent. `install` installs the kmesh-cni plugin,
 * keeps it chained, and answers its calls from a cache of this node's pods (agent.h);
 * `uninstall` removes the plugin. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "services/cni-agent/agent.h"
#include "services/cni-agent/install.h"
#include "shared/kube/kubeconfig.h"
#include "shared/log.h"
#include "shared/options.h"
#include "shared/signals.h"
#include "shared/version.h"

struct node_agent {
	uv_loop_t *loop;
	struct km_cni_installer installer;
	struct km_cni_agent agent;
	struct km_signals signals;
	int exit_code;
};

static void on_shutdown(void *arg, int signum)
{
	struct node_agent *na = arg;

	km_info("signal %d: stopping", signum);
	km_cni_agent_stop(&na->agent);
	if (km_cni_install_stop(&na->installer) != 0)
		na->exit_code = 1;
	km_signals_close(&na->signals);
}

static int parse_fail_policy(const char *arg, void *target, char *err, size_t errlen)
{
	if (strcmp(arg, "open") && strcmp(arg, "closed")) {
		snprintf(err, errlen, "'%s': open or closed", arg);
		return -1;
	}
	*(const char **)target = arg;
	return 0;
}

static int run(int argc, char **argv, int uninstall)
{
	static char self[PATH_MAX], plugin[PATH_MAX], socket_buf[PATH_MAX];
	static struct node_agent na;
	struct km_cni_install_config cfg = {
		.bin_dir = "/opt/cni/bin",
		.conf_dir = "/etc/cni/net.d",
		.fail_policy = "open",
		.state_dir = "/run/kmesh/cni",
		.plugin_log_level = "info",
	};
	struct km_cni_agent_config acfg = {
		.map_writer_socket = "/run/kmesh/map-writer.sock",
		.kubeconfig = KM_KUBECONFIG_IN_CLUSTER,
		.node_name = getenv("NODE_NAME"),
		.annotate = 1,
	};
	uint64_t resync = 30, timeout_ms = 2000, cache_wait = 500, reconcile = 2000, gc_age = 60;
	uint64_t list_every = 300;
	int no_annotate = 0;
	const char *level = NULL;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	const struct km_option opts[] = {
		{ "cni-bin-dir", KM_OPT_STRING, &cfg.bin_dir, "DIR",
		  "where the runtime finds CNI plugins", "KMESH_CNI_BIN_DIR" },
		{ "cni-conf-dir", KM_OPT_STRING, &cfg.conf_dir, "DIR",
		  "where the runtime reads CNI configuration", "KMESH_CNI_CONF_DIR" },
		{ "conflist-name", KM_OPT_STRING, &cfg.conflist_name, "NAME",
		  "chain into this file of the conf dir (default: the first valid *.conflist)",
		  "KMESH_CNI_CONFLIST_NAME" },
		{ "plugin-binary", KM_OPT_STRING, &cfg.plugin_binary, "PATH",
		  "the plugin binary to install (default: kmesh-cni beside this program)",
		  "KMESH_CNI_PLUGIN_BINARY" },
		{ "kubeconfig", KM_OPT_STRING, &acfg.kubeconfig, "PATH",
		  "the agent's kubeconfig (default: the pod's service account)",
		  "KMESH_CNI_KUBECONFIG" },
		{ "node-name", KM_OPT_STRING, &acfg.node_name, "NAME",
		  "this node's name: the agent watches the pods scheduled here", "NODE_NAME" },
		{ "map-writer-socket", KM_OPT_STRING, &acfg.map_writer_socket, "PATH",
		  "the map writer's socket", "KMESH_MAP_WRITER_SOCKET" },
		{ "agent-socket", KM_OPT_STRING, &acfg.socket_path, "PATH",
		  "where the plugin calls the agent (default: STATE_DIR/agent.sock; a host path)",
		  "KMESH_CNI_AGENT_SOCKET" },
		{ "cache-wait-ms", KM_OPT_UINT, &cache_wait, "MS",
		  "an ADD for a pod not yet in the cache waits this long for its watch event, then "
		  "asks the API", "KMESH_CNI_CACHE_WAIT_MS", 0, 10000 },
		{ "reconcile-ms", KM_OPT_UINT, &reconcile, "MS",
		  "decide the ADDs left undecided (the agent or the API was away) this often",
		  "KMESH_CNI_RECONCILE_MS", 100, 60000 },
		{ "gc-age-seconds", KM_OPT_UINT, &gc_age, "N",
		  "unenroll a container whose pod has been gone (absent from the node's pods, and "
		  "from the API) once its enrollment is this old", "KMESH_CNI_GC_AGE_SECONDS", 1,
		  86400 },
		{ "list-seconds", KM_OPT_UINT, &list_every, "N",
		  "list the node's pods and the namespaces again this often, besides the watch",
		  "KMESH_CNI_LIST_SECONDS", 10, 86400 },
		{ "no-annotate", KM_OPT_BOOL, &no_annotate, NULL,
		  "do not annotate enrolled pods kmesh.net/redirection=enabled",
		  "KMESH_CNI_NO_ANNOTATE" },
		{ "tunnel-socket", KM_OPT_STRING, &acfg.tunnel_socket, "PATH",
		  "the tunnel's socket: the enrolled pods are told to it, for their workload "
		  "certificates (empty: no tunnel)", "KMESH_TUNNEL_SOCKET" },
		{ "hbone", KM_OPT_FUNC, &acfg.hbone, "on|off",
		  "annotate enrolled pods ambient.istio.io/redirection=enabled too, so istiod "
		  "advertises them as HBONE and ztunnels and waypoints send to their port 15008 "
		  "(default off: only once the tunnel serves HBONE both ways)", "KMESH_CNI_HBONE", 0, 0,
		  km_option_on_off },
		{ "fail-policy", KM_OPT_FUNC, &cfg.fail_policy, "open|closed",
		  "when the mesh is unavailable: start pods without it (open, default) or fail "
		  "their setup (closed)", "KMESH_CNI_FAIL_POLICY", 0, 0, parse_fail_policy },
		{ "state-dir", KM_OPT_STRING, &cfg.state_dir, "DIR",
		  "the plugin's and the agent's state, metrics and log (host path)",
		  "KMESH_CNI_STATE_DIR" },
		{ "plugin-log-level", KM_OPT_STRING, &cfg.plugin_log_level, "LEVEL",
		  "the plugin's log level", "KMESH_CNI_PLUGIN_LOG_LEVEL" },
		{ "plugin-timeout-ms", KM_OPT_UINT, &timeout_ms, "MS",
		  "the plugin's wait for the agent's answer, and the agent's per request to the map "
		  "writer or the API", "KMESH_CNI_PLUGIN_TIMEOUT_MS", 100, 30000 },
		{ "resync-seconds", KM_OPT_UINT, &resync, "N",
		  "check everything this often, besides on file changes", "KMESH_CNI_RESYNC_SECONDS",
		  1, 3600 },
		{ "keep-on-exit", KM_OPT_BOOL, &cfg.keep_on_exit, NULL,
		  "leave the entry and the binary in place on exit (e.g. during an upgrade)",
		  "KMESH_CNI_KEEP_ON_EXIT" },
		{ "log-level", KM_OPT_FUNC, &level, "LEVEL", "error, warn, info (default) or debug",
		  "KMESH_LOG_LEVEL", 0, 0, km_option_log_level },
		{ "log-format", KM_OPT_FUNC, &level, "FORMAT",
		  "text (default) or json: one JSON object per line (time, level, scope, msg)",
		  "KMESH_LOG_FORMAT", 0, 0, km_option_log_format },
		{ 0 },
	};
	int rc;

	km_log_init(uninstall ? "kmesh-cni-agent uninstall" : "kmesh-cni-agent install");
	if (n > 0) {
		char *slash;

		self[n] = '\0';
		snprintf(plugin, sizeof(plugin), "%s", self);
		slash = strrchr(plugin, '/');
		if (slash && (size_t)(slash - plugin) + sizeof("/kmesh-cni") <= sizeof(plugin)) {
			strcpy(slash, "/kmesh-cni");
			cfg.plugin_binary = plugin;
		}
	}
	rc = km_options_parse(opts, argc, argv, "[OPTIONS]",
			      uninstall ? "Removes the kmesh-cni entry from every *.conflist and the "
					  "plugin binary."
					: "The node's CNI agent: installs the kmesh-cni plugin and its "
					  "entry in the CNI configuration list,\nkeeps them there while "
					  "it runs, and answers the plugin's calls from a cache of this "
					  "node's pods.",
			      NULL);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (!cfg.plugin_binary) {
		fprintf(stderr, "kmesh-cni-agent: cannot find this program's path; pass "
				"--plugin-binary\n");
		return 2;
	}
	if (!acfg.socket_path) {
		snprintf(socket_buf, sizeof(socket_buf), "%s/agent.sock", cfg.state_dir);
		acfg.socket_path = socket_buf;
	}
	cfg.agent_socket = acfg.socket_path;
	cfg.resync_seconds = (unsigned)resync;
	cfg.plugin_timeout_ms = (unsigned)timeout_ms;
	if (uninstall)
		return km_cni_uninstall(&cfg);
	if (!acfg.node_name || !*acfg.node_name) {
		fprintf(stderr, "kmesh-cni-agent: --node-name (or NODE_NAME) is needed: the agent "
				"watches the pods scheduled on this node\n");
		return 2;
	}
	acfg.state_dir = cfg.state_dir;
	/* the agent's own requests must end before the plugin stops waiting for its answer */
	acfg.timeout_ms = (unsigned)timeout_ms / 4 > 100 ? (unsigned)timeout_ms / 4 : 100;
	acfg.cache_wait_ms = (unsigned)cache_wait;
	acfg.reconcile_ms = (unsigned)reconcile;
	acfg.gc_age_s = (unsigned)gc_age;
	acfg.resync_ms = (long)list_every * 1000;
	acfg.annotate = !no_annotate;
	na.loop = uv_default_loop();
	if (km_cni_agent_start(&na.agent, na.loop, &acfg) != 0)
		return 1;
	if (km_cni_install_start(&na.installer, na.loop, &cfg) != 0) {
		km_cni_agent_stop(&na.agent);
		uv_run(na.loop, UV_RUN_DEFAULT);
		return 1;
	}
	km_signals_init(na.loop, &na.signals, on_shutdown, &na);
	uv_run(na.loop, UV_RUN_DEFAULT);
	uv_loop_close(na.loop);
	return na.exit_code;
}

int main(int argc, char **argv)
{
	km_log_init("kmesh-cni-agent");
	if (argc > 1 && !strcmp(argv[1], "install")) {
		argv[1] = "kmesh-cni-agent install"; /* the program name in messages and --help */
		return run(argc - 1, argv + 1, 0);
	}
	if (argc > 1 && !strcmp(argv[1], "uninstall")) {
		argv[1] = "kmesh-cni-agent uninstall";
		return run(argc - 1, argv + 1, 1);
	}
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("kmesh-cni-agent %s\n", km_version());
		return 0;
	}
	printf("Usage: kmesh-cni-agent install [OPTIONS]    install the kmesh-cni plugin, keep it "
	       "chained and answer its calls\n"
	       "       kmesh-cni-agent uninstall [OPTIONS]  remove the entry and the plugin\n"
	       "       kmesh-cni-agent --version\n"
	       "'kmesh-cni-agent install --help' lists the options. See docs/cni.md.\n");
	return argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) ? 0 : 2;
}
