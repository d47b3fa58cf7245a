/* test_config.c — the embedded configuration: proto-JSON decoding (both field spellings, enums
 * by name or number, IP text or base64, bounds and clear errors) and applying successive file
 * snapshots to the model as deltas (removals, unchanged files, rejected resources kept). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "services/xds-agent/sources/resource_json.h"
#include "services/xds-agent/sources/snapshot.h"
#include "shared/addr.h"
#include "shared/base64.h"
#include "shared/log.h"

#define WEB "{\"service\": {\"name\": \"web\", \"namespace\": \"demo\", \"hostname\": \"web.demo\"," \
	    " \"addresses\": [{\"network\": \"\", \"address\": \"10.96.0.10\"}]," \
	    " \"ports\": [{\"servicePort\": 80, \"targetPort\": 8080}]}}"
#define POD(n, ip, status)                                                                         \
	"{\"workload\": {\"uid\": \"Kubernetes//Pod/demo/" n "\", \"addresses\": [\"" ip "\"],"    \
	" \"status\": \"" status "\", \"services\": {\"demo/web.demo\": {}}}}"

static int decode(const char *doc, struct km_resource_set *set, char *err)
{
	return km_json_decode_document(doc, strlen(doc), set, err, 256);
}

static void test_decode_both_spellings(void **state)
{
	struct km_resource_set set;
	char err[256];
	const char *doc =
		"[{\"service\": {\"namespace\": \"ns\", \"hostname\": \"h\", \"ports\": [{\"service_port\": \"81\","
		" \"target_port\": 9000}, {\"servicePort\": 82}], \"load_balancing\": {\"mode\": 0}}},"
		" {\"workload\": {\"uid\": \"u1\", \"addresses\": [\"CgAAAQ==\", \"fd00::1\"], \"status\": 1,"
		"  \"services\": {\"ns/b\": {}, \"ns/a\": {}}, \"unknownField\": {\"x\": 1}}}]";

	(void)state;
	assert_int_equal(decode(doc, &set, err), 0);
	assert_int_equal(set.n_errors, 0);
	assert_int_equal(set.n_services, 1);
	assert_string_equal(set.services[0]->name, "ns/h");
	assert_int_equal(set.services[0]->n_ports, 2);
	assert_int_equal(set.services[0]->ports[0].service_port, 81);
	assert_int_equal(set.services[0]->ports[0].target_port, 9000);
	assert_int_equal(set.services[0]->ports[1].target_port, 0);
	assert_int_equal(set.n_workloads, 1);
	{
		char buf[KM_ADDR_STRLEN];
		struct km_workload_res *w = set.workloads[0];

		assert_int_equal(w->n_addrs, 2);
		assert_string_equal(km_addr_format(&w->addrs[0], buf), "10.0.0.1"); /* base64 bytes */
		assert_string_equal(km_addr_format(&w->addrs[1], buf), "fd00::1");
		assert_int_equal(w->status, KM_WORKLOAD_UNHEALTHY);
		assert_int_equal(w->n_services, 2);
		assert_string_equal(w->services[0].service, "ns/a"); /* sorted */
	}
	km_resource_set_free(&set);
}

/* A resource kept by the model is packed into one allocation: every field survives (ASan
 * checks the block is sized exactly), and packing twice is a no-op. */
static void test_pack_keeps_every_field(void **state)
{
	struct km_resource_set a, b;
	char err[256];
	const char *doc =
		"[{\"service\": {\"name\": \"web\", \"namespace\": \"ns\", \"hostname\": \"web.ns\","
		"  \"addresses\": [{\"address\": \"10.96.0.1\"}, {\"address\": \"fd00::10\"}],"
		"  \"ports\": [{\"servicePort\": 80, \"targetPort\": 8080}, {\"servicePort\": 443}],"
		"  \"waypoint\": {\"hostname\": {\"namespace\": \"ns\", \"hostname\": \"wp\"}, \"hboneMtlsPort\": 15008},"
		"  \"loadBalancing\": {\"mode\": \"FAILOVER\", \"routingPreference\": [\"ZONE\", \"NODE\"]}}},"
		" {\"workload\": {\"uid\": \"u1\", \"name\": \"p\", \"namespace\": \"ns\", \"node\": \"n1\","
		"  \"network\": \"net\", \"clusterId\": \"c\", \"trustDomain\": \"td\", \"serviceAccount\": \"sa\","
		"  \"locality\": {\"region\": \"r\", \"zone\": \"z\", \"subzone\": \"s\"},"
		"  \"addresses\": [\"10.0.0.1\", \"fd00::1\"], \"authorizationPolicies\": [\"ns/p1\", \"ns/p2\"],"
		"  \"waypoint\": {\"address\": {\"address\": \"10.0.0.9\"}, \"hboneMtlsPort\": 15008},"
		"  \"services\": {\"ns/b\": {\"ports\": [{\"servicePort\": 80, \"targetPort\": 9090}]}, \"ns/a\": {}}}}]";
	struct km_workload_res *w;
	struct km_service_res *sv;

	(void)state;
	assert_int_equal(decode(doc, &a, err), 0);
	assert_int_equal(decode(doc, &b, err), 0);
	assert_int_equal(a.n_errors + b.n_errors, 0);
	sv = km_service_res_pack(a.services[0]);
	a.services[0] = sv;
	assert_true(sv->packed);
	assert_true(km_service_res_pack(sv) == sv);
	assert_true(km_service_res_equal(sv, b.services[0]));
	assert_string_equal(sv->svc_name, "web");
	assert_string_equal(sv->waypoint.service, "ns/wp");
	w = km_workload_res_pack(a.workloads[0]);
	a.workloads[0] = w;
	assert_true(w->packed);
	assert_true(km_workload_res_equal(w, b.workloads[0]));
	assert_string_equal(w->name, "p");
	assert_string_equal(w->where->subzone, "s");
	assert_string_equal(w->policies[1], "ns/p2");
	assert_string_equal(w->services[1].service, "ns/b");
	assert_int_equal(km_membership_ports(w, &w->services[1])[0].target_port, 9090);
	assert_non_null(km_workload_membership(w, "ns/a"));
	km_resource_set_free(&a);
	km_resource_set_free(&b);
}

/* A packed workload whose uid is "<prefix>/<name>" (istiod's Kubernetes uids are
 * "<cluster>//Pod/<ns>/<name>") keeps the prefix interned, shared by every such workload of the
 * namespace, and its name once; any other uid is kept whole. Either way the uid reads the same,
 * compares the same, and a copy of the workload has it whole. */
static struct km_workload_res *packed(const char *uid, const char *name)
{
	struct km_workload_res *w = km_workload_res_new();

	w->uid_text = strdup(uid);
	w->name = strdup(name);
	w = km_workload_res_pack(w);
	assert_true(w->packed);
	return w;
}

static void uid_kept(const char *uid, const char *name, int split)
{
	struct km_workload_res *w = packed(uid, name), *c;
	char buf[KM_UID_BUF], other[KM_UID_BUF + 16];

	assert_int_equal(w->uid_split, split);
	assert_string_equal(km_workload_uid(w, buf), uid);
	assert_string_equal(w->name, name);
	assert_true(km_workload_uid_is(w, uid));
	snprintf(other, sizeof(other), "%sx", uid); /* longer */
	assert_false(km_workload_uid_is(w, other));
	other[strlen(uid) - 1] = 0; /* shorter */
	assert_false(km_workload_uid_is(w, other));
	assert_false(km_workload_uid_is(w, NULL));
	c = km_workload_res_with_addrs(w, NULL, 0);
	assert_int_equal(c->uid_split, 0);
	assert_string_equal(c->uid_text, uid);
	assert_true(km_workload_res_equal(w, c) && km_workload_res_equal(c, w));
	km_workload_res_free(c);
	km_workload_res_free(w);
}

static void test_pack_uid_split(void **state)
{
	struct km_workload_res *a, *b;

	(void)state;
	uid_kept("Kubernetes//Pod/prod/web-7d4b9c-x2k8p", "web-7d4b9c-x2k8p", 1);
	uid_kept("c//Pod/ns/p", "p", 1);
	uid_kept("/p", "p", 1);              /* an empty prefix */
	uid_kept("c//Pod/ns/xp", "p", 0);    /* a suffix, not a segment */
	uid_kept("c//Pod/ns/p", "q", 0);
	uid_kept("p", "p", 0);               /* the whole uid: no '/' before it */
	uid_kept("c//Pod/ns/p", "", 0);
	{ /* longer than KM_UID_BUF holds (a derived "<uid>#<n>" can be): kept whole, never cut */
		static char uid[KM_UID_BUF + 8];

		memset(uid, 'a', sizeof(uid) - 1);
		memcpy(uid + sizeof(uid) - 4, "/p", 3);
		uid_kept(uid, "p", 0);
		uid[KM_UID_BUF - 4] = '/', uid[KM_UID_BUF - 3] = 'p', uid[KM_UID_BUF - 2] = 0;
		uid_kept(uid, "p", 1); /* the longest that splits */
	}
	/* two pods of a namespace share the prefix's bytes */
	a = packed("Kubernetes//Pod/prod/a", "a");
	b = packed("Kubernetes//Pod/prod/b", "b");
	assert_ptr_equal(a->uid_text, b->uid_text);
	assert_false(km_workload_res_equal(a, b));
	km_workload_res_free(a);
	km_workload_res_free(b);
}

static void expect_rejected(const char *resource, const char *why);

/* Workload.tunnel_protocol: HBONE read as the workload's bit (issue 49), kept by a pack and a
 * copy, and a change of it alone is a change; an unknown protocol is refused. */
static void test_tunnel_protocol(void **state)
{
	struct km_resource_set set;
	char err[256];
	const char *doc =
		"[{\"workload\": {\"uid\": \"u1\", \"addresses\": [\"10.0.0.1\"], \"tunnelProtocol\": \"HBONE\"}},"
		" {\"workload\": {\"uid\": \"u1\", \"addresses\": [\"10.0.0.1\"], \"tunnel_protocol\": \"NONE\"}},"
		" {\"workload\": {\"uid\": \"u2\", \"addresses\": [\"10.0.0.2\"],"
		"  \"tunnelProtocol\": \"LEGACY_ISTIO_MTLS\"}}]";
	struct km_workload_res *hb, *none, *copy;

	(void)state;
	assert_int_equal(decode(doc, &set, err), 0);
	assert_int_equal(set.n_errors, 0);
	assert_int_equal(set.n_workloads, 3);
	assert_int_equal(set.workloads[0]->tunnel_hbone, 1);
	assert_int_equal(set.workloads[1]->tunnel_hbone, 0);
	assert_int_equal(set.workloads[2]->tunnel_hbone, 0); /* sidecars': plaintext to ztunnel */
	hb = set.workloads[0] = km_workload_res_pack(set.workloads[0]);
	none = set.workloads[1] = km_workload_res_pack(set.workloads[1]);
	assert_int_equal(hb->tunnel_hbone, 1);
	assert_false(km_workload_res_equal(hb, none));
	copy = km_workload_res_with_addrs(hb, hb->addrs, hb->n_addrs);
	assert_int_equal(copy->tunnel_hbone, 1);
	assert_true(km_workload_res_equal(hb, copy));
	km_workload_res_free(copy);
	km_resource_set_free(&set);
	expect_rejected("{\"workload\": {\"uid\": \"u\", \"tunnelProtocol\": \"QUIC\"}}",
			"tunnelProtocol");
}

static void expect_rejected(const char *resource, const char *why)
{
	struct km_resource_set set;
	char err[256], doc[2048];

	snprintf(doc, sizeof(doc), "{\"resources\": [%s]}", resource);
	assert_int_equal(decode(doc, &set, err), 0);
	if (set.n_errors != 1)
		fail_msg("resource was not rejected (%s): %s", why, resource);
	assert_int_equal(set.n_services + set.n_workloads, 0);
	km_resource_set_free(&set);
}

static void test_bad_resources_rejected(void **state)
{
	char longname[1200];

	(void)state;
	km_log_set_level(KM_LOG_ERROR);
	expect_rejected("{\"service\": {\"namespace\": \"ns\"}}", "no hostname");
	expect_rejected("{\"service\": {\"namespace\": \"ns\", \"hostname\": \"h\", \"ports\": "
			"[{\"servicePort\": 70000}]}}", "port out of range");
	/* a port listed twice (UDP and TCP) is not an error: resource_pb.c merges it (test_xds.c) */
	expect_rejected("{\"service\": {\"namespace\": \"ns\", \"hostname\": \"h\", \"addresses\": "
			"[{\"address\": \"10.0.0\"}]}}", "bad VIP");
	expect_rejected("{\"workload\": {\"uid\": \"u\", \"addresses\": [\"AAAA\"]}}", "3-byte address");
	expect_rejected("{\"workload\": {\"uid\": \"u\", \"addresses\": [\"0.0.0.0\"]}}", "unspecified");
	expect_rejected("{\"workload\": {\"uid\": \"u\", \"status\": \"SLEEPY\"}}", "unknown enum");
	expect_rejected("{\"workload\": {\"uid\": \"u\", \"services\": {\"nohostname\": {}}}}", "bad key");
	expect_rejected("{\"workload\": {\"uid\": 5}}", "uid not a string");
	expect_rejected("{\"workload\": {}, \"service\": {}}", "both kinds");
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	{
		char res[1400];

		snprintf(res, sizeof(res), "{\"workload\": {\"uid\": \"%s\"}}", longname);
		expect_rejected(res, "uid too long");
	}
	km_log_set_level(KM_LOG_INFO);
}

static void test_bad_documents(void **state)
{
	struct km_resource_set set;
	char err[256];

	(void)state;
	assert_int_equal(decode("{\"resources\": [", &set, err), -1);
	assert_non_null(strstr(err, "not valid JSON"));
	assert_int_equal(decode("{\"items\": []}", &set, err), -1);
	assert_non_null(strstr(err, "resources"));
	assert_int_equal(decode("{\"resources\": [], \"resources\": []}", &set, err), -1);
}

static void test_base64(void **state)
{
	uint8_t out[8];

	(void)state;
	assert_int_equal(km_base64_decode("CgAAAQ==", 8, out, sizeof(out)), 4);
	assert_int_equal(out[0], 10);
	assert_int_equal(out[3], 1);
	assert_int_equal(km_base64_decode("CgAAAQ", 6, out, sizeof(out)), 4); /* unpadded */
	assert_int_equal(km_base64_decode("-_8", 3, out, sizeof(out)), 2);    /* URL-safe */
	assert_int_equal(km_base64_decode("C", 1, out, sizeof(out)), -1);
	assert_int_equal(km_base64_decode("Cg.A", 4, out, sizeof(out)), -1);
	assert_int_equal(km_base64_decode("AAAAAAAAAAAAAA==", 16, out, 4), -1); /* too long */
}

/* ---- snapshots ------------------------------------------------------------------------------- */

struct fixture {
	struct km_oplist ops;
	struct km_model model;
};

static size_t apply_doc(struct fixture *f, const char *doc, struct km_snapshot_stats *st)
{
	struct km_resource_set set;
	char err[256];
	size_t n;

	assert_int_equal(decode(doc, &set, err), 0);
	km_snapshot_apply(&f->model, &set, st);
	km_resource_set_free(&set);
	n = f->ops.n;
	km_oplist_clear(&f->ops);
	return n;
}

static void test_snapshots_apply_as_deltas(void **state)
{
	struct fixture f;
	struct km_snapshot_stats st;
	const uint32_t *eps;

	(void)state;
	km_log_set_level(KM_LOG_ERROR);
	km_oplist_init(&f.ops);
	km_model_init(&f.model, &f.ops, NULL);

	assert_true(apply_doc(&f, "[" WEB "," POD("a", "10.0.0.1", "HEALTHY") "," POD("b", "10.0.0.2", "HEALTHY") "]", &st) > 0);
	assert_int_equal(km_model_endpoints(&f.model, "demo/web.demo", 0, &eps), 2);

	/* the same file again: nothing to do */
	assert_int_equal(apply_doc(&f, "[" WEB "," POD("a", "10.0.0.1", "HEALTHY") "," POD("b", "10.0.0.2", "HEALTHY") "]", &st), 0);

	/* b disappears from the file */
	assert_true(apply_doc(&f, "[" WEB "," POD("a", "10.0.0.1", "HEALTHY") "]", &st) > 0);
	assert_int_equal(st.removed_workloads, 1);
	assert_null(km_model_find_workload(&f.model, "Kubernetes//Pod/demo/b"));
	assert_int_equal(km_model_endpoints(&f.model, "demo/web.demo", 0, &eps), 1);

	/* a's new version is invalid: its previous version stays */
	assert_int_equal(apply_doc(&f, "[" WEB "," POD("a", "10.0.0.999", "HEALTHY") "]", &st), 0);
	assert_int_equal(st.removed_workloads, 0);
	assert_non_null(km_model_find_workload(&f.model, "Kubernetes//Pod/demo/a"));

	/* a resource without a readable name: nothing is removed this time */
	assert_int_equal(apply_doc(&f, "[{\"workload\": {\"name\": \"?\"}}]", &st), 0);
	assert_int_equal(f.model.n_services, 1);
	assert_int_equal(f.model.n_workloads, 1);

	/* duplicates: the last definition wins */
	apply_doc(&f, "[" WEB "," POD("a", "10.0.0.1", "HEALTHY") "," POD("a", "10.0.0.1", "UNHEALTHY") "]", &st);
	assert_int_equal(st.duplicates, 1);
	assert_int_equal(km_model_endpoints(&f.model, "demo/web.demo", 0, &eps), 0);
	/* only the last definition is applied: the same file again changes nothing (found by
	 * fuzz_config: applying each definition in turn flipped the tables back and forth) */
	assert_int_equal(apply_doc(&f, "[" WEB "," POD("a", "10.0.0.1", "HEALTHY") "," POD("a", "10.0.0.1", "UNHEALTHY") "]", &st), 0);

	/* an empty file removes everything */
	assert_true(apply_doc(&f, "[]", &st) > 0);
	assert_int_equal(st.removed_services, 1);
	assert_int_equal(f.model.n_services + f.model.n_workloads, 0);
	km_model_free(&f.model);
	km_oplist_free(&f.ops);
	km_log_set_level(KM_LOG_INFO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_both_spellings),
		cmocka_unit_test(test_pack_keeps_every_field),
		cmocka_unit_test(test_pack_uid_split),
		cmocka_unit_test(test_tunnel_protocol),
		cmocka_unit_test(test_bad_resources_rejected),
		cmocka_unit_test(test_bad_documents),
		cmocka_unit_test(test_base64),
		cmocka_unit_test(test_snapshots_apply_as_deltas),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
