/* routing_rows.c — validation and application of the routing rows (km_frontend, km_service,
 * km_endpoint, km_backend, km_port_ovr, kmesh_maps.h), and the frontend filter the frontend rows
 * feed. Part of the tables module: rows are written through tables.c, so they batch, count and
 * take part in the sync sweep; a row's references are checked against the rows already in the
 * maps (tbl_present). */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <bpf/bpf.h>

#include "kmesh_maps.h"
#include "services/map-writer/tables_internal.h"
#include "shared/addr.h"
#include "shared/log.h"

#define OK KMESH__IPC__CODE__OK
#define BAD KMESH__IPC__CODE__BAD_REQUEST
#define MISSING KMESH__IPC__CODE__NOT_FOUND

#define KM_IPPROTO_TCP 6

Kmesh__Ipc__Code tbl_parse_addr(ProtobufCBinaryData b, struct km_addr *out, const char *what,
			       char *err, size_t errlen)
{
	if (km_addr_from_bytes(b.data, b.len, out) != 0)
		return tbl_fail(BAD, err, errlen, "%s: address must be 4 or 16 bytes, got %zu", what, b.len);
	if (km_addr_is_unspecified(out))
		return tbl_fail(BAD, err, errlen, "%s: unspecified address", what);
	return OK;
}

/* A waypoint reference: no port = none; a port and no address = named but not resolved yet. */
static Kmesh__Ipc__Code parse_waypoint(ProtobufCBinaryData addr, uint32_t port, uint32_t data_port,
				       struct km_waypoint_ref *out, const char *what, char *err,
				       size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (port == 0) {
		if (addr.len || data_port)
			return tbl_fail(BAD, err, errlen, "%s: waypoint address or data port without a port",
				    what);
		return OK;
	}
	if (port > 65535 || data_port > 65535)
		return tbl_fail(BAD, err, errlen, "%s: waypoint port %u / data port %u out of range", what,
			    port, data_port);
	out->port = htons((uint16_t)port);
	out->data_port = htons((uint16_t)(data_port ? data_port : port));
	if (addr.len == 0)
		return OK; /* pending */
	return tbl_parse_addr(addr, &out->addr, what, err, errlen);
}

static Kmesh__Ipc__Code frontend_key(const Kmesh__Ipc__FrontendRow *r, struct km_frontend_key *k,
				     char *err, size_t errlen)
{
	Kmesh__Ipc__Code c;

	memset(k, 0, sizeof(*k));
	if ((c = tbl_parse_addr(r->address, &k->addr, "frontend", err, errlen)) != OK)
		return c;
	if (r->port > 65535)
		return tbl_fail(BAD, err, errlen, "frontend port %u out of range", r->port);
	if (r->protocol != KM_IPPROTO_TCP)
		return tbl_fail(BAD, err, errlen, "frontend protocol %u not supported (only 6, TCP)",
			    r->protocol);
	k->port = htons((uint16_t)r->port);
	k->proto = (uint8_t)r->protocol;
	return OK;
}

static Kmesh__Ipc__Code apply_frontend(struct km_tables *t, const Kmesh__Ipc__TableOp *op,
				       char *err, size_t errlen)
{
	const Kmesh__Ipc__FrontendRow *r = op->frontend;
	struct km_frontend_key k;
	struct km_frontend_value v = { 0 };
	Kmesh__Ipc__Code c = frontend_key(r, &k, err, errlen);

	if (c != OK)
		return c;
	if (op->kind == KMESH__IPC__TABLE_OP__KIND__DELETE)
		return tbl_delete_row(t, t->fd_frontend, "km_frontend", &k, sizeof(k), err, errlen);
	tbl_mark_upsert(t, t->fd_frontend, &k);
	if (r->upstream_id == 0)
		return tbl_fail(BAD, err, errlen, "frontend upstream id 0 is reserved");
	if (r->flags & ~(uint32_t)KM_FE_F_PORT_OVERRIDES)
		return tbl_fail(BAD, err, errlen, "frontend flags 0x%x unknown", r->flags);
	if (r->kind == KMESH__IPC__FRONTEND_KIND__FRONTEND_KIND_SERVICE) {
		struct km_service_key sk = { .service_id = r->upstream_id };

		if (r->port == 0 || r->target_port == 0 || r->target_port > 65535)
			return tbl_fail(BAD, err, errlen,
				    "service frontend needs port and target port in 1..65535 (got %u -> %u)",
				    r->port, r->target_port);
		if (!tbl_present(t, t->fd_service, &sk))
			return tbl_fail(MISSING, err, errlen,
				    "frontend references service %u, which is not in km_service "
				    "(write the service row first)", r->upstream_id);
		v.kind = KM_FRONTEND_SERVICE;
		v.target_port = htons((uint16_t)r->target_port);
		v.flags = (uint16_t)r->flags;
	} else if (r->kind == KMESH__IPC__FRONTEND_KIND__FRONTEND_KIND_WORKLOAD) {
		struct km_backend_key bk = { .backend_id = r->upstream_id };

		if (r->port != 0 || r->target_port != 0 || r->flags)
			return tbl_fail(BAD, err, errlen,
				    "workload frontend must have port 0, no target port and no flags");
		if (!tbl_present(t, t->fd_backend, &bk))
			return tbl_fail(MISSING, err, errlen,
				    "frontend references workload %u, which is not in km_backend "
				    "(write the backend row first)", r->upstream_id);
		v.kind = KM_FRONTEND_WORKLOAD;
	} else {
		return tbl_fail(BAD, err, errlen, "frontend kind %d unknown", r->kind);
	}
	v.upstream_id = r->upstream_id;
	/* the address joins the filter before its row can be seen (rows may wait in a run):
	 * a connect to it then never skips a row that exists */
	if (t->fd_fe_filter >= 0) {
		if (bpf_map_update_elem(t->fd_fe_filter, NULL, &k.addr, BPF_ANY) != 0)
			return tbl_fail(KMESH__IPC__CODE__INTERNAL, err, errlen,
					"cannot add the frontend's address to km_fe_filter: %s",
					strerror(errno));
		if (++t->fe_filter_adds == (uint64_t)t->sizes.frontend + 1)
			km_warn("km_fe_filter: more frontend addresses written since start (%" PRIu64
				") than it was sized for (%u): connects to other addresses are "
				"filtered less well until the map writer restarts",
				t->fe_filter_adds, t->sizes.frontend);
	}
	return tbl_write_row(t, t->fd_frontend, "km_frontend", &k, sizeof(k), &v, sizeof(v), err, errlen);
}

static Kmesh__Ipc__Code apply_service(struct km_tables *t, const Kmesh__Ipc__TableOp *op,
				      char *err, size_t errlen)
{
	const Kmesh__Ipc__ServiceRow *r = op->service;
	struct km_service_key k = { .service_id = r->id };
	struct km_service_value v = { 0 }, old;

	if (r->id == 0)
		return tbl_fail(BAD, err, errlen, "service id 0 is reserved");
	if (op->kind == KMESH__IPC__TABLE_OP__KIND__DELETE)
		return tbl_delete_row(t, t->fd_service, "km_service", &k, sizeof(k), err, errlen);
	tbl_mark_upsert(t, t->fd_service, &k);
	if (r->n_endpoint_count > KM_PRIO_COUNT)
		return tbl_fail(BAD, err, errlen, "service %u: %zu priorities, at most %d", r->id,
			    r->n_endpoint_count, KM_PRIO_COUNT);
	/* the wire's enum is any varint: a negative or large one is refused as unknown */
	if ((uint32_t)r->lb_mode > (uint32_t)KM_LB_PASSTHROUGH)
		return tbl_fail(BAD, err, errlen, "service %u: load-balancing mode %u unknown", r->id,
			    (uint32_t)r->lb_mode);
	if (r->flags & ~(uint32_t)KM_SVC_F_P2C)
		return tbl_fail(BAD, err, errlen, "service %u: flags 0x%x unknown", r->id, r->flags);
	if (r->n_weight_total > KM_PRIO_COUNT)
		return tbl_fail(BAD, err, errlen, "service %u: %zu weight totals, at most %d", r->id,
			    r->n_weight_total, KM_PRIO_COUNT);
	v.lb_mode = (uint32_t)r->lb_mode;
	v.flags = r->flags;
	{
		Kmesh__Ipc__Code c = parse_waypoint(r->waypoint_address, r->waypoint_port,
						    r->waypoint_data_port, &v.waypoint, "service",
						    err, errlen);

		if (c != OK)
			return c;
	}
	if (bpf_map_lookup_elem(t->fd_service, &k, &old) != 0)
		memset(&old, 0, sizeof(old));
	for (size_t p = 0; p < r->n_endpoint_count; p++) {
		uint32_t n = r->endpoint_count[p];
		struct km_endpoint_key ek = { .service_id = r->id, .prio = (uint32_t)p };

		if (n > t->sizes.endpoint)
			return tbl_fail(BAD, err, errlen, "service %u: %u endpoints at priority %zu exceed "
				    "km_endpoint's size %u", r->id, n, p, t->sizes.endpoint);
		/* A count may only expose endpoints already written (endpoint rows come first): every
		 * slot below it. Those below the count in the table are there already (a slot a
		 * count exposes cannot be deleted), so only the new ones are looked at. */
		for (ek.index = old.endpoint_count[p] < n ? old.endpoint_count[p] : 0; ek.index < n;
		     ek.index++)
			if (!tbl_present(t, t->fd_endpoint, &ek))
				return tbl_fail(MISSING, err, errlen,
					    "service %u: count %u at priority %zu exposes endpoint index "
					    "%u, which is not in km_endpoint (write endpoints first)",
					    r->id, n, p, ek.index);
		v.endpoint_count[p] = n;
		/* every weight is at least 1: a total below the count reads as "all 1" */
		v.weight_total[p] = p < r->n_weight_total && r->weight_total[p] > n ? r->weight_total[p] : n;
	}
	return tbl_write_row(t, t->fd_service, "km_service", &k, sizeof(k), &v, sizeof(v), err, errlen);
}

static Kmesh__Ipc__Code apply_endpoint(struct km_tables *t, const Kmesh__Ipc__TableOp *op,
				       char *err, size_t errlen)
{
	const Kmesh__Ipc__EndpointRow *r = op->endpoint;
	struct km_endpoint_key k = { .service_id = r->service_id, .prio = r->priority, .index = r->index };
	struct km_endpoint_value v = { .backend_id = r->backend_id, .addr4 = r->addr4,
					.cum_weight = r->cum_weight ? r->cum_weight : (uint64_t)r->index + 1 };
	struct km_backend_key bk = { .backend_id = r->backend_id };

	if (r->service_id == 0)
		return tbl_fail(BAD, err, errlen, "endpoint service id 0 is reserved");
	if (r->priority >= KM_PRIO_COUNT)
		return tbl_fail(BAD, err, errlen, "endpoint priority %u, at most %d", r->priority,
			    KM_PRIO_COUNT - 1);
	if (r->index >= t->sizes.endpoint)
		return tbl_fail(BAD, err, errlen, "endpoint index %u beyond km_endpoint's size %u",
			    r->index, t->sizes.endpoint);
	if (op->kind == KMESH__IPC__TABLE_OP__KIND__DELETE) {
		struct km_service_key sk = { .service_id = r->service_id };
		struct km_service_value sv;

		/* a slot its service's count still exposes would be picked and found missing */
		if (bpf_map_lookup_elem(t->fd_service, &sk, &sv) == 0 &&
		    r->index < sv.endpoint_count[r->priority])
			return tbl_fail(BAD, err, errlen,
				    "endpoint %u of service %u at priority %u is exposed by the "
				    "service's count %u: lower the count first", r->index,
				    r->service_id, r->priority, sv.endpoint_count[r->priority]);
		return tbl_delete_row(t, t->fd_endpoint, "km_endpoint", &k, sizeof(k), err, errlen);
	}
	tbl_mark_upsert(t, t->fd_endpoint, &k);
	if (r->backend_id == 0)
		return tbl_fail(BAD, err, errlen, "endpoint backend id 0 is reserved");
	if (!tbl_present(t, t->fd_backend, &bk))
		return tbl_fail(MISSING, err, errlen,
			    "endpoint references backend %u, which is not in km_backend "
			    "(write the backend row first)", r->backend_id);
	return tbl_write_row(t, t->fd_endpoint, "km_endpoint", &k, sizeof(k), &v, sizeof(v), err, errlen);
}

static Kmesh__Ipc__Code apply_backend(struct km_tables *t, const Kmesh__Ipc__TableOp *op,
				      char *err, size_t errlen)
{
	const Kmesh__Ipc__BackendRow *r = op->backend;
	struct km_backend_key k = { .backend_id = r->id };
	struct km_backend_value v;

	memset(&v, 0, sizeof(v));
	if (r->id == 0)
		return tbl_fail(BAD, err, errlen, "backend id 0 is reserved");
	if (op->kind == KMESH__IPC__TABLE_OP__KIND__DELETE) {
		const uint8_t *v = km_keyset_value(&t->backend_refs, &r->id);
		uint32_t refs;

		/* an endpoint slot naming it would send connections nowhere (when a reference
		 * could not be counted, for lack of memory, this check is not made) */
		if (v && !t->present_incomplete) {
			memcpy(&refs, v, sizeof(refs));
			return tbl_fail(BAD, err, errlen,
				    "backend %u is named by %u endpoint slot(s): rewrite or delete "
				    "them first", r->id, refs);
		}
		return tbl_delete_row(t, t->fd_backend, "km_backend", &k, sizeof(k), err, errlen);
	}
	tbl_mark_upsert(t, t->fd_backend, &k);
	if (r->n_addresses == 0 || r->n_addresses > 2)
		return tbl_fail(BAD, err, errlen, "backend %u: needs one or two addresses, got %zu", r->id,
			    r->n_addresses);
	for (size_t i = 0, have4 = 0, have6 = 0; i < r->n_addresses; i++) {
		struct km_addr a;
		Kmesh__Ipc__Code c = tbl_parse_addr(r->addresses[i], &a, "backend", err, errlen);
		size_t *have;

		if (c != OK)
			return c;
		have = km_addr_is_v4(&a) ? &have4 : &have6;
		if ((*have)++)
			return tbl_fail(BAD, err, errlen, "backend %u: two addresses of one family", r->id);
		if (km_addr_is_v4(&a))
			v.addr4 = a;
		else
			v.addr6 = a;
	}
	{
		Kmesh__Ipc__Code c = parse_waypoint(r->waypoint_address, r->waypoint_port,
						    r->waypoint_data_port, &v.waypoint, "backend",
						    err, errlen);

		if (c != OK)
			return c;
	}
	v.weight = r->weight ? r->weight : 1;
	return tbl_write_row(t, t->fd_backend, "km_backend", &k, sizeof(k), &v, sizeof(v), err, errlen);
}

static Kmesh__Ipc__Code apply_port_override(struct km_tables *t, const Kmesh__Ipc__TableOp *op,
					    char *err, size_t errlen)
{
	const Kmesh__Ipc__PortOverrideRow *r = op->port_override;
	struct km_port_override_key k = { .service_id = r->service_id, .backend_id = r->backend_id };
	struct km_port_override_value v = { 0 };
	struct km_backend_key bk = { .backend_id = r->backend_id };

	if (r->service_id == 0 || r->backend_id == 0)
		return tbl_fail(BAD, err, errlen, "port override ids 0 are reserved");
	if (r->port == 0 || r->port > 65535)
		return tbl_fail(BAD, err, errlen, "port override port %u out of range", r->port);
	k.port = htons((uint16_t)r->port);
	if (op->kind == KMESH__IPC__TABLE_OP__KIND__DELETE)
		return tbl_delete_row(t, t->fd_port_override, "km_port_ovr", &k, sizeof(k), err, errlen);
	tbl_mark_upsert(t, t->fd_port_override, &k);
	if (r->target_port == 0 || r->target_port > 65535)
		return tbl_fail(BAD, err, errlen, "port override target port %u out of range",
			    r->target_port);
	if (!tbl_present(t, t->fd_backend, &bk))
		return tbl_fail(MISSING, err, errlen,
			    "port override references backend %u, which is not in km_backend",
			    r->backend_id);
	v.target_port = htons((uint16_t)r->target_port);
	return tbl_write_row(t, t->fd_port_override, "km_port_ovr", &k, sizeof(k), &v, sizeof(v), err, errlen);
}

int km_routing_row(const Kmesh__Ipc__TableOp *op)
{
	switch (op->row_case) {
	case KMESH__IPC__TABLE_OP__ROW_FRONTEND:
	case KMESH__IPC__TABLE_OP__ROW_SERVICE:
	case KMESH__IPC__TABLE_OP__ROW_ENDPOINT:
	case KMESH__IPC__TABLE_OP__ROW_BACKEND:
	case KMESH__IPC__TABLE_OP__ROW_PORT_OVERRIDE:
		return 1;
	default:
		return 0;
	}
}

void km_routing_prefetch(struct km_tables *t, const Kmesh__Ipc__TableOp *op)
{
	if (op->row_case == KMESH__IPC__TABLE_OP__ROW_ENDPOINT && op->endpoint &&
	    op->kind != KMESH__IPC__TABLE_OP__KIND__DELETE) {
		struct km_backend_key bk = { .backend_id = op->endpoint->backend_id };

		tbl_present_prefetch(t, t->fd_backend, &bk); /* apply_endpoint's reference check */
	}
}

Kmesh__Ipc__Code km_routing_apply(struct km_tables *t, const Kmesh__Ipc__TableOp *op, char *err,
				  size_t errlen)
{
	switch (op->row_case) {
	case KMESH__IPC__TABLE_OP__ROW_FRONTEND: return apply_frontend(t, op, err, errlen);
	case KMESH__IPC__TABLE_OP__ROW_SERVICE: return apply_service(t, op, err, errlen);
	case KMESH__IPC__TABLE_OP__ROW_ENDPOINT: return apply_endpoint(t, op, err, errlen);
	case KMESH__IPC__TABLE_OP__ROW_BACKEND: return apply_backend(t, op, err, errlen);
	default: return apply_port_override(t, op, err, errlen);
	}
}
