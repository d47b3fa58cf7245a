/* batch_wire.c — a TableBatch envelope read by hand (see batch_wire.h). Field numbers from
 * ipc/kmesh_ipc.proto. */
#include "ipc/batch_wire.h"

#include "ipc/pb_wire.h"

typedef ProtobufCAllocator alloc_t;

static Kmesh__Ipc__FrontendRow *frontend_read(alloc_t *a, const uint8_t *p, size_t n)
{
	Kmesh__Ipc__FrontendRow *m = km_pbw_zalloc(a, sizeof(*m));

	if (!m)
		return NULL;
	kmesh__ipc__frontend_row__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) {
		case 1: PBW_BYTES(m->address); break;
		case 2: PBW_U32(m->port); break;
		case 3: PBW_U32(m->protocol); break;
		case 4: PBW_ENUM(m->kind); break;
		case 5: PBW_U32(m->upstream_id); break;
		case 6: PBW_U32(m->target_port); break;
		case 7: PBW_U32(m->flags); break;
		case 8: PBW_U32(m->pick_base); break;
		case 9: PBW_U32(m->pick_count); break;
		default: PBW_OTHER(kmesh__ipc__frontend_row__descriptor);
		}
	}
	PBW_END(m);
}

static Kmesh__Ipc__ServiceRow *service_read(alloc_t *a, const uint8_t *p, size_t n)
{
	Kmesh__Ipc__ServiceRow *m = km_pbw_zalloc(a, sizeof(*m));

	if (!m)
		return NULL;
	kmesh__ipc__service_row__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) {
		case 1: PBW_U32(m->id); break;
		case 2: PBW_VARINTS(m->endpoint_count, m->n_endpoint_count); break;
		case 3: PBW_ENUM(m->lb_mode); break;
		case 4: PBW_BYTES(m->waypoint_address); break;
		case 5: PBW_U32(m->waypoint_port); break;
		case 6: PBW_U32(m->waypoint_data_port); break;
		case 7: PBW_U32(m->flags); break;
		case 8: PBW_VARINTS(m->weight_total, m->n_weight_total); break;
		case 9: PBW_VARINTS(m->slot_base, m->n_slot_base); break;
		default: PBW_OTHER(kmesh__ipc__service_row__descriptor);
		}
	}
	PBW_END(m);
}

static Kmesh__Ipc__EndpointRow *endpoint_read(alloc_t *a, const uint8_t *p, size_t n)
{
	Kmesh__Ipc__EndpointRow *m = km_pbw_zalloc(a, sizeof(*m));

	if (!m)
		return NULL;
	kmesh__ipc__endpoint_row__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) {
		case 1: PBW_U32(m->service_id); break;
		case 2: PBW_U32(m->priority); break;
		case 3: PBW_U32(m->index); break;
		case 4: PBW_U32(m->backend_id); break;
		case 5: PBW_U64(m->cum_weight); break;
		case 6: PBW_FIXED32(m->addr4); break;
		default: PBW_OTHER(kmesh__ipc__endpoint_row__descriptor);
		}
	}
	PBW_END(m);
}

static Kmesh__Ipc__BackendRow *backend_read(alloc_t *a, const uint8_t *p, size_t n)
{
	Kmesh__Ipc__BackendRow *m = km_pbw_zalloc(a, sizeof(*m));
	ProtobufCBinaryData addr;

	if (!m)
		return NULL;
	kmesh__ipc__backend_row__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) {
		case 1: PBW_U32(m->id); break;
		case 2: PBW_BYTES(addr); PBW_APPEND(m->addresses, m->n_addresses, addr); break;
		case 3: PBW_BYTES(m->waypoint_address); break;
		case 4: PBW_U32(m->waypoint_port); break;
		case 5: PBW_U32(m->weight); break;
		case 6: PBW_U32(m->waypoint_data_port); break;
		default: PBW_OTHER(kmesh__ipc__backend_row__descriptor);
		}
	}
	PBW_END(m);
}

static Kmesh__Ipc__AuthzIdentRow *ident_read(alloc_t *a, const uint8_t *p, size_t n)
{
	Kmesh__Ipc__AuthzIdentRow *m = km_pbw_zalloc(a, sizeof(*m));

	if (!m)
		return NULL;
	kmesh__ipc__authz_ident_row__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) {
		case 1: PBW_BYTES(m->address); break;
		case 2: PBW_U32(m->workload_id); break;
		case 3: PBW_U32(m->namespace_id); break;
		case 4: PBW_U32(m->service_account_id); break;
		case 5: PBW_U32(m->principal_id); break;
		default: PBW_OTHER(kmesh__ipc__authz_ident_row__descriptor);
		}
	}
	PBW_END(m);
}

static Kmesh__Ipc__TableOp *op_read(alloc_t *a, const uint8_t *p, size_t n)
{
	Kmesh__Ipc__TableOp *m = km_pbw_zalloc(a, sizeof(*m));
	const ProtobufCFieldDescriptor *fd;
	void *row;

	if (!m)
		return NULL;
	kmesh__ipc__table_op__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) { /* the rows are a oneof: the last one given, whole */
		case 1: PBW_ENUM(m->kind); continue;
		case KMESH__IPC__TABLE_OP__ROW_FRONTEND: PBW_MSG(m->frontend, frontend_read); break;
		case KMESH__IPC__TABLE_OP__ROW_SERVICE: PBW_MSG(m->service, service_read); break;
		case KMESH__IPC__TABLE_OP__ROW_ENDPOINT: PBW_MSG(m->endpoint, endpoint_read); break;
		case KMESH__IPC__TABLE_OP__ROW_BACKEND: PBW_MSG(m->backend, backend_read); break;
		case KMESH__IPC__TABLE_OP__ROW_AUTHZ_IDENT: PBW_MSG(m->authz_ident, ident_read); break;
		default: /* any other row: protobuf-c's unpack of that member, as it parses one */
			fd = protobuf_c_message_descriptor_get_field(&kmesh__ipc__table_op__descriptor,
								     f.num);
			if (!fd)
				continue; /* unknown: skipped */
			if (f.type != KM_PBW_LEN ||
			    !(row = protobuf_c_message_unpack(fd->descriptor, a, f.len, f.val)))
				return NULL;
			m->frontend = row; /* the union, whichever member */
		}
		m->row_case = (Kmesh__Ipc__TableOp__RowCase)f.num;
	}
	PBW_END(m);
}

static Kmesh__Ipc__TableBatch *batch_read(alloc_t *a, const uint8_t *p, size_t n)
{
	Kmesh__Ipc__TableBatch *m = km_pbw_zalloc(a, sizeof(*m));
	Kmesh__Ipc__TableOp *op;

	if (!m)
		return NULL;
	kmesh__ipc__table_batch__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) {
		case 1: PBW_MSG(op, op_read); PBW_APPEND(m->ops, m->n_ops, op); break;
		default: PBW_OTHER(kmesh__ipc__table_batch__descriptor);
		}
	}
	PBW_END(m);
}

int km_batch_wire_is_batch(const uint8_t *data, size_t len)
{
	const uint8_t *at = data, *end = len ? data + len : data;
	struct km_pbw f;
	int rc, batch = 0;

	while ((rc = km_pbw_next(&at, end, &f)) == 1) {
		const ProtobufCFieldDescriptor *fd;

		if (f.num == KMESH__IPC__ENVELOPE__BODY_BATCH) {
			batch = 1;
			continue;
		}
		fd = protobuf_c_message_descriptor_get_field(&kmesh__ipc__envelope__descriptor, f.num);
		if (fd && (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
			return 0; /* another body */
	}
	return rc == 0 && batch;
}

Kmesh__Ipc__Envelope *km_batch_wire_read(alloc_t *a, const uint8_t *p, size_t n)
{
	Kmesh__Ipc__Envelope *m = km_pbw_zalloc(a, sizeof(*m));

	if (!m)
		return NULL;
	kmesh__ipc__envelope__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) {
		case 1: PBW_U64(m->request_id); break;
		case KMESH__IPC__ENVELOPE__BODY_BATCH:
			PBW_MSG(m->batch, batch_read);
			m->body_case = KMESH__IPC__ENVELOPE__BODY_BATCH;
			break;
		default: PBW_OTHER(kmesh__ipc__envelope__descriptor);
		}
	}
	PBW_END(m);
}
