/* test_tables.c — the map writer's row validation and application, against real BPF hash maps
 * of the shared layouts (needs CAP_BPF; skipped otherwise): every invalid row is refused with a
 * reason and writes nothing, references must exist, batches stop at the first failure, a full
 * table is TABLE_FULL, and dumps read rows back (their pages: test_dump.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include <bpf/bpf.h>

#include "kmesh_maps.h"
#include "shared/addr.h"
#include "services/map-writer/tables.h"

#include "tests/unit/tables_fixture.h"

static uint8_t vip[4] = { 10, 96, 0, 1 };

static int setup(void **state)
{
	static struct km_tables t;

	tables_open(&t);
	*state = &t;
	return 0;
}

static int teardown(void **state)
{
	tables_close(*state);
	return 0;
}

/* km_authz_index rows: a list's key, a field (or its default, value 0), a chunk within the list
 * (or the summary), and no more words than the chunk or summary has; without the table, none. */
static void test_authz_index_rows(void **state)
{
	struct km_tables *t = *state;
	Kmesh__Ipc__TableOp op = KMESH__IPC__TABLE_OP__INIT;
	Kmesh__Ipc__AuthzIndexRow r = KMESH__IPC__AUTHZ_INDEX_ROW__INIT;
	uint64_t bits[9] = { 0x5, 0, 0, 0, 0, 0, 0, 0x80, 1 };
	struct km_authz_index_key k;
	struct km_authz_index_value v;
	char err[256];

	if (!maps_available(t))
		skip();
	op.kind = KMESH__IPC__TABLE_OP__KIND__UPSERT;
	op.row_case = KMESH__IPC__TABLE_OP__ROW_AUTHZ_INDEX;
	op.authz_index = &r;
	r.kind = KM_AUTHZ_OWNER_NAMESPACE;
	r.owner = 7;
	r.gen = 1;
	r.field = KM_AZX_PORT;
	r.value = 8080;
	r.chunk = 3;
	r.bits = bits;
	r.n_bits = 8;
	t->fd_authz_index = -1;
	assert_int_equal(apply(t, &op, err), BAD);
	assert_non_null(strstr(err, "no km_authz_index"));
	t->fd_authz_index = make_map(sizeof(k), sizeof(v), 8);
	assert_true(t->fd_authz_index >= 0);
	assert_int_equal(apply(t, &op, err), OK);
	memset(&k, 0, sizeof(k));
	k.kind = KM_AUTHZ_OWNER_NAMESPACE;
	k.owner = 7;
	k.gen = 1;
	k.field = KM_AZX_PORT;
	k.chunk = 3;
	k.value = 8080;
	assert_int_equal(bpf_map_lookup_elem(t->fd_authz_index, &k, &v), 0);
	assert_int_equal(v.bits[0], 0x5);
	assert_int_equal(v.bits[7], 0x80);
	/* refused, each for one reason */
	r.n_bits = 9; /* a word past the chunk */
	assert_int_equal(apply(t, &op, err), BAD);
	r.n_bits = 3;
	r.chunk = KM_AZX_SUMMARY; /* a summary has two words */
	assert_int_equal(apply(t, &op, err), BAD);
	r.n_bits = 2;
	assert_int_equal(apply(t, &op, err), OK);
	r.chunk = KM_AZX_CHUNKS; /* past the last chunk of a list */
	assert_int_equal(apply(t, &op, err), BAD);
	r.chunk = 0;
	r.field = KM_AZX_FIELDS; /* no such field */
	assert_int_equal(apply(t, &op, err), BAD);
	r.field = KM_AZX_PORT | KM_AZX_F_DEFAULT; /* a default row names no value */
	assert_int_equal(apply(t, &op, err), BAD);
	r.value = 0;
	assert_int_equal(apply(t, &op, err), OK);
	r.gen = 2;
	assert_int_equal(apply(t, &op, err), BAD);
	r.gen = 0;
	r.kind = KM_AUTHZ_OWNER_GLOBAL; /* the global list has owner 0 */
	assert_int_equal(apply(t, &op, err), BAD);
	r.owner = 0;
	assert_int_equal(apply(t, &op, err), OK);
	r.field = 0x180; /* past a byte */
	assert_int_equal(apply(t, &op, err), BAD);
	r.field = KM_AZX_PORT | KM_AZX_F_DEFAULT;
	op.kind = KMESH__IPC__TABLE_OP__KIND__DELETE;
	assert_int_equal(apply(t, &op, err), OK);
	close(t->fd_authz_index);
	t->fd_authz_index = -1;
}

#define SVC_KIND KMESH__IPC__FRONTEND_KIND__FRONTEND_KIND_SERVICE
#define WL_KIND KMESH__IPC__FRONTEND_KIND__FRONTEND_KIND_WORKLOAD

static void test_valid_rows_in_order(void **state)
{
	struct km_tables *t = *state;
	struct rows r;
	char err[256];
	struct km_service_value sv;
	struct km_service_key sk = { .service_id = 100 };

	if (!maps_available(t))
		skip();
	assert_int_equal(apply(t, backend(&r, 7, v4, 4), err), OK);
	assert_int_equal(apply(t, endpoint(&r, 100, 0, 0, 7), err), OK);
	assert_int_equal(apply(t, service(&r, 100, 1, 0), err), OK);
	assert_int_equal(apply(t, frontend(&r, vip, 4, 80, SVC_KIND, 100, 8080), err), OK);
	assert_int_equal(apply(t, frontend(&r, v4, 4, 0, WL_KIND, 7, 0), err), OK);
	assert_int_equal(bpf_map_lookup_elem(t->fd_service, &sk, &sv), 0);
	assert_int_equal(sv.endpoint_count[0], 1);
	/* the frontend row is stored in the shared layout: v4-mapped address, ports in NBO */
	{
		struct km_frontend_key fk = { .port = htons(80), .proto = 6 };
		struct km_frontend_value fv;

		fk.addr.bytes[10] = fk.addr.bytes[11] = 0xff;
		memcpy(&fk.addr.bytes[12], vip, 4);
		assert_int_equal(bpf_map_lookup_elem(t->fd_frontend, &fk, &fv), 0);
		assert_int_equal(fv.kind, KM_FRONTEND_SERVICE);
		assert_int_equal(fv.upstream_id, 100);
		assert_int_equal(fv.target_port, htons(8080));
	}
}

static void expect(struct km_tables *t, Kmesh__Ipc__TableOp *op, Kmesh__Ipc__Code code, const char *in)
{
	char err[256];
	Kmesh__Ipc__Code got = apply(t, op, err);

	if (got != code || !strstr(err, in))
		fail_msg("got code %d '%s', want code %d containing '%s'", got, err, code, in);
}

static void test_invalid_rows_refused(void **state)
{
	struct km_tables *t = *state;
	struct rows r;
	uint8_t zero[4] = { 0 }, three[3] = { 1, 2, 3 };

	if (!maps_available(t))
		skip();
	expect(t, backend(&r, 0, v4, 4), BAD, "id 0");
	expect(t, backend(&r, 9, three, 3), BAD, "4 or 16 bytes");
	expect(t, backend(&r, 9, zero, 4), BAD, "unspecified");
	expect(t, backend(&r, 9, NULL, 0), BAD, "one or two addresses");
	r.be.n_addresses = 2; /* two IPv4 addresses */
	r.addrs[0] = (ProtobufCBinaryData){ 4, v4 };
	r.addrs[1] = (ProtobufCBinaryData){ 4, vip };
	r.be.id = 9;
	expect(t, &r.op, BAD, "two addresses of one family");
	expect(t, endpoint(&r, 200, 0, 0, 999), MISSING, "backend 999");
	expect(t, endpoint(&r, 200, 7, 0, 7), BAD, "priority 7");
	expect(t, endpoint(&r, 200, 0, 64, 7), BAD, "beyond");
	expect(t, service(&r, 200, 1, 0), MISSING, "write endpoints first");
	expect(t, service(&r, 200, 0, 9), BAD, "mode 9");
	expect(t, frontend(&r, vip, 4, 80, SVC_KIND, 555, 80), MISSING, "service 555");
	expect(t, frontend(&r, vip, 4, 80, SVC_KIND, 100, 0), BAD, "target port");
	expect(t, frontend(&r, vip, 4, 70000, SVC_KIND, 100, 80), BAD, "out of range");
	expect(t, frontend(&r, v4, 4, 0, WL_KIND, 555, 0), MISSING, "workload 555");
	expect(t, frontend(&r, v4, 4, 0, 9, 7, 0), BAD, "kind");
	frontend(&r, vip, 4, 80, SVC_KIND, 100, 80);
	r.fe.protocol = 17;
	expect(t, &r.op, BAD, "protocol");
	r.op.kind = KMESH__IPC__TABLE_OP__KIND__KIND_UNSPECIFIED;
	expect(t, &r.op, BAD, "neither UPSERT nor DELETE");
	r.op.kind = KMESH__IPC__TABLE_OP__KIND__UPSERT;
	r.op.row_case = KMESH__IPC__TABLE_OP__ROW__NOT_SET;
	expect(t, &r.op, BAD, "no row");
	/* nothing above was written */
	{
		struct km_backend_key bk = { .backend_id = 9 };
		struct km_backend_value bv;

		assert_int_not_equal(bpf_map_lookup_elem(t->fd_backend, &bk, &bv), 0);
	}
}

static Kmesh__Ipc__TableOp *deleted(Kmesh__Ipc__TableOp *op)
{
	op->kind = KMESH__IPC__TABLE_OP__KIND__DELETE;
	return op;
}

/* A refused op does not stop the batch: the ops around it are applied, the reply counts the
 * refusals and names the first. */
static void test_batch_goes_on_past_a_refusal(void **state)
{
	struct km_tables *t = *state;
	struct rows r1, r2, r3, r4;
	Kmesh__Ipc__TableOp *ops[4];
	Kmesh__Ipc__TableBatch b = KMESH__IPC__TABLE_BATCH__INIT;
	uint32_t applied;
	char err[256];
	uint8_t a2[4] = { 10, 0, 0, 2 };
	struct km_backend_key bk8 = { .backend_id = 8 }, bk9 = { .backend_id = 9 };
	struct km_backend_value bv;

	if (!maps_available(t))
		skip();
	ops[0] = backend(&r1, 8, a2, 4);
	ops[1] = endpoint(&r2, 300, 0, 0, 4242); /* no such backend */
	ops[2] = backend(&r3, 9, a2, 4);
	ops[3] = backend(&r4, 0, a2, 4);         /* id 0 is reserved */
	b.ops = ops;
	b.n_ops = 4;
	assert_int_equal(km_tables_apply_batch(t, &b, &applied, err, sizeof(err)), MISSING);
	assert_int_equal(applied, 2);
	assert_non_null(strstr(err, "2 of 4 ops refused; the first, op 1:"));
	assert_int_equal(bpf_map_lookup_elem(t->fd_backend, &bk8, &bv), 0);
	assert_int_equal(bpf_map_lookup_elem(t->fd_backend, &bk9, &bv), 0);
	assert_int_equal(apply(t, deleted(backend(&r3, 9, NULL, 0)), err), OK); /* the table is small */
}

static void test_full_table_and_deletes(void **state)
{
	struct km_tables *t = *state;
	struct rows r;
	char err[256];
	uint8_t vips[8][4];
	int full = 0;

	if (!maps_available(t))
		skip();
	/* the frontend map holds 4 rows; one is already there */
	for (int i = 0; i < 8 && !full; i++) {
		uint8_t a[4] = { 10, 96, 1, (uint8_t)i };
		Kmesh__Ipc__Code c;

		memcpy(vips[i], a, 4);
		c = apply(t, frontend(&r, vips[i], 4, 80, SVC_KIND, 100, 80), err);
		if (c == FULL) {
			full = 1;
			assert_non_null(strstr(err, "km_frontend is full"));
		} else {
			assert_int_equal(c, OK);
		}
	}
	assert_true(full);
	assert_true(t->table_full >= 1);
	{ /* in a batch, a row the full table refuses does not stop an update of a present row */
		struct rows r2;
		uint8_t fresh[4] = { 10, 96, 2, 1 };
		Kmesh__Ipc__TableOp *ops[2] = { frontend(&r, fresh, 4, 80, SVC_KIND, 100, 80),
						frontend(&r2, vips[0], 4, 80, SVC_KIND, 100, 81) };
		Kmesh__Ipc__TableBatch b = KMESH__IPC__TABLE_BATCH__INIT;
		struct km_frontend_key fk = { .port = htons(80), .proto = 6 };
		struct km_frontend_value fv;
		uint32_t applied;

		b.n_ops = 2;
		b.ops = ops;
		assert_int_equal(km_tables_apply_batch(t, &b, &applied, err, sizeof(err)), FULL);
		assert_int_equal(applied, 1);
		assert_non_null(strstr(err, "op 0: km_frontend is full"));
		km_addr_from_bytes(vips[0], 4, &fk.addr);
		assert_int_equal(bpf_map_lookup_elem(t->fd_frontend, &fk, &fv), 0);
		assert_int_equal(fv.target_port, htons(81));
	}
	/* deletes are idempotent */
	frontend(&r, vips[0], 4, 80, SVC_KIND, 0, 0);
	r.op.kind = KMESH__IPC__TABLE_OP__KIND__DELETE;
	assert_int_equal(apply(t, &r.op, err), OK);
	assert_int_equal(apply(t, &r.op, err), OK);
}

/* References are checked against the keys the map writer holds: rows already in the maps when
 * it starts (adopted maps, written by an earlier run) count, and a row it deleted no longer does. */
static void test_present_rows_adopted_and_deleted(void **state)
{
	struct km_tables *t = *state;
	struct km_backend_key bk = { .backend_id = 77 };
	struct km_backend_value bv;
	struct rows r;
	char err[256];

	if (!maps_available(t))
		skip();
	memset(&bv, 0, sizeof(bv));
	bv.weight = 1;
	/* written behind the map writer's back, as an earlier run would have */
	assert_int_equal(bpf_map_update_elem(t->fd_backend, &bk, &bv, BPF_ANY), 0);
	assert_int_equal(apply(t, endpoint(&r, 700, 0, 0, 77), err), MISSING);
	km_tables_free(t);
	assert_int_equal(km_tables_load_present(t), 0); /* a restart reads what is there */
	assert_int_equal(apply(t, endpoint(&r, 700, 0, 0, 77), err), OK);
	/* a backend an endpoint slot names is not deleted (connections would go nowhere) */
	backend(&r, 77, NULL, 0);
	r.op.kind = KMESH__IPC__TABLE_OP__KIND__DELETE;
	assert_int_equal(apply(t, &r.op, err), BAD);
	assert_non_null(strstr(err, "backend 77 is named by 1 endpoint slot(s)"));
	endpoint(&r, 700, 0, 0, 77);
	r.op.kind = KMESH__IPC__TABLE_OP__KIND__DELETE;
	assert_int_equal(apply(t, &r.op, err), OK);
	backend(&r, 77, NULL, 0);
	r.op.kind = KMESH__IPC__TABLE_OP__KIND__DELETE;
	assert_int_equal(apply(t, &r.op, err), OK);
	assert_int_equal(apply(t, endpoint(&r, 700, 0, 1, 77), err), MISSING);
	assert_non_null(strstr(err, "backend 77"));
	endpoint(&r, 700, 0, 0, 77);
	r.op.kind = KMESH__IPC__TABLE_OP__KIND__DELETE;
	assert_int_equal(apply(t, &r.op, err), OK);
}

static void test_enroll_and_dump(void **state)
{
	struct km_tables *t = *state;
	Kmesh__Ipc__Enroll e = KMESH__IPC__ENROLL__INIT;
	Kmesh__Ipc__Unenroll u = KMESH__IPC__UNENROLL__INIT;
	Kmesh__Ipc__DumpReply d;
	char long_path[KM_NETNS_PATH_MAX + 1];
	uint32_t ifindex;
	ProtobufCBinaryData bad = { 5, v4 };
	char err[256];

	if (!maps_available(t))
		skip();
	memset(long_path, 'a', sizeof(long_path) - 1);
	long_path[0] = '/';
	long_path[KM_NETNS_PATH_MAX] = '\0';
	assert_int_equal(km_tables_enroll(t, &e, 0, err, sizeof(err)), BAD); /* cookie 0 */
	e.netns_cookie = 4096;
	e.n_addresses = 1;
	e.addresses = &bad;
	assert_int_equal(km_tables_enroll(t, &e, 0, err, sizeof(err)), BAD);
	e.n_addresses = 0;
	e.netns_path = "run/netns/relative";
	assert_int_equal(km_tables_enroll(t, &e, 0, err, sizeof(err)), BAD);
	e.netns_path = long_path;
	assert_int_equal(km_tables_enroll(t, &e, 0, err, sizeof(err)), BAD);
	assert_non_null(strstr(err, "at most 127 bytes"));
	assert_int_equal(km_tables_enrolled(t, 4096, err, sizeof(err)), KMESH__IPC__CODE__NOT_FOUND);
	e.netns_path = "/run/netns/cni-1";
	assert_int_equal(km_tables_enroll(t, &e, 0, err, sizeof(err)), OK);
	assert_int_equal(km_tables_dump(t, KMESH__IPC__TABLE__TABLE_MANAGE, 0, &d, err, sizeof(err)), OK);
	assert_int_equal(d.n_manage, 1);
	assert_int_equal(d.manage[0]->netns_cookie, 4096);
	assert_string_equal(d.manage[0]->netns_path, "/run/netns/cni-1");
	km_tables_dump_free(&d);
	e.netns_path = ""; /* enrolled again without a path: the old one is forgotten */
	assert_int_equal(km_tables_enroll(t, &e, 0, err, sizeof(err)), OK);
	assert_int_equal(km_tables_dump(t, KMESH__IPC__TABLE__TABLE_MANAGE, 0, &d, err, sizeof(err)), OK);
	assert_string_equal(d.manage[0]->netns_path, "");
	km_tables_dump_free(&d);
	e.netns_path = "/run/netns/cni-1";
	e.host_ifindex = 77; /* kept for IPsec's encrypt program, and given back at unenroll */
	assert_int_equal(km_tables_enroll(t, &e, 0, err, sizeof(err)), OK);
	assert_int_equal(km_tables_dump(t, KMESH__IPC__TABLE__TABLE_MANAGE, 0, &d, err, sizeof(err)), OK);
	assert_int_equal(d.manage[0]->host_ifindex, 77);
	km_tables_dump_free(&d);
	u.netns_cookie = 4096;
	assert_int_equal(km_tables_unenroll(t, &u, &ifindex, err, sizeof(err)), OK);
	assert_int_equal(ifindex, 77);
	assert_int_equal(km_tables_unenroll(t, &u, &ifindex, err, sizeof(err)), OK);
	assert_int_equal(ifindex, 0); /* not enrolled any more */
	{
		struct km_manage_key k = { 4096 };
		struct km_pod_netns_value v;

		assert_int_not_equal(bpf_map_lookup_elem(t->fd_pod_netns, &k, &v), 0);
	}

	assert_int_equal(km_tables_dump(t, KMESH__IPC__TABLE__TABLE_BACKEND, 0, &d, err, sizeof(err)), OK);
	assert_int_equal(d.n_rows, 5); /* backends 7, 8 and 20..22 of the earlier cases */
	km_tables_dump_free(&d);
	assert_int_equal(km_tables_dump(t, KMESH__IPC__TABLE__TABLE_BACKEND, 1, &d, err, sizeof(err)), OK);
	assert_int_equal(d.n_rows, 1);
	assert_true(d.truncated);
	km_tables_dump_free(&d);
	assert_int_equal(km_tables_dump(t, (Kmesh__Ipc__Table)42, 0, &d, err, sizeof(err)), BAD);
}

/* A batch that references rows written earlier in the same batch, across several runs of one
 * table each: written as runs (one bpf() call each) and all present afterwards. */
static void test_runs_of_one_table(void **state)
{
	struct km_tables *t = *state;
	struct rows r[12];
	Kmesh__Ipc__TableOp *ops[12];
	Kmesh__Ipc__TableBatch b = KMESH__IPC__TABLE_BATCH__INIT;
	uint8_t a[4][4] = { { 10, 0, 1, 1 }, { 10, 0, 1, 2 }, { 10, 0, 1, 3 }, { 10, 0, 1, 4 } };
	uint32_t applied;
	uint64_t calls = t->batch_calls;
	char err[256];
	size_t n = 0;

	if (!maps_available(t))
		skip();
	for (int i = 0; i < 3; i++) /* backends 20..22 */
		ops[n] = backend(&r[n], 20 + (uint32_t)i, a[i], 4), n++;
	for (int i = 0; i < 3; i++) /* endpoints of service 400 */
		ops[n] = endpoint(&r[n], 400, 0, (uint32_t)i, 20 + (uint32_t)i), n++;
	ops[n] = service(&r[n], 400, 3, 0), n++;
	ops[n] = frontend(&r[n], a[3], 4, 80, SVC_KIND, 400, 8080), n++;
	b.ops = ops;
	b.n_ops = n;
	assert_int_equal(km_tables_apply_batch(t, &b, &applied, err, sizeof(err)), OK);
	assert_int_equal(applied, n);
	assert_true(t->batch_calls - calls >= 3); /* backends, endpoints, service, frontend */
	for (uint32_t i = 0; i < 3; i++) {
		struct km_endpoint_key ek = { .service_id = 400, .prio = 0, .index = i };
		struct km_endpoint_value ev;

		assert_int_equal(bpf_map_lookup_elem(t->fd_endpoint, &ek, &ev), 0);
		assert_int_equal(ev.backend_id, 20 + i);
	}
}

/* Deletes are queued in runs too: a delete then an upsert of one key leaves the row, an upsert
 * then a delete removes it, absent keys are no error, and a row that references a row deleted
 * earlier in the batch is refused (the deletes are written before it is checked). */
static void test_runs_of_deletes(void **state)
{
	struct km_tables *t = *state;
	struct rows r[8];
	Kmesh__Ipc__TableOp *ops[8];
	Kmesh__Ipc__TableBatch b = KMESH__IPC__TABLE_BATCH__INIT;
	uint8_t a[2][4] = { { 10, 0, 2, 1 }, { 10, 0, 2, 2 } };
	struct km_backend_key k30 = { .backend_id = 30 }, k31 = { .backend_id = 31 };
	struct km_backend_value v;
	uint32_t applied;
	char err[256];
	size_t n = 0;

	if (!maps_available(t))
		skip();
	assert_int_equal(apply(t, backend(&r[0], 30, a[0], 4), err), OK);
	assert_int_equal(apply(t, backend(&r[0], 31, a[1], 4), err), OK);
	ops[n] = deleted(backend(&r[n], 30, NULL, 0)), n++;
	ops[n] = deleted(backend(&r[n], 99, NULL, 0)), n++; /* absent: fine */
	ops[n] = backend(&r[n], 30, a[1], 4), n++;          /* back, with a new address */
	ops[n] = backend(&r[n], 32, a[0], 4), n++;
	ops[n] = deleted(backend(&r[n], 32, NULL, 0)), n++; /* and gone again */
	ops[n] = deleted(backend(&r[n], 31, NULL, 0)), n++;
	b.ops = ops;
	b.n_ops = n;
	assert_int_equal(km_tables_apply_batch(t, &b, &applied, err, sizeof(err)), OK);
	assert_int_equal(applied, n);
	assert_int_equal(bpf_map_lookup_elem(t->fd_backend, &k30, &v), 0);
	assert_memory_equal(&v.addr4.bytes[12], a[1], 4);
	k30.backend_id = 32;
	assert_int_not_equal(bpf_map_lookup_elem(t->fd_backend, &k30, &v), 0);
	assert_int_not_equal(bpf_map_lookup_elem(t->fd_backend, &k31, &v), 0);

	n = 0; /* delete 30, then an endpoint naming it: refused, and the delete stays done */
	ops[n] = deleted(backend(&r[n], 30, NULL, 0)), n++;
	ops[n] = endpoint(&r[n], 401, 0, 0, 30), n++;
	b.n_ops = n;
	assert_int_equal(km_tables_apply_batch(t, &b, &applied, err, sizeof(err)), MISSING);
	assert_int_equal(applied, 1);
	k30.backend_id = 30;
	assert_int_not_equal(bpf_map_lookup_elem(t->fd_backend, &k30, &v), 0);
}

/* Weights, power of two choices and waypoints as stored for BPF. */
/* A service's count exposes every slot below it: each must be there when the count is written
 * (not only the last), and none of them may be deleted while the count exposes it (issue 25). */
static void test_counts_expose_whole_slots(void **state)
{
	struct km_tables *t = *state;
	struct rows r;
	char err[256];

	if (!maps_available(t))
		skip();
	assert_int_equal(apply(t, backend(&r, 900, v4, 4), err), OK);
	assert_int_equal(apply(t, endpoint(&r, 901, 0, 9, 900), err), OK);
	/* only slot 9 of 0..9: a pick of 0..8 would find nothing */
	assert_int_equal(apply(t, service(&r, 901, 10, 0), err), MISSING);
	assert_non_null(strstr(err, "exposes endpoint index 0"));
	for (uint32_t i = 0; i < 9; i++)
		assert_int_equal(apply(t, endpoint(&r, 901, 0, i, 900), err), OK);
	assert_int_equal(apply(t, service(&r, 901, 10, 0), err), OK);
	/* a slot below the count stays while the count exposes it */
	endpoint(&r, 901, 0, 4, 900);
	r.op.kind = KMESH__IPC__TABLE_OP__KIND__DELETE;
	assert_int_equal(apply(t, &r.op, err), BAD);
	assert_non_null(strstr(err, "exposed by the service's count 10"));
	/* lowered first (as the agent does), then the tail slot goes */
	assert_int_equal(apply(t, service(&r, 901, 9, 0), err), OK);
	endpoint(&r, 901, 0, 9, 900);
	r.op.kind = KMESH__IPC__TABLE_OP__KIND__DELETE;
	assert_int_equal(apply(t, &r.op, err), OK);
	/* raising it again checks the slots it newly exposes */
	assert_int_equal(apply(t, service(&r, 901, 10, 0), err), MISSING);
	assert_non_null(strstr(err, "exposes endpoint index 9"));
	/* the backend is named by 9 slots: not deleted; once the service and slots go, it may */
	backend(&r, 900, NULL, 0);
	r.op.kind = KMESH__IPC__TABLE_OP__KIND__DELETE;
	assert_int_equal(apply(t, &r.op, err), BAD);
	assert_non_null(strstr(err, "named by 9 endpoint slot(s)"));
	service(&r, 901, 0, 0);
	r.op.kind = KMESH__IPC__TABLE_OP__KIND__DELETE;
	assert_int_equal(apply(t, &r.op, err), OK);
	for (uint32_t i = 0; i < 9; i++) {
		endpoint(&r, 901, 0, i, 900);
		r.op.kind = KMESH__IPC__TABLE_OP__KIND__DELETE;
		assert_int_equal(apply(t, &r.op, err), OK);
	}
	backend(&r, 900, NULL, 0);
	r.op.kind = KMESH__IPC__TABLE_OP__KIND__DELETE;
	assert_int_equal(apply(t, &r.op, err), OK);
}

static void test_weights_flags_waypoints(void **state)
{
	struct km_tables *t = *state;
	struct rows r;
	char err[256];
	uint64_t totals[KM_PRIO_COUNT] = { 4 };
	struct km_service_key sk = { .service_id = 100 };
	struct km_endpoint_key ek = { .service_id = 100, .prio = 0, .index = 1 };
	struct km_service_value sv;
	struct km_endpoint_value ev;

	if (!maps_available(t))
		skip();
	assert_int_equal(apply(t, backend(&r, 7, v4, 4), err), OK);
	assert_int_equal(apply(t, endpoint(&r, 100, 0, 0, 7), err), OK);
	endpoint(&r, 100, 0, 1, 7);
	r.ep.cum_weight = 4;
	assert_int_equal(apply(t, &r.op, err), OK);
	assert_int_equal(bpf_map_lookup_elem(t->fd_endpoint, &ek, &ev), 0);
	assert_int_equal(ev.cum_weight, 4);
	ek.index = 0; /* no weight sent: slot i weighs 1, cumulative i + 1 */
	assert_int_equal(bpf_map_lookup_elem(t->fd_endpoint, &ek, &ev), 0);
	assert_int_equal(ev.cum_weight, 1);

	service(&r, 100, 2, KM_LB_RANDOM);
	r.svc.flags = KM_SVC_F_P2C;
	r.svc.weight_total = totals;
	r.svc.n_weight_total = KM_PRIO_COUNT;
	r.svc.waypoint_port = 15008;
	r.svc.waypoint_data_port = 15019;
	r.svc.waypoint_address = (ProtobufCBinaryData){ .len = 4, .data = vip };
	assert_int_equal(apply(t, &r.op, err), OK);
	assert_int_equal(bpf_map_lookup_elem(t->fd_service, &sk, &sv), 0);
	assert_int_equal(sv.flags, KM_SVC_F_P2C);
	assert_int_equal(sv.weight_total[0], 4);
	assert_int_equal(sv.weight_total[1], 0);
	assert_int_equal(sv.waypoint.port, htons(15008));
	assert_int_equal(sv.waypoint.data_port, htons(15019));

	/* a total below the count (or none) reads as "every weight 1" */
	totals[0] = 1;
	assert_int_equal(apply(t, &r.op, err), OK);
	assert_int_equal(bpf_map_lookup_elem(t->fd_service, &sk, &sv), 0);
	assert_int_equal(sv.weight_total[0], 2);

	r.svc.flags = 0x80;
	expect(t, &r.op, BAD, "flags 0x80 unknown");
	r.svc.flags = 0;
	r.svc.waypoint_port = 0;
	expect(t, &r.op, BAD, "without a port");

}

/* Mark and sweep: rows not written between BEGIN and END go, referencing rows first; a refused
 * row during the sync keeps everything. */
static void test_sync_sweeps_unwritten_rows(void **state)
{
	struct km_tables *t = *state;
	struct rows r;
	char err[256];
	uint32_t removed;
	uint8_t v4b[4] = { 10, 0, 0, 2 };
	struct km_backend_key k8 = { .backend_id = 8 }, k9 = { .backend_id = 9 };
	struct km_backend_value bv;

	if (!maps_available(t))
		skip();
	assert_int_equal(apply(t, backend(&r, 8, v4, 4), err), OK);
	assert_int_equal(apply(t, backend(&r, 9, v4b, 4), err), OK);
	assert_int_equal(apply(t, endpoint(&r, 200, 0, 0, 9), err), OK);
	assert_int_equal(km_tables_sync_end(t, &removed, err, sizeof(err)), BAD);

	km_tables_sync_begin(t);
	assert_int_equal(apply(t, backend(&r, 8, v4, 4), err), OK);
	assert_int_equal(km_tables_sync_end(t, &removed, err, sizeof(err)), OK);
	assert_true(removed >= 2); /* endpoint (200,0,0) and backend 9, and earlier cases' rows */
	assert_int_equal(bpf_map_lookup_elem(t->fd_backend, &k8, &bv), 0);
	assert_int_not_equal(bpf_map_lookup_elem(t->fd_backend, &k9, &bv), 0);
	/* the present sets follow: an endpoint naming backend 9 is refused now */
	expect(t, endpoint(&r, 200, 0, 0, 9), MISSING, "backend 9");

	/* A refused update keeps the row's earlier version through the sweep (its key is marked),
	 * and a refusal no longer holds the sweep back: unwritten rows still go. */
	assert_int_equal(apply(t, backend(&r, 9, v4b, 4), err), OK);
	assert_int_equal(apply(t, endpoint(&r, 200, 0, 0, 9), err), OK);
	assert_int_equal(apply(t, backend(&r, 10, v4b, 4), err), OK);
	km_tables_sync_begin(t);
	{
		struct rows r2, r3;
		Kmesh__Ipc__TableBatch b = KMESH__IPC__TABLE_BATCH__INIT;
		Kmesh__Ipc__TableOp *ops[3] = { backend(&r, 9, v4b, 4), backend(&r3, 8, v4, 4),
						endpoint(&r2, 200, 0, 0, 77) }; /* no backend 77 */
		struct km_endpoint_key ek = { .service_id = 200, .prio = 0, .index = 0 };
		struct km_endpoint_value ev;
		struct km_backend_key k10 = { .backend_id = 10 };
		uint32_t applied;

		b.n_ops = 3;
		b.ops = ops;
		assert_int_equal(km_tables_apply_batch(t, &b, &applied, err, sizeof(err)), MISSING);
		assert_int_equal(applied, 2);
		assert_int_equal(km_tables_sync_end(t, &removed, err, sizeof(err)), OK);
		assert_int_equal(removed, 1); /* backend 10 */
		assert_int_not_equal(bpf_map_lookup_elem(t->fd_backend, &k10, &bv), 0);
		assert_int_equal(bpf_map_lookup_elem(t->fd_endpoint, &ek, &ev), 0);
		assert_int_equal(ev.backend_id, 9); /* the earlier version */
	}
}

/* The IPsec agent's rows: validated, written, looked up as BPF will, dumped, deleted. */
static void test_ipsec_rows(void **state)
{
	struct km_tables *t = *state;
	Kmesh__Ipc__TableOp op = KMESH__IPC__TABLE_OP__INIT;
	Kmesh__Ipc__IpsecPeerRow peer = KMESH__IPC__IPSEC_PEER_ROW__INIT;
	Kmesh__Ipc__IpsecCidrRow cidr = KMESH__IPC__IPSEC_CIDR_ROW__INIT;
	uint8_t a4[4] = { 10, 0, 0, 2 }, n4[4] = { 10, 244, 2, 0 }, n6[16] = { 0xfd, 0x10, 0, 2 };
	struct km_ipsec_cidr_key k = { .prefixlen = 128 };
	struct km_ipsec_cidr_value v;
	Kmesh__Ipc__DumpReply d;
	char err[256];

	(void)state;
	if (!maps_available(t) || t->fd_ipsec_cidr < 0)
		skip();
	op.kind = KMESH__IPC__TABLE_OP__KIND__UPSERT;
	op.row_case = KMESH__IPC__TABLE_OP__ROW_IPSEC_PEER;
	op.ipsec_peer = &peer;
	peer.address = (ProtobufCBinaryData){ 4, a4 };
	peer.peer_id = 0;
	assert_int_equal(apply(t, &op, err), BAD);
	assert_non_null(strstr(err, "id 0 is not 1-4095"));
	peer.peer_id = 3;
	assert_int_equal(apply(t, &op, err), OK);

	op.row_case = KMESH__IPC__TABLE_OP__ROW_IPSEC_CIDR;
	op.ipsec_cidr = &cidr;
	cidr.peer_id = 3;
	cidr.address = (ProtobufCBinaryData){ 4, n4 };
	cidr.length = 16; /* 10.244.2.0/16 has host bits */
	assert_int_equal(apply(t, &op, err), BAD);
	assert_non_null(strstr(err, "host bits"));
	cidr.length = 33;
	assert_int_equal(apply(t, &op, err), BAD);
	cidr.length = 24;
	assert_int_equal(apply(t, &op, err), OK);
	cidr.address = (ProtobufCBinaryData){ 16, n6 };
	cidr.length = 64;
	assert_int_equal(apply(t, &op, err), OK);
	/* what the tc program will look up: a pod address, full length, v4-mapped for IPv4 */
	assert_int_equal(km_addr_parse("10.244.2.77", &k.addr), 0);
	assert_int_equal(bpf_map_lookup_elem(t->fd_ipsec_cidr, &k, &v), 0);
	assert_int_equal(v.peer_id, 3);
	assert_int_equal(km_addr_parse("10.244.3.1", &k.addr), 0);
	assert_int_not_equal(bpf_map_lookup_elem(t->fd_ipsec_cidr, &k, &v), 0);
	assert_int_equal(km_addr_parse("fd10:2::9", &k.addr), 0);
	assert_int_equal(bpf_map_lookup_elem(t->fd_ipsec_cidr, &k, &v), 0);

	assert_int_equal(km_tables_dump(t, KMESH__IPC__TABLE__TABLE_IPSEC_CIDR, 0, &d, err, sizeof(err)), OK);
	assert_int_equal(d.n_rows, 2);
	for (size_t i = 0; i < d.n_rows; i++)
		assert_int_equal(d.rows[i]->ipsec_cidr->length, d.rows[i]->ipsec_cidr->address.len == 4 ? 24 : 64);
	km_tables_dump_free(&d);
	/* an LPM trie is read a key at a time, its pages named by the last row's key: 1, then 1 */
	{
		uint8_t after[KM_TABLES_ROW_BUF];
		size_t after_len;
		uint32_t first_len;

		assert_int_equal(km_tables_dump_page(t, KMESH__IPC__TABLE__TABLE_IPSEC_CIDR, 1, NULL, 0,
						     NULL, &d, err, sizeof(err)), OK);
		assert_true(d.n_rows == 1 && d.truncated &&
			    d.next.len == 1 + sizeof(struct km_ipsec_cidr_key) && d.next.data[0] == 'K');
		first_len = d.rows[0]->ipsec_cidr->length;
		memcpy(after, d.next.data, d.next.len);
		after_len = d.next.len;
		km_tables_dump_free(&d);
		assert_int_equal(km_tables_dump_page(t, KMESH__IPC__TABLE__TABLE_IPSEC_CIDR, 1, after,
						     after_len, NULL, &d, err, sizeof(err)), OK);
		assert_true(d.n_rows == 1 && !d.truncated);
		assert_int_not_equal(d.rows[0]->ipsec_cidr->length, first_len); /* the other one */
		km_tables_dump_free(&d);
		assert_int_equal(km_tables_dump_page(t, KMESH__IPC__TABLE__TABLE_IPSEC_CIDR, 1, after, 4,
						     NULL, &d, err, sizeof(err)), BAD);
	}
	assert_int_equal(km_tables_dump(t, KMESH__IPC__TABLE__TABLE_IPSEC_PEER, 0, &d, err, sizeof(err)), OK);
	assert_int_equal(d.n_rows, 1);
	assert_int_equal(d.rows[0]->ipsec_peer->peer_id, 3);
	km_tables_dump_free(&d);

	op.kind = KMESH__IPC__TABLE_OP__KIND__DELETE;
	assert_int_equal(apply(t, &op, err), OK);
	assert_int_equal(km_addr_parse("fd10:2::9", &k.addr), 0);
	assert_int_not_equal(bpf_map_lookup_elem(t->fd_ipsec_cidr, &k, &v), 0);
}

/* The denials by workload and policy come with the authz counters' dump; once their table is
 * three-quarters full, the rows of workloads no identity row names any more are removed (not the
 * rows of live workloads, nor the unknown destination's, nor the overflow row). */
static void test_denials_collected(void **state)
{
	struct km_tables t;
	Kmesh__Ipc__DumpReply reply;
	char err[200];
	const uint32_t n = KM_AUTHZ_DENIALS_MAX / 4 * 3;
	struct km_authz_denials_key other = { KM_AUTHZ_DENIALS_OTHER, KM_AUTHZ_DENIALS_OTHER };
	struct km_authz_denials_value one = { 1 };
	size_t live = 0, gone = 0, kept_other = 0;

	(void)state;
	tables_open(&t);
	t.fd_authz_stats = make_map(sizeof(struct km_authz_stats_key),
				    sizeof(struct km_authz_stats_value), 16);
	t.fd_authz_ident = make_map(sizeof(struct km_addr), sizeof(struct km_authz_ident_value), 16);
	t.fd_authz_denials = make_map(sizeof(struct km_authz_denials_key),
				      sizeof(struct km_authz_denials_value), KM_AUTHZ_DENIALS_MAX);
	assert_true(t.fd_authz_stats >= 0 && t.fd_authz_ident >= 0 && t.fd_authz_denials >= 0);
	/* workloads 1 and 2 are still named by an address; rows 1..n-2 were denials */
	for (uint32_t id = 1; id <= 2; id++) {
		struct km_addr a = { 0 };
		struct km_authz_ident_value v = { .workload_id = id };

		a.bytes[15] = (uint8_t)id;
		assert_int_equal(bpf_map_update_elem(t.fd_authz_ident, &a, &v, BPF_ANY), 0);
	}
	for (uint32_t id = 0; id < n - 1; id++) {
		struct km_authz_denials_key k = { id, 7 };

		assert_int_equal(bpf_map_update_elem(t.fd_authz_denials, &k, &one, BPF_ANY), 0);
	}
	assert_int_equal(bpf_map_update_elem(t.fd_authz_denials, &other, &one, BPF_ANY), 0);

	assert_int_equal(km_tables_dump(&t, KMESH__IPC__TABLE__TABLE_AUTHZ_STATS, 0, &reply, err,
					sizeof(err)), OK);
	assert_int_equal(reply.n_authz_denials, n); /* what was there when read */
	km_tables_dump_free(&reply);
	assert_int_equal(t.denials_collected, n - 4); /* all but 0, 1, 2 and the overflow row */
	assert_int_equal(km_tables_dump(&t, KMESH__IPC__TABLE__TABLE_AUTHZ_STATS, 0, &reply, err,
					sizeof(err)), OK);
	for (size_t i = 0; i < reply.n_authz_denials; i++) {
		uint32_t id = reply.authz_denials[i]->workload_id;

		live += id <= 2;
		kept_other += id == KM_AUTHZ_DENIALS_OTHER;
		gone += id > 2 && id != KM_AUTHZ_DENIALS_OTHER;
	}
	assert_int_equal(live, 3);
	assert_int_equal(kept_other, 1);
	assert_int_equal(gone, 0);
	km_tables_dump_free(&reply);
	close(t.fd_authz_stats);
	close(t.fd_authz_ident);
	close(t.fd_authz_denials);
	tables_close(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_rows_in_order),
		cmocka_unit_test(test_authz_index_rows),
		cmocka_unit_test(test_invalid_rows_refused),
		cmocka_unit_test(test_batch_goes_on_past_a_refusal),
		cmocka_unit_test(test_runs_of_one_table),
		cmocka_unit_test(test_runs_of_deletes),
		cmocka_unit_test(test_full_table_and_deletes),
		cmocka_unit_test(test_present_rows_adopted_and_deleted),
		cmocka_unit_test(test_enroll_and_dump),
		cmocka_unit_test(test_weights_flags_waypoints),
		cmocka_unit_test(test_counts_expose_whole_slots),
		cmocka_unit_test(test_sync_sweeps_unwritten_rows),
		cmocka_unit_test(test_ipsec_rows),
		cmocka_unit_test(test_denials_collected),
	};

	/* One group: the cases build on each other's rows, in this order. */
	return cmocka_run_group_tests_name("tables", tests, setup, teardown);
}
