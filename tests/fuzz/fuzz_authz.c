/* fuzz_authz.c — libFuzzer target for the authorization compiler. Input: a 2-byte little-endian
 * length L, then L bytes of an Address DeltaDiscoveryResponse (applied twice: workloads bring
 * identities, then updates), then an Authorization one; the compiler attached as in the agent;
 * then a replay, then every policy and workload removed. Checks what must hold whatever istiod sent:
 *   - once everything is gone, the compiler holds no policy, identity or interned string, and
 *   - the ops it emitted, applied in order to a set of keys, leave no authz row behind (a row
 *     left in the kernel tables would be a leak the sync sweep only clears at reconnect). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "services/xds-agent/authz/authz_compile.h"
#include "services/xds-agent/ads/xds_apply.h"
#include "shared/log.h"

/* A row of the authz tables by its key: table and key fields packed. */
struct row {
	uint8_t key[32];
	UT_hash_handle hh;
};

static size_t op_key(const struct km_op *op, uint8_t key[32])
{
	memset(key, 0, 32);
	key[0] = op->table;
	switch (op->table) {
	case KM_OP_AUTHZ_IDENT:
		memcpy(key + 4, &op->ident.addr, 16);
		break;
	case KM_OP_AUTHZ_SET:
		memcpy(key + 4, &op->set.set_id, 4);
		memcpy(key + 8, &op->set.value, 4);
		break;
	case KM_OP_AUTHZ_CIDR:
		memcpy(key + 4, &op->cidr.set_id, 4);
		memcpy(key + 8, op->cidr.addr, 16);
		key[24] = op->cidr.addr_len;
		key[25] = op->cidr.length;
		break;
	case KM_OP_AUTHZ_MATCH:
		memcpy(key + 4, &op->match.policy_id, 4);
		memcpy(key + 8, &op->match.index, 4);
		break;
	case KM_OP_AUTHZ_LIST:
		memcpy(key + 4, &op->list.kind, 4);
		memcpy(key + 8, &op->list.owner, 4);
		memcpy(key + 12, &op->list.index, 4);
		break;
	case KM_OP_AUTHZ_INDEX:
		memcpy(key + 4, &op->index.kind, 4);
		memcpy(key + 8, &op->index.owner, 4);
		memcpy(key + 12, &op->index.value, 4);
		key[16] = op->index.gen;
		key[17] = op->index.field;
		key[18] = op->index.chunk;
		break;
	default:
		return 0; /* routing rows: not the compiler's */
	}
	return 32;
}

static int ops_oom; /* km_oplist_clear forgets it: kept here for the final checks */

static void apply(struct row **rows, struct km_oplist *ops)
{
	km_oplist_settle(ops);
	ops_oom |= ops->oom;
	for (size_t i = 0; i < ops->n; i++) {
		struct row *r;
		uint8_t key[32];

		if (!op_key(&ops->ops[i], key))
			continue;
		HASH_FIND(hh, *rows, key, sizeof(key), r);
		if (ops->ops[i].del && r) {
			HASH_DEL(*rows, r);
			free(r);
		} else if (!ops->ops[i].del && !r) {
			r = calloc(1, sizeof(*r));
			if (!r)
				abort();
			memcpy(r->key, key, sizeof(key));
			HASH_ADD(hh, *rows, key, sizeof(r->key), r);
		}
	}
	km_oplist_clear(ops);
}

struct names {
	char **v;
	size_t n, cap;
};

static void keep_name(struct names *l, const char *name)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v)
			abort();
	}
	l->v[l->n++] = strdup(name);
}

static void policy_name(void *arg, const char *name, const Kmesh__Security__Authorization *p)
{
	(void)p;
	keep_name(arg, name);
}

static int workload_uid(void *arg, const char *uid)
{
	keep_name(arg, uid);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct km_response_view v;
	struct km_oplist ops;
	struct km_model m;
	struct km_policy_store ps;
	struct km_authz authz;
	struct km_xds_result res;
	struct km_authz_stats st;
	struct names pol = { 0 }, wl = { 0 };
	struct row *rows = NULL, *r, *tmp;
	size_t cut;

	if (size < 2)
		return 0;
	cut = (size_t)data[0] | (size_t)data[1] << 8;
	data += 2;
	size -= 2;
	if (cut > size)
		cut = size;
	km_log_set_level(KM_LOG_ERROR);
	ops_oom = 0;
	km_oplist_init(&ops);
	km_model_init(&m, &ops, NULL);
	km_authz_init(&authz, &ops, ""); /* the default network: what unset fields carry */
	authz.index_min = 1; /* every list indexed: its rows must go too */
	km_model_set_authz(&m, &authz);
	km_policy_store_init(&ps);
	ps.authz = &authz;
	for (int pass = 0; pass < 3; pass++) {
		if (pass < 2 ? km_response_view_init(&v, data, cut) != 0
			     : km_response_view_init(&v, data + cut, size - cut) != 0)
			continue;
		if (pass < 2)
			km_xds_apply_address(&m, &v, NULL, NULL, &res);
		else
			km_xds_apply_authorization(&ps, &v, NULL, NULL, &res);
		km_response_view_free(&v);
		km_authz_flush(&authz);
		apply(&rows, &ops);
	}
	km_authz_replay(&authz); /* what a reconnect sends: rows already there, written again */
	apply(&rows, &ops);

	km_policy_store_each(&ps, policy_name, &pol);
	km_model_each_workload(&m, workload_uid, &wl);
	for (size_t i = 0; i < pol.n; i++)
		km_policy_store_remove(&ps, pol.v[i]);
	for (size_t i = 0; i < wl.n; i++)
		km_model_remove_workload(&m, wl.v[i]);
	km_authz_flush(&authz);
	apply(&rows, &ops);

	km_authz_stats(&authz, &st);
	if (!authz.oom && (st.policies || st.identities || st.strings)) {
		fprintf(stderr, "everything removed, yet the compiler holds %zu policies, %zu "
			"identities, %zu strings\n", st.policies, st.identities, st.strings);
		abort();
	}
	if (!authz.oom && !ops_oom && HASH_COUNT(rows)) {
		fprintf(stderr, "everything removed, yet %u authz rows were never deleted (first: "
			"table %u)\n", HASH_COUNT(rows), rows->key[0]);
		abort();
	}
	HASH_ITER(hh, rows, r, tmp) {
		HASH_DEL(rows, r);
		free(r);
	}
	for (size_t i = 0; i < pol.n; i++)
		free(pol.v[i]);
	for (size_t i = 0; i < wl.n; i++)
		free(wl.v[i]);
	free(pol.v);
	free(wl.v);
	km_policy_store_free(&ps);
	km_model_free(&m);
	km_authz_free(&authz);
	km_oplist_free(&ops);
	return 0;
}
