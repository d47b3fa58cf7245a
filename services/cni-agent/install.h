/* install.h — the CNI agent's installer (libuv), and `kmesh-cni-agent uninstall`. While the
 * agent runs it keeps two things true on the node:
 *   - the plugin binary is in the CNI bin dir (copied atomically, only when it differs);
 *   - the kmesh-cni entry is the last plugin of the first usable *.conflist (or a named one),
 *     written atomically with the file's mode and owner kept.
 * It watches the CNI config dir and re-checks the entry within 100 ms of a change (a primary
 * CNI rewriting its file drops our entry; it comes back); the periodic resync checks the binary
 * too. It only ever writes a conflist it parsed as valid, and never one that changed since it
 * was read. Stopped, it uninstalls (entry, binary) unless told to keep them. */
#ifndef KM_CNI_INSTALL_H
#define KM_CNI_INSTALL_H

#include <jansson.h>
#include <stdint.h>
#include <uv.h>

struct km_cni_install_config {
	const char *bin_dir, *conf_dir, *conflist_name; /* conflist_name NULL: the first */
	const char *plugin_binary;                      /* the file to copy */
	/* written into the entry for the plugin */
	const char *agent_socket, *fail_policy, *state_dir, *plugin_log_level;
	unsigned plugin_timeout_ms;
	unsigned resync_seconds;
	int keep_on_exit;
};

struct km_cni_installer {
	const struct km_cni_install_config *cfg;
	uv_loop_t *loop;
	uv_fs_event_t conf_watch;
	uv_timer_t debounce, resync;
	int started;
	uint64_t pending_since; /* uv_now of the first event not yet checked; 0: none */
	json_t *entry;
	char waiting_for[4200]; /* the last "waiting" message, logged once */
};

/* Install and keep installed. Returns 0, or -1 (logged) when the binary cannot be installed or
 * the conf dir watched. */
int km_cni_install_start(struct km_cni_installer *in, uv_loop_t *loop,
			 const struct km_cni_install_config *cfg);
/* Uninstall (unless keep_on_exit) and close the handles. Returns 0, or 1 if an entry may
 * remain. */
int km_cni_install_stop(struct km_cni_installer *in);
/* Removes the entry from every *.conflist in conf_dir and the binary (and what earlier versions
 * installed beside it). Returns 0 or 1. */
int km_cni_uninstall(const struct km_cni_install_config *cfg);

#endif
