/* authz_compile.h — compiles Istio authorization policies and the workloads' identities into the
 * km_authz_* tables (kmesh_maps.h) that bpf/lib/authz.h evaluates, as table operations appended
 * to an oplist. The rules it implements are the reference evaluator's (authz_eval.h).
 *
 *  - Identities: every address of a workload in this node's network (host-network workloads
 *    excepted) maps to its workload id and the interned ids of its namespace, (namespace,
 *    service account) pair and principal; defaults as ztunnel applies them.
 *  - Policies: each version of a policy gets its own id and sets, so a changed policy is written
 *    beside the old one and swapped in by its lists; the old rows go after. A Match becomes one
 *    row of twelve set ids; string matches become the ids of the known identities they match,
 *    re-expanded whenever an identity appears or goes.
 *  - Lists: per scope owner (mesh, namespace, workload), rewritten as a whole in the other
 *    generation and switched by the head row. Rebuilt at km_authz_flush().
 *
 * Ids are stable across restarts for unchanged inputs (they come from names and content), so a
 * replay after a reconnect rewrites the same rows. */
#ifndef KM_XDS_AUTHZ_COMPILE_H
#define KM_XDS_AUTHZ_COMPILE_H

#include <stddef.h>
#include <stdint.h>

#include "authorization.pb-c.h"
#include "shared/addr.h"
#include "services/xds-agent/core/ids.h"
#include "services/xds-agent/core/oplist.h"
#include "services/xds-agent/core/resources.h"

struct az_str;
struct az_set;
struct az_policy;
struct az_list;
struct az_ident;

/* A workload as authorization sees it, kept in the caller's storage (the model's entry for the
 * workload: no allocation of its own), zeroed before its first put and handed to every put and
 * to the remove; read only outside the compiler. Nothing is copied: the resource last put is
 * read (its policy names, by its policy list) until the next put or the remove, and the caller
 * keeps it unchanged until then. */
struct km_authz_wl {
	struct az_ident *ident; /* NULL: not an identity here */
	/* its own policy list, once it names a policy, is found by its id (a->lists): most
	 * workloads never have one, and the model keeps a record per workload */
};

/* Lists of at least this many policies get a candidate index: BPF looks for one only there
 * (below it the plain walk costs about what the index's own lookups do; bench/authz.sh). */
#define KM_AUTHZ_INDEX_MIN KM_AZX_MIN_POLICIES

struct km_authz {
	struct km_oplist *out;
	char *network;  /* this node's network: only its workloads' addresses are identities */
	/* Plaintext carries the identity of the workload holding its source address (1, the
	 * default: STRICT is met by an address of the mesh, the pods' network or IPsec trusted to
	 * say who sent it), or none at all (0: as ztunnel, a principal only from an HBONE client's
	 * certificate, so STRICT denies all plaintext and principal rules never match it). The
	 * identity rows then carry the workload alone. Set before the first flush. */
	int plaintext_identity;
	struct km_ids ids; /* policy, stat, set and identity-string ids share one space */
	struct az_str *strs;          /* interned identity strings */
	struct az_ident *idents;      /* workloads' identities, by who profile */
	struct az_policy *policies;   /* current versions, by name */
	struct az_policy **retired;   /* old versions whose rows go at the next flush */
	size_t n_retired, cap_retired;
	struct az_set **string_sets[3]; /* sets of string matches, per kind (expansion targets) */
	size_t n_string_sets[3], cap_string_sets[3];
	struct az_list *lists;        /* by (kind, owner) */
	size_t n_ident_rows;          /* identity rows written (km_authz_write_address) */
	size_t n_rows;                /* match rows of the current versions (dumps) */
	/* Lists of at least this many policies get a candidate index (km_authz_index); 0: none (the
	 * map writer does not have the table). Set before the first flush, or replay after. */
	uint32_t index_min;
	size_t index_rows;            /* index rows written for the live generations (dumps) */
	int oom;                      /* an allocation failed: what was written may be incomplete */
	/* Identity rows are written only once a policy exists: the kernel reads them to decide a
	 * connection by its policies and for nothing else, and a mesh without policies would pay a
	 * row per workload address (a third of a full sync's rows) for nothing. The first policy
	 * sets identities_on and asks for every address's row (identities_needed: the model, which
	 * knows every holder), so they reach the map writer before its own rows. They stay written
	 * once on. */
	int identities_on;
	void (*identities_needed)(void *arg);
	void *identities_arg;
};

void km_authz_init(struct km_authz *a, struct km_oplist *out, const char *network);
void km_authz_free(struct km_authz *a);

/* A policy's current version (borrowed: compiled now, not kept). */
void km_authz_put_policy(struct km_authz *a, const char *name,
			 const Kmesh__Security__Authorization *p);
void km_authz_remove_policy(struct km_authz *a, const char *name);
/* A workload's current version r and its model id (owner of its own policy list; the same for
 * every put of a record) into its record w. Nothing of r is copied: r must stay valid and
 * unchanged until the workload's next put or its remove, which read it as the old version.
 * Returns 1 when the identity its addresses carry changed (it became or stopped being one, or
 * became another), else 0; the rows of its addresses are the caller's to rewrite
 * (km_authz_write_address). Out of memory: a->oom is set. */
int km_authz_put_workload(struct km_authz *a, struct km_authz_wl *w, const struct km_workload_res *r,
			  uint32_t id);
/* The workload with model id id is gone: w is left zeroed. The caller moves its addresses' rows
 * first. */
void km_authz_remove_workload(struct km_authz *a, struct km_authz_wl *w, uint32_t id);
/* Whether w's addresses carry its identity here: a workload of this node's network, not on the
 * host network, with an address. */
int km_authz_is_identity(const struct km_authz_wl *w);
/* The identity row of addr: that of owner, the workload with model id owner_id (an identity),
 * or none (owner NULL or not an identity: the row is deleted if it had one, had_row). Which
 * workload's identity an address carries is the model's to say: it knows every holder of an
 * address (addr_index.h). Nothing until identities_on. */
void km_authz_write_address(struct km_authz *a, const struct km_addr *addr, int had_row,
			    const struct km_authz_wl *owner, uint32_t owner_id);
/* Rewrite the lists changed since the last flush, then remove retired policy versions. */
void km_authz_flush(struct km_authz *a);
/* Emit every row of the current state but the identity rows, which the caller replays with
 * km_authz_write_address (after a reconnect). */
void km_authz_replay(struct km_authz *a);

/* For dumps: the compiled form of each policy. */
struct km_authz_policy_info {
	const char *name;
	uint32_t policy_id, stat_id;
	int deny, dry_run;
	uint32_t scope; /* Kmesh__Security__Scope */
	size_t rows, sets;
};
typedef void (*km_authz_policy_info_cb)(void *arg, const struct km_authz_policy_info *info);
void km_authz_each_policy(const struct km_authz *a, km_authz_policy_info_cb cb, void *arg);
/* Counts for dumps and tests. */
struct km_authz_stats {
	size_t policies, lists, identities, strings, set_members;
	size_t index_rows; /* km_authz_index rows of the live list generations */
};
void km_authz_stats(const struct km_authz *a, struct km_authz_stats *st);

#endif
