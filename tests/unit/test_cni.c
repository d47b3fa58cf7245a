/* test_cni.c — the CNI plugin's pure parts: the network configuration (bounds, versions,
 * prevResult addresses, our keys), CNI_ARGS, the enrollment rules in their order, the
 * conflist edits (append last, replace, idempotent, remove, refuse invalid lists), kubeconfig
 * reading from YAML and JSON (and refusing exec plugins), base64 encoding, and the counters
 * file kept between calls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "services/cni-plugin/cni_state.h"
#include "services/cni-agent/conflist.h"
#include "services/cni-agent/enroll_rule.h"
#include "services/cni-agent/pod_cache.h"
#include "services/cni-plugin/invocation.h"
#include "services/cni-plugin/netconf.h"
#include "shared/atomic_file.h"
#include "shared/base64.h"
#include "shared/kube/kubeconfig.h"
#include "shared/kube/yaml_json.h"

#define PREV "\"prevResult\": {\"cniVersion\": \"1.0.0\", \"interfaces\": [{\"name\": \"eth0\"}]," \
	     " \"ips\": [{\"address\": \"10.1.0.5/24\", \"interface\": 0}," \
	     " {\"address\": \"fd00::5/64\"}]}"

static int parse(const char *text, struct km_cni_netconf *nc, struct km_cni_error *e)
{
	memset(e, 0, sizeof(*e));
	return km_cni_netconf_parse(text, strlen(text), nc, e);
}

static void test_netconf_defaults_and_ips(void **state)
{
	struct km_cni_netconf nc;
	struct km_cni_error e;
	char buf[64];

	(void)state;
	assert_int_equal(parse("{\"cniVersion\": \"0.4.0\", \"name\": \"k8s\", \"type\": \"kmesh-cni\","
			       " \"kubeConfig\": \"/etc/kc\", " PREV "}", &nc, &e), 0);
	assert_string_equal(nc.cni_version, "0.4.0");
	/* an earlier version's keys (kubeConfig, mapWriterSocket) are taken and ignored */
	assert_string_equal(nc.agent_socket, "/run/kmesh/cni/agent.sock");
	assert_string_equal(nc.state_dir, "/run/kmesh/cni");
	assert_string_equal(nc.log_file, "/run/kmesh/cni/kmesh-cni.log");
	assert_int_equal(nc.fail_policy, KM_CNI_FAIL_OPEN);
	assert_int_equal(nc.timeout_ms, 2000);
	assert_non_null(nc.prev_result);
	assert_int_equal(nc.n_pod_ips, 2);
	assert_string_equal(km_addr_format(&nc.pod_ips[0], buf), "10.1.0.5");
	assert_string_equal(km_addr_format(&nc.pod_ips[1], buf), "fd00::5");
	km_cni_netconf_free(&nc);

	assert_int_equal(parse("{\"cniVersion\": \"1.0.0\", \"name\": \"n\", \"failPolicy\": \"closed\","
			       " \"timeoutMs\": 500, \"stateDir\": \"/s\", \"logFile\": \"stderr\"}",
			       &nc, &e), 0);
	assert_int_equal(nc.fail_policy, KM_CNI_FAIL_CLOSED);
	assert_int_equal(nc.timeout_ms, 500);
	assert_string_equal(nc.log_file, "stderr");
	assert_string_equal(nc.agent_socket, "/s/agent.sock"); /* follows the state dir */
	assert_null(nc.prev_result); /* absent is not a parse error; ADD refuses it later */
	km_cni_netconf_free(&nc);
}

static void test_netconf_errors(void **state)
{
	static const struct {
		const char *text;
		int code;
		const char *in_details;
	} cases[] = {
		{ "not json", KM_CNI_E_DECODE, "stdin" },
		{ "[1, 2]", KM_CNI_E_DECODE, "not an object" },
		{ "{\"name\": \"n\"}", KM_CNI_E_CONFIG, "cniVersion" },
		{ "{\"cniVersion\": \"2.0.0\", \"name\": \"n\"}", KM_CNI_E_VERSION, "supported" },
		{ "{\"cniVersion\": \"1.0.0\"}", KM_CNI_E_CONFIG, "name" },
		{ "{\"cniVersion\": \"1.0.0\", \"name\": \"n\", \"failPolicy\": \"maybe\"}",
		  KM_CNI_E_CONFIG, "failPolicy" },
		{ "{\"cniVersion\": \"1.0.0\", \"name\": \"n\", \"timeoutMs\": 5}", KM_CNI_E_CONFIG,
		  "timeoutMs" },
		{ "{\"cniVersion\": \"1.0.0\", \"name\": \"n\", \"agentSocket\": 3}",
		  KM_CNI_E_CONFIG, "agentSocket" },
		{ "{\"cniVersion\": \"1.0.0\", \"name\": \"n\", \"prevResult\": []}", KM_CNI_E_CONFIG,
		  "prevResult" },
		{ "{\"cniVersion\": \"1.0.0\", \"name\": \"n\", \"prevResult\": {\"ips\": "
		  "[{\"address\": \"10.0.0.1\"}]}}", KM_CNI_E_CONFIG, "address/prefix" },
		{ "{\"cniVersion\": \"1.0.0\", \"name\": \"n\", \"prevResult\": {\"ips\": "
		  "[{\"address\": \"nope/24\"}]}}", KM_CNI_E_CONFIG, "not an IP" },
		{ "{\"cniVersion\": \"1.0.0\", \"name\": \"n\", \"name\": \"m\"}", KM_CNI_E_DECODE,
		  "duplicate" },
	};
	struct km_cni_netconf nc;
	struct km_cni_error e;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(parse(cases[i].text, &nc, &e), -1);
		if (e.code != cases[i].code || !strstr(e.details, cases[i].in_details))
			fail_msg("case %zu: code %d details '%s'", i, e.code, e.details);
		km_cni_netconf_free(&nc);
	}
}

static void test_netconf_bounds(void **state)
{
	struct km_cni_netconf nc;
	struct km_cni_error e;
	size_t big = KM_CNI_MAX_CONFIG + 1, n;
	char *text = malloc(big + 1), *ips = malloc(40 * 40 + 200);

	(void)state;
	memset(text, ' ', big);
	text[big] = '\0';
	assert_int_equal(km_cni_netconf_parse(text, big, &nc, &e), -1);
	assert_int_equal(e.code, KM_CNI_E_DECODE);
	km_cni_netconf_free(&nc);
	/* more addresses than the map writer takes: the first 16 kept, the rest counted */
	n = (size_t)sprintf(ips, "{\"cniVersion\": \"1.0.0\", \"name\": \"n\", \"prevResult\": {\"ips\": [");
	for (int i = 0; i < 20; i++)
		n += (size_t)sprintf(ips + n, "%s{\"address\": \"10.0.0.%d/24\"}", i ? "," : "", i + 1);
	strcpy(ips + n, "]}}");
	assert_int_equal(parse(ips, &nc, &e), 0);
	assert_int_equal(nc.n_pod_ips, KM_CNI_MAX_POD_IPS);
	assert_int_equal(nc.ips_dropped, 4);
	km_cni_netconf_free(&nc);
	free(text);
	free(ips);
}

static void test_cni_args(void **state)
{
	struct km_cni_invocation inv;
	struct km_cni_error e;

	(void)state;
	assert_int_equal(km_cni_args_parse("IgnoreUnknown=1;K8S_POD_NAMESPACE=default;"
					   "K8S_POD_NAME=web-5d8f-x2;K8S_POD_INFRA_CONTAINER_ID=abc",
					   &inv, &e), 0);
	assert_string_equal(inv.pod_namespace, "default");
	assert_string_equal(inv.pod_name, "web-5d8f-x2");
	assert_int_equal(km_cni_args_parse("", &inv, &e), 0);
	assert_string_equal(inv.pod_name, "");
	assert_int_equal(km_cni_args_parse("K8S_POD_NAME=a;;K8S_POD_NAMESPACE=b;", &inv, &e), 0);
	assert_string_equal(inv.pod_namespace, "b");
	/* malformed, or names that could escape an API path */
	assert_int_equal(km_cni_args_parse("K8S_POD_NAME", &inv, &e), -1);
	assert_int_equal(e.code, KM_CNI_E_ENV);
	assert_int_equal(km_cni_args_parse("=x", &inv, &e), -1);
	assert_int_equal(km_cni_args_parse("K8S_POD_NAME=../../secrets", &inv, &e), -1);
	assert_int_equal(km_cni_args_parse("K8S_POD_NAMESPACE=a/b", &inv, &e), -1);
	assert_int_equal(km_cni_args_parse("K8S_POD_NAME=Upper", &inv, &e), -1);
}

static void test_invocation_env(void **state)
{
	struct km_cni_invocation inv;
	struct km_cni_error e;

	(void)state;
	unsetenv("CNI_COMMAND");
	assert_int_equal(km_cni_invocation_from_env(&inv, &e), -1);
	setenv("CNI_COMMAND", "VERSION", 1);
	assert_int_equal(km_cni_invocation_from_env(&inv, &e), 0);
	assert_int_equal(inv.command, KM_CNI_VERSION);
	setenv("CNI_COMMAND", "ADD", 1);
	setenv("CNI_CONTAINERID", "../etc", 1); /* names a state file: must not escape */
	assert_int_equal(km_cni_invocation_from_env(&inv, &e), -1);
	setenv("CNI_CONTAINERID", "abc_1.2-3", 1);
	unsetenv("CNI_NETNS");
	assert_int_equal(km_cni_invocation_from_env(&inv, &e), -1); /* ADD needs the netns */
	setenv("CNI_COMMAND", "DEL", 1);
	setenv("CNI_ARGS", "K8S_POD_NAME=p;K8S_POD_NAMESPACE=n", 1);
	assert_int_equal(km_cni_invocation_from_env(&inv, &e), 0); /* DEL does not */
	assert_string_equal(inv.container_id, "abc_1.2-3");
	assert_string_equal(inv.pod_name, "p");
	setenv("CNI_COMMAND", "GC", 1);
	assert_int_equal(km_cni_invocation_from_env(&inv, &e), -1);
	unsetenv("CNI_ARGS");
	unsetenv("CNI_COMMAND");
	unsetenv("CNI_CONTAINERID");
}

static json_t *obj(const char *text)
{
	json_t *j = json_loads(text, 0, NULL);

	assert_non_null(j);
	return j;
}

static void test_enroll_rules(void **state)
{
	static const struct {
		const char *pod, *ns;
		int enroll, needs_ns;
	} cases[] = {
		{ "{}", "{\"metadata\": {\"labels\": {\"istio.io/dataplane-mode\": \"Kmesh\"}}}", 1, 1 },
		{ "{}", "{\"metadata\": {\"labels\": {\"istio.io/dataplane-mode\": \"ambient\"}}}", 0, 1 },
		{ "{}", "{}", 0, 1 },
		{ "{\"metadata\": {\"labels\": {\"istio.io/dataplane-mode\": \"KMESH\"}}}", "{}", 1, 0 },
		{ "{\"metadata\": {\"labels\": {\"istio.io/dataplane-mode\": \"none\"}}}",
		  "{\"metadata\": {\"labels\": {\"istio.io/dataplane-mode\": \"Kmesh\"}}}", 0, 0 },
		/* a sidecar, the host network or a waypoint beat every label */
		{ "{\"metadata\": {\"annotations\": {\"sidecar.istio.io/status\": \"{}\"}, \"labels\":"
		  " {\"istio.io/dataplane-mode\": \"Kmesh\"}}}", "{}", 0, 0 },
		{ "{\"spec\": {\"hostNetwork\": true}, \"metadata\": {\"labels\":"
		  " {\"istio.io/dataplane-mode\": \"Kmesh\"}}}", "{}", 0, 0 },
		{ "{\"spec\": {\"hostNetwork\": false}}",
		  "{\"metadata\": {\"labels\": {\"istio.io/dataplane-mode\": \"kmesh\"}}}", 1, 1 },
		{ "{\"metadata\": {\"labels\": {\"gateway.istio.io/managed\": \"Istio.io-Mesh-Controller\","
		  " \"istio.io/dataplane-mode\": \"Kmesh\"}}}", "{}", 0, 0 },
		/* wrong types are not matches */
		{ "{\"metadata\": {\"labels\": {\"istio.io/dataplane-mode\": 1}}, \"spec\": {\"hostNetwork\": \"true\"}}",
		  "{\"metadata\": []}", 0, 1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *pod = obj(cases[i].pod), *ns = obj(cases[i].ns);
		int needs;
		struct km_enroll_decision d = km_enroll_decide(pod, ns, &needs);

		if (d.enroll != cases[i].enroll || needs != cases[i].needs_ns)
			fail_msg("case %zu: enroll %d (%s), needs namespace %d", i, d.enroll, d.why, needs);
		json_decref(pod);
		json_decref(ns);
	}
}

static const char *types(const json_t *list)
{
	static char out[256];
	json_t *p;
	size_t i, n = 0;

	out[0] = '\0';
	json_array_foreach(json_object_get(list, "plugins"), i, p)
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s", i ? "," : "",
				      json_string_value(json_object_get(p, "type")));
	return out;
}

static void test_conflist_edits(void **state)
{
	const char *text = "{\"cniVersion\": \"1.0.0\", \"name\": \"k8s\", \"plugins\": ["
			   "{\"type\": \"calico\"}, {\"type\": \"kmesh-cni\", \"old\": 1},"
			   " {\"type\": \"portmap\"}]}";
	json_t *entry = obj("{\"type\": \"kmesh-cni\", \"kubeconfig\": \"/k\"}");
	json_t *list, *with, *again, *without, *back;
	char err[256], *dumped;

	(void)state;
	list = km_conflist_parse(text, strlen(text), err, sizeof(err));
	assert_non_null(list);
	with = km_conflist_with_entry(list, entry);
	assert_non_null(with);
	assert_string_equal(types(with), "calico,portmap,kmesh-cni"); /* ours last, once */
	assert_true(json_equal(json_array_get(json_object_get(with, "plugins"), 2), entry));
	assert_string_equal(json_string_value(json_object_get(with, "name")), "k8s");
	again = km_conflist_with_entry(with, entry);
	assert_null(again); /* nothing to write */
	without = km_conflist_without_entry(with);
	assert_string_equal(types(without), "calico,portmap");
	assert_null(km_conflist_without_entry(without));
	/* the dump is valid, keeps key order, ends with a newline */
	dumped = km_conflist_dump(with);
	assert_non_null(dumped);
	assert_true(strstr(dumped, "\"cniVersion\"") < strstr(dumped, "\"plugins\""));
	assert_int_equal(dumped[strlen(dumped) - 1], '\n');
	back = km_conflist_parse(dumped, strlen(dumped), err, sizeof(err));
	assert_true(json_equal(back, with));
	free(dumped);
	json_decref(back);
	json_decref(list);
	json_decref(with);
	json_decref(without);
	json_decref(entry);
}

static void test_conflist_invalid(void **state)
{
	static const char *const bad[] = {
		"", "{", "[]", "{\"plugins\": []}", "{\"plugins\": {}}",
		"{\"plugins\": [{\"name\": \"no type\"}]}",
	};
	/* conflists, but not ones to chain into */
	static const char *const unusable[] = {
		"{\"plugins\": [{\"type\": \"kmesh-cni\"}]}", /* nothing to chain after */
		/* a runtime would hand us this version, which we refuse: every ADD would fail */
		"{\"cniVersion\": \"1.1.0\", \"plugins\": [{\"type\": \"calico\"}]}",
	};
	const char *stale = "{\"cniVersion\": \"1.1.0\", \"plugins\": [{\"type\": \"calico\"},"
			    " {\"type\": \"kmesh-cni\"}]}";
	char err[256];
	json_t *j, *without;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		j = km_conflist_parse(bad[i], strlen(bad[i]), err, sizeof(err));
		if (j)
			fail_msg("case %zu parsed", i);
		assert_true(err[0] != '\0');
	}
	for (size_t i = 0; i < sizeof(unusable) / sizeof(unusable[0]); i++) {
		j = km_conflist_parse(unusable[i], strlen(unusable[i]), err, sizeof(err));
		assert_non_null(j);
		err[0] = '\0';
		if (km_conflist_usable(j, err, sizeof(err)))
			fail_msg("case %zu usable", i);
		assert_true(err[0] != '\0');
		json_decref(j);
	}
	/* our entry still comes out of a list we would not chain into (uninstall) */
	j = km_conflist_parse(stale, strlen(stale), err, sizeof(err));
	without = km_conflist_without_entry(j);
	assert_string_equal(types(without), "calico");
	json_decref(without);
	json_decref(j);
}

static void test_conflist_find(void **state)
{
	char dir[] = "/tmp/kmesh-test-conflist-XXXXXX", path[512], earlier[64], err[256], f[600];

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(km_conflist_find(dir, NULL, path, sizeof(path), earlier, sizeof(earlier),
					  err, sizeof(err)), -2 /* -ENOENT */);
#define PUT(name, text)                                                                            \
	snprintf(f, sizeof(f), "%s/%s", dir, name);                                                \
	assert_int_equal(km_atomic_write(f, text, strlen(text), 0644, (uid_t)-1, (gid_t)-1, 0,    \
					 err, sizeof(err)), 0)
	PUT("05-broken.conflist", "{");
	PUT("06-newer.conflist", "{\"cniVersion\": \"1.1.0\", \"plugins\": [{\"type\": \"x\"}]}");
	PUT("07-old.conf", "{\"type\": \"bridge\"}");
	PUT("10-calico.conflist", "{\"plugins\": [{\"type\": \"calico\"}]}");
	PUT("20-other.conflist", "{\"plugins\": [{\"type\": \"other\"}]}");
	PUT(".hidden.conflist", "{\"plugins\": [{\"type\": \"hidden\"}]}");
	assert_int_equal(km_conflist_find(dir, NULL, path, sizeof(path), earlier, sizeof(earlier),
					  err, sizeof(err)), 0);
	assert_non_null(strstr(path, "/10-calico.conflist")); /* the first valid one */
	assert_string_equal(earlier, "07-old.conf");          /* a runtime would take this */
	assert_int_equal(km_conflist_find(dir, "20-other.conflist", path, sizeof(path), earlier,
					  sizeof(earlier), err, sizeof(err)), 0);
	assert_non_null(strstr(path, "/20-other.conflist"));
	assert_int_equal(km_conflist_find(dir, "05-broken.conflist", path, sizeof(path), earlier,
					  sizeof(earlier), err, sizeof(err)), -2);
	assert_non_null(strstr(err, "05-broken.conflist: not JSON")); /* says why */
	assert_int_equal(km_conflist_find(dir, "06-newer.conflist", path, sizeof(path), earlier,
					  sizeof(earlier), err, sizeof(err)), -2);
	assert_non_null(strstr(err, "cniVersion 1.1.0"));
#undef PUT
	snprintf(f, sizeof(f), "rm -rf %s", dir);
	assert_int_equal(system(f), 0);
}

static void test_kubeconfig_yaml(void **state)
{
	const char *yaml =
		"apiVersion: v1\n"
		"kind: Config\n"
		"clusters:\n"
		"- name: other\n"
		"  cluster: {server: 'https://wrong:1'}\n"
		"- name: prod\n"
		"  cluster:\n"
		"    server: https://10.0.0.1:6443\n"
		"    certificate-authority-data: LS0tLS1CRUdJTg==\n"
		"users:\n"
		"- name: me\n"
		"  user:\n"
		"    token: \"abc.def\"\n"
		"contexts:\n"
		"- name: c\n"
		"  context: {cluster: prod, user: me}\n"
		"current-context: c\n";
	struct km_kubeconfig kc;
	char err[256];

	(void)state;
	assert_int_equal(km_kubeconfig_parse(yaml, strlen(yaml), "/etc", &kc, err, sizeof(err)), 0);
	assert_string_equal(kc.server, "https://10.0.0.1:6443");
	assert_int_equal(kc.ca_pem_len, 10);
	assert_memory_equal(kc.ca_pem, "-----BEGIN", 10);
	assert_string_equal(kc.token, "abc.def");
	assert_null(kc.cert_pem);
	km_kubeconfig_free(&kc);
}

static void test_kubeconfig_errors(void **state)
{
	static const struct {
		const char *text, *in_err;
	} cases[] = {
		{ "a: [", "line" },
		{ "clusters: []\n", "current-context" },
		{ "current-context: x\ncontexts: []\n", "not in contexts" },
		{ "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n", "cluster" },
		{ "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
		  "clusters: [{name: c, cluster: {server: 'http://plain:80'}}]\n", "https" },
		{ "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
		  "clusters: [{name: c, cluster: {server: 'https://a:1'}}]\n"
		  "users: [{name: u, user: {exec: {command: aws}}}]\n", "exec" },
		{ "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
		  "clusters: [{name: c, cluster: {server: 'https://a:1', certificate-authority-data: '!!'}}]\n",
		  "base64" },
		{ "a: &x [1]\nb: *x\n", "aliases" },
	};
	struct km_kubeconfig kc;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		assert_int_equal(km_kubeconfig_parse(cases[i].text, strlen(cases[i].text), NULL, &kc,
						     err, sizeof(err)), -1);
		if (!strstr(err, cases[i].in_err))
			fail_msg("case %zu: '%s'", i, err);
		km_kubeconfig_free(&kc);
	}
}

static void test_yaml_scalars_and_depth(void **state)
{
	char err[256], deep[400];
	json_t *j = km_yaml_load("a: true\nb: 12\nc: '12'\nd: ~\ne: x y\nf: -3\n", 40, err, sizeof(err));

	(void)state;
	assert_non_null(j);
	assert_true(json_is_true(json_object_get(j, "a")));
	assert_int_equal(json_integer_value(json_object_get(j, "b")), 12);
	assert_string_equal(json_string_value(json_object_get(j, "c")), "12");
	assert_true(json_is_null(json_object_get(j, "d")));
	assert_string_equal(json_string_value(json_object_get(j, "e")), "x y");
	assert_int_equal(json_integer_value(json_object_get(j, "f")), -3);
	json_decref(j);
	memset(deep, '[', 100);
	deep[100] = '\0';
	assert_null(km_yaml_load(deep, 100, err, sizeof(err)));
	assert_non_null(strstr(err, "deep"));
}

static void test_base64_encode(void **state)
{
	static const char *const in[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *const out[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=",
					   "Zm9vYmFy" };
	char buf[32];
	uint8_t back[32];

	(void)state;
	for (size_t i = 0; i < 7; i++) {
		assert_int_equal(km_base64_encode((const uint8_t *)in[i], strlen(in[i]), buf),
				 strlen(out[i]));
		assert_string_equal(buf, out[i]);
		assert_int_equal(km_base64_decode(buf, strlen(buf), back, sizeof(back)), strlen(in[i]));
		assert_memory_equal(back, in[i], strlen(in[i]));
	}
}

static void test_state_and_metrics(void **state)
{
	char dir[] = "/tmp/kmesh-test-cnistate-XXXXXX", err[256], path[600], *text;
	uint64_t cookie = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(km_cni_state_init(dir, err, sizeof(err)), 0);
	assert_int_equal(km_cni_state_load(dir, "c1", &cookie), -2);
	assert_int_equal(km_cni_state_save(dir, "c1", 12345678901ull, "ns/p", err, sizeof(err)), 0);
	assert_int_equal(km_cni_state_load(dir, "c1", &cookie), 0);
	assert_int_equal(cookie, 12345678901ull);
	km_cni_state_remove(dir, "c1");
	assert_int_equal(km_cni_state_load(dir, "c1", &cookie), -2);

	km_cni_metric_inc(dir, "kmesh_cni_requests_total{command=\"ADD\",result=\"enrolled\"}");
	km_cni_metric_inc(dir, "kmesh_cni_fail_open_total{reason=\"kube_api\"}");
	km_cni_metric_inc(dir, "kmesh_cni_requests_total{command=\"DEL\",result=\"unenrolled\"}");
	km_cni_metric_inc(dir, "kmesh_cni_requests_total{command=\"ADD\",result=\"enrolled\"}");
	snprintf(path, sizeof(path), "%s/metrics.prom", dir);
	assert_true(km_read_file(path, 65536, &text, err, sizeof(err)) > 0);
	/* each metric one block under one TYPE line, series counted */
	assert_string_equal(text,
			    "# TYPE kmesh_cni_requests_total counter\n"
			    "kmesh_cni_requests_total{command=\"ADD\",result=\"enrolled\"} 2\n"
			    "kmesh_cni_requests_total{command=\"DEL\",result=\"unenrolled\"} 1\n"
			    "# TYPE kmesh_cni_fail_open_total counter\n"
			    "kmesh_cni_fail_open_total{reason=\"kube_api\"} 1\n");
	free(text);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	assert_int_equal(system(path), 0);
}

/* The agent keeps of each pod only what the rules and the annotation read (a node's pods are
 * few, but a pod object is kilobytes): labels, two annotations, hostNetwork, and for the
 * tunnel the service account and the pod's IPs; and the rules
 * decide the same on the trimmed copy. */
static void test_pod_cache_trim(void **state)
{
	json_t *pod = obj("{\"metadata\": {\"name\": \"p\", \"namespace\": \"n\", \"uid\": \"u\","
			  " \"labels\": {\"istio.io/dataplane-mode\": \"Kmesh\"},"
			  " \"annotations\": {\"sidecar.istio.io/status\": \"{}\", \"big\": \"x\","
			  " \"kmesh.net/redirection\": \"enabled\"}, \"managedFields\": [1, 2]},"
			  " \"spec\": {\"hostNetwork\": true, \"containers\": [{}],"
			  " \"serviceAccountName\": \"sa1\"},"
			  " \"status\": {\"phase\": \"Running\", \"podIPs\": [{\"ip\": \"10.1.0.7\"}]}}");
	json_t *t = km_pod_cache_trim(pod);
	struct km_enroll_decision a, b;
	int needs;

	(void)state;
	assert_non_null(t);
	assert_null(json_object_get(json_object_get(t, "status"), "phase"));
	/* the tunnel's: the pod's identity and addresses */
	assert_string_equal(json_string_value(json_object_get(json_object_get(t, "spec"),
							      "serviceAccountName")), "sa1");
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(
		json_object_get(t, "status"), "podIPs"), 0), "ip")), "10.1.0.7");
	assert_null(json_object_get(json_object_get(t, "metadata"), "managedFields"));
	assert_null(json_object_get(json_object_get(json_object_get(t, "metadata"), "annotations"),
				    "big"));
	assert_int_equal(json_object_size(json_object_get(json_object_get(t, "metadata"),
							  "annotations")), 2);
	assert_true(json_is_true(json_object_get(json_object_get(t, "spec"), "hostNetwork")));
	a = km_enroll_decide(pod, NULL, &needs);
	b = km_enroll_decide(t, NULL, &needs);
	assert_int_equal(a.enroll, b.enroll);
	assert_string_equal(a.why, b.why);
	json_decref(pod);
	json_decref(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_netconf_defaults_and_ips),
		cmocka_unit_test(test_netconf_errors),
		cmocka_unit_test(test_pod_cache_trim),
		cmocka_unit_test(test_netconf_bounds),
		cmocka_unit_test(test_cni_args),
		cmocka_unit_test(test_invocation_env),
		cmocka_unit_test(test_enroll_rules),
		cmocka_unit_test(test_conflist_edits),
		cmocka_unit_test(test_conflist_invalid),
		cmocka_unit_test(test_conflist_find),
		cmocka_unit_test(test_kubeconfig_yaml),
		cmocka_unit_test(test_kubeconfig_errors),
		cmocka_unit_test(test_yaml_scalars_and_depth),
		cmocka_unit_test(test_base64_encode),
		cmocka_unit_test(test_state_and_metrics),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
