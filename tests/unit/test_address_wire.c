/* test_address_wire.c — the hand-written readers of istiod's messages (address_wire.h, the
 * Resource reader in response_view.c) on messages built byte by byte: what they make of each,
 * and, through the differential fuzz target's own check (included here), that protobuf-c makes
 * the same of it, including protobuf-c's quirks: merges of a singular message given twice, oneofs
 * given twice, packed and unpacked runs, unknown fields, refused wire types. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../fuzz/fuzz_address_wire.c"

/* A message under construction. */
struct msg {
	uint8_t b[1024];
	size_t n;
};

static void varint(struct msg *m, uint64_t v)
{
	do {
		m->b[m->n++] = (uint8_t)(v & 0x7f) | (v >= 0x80 ? 0x80 : 0);
		v >>= 7;
	} while (v);
}

static void key(struct msg *m, uint32_t num, unsigned type)
{
	varint(m, (uint64_t)num << 3 | type);
}

static void put_u32(struct msg *m, uint32_t num, uint64_t v)
{
	key(m, num, 0);
	varint(m, v);
}

static void put_bytes(struct msg *m, uint32_t num, const void *p, size_t n)
{
	key(m, num, 2);
	varint(m, n);
	memcpy(m->b + m->n, p, n);
	m->n += n;
}

static void put_str(struct msg *m, uint32_t num, const char *s)
{
	put_bytes(m, num, s, strlen(s));
}

static void put_msg(struct msg *m, uint32_t num, const struct msg *sub)
{
	put_bytes(m, num, sub->b, sub->n);
}

static void put_raw(struct msg *m, const void *p, size_t n)
{
	memcpy(m->b + m->n, p, n);
	m->n += n;
}

/* An Address holding this workload (field 1) or service (field 2). */
static struct msg address_of(uint32_t num, const struct msg *body)
{
	struct msg a = { .n = 0 };

	put_msg(&a, num, body);
	return a;
}

/* The result of reading an Address both ways (they must agree); the caller frees the scratch. */
struct read {
	struct km_pb_scratch s;
	int rc;
	struct km_service_res *svc;
	struct km_workload_res *wl;
	char *name, err[256];
};

static void read_address(const struct msg *a, struct read *r)
{
	LLVMFuzzerTestOneInput(a->b, a->n); /* protobuf-c agrees, or this aborts */
	km_pb_scratch_init(&r->s);
	r->rc = km_pb_address(km_pb_scratch_allocator(&r->s), a->b, a->n, &r->svc, &r->wl, &r->name,
			      r->err, sizeof(r->err));
}

static int refused(const struct msg *a)
{
	struct read r;
	int no;

	read_address(a, &r);
	no = r.rc != 0 && strcmp(r.err, "not a valid istio.workload.Address message") == 0;
	km_pb_scratch_free(&r.s);
	return no;
}

static const uint8_t ip1[4] = { 10, 0, 0, 1 }, ip9[4] = { 10, 0, 0, 9 };

/* A workload with every field the agent reads, packed by protobuf-c itself. */
static void test_full_workload(void **state)
{
	Kmesh__Workload__Workload w = KMESH__WORKLOAD__WORKLOAD__INIT;
	Kmesh__Workload__Address a = KMESH__WORKLOAD__ADDRESS__INIT;
	Kmesh__Workload__NetworkAddress wpa = KMESH__WORKLOAD__NETWORK_ADDRESS__INIT;
	Kmesh__Workload__GatewayAddress wp = KMESH__WORKLOAD__GATEWAY_ADDRESS__INIT;
	Kmesh__Workload__Locality loc = KMESH__WORKLOAD__LOCALITY__INIT;
	Kmesh__Workload__UInt32Value cap = KMESH__WORKLOAD__UINT32_VALUE__INIT;
	Kmesh__Workload__Port port = KMESH__WORKLOAD__PORT__INIT, *ports[] = { &port };
	Kmesh__Workload__PortList pl = KMESH__WORKLOAD__PORT_LIST__INIT;
	Kmesh__Workload__Workload__ServicesEntry e = KMESH__WORKLOAD__WORKLOAD__SERVICES_ENTRY__INIT;
	Kmesh__Workload__Workload__ServicesEntry *es[] = { &e };
	ProtobufCBinaryData addrs[] = { { 4, (uint8_t *)ip1 } };
	char *pols[] = { "ns/allow" };
	struct msg m = { .n = 0 };
	struct read r;

	(void)state;
	w.uid = "Kubernetes//Pod/ns/p1";
	w.name = "p1";
	w.namespace_ = "ns";
	w.service_account = "sa";
	w.trust_domain = "td";
	w.node = "n1";
	w.n_addresses = 1;
	w.addresses = addrs;
	w.status = KMESH__WORKLOAD__WORKLOAD_STATUS__UNHEALTHY;
	w.tunnel_protocol = KMESH__WORKLOAD__TUNNEL_PROTOCOL__HBONE;
	w.n_authorization_policies = 1;
	w.authorization_policies = pols;
	wpa.address = (ProtobufCBinaryData){ 4, (uint8_t *)ip9 };
	wp.destination_case = KMESH__WORKLOAD__GATEWAY_ADDRESS__DESTINATION_ADDRESS;
	wp.address = &wpa;
	wp.hbone_mtls_port = 15008;
	w.waypoint = &wp;
	loc.region = "r";
	loc.zone = "z";
	w.locality = &loc;
	cap.value = 3;
	w.capacity = &cap;
	port.service_port = 80;
	port.target_port = 8080;
	pl.n_ports = 1;
	pl.ports = ports;
	e.key = "ns/s1.ns.svc";
	e.value = &pl;
	w.n_services = 1;
	w.services = es;
	a.type_case = KMESH__WORKLOAD__ADDRESS__TYPE_WORKLOAD;
	a.workload = &w;
	m.n = kmesh__workload__address__pack(&a, m.b);
	read_address(&m, &r);
	assert_int_equal(r.rc, 0);
	assert_non_null(r.wl);
	assert_string_equal(r.name, "Kubernetes//Pod/ns/p1");
	assert_string_equal(r.wl->who->service_account, "sa");
	assert_string_equal(r.wl->where->zone, "z");
	assert_int_equal(r.wl->n_addrs, 1);
	assert_int_equal(r.wl->status, KM_WORKLOAD_UNHEALTHY);
	assert_int_equal(r.wl->tunnel_hbone, 1);
	assert_int_equal(km_wl_capacity(r.wl), 3);
	assert_int_equal(km_wl_waypoint(r.wl)->hbone_port, 15008);
	assert_int_equal(r.wl->n_services, 1);
	assert_int_equal(km_membership_ports(r.wl, &r.wl->services[0])[0].target_port, 8080);
	assert_string_equal(r.wl->policies[0], "ns/allow");
	km_pb_scratch_free(&r.s);
}

/* A gateway given twice is merged: the earlier's destination, the later's port. Two that both
 * lack a destination make protobuf-c refuse the whole message; so does the reader. */
static void test_gateway_merge(void **state)
{
	struct msg na = { .n = 0 }, g1 = { .n = 0 }, g2 = { .n = 0 }, w = { .n = 0 }, a;
	struct read r;

	(void)state;
	put_bytes(&na, 2, ip9, 4);
	put_msg(&g1, 2, &na);
	put_u32(&g1, 3, 15008);
	put_u32(&g2, 3, 15009);
	put_str(&w, 20, "u1");
	put_msg(&w, 8, &g1);
	put_msg(&w, 8, &g2);
	a = address_of(1, &w);
	read_address(&a, &r);
	assert_int_equal(r.rc, 0);
	assert_int_equal(km_wl_waypoint(r.wl)->kind, KM_WAYPOINT_ADDRESS);
	assert_int_equal(km_wl_waypoint(r.wl)->hbone_port, 15009);
	km_pb_scratch_free(&r.s);

	w.n = 0; /* the later one sets a port only, so does the earlier */
	put_str(&w, 20, "u1");
	put_msg(&w, 8, &g2);
	put_msg(&w, 8, &g2);
	a = address_of(1, &w);
	assert_true(refused(&a));
	w.n = 0; /* the same in network_gateway, which the agent does not read */
	put_str(&w, 20, "u1");
	put_msg(&w, 19, &g2);
	put_msg(&w, 19, &g2);
	a = address_of(1, &w);
	assert_true(refused(&a));
}

/* Locality given twice: strings the later one leaves out are the earlier's; a proto3 scalar the
 * later one leaves out is zero (capacity), as protobuf-c merges. */
static void test_locality_and_capacity_merge(void **state)
{
	struct msg l1 = { .n = 0 }, l2 = { .n = 0 }, c1 = { .n = 0 }, c2 = { .n = 0 }, w = { .n = 0 }, a;
	struct read r;

	(void)state;
	put_str(&l1, 1, "r1");
	put_str(&l1, 2, "z1");
	put_str(&l2, 2, "z2");
	put_u32(&c1, 1, 7);
	put_str(&w, 20, "u1");
	put_msg(&w, 24, &l1);
	put_msg(&w, 27, &c1);
	put_msg(&w, 24, &l2);
	put_msg(&w, 27, &c2);
	a = address_of(1, &w);
	read_address(&a, &r);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.wl->where->region, "r1");
	assert_string_equal(r.wl->where->zone, "z2");
	assert_int_equal(km_wl_capacity(r.wl), 0);
	km_pb_scratch_free(&r.s);
}

/* routing_preference: packed and unpacked runs, across two load_balancing messages, in order;
 * a packed run that ends inside a varint is refused. */
static void test_routing_preference_runs(void **state)
{
	static const uint8_t packed12[] = { 1, 2 }, cut[] = { 3, 0x80 };
	struct msg lb1 = { .n = 0 }, lb2 = { .n = 0 }, s = { .n = 0 }, a;
	struct read r;

	(void)state;
	put_bytes(&lb1, 1, packed12, sizeof(packed12));
	put_u32(&lb1, 2, 1);
	put_u32(&lb2, 1, 3);
	put_u32(&lb2, 1, 4);
	put_u32(&lb2, 2, 2);
	put_str(&s, 2, "ns");
	put_str(&s, 3, "h.ns");
	put_msg(&s, 8, &lb1);
	put_msg(&s, 8, &lb2);
	a = address_of(2, &s);
	read_address(&a, &r);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.name, "ns/h.ns");
	assert_int_equal(r.svc->n_scopes, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(r.svc->scopes[i], i + 1);
	assert_int_equal(r.svc->lb_mode, 2);
	km_pb_scratch_free(&r.s);

	lb1.n = 0;
	put_bytes(&lb1, 1, cut, sizeof(cut));
	s.n = 0;
	put_str(&s, 2, "ns");
	put_str(&s, 3, "h.ns");
	put_msg(&s, 8, &lb1);
	a = address_of(2, &s);
	assert_true(refused(&a));
}

/* Unknown fields of every scanned wire type are skipped; groups, wire types 6 and 7, a known
 * field of the wrong wire type, a bad tag, an over-long varint or length prefix, a length past
 * the end: refused. */
static void test_wire_types_and_framing(void **state)
{
	static const uint8_t unknown[] = {
		0xf8, 0x07, 1,                   /* 127, varint */
		0x81, 0x08, 1, 2, 3, 4, 5, 6, 7, 8, /* 128, 64-bit */
		0x8a, 0x08, 1, 'x',              /* 129, length-delimited */
		0x95, 0x08, 1, 2, 3, 4,          /* 130, 32-bit */
		0x82, 0x00, 0,                   /* number 0 in two bytes: unknown, not refused */
		0xfa, 0xff, 0xff, 0xff, 0x0f, 0, /* number 2^29 - 1, the largest, in 5 bytes */
	};
	static const uint8_t bad[][14] = {
		{ 0xa3, 0x01 },                   /* 20 as a group start */
		{ 0x0e, 1 },                      /* wire type 6 */
		{ 0x0f, 1 },                      /* wire type 7 */
		{ 0xa0, 0x01, 5 },                /* uid (a string) as a varint */
		{ 0x02, 0 },                      /* no tag bits */
		{ 0xf8, 0x07, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1 }, /* 11 bytes */
		{ 0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0 }, /* a 6-byte length prefix */
		{ 0x0a, 5, 'a' },                 /* a length past the end */
		{ 0xfa, 0xff, 0xff, 0xff, 0xff, 0x01 }, /* a 6-byte tag */
	};
	static const size_t bad_len[] = { 2, 2, 2, 3, 2, 13, 7, 3, 6 };
	struct msg w = { .n = 0 }, a;
	struct read r;

	(void)state;
	put_str(&w, 20, "u1");
	put_raw(&w, unknown, sizeof(unknown));
	put_u32(&w, 5, 1);  /* tunnel_protocol, not read */
	put_u32(&w, 14, 1); /* native_tunnel: a bool, not read */
	a = address_of(1, &w);
	read_address(&a, &r);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.name, "u1");
	km_pb_scratch_free(&r.s);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		w.n = 0;
		put_str(&w, 20, "u1");
		put_raw(&w, bad[i], bad_len[i]);
		a = address_of(1, &w);
		if (!refused(&a))
			fail_msg("case %zu was not refused", i);
	}
	w.n = 0; /* tunnel_protocol (an enum) of the wrong wire type, though never read */
	put_str(&w, 20, "u1");
	put_str(&w, 5, "x");
	a = address_of(1, &w);
	assert_true(refused(&a));
}

/* A oneof given twice keeps the last member whole: not merged with the first. */
static void test_oneof_last_whole(void **state)
{
	struct msg w1 = { .n = 0 }, w2 = { .n = 0 }, s = { .n = 0 }, a = { .n = 0 };
	struct read r;

	(void)state;
	put_str(&w1, 20, "u1");
	put_str(&w1, 1, "first");
	put_str(&w2, 20, "u2");
	put_str(&s, 2, "ns");
	put_str(&s, 3, "h");
	put_msg(&a, 1, &w1);
	put_msg(&a, 1, &w2);
	read_address(&a, &r);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.name, "u2");
	assert_null(r.wl->name);
	km_pb_scratch_free(&r.s);
	put_msg(&a, 2, &s);
	read_address(&a, &r);
	assert_int_equal(r.rc, 0);
	assert_non_null(r.svc);
	assert_null(r.wl);
	km_pb_scratch_free(&r.s);
}

/* An empty payload (an Any's value left out: no bytes, no pointer) is an Address of neither
 * kind. */
static void test_empty_payload(void **state)
{
	struct km_pb_scratch s;
	struct km_service_res *svc;
	struct km_workload_res *wl;
	char *name, err[256];

	(void)state;
	km_pb_scratch_init(&s);
	assert_int_equal(km_pb_address(km_pb_scratch_allocator(&s), NULL, 0, &svc, &wl, &name, err,
				       sizeof(err)),
			 -1);
	assert_string_equal(err, "Address holds neither a workload nor a service");
	km_pb_scratch_free(&s);
}

/* A string is what comes before its first NUL, as the C string protobuf-c makes. */
static void test_string_with_nul(void **state)
{
	struct msg w = { .n = 0 }, a;
	struct read r;

	(void)state;
	put_bytes(&w, 20, "ab\0cd", 5);
	a = address_of(1, &w);
	read_address(&a, &r);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.name, "ab");
	km_pb_scratch_free(&r.s);
}

/* The Resource: its payload given twice is merged (the type and bytes of the first where the
 * second has none); a ttl of the wrong shape is refused though never read. */
static void test_resource(void **state)
{
	struct msg any1 = { .n = 0 }, any2 = { .n = 0 }, res = { .n = 0 }, ttl = { .n = 0 };
	struct km_response_view v;
	Kmesh__Xds__Resource *out;
	uint8_t msg[256];

	(void)state;
	put_str(&any1, 1, "type/a");
	put_bytes(&any1, 2, "abc", 3);
	put_str(&any2, 1, "");
	put_str(&res, 1, "v1");
	put_msg(&res, 2, &any1);
	put_msg(&res, 2, &any2);
	put_str(&res, 3, "name");
	LLVMFuzzerTestOneInput(res.b, res.n);
	msg[0] = 2 << 3 | 2;
	msg[1] = (uint8_t)res.n;
	memcpy(msg + 2, res.b, res.n);
	assert_int_equal(km_response_view_init(&v, msg, res.n + 2), 0);
	assert_int_equal(km_response_view_next(&v, &out), 1);
	assert_non_null(out);
	/* "" given explicitly is a type_url protobuf-c keeps; the bytes left out are the first's */
	assert_string_equal(out->resource->type_url, "");
	assert_int_equal(out->resource->value.len, 3);
	assert_memory_equal(out->resource->value.data, "abc", 3);
	assert_string_equal(out->name, "name");
	km_response_view_free(&v);

	put_bytes(&ttl, 1, "x", 1); /* Duration.seconds is a varint */
	put_msg(&res, 6, &ttl);
	LLVMFuzzerTestOneInput(res.b, res.n);
	msg[1] = (uint8_t)res.n;
	memcpy(msg + 2, res.b, res.n);
	assert_int_equal(km_response_view_init(&v, msg, res.n + 2), 0);
	assert_int_equal(km_response_view_next(&v, &out), 1);
	assert_null(out);
	km_response_view_free(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_workload),
		cmocka_unit_test(test_gateway_merge),
		cmocka_unit_test(test_locality_and_capacity_merge),
		cmocka_unit_test(test_routing_preference_runs),
		cmocka_unit_test(test_wire_types_and_framing),
		cmocka_unit_test(test_oneof_last_whole),
		cmocka_unit_test(test_empty_payload),
		cmocka_unit_test(test_string_with_nul),
		cmocka_unit_test(test_resource),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
