/* tables.c — validate and apply table operations (see tables.h). */
#include "services/map-writer/tables.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "kmesh_maps.h"
#include "shared/addr.h"

#define OK KMESH__IPC__CODE__OK
#define BAD KMESH__IPC__CODE__BAD_REQUEST
#define MISSING KMESH__IPC__CODE__NOT_FOUND
#define FULL KMESH__IPC__CODE__TABLE_FULL
#define INTERNAL KMESH__IPC__CODE__INTERNAL

#define KM_IPPROTO_TCP 6
#define KM_MAX_ENROLL_ADDRESSES 16

#define FITS(t) _Static_assert(sizeof(t) <= KM_TABLES_ROW_BUF, #t " outgrew KM_TABLES_ROW_BUF")
FITS(struct km_manage_key);
FITS(struct km_manage_value);
FITS(struct km_frontend_key);
FITS(struct km_frontend_value);
FITS(struct km_service_key);
FITS(struct km_service_value);
FITS(struct km_endpoint_key);
FITS(struct km_endpoint_value);
FITS(struct km_backend_key);
FITS(struct km_backend_value);
FITS(struct km_port_override_key);
FITS(struct km_port_override_value);
_Static_assert(sizeof(struct km_conn_count_key) == sizeof(struct km_backend_key),
	       "a backend's key must be its connection count's key");
#define KEYSET_FITS(t) _Static_assert(sizeof(t) <= KM_KEYSET_MAX_KEY, #t " outgrew KM_KEYSET_MAX_KEY")
KEYSET_FITS(struct km_service_key);
KEYSET_FITS(struct km_endpoint_key);
KEYSET_FITS(struct km_backend_key);
KEYSET_FITS(struct km_frontend_key);
KEYSET_FITS(struct km_port_override_key);

int km_tables_init(struct km_tables *t, const struct km_dataplane *dp)
{
	memset(t, 0, sizeof(*t));
	t->fd_manage = dp->fd_manage;
	t->fd_frontend = dp->fd_frontend;
	t->fd_service = dp->fd_service;
	t->fd_endpoint = dp->fd_endpoint;
	t->fd_backend = dp->fd_backend;
	t->fd_port_override = dp->fd_port_override;
	t->fd_conn_count = dp->fd_conn_count;
	t->migrated_entries = dp->migrated_entries;
	t->sizes = dp->sizes;
	return km_tables_load_present(t);
}

static Kmesh__Ipc__Code fail(Kmesh__Ipc__Code code, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static Kmesh__Ipc__Code fail(Kmesh__Ipc__Code code, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}

/* The key set of a table whose rows other rows reference, or NULL for the others. */
static struct km_keyset *present_set(struct km_tables *t, int fd)
{
	return fd == t->fd_service ? &t->present_service
	       : fd == t->fd_endpoint ? &t->present_endpoint
	       : fd == t->fd_backend ? &t->present_backend
				      : NULL;
}

static void note_row(struct km_tables *t, int fd, const void *key, int written)
{
	struct km_keyset *s = present_set(t, fd);

	if (written && t->sync_active)
		km_tables_sync_mark(t, fd, key);
	if (!s)
		return;
	if (!written)
		km_keyset_del(s, key);
	else if (km_keyset_add(s, key) != 0)
		t->present_incomplete = 1; /* from now on an absent key is asked of the kernel */
}

int km_tables_load_present(struct km_tables *t)
{
	const int fds[] = { t->fd_service, t->fd_endpoint, t->fd_backend };
	const size_t lens[] = { sizeof(struct km_service_key), sizeof(struct km_endpoint_key),
				sizeof(struct km_backend_key) };

	km_keyset_init(&t->present_service, lens[0]);
	km_keyset_init(&t->present_endpoint, lens[1]);
	km_keyset_init(&t->present_backend, lens[2]);
	t->present_incomplete = 0;
	for (int i = 0; i < 3; i++) {
		uint8_t key[KM_KEYSET_MAX_KEY], next[KM_KEYSET_MAX_KEY];
		struct km_keyset *s = present_set(t, fds[i]);
		const void *prev = NULL;

		if (fds[i] < 0)
			continue;
		while (bpf_map_get_next_key(fds[i], prev, next) == 0) {
			if (km_keyset_add(s, next) != 0)
				return -1;
			memcpy(key, next, lens[i]);
			prev = key;
		}
	}
	return 0;
}

void km_tables_free(struct km_tables *t)
{
	for (size_t i = 0; i < sizeof(t->seen) / sizeof(t->seen[0]); i++)
		km_keyset_free(&t->seen[i]);
	km_keyset_free(&t->present_service);
	km_keyset_free(&t->present_endpoint);
	km_keyset_free(&t->present_backend);
}

/*
 * Runs: while a batch is applied, validated upserts of one table are queued and written with one
 * BPF_MAP_UPDATE_BATCH call when an op of another table comes (before it is checked), a delete
 * comes, or the batch ends. No row refers to a row of its own table, so every reference is
 * checked against rows already in the maps (their keys are in the present sets).
 */
struct km_row_run {
	int fd;
	const char *table;
	size_t key_len, value_len;
	size_t n, cap;
	size_t first_op;   /* batch index of the run's first row */
	size_t op_index;   /* batch index of the op being applied */
	size_t failed_op;  /* set by a failed write: which op failed */
	uint8_t *keys, *values;
	int no_batch_op;   /* the kernel has no batch update: write rows one by one */
};

static Kmesh__Ipc__Code run_commit(struct km_tables *t, char *err, size_t errlen)
{
	struct km_row_run *r = t->run;
	__u32 count = (__u32)r->n;
	int rc = -1, e = 0;

	if (!r->n)
		return OK;
	if (!r->no_batch_op) {
		LIBBPF_OPTS(bpf_map_batch_opts, opts, .elem_flags = BPF_ANY);

		rc = bpf_map_update_batch(r->fd, r->keys, r->values, &count, &opts);
		if (rc != 0 && (errno == EINVAL || errno == ENOTSUP || errno == EOPNOTSUPP) && count == 0)
			r->no_batch_op = 1; /* older kernel or map type: fall back below */
		else
			t->batch_calls++;
	}
	if (r->no_batch_op) {
		for (count = 0; count < r->n; count++)
			if (bpf_map_update_elem(r->fd, r->keys + count * r->key_len,
						r->values + count * r->value_len, BPF_ANY) != 0)
				break;
		rc = count == r->n ? 0 : -1;
	}
	e = errno; /* recording the keys may allocate */
	for (__u32 i = 0; i < (rc == 0 ? (__u32)r->n : count); i++)
		note_row(t, r->fd, r->keys + i * r->key_len, 1);
	r->n = 0;
	if (rc == 0)
		return OK;
	r->failed_op = r->first_op + count; /* the first row not written */
	if (e == E2BIG || e == ENOMEM) {
		t->table_full++;
		return fail(FULL, err, errlen, "%s is full (%s); raise its size flag", r->table,
			    strerror(e));
	}
	return fail(INTERNAL, err, errlen, "writing %s: %s", r->table, strerror(e));
}

/* Queue a validated upsert. The run is of this table: km_tables_apply writes a run of another
 * table before it checks an op. */
static void run_add(struct km_tables *t, int fd, const char *table, const void *key,
		    size_t key_len, const void *value, size_t value_len)
{
	struct km_row_run *r = t->run;

	if (!r->n) {
		r->fd = fd;
		r->table = table;
		r->key_len = key_len;
		r->value_len = value_len;
		r->first_op = r->op_index;
	}
	memcpy(r->keys + r->n * key_len, key, key_len); /* packed, as the batch call reads them */
	memcpy(r->values + r->n * value_len, value, value_len);
	r->n++;
}

/* Whether a referenced row is in its table: rows queued in the current run are not (a run is
 * written before any other table's row is checked, and no row references its own table). */
static int present(struct km_tables *t, int fd, const void *key)
{
	uint8_t value[KM_TABLES_ROW_BUF];

	if (km_keyset_has(present_set(t, fd), key))
		return 1;
	return t->present_incomplete && bpf_map_lookup_elem(fd, key, value) == 0;
}

static Kmesh__Ipc__Code write_row(struct km_tables *t, int fd, const char *table, const void *key,
				  size_t key_len, const void *value, size_t value_len, char *err,
				  size_t errlen)
{
	if (t->run) {
		run_add(t, fd, table, key, key_len, value, value_len);
		return OK;
	}
	if (bpf_map_update_elem(fd, key, value, BPF_ANY) == 0) {
		note_row(t, fd, key, 1);
		return OK;
	}
	if (errno == E2BIG || errno == ENOMEM) {
		t->table_full++;
		return fail(FULL, err, errlen, "%s is full (%s); raise its size flag", table,
			    strerror(errno));
	}
	return fail(INTERNAL, err, errlen, "writing %s: %s", table, strerror(errno));
}

int km_tables_delete_key(struct km_tables *t, int fd, const void *key)
{
	if (fd == t->fd_backend && t->fd_conn_count >= 0) /* a backend id is its count's key */
		bpf_map_delete_elem(t->fd_conn_count, key);
	if (bpf_map_delete_elem(fd, key) != 0 && errno != ENOENT)
		return -errno;
	note_row(t, fd, key, 0);
	return 0;
}

static Kmesh__Ipc__Code delete_row(struct km_tables *t, int fd, const char *table, const void *key,
				   char *err, size_t errlen)
{
	int rc;

	if (t->run) { /* queued rows first: they may be the ones deleted */
		Kmesh__Ipc__Code c = run_commit(t, err, errlen);

		if (c != OK)
			return c;
	}
	/* Deleting an absent row is not an error: deletes are idempotent. */
	if ((rc = km_tables_delete_key(t, fd, key)) == 0)
		return OK;
	return fail(INTERNAL, err, errlen, "deleting from %s: %s", table, strerror(-rc));
}

static Kmesh__Ipc__Code parse_addr(ProtobufCBinaryData b, struct km_addr *out, const char *what,
				   char *err, size_t errlen)
{
	if (km_addr_from_bytes(b.data, b.len, out) != 0)
		return fail(BAD, err, errlen, "%s: address must be 4 or 16 bytes, got %zu", what, b.len);
	if (km_addr_is_unspecified(out))
		return fail(BAD, err, errlen, "%s: unspecified address", what);
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
			return fail(BAD, err, errlen, "%s: waypoint address or data port without a port",
				    what);
		return OK;
	}
	if (port > 65535 || data_port > 65535)
		return fail(BAD, err, errlen, "%s: waypoint port %u / data port %u out of range", what,
			    port, data_port);
	out->port = htons((uint16_t)port);
	out->data_port = htons((uint16_t)(data_port ? data_port : port));
	if (addr.len == 0)
		return OK; /* pending */
	return parse_addr(addr, &out->addr, what, err, errlen);
}

static Kmesh__Ipc__Code frontend_key(const Kmesh__Ipc__FrontendRow *r, struct km_frontend_key *k,
				     char *err, size_t errlen)
{
	Kmesh__Ipc__Code c;

	memset(k, 0, sizeof(*k));
	if ((c = parse_addr(r->address, &k->addr, "frontend", err, errlen)) != OK)
		return c;
	if (r->port > 65535)
		return fail(BAD, err, errlen, "frontend port %u out of range", r->port);
	if (r->protocol != KM_IPPROTO_TCP)
		return fail(BAD, err, errlen, "frontend protocol %u not supported (only 6, TCP)",
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
		return delete_row(t, t->fd_frontend, "km_frontend", &k, err, errlen);
	if (r->upstream_id == 0)
		return fail(BAD, err, errlen, "frontend upstream id 0 is reserved");
	if (r->flags & ~(uint32_t)KM_FE_F_PORT_OVERRIDES)
		return fail(BAD, err, errlen, "frontend flags 0x%x unknown", r->flags);
	if (r->kind == KMESH__IPC__FRONTEND_KIND__FRONTEND_KIND_SERVICE) {
		struct km_service_key sk = { .service_id = r->upstream_id };

		if (r->port == 0 || r->target_port == 0 || r->target_port > 65535)
			return fail(BAD, err, errlen,
				    "service frontend needs port and target port in 1..65535 (got %u -> %u)",
				    r->port, r->target_port);
		if (!present(t, t->fd_service, &sk))
			return fail(MISSING, err, errlen,
				    "frontend references service %u, which is not in km_service "
				    "(write the service row first)", r->upstream_id);
		v.kind = KM_FRONTEND_SERVICE;
		v.target_port = htons((uint16_t)r->target_port);
		v.flags = (uint16_t)r->flags;
	} else if (r->kind == KMESH__IPC__FRONTEND_KIND__FRONTEND_KIND_WORKLOAD) {
		struct km_backend_key bk = { .backend_id = r->upstream_id };

		if (r->port != 0 || r->target_port != 0 || r->flags)
			return fail(BAD, err, errlen,
				    "workload frontend must have port 0, no target port and no flags");
		if (!present(t, t->fd_backend, &bk))
			return fail(MISSING, err, errlen,
				    "frontend references workload %u, which is not in km_backend "
				    "(write the backend row first)", r->upstream_id);
		v.kind = KM_FRONTEND_WORKLOAD;
	} else {
		return fail(BAD, err, errlen, "frontend kind %d unknown", r->kind);
	}
	v.upstream_id = r->upstream_id;
	return write_row(t, t->fd_frontend, "km_frontend", &k, sizeof(k), &v, sizeof(v), err, errlen);
}

static Kmesh__Ipc__Code apply_service(struct km_tables *t, const Kmesh__Ipc__TableOp *op,
				      char *err, size_t errlen)
{
	const Kmesh__Ipc__ServiceRow *r = op->service;
	struct km_service_key k = { .service_id = r->id };
	struct km_service_value v = { 0 };

	if (r->id == 0)
		return fail(BAD, err, errlen, "service id 0 is reserved");
	if (op->kind == KMESH__IPC__TABLE_OP__KIND__DELETE)
		return delete_row(t, t->fd_service, "km_service", &k, err, errlen);
	if (r->n_endpoint_count > KM_PRIO_COUNT)
		return fail(BAD, err, errlen, "service %u: %zu priorities, at most %d", r->id,
			    r->n_endpoint_count, KM_PRIO_COUNT);
	if (r->lb_mode > KM_LB_PASSTHROUGH)
		return fail(BAD, err, errlen, "service %u: load-balancing mode %u unknown", r->id,
			    r->lb_mode);
	if (r->flags & ~(uint32_t)KM_SVC_F_P2C)
		return fail(BAD, err, errlen, "service %u: flags 0x%x unknown", r->id, r->flags);
	if (r->n_weight_total > KM_PRIO_COUNT)
		return fail(BAD, err, errlen, "service %u: %zu weight totals, at most %d", r->id,
			    r->n_weight_total, KM_PRIO_COUNT);
	v.lb_mode = r->lb_mode;
	v.flags = r->flags;
	{
		Kmesh__Ipc__Code c = parse_waypoint(r->waypoint_address, r->waypoint_port,
						    r->waypoint_data_port, &v.waypoint, "service",
						    err, errlen);

		if (c != OK)
			return c;
	}
	for (size_t p = 0; p < r->n_endpoint_count; p++) {
		uint32_t n = r->endpoint_count[p];
		struct km_endpoint_key ek = { .service_id = r->id, .prio = (uint32_t)p, .index = n - 1 };

		if (n > t->sizes.endpoint)
			return fail(BAD, err, errlen, "service %u: %u endpoints at priority %zu exceed "
				    "km_endpoint's size %u", r->id, n, p, t->sizes.endpoint);
		/* A count may only expose endpoints already written (endpoint rows come first). */
		if (n > 0 && !present(t, t->fd_endpoint, &ek))
			return fail(MISSING, err, errlen,
				    "service %u: count %u at priority %zu exposes endpoint index %u, "
				    "which is not in km_endpoint (write endpoints first)",
				    r->id, n, p, n - 1);
		v.endpoint_count[p] = n;
		/* every weight is at least 1: a total below the count reads as "all 1" */
		v.weight_total[p] = p < r->n_weight_total && r->weight_total[p] > n ? r->weight_total[p] : n;
	}
	return write_row(t, t->fd_service, "km_service", &k, sizeof(k), &v, sizeof(v), err, errlen);
}

static Kmesh__Ipc__Code apply_endpoint(struct km_tables *t, const Kmesh__Ipc__TableOp *op,
				       char *err, size_t errlen)
{
	const Kmesh__Ipc__EndpointRow *r = op->endpoint;
	struct km_endpoint_key k = { .service_id = r->service_id, .prio = r->priority, .index = r->index };
	struct km_endpoint_value v = { .backend_id = r->backend_id,
					.cum_weight = r->cum_weight ? r->cum_weight : (uint64_t)r->index + 1 };
	struct km_backend_key bk = { .backend_id = r->backend_id };

	if (r->service_id == 0)
		return fail(BAD, err, errlen, "endpoint service id 0 is reserved");
	if (r->priority >= KM_PRIO_COUNT)
		return fail(BAD, err, errlen, "endpoint priority %u, at most %d", r->priority,
			    KM_PRIO_COUNT - 1);
	if (r->index >= t->sizes.endpoint)
		return fail(BAD, err, errlen, "endpoint index %u beyond km_endpoint's size %u",
			    r->index, t->sizes.endpoint);
	if (op->kind == KMESH__IPC__TABLE_OP__KIND__DELETE)
		return delete_row(t, t->fd_endpoint, "km_endpoint", &k, err, errlen);
	if (r->backend_id == 0)
		return fail(BAD, err, errlen, "endpoint backend id 0 is reserved");
	if (!present(t, t->fd_backend, &bk))
		return fail(MISSING, err, errlen,
			    "endpoint references backend %u, which is not in km_backend "
			    "(write the backend row first)", r->backend_id);
	return write_row(t, t->fd_endpoint, "km_endpoint", &k, sizeof(k), &v, sizeof(v), err, errlen);
}

static Kmesh__Ipc__Code apply_backend(struct km_tables *t, const Kmesh__Ipc__TableOp *op,
				      char *err, size_t errlen)
{
	const Kmesh__Ipc__BackendRow *r = op->backend;
	struct km_backend_key k = { .backend_id = r->id };
	struct km_backend_value v;

	memset(&v, 0, sizeof(v));
	if (r->id == 0)
		return fail(BAD, err, errlen, "backend id 0 is reserved");
	if (op->kind == KMESH__IPC__TABLE_OP__KIND__DELETE)
		return delete_row(t, t->fd_backend, "km_backend", &k, err, errlen);
	if (r->n_addresses == 0 || r->n_addresses > 2)
		return fail(BAD, err, errlen, "backend %u: needs one or two addresses, got %zu", r->id,
			    r->n_addresses);
	for (size_t i = 0, have4 = 0, have6 = 0; i < r->n_addresses; i++) {
		struct km_addr a;
		Kmesh__Ipc__Code c = parse_addr(r->addresses[i], &a, "backend", err, errlen);
		size_t *have;

		if (c != OK)
			return c;
		have = km_addr_is_v4(&a) ? &have4 : &have6;
		if ((*have)++)
			return fail(BAD, err, errlen, "backend %u: two addresses of one family", r->id);
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
	return write_row(t, t->fd_backend, "km_backend", &k, sizeof(k), &v, sizeof(v), err, errlen);
}

static Kmesh__Ipc__Code apply_port_override(struct km_tables *t, const Kmesh__Ipc__TableOp *op,
					    char *err, size_t errlen)
{
	const Kmesh__Ipc__PortOverrideRow *r = op->port_override;
	struct km_port_override_key k = { .service_id = r->service_id, .backend_id = r->backend_id };
	struct km_port_override_value v = { 0 };
	struct km_backend_key bk = { .backend_id = r->backend_id };

	if (r->service_id == 0 || r->backend_id == 0)
		return fail(BAD, err, errlen, "port override ids 0 are reserved");
	if (r->port == 0 || r->port > 65535)
		return fail(BAD, err, errlen, "port override port %u out of range", r->port);
	k.port = htons((uint16_t)r->port);
	if (op->kind == KMESH__IPC__TABLE_OP__KIND__DELETE)
		return delete_row(t, t->fd_port_override, "km_port_ovr", &k, err, errlen);
	if (r->target_port == 0 || r->target_port > 65535)
		return fail(BAD, err, errlen, "port override target port %u out of range",
			    r->target_port);
	if (!present(t, t->fd_backend, &bk))
		return fail(MISSING, err, errlen,
			    "port override references backend %u, which is not in km_backend",
			    r->backend_id);
	v.target_port = htons((uint16_t)r->target_port);
	return write_row(t, t->fd_port_override, "km_port_ovr", &k, sizeof(k), &v, sizeof(v), err, errlen);
}

static int op_table_fd(const struct km_tables *t, const Kmesh__Ipc__TableOp *op)
{
	switch (op->row_case) {
	case KMESH__IPC__TABLE_OP__ROW_FRONTEND: return t->fd_frontend;
	case KMESH__IPC__TABLE_OP__ROW_SERVICE: return t->fd_service;
	case KMESH__IPC__TABLE_OP__ROW_ENDPOINT: return t->fd_endpoint;
	case KMESH__IPC__TABLE_OP__ROW_BACKEND: return t->fd_backend;
	case KMESH__IPC__TABLE_OP__ROW_PORT_OVERRIDE: return t->fd_port_override;
	default: return -1;
	}
}

Kmesh__Ipc__Code km_tables_apply(struct km_tables *t, const Kmesh__Ipc__TableOp *op, char *err,
				 size_t errlen)
{
	Kmesh__Ipc__Code c;

	err[0] = '\0';
	/* rows queued for another table are written before this op is checked: it may refer to them */
	if (t->run && t->run->n && t->run->fd != op_table_fd(t, op) &&
	    (c = run_commit(t, err, errlen)) != OK) {
		t->ops_failed++;
		return c;
	}
	if (op->kind != KMESH__IPC__TABLE_OP__KIND__UPSERT &&
	    op->kind != KMESH__IPC__TABLE_OP__KIND__DELETE)
		c = fail(BAD, err, errlen, "op kind %d is neither UPSERT nor DELETE", op->kind);
	else if (op->row_case == KMESH__IPC__TABLE_OP__ROW_FRONTEND)
		c = apply_frontend(t, op, err, errlen);
	else if (op->row_case == KMESH__IPC__TABLE_OP__ROW_SERVICE)
		c = apply_service(t, op, err, errlen);
	else if (op->row_case == KMESH__IPC__TABLE_OP__ROW_ENDPOINT)
		c = apply_endpoint(t, op, err, errlen);
	else if (op->row_case == KMESH__IPC__TABLE_OP__ROW_BACKEND)
		c = apply_backend(t, op, err, errlen);
	else if (op->row_case == KMESH__IPC__TABLE_OP__ROW_PORT_OVERRIDE)
		c = apply_port_override(t, op, err, errlen);
	else
		c = fail(BAD, err, errlen, "op carries no row");
	if (c == OK)
		t->ops_applied++;
	else
		t->ops_failed++;
	return c;
}

Kmesh__Ipc__Code km_tables_apply_batch(struct km_tables *t, const Kmesh__Ipc__TableBatch *b,
				       uint32_t *applied, char *err, size_t errlen)
{
	struct km_row_run run = { 0 };
	Kmesh__Ipc__Code c = OK;
	char why[384];

	*applied = 0;
	err[0] = '\0';
	run.keys = malloc(b->n_ops * KM_TABLES_ROW_BUF + 1);
	run.values = malloc(b->n_ops * KM_TABLES_ROW_BUF + 1);
	/* without memory for the run, every row is written on its own */
	t->run = run.keys && run.values ? &run : NULL;
	run.failed_op = SIZE_MAX;
	for (size_t i = 0; i < b->n_ops && c == OK; i++) {
		run.op_index = i;
		c = km_tables_apply(t, b->ops[i], why, sizeof(why));
		if (c != OK && run.failed_op == SIZE_MAX)
			run.failed_op = i; /* the op itself was refused */
	}
	if (t->run) {
		/* rows queued before a refused op are still written: they come before the failure */
		char why_run[384];
		Kmesh__Ipc__Code rc = run_commit(t, why_run, sizeof(why_run));

		if (rc != OK) { /* a failed write belongs to an earlier op than any refusal */
			c = rc;
			memcpy(why, why_run, sizeof(why));
		}
	}
	/* applied = ops before the first failure; a failed write may belong to an earlier op */
	*applied = c == OK ? (uint32_t)b->n_ops : (uint32_t)run.failed_op;
	if (c != OK)
		snprintf(err, errlen, "op %u: %s", *applied, why);
	if (c != OK && t->sync_active)
		t->sync_incomplete = 1; /* a refused row is unmarked, not unwanted: keep what is there */
	t->run = NULL;
	free(run.keys);
	free(run.values);
	return c;
}

Kmesh__Ipc__Code km_tables_enroll(struct km_tables *t, const Kmesh__Ipc__Enroll *e, char *err,
				  size_t errlen)
{
	struct km_manage_key k = { .netns_cookie = e->netns_cookie };
	struct km_manage_value v = { 0 };

	err[0] = '\0';
	if (e->netns_cookie == 0)
		return fail(BAD, err, errlen, "netns cookie 0 is not a network namespace");
	if (e->n_addresses > KM_MAX_ENROLL_ADDRESSES)
		return fail(BAD, err, errlen, "%zu pod addresses, at most %d", e->n_addresses,
			    KM_MAX_ENROLL_ADDRESSES);
	for (size_t i = 0; i < e->n_addresses; i++) {
		struct km_addr a;
		Kmesh__Ipc__Code c = parse_addr(e->addresses[i], &a, "pod", err, errlen);

		if (c != OK)
			return c;
	}
	return write_row(t, t->fd_manage, "km_manage", &k, sizeof(k), &v, sizeof(v), err, errlen);
}

Kmesh__Ipc__Code km_tables_unenroll(struct km_tables *t, const Kmesh__Ipc__Unenroll *u, char *err,
				    size_t errlen)
{
	struct km_manage_key k = { .netns_cookie = u->netns_cookie };

	err[0] = '\0';
	if (u->netns_cookie == 0)
		return fail(BAD, err, errlen, "netns cookie 0 is not a network namespace");
	return delete_row(t, t->fd_manage, "km_manage", &k, err, errlen);
}
