/* netconf.h — the network configuration a runtime gives kmesh-cni on stdin: the standard
 * fields (cniVersion, name, prevResult), our own keys, and the pod IPs taken from prevResult.
 * Bounded: at most KM_CNI_MAX_CONFIG bytes, KM_CNI_MAX_POD_IPS addresses.
 *
 * Our keys (all optional; the CNI agent's installer writes them):
 *   agentSocket       the node's CNI agent (kmesh-cni-agent) default <stateDir>/agent.sock
 *   failPolicy        "open" or "closed" (see docs/cni.md)  default "open"
 *   stateDir          per-container state and metrics       default /run/kmesh/cni
 *   logFile           log file, "stderr" for stderr         default <stateDir>/kmesh-cni.log
 *   logLevel          error, warn, info, debug              default info
 *   timeoutMs         for the agent's answer                default 2000 (100..30000)
 * Keys of earlier versions (kubeconfig, mapWriterSocket) are ignored: the plugin asks only the
 * agent. */
#ifndef KM_CNI_NETCONF_H
#define KM_CNI_NETCONF_H

#include <jansson.h>
#include <stddef.h>

#include "services/cni-plugin/cni_output.h"
#include "shared/addr.h"

#define KM_CNI_MAX_CONFIG (1u << 20)
#define KM_CNI_MAX_POD_IPS 16

enum km_cni_fail_policy {
	KM_CNI_FAIL_OPEN = 0,   /* mesh unavailable: the pod starts, not enrolled (logged, counted) */
	KM_CNI_FAIL_CLOSED = 1, /* mesh unavailable: the CNI call fails, the runtime retries */
};

struct km_cni_netconf {
	json_t *root; /* owns every string below */
	const char *cni_version, *name;
	const char *agent_socket, *state_dir, *log_file, *log_level;
	enum km_cni_fail_policy fail_policy;
	unsigned timeout_ms;
	json_t *prev_result; /* borrowed from root; NULL when absent */
	struct km_addr pod_ips[KM_CNI_MAX_POD_IPS];
	size_t n_pod_ips;
	size_t ips_dropped; /* beyond KM_CNI_MAX_POD_IPS */
	char log_file_buf[4096];
	char agent_socket_buf[4096];
};

/* Returns 0, or -1 with e filled (code 1 for an unsupported cniVersion, 6 for text that is not
 * a JSON object, 7 for an invalid field). nc must be freed either way. */
int km_cni_netconf_parse(const char *buf, size_t len, struct km_cni_netconf *nc,
			 struct km_cni_error *e);
void km_cni_netconf_free(struct km_cni_netconf *nc);

#endif
