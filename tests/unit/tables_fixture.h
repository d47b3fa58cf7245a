/* tables_fixture.h — what the map writer's table tests (test_tables.c, test_slots.c) share:
 * real BPF maps of the shared layouts behind a km_tables, and builders of the rows the xDS agent
 * sends. Include after cmocka.h. */
#ifndef KM_TEST_TABLES_FIXTURE_H
#define KM_TEST_TABLES_FIXTURE_H

#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "kmesh_maps.h"
#include "services/map-writer/tables.h"

#define OK KMESH__IPC__CODE__OK
#define BAD KMESH__IPC__CODE__BAD_REQUEST
#define MISSING KMESH__IPC__CODE__NOT_FOUND
#define FULL KMESH__IPC__CODE__TABLE_FULL

static inline int make_map(size_t key, size_t value, uint32_t max)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_NO_PREALLOC);

	return bpf_map_create(BPF_MAP_TYPE_HASH, NULL, (uint32_t)key, (uint32_t)value, max, &o);
}

static inline void tables_open(struct km_tables *tp)
{
	struct km_tables t;

	memset(&t, 0, sizeof(t));
	t.fd_manage = make_map(sizeof(struct km_manage_key), sizeof(struct km_manage_value), 8);
	t.fd_pod_netns = make_map(sizeof(struct km_manage_key), sizeof(struct km_pod_netns_value), 8);
	t.fd_ipsec_peer = make_map(sizeof(struct km_ipsec_peer_key), sizeof(struct km_ipsec_peer_value), 8);
	{
		LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_NO_PREALLOC);

		t.fd_ipsec_cidr = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, NULL,
						 sizeof(struct km_ipsec_cidr_key),
						 sizeof(struct km_ipsec_cidr_value), 8, &o);
	}
	t.fd_frontend = make_map(sizeof(struct km_frontend_key), sizeof(struct km_frontend_value), 4);
	t.fd_service = make_map(sizeof(struct km_service_key), sizeof(struct km_service_value), 8);
	t.fd_endpoint = make_map(sizeof(struct km_endpoint_key), sizeof(struct km_endpoint_value), 64);
	t.fd_backend = make_map(sizeof(struct km_backend_key), sizeof(struct km_backend_value), 8);
	t.fd_port_override = make_map(sizeof(struct km_port_override_key),
				      sizeof(struct km_port_override_value), 8);
	t.fd_authz_ident = t.fd_authz_list = t.fd_authz_match = -1;
	t.fd_authz_set = t.fd_authz_cidr = t.fd_authz_stats = t.fd_authz_index = -1;
	t.fd_authz_denials = -1;
	t.fd_fe_filter = -1;
	t.fd_slot = -1;
	t.sizes = (struct km_table_sizes){ 8, 4, 8, 64, 8, 8, 8, 0, 0, 0 };
	assert_int_equal(km_tables_load_present(&t), 0);
	*tp = t;
}

static inline void tables_close(struct km_tables *t)
{
	int fds[] = { t->fd_manage, t->fd_frontend, t->fd_service, t->fd_endpoint, t->fd_backend,
		      t->fd_port_override, t->fd_pod_netns, t->fd_ipsec_peer, t->fd_ipsec_cidr,
		      t->fd_slot };

	km_tables_free(t);
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static inline int maps_available(struct km_tables *t)
{
	return t->fd_frontend >= 0 && t->fd_backend >= 0;
}

/* The service row as stored (the test fails if it is absent). */
static inline struct km_service_value service_at(struct km_tables *t, uint32_t id)
{
	struct km_service_key k = { .service_id = id };
	struct km_service_value v;

	assert_int_equal(bpf_map_lookup_elem(t->fd_service, &k, &v), 0);
	return v;
}

/* ---- row builders ---------------------------------------------------------------------------- */

static uint8_t v4[4] __attribute__((unused)) = { 10, 0, 0, 1 };

struct rows {
	Kmesh__Ipc__TableOp op;
	Kmesh__Ipc__FrontendRow fe;
	Kmesh__Ipc__ServiceRow svc;
	Kmesh__Ipc__EndpointRow ep;
	Kmesh__Ipc__BackendRow be;
	ProtobufCBinaryData addrs[3];
	uint32_t counts[KM_PRIO_COUNT + 1];
};

static inline Kmesh__Ipc__TableOp *backend(struct rows *r, uint32_t id, uint8_t *addr, size_t len)
{
	kmesh__ipc__table_op__init(&r->op);
	kmesh__ipc__backend_row__init(&r->be);
	r->op.kind = KMESH__IPC__TABLE_OP__KIND__UPSERT;
	r->op.row_case = KMESH__IPC__TABLE_OP__ROW_BACKEND;
	r->op.backend = &r->be;
	r->be.id = id;
	r->addrs[0].data = addr;
	r->addrs[0].len = len;
	r->be.addresses = r->addrs;
	r->be.n_addresses = addr ? 1 : 0;
	return &r->op;
}

static inline Kmesh__Ipc__TableOp *endpoint(struct rows *r, uint32_t svc, uint32_t prio, uint32_t idx,
				     uint32_t be)
{
	kmesh__ipc__table_op__init(&r->op);
	kmesh__ipc__endpoint_row__init(&r->ep);
	r->op.kind = KMESH__IPC__TABLE_OP__KIND__UPSERT;
	r->op.row_case = KMESH__IPC__TABLE_OP__ROW_ENDPOINT;
	r->op.endpoint = &r->ep;
	r->ep.service_id = svc;
	r->ep.priority = prio;
	r->ep.index = idx;
	r->ep.backend_id = be;
	return &r->op;
}

static inline Kmesh__Ipc__TableOp *service(struct rows *r, uint32_t id, uint32_t count0, uint32_t mode)
{
	kmesh__ipc__table_op__init(&r->op);
	kmesh__ipc__service_row__init(&r->svc);
	r->op.kind = KMESH__IPC__TABLE_OP__KIND__UPSERT;
	r->op.row_case = KMESH__IPC__TABLE_OP__ROW_SERVICE;
	r->op.service = &r->svc;
	r->svc.id = id;
	memset(r->counts, 0, sizeof(r->counts));
	r->counts[0] = count0;
	r->svc.endpoint_count = r->counts;
	r->svc.n_endpoint_count = KM_PRIO_COUNT;
	r->svc.lb_mode = mode;
	return &r->op;
}

static inline Kmesh__Ipc__TableOp *frontend(struct rows *r, uint8_t *addr, size_t len, uint32_t port,
				     uint32_t kind, uint32_t id, uint32_t target)
{
	kmesh__ipc__table_op__init(&r->op);
	kmesh__ipc__frontend_row__init(&r->fe);
	r->op.kind = KMESH__IPC__TABLE_OP__KIND__UPSERT;
	r->op.row_case = KMESH__IPC__TABLE_OP__ROW_FRONTEND;
	r->op.frontend = &r->fe;
	r->fe.address.data = addr;
	r->fe.address.len = len;
	r->fe.port = port;
	r->fe.protocol = 6;
	r->fe.kind = (Kmesh__Ipc__FrontendKind)kind;
	r->fe.upstream_id = id;
	r->fe.target_port = target;
	return &r->op;
}

static inline Kmesh__Ipc__Code apply(struct km_tables *t, Kmesh__Ipc__TableOp *op, char *err)
{
	return km_tables_apply(t, op, err, 256);
}

/* tables_open with a km_slot of n slots (an mmap-able array) and backends 90, 91 and 92 at v4;
 * skips the test where BPF maps cannot be made. */
static inline void tables_open_slots(struct km_tables *t, uint32_t n)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_MMAPABLE);
	struct rows r;
	char err[256];

	tables_open(t);
	if (!maps_available(t)) {
		tables_close(t);
		skip();
	}
	t->fd_slot = bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, sizeof(uint32_t),
				    sizeof(struct km_endpoint_value), n, &o);
	assert_true(t->fd_slot >= 0);
	km_tables_free(t);
	assert_int_equal(km_tables_load_present(t), 0);
	assert_true(km_slots_enabled(&t->slots));
	for (uint32_t b = 90; b < 93; b++)
		assert_int_equal(apply(t, backend(&r, b, v4, 4), err), OK);
}

#endif
