/* test_demand.c — the keys an agent on demand asks istiod for (ads/demand.c): which keys are
 * well formed, each held once, the bound, what is sent on a stream and again on the next, the
 * file they are kept in; and the requests the ADS client makes of them (ads_client.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "services/xds-agent/ads/ads_client.h"
#include "services/xds-agent/ads/demand.h"

static void keys_valid(void **state)
{
	char longest[KM_DEMAND_KEY_MAX + 2];
	const char *good[] = { "/10.0.0.5", "net1/10.0.0.5", "/fd00::1", "default/web.default.svc.cluster.local",
			       "ns/api.example.com", "ns/*.example.com", "ns/Api.Example.COM", "a/b" };
	const char *bad[] = { "", "web", "/", "ns/", "/10.0.0.5/32", "Default/web.default.svc",
			      "-ns/web", "ns-/web", "ns/web..svc", "ns/.web", "ns/web.", "ns/we b",
			      "net 1/10.0.0.5", "ns/web/x", "ns_x/web" };

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		assert_true(km_demand_key_valid(good[i]) || (fprintf(stderr, "%s\n", good[i]), 0));
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_false(km_demand_key_valid(bad[i]) && (fprintf(stderr, "%s\n", bad[i]), 1));
	/* a label of 64, a key over the bound */
	assert_false(km_demand_key_valid("ns/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.x"));
	assert_true(km_demand_key_valid("ns/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.x"));
	/* the longest service key: a namespace of 63 and a hostname of 253 */
	memset(longest, 'a', sizeof(longest));
	longest[63] = '/';
	for (size_t i = 64 + 60; i < 64 + 253; i += 61)
		longest[i] = '.';
	longest[64 + 253] = 0;
	assert_true(km_demand_key_valid(longest));
	longest[64 + 253] = 'a'; /* a hostname of 254 */
	longest[64 + 254] = 0;
	assert_false(km_demand_key_valid(longest));
	/* an address key one byte over KM_DEMAND_KEY_MAX: a network name of 312 */
	memset(longest, 'n', 312);
	strcpy(longest + 312, "/10.0.0.1");
	assert_false(km_demand_key_valid(longest));
	longest[KM_DEMAND_KEY_MAX - 9] = 0;
	strcat(longest, "/10.0.0.1");
	assert_int_equal(strlen(longest), KM_DEMAND_KEY_MAX);
	assert_true(km_demand_key_valid(longest));
}

static void held_once_and_bounded(void **state)
{
	struct km_demand d;
	char *const *first;

	(void)state;
	km_demand_init(&d, 3);
	assert_int_equal(km_demand_add(&d, "t/web.t.svc.cluster.local"), KM_DEMAND_NEW);
	assert_int_equal(km_demand_add(&d, "t/web.t.svc.cluster.local"), KM_DEMAND_KNOWN);
	assert_int_equal(km_demand_add(&d, "not a key"), KM_DEMAND_INVALID);
	assert_int_equal(km_demand_add(&d, "/10.0.0.1"), KM_DEMAND_NEW);
	assert_int_equal(km_demand_add(&d, "/10.0.0.2"), KM_DEMAND_NEW);
	assert_int_equal(km_demand_add(&d, "/10.0.0.3"), KM_DEMAND_FULL);
	assert_int_equal(km_demand_add(&d, "/10.0.0.1"), KM_DEMAND_KNOWN); /* known even when full */
	assert_int_equal(d.n, 3);
	assert_int_equal(d.refused_full, 1);
	assert_int_equal(d.refused_invalid, 1);
	/* sent in the order demanded; then nothing until a new stream */
	assert_int_equal(km_demand_unsent(&d, &first), 3);
	assert_string_equal(first[0], "t/web.t.svc.cluster.local");
	assert_string_equal(first[2], "/10.0.0.2");
	km_demand_mark_sent(&d, 2);
	assert_int_equal(km_demand_unsent(&d, &first), 1);
	assert_string_equal(first[0], "/10.0.0.2");
	km_demand_mark_sent(&d, 1);
	assert_int_equal(km_demand_unsent(&d, &first), 0);
	km_demand_resend_all(&d);
	assert_int_equal(km_demand_unsent(&d, &first), 3);
	km_demand_free(&d);
}

/* Many keys go in requests of at most KM_DEMAND_PER_REQUEST. */
static void sent_in_bounded_requests(void **state)
{
	struct km_demand d;
	char *const *first;
	char key[32];
	size_t total = KM_DEMAND_PER_REQUEST * 2 + 5, sent = 0, requests = 0, n;

	(void)state;
	km_demand_init(&d, 0);
	assert_int_equal(d.max, KM_DEMAND_MAX_DEFAULT);
	for (size_t i = 0; i < total; i++) {
		snprintf(key, sizeof(key), "/10.%zu.%zu.%zu", i >> 16, (i >> 8) & 255, i & 255);
		assert_int_equal(km_demand_add(&d, key), KM_DEMAND_NEW);
	}
	while ((n = km_demand_unsent(&d, &first)) > 0) {
		assert_true(n <= KM_DEMAND_PER_REQUEST);
		assert_ptr_equal(first, d.keys + sent);
		km_demand_mark_sent(&d, n);
		sent += n;
		requests++;
	}
	assert_int_equal(sent, total);
	assert_int_equal(requests, 3);
	km_demand_free(&d);
}

/* Kept in a file and read back: the same keys in the same order; lines that are no key (or too
 * long for one) skipped and counted; a missing file is no keys; a file larger than the bound's
 * worth refused. */
static void kept_in_a_file(void **state)
{
	char dir[] = "/tmp/test_demand.XXXXXX", path[128];
	struct km_demand d, e;
	size_t bad;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/keys", dir);
	km_demand_init(&d, 8);
	assert_int_equal(km_demand_load(&d, path, &bad), 0); /* no file yet */
	km_demand_add(&d, "t/web.t.svc.cluster.local");
	km_demand_add(&d, "/10.0.0.1");
	assert_int_equal(km_demand_save(&d, path), 0);
	km_demand_init(&e, 8);
	assert_int_equal(km_demand_load(&e, path, &bad), 2);
	assert_int_equal(bad, 0);
	assert_int_equal(e.n, 2);
	assert_string_equal(e.keys[0], "t/web.t.svc.cluster.local");
	assert_string_equal(e.keys[1], "/10.0.0.1");
	km_demand_free(&e);
	/* a line too long for a key, a bad one, one known already, one without a newline */
	f = fopen(path, "a");
	for (int i = 0; i < 400; i++)
		fputc('a', f);
	fputs("\nnot a key\n/10.0.0.1\nns/last.ns.svc", f);
	fclose(f);
	km_demand_init(&e, 8);
	assert_int_equal(km_demand_load(&e, path, &bad), 3);
	assert_int_equal(bad, 2);
	assert_string_equal(e.keys[2], "ns/last.ns.svc");
	km_demand_free(&e);
	/* more bytes than max keys can take */
	km_demand_init(&e, 1);
	assert_int_equal(km_demand_load(&e, path, &bad), -1);
	assert_int_equal(errno, EFBIG);
	km_demand_free(&e);
	/* a directory that is not there: the save fails and says why */
	snprintf(path, sizeof(path), "%s/none/keys", dir);
	assert_int_equal(km_demand_save(&d, path), -1);
	assert_int_equal(errno, ENOENT);
	km_demand_free(&d);
	snprintf(path, sizeof(path), "%s/keys", dir);
	unlink(path);
	rmdir(dir);
}

/* ---- the ADS client's requests on demand ---------------------------------------------------- */

static struct km_ads_client *client(void)
{
	static struct km_ads_client c;
	struct km_ads_node node = { .instance_ip = "10.1.2.3", .pod_name = "kmesh-x",
				    .pod_namespace = "kmesh-system", .cluster_id = "Kubernetes" };

	memset(&c, 0, sizeof(c));
	c.node = node;
	km_ads_node_id(&node, c.node_id, sizeof(c.node_id));
	c.address.type_url = KM_TYPE_ADDRESS;
	c.authz.type_url = KM_TYPE_AUTHORIZATION;
	return &c;
}

/* On demand the Address stream's first request subscribes and unsubscribes "*" (nothing yet),
 * Authorization's stays a wildcard, a wildcard Address stream sends neither; a subscription is a
 * request of its own: the names, no nonce, no node. */
static void test_on_demand_requests(void **state)
{
	struct km_ads_client *c = client();
	Kmesh__Xds__DeltaDiscoveryRequest *r;
	char *names[] = { "t/web.t.svc.cluster.local", "/10.0.0.5" };
	size_t len;
	uint8_t *buf;

	(void)state;
	buf = km_ads_build_request(c, &c->address, 1, NULL, NULL, &len);
	r = kmesh__xds__delta_discovery_request__unpack(NULL, len, buf);
	assert_int_equal(r->n_resource_names_subscribe + r->n_resource_names_unsubscribe, 0);
	kmesh__xds__delta_discovery_request__free_unpacked(r, NULL);
	free(buf);
	c->on_demand = 1;
	buf = km_ads_build_request(c, &c->address, 1, NULL, NULL, &len);
	r = kmesh__xds__delta_discovery_request__unpack(NULL, len, buf);
	assert_int_equal(r->n_resource_names_subscribe, 1);
	assert_int_equal(r->n_resource_names_unsubscribe, 1);
	assert_string_equal(r->resource_names_subscribe[0], "*");
	assert_string_equal(r->resource_names_unsubscribe[0], "*");
	assert_non_null(r->node);
	kmesh__xds__delta_discovery_request__free_unpacked(r, NULL);
	free(buf);
	buf = km_ads_build_request(c, &c->authz, 1, NULL, NULL, &len);
	r = kmesh__xds__delta_discovery_request__unpack(NULL, len, buf);
	assert_int_equal(r->n_resource_names_subscribe + r->n_resource_names_unsubscribe, 0);
	kmesh__xds__delta_discovery_request__free_unpacked(r, NULL);
	free(buf);
	/* an ACK on demand names nothing */
	buf = km_ads_build_request(c, &c->address, 0, "n1", NULL, &len);
	r = kmesh__xds__delta_discovery_request__unpack(NULL, len, buf);
	assert_int_equal(r->n_resource_names_subscribe + r->n_resource_names_unsubscribe, 0);
	kmesh__xds__delta_discovery_request__free_unpacked(r, NULL);
	free(buf);
	buf = km_ads_build_subscription(c, &c->address, names, 2, NULL, 0, &len);
	r = kmesh__xds__delta_discovery_request__unpack(NULL, len, buf);
	assert_string_equal(r->type_url, KM_TYPE_ADDRESS);
	assert_int_equal(r->n_resource_names_subscribe, 2);
	assert_string_equal(r->resource_names_subscribe[0], names[0]);
	assert_string_equal(r->resource_names_subscribe[1], names[1]);
	assert_int_equal(r->n_resource_names_unsubscribe, 0);
	assert_string_equal(r->response_nonce, "");
	assert_null(r->node);
	assert_null(r->error_detail);
	kmesh__xds__delta_discovery_request__free_unpacked(r, NULL);
	free(buf);
	/* a refresh's first half: the names unsubscribed, nothing subscribed */
	buf = km_ads_build_subscription(c, &c->address, NULL, 0, names, 2, &len);
	r = kmesh__xds__delta_discovery_request__unpack(NULL, len, buf);
	assert_int_equal(r->n_resource_names_subscribe, 0);
	assert_int_equal(r->n_resource_names_unsubscribe, 2);
	assert_string_equal(r->resource_names_unsubscribe[1], names[1]);
	assert_string_equal(r->response_nonce, "");
	kmesh__xds__delta_discovery_request__free_unpacked(r, NULL);
	free(buf);
}

/* On a new stream the demanded keys ride in the first request, as many as fit under
 * max_initial (the rest go after it, each in a subscription of its own). */
static void test_on_demand_keys_in_the_first_request(void **state)
{
	struct km_ads_client *c = client();
	Kmesh__Xds__DeltaDiscoveryRequest *r;
	size_t base, len;
	uint8_t *buf;

	(void)state;
	c->on_demand = 1;
	km_demand_init(&c->demand, 0);
	c->max_initial = 1u << 20;
	buf = km_ads_initial_request(c, &c->address, &base); /* no keys yet */
	free(buf);
	assert_int_equal(c->demand_initial, 0);
	km_demand_add(&c->demand, "t/a.t.svc");
	km_demand_add(&c->demand, "t/b.t.svc");
	km_demand_add(&c->demand, "t/c.t.svc");
	c->max_initial = base + 2 * (9 + 3) + 1; /* room for two */
	buf = km_ads_initial_request(c, &c->address, &len);
	assert_int_equal(c->demand_initial, 2);
	assert_true(len <= c->max_initial);
	r = kmesh__xds__delta_discovery_request__unpack(NULL, len, buf);
	assert_int_equal(r->n_resource_names_subscribe, 3);
	assert_string_equal(r->resource_names_subscribe[0], "*");
	assert_string_equal(r->resource_names_subscribe[1], "t/a.t.svc");
	assert_string_equal(r->resource_names_subscribe[2], "t/b.t.svc");
	assert_int_equal(r->n_resource_names_unsubscribe, 1);
	kmesh__xds__delta_discovery_request__free_unpacked(r, NULL);
	free(buf);
	/* the Authorization request in between leaves the count alone */
	buf = km_ads_initial_request(c, &c->authz, &len);
	free(buf);
	assert_int_equal(c->demand_initial, 2);
	c->max_initial = 1u << 20;
	buf = km_ads_initial_request(c, &c->address, &len);
	free(buf);
	assert_int_equal(c->demand_initial, 3);
	km_demand_free(&c->demand);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(keys_valid),
		cmocka_unit_test(held_once_and_bounded),
		cmocka_unit_test(sent_in_bounded_requests),
		cmocka_unit_test(kept_in_a_file),
		cmocka_unit_test(test_on_demand_requests),
		cmocka_unit_test(test_on_demand_keys_in_the_first_request),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
