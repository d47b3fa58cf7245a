/* test_xds.c — the Delta ADS messages byte for byte (ACK, NACK, initial_resource_versions, as
 * encoded by protoc in the reference), the node id and metadata, and applying responses: good
 * resources applied, bad ones rejected with their names, wrong payload types refused, removals
 * looked up by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "services/xds-agent/ads/ads_client.h"
#include "services/xds-agent/ads/resource_pb.h"
#include "services/xds-agent/ads/xds_apply.h"
#include "shared/log.h"
#include "workload.pb-c.h"

static void hex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

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

#define ACK_N1 "122a747970652e676f6f676c65617069732e636f6d2f697374696f2e776f726b6c6f61642e4164647265737332026e31"

static void test_ack_and_nack_bytes(void **state)
{
	struct km_ads_client *c = client();
	char out[512];
	size_t len;
	uint8_t *buf;

	(void)state;
	buf = km_ads_build_request(c, &c->address, 0, "n1", NULL, &len);
	assert_int_equal(len, 48);
	hex(buf, len, out);
	assert_string_equal(out, ACK_N1);
	free(buf);
	/* our NACK carries code 3 and the message */
	buf = km_ads_build_request(c, &c->address, 0, "n1", "bad", &len);
	hex(buf, len, out);
	assert_string_equal(out, ACK_N1 "3a07080312036261" "64");
	free(buf);
}

static void test_node_id_and_initial_request(void **state)
{
	struct km_ads_client *c = client();
	Kmesh__Xds__DeltaDiscoveryRequest *r;
	size_t len;
	uint8_t *buf;
	int seen_ips = 0;

	(void)state;
	assert_string_equal(c->node_id, "ztunnel~10.1.2.3~kmesh-x.kmesh-system~kmesh-system.svc.cluster.local");
	buf = km_ads_build_request(c, &c->address, 1, NULL, NULL, &len);
	r = kmesh__xds__delta_discovery_request__unpack(NULL, len, buf);
	assert_non_null(r);
	assert_string_equal(r->node->id, c->node_id);
	assert_string_equal(r->response_nonce, "");
	assert_null(r->error_detail);
	for (size_t i = 0; i < r->node->metadata->n_fields; i++) {
		const Kmesh__Xds__Struct__FieldsEntry *e = r->node->metadata->fields[i];

		/* istiod decodes metadata into typed Go fields: every value must be a string */
		assert_int_equal(e->value->kind_case, KMESH__XDS__VALUE__KIND_STRING_VALUE);
		if (!strcmp(e->key, "INSTANCE_IPS")) {
			assert_string_equal(e->value->string_value, "10.1.2.3");
			seen_ips = 1;
		}
		assert_string_not_equal(e->key, "NODE_NAME"); /* unset values are left out */
	}
	assert_true(seen_ips);
	kmesh__xds__delta_discovery_request__free_unpacked(r, NULL);
	free(buf);
}

/* ---- applying responses -------------------------------------------------------------------- */

struct resp {
	Kmesh__Xds__DeltaDiscoveryResponse r;
	Kmesh__Xds__Resource res[4], *ptrs[4];
	Kmesh__Xds__Any any[4];
	uint8_t *payload[4];
};

/* The response as bytes on the wire, read through a view (as the ADS client does). */
static uint8_t *wire;

static struct km_response_view *view_of(struct resp *p)
{
	static struct km_response_view v;
	size_t len = kmesh__xds__delta_discovery_response__get_packed_size(&p->r);

	free(wire);
	wire = malloc(len + 1);
	kmesh__xds__delta_discovery_response__pack(&p->r, wire);
	assert_int_equal(km_response_view_init(&v, wire, len), 0);
	return &v;
}

struct accepted_log {
	char names[4][64];
	size_t n;
};

static void note_accepted(void *arg, const char *name, const char *version)
{
	struct accepted_log *a = arg;

	assert_string_equal(version, "v1");
	snprintf(a->names[a->n++], sizeof(a->names[0]), "%s", name);
}

static void add(struct resp *p, const char *name, const char *type, const ProtobufCMessage *m)
{
	size_t i = p->r.n_resources;

	kmesh__xds__resource__init(&p->res[i]);
	kmesh__xds__any__init(&p->any[i]);
	p->payload[i] = malloc(protobuf_c_message_get_packed_size(m));
	p->any[i].value.len = protobuf_c_message_pack(m, p->payload[i]);
	p->any[i].value.data = p->payload[i];
	p->any[i].type_url = (char *)type;
	p->res[i].name = (char *)name;
	p->res[i].version = "v1";
	p->res[i].resource = &p->any[i];
	p->ptrs[i] = &p->res[i];
	p->r.resources = p->ptrs;
	p->r.n_resources++;
}

static void test_apply_address_partial(void **state)
{
	struct km_oplist ops;
	struct km_model m;
	struct resp p = { 0 };
	struct km_xds_result res;
	struct accepted_log acc = { 0 };
	struct km_response_view *v;
	Kmesh__Workload__Workload good = KMESH__WORKLOAD__WORKLOAD__INIT, bad = KMESH__WORKLOAD__WORKLOAD__INIT;
	Kmesh__Workload__Address ag = KMESH__WORKLOAD__ADDRESS__INIT, ab = KMESH__WORKLOAD__ADDRESS__INIT;
	uint8_t ip[4] = { 10, 0, 0, 1 }, ip3[3] = { 1, 2, 3 };
	ProtobufCBinaryData addr = { 4, ip }, addr3 = { 3, ip3 };
	char *removed[] = { "Kubernetes//Pod/ns/good", "never-sent" };

	(void)state;
	km_log_set_level(KM_LOG_ERROR);
	km_oplist_init(&ops);
	km_model_init(&m, &ops, NULL);
	kmesh__xds__delta_discovery_response__init(&p.r);
	p.r.type_url = KM_TYPE_ADDRESS;
	good.uid = "Kubernetes//Pod/ns/good";
	good.n_addresses = 1;
	good.addresses = &addr;
	ag.type_case = KMESH__WORKLOAD__ADDRESS__TYPE_WORKLOAD;
	ag.workload = &good;
	bad.uid = "Kubernetes//Pod/ns/bad";
	bad.n_addresses = 1;
	bad.addresses = &addr3;
	ab.type_case = KMESH__WORKLOAD__ADDRESS__TYPE_WORKLOAD;
	ab.workload = &bad;
	add(&p, "Kubernetes//Pod/ns/good", KM_TYPE_ADDRESS, &ag.base);
	add(&p, "Kubernetes//Pod/ns/bad", KM_TYPE_ADDRESS, &ab.base);
	add(&p, "Kubernetes//Pod/ns/wrongtype", KM_TYPE_AUTHORIZATION, &ag.base);
	add(&p, "Kubernetes//Pod/ns/other", KM_TYPE_ADDRESS, &ag.base); /* name != payload */
	v = view_of(&p);
	assert_string_equal(v->type_url, KM_TYPE_ADDRESS);
	assert_int_equal(v->n_resources, 4);
	/* in slices, as the agent applies a large response: one resource, then the rest */
	memset(&res, 0, sizeof(res));
	assert_int_equal(km_xds_apply_address_some(&m, v, 1, note_accepted, &acc, &res), 1);
	assert_int_equal(res.applied, 1);
	assert_non_null(km_model_find_workload(&m, "Kubernetes//Pod/ns/good"));
	while (km_xds_apply_address_some(&m, v, 1, note_accepted, &acc, &res))
		;
	km_xds_apply_address_end(&m, v, &res);
	km_response_view_free(v);
	assert_int_equal(res.applied, 1);
	assert_int_equal(res.rejected, 3);
	assert_int_equal(acc.n, 1);
	assert_string_equal(acc.names[0], "Kubernetes//Pod/ns/good");
	assert_non_null(strstr(res.error, "Kubernetes//Pod/ns/bad: address must be 4 or 16 bytes"));
	assert_non_null(strstr(res.error, "payload type"));
	assert_non_null(km_model_find_workload(&m, "Kubernetes//Pod/ns/good"));
	assert_null(km_model_find_workload(&m, "Kubernetes//Pod/ns/bad"));

	/* removals: by name, unknown names ignored */
	p.r.n_resources = 0;
	p.r.removed_resources = removed;
	p.r.n_removed_resources = 2;
	v = view_of(&p);
	assert_int_equal(v->n_removed, 2);
	km_xds_apply_address(&m, v, NULL, NULL, &res);
	km_response_view_free(v);
	assert_int_equal(res.removed, 1);
	assert_null(km_model_find_workload(&m, "Kubernetes//Pod/ns/good"));
	for (int i = 0; i < 4; i++)
		free(p.payload[i]);
	km_model_free(&m);
	km_oplist_free(&ops);
	km_log_set_level(KM_LOG_INFO);
	free(wire);
	wire = NULL;
}

static void test_apply_authorization(void **state)
{
	struct km_policy_store ps;
	struct resp p = { 0 };
	struct km_xds_result res;
	struct km_response_view *v;
	Kmesh__Security__Authorization a = KMESH__SECURITY__AUTHORIZATION__INIT, noname = KMESH__SECURITY__AUTHORIZATION__INIT;
	char *removed[] = { "demo/p1" };

	(void)state;
	km_log_set_level(KM_LOG_ERROR);
	km_policy_store_init(&ps);
	kmesh__xds__delta_discovery_response__init(&p.r);
	p.r.type_url = KM_TYPE_AUTHORIZATION;
	a.name = "p1";
	a.namespace_ = "demo";
	a.action = KMESH__SECURITY__ACTION__DENY;
	add(&p, "demo/p1", KM_TYPE_AUTHORIZATION, &a.base);
	add(&p, "demo/", KM_TYPE_AUTHORIZATION, &noname.base);
	v = view_of(&p);
	km_xds_apply_authorization(&ps, v, NULL, NULL, &res);
	km_response_view_free(v);
	assert_int_equal(res.applied, 1);
	assert_int_equal(res.rejected, 1);
	assert_int_equal(ps.count, 1);
	assert_int_equal(km_policy_store_find(&ps, "demo/p1")->action, KMESH__SECURITY__ACTION__DENY);
	p.r.n_resources = 0;
	p.r.removed_resources = removed;
	p.r.n_removed_resources = 1;
	v = view_of(&p);
	km_xds_apply_authorization(&ps, v, NULL, NULL, &res);
	km_response_view_free(v);
	assert_int_equal(ps.count, 0);
	for (int i = 0; i < 2; i++)
		free(p.payload[i]);
	km_policy_store_free(&ps);
	km_log_set_level(KM_LOG_INFO);
}

static void test_view_rejects_malformed_bytes(void **state)
{
	struct km_response_view v;
	const uint8_t truncated[] = { 0x12, 0x05, 0x0a }; /* resources field claims 5 bytes, has 1 */
	const uint8_t bad_wire[] = { 0x0b };                /* wire type 3 (groups) */
	const uint8_t empty[] = { 0 };

	(void)state;
	assert_int_equal(km_response_view_init(&v, truncated, sizeof(truncated)), -1);
	assert_int_equal(km_response_view_init(&v, bad_wire, sizeof(bad_wire)), -1);
	assert_int_equal(km_response_view_init(&v, empty, 0), 0); /* an empty message is valid */
	assert_string_equal(v.type_url, "");
	km_response_view_free(&v);
}

/* A DeltaDiscoveryResponse assembled field by field, in the order given (protobuf allows any). */
struct wire_msg {
	uint8_t b[4096];
	size_t len;
};

static void wire_field(struct wire_msg *w, uint8_t key, const void *val, size_t n)
{
	assert_true(n < 128 && w->len + n + 2 <= sizeof(w->b));
	w->b[w->len++] = key;
	w->b[w->len++] = (uint8_t)n;
	memcpy(w->b + w->len, val, n);
	w->len += n;
}

static void wire_resource(struct wire_msg *w, const char *name, const char *type)
{
	Kmesh__Xds__Any any = KMESH__XDS__ANY__INIT;
	Kmesh__Xds__Resource r = KMESH__XDS__RESOURCE__INIT;
	uint8_t buf[256];

	any.type_url = (char *)type;
	r.name = (char *)name;
	r.version = "v1";
	r.resource = &any;
	assert_true(kmesh__xds__resource__get_packed_size(&r) <= sizeof(buf));
	wire_field(w, 0x12, buf, kmesh__xds__resource__pack(&r, buf));
}

/* Every resource the view yields now, appended to names ("a,b,"); the last answer of next. */
static int take_resources(struct km_response_view *v, char *names, size_t cap)
{
	Kmesh__Xds__Resource *r;
	int got;

	while ((got = km_response_view_next(v, &r)) == 1) {
		assert_non_null(r);
		snprintf(names + strlen(names), cap - strlen(names), "%s,", r->name);
	}
	return got;
}

/* A response applied while it arrives (ads_client streams large ones): cut at every byte, the
 * view yields exactly the resources that arrived whole, waits for the rest, then reads its
 * type, nonce and removed names; the bytes it says it is done with may be gone (their pages
 * given back) without losing a removed name, even one placed before the resources. */
static void test_view_grows_as_bytes_arrive(void **state)
{
	struct wire_msg w = { .len = 0 };
	const char *A = KM_TYPE_ADDRESS;

	(void)state;
	wire_field(&w, 0x32, "gone-first", 10); /* removed_resources before the resources */
	wire_resource(&w, "a", A);
	size_t a_end = w.len; /* the first resource is whole from here */
	wire_resource(&w, "b", A);
	wire_field(&w, 0x32, "gone-mid", 8);
	wire_resource(&w, "c", A);
	wire_field(&w, 0x22, A, strlen(A)); /* type_url after the resources, as Go encodes it */
	wire_field(&w, 0x2a, "n7", 2);
	wire_field(&w, 0x32, "gone-last", 9);
	for (size_t cut = 0; cut <= w.len; cut++) {
		struct km_response_view v;
		uint8_t copy[sizeof(w.b)];
		char names[64] = "", removed[128] = "", name[KM_XDS_NAME_MAX + 1];
		const char *type;
		size_t skipped = 0, consumed;
		int first;

		memcpy(copy, w.b, w.len);
		km_response_view_begin(&v, copy, w.len);
		assert_int_equal(km_response_view_grow(&v, cut), 0);
		first = km_response_view_first_type(&v, &type);
		assert_int_equal(first, cut < a_end ? KM_VIEW_WAIT : 1);
		if (first == 1)
			assert_string_equal(type, A);
		assert_int_equal(take_resources(&v, names, sizeof(names)),
				 cut < w.len ? KM_VIEW_WAIT : 0);
		assert_int_equal(km_response_view_complete(&v), cut == w.len);
		/* the bytes the view is done with are given back (zeroed here) while more arrive */
		consumed = km_response_view_consumed(&v);
		memset(copy, 0, consumed);
		assert_int_equal(km_response_view_grow(&v, w.len), 0);
		assert_int_equal(take_resources(&v, names, sizeof(names)), 0);
		assert_string_equal(names, "a,b,c,");
		consumed = km_response_view_consumed(&v);
		memset(copy, 0, consumed);
		while (km_response_view_next_removed(&v, name, &skipped))
			snprintf(removed + strlen(removed), sizeof(removed) - strlen(removed), "%.20s,", name);
		assert_string_equal(removed, "gone-first,gone-mid,gone-last,");
		assert_string_equal(v.type_url, A);
		assert_string_equal(v.nonce, "n7");
		assert_int_equal(v.n_resources, 3);
		assert_int_equal(v.n_removed, 3);
		km_response_view_free(&v);
	}
}

/* Bytes that cannot be a response are refused as soon as they arrive, not at the end; a
 * length that runs past the whole message is refused before its bytes come. */
static void test_view_refuses_bad_bytes_as_they_arrive(void **state)
{
	struct wire_msg w = { .len = 0 };
	struct km_response_view v;

	(void)state;
	wire_resource(&w, "a", KM_TYPE_ADDRESS);
	size_t good = w.len;
	w.b[w.len++] = 0x0b; /* wire type 3 (groups) */
	w.b[w.len++] = 0;
	km_response_view_begin(&v, w.b, w.len + 100);
	assert_int_equal(km_response_view_grow(&v, good), 0);
	assert_int_equal(km_response_view_grow(&v, good + 1), -1);
	km_response_view_free(&v);

	const uint8_t too_long[] = { 0x12, 0x7f, 0x0a }; /* 127 bytes claimed, the message has 50 */
	km_response_view_begin(&v, too_long, 50);
	assert_int_equal(km_response_view_grow(&v, 2), -1);
	km_response_view_free(&v);
	/* an Authorization response is not begun as an Address one */
	w.len = 0;
	wire_resource(&w, "p", KM_TYPE_AUTHORIZATION);
	km_response_view_begin(&v, w.b, w.len + 10);
	assert_int_equal(km_response_view_grow(&v, w.len), 0);
	const char *type;
	assert_int_equal(km_response_view_first_type(&v, &type), 1);
	assert_string_equal(type, KM_TYPE_AUTHORIZATION);
	km_response_view_free(&v);
}

/* istiod sends one Port per Kubernetes ServicePort, so a port served over UDP and TCP (kube-dns:
 * 53/UDP + 53/TCP) arrives twice. Never a NACK: the same target port collapses into one entry;
 * different target ports for one service port keep the last one listed (as ztunnel's port map
 * does). The same holds for a workload's own port mapping of a service. */
static void test_port_listed_per_protocol_is_accepted(void **state)
{
	Kmesh__Workload__Service s = KMESH__WORKLOAD__SERVICE__INIT;
	Kmesh__Workload__Workload w = KMESH__WORKLOAD__WORKLOAD__INIT;
	Kmesh__Workload__Port p[5] = { KMESH__WORKLOAD__PORT__INIT, KMESH__WORKLOAD__PORT__INIT,
				       KMESH__WORKLOAD__PORT__INIT, KMESH__WORKLOAD__PORT__INIT,
				       KMESH__WORKLOAD__PORT__INIT };
	Kmesh__Workload__Port *pp[5] = { &p[0], &p[1], &p[2], &p[3], &p[4] };
	Kmesh__Workload__PortList pl = KMESH__WORKLOAD__PORT_LIST__INIT;
	Kmesh__Workload__Workload__ServicesEntry e = KMESH__WORKLOAD__WORKLOAD__SERVICES_ENTRY__INIT;
	Kmesh__Workload__Workload__ServicesEntry *ep = &e;
	uint8_t vip[4] = { 10, 96, 0, 10 }, ip[4] = { 10, 244, 0, 5 };
	ProtobufCBinaryData a = { 4, ip };
	Kmesh__Workload__NetworkAddress na = KMESH__WORKLOAD__NETWORK_ADDRESS__INIT;
	Kmesh__Workload__NetworkAddress *nap = &na;
	struct km_service_res *out = NULL;
	struct km_workload_res *wout = NULL;
	char err[256] = "";

	(void)state;
	p[0].service_port = 53, p[0].target_port = 53;   /* UDP */
	p[1].service_port = 53, p[1].target_port = 53;   /* TCP */
	p[2].service_port = 9153, p[2].target_port = 0;
	p[3].service_port = 9153, p[3].target_port = 9153; /* differs: the last one listed wins */
	p[4].service_port = 8080, p[4].target_port = 80;
	s.name = "kube-dns";
	s.namespace_ = "kube-system";
	s.hostname = "kube-dns.kube-system.svc.cluster.local";
	na.address.len = 4;
	na.address.data = vip;
	s.n_addresses = 1;
	s.addresses = &nap;
	s.n_ports = 5;
	s.ports = pp;
	assert_int_equal(km_pb_service(&s, &out, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(out->n_ports, 3);
	assert_int_equal(out->ports[0].service_port, 53);
	assert_int_equal(out->ports[0].target_port, 53);
	assert_int_equal(out->ports[1].service_port, 9153);
	assert_int_equal(out->ports[1].target_port, 9153);
	assert_int_equal(out->ports[2].service_port, 8080);
	assert_int_equal(out->ports[2].target_port, 80);
	km_service_res_free(out);

	/* the same list as a workload's mapping for the service */
	w.uid = "Kubernetes//Pod/kube-system/coredns-1";
	w.n_addresses = 1;
	w.addresses = &a;
	pl.n_ports = 5;
	pl.ports = pp;
	e.key = "kube-system/kube-dns.kube-system.svc.cluster.local";
	e.value = &pl;
	w.n_services = 1;
	w.services = &ep;
	assert_int_equal(km_pb_workload(&w, &wout, err, sizeof(err)), 0);
	assert_int_equal(wout->n_services, 1);
	assert_int_equal(wout->services[0].n_ports, 3);
	assert_int_equal(km_membership_ports(wout, &wout->services[0])[1].target_port, 9153);
	km_workload_res_free(wout);
}

/* ---- the first request past istiod's limit, and the sweep after its whole state ------------- */

#define FAKE_HELD 500
static size_t fake_marks, fake_sweeps;

static size_t fake_each_version(const void *store, km_version_cb cb, void *arg)
{
	char name[40], version[20]; /* written for the call, as the model writes a split uid */

	(void)store;
	for (int i = 0; cb && i < FAKE_HELD; i++) {
		snprintf(name, sizeof(name), "Kubernetes//Pod/bench/w%d", i);
		snprintf(version, sizeof(version), "%x", i + 0x1000);
		cb(arg, name, version);
	}
	return FAKE_HELD;
}

static size_t fake_mark(void *store)
{
	(void)store;
	fake_marks++;
	return FAKE_HELD;
}

static size_t fake_sweep(void *store)
{
	(void)store;
	fake_sweeps++;
	return 7;
}

/* The entries of a first request; from the fake store (fake_each_version), each checked to be
 * its own name and version. */
static size_t initial_versions(const uint8_t *buf, size_t len, int fake)
{
	Kmesh__Xds__DeltaDiscoveryRequest *r = kmesh__xds__delta_discovery_request__unpack(NULL, len, buf);
	size_t n;

	assert_non_null(r);
	assert_non_null(r->node); /* withheld or not, it is a first request */
	n = r->n_initial_resource_versions;
	for (size_t i = 0; fake && i < n; i++) { /* its own name and version, though written per call */
		char name[64], version[24];

		snprintf(name, sizeof(name), "Kubernetes//Pod/bench/w%zu", i);
		snprintf(version, sizeof(version), "%zx", i + 0x1000);
		assert_string_equal(r->initial_resource_versions[i]->key, name);
		assert_string_equal(r->initial_resource_versions[i]->value, version);
	}
	kmesh__xds__delta_discovery_request__free_unpacked(r, NULL);
	return n;
}

/* Whether a first request names a version for name. */
static int names_version(const uint8_t *buf, size_t len, const char *name)
{
	Kmesh__Xds__DeltaDiscoveryRequest *r = kmesh__xds__delta_discovery_request__unpack(NULL, len, buf);
	int found = 0;

	assert_non_null(r);
	for (size_t i = 0; i < r->n_initial_resource_versions; i++)
		found |= strcmp(r->initial_resource_versions[i]->key, name) == 0;
	kmesh__xds__delta_discovery_request__free_unpacked(r, NULL);
	return found;
}

/* istiod refuses requests over 4 MiB (grpc-status 8): the first request names every version
 * held only while that fits the limit, and otherwise none, marking the store for the sweep. */
static void test_initial_request_within_limit(void **state)
{
	struct km_ads_client *c = client();
	struct km_ads_type *t = &c->address;
	struct km_xds_result res = { 0 };
	size_t full, len;
	uint8_t *buf;

	(void)state;
	km_log_set_level(KM_LOG_ERROR);
	t->each_version = fake_each_version;
	t->mark = fake_mark;
	t->sweep = fake_sweep;
	fake_marks = fake_sweeps = 0;
	c->max_initial = KM_ADS_MAX_INITIAL_DEFAULT;
	buf = km_ads_initial_request(c, t, &full);
	assert_int_equal(initial_versions(buf, full, 1), FAKE_HELD);
	assert_false(t->withheld);
	assert_int_equal(fake_marks, 0);
	free(buf);
	/* the size is known before building: exactly the limit still fits ... */
	c->max_initial = full;
	buf = km_ads_initial_request(c, t, &len);
	assert_int_equal(len, full);
	assert_int_equal(initial_versions(buf, len, 1), FAKE_HELD);
	assert_false(t->withheld);
	free(buf);
	/* ... one byte less does not: no versions at all, and the store is marked */
	c->max_initial = full - 1;
	buf = km_ads_initial_request(c, t, &len);
	assert_true(len <= c->max_initial);
	assert_int_equal(initial_versions(buf, len, 1), 0);
	assert_true(t->withheld);
	assert_int_equal(t->withholds, 1);
	assert_int_equal(fake_marks, 1);
	free(buf);
	/* the first response is the whole state: the sweep runs once, for that response only */
	assert_int_equal(km_ads_sweep_after_whole_state(c, t, &res), 7);
	assert_int_equal(t->swept, 7);
	assert_false(t->withheld);
	assert_int_equal(km_ads_sweep_after_whole_state(c, t, &res), 0);
	assert_int_equal(fake_sweeps, 1);
	/* a rejected resource that could not be named might be one held: nothing is swept */
	buf = km_ads_initial_request(c, t, &len);
	free(buf);
	res.unnamed = 1;
	assert_int_equal(km_ads_sweep_after_whole_state(c, t, &res), 0);
	assert_int_equal(fake_sweeps, 1);
	assert_false(t->withheld);
	km_log_set_level(KM_LOG_INFO);
}

static size_t test_model_mark(void *store)
{
	return km_model_mark_unconfirmed(store);
}

static size_t test_model_sweep(void *store)
{
	size_t n = km_model_sweep_unconfirmed(store);

	km_model_flush(store);
	return n;
}

static size_t test_model_each_version(const void *store, km_version_cb cb, void *arg)
{
	return km_model_each_version(store, cb, arg);
}

static void test_model_set_version(void *store, const char *name, const char *version)
{
	km_model_set_version(store, name, version);
}

static void set_version_cb(void *arg, const char *name, const char *version)
{
	struct km_ads_type *t = arg;

	t->set_version(t->store, name, version);
}

/* A workload with one IPv4 address, as an Address message. */
struct wl_msg {
	Kmesh__Workload__Workload w;
	Kmesh__Workload__Address a;
	uint8_t ip[4];
	ProtobufCBinaryData addr;
};

static void wl_msg(struct wl_msg *m, const char *uid, uint8_t last, size_t ip_len)
{
	kmesh__workload__workload__init(&m->w);
	kmesh__workload__address__init(&m->a);
	m->ip[0] = 10, m->ip[1] = 0, m->ip[2] = 0, m->ip[3] = last;
	m->addr.len = ip_len;
	m->addr.data = m->ip;
	m->w.uid = (char *)uid;
	m->w.name = (char *)(strrchr(uid, '/') ? strrchr(uid, '/') + 1 : uid); /* kept split */
	m->w.n_addresses = 1;
	m->w.addresses = &m->addr;
	m->a.type_case = KMESH__WORKLOAD__ADDRESS__TYPE_WORKLOAD;
	m->a.workload = &m->w;
}

static int deletes_backend(const struct km_oplist *ops, uint32_t id)
{
	for (size_t i = 0; i < ops->n; i++)
		if (ops->ops[i].table == KM_OP_BACKEND && ops->ops[i].del && ops->ops[i].be.id == id)
			return 1;
	return 0;
}

static size_t count_deletes(const struct km_oplist *ops)
{
	size_t n = 0;

	for (size_t i = 0; i < ops->n; i++)
		n += ops->ops[i].del;
	return n;
}

/* After a stream that named no versions, the first response is istiod's whole state: what it
 * re-sends unchanged stays untouched (no delete, no re-add), what it rejects keeps its previous
 * version, and only what it does not name is removed — after the whole response is applied. */
static void test_whole_state_sweeps_only_what_istiod_dropped(void **state)
{
	static const char *uid[4] = { "Kubernetes//Pod/ns/a", "Kubernetes//Pod/ns/b",
				      "Kubernetes//Pod/ns/c", "Kubernetes//Pod/ns/d" };
	struct km_ads_client *c = client();
	struct km_ads_type *t = &c->address;
	struct km_oplist ops;
	struct km_model m;
	struct resp p = { 0 }, q = { 0 };
	struct wl_msg w[4], changed, bad;
	struct km_xds_result res;
	struct km_response_view *v;
	uint32_t id_a, id_d;
	size_t len;
	uint8_t *buf;

	(void)state;
	km_log_set_level(KM_LOG_ERROR);
	km_oplist_init(&ops);
	km_model_init(&m, &ops, NULL);
	t->store = &m;
	t->each_version = test_model_each_version;
	t->set_version = test_model_set_version;
	t->mark = test_model_mark;
	t->sweep = test_model_sweep;
	/* held: a, b, c, d */
	kmesh__xds__delta_discovery_response__init(&p.r);
	p.r.type_url = KM_TYPE_ADDRESS;
	for (int i = 0; i < 4; i++) {
		wl_msg(&w[i], uid[i], (uint8_t)(i + 1), 4);
		add(&p, uid[i], KM_TYPE_ADDRESS, &w[i].a.base);
	}
	v = view_of(&p);
	km_xds_apply_address(&m, v, set_version_cb, t, &res);
	km_response_view_free(v);
	assert_int_equal(res.applied, 4);
	assert_int_equal(km_model_each_version(&m, NULL, NULL), 4);
	id_a = km_model_id_of(&m, uid[0]);
	id_d = km_model_id_of(&m, uid[3]);
	km_oplist_clear(&ops);

	/* a new stream, over the limit: no versions named, everything marked */
	c->max_initial = 64;
	buf = km_ads_initial_request(c, t, &len);
	assert_int_equal(initial_versions(buf, len, 0), 0);
	assert_true(t->withheld);
	free(buf);

	/* istiod's whole state: a unchanged, b rejected (its previous version stays), c changed;
	 * d is gone */
	kmesh__xds__delta_discovery_response__init(&q.r);
	q.r.type_url = KM_TYPE_ADDRESS;
	wl_msg(&bad, uid[1], 2, 3);
	wl_msg(&changed, uid[2], 33, 4);
	add(&q, uid[0], KM_TYPE_ADDRESS, &w[0].a.base);
	add(&q, uid[1], KM_TYPE_ADDRESS, &bad.a.base);
	add(&q, uid[2], KM_TYPE_ADDRESS, &changed.a.base);
	v = view_of(&q);
	memset(&res, 0, sizeof(res));
	/* in slices: nothing is removed before the last resource is in */
	assert_int_equal(km_xds_apply_address_some(&m, v, 1, set_version_cb, t, &res), 1);
	assert_non_null(km_model_find_workload(&m, uid[3]));
	while (km_xds_apply_address_some(&m, v, 1, set_version_cb, t, &res))
		;
	assert_non_null(km_model_find_workload(&m, uid[3]));
	assert_int_equal(km_ads_sweep_after_whole_state(c, t, &res), 1);
	km_xds_apply_address_end(&m, v, &res);
	km_response_view_free(v);
	assert_int_equal(res.applied, 2);
	assert_int_equal(res.rejected, 1);
	assert_non_null(km_model_find_workload(&m, uid[0]));
	assert_non_null(km_model_find_workload(&m, uid[1]));
	assert_int_equal(km_model_find_workload(&m, uid[1])->addrs[0].bytes[15], 2);
	assert_int_equal(km_model_find_workload(&m, uid[2])->addrs[0].bytes[15], 33);
	assert_null(km_model_find_workload(&m, uid[3]));
	assert_int_equal(t->swept, 1);
	/* the rows: d's backend deleted; a's never */
	assert_true(deletes_backend(&ops, id_d));
	assert_false(deletes_backend(&ops, id_a));
	km_oplist_clear(&ops);

	/* the next stream still withholds (a sweep never follows a stream that named versions,
	 * and a stream that withheld sweeps once) */
	c->max_initial = KM_ADS_MAX_INITIAL_DEFAULT;
	buf = km_ads_initial_request(c, t, &len);
	assert_int_equal(initial_versions(buf, len, 0), 3);
	for (int i = 0; i < 3; i++) /* the model writes a split uid for the call: each copied */
		assert_true(names_version(buf, len, uid[i]));
	assert_false(t->withheld);
	free(buf);
	memset(&res, 0, sizeof(res));
	assert_int_equal(km_ads_sweep_after_whole_state(c, t, &res), 0);
	assert_int_equal(count_deletes(&ops), 0);
	assert_int_equal(km_model_each_version(&m, NULL, NULL), 3);

	for (int i = 0; i < 4; i++) {
		free(p.payload[i]);
		free(q.payload[i]);
	}
	km_model_free(&m);
	km_oplist_free(&ops);
	free(wire);
	wire = NULL;
	km_log_set_level(KM_LOG_INFO);
}

/* The same for Authorization: re-sent policies stay, a rejected one named stays, the rest go. */
static void test_whole_state_sweeps_policies(void **state)
{
	struct km_policy_store ps;
	struct resp p = { 0 }, q = { 0 };
	struct km_xds_result res;
	struct km_response_view *v;
	Kmesh__Security__Authorization a[3] = { KMESH__SECURITY__AUTHORIZATION__INIT,
						KMESH__SECURITY__AUTHORIZATION__INIT,
						KMESH__SECURITY__AUTHORIZATION__INIT };
	static const char *names[3] = { "demo/p0", "demo/p1", "demo/p2" };
	uint32_t bad_port = 70000; /* not a port: the policy is rejected */
	Kmesh__Security__Match match = KMESH__SECURITY__MATCH__INIT;
	Kmesh__Security__Match *matches[1] = { &match };
	Kmesh__Security__Clause clause = KMESH__SECURITY__CLAUSE__INIT;
	Kmesh__Security__Clause *clauses[1] = { &clause };
	Kmesh__Security__Rule rule = KMESH__SECURITY__RULE__INIT;
	Kmesh__Security__Rule *rules[1] = { &rule };
	Kmesh__Security__Authorization broken = KMESH__SECURITY__AUTHORIZATION__INIT;

	(void)state;
	km_log_set_level(KM_LOG_ERROR);
	km_policy_store_init(&ps);
	kmesh__xds__delta_discovery_response__init(&p.r);
	p.r.type_url = KM_TYPE_AUTHORIZATION;
	for (int i = 0; i < 3; i++) {
		a[i].name = (char *)names[i] + 5;
		a[i].namespace_ = "demo";
		a[i].action = KMESH__SECURITY__ACTION__DENY;
		add(&p, names[i], KM_TYPE_AUTHORIZATION, &a[i].base);
	}
	v = view_of(&p);
	km_xds_apply_authorization(&ps, v, NULL, NULL, &res);
	km_response_view_free(v);
	assert_int_equal(ps.count, 3);
	assert_int_equal(km_policy_store_mark_unconfirmed(&ps), 3);
	/* whole state: p0 again, p1 rejected (a destination port out of range); p2 gone */
	match.n_destination_ports = 1;
	match.destination_ports = &bad_port;
	clause.n_matches = 1;
	clause.matches = matches;
	rule.n_clauses = 1;
	rule.clauses = clauses;
	broken = a[1];
	broken.n_rules = 1;
	broken.rules = rules;
	kmesh__xds__delta_discovery_response__init(&q.r);
	q.r.type_url = KM_TYPE_AUTHORIZATION;
	add(&q, names[0], KM_TYPE_AUTHORIZATION, &a[0].base);
	add(&q, names[1], KM_TYPE_AUTHORIZATION, &broken.base);
	v = view_of(&q);
	km_xds_apply_authorization(&ps, v, NULL, NULL, &res);
	km_response_view_free(v);
	assert_int_equal(res.rejected, 1);
	assert_int_equal(res.unnamed, 0);
	assert_int_equal(km_policy_store_sweep_unconfirmed(&ps), 1);
	assert_non_null(km_policy_store_find(&ps, names[0]));
	assert_non_null(km_policy_store_find(&ps, names[1]));
	assert_null(km_policy_store_find(&ps, names[2]));
	assert_int_equal(ps.count, 2);
	for (int i = 0; i < 3; i++)
		free(p.payload[i]);
	for (int i = 0; i < 2; i++)
		free(q.payload[i]);
	km_policy_store_free(&ps);
	free(wire);
	wire = NULL;
	km_log_set_level(KM_LOG_INFO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ack_and_nack_bytes),
		cmocka_unit_test(test_node_id_and_initial_request),
		cmocka_unit_test(test_apply_address_partial),
		cmocka_unit_test(test_apply_authorization),
		cmocka_unit_test(test_view_rejects_malformed_bytes),
		cmocka_unit_test(test_view_grows_as_bytes_arrive),
		cmocka_unit_test(test_view_refuses_bad_bytes_as_they_arrive),
		cmocka_unit_test(test_port_listed_per_protocol_is_accepted),
		cmocka_unit_test(test_initial_request_within_limit),
		cmocka_unit_test(test_whole_state_sweeps_only_what_istiod_dropped),
		cmocka_unit_test(test_whole_state_sweeps_policies),
	};

	return cmocka_run_group_tests_name("xds", tests, NULL, NULL);
}
