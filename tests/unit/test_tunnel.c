/* test_tunnel.c — the tunnel's bookkeeping, without a CA: the pods the CNI agent names
 * (services/tunnel/pods.c: snapshots, changes, removals, an identity's first and last pod,
 * refusals), when a certificate is renewed and how its state reads (certs.c), and the snapshot
 * the CNI agent sends (services/cni-agent/tunnel_feed.c: service accounts and addresses from
 * the cache, pods it lacks left out); the xDS agent's decisions it keeps (authz_cache.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "services/cni-agent/tunnel_feed.h"
#include "services/tunnel/authz_cache.h"
#include "services/tunnel/certs.h"
#include "services/tunnel/pods.h"

struct seen {
	char log[2048];
};

static void on_identity(void *arg, const char *identity, int delta)
{
	struct seen *s = arg;
	size_t n = strlen(s->log);

	snprintf(s->log + n, sizeof(s->log) - n, "%c%s ", delta > 0 ? '+' : '-',
		 identity + strlen("spiffe://td.example/"));
}

/* A TunnelPod on the stack (strings borrowed). */
struct pod_msg {
	Kmesh__Ipc__TunnelPod m;
	ProtobufCBinaryData addr;
	uint8_t ip[4];
};

static Kmesh__Ipc__TunnelPod *pod(struct pod_msg *p, const char *uid, const char *ns,
				  const char *name, const char *sa, uint8_t last_octet)
{
	kmesh__ipc__tunnel_pod__init(&p->m);
	p->m.uid = (char *)uid;
	p->m.namespace_ = (char *)ns;
	p->m.name = (char *)name;
	p->m.service_account = (char *)sa;
	p->ip[0] = 10, p->ip[1] = 0, p->ip[2] = 0, p->ip[3] = last_octet;
	p->addr.data = p->ip;
	p->addr.len = 4;
	p->m.addresses = &p->addr;
	p->m.n_addresses = 1;
	p->m.netns_cookie = 1000 + last_octet;
	return &p->m;
}

static size_t apply(struct km_tunnel_pods *t, int full, Kmesh__Ipc__TunnelPod **pods, size_t n,
		    char **gone, size_t n_gone, char *why)
{
	Kmesh__Ipc__TunnelPods m = KMESH__IPC__TUNNEL_PODS__INIT;

	m.full = full;
	m.pods = pods;
	m.n_pods = n;
	m.gone = gone;
	m.n_gone = n_gone;
	return km_tunnel_pods_apply(t, &m, why, 300);
}

/* An identity is wanted at its first pod and dropped at its last, whatever the order of
 * snapshots, changes and removals; a pod that moves to another account moves its reference. */
static void test_pods_identities(void **state)
{
	struct km_tunnel_pods t;
	struct seen s = { "" };
	struct pod_msg a, b, c, a2;
	Kmesh__Ipc__TunnelPod *list[3];
	char why[300], *gone[] = { "ctr-b" };

	(void)state;
	assert_int_equal(km_tunnel_pods_init(&t, "td.example", on_identity, &s), 0);
	list[0] = pod(&a, "ctr-a", "shop", "web-1", "web", 1);
	list[1] = pod(&b, "ctr-b", "shop", "web-2", "web", 2);
	list[2] = pod(&c, "ctr-c", "shop", "db-1", "", 3); /* no account: "default" */
	assert_int_equal(apply(&t, 1, list, 3, NULL, 0, why), 0);
	assert_string_equal(s.log, "+ns/shop/sa/web +ns/shop/sa/default ");
	assert_int_equal(t.n, 3);
	assert_int_equal(km_tunnel_pods_of(&t, "spiffe://td.example/ns/shop/sa/web"), 2);
	assert_string_equal(km_tunnel_pods_find(&t, "ctr-c")->identity,
			    "spiffe://td.example/ns/shop/sa/default");
	assert_int_equal(km_tunnel_pods_find(&t, "ctr-a")->netns_cookie, 1001);

	/* one of two pods of web leaves: nothing dropped; the second: dropped */
	s.log[0] = '\0';
	assert_int_equal(apply(&t, 0, NULL, 0, gone, 1, why), 0);
	assert_string_equal(s.log, "");
	/* the same snapshot again, less ctr-b: nothing changes (no second fetch) */
	assert_int_equal(apply(&t, 1, (Kmesh__Ipc__TunnelPod *[]){ &a.m, &c.m }, 2, NULL, 0, why), 0);
	assert_string_equal(s.log, "");
	/* ctr-a moves to another account: the new one wanted before the old one is dropped */
	list[0] = pod(&a2, "ctr-a", "shop", "web-1", "cart", 1);
	assert_int_equal(apply(&t, 0, list, 1, NULL, 0, why), 0);
	assert_string_equal(s.log, "+ns/shop/sa/cart -ns/shop/sa/web ");
	/* a snapshot without c drops default; an empty one drops everything */
	s.log[0] = '\0';
	assert_int_equal(apply(&t, 1, list, 1, NULL, 0, why), 0);
	assert_string_equal(s.log, "-ns/shop/sa/default ");
	assert_int_equal(apply(&t, 1, NULL, 0, NULL, 0, why), 0);
	assert_string_equal(s.log, "-ns/shop/sa/default -ns/shop/sa/cart ");
	assert_int_equal(t.n, 0);
	assert_int_equal(t.n_ids, 0);
	km_tunnel_pods_free(&t);
}

/* What the CNI agent says is checked field by field: a bad pod is refused with why and the
 * others are taken; a refused pod wants no certificate. */
static void test_pods_refused(void **state)
{
	struct km_tunnel_pods t;
	struct seen s = { "" };
	struct pod_msg p[6];
	char why[300];
	Kmesh__Ipc__TunnelPod *list[6];

	(void)state;
	assert_int_equal(km_tunnel_pods_init(&t, "bad_domain!", on_identity, &s), -1);
	assert_int_equal(km_tunnel_pods_init(&t, "td.example", on_identity, &s), 0);
	list[0] = pod(&p[0], "ctr/../x", "shop", "a", "web", 1);    /* not a container id */
	list[1] = pod(&p[1], "ctr-1", "Shop", "a", "web", 2);       /* not a DNS label */
	list[2] = pod(&p[2], "ctr-2", "shop", "a", "we/b", 3);      /* account with a slash */
	list[3] = pod(&p[3], "ctr-3", "a.b", "a", "web", 4);        /* a namespace with a dot */
	list[4] = pod(&p[4], "ctr-4", "shop", "a", "web", 5);
	p[4].addr.len = 5;                                          /* a 5-byte address */
	list[5] = pod(&p[5], "ctr-5", "shop", "ok", "web", 6);
	assert_int_equal(apply(&t, 1, list, 6, NULL, 0, why), 5);
	assert_non_null(strstr(why, "not a container id"));
	assert_int_equal(t.n, 1);
	assert_string_equal(s.log, "+ns/shop/sa/web ");
	assert_int_equal(t.refused, 5);
	km_tunnel_pods_free(&t);
}

/* Renewal at half the life left, less up to a tenth of it; a short life still waits a second;
 * the state a dump shows. */
static void test_cert_schedule_and_state(void **state)
{
	struct km_cert e;

	(void)state;
	assert_int_equal(km_certs_renew_at(1000, 1000 + 86400, 0), 1000 + 43200);
	assert_int_equal(km_certs_renew_at(1000, 1000 + 86400, UINT32_MAX), 1000 + 43200 - 8640);
	assert_true(km_certs_renew_at(1000, 1000 + 86400, 1u << 31) > 1000 + 43200 - 8640);
	assert_int_equal(km_certs_renew_at(1000, 1001, 7), 1001);
	assert_int_equal(km_certs_renew_at(1000, 900, 7), 1001); /* expired already: at once */

	memset(&e, 0, sizeof(e));
	assert_string_equal(km_cert_state_name(km_cert_state(&e, 0)), "pending");
	e.failures = 1;
	assert_string_equal(km_cert_state_name(km_cert_state(&e, 0)), "failed");
	e.has_cert = 1;
	e.cert.not_after = 2000;
	assert_string_equal(km_cert_state_name(km_cert_state(&e, 1500)), "valid");
	e.queued = 1;
	assert_string_equal(km_cert_state_name(km_cert_state(&e, 1500)), "renewing");
	assert_string_equal(km_cert_state_name(km_cert_state(&e, 2000)), "expired");
}

/* The CNI agent's snapshot: the account and (after a restart, when the ADD's addresses are not
 * known) the addresses from the cache; a pod the cache lacks is left out, not sent half-known. */
static void test_feed_snapshot(void **state)
{
	struct km_pod_cache cache;
	json_t *pods = json_object();
	Kmesh__Ipc__TunnelPods *m;
	const uint8_t ip[4] = { 10, 0, 0, 9 };
	ProtobufCBinaryData addr = { 4, (uint8_t *)ip };
	struct km_tunnel_feed f;

	(void)state;
	memset(&cache, 0, sizeof(cache));
	cache.pod_by_key = json_object();
	cache.pods_listed = 1;
	json_object_set_new(cache.pod_by_key, "shop/web-1",
			    json_pack("{s:{s:s}}", "spec", "serviceAccountName", "web"));
	json_object_set_new(cache.pod_by_key, "shop/web-2",
			    json_pack("{s:{s:[{s:s}]}}", "status", "podIPs", "ip", "10.0.0.2"));
	memset(&f, 0, sizeof(f));
	f.on = 1;
	f.pods = pods;
	km_tunnel_feed_add(&f, "ctr-1", 11, "shop", "web-1", &addr, 1);
	km_tunnel_feed_add(&f, "ctr-2", 12, "shop", "web-2", NULL, 0);
	km_tunnel_feed_add(&f, "ctr-3", 13, "shop", "gone", NULL, 0);
	assert_true(f.dirty);
	m = km_tunnel_feed_snapshot(pods, &cache);
	assert_non_null(m);
	assert_true(m->full);
	assert_int_equal(m->n_pods, 2);
	for (size_t i = 0; i < m->n_pods; i++) {
		const Kmesh__Ipc__TunnelPod *p = m->pods[i];

		assert_int_equal(p->n_addresses, 1);
		assert_int_equal(p->addresses[0].len, 4);
		if (!strcmp(p->uid, "ctr-1")) {
			assert_string_equal(p->service_account, "web");
			assert_int_equal(p->addresses[0].data[3], 9);
			assert_int_equal(p->netns_cookie, 11);
		} else {
			assert_string_equal(p->uid, "ctr-2");
			assert_string_equal(p->service_account, "default");
			assert_int_equal(p->addresses[0].data[3], 2);
		}
	}
	km_tunnel_feed_free_msg(m);
	f.dirty = 0;
	km_tunnel_feed_remove(&f, "ctr-3");
	assert_true(f.dirty);
	json_decref(pods);
	json_decref(cache.pod_by_key);
}

static struct km_authz_key key4(uint8_t src_last, uint16_t port, const char *principal)
{
	struct km_authz_key k = { .src = { 10, 0, 0, src_last }, .dst = { 10, 0, 1, 9 },
				  .src_len = 4, .dst_len = 4, .port = port, .principal = principal };
	return k;
}

/* Kept per (principal, source, destination, port) at one pair of generations; an answer of
 * another pair is not kept; a new pair, off, or a full cache drops everything. */
static void test_authz_cache(void **state)
{
	struct km_authz_cache c = { .max = KM_AUTHZ_CACHE_MAX };
	struct km_authz_key k = key4(1, 8080, "td/ns/a/sa/x"), other;
	const struct km_authz_verdict allow = { 1, "allowed by mesh/p", "k8s.namespace.name=b" },
				      deny = { 0, "denied by mesh/q", "" };
	const struct km_authz_verdict *v;
	char principal[64];

	(void)state;
	km_authz_cache_put(&c, &k, &allow, 5, 7); /* off: not kept */
	assert_null(km_authz_cache_get(&c, &k));
	km_authz_cache_on(&c, 5, 7);
	assert_null(km_authz_cache_get(&c, &k));
	km_authz_cache_put(&c, &k, &allow, 5, 8); /* decided at another pair */
	assert_null(km_authz_cache_get(&c, &k));
	km_authz_cache_put(&c, &k, &allow, 5, 7);
	snprintf(principal, sizeof(principal), "%s", k.principal); /* compared by value */
	k.principal = principal;
	assert_non_null(v = km_authz_cache_get(&c, &k));
	assert_int_equal(v->allowed, 1);
	assert_string_equal(v->why, "allowed by mesh/p");
	assert_string_equal(v->baggage, "k8s.namespace.name=b");
	/* every part of the key counts */
	other = key4(2, 8080, "td/ns/a/sa/x");
	assert_null(km_authz_cache_get(&c, &other));
	other = key4(1, 8081, "td/ns/a/sa/x");
	assert_null(km_authz_cache_get(&c, &other));
	other = key4(1, 8080, "td/ns/a/sa/y");
	assert_null(km_authz_cache_get(&c, &other));
	other = key4(1, 8080, "td/ns/a/sa/x");
	other.dst[3] = 10;
	assert_null(km_authz_cache_get(&c, &other));
	km_authz_cache_put(&c, &other, &deny, 5, 7);
	assert_int_equal(km_authz_cache_get(&c, &other)->allowed, 0);
	assert_int_equal(c.n, 2);
	/* the same pair told again keeps them; a workload or a policy change drops them */
	km_authz_cache_generations(&c, 5, 7);
	assert_non_null(km_authz_cache_get(&c, &k));
	km_authz_cache_generations(&c, 5, 9);
	assert_null(km_authz_cache_get(&c, &k));
	assert_null(km_authz_cache_get(&c, &other));
	km_authz_cache_put(&c, &k, &allow, 5, 9);
	km_authz_cache_generations(&c, 6, 9);
	assert_null(km_authz_cache_get(&c, &k));
	assert_int_equal(c.n, 0);
	/* bounded: full, emptied */
	km_authz_cache_put(&c, &k, &allow, 6, 9);
	for (unsigned i = 1; i < KM_AUTHZ_CACHE_MAX - 1; i++) { /* ports below 8080 */
		other = key4(1, (uint16_t)i, "td/ns/a/sa/x");
		km_authz_cache_put(&c, &other, &allow, 6, 9);
	}
	assert_int_equal(c.n, KM_AUTHZ_CACHE_MAX - 1);
	other = key4(1, 9000, "td/ns/a/sa/x");
	km_authz_cache_put(&c, &other, &allow, 6, 9);
	assert_int_equal(c.n, KM_AUTHZ_CACHE_MAX);
	other = key4(1, 9001, "td/ns/a/sa/x");
	km_authz_cache_put(&c, &other, &deny, 6, 9);
	assert_int_equal(c.n, 1);
	assert_null(km_authz_cache_get(&c, &k));
	assert_non_null(km_authz_cache_get(&c, &other));
	/* off: nothing kept, nothing given */
	km_authz_cache_off(&c);
	assert_int_equal(c.n, 0);
	assert_null(km_authz_cache_get(&c, &other));
	/* max 0 (--hbone-decision-cache 0): on, but nothing kept */
	c.max = 0;
	km_authz_cache_on(&c, 6, 9);
	km_authz_cache_put(&c, &other, &deny, 6, 9);
	assert_null(km_authz_cache_get(&c, &other));
	assert_int_equal(c.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pods_identities),
		cmocka_unit_test(test_pods_refused),
		cmocka_unit_test(test_cert_schedule_and_state),
		cmocka_unit_test(test_feed_snapshot),
		cmocka_unit_test(test_authz_cache),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
