/* netconf.c — parsing the CNI network configuration (see netconf.h). */
#include "services/cni-plugin/netconf.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *string_field(json_t *root, const char *key, const char *def,
				struct km_cni_error *e, int *bad)
{
	json_t *v = json_object_get(root, key);

	if (!v)
		return def;
	if (!json_is_string(v) || !*json_string_value(v)) {
		*bad = 1;
		km_cni_fail(e, KM_CNI_E_CONFIG, "invalid network configuration",
			    "\"%s\" must be a non-empty string", key);
		return def;
	}
	return json_string_value(v);
}

/* The pod addresses of prevResult.ips[].address ("10.0.0.5/24"). */
static int pod_ips(struct km_cni_netconf *nc, struct km_cni_error *e)
{
	json_t *ips = json_object_get(nc->prev_result, "ips"), *ip;
	size_t i;

	if (ips && !json_is_array(ips))
		return km_cni_fail(e, KM_CNI_E_CONFIG, "invalid prevResult",
				   "prevResult.ips must be a list");
	json_array_foreach(ips, i, ip) {
		const char *cidr = json_string_value(json_object_get(ip, "address"));
		char text[64];
		const char *slash;

		if (!cidr || !(slash = strchr(cidr, '/')) || (size_t)(slash - cidr) >= sizeof(text))
			return km_cni_fail(e, KM_CNI_E_CONFIG, "invalid prevResult",
					   "prevResult.ips[%zu].address must be an address/prefix", i);
		memcpy(text, cidr, (size_t)(slash - cidr));
		text[slash - cidr] = '\0';
		if (nc->n_pod_ips == KM_CNI_MAX_POD_IPS) {
			nc->ips_dropped++;
			continue;
		}
		if (km_addr_parse(text, &nc->pod_ips[nc->n_pod_ips]) != 0)
			return km_cni_fail(e, KM_CNI_E_CONFIG, "invalid prevResult",
					   "prevResult.ips[%zu].address '%.64s' is not an IP address",
					   i, cidr);
		nc->n_pod_ips++;
	}
	return 0;
}

int km_cni_netconf_parse(const char *buf, size_t len, struct km_cni_netconf *nc,
			 struct km_cni_error *e)
{
	json_error_t jerr;
	json_t *v;
	const char *policy;
	int bad = 0;

	memset(nc, 0, sizeof(*nc));
	if (len > KM_CNI_MAX_CONFIG)
		return km_cni_fail(e, KM_CNI_E_DECODE, "network configuration too large",
				   "%zu bytes on stdin, at most %u", len, KM_CNI_MAX_CONFIG);
	nc->root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!nc->root || !json_is_object(nc->root))
		return km_cni_fail(e, KM_CNI_E_DECODE, "network configuration is not a JSON object",
				   "stdin: %s (line %d, column %d)",
				   nc->root ? "not an object" : jerr.text, jerr.line, jerr.column);
	nc->cni_version = string_field(nc->root, "cniVersion", NULL, e, &bad);
	nc->name = string_field(nc->root, "name", NULL, e, &bad);
	if (bad)
		return -1;
	if (!nc->cni_version)
		return km_cni_fail(e, KM_CNI_E_CONFIG, "invalid network configuration",
				   "\"cniVersion\" is missing");
	if (!km_cni_version_supported(nc->cni_version))
		return km_cni_fail(e, KM_CNI_E_VERSION, "incompatible CNI version",
				   "cniVersion %.32s; supported: 0.3.0, 0.3.1, 0.4.0, 1.0.0",
				   nc->cni_version);
	if (!nc->name)
		return km_cni_fail(e, KM_CNI_E_CONFIG, "invalid network configuration",
				   "\"name\" is missing");
	nc->state_dir = string_field(nc->root, "stateDir", "/run/kmesh/cni", e, &bad);
	nc->agent_socket = string_field(nc->root, "agentSocket", NULL, e, &bad);
	nc->log_file = string_field(nc->root, "logFile", NULL, e, &bad);
	nc->log_level = string_field(nc->root, "logLevel", "info", e, &bad);
	policy = string_field(nc->root, "failPolicy", "open", e, &bad);
	if (bad)
		return -1;
	if (!nc->agent_socket) {
		snprintf(nc->agent_socket_buf, sizeof(nc->agent_socket_buf), "%s/agent.sock",
			 nc->state_dir);
		nc->agent_socket = nc->agent_socket_buf;
	}
	if (!nc->log_file) {
		snprintf(nc->log_file_buf, sizeof(nc->log_file_buf), "%s/kmesh-cni.log",
			 nc->state_dir);
		nc->log_file = nc->log_file_buf;
	}
	if (!strcmp(policy, "open"))
		nc->fail_policy = KM_CNI_FAIL_OPEN;
	else if (!strcmp(policy, "closed"))
		nc->fail_policy = KM_CNI_FAIL_CLOSED;
	else
		return km_cni_fail(e, KM_CNI_E_CONFIG, "invalid network configuration",
				   "\"failPolicy\" is '%.32s'; it must be \"open\" or \"closed\"",
				   policy);
	nc->timeout_ms = 2000;
	v = json_object_get(nc->root, "timeoutMs");
	if (v) {
		if (!json_is_integer(v) || json_integer_value(v) < 100 ||
		    json_integer_value(v) > 30000)
			return km_cni_fail(e, KM_CNI_E_CONFIG, "invalid network configuration",
					   "\"timeoutMs\" must be an integer from 100 to 30000");
		nc->timeout_ms = (unsigned)json_integer_value(v);
	}
	v = json_object_get(nc->root, "prevResult");
	if (v && !json_is_object(v))
		return km_cni_fail(e, KM_CNI_E_CONFIG, "invalid prevResult",
				   "\"prevResult\" must be an object");
	nc->prev_result = v;
	return v ? pod_ips(nc, e) : 0;
}

void km_cni_netconf_free(struct km_cni_netconf *nc)
{
	json_decref(nc->root);
	nc->root = NULL;
	nc->prev_result = NULL;
}
