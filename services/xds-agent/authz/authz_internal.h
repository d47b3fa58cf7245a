/* authz_internal.h — what the authorization compiler's files share and nothing outside them
 * sees: the entries behind interned strings, sets, policies, lists and workloads, and the helpers
 * each file provides to the others.
 *   authz_compile.c  policies, workloads, flush, replay, dumps (the public API, authz_compile.h)
 *   authz_lists.c    the per-owner policy lists and their generation switch
 *   authz_index.c    the candidate index of a list (km_authz_index): which policies may match
 *   authz_sets.c     interned identity strings and the sets of ids, ports and CIDRs over them
 *   authz_emit.c     appending an op (every file above writes rows through it)
 * Each file calls only those listed below it (and authz_eval.c, the reference evaluator). */
#ifndef KM_XDS_AUTHZ_INTERNAL_H
#define KM_XDS_AUTHZ_INTERNAL_H

#include <uthash.h>

#include "services/xds-agent/authz/authz_compile.h"
#include "shared/grow.h"

/* Kinds of interned identity strings (and of the sets expanded over them). */
enum az_kind { AZ_NS = 0, AZ_SA = 1, AZ_PRINCIPAL = 2, AZ_STRING_KINDS = 3 };
/* Sets: the three string kinds, then ports and CIDRs. */
enum { AZ_SET_PORT = 3, AZ_SET_CIDR = 4 };

struct az_str {
	char *key; /* kind letter, '/', text: the hash key and the id's name */
	int kind;
	uint32_t id;
	uint32_t wl_refs;  /* workloads with this identity: it is "known", sets hold it */
	uint32_t pol_refs; /* NAMESPACE-scoped policies naming it (their list's owner id) */
	UT_hash_handle hh;
};

struct az_cidr {
	uint8_t addr[16];
	uint8_t len; /* 4 or 16 */
	uint8_t length;
};

struct az_set {
	uint32_t id;
	int type;
	Kmesh__Security__StringMatch *pats; /* string kinds (SA: exact pair keys) */
	size_t n_pats;
	int all_exact;
	uint32_t *values; /* written members: string ids, or ports */
	size_t n_values, cap_values;
	struct az_cidr *cidrs;
	size_t n_cidrs;
};

/* What a policy's matches say about one indexed field (enum km_azx_field), for the candidate
 * index: every value may match (some match's positive list is empty or not all exact), or only
 * the exact values listed. A policy without rows never matches. */
struct az_filter {
	int any;
	uint32_t *values; /* ids or ports, unsorted, may repeat */
	size_t n, cap;
};

struct az_policy {
	char *name;
	uint64_t hash;
	uint32_t id, stat_id;
	int owns_stat;
	uint32_t flags; /* KM_AUTHZ_P_* */
	uint32_t scope;
	struct az_str *ns; /* NAMESPACE scope, non-empty namespace */
	uint32_t (*rows)[1 + KM_AF_COUNT]; /* [0] = KM_AUTHZ_M_* flags, then the set ids */
	size_t n_rows, cap_rows;
	struct az_set **sets;
	size_t n_sets, cap_sets;
	struct az_filter filter[KM_AZX_FIELDS];
	struct az_str **refs; /* the interned names the filter's ids stand for, held */
	size_t n_refs, cap_refs;
	UT_hash_handle hh;
};

/* A km_authz_index row written for a list generation (its key past the list's). */
struct az_index_key {
	uint8_t field, chunk;
	uint32_t value;
};

struct az_list {
	uint64_t key; /* kind << 32 | owner */
	uint32_t gen, n_written;
	struct az_index_key *idx; /* index rows written for generation gen */
	size_t n_idx;
	int head_written, dirty;
	/* KM_AUTHZ_OWNER_WORKLOAD: its workload's resource as last put (the policies it names),
	 * NULL once the workload is gone. The list holds it, not the workload's record, so a
	 * workload that names no policy keeps 8 bytes fewer (one per workload at 1M). */
	const struct km_workload_res *res;
	UT_hash_handle hh;
};

/* An identity as authorization names it (namespace, account, principal), one per `who` profile
 * its workloads share (profile_pool.h): named once per profile, not per workload (it was two
 * snprintfs, three mallocs and three string lookups each). Kept while a workload uses it; the
 * workload's resource holds the profile meanwhile, so the pointer key cannot be reused. */
struct az_ident {
	const struct km_wl_who *who; /* the key */
	struct az_str *str[AZ_STRING_KINDS]; /* NULL: namespace "" */
	uint32_t refs; /* workload records pointing here; each string is one workload reference of the entry's */
	UT_hash_handle hh;
};

/* The policy names a workload's list follows (none once the workload is gone). */
static inline size_t az_list_n_policies(const struct az_list *l)
{
	return l->res ? l->res->n_policies : 0;
}

/* Grow arr for need elements; on failure mark the compiler's output incomplete. True if room. */
#define GROW(a, arr, cap, need) \
	(km_grow((void **)&(arr), &(cap), (need), sizeof(*(arr))) == 0 || ((a)->oom = 1, 0))

/* authz_emit.c */
struct km_op *az_emit(struct km_authz *a, enum km_op_table table, int del, int now);

/* authz_sets.c */
struct az_str *az_str_get(struct km_authz *a, int kind, const char *text);
void az_str_put(struct km_authz *a, struct az_str *s);
void az_str_wl_ref(struct km_authz *a, struct az_str *s);
void az_str_wl_unref(struct km_authz *a, struct az_str *s);
/* The (namespace, service account) pair as one unambiguous string. */
void az_sa_key(char *buf, size_t cap, const char *ns, const char *sa);
/* Sets of a policy's list (0 when the list is empty): created, filled and written. */
uint32_t az_string_set(struct km_authz *a, struct az_policy *p, int type,
		       Kmesh__Security__StringMatch *const *l, size_t n);
uint32_t az_sa_set(struct km_authz *a, struct az_policy *p,
		   Kmesh__Security__ServiceAccountMatch *const *l, size_t n);
uint32_t az_port_set(struct km_authz *a, struct az_policy *p, const uint32_t *l, size_t n);
uint32_t az_cidr_set(struct km_authz *a, struct az_policy *p, Kmesh__Security__Address *const *l,
		     size_t n);
/* Write (del 0) or delete every row of a set. */
void az_emit_set(struct km_authz *a, const struct az_set *s, int del);
/* Forget a set (its rows are the caller's to delete). */
void az_set_free(struct km_authz *a, struct az_set *s);

/* authz_index.c */
/* Record what one compiled Match (NULL: a rule that always holds) admits per indexed field. */
void az_filter_add_row(struct km_authz *a, struct az_policy *p, const Kmesh__Security__Match *m);
void az_filter_free(struct km_authz *a, struct az_policy *p);
/* Write the index rows of generation gen of list l, whose positions hold ps[0..n) (nothing when
 * the list is too short to need one); l->idx is not touched. Returns the keys written (malloc'd,
 * *n_keys of them) for az_index_drop, or NULL. */
struct az_index_key *az_index_write(struct km_authz *a, const struct az_list *l, uint32_t gen,
				    struct az_policy *const *ps, size_t n, size_t *n_keys);
/* Delete the index rows of generation gen of list l listed in keys. */
void az_index_drop(struct km_authz *a, const struct az_list *l, uint32_t gen,
		   const struct az_index_key *keys, size_t n);

/* authz_lists.c */
struct az_list *az_list_get(struct km_authz *a, uint32_t kind, uint32_t owner, int create);
/* Mark for rewriting the lists the policy named name sits in (p NULL: only the workloads'). */
void az_mark_lists_of(struct km_authz *a, const struct az_policy *p, const char *name);
/* Write the list again in its other generation and switch its head. */
void az_list_rebuild(struct km_authz *a, struct az_list *l);

#endif
