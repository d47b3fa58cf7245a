/* dump.c — reading a table back as rows (admin dumps, and later the xDS agent's recovery), a
 * page at a time (by buckets or by keys, collected as structs or packed as they are read: the
 * dumps off the loop, dump_queue.h), and the authorization counters BPF keeps.
 * Part of the tables module (declared in tables.h); kept apart because it only reads. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "ipc/pb_wire.h"
#include "kmesh_maps.h"
#include "services/map-writer/tables.h"
#include "shared/addr.h"
#include "shared/grow.h"

#define DUMP_DEFAULT_ROWS 100000u

/* An enrolled pod: the row and the path string it points to. */
struct dump_manage {
	Kmesh__Ipc__ManageRow row;
	struct km_pod_netns_value where;
};

/* One allocation per row holds the op, its row message and the address bytes it points to. */
struct dump_row {
	Kmesh__Ipc__TableOp op;
	union {
		Kmesh__Ipc__FrontendRow frontend;
		Kmesh__Ipc__ServiceRow service;
		Kmesh__Ipc__EndpointRow endpoint;
		Kmesh__Ipc__BackendRow backend;
		Kmesh__Ipc__PortOverrideRow port_override;
		Kmesh__Ipc__IpsecPeerRow ipsec_peer;
		Kmesh__Ipc__IpsecCidrRow ipsec_cidr;
	} row;
	uint32_t counts[KM_PRIO_COUNT];
	uint64_t totals[KM_PRIO_COUNT];
	uint32_t slot_bases[KM_PRIO_COUNT];
	ProtobufCBinaryData addrs[2];
	uint8_t bytes[3][16];
};

static ProtobufCBinaryData addr_bytes(const struct km_addr *a, uint8_t *buf)
{
	ProtobufCBinaryData b = { .len = km_addr_to_bytes(a, buf), .data = buf };

	return b;
}

static void waypoint_out(const struct km_waypoint_ref *w, uint8_t *buf, ProtobufCBinaryData *addr,
			 uint32_t *port, uint32_t *data_port)
{
	*port = ntohs(w->port);
	*data_port = ntohs(w->data_port);
	if (!km_addr_is_unspecified(&w->addr))
		*addr = addr_bytes(&w->addr, buf);
}

static void fill_row(struct dump_row *d, Kmesh__Ipc__Table table, const void *key, const void *value)
{
	kmesh__ipc__table_op__init(&d->op);
	d->op.kind = KMESH__IPC__TABLE_OP__KIND__UPSERT;
	switch (table) {
	case KMESH__IPC__TABLE__TABLE_FRONTEND: {
		const struct km_frontend_key *k = key;
		const struct km_frontend_value *v = value;

		kmesh__ipc__frontend_row__init(&d->row.frontend);
		d->row.frontend.address = addr_bytes(&k->addr, d->bytes[0]);
		d->row.frontend.port = ntohs(k->port);
		d->row.frontend.protocol = k->proto;
		d->row.frontend.kind = v->kind == KM_FRONTEND_SERVICE
					       ? KMESH__IPC__FRONTEND_KIND__FRONTEND_KIND_SERVICE
					       : KMESH__IPC__FRONTEND_KIND__FRONTEND_KIND_WORKLOAD;
		d->row.frontend.upstream_id = v->upstream_id;
		d->row.frontend.target_port = ntohs(v->target_port);
		d->row.frontend.flags = v->flags & ~KM_FE_F_PICK; /* the map writer's own (fe_pick.h) */
		if (v->flags & KM_FE_F_PICK) {
			d->row.frontend.pick_base = v->pick_base;
			d->row.frontend.pick_count = v->pick_count;
		}
		d->op.row_case = KMESH__IPC__TABLE_OP__ROW_FRONTEND;
		d->op.frontend = &d->row.frontend;
		break;
	}
	case KMESH__IPC__TABLE__TABLE_SERVICE: {
		const struct km_service_key *k = key;
		const struct km_service_value *v = value;

		kmesh__ipc__service_row__init(&d->row.service);
		d->row.service.id = k->service_id;
		memcpy(d->counts, v->endpoint_count, sizeof(d->counts));
		d->row.service.n_endpoint_count = KM_PRIO_COUNT;
		d->row.service.endpoint_count = d->counts;
		d->row.service.lb_mode = v->lb_mode;
		waypoint_out(&v->waypoint, d->bytes[2], &d->row.service.waypoint_address,
			     &d->row.service.waypoint_port, &d->row.service.waypoint_data_port);
		d->row.service.flags = v->flags;
		memcpy(d->totals, v->weight_total, sizeof(d->totals));
		d->row.service.n_weight_total = KM_PRIO_COUNT;
		d->row.service.weight_total = d->totals;
		memcpy(d->slot_bases, v->slot_base, sizeof(d->slot_bases));
		d->row.service.n_slot_base = KM_PRIO_COUNT;
		d->row.service.slot_base = d->slot_bases;
		d->op.row_case = KMESH__IPC__TABLE_OP__ROW_SERVICE;
		d->op.service = &d->row.service;
		break;
	}
	case KMESH__IPC__TABLE__TABLE_ENDPOINT: {
		const struct km_endpoint_key *k = key;
		const struct km_endpoint_value *v = value;

		kmesh__ipc__endpoint_row__init(&d->row.endpoint);
		d->row.endpoint.service_id = k->service_id;
		d->row.endpoint.priority = k->prio;
		d->row.endpoint.index = k->index;
		d->row.endpoint.backend_id = v->backend_id;
		d->row.endpoint.cum_weight = v->cum_weight;
		d->row.endpoint.addr4 = v->addr4;
		d->op.row_case = KMESH__IPC__TABLE_OP__ROW_ENDPOINT;
		d->op.endpoint = &d->row.endpoint;
		break;
	}
	case KMESH__IPC__TABLE__TABLE_PORT_OVERRIDE: {
		const struct km_port_override_key *k = key;
		const struct km_port_override_value *v = value;

		kmesh__ipc__port_override_row__init(&d->row.port_override);
		d->row.port_override.service_id = k->service_id;
		d->row.port_override.backend_id = k->backend_id;
		d->row.port_override.port = ntohs(k->port);
		d->row.port_override.target_port = ntohs(v->target_port);
		d->op.row_case = KMESH__IPC__TABLE_OP__ROW_PORT_OVERRIDE;
		d->op.port_override = &d->row.port_override;
		break;
	}
	case KMESH__IPC__TABLE__TABLE_IPSEC_PEER: {
		const struct km_ipsec_peer_key *k = key;
		const struct km_ipsec_peer_value *v = value;

		kmesh__ipc__ipsec_peer_row__init(&d->row.ipsec_peer);
		d->row.ipsec_peer.address = addr_bytes(&k->addr, d->bytes[0]);
		d->row.ipsec_peer.peer_id = v->peer_id;
		d->op.row_case = KMESH__IPC__TABLE_OP__ROW_IPSEC_PEER;
		d->op.ipsec_peer = &d->row.ipsec_peer;
		break;
	}
	case KMESH__IPC__TABLE__TABLE_IPSEC_CIDR: {
		const struct km_ipsec_cidr_key *k = key;
		const struct km_ipsec_cidr_value *v = value;

		kmesh__ipc__ipsec_cidr_row__init(&d->row.ipsec_cidr);
		d->row.ipsec_cidr.address = addr_bytes(&k->addr, d->bytes[0]);
		d->row.ipsec_cidr.length = km_addr_is_v4(&k->addr) ? k->prefixlen - 96 : k->prefixlen;
		d->row.ipsec_cidr.peer_id = v->peer_id;
		d->op.row_case = KMESH__IPC__TABLE_OP__ROW_IPSEC_CIDR;
		d->op.ipsec_cidr = &d->row.ipsec_cidr;
		break;
	}
	default: { /* backend */
		const struct km_backend_key *k = key;
		const struct km_backend_value *v = value;

		kmesh__ipc__backend_row__init(&d->row.backend);
		d->row.backend.id = k->backend_id;
		if (!km_addr_is_unspecified(&v->addr4))
			d->addrs[d->row.backend.n_addresses++] = addr_bytes(&v->addr4, d->bytes[0]);
		if (!km_addr_is_unspecified(&v->addr6))
			d->addrs[d->row.backend.n_addresses++] = addr_bytes(&v->addr6, d->bytes[1]);
		d->row.backend.addresses = d->addrs;
		waypoint_out(&v->waypoint, d->bytes[2], &d->row.backend.waypoint_address,
			     &d->row.backend.waypoint_port, &d->row.backend.waypoint_data_port);
		d->row.backend.weight = v->weight;
		d->op.row_case = KMESH__IPC__TABLE_OP__ROW_BACKEND;
		d->op.backend = &d->row.backend;
		break;
	}
	}
}

/* The decision counters BPF keeps per policy stat id (km_authz_stats), one row each. */
static Kmesh__Ipc__Code dump_authz_stats(struct km_tables *t, uint32_t max_rows,
					 Kmesh__Ipc__DumpReply *reply, char *err, size_t errlen)
{
	struct km_authz_stats_key key, next;
	struct km_authz_stats_value v;
	const void *prev = NULL;
	size_t cap = 0;

	while (bpf_map_get_next_key(t->fd_authz_stats, prev, &next) == 0) {
		Kmesh__Ipc__AuthzStatRow *r;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(t->fd_authz_stats, &key, &v) != 0)
			continue; /* deleted meanwhile */
		if (reply->n_authz_stats == max_rows) {
			reply->truncated = 1;
			break;
		}
		if (km_grow((void **)&reply->authz_stats, &cap, reply->n_authz_stats + 1,
			    sizeof(*reply->authz_stats)) != 0 ||
		    !(r = malloc(sizeof(*r))))
			goto nomem;
		kmesh__ipc__authz_stat_row__init(r);
		r->stat_id = key.stat_id;
		r->allowed = v.allowed;
		r->denied = v.denied;
		reply->authz_stats[reply->n_authz_stats++] = r;
	}
	if (km_tables_dump_denials(t, reply) != KMESH__IPC__CODE__OK)
		goto nomem;
	return KMESH__IPC__CODE__OK;
nomem:
	km_tables_dump_free(reply);
	snprintf(err, errlen, "out of memory");
	return KMESH__IPC__CODE__INTERNAL;
}

/* ---- a table walked a page at a time ----------------------------------------------------------
 * The rows from `after` on, in the kernel's order, each handed to a visitor that keeps it (0),
 * refuses it (1: the page is full) or fails (-1: out of memory). The visitors fill rows with
 * fill_row / fill_manage: one collects structs (km_tables_dump_page), one packs the reply's
 * bytes as it goes (km_tables_dump_pack), so a page of 100,000 rows costs its bytes, not
 * 100,000 allocations of a few hundred bytes each.
 *
 * A page of a hash table of at least BUCKET_PAGE_MIN rows is read by buckets, BATCH_ROWS rows
 * a bpf() call (BPF_MAP_LOOKUP_BATCH: a 1M-row table in a fifth of the time of a lookup per
 * row), and ends at a bucket; the next page is named by the bucket it starts at ('B' and 4
 * bytes), so a row deleted between pages costs nothing. A smaller page, and any other kind of
 * table (the LPM trie of IPsec CIDRs), is read a key at a time: exactly max_rows rows (a bucket
 * may hold more than a tiny page), the next page named by the last row's key ('K' and the key).
 * A page's cursor says which way the next one is read. */
#define CURSOR_BUCKET 'B'
#define CURSOR_KEY 'K'
#define BUCKET_PAGE_MIN 64u
#define BATCH_ROWS 1024u
#define BATCH_ROWS_MAX 65536u /* a bucket larger than this is not a hash table any more */

struct visitor {
	int (*row)(void *arg, Kmesh__Ipc__Table table, const void *key, const void *value);
	/* where the rows kept so far end, and forget those kept since (a page of a hash table
	 * ends before the batch that did not fit; NULL: row never refuses one) */
	size_t (*mark)(void *arg);
	void (*undo_to)(void *arg, size_t mark);
};

struct walk {
	int truncated;
	uint8_t next[KM_TABLES_ROW_BUF]; /* when truncated: where the next page starts */
	size_t next_len;
};

static void fill_manage(struct km_tables *t, struct dump_manage *m, const void *key,
			const void *value)
{
	struct km_manage_value mv;

	memset(m, 0, sizeof(*m));
	kmesh__ipc__manage_row__init(&m->row);
	m->row.netns_cookie = ((const struct km_manage_key *)key)->netns_cookie;
	bpf_map_lookup_elem(t->fd_pod_netns, key, &m->where); /* absent: stays "" */
	m->where.path[sizeof(m->where.path) - 1] = '\0';
	m->row.netns_path = m->where.path;
	memcpy(&mv, value, sizeof(mv));
	m->row.host_ifindex = mv.host_ifindex;
}

static int cancelled(const int *cancel, char *err, size_t errlen)
{
	if (!cancel || !__atomic_load_n(cancel, __ATOMIC_RELAXED))
		return 0;
	snprintf(err, errlen, "the map writer is stopping");
	return 1;
}

/* A hash table, by buckets. A batch is whole buckets of at most `want` rows: when the page's
 * room (max_rows, or the visitor's bytes) ends inside one, the page ends before it; when the
 * first batch of a page does not fit, it is asked again with fewer rows; a first bucket larger
 * than a batch is taken whole (the page then holds more than max_rows: a bucket is never
 * split). */
static Kmesh__Ipc__Code walk_buckets(int fd, const struct bpf_map_info *info,
				     Kmesh__Ipc__Table table, uint32_t max_rows, __u32 in,
				     const int *cancel, const struct visitor *v, void *arg,
				     struct walk *w, char *err, size_t errlen)
{
	Kmesh__Ipc__Code code = KMESH__IPC__CODE__OK;
	uint32_t cap = BATCH_ROWS, n = 0, room = BATCH_ROWS; /* room: the rows a batch may ask */
	uint8_t *keys = NULL, *values = NULL;
	__u32 out = 0;
	int end = 0, squeezed = 0;

	while (n < max_rows && !end) {
		__u32 count = max_rows - n < room ? max_rows - n : room, i;
		size_t mark = v->mark ? v->mark(arg) : 0;
		int rc = 0;

		if (cancelled(cancel, err, errlen)) {
			code = KMESH__IPC__CODE__INTERNAL;
			break;
		}
		if (!keys && (!(keys = malloc((size_t)cap * info->key_size)) ||
			      !(values = malloc((size_t)cap * info->value_size))))
			goto nomem;
		{
			LIBBPF_OPTS(bpf_map_batch_opts, opts);

			rc = bpf_map_lookup_batch(fd, &in, &out, keys, values, &count, &opts);
		}
		if (rc == -ENOSPC && n) {
			break; /* the next bucket is larger than the page's room: it starts the next */
		} else if (rc == -ENOSPC) {
			/* the first bucket is larger than a batch */
			if (squeezed || cap >= BATCH_ROWS_MAX) {
				snprintf(err, errlen, "a bucket of the table does not fit a page");
				code = KMESH__IPC__CODE__INTERNAL;
				break;
			}
			room = cap *= 2;
			max_rows = max_rows > cap ? max_rows : cap;
			free(keys);
			free(values);
			keys = values = NULL;
			continue;
		} else if (rc && rc != -ENOENT) {
			snprintf(err, errlen, "reading the table: %s", strerror(-rc));
			code = KMESH__IPC__CODE__INTERNAL;
			break;
		}
		end = rc == -ENOENT; /* this batch holds the last buckets */
		for (i = 0; i < count; i++) {
			int r = v->row(arg, table, keys + (size_t)i * info->key_size,
				       values + (size_t)i * info->value_size);

			if (r < 0)
				goto nomem;
			if (r == 1)
				break;
		}
		if (i < count) { /* the page is full inside this batch */
			if (!v->undo_to || (!n && !i)) {
				snprintf(err, errlen, "a row of the table does not fit a page");
				code = KMESH__IPC__CODE__INTERNAL;
				break;
			}
			v->undo_to(arg, mark);
			end = 0;
			if (n)
				break; /* the page ends where this batch began */
			room = i; /* the page's first batch: ask again for what fit */
			squeezed = 1;
			continue;
		}
		n += count;
		in = out;
	}
	if (code == KMESH__IPC__CODE__OK && !end && n >= max_rows && keys) {
		/* full: is anything left? (one row asked: the end says so; a row or a larger
		 * bucket, that there is more) */
		__u32 count = 1;
		LIBBPF_OPTS(bpf_map_batch_opts, opts);

		end = bpf_map_lookup_batch(fd, &in, &out, keys, values, &count, &opts) == -ENOENT &&
		      count == 0;
	}
	if (code == KMESH__IPC__CODE__OK && !end) {
		w->truncated = 1; /* there is more: the next page starts at bucket `in` */
		w->next[0] = CURSOR_BUCKET;
		memcpy(w->next + 1, &in, sizeof(in));
		w->next_len = 1 + sizeof(in);
	}
	free(keys);
	free(values);
	return code;
nomem:
	free(keys);
	free(values);
	snprintf(err, errlen, "out of memory");
	return KMESH__IPC__CODE__INTERNAL;
}

/* Any other table, a key at a time. */
static Kmesh__Ipc__Code walk_keys(int fd, const struct bpf_map_info *info, Kmesh__Ipc__Table table,
				  uint32_t max_rows, const uint8_t *after, const int *cancel,
				  const struct visitor *v, void *arg, struct walk *w, char *err,
				  size_t errlen)
{
	uint8_t key[KM_TABLES_ROW_BUF], next[KM_TABLES_ROW_BUF], value[KM_TABLES_ROW_BUF];
	uint32_t n = 0;
	void *prev = NULL;

	if (info->key_size >= sizeof(key) || info->value_size > sizeof(value)) {
		snprintf(err, errlen, "the table's rows are larger than %zu bytes", sizeof(key));
		return KMESH__IPC__CODE__INTERNAL;
	}
	if (after) {
		memcpy(key, after, info->key_size);
		prev = key;
	}
	while (bpf_map_get_next_key(fd, prev, next) == 0) {
		int r;

		if (n % 1024 == 0 && cancelled(cancel, err, errlen))
			return KMESH__IPC__CODE__INTERNAL;
		memcpy(key, next, sizeof(key));
		prev = key;
		if (bpf_map_lookup_elem(fd, key, value) != 0)
			continue; /* deleted meanwhile */
		if (n == max_rows || (r = v->row(arg, table, key, value)) == 1) {
			w->truncated = 1; /* next holds the last row kept */
			w->next_len = n ? 1 + info->key_size : 0;
			break;
		}
		if (r < 0) {
			snprintf(err, errlen, "out of memory");
			return KMESH__IPC__CODE__INTERNAL;
		}
		w->next[0] = CURSOR_KEY;
		memcpy(w->next + 1, key, info->key_size);
		n++;
	}
	return KMESH__IPC__CODE__OK;
}

static Kmesh__Ipc__Code walk(struct km_tables *t, Kmesh__Ipc__Table table, uint32_t max_rows,
			     const uint8_t *after, size_t after_len, const int *cancel,
			     const struct visitor *v, void *arg, struct walk *w, char *err,
			     size_t errlen)
{
	struct bpf_map_info info;
	__u32 info_len = sizeof(info);
	int fd;

	memset(w, 0, sizeof(*w));
	err[0] = '\0';
	if (max_rows == 0 || max_rows > DUMP_DEFAULT_ROWS)
		max_rows = DUMP_DEFAULT_ROWS;
	switch (table) {
	case KMESH__IPC__TABLE__TABLE_MANAGE: fd = t->fd_manage; break;
	case KMESH__IPC__TABLE__TABLE_FRONTEND: fd = t->fd_frontend; break;
	case KMESH__IPC__TABLE__TABLE_SERVICE: fd = t->fd_service; break;
	case KMESH__IPC__TABLE__TABLE_ENDPOINT: fd = t->fd_endpoint; break;
	case KMESH__IPC__TABLE__TABLE_BACKEND: fd = t->fd_backend; break;
	case KMESH__IPC__TABLE__TABLE_PORT_OVERRIDE: fd = t->fd_port_override; break;
	case KMESH__IPC__TABLE__TABLE_IPSEC_PEER: fd = t->fd_ipsec_peer; break;
	case KMESH__IPC__TABLE__TABLE_IPSEC_CIDR: fd = t->fd_ipsec_cidr; break;
	case KMESH__IPC__TABLE__TABLE_AUTHZ_STATS:
		snprintf(err, errlen, "the authz_stats table is read whole, not in pages");
		return KMESH__IPC__CODE__BAD_REQUEST;
	default:
		snprintf(err, errlen, "unknown table %d", table);
		return KMESH__IPC__CODE__BAD_REQUEST;
	}
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &info_len) != 0) {
		snprintf(err, errlen, "cannot read the table's layout: %s", strerror(errno));
		return KMESH__IPC__CODE__INTERNAL;
	}
	/* the cursor a previous page gave, or none: a large page of a hash table goes by buckets */
	if (after_len == 1 + sizeof(__u32) && after[0] == CURSOR_BUCKET &&
	    info.type == BPF_MAP_TYPE_HASH) {
		__u32 bucket;

		memcpy(&bucket, after + 1, sizeof(bucket));
		return walk_buckets(fd, &info, table, max_rows, bucket, cancel, v, arg, w, err,
				    errlen);
	}
	if (after_len == 1 + (size_t)info.key_size && after[0] == CURSOR_KEY)
		return walk_keys(fd, &info, table, max_rows, after + 1, cancel, v, arg, w, err,
				 errlen);
	if (after_len) {
		snprintf(err, errlen, "'after' is not a page's 'next' of this table");
		return KMESH__IPC__CODE__BAD_REQUEST;
	}
	if (info.type == BPF_MAP_TYPE_HASH && max_rows >= BUCKET_PAGE_MIN)
		return walk_buckets(fd, &info, table, max_rows, 0, cancel, v, arg, w, err, errlen);
	return walk_keys(fd, &info, table, max_rows, NULL, cancel, v, arg, w, err, errlen);
}

/* Collecting: each row a struct of its own in the reply. */
struct collect {
	struct km_tables *t;
	Kmesh__Ipc__DumpReply *reply;
	size_t cap;
};

static int collect_row(void *arg, Kmesh__Ipc__Table table, const void *key, const void *value)
{
	struct collect *c = arg;
	Kmesh__Ipc__DumpReply *r = c->reply;
	int manage = table == KMESH__IPC__TABLE__TABLE_MANAGE;
	size_t n = manage ? r->n_manage : r->n_rows;

	if (n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 64;
		void *p = manage ? realloc(r->manage, ncap * sizeof(*r->manage))
				 : realloc(r->rows, ncap * sizeof(*r->rows));

		if (!p)
			return -1;
		if (manage)
			r->manage = p;
		else
			r->rows = p;
		c->cap = ncap;
	}
	if (manage) {
		struct dump_manage *m = malloc(sizeof(*m));

		if (!m)
			return -1;
		fill_manage(c->t, m, key, value);
		r->manage[r->n_manage++] = &m->row;
	} else {
		struct dump_row *d = calloc(1, sizeof(*d));

		if (!d)
			return -1;
		fill_row(d, table, key, value);
		r->rows[r->n_rows++] = &d->op;
	}
	return 0;
}

Kmesh__Ipc__Code km_tables_dump(struct km_tables *t, Kmesh__Ipc__Table table, uint32_t max_rows,
				Kmesh__Ipc__DumpReply *reply, char *err, size_t errlen)
{
	return km_tables_dump_page(t, table, max_rows, NULL, 0, NULL, reply, err, errlen);
}

Kmesh__Ipc__Code km_tables_dump_page(struct km_tables *t, Kmesh__Ipc__Table table,
				     uint32_t max_rows, const uint8_t *after, size_t after_len,
				     const int *cancel, Kmesh__Ipc__DumpReply *reply,
				     char *err, size_t errlen)
{
	static const struct visitor collector = { collect_row, NULL, NULL };
	struct collect c = { t, reply, 0 };
	struct walk w;
	Kmesh__Ipc__Code code;

	kmesh__ipc__dump_reply__init(reply);
	if (table == KMESH__IPC__TABLE__TABLE_AUTHZ_STATS && !after_len) {
		err[0] = '\0';
		if (max_rows == 0 || max_rows > DUMP_DEFAULT_ROWS)
			max_rows = DUMP_DEFAULT_ROWS;
		return dump_authz_stats(t, max_rows, reply, err, errlen);
	}
	code = walk(t, table, max_rows, after, after_len, cancel, &collector, &c, &w, err, errlen);
	if (code == KMESH__IPC__CODE__OK && w.truncated) {
		reply->truncated = 1;
		if (w.next_len && !(reply->next.data = malloc(w.next_len))) {
			snprintf(err, errlen, "out of memory");
			code = KMESH__IPC__CODE__INTERNAL;
		} else if (w.next_len) {
			memcpy(reply->next.data, w.next, w.next_len);
			reply->next.len = w.next_len;
		}
	}
	if (code != KMESH__IPC__CODE__OK)
		km_tables_dump_free(reply);
	return code;
}

/* Packing: each row appended to the DumpReply's bytes as it is read (field 1 rows, 2 manage),
 * the rest (truncated, next, stats) packed by protobuf-c after them: repeated fields and then
 * the others, as one message (protobuf concatenation merges). */
struct pack {
	struct km_tables *t;
	uint8_t *buf;
	size_t len, cap, max_len;
	size_t rows, rows_at_mark;
};

static int pack_reserve(struct pack *p, size_t more)
{
	size_t cap = p->cap ? p->cap : 65536;
	uint8_t *b;

	if (p->len + more <= p->cap)
		return 0;
	while (cap < p->len + more)
		cap *= 2;
	if (!(b = realloc(p->buf, cap)))
		return -1;
	p->buf = b;
	p->cap = cap;
	return 0;
}

static int pack_row(void *arg, Kmesh__Ipc__Table table, const void *key, const void *value)
{
	struct pack *p = arg;
	union {
		struct dump_row row;
		struct dump_manage manage;
	} u;
	const ProtobufCMessage *m;
	unsigned field;
	size_t size;

	if (table == KMESH__IPC__TABLE__TABLE_MANAGE) {
		fill_manage(p->t, &u.manage, key, value);
		m = &u.manage.row.base;
		field = 2;
	} else {
		memset(&u.row, 0, sizeof(u.row));
		fill_row(&u.row, table, key, value);
		m = &u.row.op.base;
		field = 1;
	}
	size = protobuf_c_message_get_packed_size(m);
	if (p->rows && p->len + 11 + size > p->max_len)
		return 1; /* the page is as large as the asker takes */
	if (pack_reserve(p, 11 + size) != 0)
		return -1;
	p->len += km_pbw_put_varint(p->buf + p->len, KM_PBW_TAG_LEN(field));
	p->len += km_pbw_put_varint(p->buf + p->len, size);
	p->len += protobuf_c_message_pack(m, p->buf + p->len);
	p->rows++;
	return 0;
}

static size_t pack_mark(void *arg)
{
	struct pack *p = arg;

	p->rows_at_mark = p->rows;
	return p->len;
}

static void pack_undo_to(void *arg, size_t mark)
{
	struct pack *p = arg;

	p->len = mark;
	p->rows = p->rows_at_mark;
}

Kmesh__Ipc__Code km_tables_dump_pack(struct km_tables *t, Kmesh__Ipc__Table table,
				     uint32_t max_rows, size_t max_bytes, const uint8_t *after,
				     size_t after_len, const int *cancel,
				     const Kmesh__Ipc__TableStats *stats, size_t headroom,
				     uint8_t **buf, size_t *len, size_t *rows, char *err,
				     size_t errlen)
{
	static const struct visitor packer = { pack_row, pack_mark, pack_undo_to };
	struct pack p = { .t = t, .len = headroom, .max_len = headroom + max_bytes };
	Kmesh__Ipc__DumpReply tail = KMESH__IPC__DUMP_REPLY__INIT;
	struct walk w;
	Kmesh__Ipc__Code code;

	*buf = NULL;
	*len = *rows = 0;
	if (pack_reserve(&p, headroom) != 0) {
		snprintf(err, errlen, "out of memory");
		return KMESH__IPC__CODE__INTERNAL;
	}
	/* the stats, truncated and next are at most a few hundred bytes: the rows leave them room */
	p.max_len = p.max_len > headroom + 1024 ? p.max_len - 1024 : headroom;
	code = walk(t, table, max_rows, after, after_len, cancel, &packer, &p, &w, err, errlen);
	if (code == KMESH__IPC__CODE__OK) {
		tail.stats = (Kmesh__Ipc__TableStats *)stats;
		tail.truncated = w.truncated;
		tail.next.data = w.next;
		tail.next.len = w.next_len;
		if (pack_reserve(&p, kmesh__ipc__dump_reply__get_packed_size(&tail)) != 0) {
			snprintf(err, errlen, "out of memory");
			code = KMESH__IPC__CODE__INTERNAL;
		} else {
			p.len += kmesh__ipc__dump_reply__pack(&tail, p.buf + p.len);
		}
	}
	if (code != KMESH__IPC__CODE__OK) {
		free(p.buf);
		return code;
	}
	*buf = p.buf;
	*len = p.len - headroom;
	*rows = p.rows;
	return KMESH__IPC__CODE__OK;
}

void km_tables_dump_free(Kmesh__Ipc__DumpReply *reply)
{
	/* op and row are the first members of dump_row and dump_manage: the pointers are the
	 * allocations */
	for (size_t i = 0; i < reply->n_rows; i++)
		free(reply->rows[i]);
	for (size_t i = 0; i < reply->n_manage; i++)
		free(reply->manage[i]);
	for (size_t i = 0; i < reply->n_authz_stats; i++)
		free(reply->authz_stats[i]);
	for (size_t i = 0; i < reply->n_authz_denials; i++)
		free(reply->authz_denials[i]);
	free(reply->rows);
	free(reply->manage);
	free(reply->authz_stats);
	free(reply->authz_denials);
	free(reply->next.data);
	kmesh__ipc__dump_reply__init(reply);
}
