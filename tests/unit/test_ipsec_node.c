/* test_ipsec_node.c — a node's IPsec description from outside input: KmeshNodeInfo objects as
 * the Kubernetes API returns them (good, round-tripped through this node's own object, and bad
 * in each field, refused naming the object and the field), and pod CIDRs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "services/ipsec-agent/node_info.h"
#include "services/ipsec-agent/node_spec.h"
#include "shared/addr.h"

static json_t *obj(const char *text)
{
	json_error_t e;
	json_t *o = json_loads(text, 0, &e);

	if (!o)
		fail_msg("test JSON: %s", e.text);
	return o;
}

static void test_parse_and_build(void **state)
{
	json_t *o = obj("{\"apiVersion\": \"kmesh.net/v1alpha1\", \"kind\": \"KmeshNodeInfo\","
			" \"metadata\": {\"name\": \"node-b\", \"namespace\": \"kmesh-system\", \"resourceVersion\": \"7\"},"
			" \"spec\": {\"spi\": 3, \"addresses\": [\"10.0.0.2\", \"fd00::2\"],"
			" \"bootID\": \"bbbbbbbb-1111-2222-3333-444444444444\","
			" \"podCIDRS\": [\"10.244.2.0/24\", \"fd10:2::/64\"]}, \"status\": {}}");
	struct km_ipsec_node n, again;
	char err[256], net[KM_ADDR_STRLEN];
	json_t *built;

	(void)state;
	assert_int_equal(km_node_info_parse(o, &n, err, sizeof(err)), 0);
	assert_string_equal(n.name, "node-b");
	assert_int_equal(n.spi, 3);
	assert_int_equal(n.n_addrs, 2);
	assert_string_equal(n.addrs[1], "fd00::2"); /* the text as given: it goes into the key */
	assert_string_equal(n.boot_id, "bbbbbbbb-1111-2222-3333-444444444444");
	assert_int_equal(n.n_cidrs, 2);
	assert_string_equal(km_addr_format(&n.cidrs[0].net, net), "10.244.2.0");
	assert_int_equal(n.cidrs[0].len, 24);
	assert_int_equal(n.cidrs[1].len, 64);
	json_decref(o);

	built = km_node_info_build(&n);
	assert_non_null(built);
	assert_string_equal(json_string_value(json_object_get(built, "apiVersion")), "kmesh.net/v1alpha1");
	assert_string_equal(json_string_value(json_object_get(json_object_get(built, "metadata"),
							      "namespace")), "kmesh-system");
	assert_non_null(json_object_get(json_object_get(built, "spec"), "podCIDRS")); /* Kmesh's "S" */
	assert_int_equal(km_node_info_parse(built, &again, err, sizeof(err)), 0);
	assert_memory_equal(&n, &again, sizeof(n));
	json_decref(built);
}

static void test_parse_bad(void **state)
{
	static const struct {
		const char *spec;
		const char *says;
	} cases[] = {
		{ "\"spi\": \"3\", \"addresses\": [\"10.0.0.2\"], \"bootID\": \"b\"", "spec.spi must be an integer" },
		{ "\"spi\": -1, \"addresses\": [\"10.0.0.2\"], \"bootID\": \"b\"", "spec.spi" },
		{ "\"spi\": 1, \"addresses\": \"10.0.0.2\", \"bootID\": \"b\"", "lists of strings" },
		{ "\"spi\": 1, \"addresses\": [1], \"bootID\": \"b\"", "lists of strings" },
		{ "\"spi\": 1, \"addresses\": [\"a\", \"b\", \"c\", \"d\", \"e\"], \"bootID\": \"b\"", "5 addresses, 1-4 needed" },
		{ "\"spi\": 1, \"addresses\": [], \"bootID\": \"b\"", "0 addresses, 1-4 needed" },
		{ "\"spi\": 1, \"addresses\": [\"10.0.0.256\"], \"bootID\": \"b\"", "'10.0.0.256' is not an IP address" },
		{ "\"spi\": 1, \"addresses\": [\"10.0.0.2\"]", "spec.bootID must be a string" },
		{ "\"spi\": 1, \"addresses\": [\"10.0.0.2\"], \"bootID\": \"short\"", "Kmesh panics on a shorter one" },
		{ "\"spi\": 1, \"addresses\": [\"0.0.0.0\"], \"bootID\": \"b\"", "not a unicast address" },
		{ "\"spi\": 1, \"addresses\": [\"127.0.0.1\"], \"bootID\": \"b\"", "not a unicast address" },
		{ "\"spi\": 1, \"addresses\": [\"ff02::1\"], \"bootID\": \"b\"", "not a unicast address" },
		{ "\"spi\": 1, \"addresses\": [\"10.0.0.2\"], \"bootID\": \"bbbbbbbb-1111-2222-3333-444444444444\", \"podCIDRS\": [\"0.0.0.0/0\"]", "shorter than /8" },
		{ "\"spi\": 1, \"addresses\": [\"10.0.0.2\"], \"bootID\": \"bbbbbbbb-1111-2222-3333-444444444444\", \"podCIDRS\": [\"10.244.2.1/24\"]", "host bits set" },
		{ "\"spi\": 1, \"addresses\": [\"10.0.0.2\"], \"bootID\": \"bbbbbbbb-1111-2222-3333-444444444444\", \"podCIDRS\": [\"10.244.2.0/33\"]", "longer than the address" },
		{ "\"spi\": 1, \"addresses\": [\"10.0.0.2\"], \"bootID\": \"bbbbbbbb-1111-2222-3333-444444444444\", \"podCIDRS\": [\"10.244.2.0\"]", "not a CIDR" },
		{ "\"spi\": 1, \"addresses\": [\"10.0.0.2\"], \"bootID\": \"bbbbbbbb-1111-2222-3333-444444444444\", \"podCIDRS\": [\"10.244.2.0/\"]", "not a CIDR" },
	};
	struct km_ipsec_node n;
	char text[512], err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *o;

		snprintf(text, sizeof(text), "{\"metadata\": {\"name\": \"node-z\"}, \"spec\": {%s}}",
			 cases[i].spec);
		o = obj(text);
		if (km_node_info_parse(o, &n, err, sizeof(err)) != -1)
			fail_msg("case %zu accepted", i);
		if (!strstr(err, cases[i].says) || !strstr(err, "node-z"))
			fail_msg("case %zu: '%s' does not name node-z and say '%s'", i, err, cases[i].says);
		json_decref(o);
	}
	{
		json_t *o = obj("{\"spec\": {}}");

		assert_int_equal(km_node_info_parse(o, &n, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "without metadata.name"));
		json_decref(o);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_and_build),
		cmocka_unit_test(test_parse_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
