/* main.c — kmesh-cni: the CNI plugin a container runtime runs (CNI_COMMAND set), and its
 * installer (`kmesh-cni install`, `kmesh-cni uninstall`). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "services/cni-plugin/cni_output.h"
#include "services/cni-plugin/cni_state.h"
#include "services/cni-plugin/install.h"
#include "services/cni-plugin/invocation.h"
#include "services/cni-plugin/netconf.h"
#include "services/cni-plugin/plugin.h"
#include "shared/kube/kubeconfig.h"
#include "shared/log.h"
#include "shared/version.h"
#include "shared/options.h"

#define KM_CNI_LOG_ROTATE_BYTES (10u << 20)

static const char *const plugin_help =
	"Usage: kmesh-cni                      (run by the container runtime: CNI_COMMAND set)\n"
	"       kmesh-cni install [OPTIONS]    install and keep the plugin chained (long-running)\n"
	"       kmesh-cni uninstall [OPTIONS]  remove the entry, the binary and the kubeconfig\n"
	"       kmesh-cni --version | --help\n\n"
	"A chained CNI plugin (spec 1.0.0; also 0.3.0, 0.3.1, 0.4.0): after the cluster's primary\n"
	"plugin has set up a pod, it decides from the Kubernetes API whether the pod belongs in\n"
	"the mesh and enrolls its network namespace with the kmesh map writer. Its keys in the\n"
	"conflist entry: kubeconfig, mapWriterSocket, failPolicy (open|closed), stateDir,\n"
	"logFile, logLevel, timeoutMs. See docs/cni.md.\n";

/* Reads all of stdin, at most max + 1 bytes (one more tells "too large"). */
static char *read_stdin(size_t max, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);

	while (buf) {
		ssize_t r;

		if (n == cap) {
			char *nb = cap > max ? NULL : realloc(buf, cap * 2);

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		r = read(0, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			*len = n;
			return buf;
		}
		n += (size_t)r;
	}
	*len = n;
	return buf;
}

/* Log lines go to the configured file (stdout carries the result); rotated at 10 MiB. */
static void open_log(const struct km_cni_netconf *nc)
{
	enum km_log_level level;
	struct stat st;
	char old[4200], why[256];
	int fd;

	if (km_log_parse_level(nc->log_level, &level) == 0)
		km_log_set_level(level);
	if (!strcmp(nc->log_file, "stderr"))
		return;
	if (km_cni_state_init(nc->state_dir, why, sizeof(why)) != 0)
		km_warn("%s", why);
	fd = open(nc->log_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		km_warn("cannot open the log file %s: %s; logging to stderr", nc->log_file,
			strerror(errno));
		return;
	}
	/* rotate under a lock on the file itself, and only if the name still means this file:
	 * two plugins running at once rotate once, never over the older .1 */
	if (fstat(fd, &st) == 0 && st.st_size > KM_CNI_LOG_ROTATE_BYTES && flock(fd, LOCK_EX) == 0) {
		struct stat now;

		if (stat(nc->log_file, &now) == 0 && now.st_ino == st.st_ino) {
			snprintf(old, sizeof(old), "%s.1", nc->log_file);
			rename(nc->log_file, old);
		}
		flock(fd, LOCK_UN);
		close(fd);
		fd = open(nc->log_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			return;
	}
	dup2(fd, 2);
	close(fd);
}

static int run_plugin(void)
{
	struct km_cni_invocation inv;
	struct km_cni_netconf nc = { 0 };
	struct km_cni_error e = { 0 };
	size_t len = 0;
	char *in;
	int rc = -1;

	if (km_cni_invocation_from_env(&inv, &e) == 0 && inv.command == KM_CNI_VERSION) {
		km_cni_print_version(stdout);
		return 0;
	}
	in = e.code ? NULL : read_stdin(KM_CNI_MAX_CONFIG, &len);
	if (!e.code && !in)
		km_cni_fail(&e, KM_CNI_E_IO, "cannot read stdin", "out of memory");
	if (!e.code && km_cni_netconf_parse(in, len, &nc, &e) == 0) {
		open_log(&nc);
		rc = km_cni_run(&inv, &nc, stdout, &e);
	}
	if (rc != 0) {
		km_error("%s %s/%s (container %s): %s: %s",
			 e.code == KM_CNI_E_ENV ? getenv("CNI_COMMAND") ?: "-"
						: km_cni_command_name(inv.command),
			 inv.pod_namespace, inv.pod_name, inv.container_id, e.msg, e.details);
		km_cni_print_error(stdout, nc.cni_version, &e);
	}
	km_cni_netconf_free(&nc);
	free(in);
	return rc == 0 ? 0 : 1;
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

static int run_installer(int argc, char **argv, int uninstall)
{
	static char self[PATH_MAX];
	struct km_cni_install_config cfg = {
		.bin_dir = "/opt/cni/bin",
		.conf_dir = "/etc/cni/net.d",
		.sa_dir = KM_SERVICE_ACCOUNT_DIR,
		.map_writer_socket = "/run/kmesh/map-writer.sock",
		.fail_policy = "open",
		.state_dir = "/run/kmesh/cni",
		.plugin_log_level = "info",
	};
	uint64_t resync = 30, timeout_ms = 2000;
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
		  "the plugin binary to install (default: this program)", "KMESH_CNI_PLUGIN_BINARY" },
		{ "kubeconfig", KM_OPT_STRING, &cfg.kubeconfig, "PATH",
		  "let the plugin use this kubeconfig instead of one generated from the service "
		  "account", "KMESH_CNI_KUBECONFIG" },
		{ "service-account-dir", KM_OPT_STRING, &cfg.sa_dir, "DIR",
		  "token and ca.crt of the service account the plugin acts as",
		  "KMESH_CNI_SERVICE_ACCOUNT_DIR" },
		{ "kube-server", KM_OPT_STRING, &cfg.kube_server, "URL",
		  "Kubernetes API URL for the plugin (default: https://$KUBERNETES_SERVICE_HOST:"
		  "$KUBERNETES_SERVICE_PORT)", "KMESH_CNI_KUBE_SERVER" },
		{ "map-writer-socket", KM_OPT_STRING, &cfg.map_writer_socket, "PATH",
		  "the map writer's socket, as the plugin on the host sees it",
		  "KMESH_MAP_WRITER_SOCKET" },
		{ "fail-policy", KM_OPT_FUNC, &cfg.fail_policy, "open|closed",
		  "when the mesh is unavailable: start pods without it (open, default) or fail "
		  "their setup (closed)", "KMESH_CNI_FAIL_POLICY", 0, 0, parse_fail_policy },
		{ "state-dir", KM_OPT_STRING, &cfg.state_dir, "DIR",
		  "the plugin's state, metrics and log (host path)", "KMESH_CNI_STATE_DIR" },
		{ "plugin-log-level", KM_OPT_STRING, &cfg.plugin_log_level, "LEVEL",
		  "the plugin's log level", "KMESH_CNI_PLUGIN_LOG_LEVEL" },
		{ "plugin-timeout-ms", KM_OPT_UINT, &timeout_ms, "MS",
		  "the plugin's timeout per request", "KMESH_CNI_PLUGIN_TIMEOUT_MS", 100, 30000 },
		{ "resync-seconds", KM_OPT_UINT, &resync, "N",
		  "check everything this often, besides on file changes", "KMESH_CNI_RESYNC_SECONDS",
		  1, 3600 },
		{ "keep-on-exit", KM_OPT_BOOL, &cfg.keep_on_exit, NULL,
		  "leave the entry, binary and kubeconfig in place on exit (e.g. during an upgrade)",
		  "KMESH_CNI_KEEP_ON_EXIT" },
		{ "log-level", KM_OPT_FUNC, &level, "LEVEL", "error, warn, info (default) or debug",
		  "KMESH_LOG_LEVEL", 0, 0, km_option_log_level },
		{ "log-format", KM_OPT_FUNC, &level, "FORMAT",
		  "text (default) or json: one JSON object per line (time, level, scope, msg)",
		  "KMESH_LOG_FORMAT", 0, 0, km_option_log_format },
		{ 0 },
	};
	int rc;

	km_log_init(uninstall ? "kmesh-cni uninstall" : "kmesh-cni install");
	if (n > 0) {
		self[n] = '\0';
		cfg.plugin_binary = self;
	}
	rc = km_options_parse(opts, argc, argv, "[OPTIONS]",
			      uninstall ? "Removes the kmesh-cni entry from every *.conflist, the "
					  "plugin binary and the generated kubeconfig."
					: "Installs the kmesh-cni plugin binary, its kubeconfig and its "
					  "entry in the CNI configuration list,\nand keeps them there "
					  "while it runs (the primary CNI may rewrite its file).",
			      NULL);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (!cfg.plugin_binary) {
		fprintf(stderr, "kmesh-cni: cannot find this program's path; pass --plugin-binary\n");
		return 2;
	}
	{ /* the plugin is this program (the default, or --plugin-binary naming it) */
		char *a = realpath(cfg.plugin_binary, NULL), *b = *self ? realpath(self, NULL) : NULL;

		cfg.bundle = a && b && !strcmp(a, b);
		free(a);
		free(b);
	}
	cfg.resync_seconds = (unsigned)resync;
	cfg.plugin_timeout_ms = (unsigned)timeout_ms;
	return uninstall ? km_cni_uninstall(&cfg) : km_cni_install_run(&cfg);
}

int main(int argc, char **argv)
{
	km_log_init("kmesh-cni");
	if (argc > 1 && !strcmp(argv[1], "install")) {
		argv[1] = "kmesh-cni install"; /* the program name in messages and --help */
		return run_installer(argc - 1, argv + 1, 0);
	}
	if (argc > 1 && !strcmp(argv[1], "uninstall")) {
		argv[1] = "kmesh-cni uninstall";
		return run_installer(argc - 1, argv + 1, 1);
	}
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(plugin_help, stdout);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("kmesh-cni %s, CNI spec %s (supports 0.3.0, 0.3.1, 0.4.0, 1.0.0)\n",
		       km_version(), KM_CNI_SPEC_VERSION);
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "kmesh-cni: unknown argument '%s' (see --help)\n", argv[1]);
		return 2;
	}
	return run_plugin();
}
