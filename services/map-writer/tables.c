/* tables.c — the tables module (see tables.h): its state at start (the keys already in the
 * maps), the dispatch of each op and batch to its row family (routing_rows.c, authz_rows.c,
 * ipsec_rows.c), and enrollment rows. How a validated row is written is row_write.c's. */
#include "services/map-writer/tables.h"
#include "services/map-writer/tables_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "kmesh_maps.h"
#include "shared/log.h"
#include "shared/addr.h"

#define OK KMESH__IPC__CODE__OK
#define BAD KMESH__IPC__CODE__BAD_REQUEST

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
FITS(struct km_authz_ident_key);
FITS(struct km_authz_ident_value);
FITS(struct km_authz_list_key);
FITS(struct km_authz_list_value);
FITS(struct km_authz_match_key);
FITS(struct km_authz_match_value);
FITS(struct km_authz_set_key);
FITS(struct km_authz_cidr_key);
FITS(struct km_authz_index_key);
FITS(struct km_authz_index_value);
#define KEYSET_FITS(t) _Static_assert(sizeof(t) <= KM_KEYSET_MAX_KEY, #t " outgrew KM_KEYSET_MAX_KEY")
KEYSET_FITS(struct km_service_key);
KEYSET_FITS(struct km_endpoint_key);
KEYSET_FITS(struct km_backend_key);
KEYSET_FITS(struct km_frontend_key);
KEYSET_FITS(struct km_port_override_key);
KEYSET_FITS(struct km_authz_ident_key);
KEYSET_FITS(struct km_authz_list_key);
KEYSET_FITS(struct km_authz_match_key);
KEYSET_FITS(struct km_authz_set_key);
KEYSET_FITS(struct km_authz_cidr_key);
KEYSET_FITS(struct km_authz_index_key);

/* km_pod_netns rows whose pod is not enrolled (left by an older map writer that unenrolled it
 * without knowing this table): removed at start, so they cannot fill it. */
static void prune_pod_netns(struct km_tables *t)
{
	struct km_manage_key cur, last;
	struct km_manage_value v;
	int have_last = 0;
	unsigned n = 0;

	while (bpf_map_get_next_key(t->fd_pod_netns, have_last ? &last : NULL, &cur) == 0) {
		if (bpf_map_lookup_elem(t->fd_manage, &cur, &v) != 0 &&
		    bpf_map_delete_elem(t->fd_pod_netns, &cur) == 0) {
			n++;
			continue; /* the walk goes on after the last row kept */
		}
		last = cur;
		have_last = 1;
	}
	if (n)
		km_info("km_pod_netns: forgot %u namespaces of pods no longer enrolled", n);
}

int km_tables_init(struct km_tables *t, const struct km_dataplane *dp)
{
	memset(t, 0, sizeof(*t));
	t->fd_manage = dp->fd_manage;
	t->fd_pod_netns = dp->fd_pod_netns;
	t->fd_hbone = dp->fd_hbone;
	t->fd_ipsec_peer = dp->fd_ipsec_peer;
	t->fd_ipsec_cidr = dp->fd_ipsec_cidr;
	t->fd_frontend = dp->fd_frontend;
	t->fd_fe_filter = dp->fd_fe_filter;
	t->fd_service = dp->fd_service;
	t->fd_endpoint = dp->fd_endpoint;
	t->fd_slot = dp->fd_slot;
	t->fd_backend = dp->fd_backend;
	t->fd_port_override = dp->fd_port_override;
	t->fd_authz_ident = dp->fd_authz_ident;
	t->fd_authz_list = dp->fd_authz_list;
	t->fd_authz_match = dp->fd_authz_match;
	t->fd_authz_set = dp->fd_authz_set;
	t->fd_authz_cidr = dp->fd_authz_cidr;
	t->fd_authz_stats = dp->fd_authz_stats;
	t->fd_authz_denials = dp->fd_authz_denials;
	t->fd_authz_index = dp->fd_authz_index;
	t->migrated_entries = dp->migrated_entries;
	t->sizes = dp->sizes;
	prune_pod_netns(t);
	return km_tables_load_present(t);
}

int km_tables_load_present(struct km_tables *t)
{
	const int fds[] = { t->fd_service, t->fd_endpoint, t->fd_backend };
	const size_t lens[] = { sizeof(struct km_service_key), sizeof(struct km_endpoint_key),
				sizeof(struct km_backend_key) };

	km_keyset_init(&t->present_service, lens[0]);
	km_keyset_init_values(&t->present_endpoint, lens[1], sizeof(uint32_t));
	km_keyset_init(&t->present_backend, lens[2]);
	km_keyset_init_values(&t->backend_refs, sizeof(uint32_t), sizeof(uint32_t));
	km_fe_pick_init(&t->fe_pick, t->fd_frontend, t->fd_service);
	t->present_incomplete = 0;
	/* the ranges the service rows name first: the endpoint rows below are placed in them */
	if (km_slots_open(&t->slots, t->fd_slot, t->fd_service) != 0)
		return -1;
	t->loading = 1;
	for (int i = 0; i < 3; i++) {
		uint8_t key[KM_KEYSET_MAX_KEY], next[KM_KEYSET_MAX_KEY];
		struct km_endpoint_value ev;
		const void *prev = NULL;

		if (fds[i] < 0)
			continue;
		while (bpf_map_get_next_key(fds[i], prev, next) == 0) {
			/* an endpoint's backend is read too: the references are counted */
			if (fds[i] == t->fd_endpoint && bpf_map_lookup_elem(fds[i], next, &ev) != 0)
				memset(&ev, 0, sizeof(ev));
			tbl_note_row(t, fds[i], next, fds[i] == t->fd_endpoint ? (const void *)&ev : next);
			if (t->present_incomplete) {
				t->loading = 0;
				return -1;
			}
			memcpy(key, next, lens[i]);
			prev = key;
		}
	}
	t->loading = 0;
	/* rows placed only now (migrated from a layout without slots): their services read them */
	if (t->slots.ranges_made) {
		unsigned n = km_slots_repoint_services(&t->slots);

		km_info("km_slot: %u service rows now read their endpoints' slots", n);
	}
	/* then the frontend rows, which copy their services' picks */
	if (t->fd_frontend >= 0) {
		unsigned n = km_fe_pick_recheck(&t->fe_pick);

		if (n)
			km_info("km_frontend: %u rows now carry their service's pick", n);
	}
	return 0;
}

void km_tables_free(struct km_tables *t)
{
	for (size_t i = 0; i < sizeof(t->seen) / sizeof(t->seen[0]); i++)
		km_keyset_free(&t->seen[i]);
	km_fe_pick_free(&t->fe_pick);
	km_keyset_free(&t->present_service);
	km_keyset_free(&t->present_endpoint);
	km_keyset_free(&t->present_backend);
	km_keyset_free(&t->backend_refs);
	km_slots_close(&t->slots);
}

static int op_table_fd(const struct km_tables *t, const Kmesh__Ipc__TableOp *op)
{
	switch (op->row_case) {
	case KMESH__IPC__TABLE_OP__ROW_FRONTEND: return t->fd_frontend;
	case KMESH__IPC__TABLE_OP__ROW_SERVICE: return t->fd_service;
	case KMESH__IPC__TABLE_OP__ROW_ENDPOINT: return t->fd_endpoint;
	case KMESH__IPC__TABLE_OP__ROW_BACKEND: return t->fd_backend;
	case KMESH__IPC__TABLE_OP__ROW_PORT_OVERRIDE: return t->fd_port_override;
	case KMESH__IPC__TABLE_OP__ROW_AUTHZ_IDENT: return t->fd_authz_ident;
	case KMESH__IPC__TABLE_OP__ROW_AUTHZ_LIST: return t->fd_authz_list;
	case KMESH__IPC__TABLE_OP__ROW_AUTHZ_MATCH: return t->fd_authz_match;
	case KMESH__IPC__TABLE_OP__ROW_AUTHZ_SET: return t->fd_authz_set;
	case KMESH__IPC__TABLE_OP__ROW_AUTHZ_CIDR: return t->fd_authz_cidr;
	case KMESH__IPC__TABLE_OP__ROW_AUTHZ_INDEX: return t->fd_authz_index;
	case KMESH__IPC__TABLE_OP__ROW_IPSEC_PEER: return t->fd_ipsec_peer;
	case KMESH__IPC__TABLE_OP__ROW_IPSEC_CIDR: return t->fd_ipsec_cidr;
	default: return -1;
	}
}

Kmesh__Ipc__Code km_tables_apply(struct km_tables *t, const Kmesh__Ipc__TableOp *op, char *err,
				 size_t errlen)
{
	Kmesh__Ipc__Code c;

	err[0] = '\0';
	/* rows queued for another table or of the other kind are written before this op is
	 * checked: it may refer to them, or write a row the queue deletes */
	if (t->run && t->run->n &&
	    (t->run->fd != op_table_fd(t, op) ||
	     t->run->del != (op->kind == KMESH__IPC__TABLE_OP__KIND__DELETE)))
		tbl_run_commit(t);
	if (op->kind != KMESH__IPC__TABLE_OP__KIND__UPSERT &&
	    op->kind != KMESH__IPC__TABLE_OP__KIND__DELETE)
		c = tbl_fail(BAD, err, errlen, "op kind %d is neither UPSERT nor DELETE", op->kind);
	else if (km_routing_row(op))
		c = km_routing_apply(t, op, err, errlen);
	else if (km_authz_row(op))
		c = km_authz_apply(t, op, err, errlen);
	else if (km_ipsec_row(op))
		c = km_ipsec_apply(t, op, err, errlen);
	else
		c = tbl_fail(BAD, err, errlen, "op carries no row");
	if (c == OK)
		t->ops_applied++;
	else
		t->ops_failed++;
	return c;
}

/* How many ops ahead a batch's apply loads the key-set slots an op will check (row_write.c's
 * NOTE_AHEAD does the same for the rows a commit notes). */
#define APPLY_AHEAD 8

Kmesh__Ipc__Code km_tables_apply_batch(struct km_tables *t, const Kmesh__Ipc__TableBatch *b,
				       uint32_t *applied, char *err, size_t errlen)
{
	struct km_row_run run = { .first_failed = SIZE_MAX };
	char why[384];

	*applied = 0;
	err[0] = '\0';
	run.keys = malloc(b->n_ops * KM_TABLES_ROW_BUF + 1);
	run.values = malloc(b->n_ops * KM_TABLES_ROW_BUF + 1);
	run.op_of = malloc(b->n_ops * sizeof(*run.op_of) + 1);
	/* without memory for the run, every row is written on its own */
	t->run = run.keys && run.values && run.op_of ? &run : NULL;
	for (size_t i = 0; i < b->n_ops; i++) {
		Kmesh__Ipc__Code c;

		if (i + APPLY_AHEAD < b->n_ops && b->ops[i + APPLY_AHEAD] &&
		    km_routing_row(b->ops[i + APPLY_AHEAD]))
			km_routing_prefetch(t, b->ops[i + APPLY_AHEAD]);
		run.op_index = i;
		c = km_tables_apply(t, b->ops[i], why, sizeof(why));
		if (c != OK)
			tbl_run_refused(&run, i, c, why);
	}
	if (t->run)
		tbl_run_commit(t);
	t->run = NULL;
	free(run.keys);
	free(run.values);
	free(run.op_of);
	*applied = (uint32_t)(b->n_ops - run.refused);
	if (!run.refused)
		return OK;
	snprintf(err, errlen, "%zu of %zu ops refused; the first, op %zu: %s", run.refused, b->n_ops,
		 run.first_failed, run.first_why);
	return run.first_code;
}

Kmesh__Ipc__Code km_tables_enroll(struct km_tables *t, const Kmesh__Ipc__Enroll *e,
				  uint32_t manage_flags, char *err, size_t errlen)
{
	struct km_manage_key k = { .netns_cookie = e->netns_cookie };
	struct km_manage_value v = { .flags = manage_flags, .host_ifindex = e->host_ifindex };
	struct km_pod_netns_value where = { 0 };
	Kmesh__Ipc__Code c;

	err[0] = '\0';
	if (e->netns_cookie == 0)
		return tbl_fail(BAD, err, errlen, "netns cookie 0 is not a network namespace");
	if (e->n_addresses > KM_MAX_ENROLL_ADDRESSES)
		return tbl_fail(BAD, err, errlen, "%zu pod addresses, at most %d", e->n_addresses,
			    KM_MAX_ENROLL_ADDRESSES);
	for (size_t i = 0; i < e->n_addresses; i++) {
		struct km_addr a;
		c = tbl_parse_addr(e->addresses[i], &a, "pod", err, errlen);
		if (c != OK)
			return c;
	}
	if (e->netns_path && *e->netns_path) {
		size_t n = strlen(e->netns_path);

		if (n >= sizeof(where.path) || e->netns_path[0] != '/')
			return tbl_fail(BAD, err, errlen, "netns path '%.40s%s' must be absolute and at "
					"most %zu bytes", e->netns_path, n > 40 ? "..." : "",
					sizeof(where.path) - 1);
		memcpy(where.path, e->netns_path, n);
		/* first where, then the enrollment: an enrolled pod's connections are never missed */
		if ((c = tbl_write_row(t, t->fd_pod_netns, "km_pod_netns", &k, sizeof(k), &where,
				       sizeof(where), err, errlen)) != OK)
			return c;
	} else if (bpf_map_delete_elem(t->fd_pod_netns, &k) != 0 && errno != ENOENT) {
		km_warn("km_pod_netns: cannot forget netns cookie %llu: %s",
			(unsigned long long)e->netns_cookie, strerror(errno));
	}
	c = tbl_write_row(t, t->fd_manage, "km_manage", &k, sizeof(k), &v, sizeof(v), err, errlen);
	if (c != OK)
		bpf_map_delete_elem(t->fd_pod_netns, &k); /* not enrolled: nothing to remember */
	return c;
}

uint32_t km_tables_host_ifindex(struct km_tables *t, uint64_t netns_cookie)
{
	struct km_manage_key k = { .netns_cookie = netns_cookie };
	struct km_manage_value v;

	return bpf_map_lookup_elem(t->fd_manage, &k, &v) == 0 ? v.host_ifindex : 0;
}

Kmesh__Ipc__Code km_tables_enrolled(struct km_tables *t, uint64_t netns_cookie, char *err,
				    size_t errlen)
{
	struct km_manage_key k = { .netns_cookie = netns_cookie };
	struct km_manage_value v;

	err[0] = '\0';
	if (bpf_map_lookup_elem(t->fd_manage, &k, &v) == 0)
		return OK;
	if (errno == ENOENT)
		return tbl_fail(KMESH__IPC__CODE__NOT_FOUND, err, errlen, "netns cookie %llu is not enrolled",
			    (unsigned long long)netns_cookie);
	return tbl_fail(KMESH__IPC__CODE__INTERNAL, err, errlen, "km_manage lookup: %s", strerror(errno));
}

Kmesh__Ipc__Code km_tables_unenroll(struct km_tables *t, const Kmesh__Ipc__Unenroll *u,
				    uint32_t *host_ifindex, char *err, size_t errlen)
{
	struct km_manage_key k = { .netns_cookie = u->netns_cookie };
	struct km_manage_value v;
	Kmesh__Ipc__Code c;

	err[0] = '\0';
	*host_ifindex = 0;
	if (u->netns_cookie == 0)
		return tbl_fail(BAD, err, errlen, "netns cookie 0 is not a network namespace");
	if (bpf_map_lookup_elem(t->fd_manage, &k, &v) == 0)
		*host_ifindex = v.host_ifindex;
	c = tbl_delete_row(t, t->fd_manage, "km_manage", &k, sizeof(k), err, errlen);
	if (c == OK)
		c = tbl_delete_row(t, t->fd_pod_netns, "km_pod_netns", &k, sizeof(k), err, errlen);
	return c;
}
