/* tables_internal.h — what the files of the tables module share. Calls run one way: tables.c
 * dispatches to the row families (routing_rows.c, authz_rows.c, ipsec_rows.c) and sync.c, which
 * validate and call row_write.c, which writes rows and calls none of them. */
#ifndef KM_MW_TABLES_INTERNAL_H
#define KM_MW_TABLES_INTERNAL_H

#include "services/map-writer/tables.h"

/* The sets of keys a sync marks (km_tables.seen), by table. */
enum {
	TBL_SEEN_FRONTEND,
	TBL_SEEN_SERVICE,
	TBL_SEEN_ENDPOINT,
	TBL_SEEN_BACKEND,
	TBL_SEEN_PORT_OVERRIDE,
	TBL_SEEN_AUTHZ_IDENT,
	TBL_SEEN_AUTHZ_LIST,
	TBL_SEEN_AUTHZ_MATCH,
	TBL_SEEN_AUTHZ_SET,
	TBL_SEEN_AUTHZ_CIDR,
	TBL_SEEN_AUTHZ_INDEX,
	TBL_SEEN_COUNT
};

struct km_row_run {
	int fd;
	int del;           /* a run of deletes (values unused) */
	const char *table;
	size_t key_len, value_len;
	size_t n, cap;
	size_t op_index;   /* batch index of the op being applied */
	uint32_t *op_of;   /* batch index of each queued row */
	uint8_t *keys, *values;
	int no_batch_op;   /* the kernel has no batch update: write rows one by one */
	/* the batch's refusals so far, ops and rows alike */
	size_t refused;
	size_t first_failed; /* lowest batch index refused (SIZE_MAX: none) */
	Kmesh__Ipc__Code first_code;
	char first_why[384];
};

/* ---- row_write.c ---- */
/* Fill err and return code. */
Kmesh__Ipc__Code tbl_fail(Kmesh__Ipc__Code code, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Queue (inside a batch) or write one validated row. */
Kmesh__Ipc__Code tbl_write_row(struct km_tables *t, int fd, const char *table, const void *key,
			       size_t key_len, const void *value, size_t value_len, char *err,
			       size_t errlen);
/* Queue or delete one row by key; deleting an absent row is not an error. */
Kmesh__Ipc__Code tbl_delete_row(struct km_tables *t, int fd, const char *table, const void *key,
				size_t key_len, char *err, size_t errlen);
/* Mark an upserted key for the sync sweep (while a sync is open). */
void tbl_mark_upsert(struct km_tables *t, int fd, const void *key);
/* The table's set of marks in t->seen, or -1 for a table a sync does not sweep. */
int tbl_seen_index(const struct km_tables *t, int fd);
/* A row was written (value: the row's) or deleted (value NULL): this process's records follow. */
void tbl_note_row(struct km_tables *t, int fd, const void *key, const void *value);
/* Write the run's queued rows (each refused on its own if the kernel refuses it). */
void tbl_run_commit(struct km_tables *t);
/* Record a refusal of op i of the batch (the batch goes on). */
void tbl_run_refused(struct km_row_run *r, size_t i, Kmesh__Ipc__Code code, const char *why);
/* Whether a referenced row is in its table (rows queued in the current run are not). */
int tbl_present(struct km_tables *t, int fd, const void *key);
/* Start loading what tbl_present will read for key (a batch's later op; see keyset_prefetch). */
void tbl_present_prefetch(struct km_tables *t, int fd, const void *key);
/* ---- routing_rows.c ---- */
/* An address of 4 or 16 bytes from a row (what names the row in err). */
Kmesh__Ipc__Code tbl_parse_addr(ProtobufCBinaryData b, struct km_addr *out, const char *what,
				char *err, size_t errlen);

/* routing_rows.c */
int km_routing_row(const Kmesh__Ipc__TableOp *op);
Kmesh__Ipc__Code km_routing_apply(struct km_tables *t, const Kmesh__Ipc__TableOp *op, char *err,
				  size_t errlen);
/* Start loading the present-row keys op's apply will check (called a few ops ahead). */
void km_routing_prefetch(struct km_tables *t, const Kmesh__Ipc__TableOp *op);

/* authz_rows.c */
int km_authz_row(const Kmesh__Ipc__TableOp *op);
Kmesh__Ipc__Code km_authz_apply(struct km_tables *t, const Kmesh__Ipc__TableOp *op, char *err,
				size_t errlen);

/* ipsec_rows.c */
int km_ipsec_row(const Kmesh__Ipc__TableOp *op);
Kmesh__Ipc__Code km_ipsec_apply(struct km_tables *t, const Kmesh__Ipc__TableOp *op, char *err,
				size_t errlen);

#endif
