/* node_info.c — see node_info.h. */
#include "services/ipsec-agent/node_info.h"

#include <stdio.h>
#include <string.h>

#include "services/ipsec-agent/node_spec.h"
#include "shared/addr.h"
#include "shared/errbuf.h"

/* A JSON array of strings into at most max pointers (into the JSON); -1 if not that. */
static long strings(const json_t *arr, const char **out, size_t max)
{
	size_t i;
	json_t *v;

	if (!arr)
		return 0;
	if (!json_is_array(arr) || json_array_size(arr) > max)
		return -1;
	json_array_foreach(arr, i, v) {
		if (!json_is_string(v))
			return -1;
		out[i] = json_string_value(v);
	}
	return (long)json_array_size(arr);
}

int km_node_info_parse(const json_t *obj, struct km_ipsec_node *out, char *err, size_t errlen)
{
	Kmesh__Ipc__IpsecNode m = KMESH__IPC__IPSEC_NODE__INIT;
	const json_t *meta = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
	const json_t *name = json_object_get(meta, "name"), *spi = json_object_get(spec, "spi");
	const json_t *boot = json_object_get(spec, "bootID");
	const char *addrs[KM_IPSEC_ADDRS_MAX + 1], *cidrs[KM_IPSEC_CIDRS_MAX + 1];
	long na, nc;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(obj) || !json_is_string(name))
		return km_errf(err, errlen, "a KmeshNodeInfo without metadata.name"), -1;
	if (!json_is_object(spec))
		return km_errf(err, errlen, "KmeshNodeInfo %.60s: no spec", json_string_value(name)), -1;
	if (!json_is_integer(spi) || json_integer_value(spi) < 0 ||
	    json_integer_value(spi) > 0xffffffffLL)
		return km_errf(err, errlen, "KmeshNodeInfo %.60s: spec.spi must be an integer from 0 to "
			       "4294967295", json_string_value(name)), -1;
	na = strings(json_object_get(spec, "addresses"), addrs, KM_IPSEC_ADDRS_MAX + 1);
	nc = strings(json_object_get(spec, "podCIDRS"), cidrs, KM_IPSEC_CIDRS_MAX + 1);
	if (na < 0 || nc < 0)
		return km_errf(err, errlen, "KmeshNodeInfo %.60s: spec.addresses and spec.podCIDRS "
			       "must be lists of strings (at most %d)", json_string_value(name),
			       KM_IPSEC_ADDRS_MAX), -1;
	if (!json_is_string(boot))
		return km_errf(err, errlen, "KmeshNodeInfo %.60s: spec.bootID must be a string",
			       json_string_value(name)), -1;
	m.name = (char *)json_string_value(name);
	m.spi = (uint32_t)json_integer_value(spi);
	m.addresses = (char **)addrs;
	m.n_addresses = (size_t)na;
	m.pod_cidrs = (char **)cidrs;
	m.n_pod_cidrs = (size_t)nc;
	m.boot_id = (char *)json_string_value(boot);
	return km_ipsec_node_from_msg(&m, out, err, errlen);
}

json_t *km_node_info_build(const struct km_ipsec_node *self)
{
	json_t *addrs = json_array(), *cidrs = json_array();
	char net[KM_ADDR_STRLEN], text[KM_ADDR_STRLEN + 8];

	for (size_t i = 0; addrs && i < self->n_addrs; i++)
		json_array_append_new(addrs, json_string(self->addrs[i]));
	for (size_t i = 0; cidrs && i < self->n_cidrs; i++) {
		snprintf(text, sizeof(text), "%s/%u", km_addr_format(&self->cidrs[i].net, net),
			 self->cidrs[i].len);
		json_array_append_new(cidrs, json_string(text));
	}
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:I, s:o, s:s, s:o}}", "apiVersion",
			 KM_NODE_INFO_API, "kind", "KmeshNodeInfo", "metadata", "name", self->name,
			 "namespace", KM_NODE_INFO_NAMESPACE, "spec", "spi", (json_int_t)self->spi,
			 "addresses", addrs, "bootID", self->boot_id, "podCIDRS", cidrs);
}
