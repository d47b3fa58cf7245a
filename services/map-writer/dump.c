/* dump.c — reading a table back as rows (admin dumps, and later the xDS agent's recovery), and
 * the authorization counters BPF keeps.
 * Part of the tables module (declared in tables.h); kept apart because it only reads. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

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

Kmesh__Ipc__Code km_tables_dump(struct km_tables *t, Kmesh__Ipc__Table table, uint32_t max_rows,
				Kmesh__Ipc__DumpReply *reply, char *err, size_t errlen)
{
	uint8_t key[KM_TABLES_ROW_BUF], next[KM_TABLES_ROW_BUF], value[KM_TABLES_ROW_BUF];
	int fd;
	void *prev = NULL;
	size_t cap = 0;

	kmesh__ipc__dump_reply__init(reply);
	err[0] = '\0';
	if (max_rows == 0 || max_rows > DUMP_DEFAULT_ROWS)
		max_rows = DUMP_DEFAULT_ROWS;
	switch (table) {
	case KMESH__IPC__TABLE__TABLE_AUTHZ_STATS:
		return dump_authz_stats(t, max_rows, reply, err, errlen);
	case KMESH__IPC__TABLE__TABLE_MANAGE: fd = t->fd_manage; break;
	case KMESH__IPC__TABLE__TABLE_FRONTEND: fd = t->fd_frontend; break;
	case KMESH__IPC__TABLE__TABLE_SERVICE: fd = t->fd_service; break;
	case KMESH__IPC__TABLE__TABLE_ENDPOINT: fd = t->fd_endpoint; break;
	case KMESH__IPC__TABLE__TABLE_BACKEND: fd = t->fd_backend; break;
	case KMESH__IPC__TABLE__TABLE_PORT_OVERRIDE: fd = t->fd_port_override; break;
	case KMESH__IPC__TABLE__TABLE_IPSEC_PEER: fd = t->fd_ipsec_peer; break;
	case KMESH__IPC__TABLE__TABLE_IPSEC_CIDR: fd = t->fd_ipsec_cidr; break;
	default:
		snprintf(err, errlen, "unknown table %d", table);
		return KMESH__IPC__CODE__BAD_REQUEST;
	}
	while (bpf_map_get_next_key(fd, prev, next) == 0) {
		size_t n = table == KMESH__IPC__TABLE__TABLE_MANAGE ? reply->n_manage : reply->n_rows;

		memcpy(key, next, sizeof(key));
		prev = key;
		if (bpf_map_lookup_elem(fd, key, value) != 0)
			continue; /* deleted meanwhile */
		if (n == max_rows) {
			reply->truncated = 1;
			break;
		}
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			void *p = table == KMESH__IPC__TABLE__TABLE_MANAGE
					  ? realloc(reply->manage, ncap * sizeof(*reply->manage))
					  : realloc(reply->rows, ncap * sizeof(*reply->rows));

			if (!p)
				goto nomem;
			if (table == KMESH__IPC__TABLE__TABLE_MANAGE)
				reply->manage = p;
			else
				reply->rows = p;
			cap = ncap;
		}
		if (table == KMESH__IPC__TABLE__TABLE_MANAGE) {
			struct dump_manage *m = calloc(1, sizeof(*m));
			struct km_manage_value mv;

			if (!m)
				goto nomem;
			kmesh__ipc__manage_row__init(&m->row);
			m->row.netns_cookie = ((struct km_manage_key *)key)->netns_cookie;
			bpf_map_lookup_elem(t->fd_pod_netns, key, &m->where); /* absent: stays "" */
			m->where.path[sizeof(m->where.path) - 1] = '\0';
			m->row.netns_path = m->where.path;
			memcpy(&mv, value, sizeof(mv));
			m->row.host_ifindex = mv.host_ifindex;
			reply->manage[reply->n_manage++] = &m->row;
		} else {
			struct dump_row *d = calloc(1, sizeof(*d));

			if (!d)
				goto nomem;
			fill_row(d, table, key, value);
			reply->rows[reply->n_rows++] = &d->op;
		}
	}
	return KMESH__IPC__CODE__OK;
nomem:
	km_tables_dump_free(reply);
	snprintf(err, errlen, "out of memory");
	return KMESH__IPC__CODE__INTERNAL;
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
	kmesh__ipc__dump_reply__init(reply);
}
