/* fuzz_cni_config.c — libFuzzer target for what a container runtime hands kmesh-cni: arbitrary
 * bytes as the network configuration on stdin. A configuration that parses must satisfy the
 * parser's promises (a supported version, bounded pod IPs, a valid fail policy), and the
 * conflist code must take the same bytes as a list without crashing, and, when it accepts
 * them, edit and dump them into a list that parses back with our entry last. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "services/cni-agent/conflist.h"
#include "services/cni-plugin/netconf.h"

static void netconf(const uint8_t *data, size_t size)
{
	struct km_cni_netconf nc;
	struct km_cni_error e = { 0 };

	if (km_cni_netconf_parse((const char *)data, size, &nc, &e) == 0) {
		if (!km_cni_version_supported(nc.cni_version) || !nc.name ||
		    nc.n_pod_ips > KM_CNI_MAX_POD_IPS || nc.timeout_ms < 100 ||
		    (nc.fail_policy != KM_CNI_FAIL_OPEN && nc.fail_policy != KM_CNI_FAIL_CLOSED))
			abort();
	} else if (e.code == 0 || !e.msg[0]) {
		abort(); /* every refusal says why */
	}
	km_cni_netconf_free(&nc);
}

static void conflist(const uint8_t *data, size_t size)
{
	char err[256], *text;
	json_t *list = km_conflist_parse((const char *)data, size, err, sizeof(err)), *entry, *with,
	       *back;
	size_t n;

	if (!list)
		return;
	entry = json_pack("{s:s, s:s}", "type", KM_CNI_PLUGIN_TYPE, "kubeconfig", "/k");
	/* the installer only chains into a usable list; removal takes any */
	with = km_conflist_usable(list, err, sizeof(err)) ? km_conflist_with_entry(list, entry) : NULL;
	text = km_conflist_dump(with ? with : list);
	if (!text)
		abort(); /* a valid list, edited, must dump to a valid list */
	back = km_conflist_parse(text, strlen(text), err, sizeof(err));
	if (!back)
		abort();
	n = json_array_size(json_object_get(back, "plugins"));
	if (with && !json_equal(json_array_get(json_object_get(back, "plugins"), n - 1), entry))
		abort(); /* our entry last */
	free(text);
	json_decref(back);
	json_decref(with);
	json_decref(entry);
	json_decref(list);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	netconf(data, size);
	conflist(data, size);
	return 0;
}
