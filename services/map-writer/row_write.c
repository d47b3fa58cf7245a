/* row_write.c — writing validated rows, for the whole tables module: runs of rows written with
 * one batch call, what a written row changes in this process's own records (the keys of the
 * referenced tables, the slots naming each backend, services' endpoint ranges and frontend
 * picks) and the marks of an open sync. The lowest layer of the module: the row families,
 * sync.c and tables.c call it; it calls none of them. */
#include "services/map-writer/tables_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "kmesh_maps.h"

#define OK KMESH__IPC__CODE__OK
#define FULL KMESH__IPC__CODE__TABLE_FULL
#define INTERNAL KMESH__IPC__CODE__INTERNAL

Kmesh__Ipc__Code tbl_fail(Kmesh__Ipc__Code code, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}

int tbl_seen_index(const struct km_tables *t, int fd)
{
	return fd == t->fd_frontend ? TBL_SEEN_FRONTEND
	       : fd == t->fd_service ? TBL_SEEN_SERVICE
	       : fd == t->fd_endpoint ? TBL_SEEN_ENDPOINT
	       : fd == t->fd_backend ? TBL_SEEN_BACKEND
	       : fd == t->fd_port_override ? TBL_SEEN_PORT_OVERRIDE
	       : fd == t->fd_authz_ident ? TBL_SEEN_AUTHZ_IDENT
	       : fd == t->fd_authz_list ? TBL_SEEN_AUTHZ_LIST
	       : fd == t->fd_authz_match ? TBL_SEEN_AUTHZ_MATCH
	       : fd == t->fd_authz_set ? TBL_SEEN_AUTHZ_SET
	       : fd == t->fd_authz_cidr ? TBL_SEEN_AUTHZ_CIDR
	       : fd >= 0 && fd == t->fd_authz_index ? TBL_SEEN_AUTHZ_INDEX
					     : -1;
}

/* During a sync, every upserted key is marked, written or refused: a refused update keeps the
 * row's earlier version through the sweep rather than removing a row others may name. */
void tbl_mark_upsert(struct km_tables *t, int fd, const void *key)
{
	int i;

	if (!t->sync_active || (i = tbl_seen_index(t, fd)) < 0)
		return;
	if (km_keyset_add(&t->seen[i], key) != 0)
		t->sync_incomplete = 1; /* the sweep is skipped */
}

/* The key set of a table whose rows other rows reference, or NULL for the others. */
static struct km_keyset *present_set(struct km_tables *t, int fd)
{
	return fd == t->fd_service ? &t->present_service
	       : fd == t->fd_endpoint ? &t->present_endpoint
	       : fd == t->fd_backend ? &t->present_backend
				      : NULL;
}

/* One more (delta 1) or one fewer (-1) endpoint slot names this backend. (Values in a key set
 * are unaligned: copied, never dereferenced.) */
static void backend_ref(struct km_tables *t, uint32_t backend_id, int delta)
{
	uint8_t *v = km_keyset_value(&t->backend_refs, &backend_id);
	uint32_t n = 0;

	if (!v && delta > 0) {
		if (km_keyset_add(&t->backend_refs, &backend_id) != 0) {
			t->present_incomplete = 1;
			return;
		}
		v = km_keyset_value(&t->backend_refs, &backend_id);
	}
	if (!v)
		return;
	memcpy(&n, v, sizeof(n));
	n += (uint32_t)delta;
	if (n == 0)
		km_keyset_del(&t->backend_refs, &backend_id);
	else
		memcpy(v, &n, sizeof(n));
}

/* A row was written (value: the row's) or deleted (value NULL). */
void tbl_note_row(struct km_tables *t, int fd, const void *key, const void *value)
{
	struct km_keyset *s = present_set(t, fd);

	if (fd == t->fd_frontend) {
		struct km_frontend_value v;

		if (value)
			memcpy(&v, value, sizeof(v)); /* a run's values are packed */
		km_fe_pick_frontend(&t->fe_pick, key, value ? &v : NULL);
	}
	if (!s)
		return;
	if (fd == t->fd_endpoint) { /* the backend the slot named is named once less */
		const uint8_t *old = km_keyset_value(s, key);
		uint32_t id;

		km_slots_endpoint(&t->slots, key, value, old != NULL);
		if (old) {
			memcpy(&id, old, sizeof(id));
			backend_ref(t, id, -1);
		}
	} else if (fd == t->fd_service) {
		uint32_t id = ((const struct km_service_key *)key)->service_id;
		struct km_service_value v;

		if (!t->loading) {
			if (value)
				memcpy(&v, value, sizeof(v)); /* a run's values are packed */
			km_slots_service(&t->slots, id, value);
			/* after the slots: the frontend rows then name what the service row names */
			km_fe_pick_service(&t->fe_pick, id, value ? &v : NULL, 1);
		} /* at start, km_fe_pick_recheck reads the service rows once their ranges settle */
	}
	if (!value) {
		km_keyset_del(s, key);
		return;
	}
	if (km_keyset_add(s, key) != 0) {
		t->present_incomplete = 1; /* from now on an absent key is asked of the kernel */
		return;
	}
	if (fd == t->fd_endpoint) {
		uint32_t id = ((const struct km_endpoint_value *)value)->backend_id;

		memcpy(km_keyset_value(s, key), &id, sizeof(id));
		backend_ref(t, id, 1);
	}
}

/* A frontend row about to be written carries its service's pick (fe_pick.c). */
static void fill_frontend_row(struct km_tables *t, void *value)
{
	struct km_frontend_value v;

	memcpy(&v, value, sizeof(v));
	km_fe_pick_fill(&t->fe_pick, &v);
	memcpy(value, &v, sizeof(v));
}

/* A service row about to be written says where its endpoints' ranges are now (slots.c). */
static void fill_service_row(struct km_tables *t, const void *key, void *value)
{
	struct km_service_value v;

	memcpy(&v, value, sizeof(v)); /* a run's values are packed */
	km_slots_fill_service(&t->slots, ((const struct km_service_key *)key)->service_id, &v);
	memcpy(value, &v, sizeof(v));
}

/*
 * Runs (struct km_row_run, tables_internal.h): while a batch is applied, validated upserts of one table are queued and written with one
 * BPF_MAP_UPDATE_BATCH call, and validated deletes with one BPF_MAP_DELETE_BATCH, when an op of
 * another table or of the other kind comes (before it is checked) or the batch ends. No row
 * refers to a row of its own table, so every reference is checked against rows already in the
 * maps (their keys are in the present sets).
 */


/* Record a refusal of op i (the batch goes on: each op stands or falls on its own). */
void tbl_run_refused(struct km_row_run *r, size_t i, Kmesh__Ipc__Code code, const char *why)
{
	r->refused++;
	if (i < r->first_failed) {
		r->first_failed = i;
		r->first_code = code;
		snprintf(r->first_why, sizeof(r->first_why), "%s", why);
	}
}

/* Delete keys[0..n) from fd, absent keys included (deletes are idempotent). Returns how many
 * keys were dealt with: n, or fewer after an error other than ENOENT (errno set). */
static __u32 delete_keys(int fd, const uint8_t *keys, size_t key_len, __u32 n, int *no_batch_op)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 done = 0;

	while (done < n) {
		__u32 count = n - done;

		if (!*no_batch_op) {
			if (bpf_map_delete_batch(fd, keys + done * key_len, &count, &opts) == 0) {
				done += count;
				continue;
			}
			if ((errno == EINVAL || errno == ENOTSUP || errno == EOPNOTSUPP) && count == 0) {
				*no_batch_op = 1; /* older kernel or map type: one by one below */
				continue;
			}
			done += count; /* the keys before the one that failed are gone */
		} else if (bpf_map_delete_elem(fd, keys + done * key_len) == 0) {
			done++;
			continue;
		}
		if (errno != ENOENT)
			return done;
		done++; /* absent already */
	}
	return done;
}

/* Why a row could not be written. */
static Kmesh__Ipc__Code write_failure(struct km_tables *t, const char *table, int del, int e,
				      char *err, size_t errlen)
{
	if (!del && (e == E2BIG || e == ENOMEM)) {
		t->table_full++;
		return tbl_fail(FULL, err, errlen, "%s is full (%s); raise its size flag", table,
			    strerror(e));
	}
	return tbl_fail(INTERNAL, err, errlen, "%s %s: %s", del ? "deleting from" : "writing", table,
		    strerror(e));
}

/* The rows a commit notes are keys in sets of up to millions, each lookup a likely cache miss
 * (the map writer's largest cost after the kernel's own insert): the sets' slots of the row
 * NOTE_AHEAD rows on are loaded while this one is noted. */
#define NOTE_AHEAD 8

static void note_prefetch(struct km_tables *t, const struct km_row_run *r, size_t i)
{
	const void *key = r->keys + i * r->key_len;
	struct km_keyset *s = present_set(t, r->fd);

	if (s)
		km_keyset_prefetch(s, key);
	if (r->fd == t->fd_endpoint && !r->del) {
		struct km_endpoint_value v;

		memcpy(&v, r->values + i * r->value_len, sizeof(v)); /* a run's values are packed */
		km_keyset_prefetch(&t->backend_refs, &v.backend_id);
	}
}

/* Write the queued rows. A row that cannot be written (a full table refuses new keys, still
 * updates present ones) is refused on its own; the rest are written. */
void tbl_run_commit(struct km_tables *t)
{
	struct km_row_run *r = t->run;
	__u32 done = 0;

	if (!r->n)
		return;
	if (!r->del && r->fd == t->fd_service)
		for (size_t i = 0; i < r->n; i++)
			fill_service_row(t, r->keys + i * r->key_len, r->values + i * r->value_len);
	if (!r->del && r->fd == t->fd_frontend)
		for (size_t i = 0; i < r->n; i++)
			fill_frontend_row(t, r->values + i * r->value_len);
	while (done < r->n) {
		__u32 count = (__u32)r->n - done;
		int rc, e;

		if (r->del) {
			count = delete_keys(r->fd, r->keys + done * r->key_len, r->key_len, count,
					    &r->no_batch_op);
			rc = done + count == r->n ? 0 : -1;
		} else if (!r->no_batch_op) {
			LIBBPF_OPTS(bpf_map_batch_opts, opts, .elem_flags = BPF_ANY);

			rc = bpf_map_update_batch(r->fd, r->keys + done * r->key_len,
						  r->values + done * r->value_len, &count, &opts);
			if (rc != 0 && (errno == EINVAL || errno == ENOTSUP || errno == EOPNOTSUPP) &&
			    count == 0) {
				r->no_batch_op = 1; /* older kernel or map type: one by one */
				continue;
			}
		} else {
			rc = bpf_map_update_elem(r->fd, r->keys + done * r->key_len,
						 r->values + done * r->value_len, BPF_ANY);
			count = rc == 0;
		}
		t->batch_calls++;
		e = errno; /* recording the keys may allocate */
		for (__u32 i = done; i < done + count; i++) {
			if (i + NOTE_AHEAD < done + count)
				note_prefetch(t, r, i + NOTE_AHEAD);
			tbl_note_row(t, r->fd, r->keys + i * r->key_len,
				 r->del ? NULL : r->values + i * r->value_len);
		}
		done += count;
		if (rc != 0) { /* row `done` failed: refuse it, go on after it */
			char why[256];
			Kmesh__Ipc__Code c = write_failure(t, r->table, r->del, e, why, sizeof(why));

			tbl_run_refused(r, r->op_of[done], c, why);
			t->ops_applied--; /* counted when it was queued */
			t->ops_failed++;
			done++;
		}
	}
	r->n = 0;
}

/* Queue a validated upsert, or a delete (value NULL). The run is of this table and kind:
 * km_tables_apply writes a run of another table or kind before it checks an op. */
static void run_add(struct km_tables *t, int fd, const char *table, const void *key,
		    size_t key_len, const void *value, size_t value_len)
{
	struct km_row_run *r = t->run;

	if (!r->n) {
		r->fd = fd;
		r->del = value == NULL;
		r->table = table;
		r->key_len = key_len;
		r->value_len = value_len;
	}
	r->op_of[r->n] = (uint32_t)r->op_index;
	memcpy(r->keys + r->n * key_len, key, key_len); /* packed, as the batch call reads them */
	if (value)
		memcpy(r->values + r->n * value_len, value, value_len);
	r->n++;
}

/* Whether a referenced row is in its table: rows queued in the current run are not (a run is
 * written before any other table's row is checked, and no row references its own table). */
int tbl_present(struct km_tables *t, int fd, const void *key)
{
	uint8_t value[KM_TABLES_ROW_BUF];

	if (km_keyset_has(present_set(t, fd), key))
		return 1;
	return t->present_incomplete && bpf_map_lookup_elem(fd, key, value) == 0;
}

void tbl_present_prefetch(struct km_tables *t, int fd, const void *key)
{
	const struct km_keyset *s = present_set(t, fd);

	if (s)
		km_keyset_prefetch(s, key);
}

Kmesh__Ipc__Code tbl_write_row(struct km_tables *t, int fd, const char *table, const void *key,
				  size_t key_len, const void *value, size_t value_len, char *err,
				  size_t errlen)
{
	uint8_t row[KM_TABLES_ROW_BUF];

	if (t->run) {
		run_add(t, fd, table, key, key_len, value, value_len);
		return OK;
	}
	if (fd == t->fd_service && value_len <= sizeof(row)) {
		memcpy(row, value, value_len);
		fill_service_row(t, key, row);
		value = row;
	} else if (fd == t->fd_frontend && value_len <= sizeof(row)) {
		memcpy(row, value, value_len);
		fill_frontend_row(t, row);
		value = row;
	}
	if (bpf_map_update_elem(fd, key, value, BPF_ANY) == 0) {
		tbl_note_row(t, fd, key, value);
		return OK;
	}
	return write_failure(t, table, 0, errno, err, errlen);
}

int km_tables_delete_key(struct km_tables *t, int fd, const void *key)
{
	if (bpf_map_delete_elem(fd, key) != 0 && errno != ENOENT)
		return -errno;
	tbl_note_row(t, fd, key, NULL);
	return 0;
}

Kmesh__Ipc__Code tbl_delete_row(struct km_tables *t, int fd, const char *table, const void *key,
				   size_t key_len, char *err, size_t errlen)
{
	int rc;

	if (t->run) {
		run_add(t, fd, table, key, key_len, NULL, 0);
		return OK;
	}
	/* Deleting an absent row is not an error: deletes are idempotent. */
	if ((rc = km_tables_delete_key(t, fd, key)) == 0)
		return OK;
	return tbl_fail(INTERNAL, err, errlen, "deleting from %s: %s", table, strerror(-rc));
}

