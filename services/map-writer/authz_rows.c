/* authz_rows.c — validation and application of the L4 authorization rows (km_authz_* tables,
 * kmesh_maps.h). Part of the tables module: rows are written through tables.c, so they batch,
 * count and take part in the sync sweep like the routing rows. These rows reference each other
 * only by id; BPF reads a missing row as "does not match", and the xDS agent writes them in an
 * order where that never widens what is allowed (sets and matches before the lists naming them). */
#include <string.h>

#include "kmesh_maps.h"
#include "services/map-writer/tables_internal.h"
#include "shared/addr.h"

#define OK KMESH__IPC__CODE__OK
#define BAD KMESH__IPC__CODE__BAD_REQUEST

int km_authz_row(const Kmesh__Ipc__TableOp *op)
{
	switch (op->row_case) {
	case KMESH__IPC__TABLE_OP__ROW_AUTHZ_IDENT:
	case KMESH__IPC__TABLE_OP__ROW_AUTHZ_LIST:
	case KMESH__IPC__TABLE_OP__ROW_AUTHZ_MATCH:
	case KMESH__IPC__TABLE_OP__ROW_AUTHZ_SET:
	case KMESH__IPC__TABLE_OP__ROW_AUTHZ_CIDR:
	case KMESH__IPC__TABLE_OP__ROW_AUTHZ_INDEX:
		return 1;
	default:
		return 0;
	}
}

/* Write or delete a validated row. */
static Kmesh__Ipc__Code put(struct km_tables *t, const Kmesh__Ipc__TableOp *op, int fd,
			    const char *table, const void *k, size_t klen, const void *v, size_t vlen,
			    char *err, size_t errlen)
{
	t->authz_changes++;
	if (op->kind == KMESH__IPC__TABLE_OP__KIND__DELETE)
		return tbl_delete_row(t, fd, table, k, klen, err, errlen);
	tbl_mark_upsert(t, fd, k);
	return tbl_write_row(t, fd, table, k, klen, v, vlen, err, errlen);
}

static Kmesh__Ipc__Code ident(struct km_tables *t, const Kmesh__Ipc__TableOp *op, char *err,
			      size_t errlen)
{
	const Kmesh__Ipc__AuthzIdentRow *r = op->authz_ident;
	struct km_authz_ident_key k;
	struct km_authz_ident_value v = { .workload_id = r->workload_id, .ns_id = r->namespace_id,
					  .sa_id = r->service_account_id,
					  .principal_id = r->principal_id };

	memset(&k, 0, sizeof(k));
	if (km_addr_from_bytes(r->address.data, r->address.len, &k.addr) != 0 ||
	    km_addr_is_unspecified(&k.addr))
		return tbl_fail(BAD, err, errlen, "authz ident: address must be 4 or 16 bytes, not 0");
	if (op->kind != KMESH__IPC__TABLE_OP__KIND__DELETE && !r->workload_id)
		return tbl_fail(BAD, err, errlen, "authz ident: workload id 0 is reserved");
	return put(t, op, t->fd_authz_ident, "km_authz_ident", &k, sizeof(k), &v, sizeof(v), err,
		   errlen);
}

static Kmesh__Ipc__Code list(struct km_tables *t, const Kmesh__Ipc__TableOp *op, char *err,
			     size_t errlen)
{
	const Kmesh__Ipc__AuthzListRow *r = op->authz_list;
	struct km_authz_list_key k = { .kind = r->kind, .owner = r->owner, .index = r->index };
	struct km_authz_list_value v;

	memset(&v, 0, sizeof(v));
	if (r->kind < KM_AUTHZ_OWNER_GLOBAL || r->kind > KM_AUTHZ_OWNER_WORKLOAD ||
	    (r->kind == KM_AUTHZ_OWNER_GLOBAL) != (r->owner == 0))
		return tbl_fail(BAD, err, errlen, "authz list: kind %u with owner %u", r->kind, r->owner);
	if (r->index != KM_AUTHZ_HEAD && (r->index & ~KM_AUTHZ_GEN_BIT) >= KM_AUTHZ_LIST_MAX)
		return tbl_fail(BAD, err, errlen, "authz list: position %u beyond %u",
				r->index & ~KM_AUTHZ_GEN_BIT, KM_AUTHZ_LIST_MAX);
	if (op->kind == KMESH__IPC__TABLE_OP__KIND__DELETE) {
		/* key only */
	} else if (r->index == KM_AUTHZ_HEAD) {
		if (r->gen > 1 || (uint64_t)r->n_deny + r->n_allow + r->n_dry_run > KM_AUTHZ_LIST_MAX)
			return tbl_fail(BAD, err, errlen, "authz list head: generation %u, %u+%u+%u entries",
					r->gen, r->n_deny, r->n_allow, r->n_dry_run);
		v.n_deny = r->n_deny;
		v.n_allow = r->n_allow;
		v.n_dry_run = r->n_dry_run;
		v.gen = r->gen;
	} else {
		if (!r->policy_id || r->flags & ~(uint32_t)(KM_AUTHZ_P_DENY | KM_AUTHZ_P_DRY_RUN) ||
		    r->n_matches > KM_AUTHZ_MATCHES_MAX)
			return tbl_fail(BAD, err, errlen,
					"authz list entry: policy %u, flags 0x%x, %u matches", r->policy_id,
					r->flags, r->n_matches);
		v.policy_id = r->policy_id;
		v.stat_id = r->stat_id;
		v.flags = r->flags;
		v.n_matches = r->n_matches;
	}
	return put(t, op, t->fd_authz_list, "km_authz_list", &k, sizeof(k), &v, sizeof(v), err,
		   errlen);
}

static Kmesh__Ipc__Code match(struct km_tables *t, const Kmesh__Ipc__TableOp *op, char *err,
			      size_t errlen)
{
	const Kmesh__Ipc__AuthzMatchRow *r = op->authz_match;
	struct km_authz_match_key k = { .policy_id = r->policy_id, .index = r->index };
	struct km_authz_match_value v;

	memset(&v, 0, sizeof(v));
	if (!r->policy_id || r->index >= KM_AUTHZ_MATCHES_MAX)
		return tbl_fail(BAD, err, errlen, "authz match: policy %u, row %u", r->policy_id,
				r->index);
	if (op->kind != KMESH__IPC__TABLE_OP__KIND__DELETE) {
		if (r->n_sets != KM_AF_COUNT ||
		    r->flags & ~(uint32_t)(KM_AUTHZ_M_END_CLAUSE | KM_AUTHZ_M_END_RULE) ||
		    ((r->flags & KM_AUTHZ_M_END_RULE) && !(r->flags & KM_AUTHZ_M_END_CLAUSE)))
			return tbl_fail(BAD, err, errlen,
					"authz match: %zu sets (need %d), flags 0x%x", r->n_sets,
					KM_AF_COUNT, r->flags);
		v.flags = r->flags;
		memcpy(v.set, r->sets, sizeof(v.set));
	}
	return put(t, op, t->fd_authz_match, "km_authz_match", &k, sizeof(k), &v, sizeof(v), err,
		   errlen);
}

static Kmesh__Ipc__Code set(struct km_tables *t, const Kmesh__Ipc__TableOp *op, char *err,
			    size_t errlen)
{
	const Kmesh__Ipc__AuthzSetRow *r = op->authz_set;
	struct km_authz_set_key k = { .set_id = r->set_id, .value = r->value };
	struct km_authz_set_value v = { 0 };

	if (!r->set_id)
		return tbl_fail(BAD, err, errlen, "authz set: set id 0 is reserved");
	return put(t, op, t->fd_authz_set, "km_authz_set", &k, sizeof(k), &v, sizeof(v), err, errlen);
}

static Kmesh__Ipc__Code cidr(struct km_tables *t, const Kmesh__Ipc__TableOp *op, char *err,
			     size_t errlen)
{
	const Kmesh__Ipc__AuthzCidrRow *r = op->authz_cidr;
	struct km_authz_cidr_key k;
	struct km_authz_cidr_value v = { 0 };
	size_t len = r->address.len;

	memset(&k, 0, sizeof(k));
	if (!r->set_id || (len != 4 && len != 16) || r->length > len * 8)
		return tbl_fail(BAD, err, errlen, "authz cidr: set %u, %zu address bytes, /%u",
				r->set_id, len, r->length);
	k.set_id = r->set_id;
	k.family = len == 4 ? 4 : 6;
	k.prefixlen = 64 + r->length;
	/* the bits past the prefix are cleared: the trie keys a CIDR by its prefix only */
	for (uint32_t i = 0; i < len; i++) {
		uint32_t keep = r->length > i * 8 ? r->length - i * 8 : 0;

		k.addr[i] = keep >= 8 ? r->address.data[i]
				      : (uint8_t)(r->address.data[i] & (0xff00u >> keep));
	}
	return put(t, op, t->fd_authz_cidr, "km_authz_cidr", &k, sizeof(k), &v, sizeof(v), err,
		   errlen);
}

/* A candidate index row: its list's key, a field (or its default), a chunk within the list's
 * positions (or the summary), and bits only where that chunk or summary has them. */
static Kmesh__Ipc__Code index_row(struct km_tables *t, const Kmesh__Ipc__TableOp *op, char *err,
				  size_t errlen)
{
	const Kmesh__Ipc__AuthzIndexRow *r = op->authz_index;
	struct km_authz_index_key k;
	struct km_authz_index_value v;
	uint32_t field = r->field & ~(uint32_t)KM_AZX_F_DEFAULT;
	int dflt = (r->field & KM_AZX_F_DEFAULT) != 0;
	size_t words = r->chunk == KM_AZX_SUMMARY ? 2 : KM_AZX_CHUNK_BITS / 64;

	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	if (t->fd_authz_index < 0)
		return tbl_fail(BAD, err, errlen, "authz index: this map writer has no km_authz_index");
	if (r->kind < KM_AUTHZ_OWNER_GLOBAL || r->kind > KM_AUTHZ_OWNER_WORKLOAD ||
	    (r->kind == KM_AUTHZ_OWNER_GLOBAL) != (r->owner == 0) || r->gen > 1 ||
	    r->field > 0xff || field >= KM_AZX_FIELDS || (dflt && r->value) ||
	    (r->chunk >= KM_AZX_CHUNKS && r->chunk != KM_AZX_SUMMARY))
		return tbl_fail(BAD, err, errlen,
				"authz index: list %u/%u generation %u, field 0x%x value %u, chunk %u",
				r->kind, r->owner, r->gen, r->field, r->value, r->chunk);
	if (op->kind != KMESH__IPC__TABLE_OP__KIND__DELETE && r->n_bits > words)
		return tbl_fail(BAD, err, errlen, "authz index: %zu words where at most %zu fit",
				r->n_bits, words);
	k.kind = r->kind;
	k.owner = r->owner;
	k.gen = (__u8)r->gen;
	k.field = (__u8)r->field;
	k.chunk = (__u8)r->chunk;
	k.value = r->value;
	if (op->kind != KMESH__IPC__TABLE_OP__KIND__DELETE && r->n_bits)
		memcpy(v.bits, r->bits, r->n_bits * sizeof(uint64_t));
	return put(t, op, t->fd_authz_index, "km_authz_index", &k, sizeof(k), &v, sizeof(v), err,
		   errlen);
}

Kmesh__Ipc__Code km_authz_apply(struct km_tables *t, const Kmesh__Ipc__TableOp *op, char *err,
				size_t errlen)
{
	switch (op->row_case) {
	case KMESH__IPC__TABLE_OP__ROW_AUTHZ_IDENT: return ident(t, op, err, errlen);
	case KMESH__IPC__TABLE_OP__ROW_AUTHZ_LIST: return list(t, op, err, errlen);
	case KMESH__IPC__TABLE_OP__ROW_AUTHZ_MATCH: return match(t, op, err, errlen);
	case KMESH__IPC__TABLE_OP__ROW_AUTHZ_SET: return set(t, op, err, errlen);
	case KMESH__IPC__TABLE_OP__ROW_AUTHZ_INDEX: return index_row(t, op, err, errlen);
	default: return cidr(t, op, err, errlen);
	}
}
