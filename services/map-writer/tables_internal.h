/* tables_internal.h — what the files of the tables module share (tables.c writes rows; the row
 * families kept in their own files, routing_rows.c, authz_rows.c and ipsec_rows.c, validate and
 * call these). */
#ifndef KM_MW_TABLES_INTERNAL_H
#define KM_MW_TABLES_INTERNAL_H

#include "services/map-writer/tables.h"

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
/* Whether a referenced row is in its table (rows queued in the current run are not). */
int tbl_present(struct km_tables *t, int fd, const void *key);
/* An address of 4 or 16 bytes from a row (what names the row in err). */
Kmesh__Ipc__Code tbl_parse_addr(ProtobufCBinaryData b, struct km_addr *out, const char *what,
				char *err, size_t errlen);

/* routing_rows.c */
int km_routing_row(const Kmesh__Ipc__TableOp *op);
Kmesh__Ipc__Code km_routing_apply(struct km_tables *t, const Kmesh__Ipc__TableOp *op, char *err,
				  size_t errlen);

/* authz_rows.c */
int km_authz_row(const Kmesh__Ipc__TableOp *op);
Kmesh__Ipc__Code km_authz_apply(struct km_tables *t, const Kmesh__Ipc__TableOp *op, char *err,
				size_t errlen);

/* ipsec_rows.c */
int km_ipsec_row(const Kmesh__Ipc__TableOp *op);
Kmesh__Ipc__Code km_ipsec_apply(struct km_tables *t, const Kmesh__Ipc__TableOp *op, char *err,
				size_t errlen);

#endif
