/* install.h — `kmesh-cni install`, the long-running installer (libuv), and `kmesh-cni
 * uninstall`. It keeps three things true on the node:
 *   - the plugin binary is in the CNI bin dir (copied atomically, only when it differs);
 *   - a 0600 kubeconfig for the plugin exists, made from the service account's token and CA
 *     (rewritten when the token rotates), unless an existing kubeconfig is named;
 *   - the kmesh-cni entry is the last plugin of the first usable *.conflist (or a named one),
 *     written atomically with the file's mode and owner kept.
 * It watches the CNI config dir and the service-account dir and re-checks the kubeconfig and
 * the entry within 100 ms of a change (a primary CNI rewriting its file drops our entry; it
 * comes back); the periodic resync checks the binary too. It only ever writes a conflist it parsed as valid, and never one that changed since
 * it was read. On SIGTERM/SIGINT it uninstalls (entry, binary, kubeconfig) unless told to keep. */
#ifndef KM_CNI_INSTALL_H
#define KM_CNI_INSTALL_H

struct km_cni_install_config {
	const char *bin_dir, *conf_dir, *conflist_name; /* conflist_name NULL: the first */
	const char *plugin_binary;                      /* the file to copy */
	int bundle; /* it is this program: its libraries and loader go beside it (bundle.h) */
	const char *kubeconfig;      /* an existing kubeconfig to use; NULL: generate one */
	const char *sa_dir, *kube_server;
	/* written into the entry for the plugin */
	const char *map_writer_socket, *fail_policy, *state_dir, *plugin_log_level;
	unsigned plugin_timeout_ms;
	unsigned resync_seconds;
	int keep_on_exit;
};

/* Runs until SIGTERM/SIGINT. Returns the process exit code. */
int km_cni_install_run(const struct km_cni_install_config *cfg);
/* Removes the entry from every *.conflist in conf_dir, the binary and the generated
 * kubeconfig. Returns 0 or 1. */
int km_cni_uninstall(const struct km_cni_install_config *cfg);

#endif
