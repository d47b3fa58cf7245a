/* oplist.c — table operation list and its protobuf encoding (see oplist.h). */
#include "services/xds-agent/core/oplist.h"

#include <stdlib.h>
#include <string.h>

#include "ipc/message.h"
#include "ipc/pb_wire.h"
#include "shared/addr.h"

#define KM_IPPROTO_TCP 6

void km_oplist_init(struct km_oplist *l)
{
	memset(l, 0, sizeof(*l));
}

void km_oplist_free(struct km_oplist *l)
{
	free(l->ops);
	l->ops = NULL;
	l->n = l->cap = 0;
	l->oom = 0;
}

void km_oplist_clear(struct km_oplist *l)
{
	l->n = l->settled = 0;
	l->oom = 0;
}

/* Phase of an additive upsert: what it refers to comes in an earlier phase. */
static int phase(const struct km_op *o)
{
	switch (o->table) {
	case KM_OP_BACKEND:
		return 0;
	case KM_OP_PORT_OVERRIDE:
		return 1;
	case KM_OP_ENDPOINT:
		return 2;
	case KM_OP_SERVICE:
		return 3;
	case KM_OP_FRONTEND:
		return 4;
	case KM_OP_AUTHZ_IDENT:
	case KM_OP_AUTHZ_SET:
	case KM_OP_AUTHZ_CIDR:
		return 5;
	default:
		return 6; /* authz matches (list entries and heads: emitted "now") */
	}
}

void km_oplist_settle(struct km_oplist *l)
{
	size_t pending = l->n - l->settled, start[8] = { 0 };
	struct km_op *tmp;

	if (pending > 1 && (tmp = malloc(pending * sizeof(*tmp)))) {
		/* stable counting sort of the waiting ops by phase */
		for (size_t i = l->settled; i < l->n; i++)
			start[phase(&l->ops[i]) + 1]++;
		for (int p = 1; p < 8; p++)
			start[p] += start[p - 1];
		for (size_t i = l->settled; i < l->n; i++)
			tmp[start[phase(&l->ops[i])]++] = l->ops[i];
		memcpy(l->ops + l->settled, tmp, pending * sizeof(*tmp));
		free(tmp);
	} /* without memory the emission order stands: it is valid too, only less grouped */
	l->settled = l->n;
}

static struct km_op *append(struct km_oplist *l, enum km_op_table table, int del, int now)
{
	struct km_op *op;

	if (now)
		km_oplist_settle(l);
	if (l->drain && l->n >= l->drain_at && !l->oom) {
		km_oplist_settle(l);
		l->drain(l, l->drain_arg);
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		struct km_op *p = realloc(l->ops, cap * sizeof(*p));

		if (!p) {
			l->oom = 1;
			return NULL;
		}
		l->ops = p;
		l->cap = cap;
	}
	op = &l->ops[l->n++];
	memset(op, 0, sizeof(*op));
	op->table = (uint8_t)table;
	op->del = (uint8_t)del;
	if (now)
		l->settled = l->n;
	return op;
}

struct km_op *km_oplist_add(struct km_oplist *l, enum km_op_table table, int del)
{
	return append(l, table, del, del);
}

struct km_op *km_oplist_add_now(struct km_oplist *l, enum km_op_table table, int del)
{
	return append(l, table, del, 1);
}

/* Protobuf views of one op; all memory comes from this struct, so encoding allocates once. */
struct pb_op {
	Kmesh__Ipc__TableOp op;
	union {
		Kmesh__Ipc__FrontendRow fe;
		Kmesh__Ipc__ServiceRow svc;
		Kmesh__Ipc__EndpointRow ep;
		Kmesh__Ipc__BackendRow be;
		Kmesh__Ipc__PortOverrideRow po;
		Kmesh__Ipc__AuthzIdentRow ident;
		Kmesh__Ipc__AuthzSetRow set;
		Kmesh__Ipc__AuthzCidrRow cidr;
		Kmesh__Ipc__AuthzMatchRow match;
		Kmesh__Ipc__AuthzListRow list;
		Kmesh__Ipc__AuthzIndexRow index;
	} row;
	uint32_t sets[KM_AF_COUNT];
	ProtobufCBinaryData addrs[2];
	uint8_t bytes[3][16];
	uint32_t counts[KM_PRIO_COUNT];
	uint64_t totals[KM_PRIO_COUNT];
};

static void waypoint_to_pb(const struct km_op_waypoint *w, uint8_t *buf, ProtobufCBinaryData *addr,
			   uint32_t *port, uint32_t *data_port)
{
	*port = w->port;
	*data_port = w->port ? w->data_port : 0;
	if (w->port && w->has_addr) {
		addr->len = km_addr_to_bytes(&w->addr, buf);
		addr->data = buf;
	}
}

static void to_pb(const struct km_op *o, struct pb_op *p)
{
	kmesh__ipc__table_op__init(&p->op);
	p->op.kind = o->del ? KMESH__IPC__TABLE_OP__KIND__DELETE : KMESH__IPC__TABLE_OP__KIND__UPSERT;
	switch (o->table) {
	case KM_OP_FRONTEND:
		kmesh__ipc__frontend_row__init(&p->row.fe);
		p->row.fe.address.len = km_addr_to_bytes(&o->fe.addr, p->bytes[0]);
		p->row.fe.address.data = p->bytes[0];
		p->row.fe.port = o->fe.port;
		p->row.fe.protocol = KM_IPPROTO_TCP;
		p->row.fe.kind = (Kmesh__Ipc__FrontendKind)o->fe.kind;
		p->row.fe.upstream_id = o->fe.upstream_id;
		p->row.fe.target_port = o->fe.target_port;
		p->row.fe.flags = o->fe.flags;
		p->op.row_case = KMESH__IPC__TABLE_OP__ROW_FRONTEND;
		p->op.frontend = &p->row.fe;
		break;
	case KM_OP_SERVICE:
		kmesh__ipc__service_row__init(&p->row.svc);
		p->row.svc.id = o->svc.id;
		memcpy(p->counts, o->svc.count, sizeof(p->counts));
		p->row.svc.n_endpoint_count = o->del ? 0 : KM_PRIO_COUNT;
		p->row.svc.endpoint_count = p->counts;
		p->row.svc.lb_mode = o->svc.lb_mode;
		waypoint_to_pb(&o->svc.waypoint, p->bytes[2], &p->row.svc.waypoint_address,
			       &p->row.svc.waypoint_port, &p->row.svc.waypoint_data_port);
		p->row.svc.flags = o->svc.flags;
		memcpy(p->totals, o->svc.weight_total, sizeof(p->totals));
		p->row.svc.n_weight_total = o->del ? 0 : KM_PRIO_COUNT;
		p->row.svc.weight_total = p->totals;
		p->op.row_case = KMESH__IPC__TABLE_OP__ROW_SERVICE;
		p->op.service = &p->row.svc;
		break;
	case KM_OP_ENDPOINT:
		kmesh__ipc__endpoint_row__init(&p->row.ep);
		p->row.ep.service_id = o->ep.service_id;
		p->row.ep.priority = o->ep.prio;
		p->row.ep.index = o->ep.index;
		p->row.ep.backend_id = o->ep.backend_id;
		p->row.ep.cum_weight = o->ep.cum_weight;
		p->row.ep.addr4 = o->ep.addr4;
		p->op.row_case = KMESH__IPC__TABLE_OP__ROW_ENDPOINT;
		p->op.endpoint = &p->row.ep;
		break;
	case KM_OP_PORT_OVERRIDE:
		kmesh__ipc__port_override_row__init(&p->row.po);
		p->row.po.service_id = o->po.service_id;
		p->row.po.backend_id = o->po.backend_id;
		p->row.po.port = o->po.port;
		p->row.po.target_port = o->po.target_port;
		p->op.row_case = KMESH__IPC__TABLE_OP__ROW_PORT_OVERRIDE;
		p->op.port_override = &p->row.po;
		break;
	case KM_OP_AUTHZ_IDENT:
		kmesh__ipc__authz_ident_row__init(&p->row.ident);
		p->row.ident.address.len = km_addr_to_bytes(&o->ident.addr, p->bytes[0]);
		p->row.ident.address.data = p->bytes[0];
		p->row.ident.workload_id = o->ident.workload_id;
		p->row.ident.namespace_id = o->ident.ns_id;
		p->row.ident.service_account_id = o->ident.sa_id;
		p->row.ident.principal_id = o->ident.principal_id;
		p->op.row_case = KMESH__IPC__TABLE_OP__ROW_AUTHZ_IDENT;
		p->op.authz_ident = &p->row.ident;
		break;
	case KM_OP_AUTHZ_SET:
		kmesh__ipc__authz_set_row__init(&p->row.set);
		p->row.set.set_id = o->set.set_id;
		p->row.set.value = o->set.value;
		p->op.row_case = KMESH__IPC__TABLE_OP__ROW_AUTHZ_SET;
		p->op.authz_set = &p->row.set;
		break;
	case KM_OP_AUTHZ_CIDR:
		kmesh__ipc__authz_cidr_row__init(&p->row.cidr);
		p->row.cidr.set_id = o->cidr.set_id;
		memcpy(p->bytes[0], o->cidr.addr, sizeof(o->cidr.addr));
		p->row.cidr.address.len = o->cidr.addr_len;
		p->row.cidr.address.data = p->bytes[0];
		p->row.cidr.length = o->cidr.length;
		p->op.row_case = KMESH__IPC__TABLE_OP__ROW_AUTHZ_CIDR;
		p->op.authz_cidr = &p->row.cidr;
		break;
	case KM_OP_AUTHZ_MATCH:
		kmesh__ipc__authz_match_row__init(&p->row.match);
		p->row.match.policy_id = o->match.policy_id;
		p->row.match.index = o->match.index;
		p->row.match.flags = o->match.flags;
		memcpy(p->sets, o->match.sets, sizeof(p->sets));
		p->row.match.n_sets = o->del ? 0 : KM_AF_COUNT;
		p->row.match.sets = p->sets;
		p->op.row_case = KMESH__IPC__TABLE_OP__ROW_AUTHZ_MATCH;
		p->op.authz_match = &p->row.match;
		break;
	case KM_OP_AUTHZ_LIST:
		kmesh__ipc__authz_list_row__init(&p->row.list);
		p->row.list.kind = o->list.kind;
		p->row.list.owner = o->list.owner;
		p->row.list.index = o->list.index;
		p->row.list.policy_id = o->list.policy_id;
		p->row.list.stat_id = o->list.stat_id;
		p->row.list.flags = o->list.flags;
		p->row.list.n_matches = o->list.n_matches;
		p->row.list.n_deny = o->list.n_deny;
		p->row.list.n_allow = o->list.n_allow;
		p->row.list.n_dry_run = o->list.n_dry_run;
		p->row.list.gen = o->list.gen;
		p->op.row_case = KMESH__IPC__TABLE_OP__ROW_AUTHZ_LIST;
		p->op.authz_list = &p->row.list;
		break;
	case KM_OP_AUTHZ_INDEX:
		kmesh__ipc__authz_index_row__init(&p->row.index);
		p->row.index.kind = o->index.kind;
		p->row.index.owner = o->index.owner;
		p->row.index.gen = o->index.gen;
		p->row.index.field = o->index.field;
		p->row.index.chunk = o->index.chunk;
		p->row.index.value = o->index.value;
		if (!o->del) { /* trailing zero words are left out */
			size_t n = o->index.chunk == KM_AZX_SUMMARY ? 2 : KM_AZX_CHUNK_BITS / 64;

			while (n && !o->index.bits[n - 1])
				n--;
			p->row.index.n_bits = n;
			p->row.index.bits = (uint64_t *)o->index.bits;
		}
		p->op.row_case = KMESH__IPC__TABLE_OP__ROW_AUTHZ_INDEX;
		p->op.authz_index = &p->row.index;
		break;
	default:
		kmesh__ipc__backend_row__init(&p->row.be);
		p->row.be.id = o->be.id;
		if (o->be.has4) {
			p->addrs[p->row.be.n_addresses].len = km_addr_to_bytes(&o->be.addr4, p->bytes[0]);
			p->addrs[p->row.be.n_addresses++].data = p->bytes[0];
		}
		if (o->be.has6) {
			p->addrs[p->row.be.n_addresses].len = km_addr_to_bytes(&o->be.addr6, p->bytes[1]);
			p->addrs[p->row.be.n_addresses++].data = p->bytes[1];
		}
		p->row.be.addresses = p->addrs;
		waypoint_to_pb(&o->be.waypoint, p->bytes[2], &p->row.be.waypoint_address,
			       &p->row.be.waypoint_port, &p->row.be.waypoint_data_port);
		p->row.be.weight = o->be.weight;
		p->op.row_case = KMESH__IPC__TABLE_OP__ROW_BACKEND;
		p->op.backend = &p->row.be;
		break;
	}
}

/* ---- the frame: written in one pass ----------------------------------------------------------
 * protobuf-c packs a message by asking each nested message its size at every level: packing the
 * whole envelope walked every row five times (the envelope's size, the batch's, each op's, each
 * row's, then the bytes). Here each op is packed once, straight into the output (its row's size,
 * then its bytes: two walks), and the lengths that enclose it are written around it: the same
 * bytes protobuf-c writes (test_oplist_encode checks they repack identically). */

struct out_buf {
	uint8_t *data;
	size_t len, cap;
};

static int out_reserve(struct out_buf *o, size_t more)
{
	size_t cap = o->cap ? o->cap : 4096;
	uint8_t *d;

	while (cap - o->len < more)
		cap *= 2;
	if (cap == o->cap)
		return 0;
	if (!(d = realloc(o->data, cap)))
		return -1;
	o->data = d;
	o->cap = cap;
	return 0;
}

#define TAG_LEN_DELIMITED(field) ((uint8_t)((field) << 3 | 2))
#define TAG_VARINT(field) ((uint8_t)((field) << 3))
#define OP_PREFIX_MAX 6     /* an op's tag and a length of at most 5 bytes */
#define FRAME_HEADER_MAX 17 /* request_id (tag, 10) and the batch's tag and length (1 + 5) */

/* ---- the rows of a full sync, packed by hand ---------------------------------------------------
 * An endpoint, a backend and an identity per workload: nearly every op of a full sync. They are
 * written here as protobuf-c writes them (fields in number order, proto3 zeros and empty bytes
 * left out, the values to_pb would give it); test_oplist_encode holds the frames to protobuf-c's
 * own bytes. Every other kind goes through to_pb and protobuf-c. A hand-packed row is at most 56
 * bytes, so its length and its op's take one byte each. */
#define TAG_FIXED32(field) ((uint8_t)((field) << 3 | 5))
#define HAND_ROW_MAX 64

static size_t put_uint(uint8_t *p, unsigned field, uint64_t v)
{
	if (!v)
		return 0;
	p[0] = TAG_VARINT(field);
	return 1 + km_pbw_put_varint(p + 1, v);
}

static size_t put_fixed32(uint8_t *p, unsigned field, uint32_t v)
{
	if (!v)
		return 0;
	p[0] = TAG_FIXED32(field);
	p[1] = (uint8_t)v; /* little-endian on the wire, whatever the host */
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)(v >> 16);
	p[4] = (uint8_t)(v >> 24);
	return 5;
}

/* an address (4 or 16 bytes): always written, as a repeated element or a set field */
static size_t put_addr(uint8_t *p, unsigned field, const struct km_addr *a)
{
	size_t n = km_addr_to_bytes(a, p + 2);

	p[0] = TAG_LEN_DELIMITED(field);
	p[1] = (uint8_t)n;
	return 2 + n;
}

static size_t hand_endpoint(uint8_t *p, const struct km_op *o)
{
	size_t n = put_uint(p, 1, o->ep.service_id);

	n += put_uint(p + n, 2, o->ep.prio);
	n += put_uint(p + n, 3, o->ep.index);
	n += put_uint(p + n, 4, o->ep.backend_id);
	n += put_uint(p + n, 5, o->ep.cum_weight);
	return n + put_fixed32(p + n, 6, o->ep.addr4);
}

static size_t hand_ident(uint8_t *p, const struct km_op *o)
{
	size_t n = put_addr(p, 1, &o->ident.addr);

	n += put_uint(p + n, 2, o->ident.workload_id);
	n += put_uint(p + n, 3, o->ident.ns_id);
	n += put_uint(p + n, 4, o->ident.sa_id);
	return n + put_uint(p + n, 5, o->ident.principal_id);
}

static size_t hand_backend(uint8_t *p, const struct km_op *o)
{
	const struct km_op_waypoint *w = &o->be.waypoint;
	size_t n = put_uint(p, 1, o->be.id);

	if (o->be.has4)
		n += put_addr(p + n, 2, &o->be.addr4);
	if (o->be.has6)
		n += put_addr(p + n, 2, &o->be.addr6);
	if (w->port && w->has_addr)
		n += put_addr(p + n, 3, &w->addr);
	n += put_uint(p + n, 4, w->port);
	n += put_uint(p + n, 5, o->be.weight);
	return n + put_uint(p + n, 6, w->port ? w->data_port : 0);
}

/* The TableBatch.ops element of o at p, if o is of a hand-packed kind: its length, else 0. */
static size_t hand_op(uint8_t *p, const struct km_op *o)
{
	uint8_t row[HAND_ROW_MAX];
	size_t n;
	unsigned field;

	switch (o->table) {
	case KM_OP_ENDPOINT:
		n = hand_endpoint(row, o);
		field = KMESH__IPC__TABLE_OP__ROW_ENDPOINT;
		break;
	case KM_OP_BACKEND:
		n = hand_backend(row, o);
		field = KMESH__IPC__TABLE_OP__ROW_BACKEND;
		break;
	case KM_OP_AUTHZ_IDENT:
		n = hand_ident(row, o);
		field = KMESH__IPC__TABLE_OP__ROW_AUTHZ_IDENT;
		break;
	default:
		return 0;
	}
	p[0] = TAG_LEN_DELIMITED(1); /* TableBatch.ops */
	p[1] = (uint8_t)(4 + n);     /* the op: its kind, then its row */
	p[2] = TAG_VARINT(1);        /* TableOp.kind */
	p[3] = o->del ? KMESH__IPC__TABLE_OP__KIND__DELETE : KMESH__IPC__TABLE_OP__KIND__UPSERT;
	p[4] = TAG_LEN_DELIMITED(field);
	p[5] = (uint8_t)n;
	memcpy(p + 6, row, n);
	return 6 + n;
}

static uint8_t *encode(const struct km_op *ops, size_t n, uint64_t request_id, size_t *len,
		       int by_hand)
{
	struct out_buf o = { 0 };
	uint8_t head[FRAME_HEADER_MAX];
	size_t hl = 0, batch_len;

	if (out_reserve(&o, FRAME_HEADER_MAX) != 0)
		return NULL;
	o.len = FRAME_HEADER_MAX; /* the header goes in front once the batch's length is known */
	for (size_t i = 0; i < n; i++) {
		struct pb_op p;
		size_t start, op_len, k;

		if (out_reserve(&o, OP_PREFIX_MAX + KM_OP_PACKED_MAX) != 0) {
			free(o.data);
			return NULL;
		}
		start = o.len;
		if (by_hand && (k = hand_op(o.data + start, &ops[i]))) {
			o.len += k;
			continue;
		}
		to_pb(&ops[i], &p);
		op_len = protobuf_c_message_pack(&p.op.base, o.data + start + OP_PREFIX_MAX);
		o.data[start] = TAG_LEN_DELIMITED(1); /* TableBatch.ops */
		k = km_pbw_put_varint(o.data + start + 1, op_len);
		memmove(o.data + start + 1 + k, o.data + start + OP_PREFIX_MAX, op_len);
		o.len += 1 + k + op_len;
	}
	batch_len = o.len - FRAME_HEADER_MAX;
	if (request_id) {
		head[hl++] = TAG_VARINT(1); /* Envelope.request_id */
		hl += km_pbw_put_varint(head + hl, request_id);
	}
	head[hl++] = TAG_LEN_DELIMITED(KMESH__IPC__ENVELOPE__BODY_BATCH);
	hl += km_pbw_put_varint(head + hl, batch_len);
	memmove(o.data + hl, o.data + FRAME_HEADER_MAX, batch_len);
	memcpy(o.data, head, hl);
	*len = hl + batch_len;
	return o.data;
}

uint8_t *km_oplist_encode(const struct km_op *ops, size_t n, uint64_t request_id, size_t *len)
{
	return encode(ops, n, request_id, len, 1);
}

uint8_t *km_oplist_encode_reference(const struct km_op *ops, size_t n, uint64_t request_id,
				    size_t *len)
{
	return encode(ops, n, request_id, len, 0);
}
