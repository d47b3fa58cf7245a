/* test_inject.c — kmeshctl inject's events in the xDS agent: every field of an Authorization's
 * JSON mapped onto the message istiod would send; an event's services, workloads and policies
 * applied through the xDS path with the inject version, removals by name, a bad resource
 * refused by name while the others apply, and events that cannot be read refused whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "services/xds-agent/sources/inject.h"
#include "services/xds-agent/sources/json_pb.h"
#include "services/xds-agent/sources/policy_json.h"
#include "shared/log.h"

static Kmesh__Security__Authorization *policy(const char *text, char *err)
{
	json_error_t jerr;
	json_t *o = json_loads(text, 0, &jerr);
	Kmesh__Security__Authorization *p = NULL;
	int rc;

	assert_non_null(o);
	rc = km_json_policy_pb(o, "p", &p, err);
	json_decref(o);
	if (rc != 0) {
		if (p)
			kmesh__security__authorization__free_unpacked(p, NULL);
		return NULL;
	}
	return p;
}

static void test_policy_fields(void **state)
{
	char err[KM_JERR_LEN];
	Kmesh__Security__Authorization *p = policy(
		"{\"name\": \"deny\", \"namespace\": \"web\", \"scope\": \"WORKLOAD_SELECTOR\","
		" \"action\": 1, \"dry_run\": true, \"rules\": [{\"clauses\": [{\"matches\": [{"
		" \"namespaces\": [{\"exact\": \"a\"}, {\"prefix\": \"b\"}],"
		" \"notNamespaces\": [{\"suffix\": \"c\"}],"
		" \"principals\": [{\"presence\": {}}],"
		" \"not_principals\": [{\"exact\": \"d\"}],"
		" \"sourceIps\": [{\"address\": \"10.1.0.0\", \"length\": 16}],"
		" \"notSourceIps\": [{\"address\": \"CgAAAQ==\", \"length\": \"32\"}],"
		" \"destinationIps\": [{\"address\": \"fd00::1\", \"length\": 128}],"
		" \"notDestinationIps\": [],"
		" \"destinationPorts\": [8080, \"9090\"],"
		" \"notDestinationPorts\": [22],"
		" \"serviceAccounts\": [{\"namespace\": \"n\", \"serviceAccount\": \"s\"}],"
		" \"notServiceAccounts\": [{\"namespace\": \"m\", \"service_account\": \"t\"}]}]},"
		" {\"matches\": []}]}, {}]}", err);
	const Kmesh__Security__Match *m;

	(void)state;
	assert_non_null(p);
	assert_string_equal(p->name, "deny");
	assert_string_equal(p->namespace_, "web");
	assert_int_equal(p->scope, KMESH__SECURITY__SCOPE__WORKLOAD_SELECTOR);
	assert_int_equal(p->action, KMESH__SECURITY__ACTION__DENY);
	assert_true(p->dry_run);
	assert_int_equal(p->n_rules, 2);
	assert_int_equal(p->rules[0]->n_clauses, 2);
	assert_int_equal(p->rules[1]->n_clauses, 0);
	assert_int_equal(p->rules[0]->clauses[1]->n_matches, 0);
	m = p->rules[0]->clauses[0]->matches[0];
	assert_int_equal(m->n_namespaces, 2);
	assert_int_equal(m->namespaces[0]->match_type_case, KMESH__SECURITY__STRING_MATCH__MATCH_TYPE_EXACT);
	assert_string_equal(m->namespaces[0]->exact, "a");
	assert_int_equal(m->namespaces[1]->match_type_case, KMESH__SECURITY__STRING_MATCH__MATCH_TYPE_PREFIX);
	assert_string_equal(m->namespaces[1]->prefix, "b");
	assert_int_equal(m->not_namespaces[0]->match_type_case, KMESH__SECURITY__STRING_MATCH__MATCH_TYPE_SUFFIX);
	assert_string_equal(m->not_namespaces[0]->suffix, "c");
	assert_int_equal(m->principals[0]->match_type_case, KMESH__SECURITY__STRING_MATCH__MATCH_TYPE_PRESENCE);
	assert_string_equal(m->not_principals[0]->exact, "d");
	assert_int_equal(m->source_ips[0]->address.len, 4);
	assert_memory_equal(m->source_ips[0]->address.data, "\x0a\x01\x00\x00", 4);
	assert_int_equal(m->source_ips[0]->length, 16);
	assert_memory_equal(m->not_source_ips[0]->address.data, "\x0a\x00\x00\x01", 4); /* base64 */
	assert_int_equal(m->not_source_ips[0]->length, 32);
	assert_int_equal(m->destination_ips[0]->address.len, 16);
	assert_int_equal(m->n_not_destination_ips, 0);
	assert_int_equal(m->n_destination_ports, 2);
	assert_int_equal(m->destination_ports[0], 8080);
	assert_int_equal(m->destination_ports[1], 9090);
	assert_int_equal(m->not_destination_ports[0], 22);
	assert_string_equal(m->service_accounts[0]->namespace_, "n");
	assert_string_equal(m->service_accounts[0]->serviceaccount, "s");
	assert_string_equal(m->not_service_accounts[0]->serviceaccount, "t");
	kmesh__security__authorization__free_unpacked(p, NULL);
}

static void test_policy_errors(void **state)
{
	static const struct {
		const char *json, *error;
	} cases[] = {
		{ "[]", "p: must be an object" },
		{ "{\"scope\": \"CLUSTER\"}", "p: 'scope' is not a known value" },
		{ "{\"action\": 2}", "p: 'action' is not a known value" },
		{ "{\"dryRun\": \"yes\"}", "p: 'dryRun' must be true or false" },
		{ "{\"rules\": {}}", "p: 'rules' must be an array" },
		{ "{\"rules\": [{\"clauses\": [{\"matches\": [{\"namespaces\": [{\"exact\": \"a\", \"prefix\": \"b\"}]}]}]}]}",
		  "p.rules[0].clauses[0].matches[0].namespaces[0]: must be an object with one of" },
		{ "{\"rules\": [{\"clauses\": [{\"matches\": [{\"principals\": [{\"regex\": \"a\"}]}]}]}]}",
		  "p.rules[0].clauses[0].matches[0].principals[0]: must hold one of" },
		{ "{\"rules\": [{\"clauses\": [{\"matches\": [{\"destinationPorts\": [1, -1]}]}]}]}",
		  "p.rules[0].clauses[0].matches[0].destinationPorts[1]: 'port' = -1 is out of range" },
		{ "{\"rules\": [{\"clauses\": [{\"matches\": [{\"sourceIps\": [{\"length\": 8}]}]}]}]}",
		  "p.rules[0].clauses[0].matches[0].sourceIps[0]: must be an object with an 'address'" },
		{ "{\"rules\": [{\"clauses\": [{\"matches\": [{\"serviceAccounts\": [{\"namespace\": 1}]}]}]}]}",
		  "p.rules[0].clauses[0].matches[0].serviceAccounts[0]: 'namespace' must be a string" },
	};
	char err[KM_JERR_LEN];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		assert_null(policy(cases[i].json, err));
		if (strncmp(err, cases[i].error, strlen(cases[i].error)) != 0)
			fail_msg("case %zu: got '%s', want '%s...'", i, err, cases[i].error);
	}
}

struct versions {
	char names[8][128], versions[8][32];
	size_t n;
};

static void note_version(void *arg, const char *name, const char *version)
{
	struct versions *v = arg;

	if (v->n < 8) {
		snprintf(v->names[v->n], sizeof(v->names[0]), "%s", name);
		snprintf(v->versions[v->n], sizeof(v->versions[0]), "%s", version);
		v->n++;
	}
}

struct agent {
	struct km_oplist ops;
	struct km_model m;
	struct km_policy_store ps;
};

static int inject(struct agent *a, const char *json, struct km_inject_result *r)
{
	return km_inject_apply(&a->m, &a->ps, json, strlen(json), r);
}

static void test_event_applied_as_from_istiod(void **state)
{
	struct agent a;
	struct km_inject_result r;
	struct versions v = { 0 };

	(void)state;
	km_log_set_level(KM_LOG_ERROR);
	km_oplist_init(&a.ops);
	km_model_init(&a.m, &a.ops, NULL);
	km_policy_store_init(&a.ps);
	assert_int_equal(inject(&a,
				"{\"resources\": ["
				" {\"service\": {\"name\": \"web\", \"namespace\": \"t\", \"hostname\": \"web.t\","
				"  \"addresses\": [{\"address\": \"10.96.0.1\"}], \"ports\": [{\"servicePort\": 80}]}},"
				" {\"workload\": {\"uid\": \"w1\", \"addresses\": [\"10.0.0.1\"], \"services\": {\"t/web.t\": {}}}},"
				" {\"authorization\": {\"name\": \"p\", \"namespace\": \"t\", \"action\": \"DENY\"}}]}",
				&r),
			 0);
	assert_int_equal(r.applied, 3);
	assert_int_equal(r.rejected, 0);
	assert_non_null(strstr(r.message, "Address: 2 applied, 0 refused, 0 removed"));
	assert_non_null(strstr(r.message, "Authorization: 1 applied, 0 refused, 0 removed"));
	assert_non_null(km_model_find_service(&a.m, "t/web.t"));
	assert_non_null(km_model_find_workload(&a.m, "w1"));
	assert_int_equal(km_model_endpoints(&a.m, "t/web.t", 0, &(const uint32_t *){ NULL }), 1);
	assert_true(a.ops.n > 0); /* the table ops, left for the caller to send */
	assert_non_null(km_policy_store_find(&a.ps, "t/p"));
	/* the version istiod is told on a reconnect, so it sends its own again */
	assert_int_equal(km_model_each_version(&a.m, note_version, &v), 2);
	assert_string_equal(v.versions[0], KM_INJECT_VERSION);
	assert_string_equal(v.versions[1], KM_INJECT_VERSION);

	/* a bad resource refused by name, the others applied; removals by name */
	assert_int_equal(inject(&a,
				"{\"resources\": [{\"workload\": {\"uid\": \"bad\", \"addresses\": [\"1.2.3\"]}},"
				" {\"workload\": {\"uid\": \"w2\", \"addresses\": [\"10.0.0.2\"]}},"
				" {\"workload\": {\"uid\": \"w3\", \"addresses\": [\"10.0.0.3\"]}, \"service\": {}},"
				" {\"service\": {\"name\": \"x\", \"hostname\": \"x.t\"}}],"
				" \"removedResources\": [\"w1\", \"never\"], \"removedPolicies\": [\"t/p\"]}",
				&r),
			 0);
	assert_int_equal(r.applied, 1);
	assert_int_equal(r.removed, 2);
	assert_int_equal(r.rejected, 3);
	assert_non_null(strstr(r.message, "bad: resources[0].workload.addresses[0]: '1.2.3' is neither"));
	assert_non_null(strstr(r.message, "2 refused as JSON"));
	assert_non_null(strstr(r.message, "Address: 1 applied, 1 refused, 1 removed")); /* x.t: no namespace */
	assert_null(km_model_find_workload(&a.m, "w1"));
	assert_non_null(km_model_find_workload(&a.m, "w2"));
	assert_null(km_model_find_workload(&a.m, "w3"));
	assert_null(km_policy_store_find(&a.ps, "t/p"));

	/* events that cannot be read change nothing */
	assert_int_equal(inject(&a, "{\"resources\": [", &r), -1);
	assert_non_null(strstr(r.message, "not valid JSON"));
	assert_int_equal(inject(&a, "[]", &r), -1);
	assert_non_null(strstr(r.message, "must be an object"));
	assert_int_equal(inject(&a, "{\"removed\": []}", &r), -1);
	assert_non_null(strstr(r.message, "unknown key 'removed'"));
	assert_int_equal(inject(&a, "{\"removedResources\": [1]}", &r), -1);
	assert_non_null(strstr(r.message, "'removedResources'[0] must be a string"));
	assert_int_equal(inject(&a, "{\"resources\": [{\"authorization\": {}, \"workload\": {}}]}", &r), 0);
	assert_non_null(strstr(r.message, "'authorization' goes alone"));
	assert_int_equal(inject(&a, "{}", &r), 0);
	assert_string_equal(r.message, "nothing to apply");
	assert_non_null(km_model_find_workload(&a.m, "w2"));

	km_policy_store_free(&a.ps);
	km_model_free(&a.m);
	km_oplist_free(&a.ops);
	km_log_set_level(KM_LOG_INFO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy_fields),
		cmocka_unit_test(test_policy_errors),
		cmocka_unit_test(test_event_applied_as_from_istiod),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
