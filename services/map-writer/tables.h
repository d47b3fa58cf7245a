/* tables.h — validation and application of table operations to the BPF maps. Every row is
 * checked completely (ranges, address forms, and that what it references is already present)
 * before anything is written, so no half-valid row ever reaches a map. */
#ifndef KM_MW_TABLES_H
#define KM_MW_TABLES_H

#include <stddef.h>
#include <stdint.h>

#include "kmesh_ipc.pb-c.h"
#include "services/map-writer/dataplane.h"
#include "services/map-writer/fe_pick.h"
#include "services/map-writer/keyset.h"
#include "services/map-writer/slots.h"

/* Rows are read into stack buffers of this size; every layout must fit (checked at compile time
 * in tables.c, so a growing layout cannot make the kernel write past a buffer). */
#define KM_TABLES_ROW_BUF 160

struct km_row_run;    /* validated rows of one table and kind waiting for one bpf() call (tables_internal.h) */

struct km_tables {
	int fd_manage, fd_frontend, fd_service, fd_endpoint, fd_backend, fd_port_override;
	int fd_slot; /* km_slot, where BPF picks endpoints from (slots.h); -1: none */
	struct km_slots slots;
	struct km_fe_pick fe_pick; /* services' uniform picks in their frontend rows (fe_pick.h) */
	int loading; /* km_tables_load_present is reading the rows in the maps */
	int fd_pod_netns; /* where each enrolled pod's netns is mounted (beside km_manage) */
	int fd_hbone;     /* pods' addresses whose 15008 the tunnel serves (pod_sockets.h) */
	int fd_fe_filter; /* km_fe_filter: every frontend's address is added before its row; -1 none */
	uint64_t fe_filter_adds; /* since start: past the filter's size it errs more often */
	int fd_ipsec_peer, fd_ipsec_cidr; /* the IPsec agent's (ipsec_rows.c) */
	/* L4 authorization (authz_rows.c); stats is written by BPF and only read here */
	int fd_authz_ident, fd_authz_list, fd_authz_match, fd_authz_set, fd_authz_cidr, fd_authz_stats;
	int fd_authz_denials; /* km_authz_denials: read by dumps */
	int fd_authz_index; /* -1: none (tests that do not use it) */
	struct km_table_sizes sizes;
	/* counters, shown in dumps and logs */
	uint64_t ops_applied;
	uint64_t ops_failed;
	uint64_t denials_collected;  /* km_authz_denials rows of gone workloads removed */
	uint64_t denials_collect_s;  /* when that last ran (monotonic seconds) */
	uint64_t table_full;
	struct km_row_run *run;      /* set while a batch is applied */
	uint64_t batch_calls;        /* bpf() batch calls made (runs of upserts or deletes) */
	/* keys of the referenced tables' rows (this process is their only writer); an endpoint
	 * slot's key carries the backend it names, and backend_refs counts the slots naming each
	 * backend, so one still named is not deleted */
	struct km_keyset present_service, present_endpoint, present_backend;
	struct km_keyset backend_refs;
	int present_incomplete; /* a key could not be recorded: ask the kernel about absent ones */
	/* mark and sweep (sync.c): rows written since the xDS agent's Sync BEGIN */
	int sync_active;
	uint64_t sync_owner; /* the session (server serial) that began it: only it may end it */
	int sync_incomplete; /* a key could not be marked (memory): the sweep is skipped */
	struct km_keyset seen[11]; /* frontend, service, endpoint, backend, port override, and the
				    * authz ident, list, match, set, cidr and index tables */
	uint64_t rows_swept;
	uint64_t authz_changes; /* authz rows written or swept: open connections need a re-check */
	uint64_t migrated_entries; /* by the data plane at start (for dumps) */
};

/* Take the maps' fds and sizes and read the keys already present (adopted maps).
 * Returns 0, or -1 when out of memory. */
int km_tables_init(struct km_tables *t, const struct km_dataplane *dp);
/* Read the present keys of the referenced tables (t's fds set). Returns 0 or -1 (no memory). */
int km_tables_load_present(struct km_tables *t);
void km_tables_free(struct km_tables *t);
/* Delete one row by key (absent is fine) and forget it; a backend's live-connection count goes
 * with it (BPF makes a new one if the id comes back). Returns 0 or -errno. */
int km_tables_delete_key(struct km_tables *t, int fd, const void *key);

/* Mark and sweep for a (re)connected xDS agent (see Sync in kmesh_ipc.proto), sync.c. */
void km_tables_sync_begin(struct km_tables *t);
Kmesh__Ipc__Code km_tables_sync_end(struct km_tables *t, uint32_t *removed, char *err, size_t errlen);

/* Apply one op. Returns KMESH__IPC__CODE__OK or an error code with err filled. */
Kmesh__Ipc__Code km_tables_apply(struct km_tables *t, const Kmesh__Ipc__TableOp *op, char *err,
				 size_t errlen);
/* Apply ops in order; a refused op (or a row that cannot be written) does not stop the others.
 * *applied = number applied; on any refusal returns the first refused op's code, with err
 * naming it and how many were refused. */
Kmesh__Ipc__Code km_tables_apply_batch(struct km_tables *t, const Kmesh__Ipc__TableBatch *b,
				       uint32_t *applied, char *err, size_t errlen);

/* Enroll a pod; manage_flags: its km_manage row's KM_MANAGE_F_* (authz_lookup.h). */
Kmesh__Ipc__Code km_tables_enroll(struct km_tables *t, const Kmesh__Ipc__Enroll *e,
				  uint32_t manage_flags, char *err, size_t errlen);
/* The node-side interface a pod was enrolled with (0: none, or not enrolled). */
uint32_t km_tables_host_ifindex(struct km_tables *t, uint64_t netns_cookie);
/* OK when the netns cookie is in km_manage, NOT_FOUND when not. */
Kmesh__Ipc__Code km_tables_enrolled(struct km_tables *t, uint64_t netns_cookie, char *err,
				    size_t errlen);
/* *host_ifindex: the pod's node-side interface as enrolled (0: none or not enrolled). */
Kmesh__Ipc__Code km_tables_unenroll(struct km_tables *t, const Kmesh__Ipc__Unenroll *u,
				    uint32_t *host_ifindex, char *err, size_t errlen);
/* Every row of the IPsec tables removed (IPsec turned off). Returns how many. */
size_t km_tables_ipsec_clear(struct km_tables *t);

/* Fill reply with up to max_rows rows of one table (allocated; free with km_tables_dump_free). */
Kmesh__Ipc__Code km_tables_dump(struct km_tables *t, Kmesh__Ipc__Table table, uint32_t max_rows,
				Kmesh__Ipc__DumpReply *reply, char *err, size_t errlen);
/* The same, one page: after the key `after` (after_len 0: from the start); a truncated reply's
 * `next` is its last row's key. Safe on another thread while the loop writes the tables for
 * every table but TABLE_AUTHZ_STATS (the loop's denial rows; read on the loop): it reads the
 * maps and nothing of t but their descriptors. A non-NULL cancel seen set stops it (INTERNAL). */
Kmesh__Ipc__Code km_tables_dump_page(struct km_tables *t, Kmesh__Ipc__Table table,
				     uint32_t max_rows, const uint8_t *after, size_t after_len,
				     const int *cancel, Kmesh__Ipc__DumpReply *reply,
				     char *err, size_t errlen);
/* The same page as a packed DumpReply (stats included), at most max_bytes of rows (a page ends
 * early rather than outgrow the asker's frame): its bytes start headroom bytes into *buf (room
 * for the envelope around them; free *buf). *rows: how many. */
Kmesh__Ipc__Code km_tables_dump_pack(struct km_tables *t, Kmesh__Ipc__Table table,
				     uint32_t max_rows, size_t max_bytes, const uint8_t *after,
				     size_t after_len, const int *cancel,
				     const Kmesh__Ipc__TableStats *stats, size_t headroom,
				     uint8_t **buf, size_t *len, size_t *rows, char *err,
				     size_t errlen);
void km_tables_dump_free(Kmesh__Ipc__DumpReply *reply);
/* Add the km_authz_denials rows to reply (authz_denials.c; a TABLE_AUTHZ_STATS dump), first
 * removing, at most once a minute and only when the table is three-quarters full, the rows of
 * workloads gone. Returns OK, or INTERNAL (out of memory). */
Kmesh__Ipc__Code km_tables_dump_denials(struct km_tables *t, Kmesh__Ipc__DumpReply *reply);

#endif
