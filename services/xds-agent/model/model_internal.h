/* model_internal.h — what the model's files share and nothing outside them sees: the entries
 * behind a service and a workload name, and the helpers each file provides to the others.
 *   model.c           services, workloads, flush, replay, queries (the public API)
 *   model_emit.c      turning entries into table operations
 *   model_endpoints.c memberships, endpoint slots, priorities, per-workload target ports
 *   model_waypoint.c  waypoint resolution and the objects that depend on a waypoint service
 *   model_frontends.c who holds each frontend key, and whose row the table carries
 *   model_resolved.c  a workload reached by name: one backend per resolved address pair */
#ifndef KM_XDS_MODEL_INTERNAL_H
#define KM_XDS_MODEL_INTERNAL_H

#include <uthash.h>

#include "services/xds-agent/authz/authz_compile.h"
#include "services/xds-agent/core/xds_version.h"
#include "services/xds-agent/model/model.h"

/* A port-override row written for (this service, backend, service port). */
struct override {
	uint32_t backend_id;
	uint16_t port;
	uint16_t target;
};

/* One priority group's endpoint slots: backend ids in slot order, and their cumulative weights,
 * allocated only once a slot weighs other than 1 (until then slot i's cumulative weight is
 * i + 1): most groups never need them. */
struct mdl_group {
	uint32_t *eps;
	uint64_t *cum; /* NULL: every slot weighs 1; else room for cap, as eps */
	uint32_t n, cap;
};

/* A service's port-override rows (workloads whose own port mapping differs from the service's:
 * few services have any), an open-addressing table keyed by (backend, port), at most half full:
 * a member's rows are found by key, never by a scan of a big service's rows
 * (model_endpoints.c). A free slot has backend_id 0 (no id is 0). */
struct mdl_ovrs {
	uint32_t n, cap; /* cap: a power of two */
	struct override slot[];
};

/* A service named as a waypoint by other services or workloads (hostname form): those dependents,
 * each keeping its index here, and the address they were last given (rewritten when it changes:
 * mdl_publish_waypoint_address). Made when the first dependent comes, kept with the service. */
struct mdl_wp_role {
	struct km_model_svc **svcs;
	struct km_model_wl **wls;
	uint32_t n_svcs, cap_svcs;
	uint32_t n_wls, cap_wls;
	struct km_addr published_vip;
	uint8_t published;
};

/* A service. Counts are 32-bit and flags bytes, its groups beyond the first and its role as a
 * waypoint out of line: one per service, 100,000 at 1M workloads (it was 520 bytes, with a
 * uthash handle, size_t counts and seven groups inline; now 120, a 128-byte malloc chunk). */
struct km_model_svc {
	char *name;
	struct km_service_res *res;
	struct km_model_svc *prev, *next; /* m->services, in the order they were made */
	struct mdl_group group0;  /* priority 0: most services have no other (mdl_group_of) */
	struct mdl_group *groups; /* priorities 1 .. KM_PRIO_COUNT - 1, once one was used */
	struct km_model_wl **members; /* workloads that list this service */
	struct mdl_ovrs *ovr; /* NULL until it has an override row */
	/* waypoints: the waypoint service this one names (hostname form), and, once anything
	 * names this one, what it is as a waypoint (NULL for most services) */
	struct km_model_svc *wp_of;
	struct mdl_wp_role *wp;
	char *version; /* istiod's version of the resource, if any */
	uint32_t id; /* 0 while no resource is known */
	uint32_t n_members, cap_members;
	uint32_t wp_index : 27;      /* its index in wp_of->wp->svcs (MDL_WP_SVC_INDEX_LIMIT) */
	uint32_t svc_written : 1;     /* its service row exists: frontends may be written */
	uint32_t fe_flag_written : 1; /* KM_FE_F_PORT_OVERRIDES as last written in its frontends */
	uint32_t unconfirmed : 1; /* marked for a sweep, not named by istiod since (km_model_mark_unconfirmed) */
	uint32_t in_dirty : 1;    /* in m->dirty (pointer kept until flush) */
	uint32_t count_dirty : 1; /* the service row must be re-emitted at flush */
};

/* A service's index among the services naming its waypoint is 27 bits wide (its flags share the
 * word): 134M services, beyond any model's memory. */
#define MDL_WP_SVC_INDEX_LIMIT (UINT32_C(1) << 27)

/* Its override rows. */
static inline uint32_t mdl_n_ovr(const struct km_model_svc *s)
{
	return s->ovr ? s->ovr->n : 0;
}

/* Its override rows one by one: for (i = 0; (o = mdl_ovr_next(s, &i)); ) ... (no change of the
 * rows during the visit). */
static inline struct override *mdl_ovr_next(const struct km_model_svc *s, uint32_t *i)
{
	for (; s->ovr && *i < s->ovr->cap; (*i)++)
		if (s->ovr->slot[*i].backend_id)
			return &s->ovr->slot[(*i)++];
	return NULL;
}

/* The group of priority prio, or NULL when s never had a slot there. */
static inline struct mdl_group *mdl_group_of(const struct km_model_svc *s, uint32_t prio)
{
	if (prio == 0)
		return (struct mdl_group *)&s->group0;
	return s->groups ? &s->groups[prio - 1] : NULL;
}

/* The slots of priority prio. */
static inline uint32_t mdl_n_eps(const struct km_model_svc *s, uint32_t prio)
{
	const struct mdl_group *g = mdl_group_of(s, prio);

	return g ? g->n : 0;
}

/* The cumulative weights of s's group prio, or NULL when every slot there weighs 1. */
static inline uint64_t *mdl_cum(const struct km_model_svc *s, uint32_t prio)
{
	const struct mdl_group *g = mdl_group_of(s, prio);

	return g ? g->cum : NULL;
}

/* Entries are named by pointer where one may be either: a workload's carries this tag in its
 * lowest bit (the id table's owners, the frontend holders). */
#define MDL_OWNER_WORKLOAD ((uintptr_t)1)

/* Where a workload sits in a service that lists it: its index in s->members and its endpoint
 * slot, if it has one, so that neither is ever searched for (a big service has millions). */
struct mdl_place {
	struct km_model_svc *s;
	uint32_t member;       /* index in s->members */
	uint32_t slot : 28;    /* index in its group's eps, when has_slot (km_endpoint holds fewer) */
	uint32_t prio : 3;     /* KM_PRIO_COUNT 7 */
	uint32_t has_slot : 1;
};

/* A workload's index in the wp->wls of the waypoint service it names is 28 bits wide (the four
 * flags share its word): 268M dependents of one waypoint, beyond any model's memory. */
#define MDL_WP_INDEX_LIMIT (UINT32_C(1) << 28)

/* A workload: its name is res->uid (an entry always holds its resource). Fields are ordered so
 * the entry has no padding: 72 bytes, an 80-byte malloc chunk (one per workload), authorization's
 * record of it included. */
struct km_model_wl {
	/* one place per service that lists it: the first in the entry (most workloads list one
	 * service: no allocation), the others in `more`, exactly n_places - 1 of them */
	struct mdl_place place0;
	struct mdl_place *more;
	struct km_workload_res *res;
	struct km_authz_wl authz; /* its record in m->authz (km_authz_put_workload), if any */
	union km_xds_version version; /* istiod's, with version_kind and version_width */
	uint64_t backend_sum; /* checksum of the backend row as last written (mdl_row_sum) */
	uint32_t id;
	uint32_t inline4;     /* the IPv4 address its endpoint rows carry (mdl_inline4), 0 = none */
	/* its index in the wp->wls of the waypoint service its resource names by hostname (that
	 * service is found by the name: model_waypoint.c) */
	uint32_t wp_index : 28;
	uint32_t unconfirmed : 1; /* marked for a sweep, not named by istiod since */
	uint32_t backend_written : 1;
	uint32_t derived : 1;     /* one more address of a workload reached by name (model_resolved.c) */
	uint32_t has_derived : 1; /* such a workload, with entries derived from it */
	uint16_t n_places; /* at most KM_RES_MAX_SERVICES_PER_WORKLOAD */
	uint8_t version_kind, version_width; /* xds_version.h */
};

/* A workload whose id is not its uid's home id (rare: a 32-bit hash collision). */
struct mdl_displaced {
	char *uid; /* a copy: the workload's resource is replaced on updates */
	struct km_model_wl *w;
	UT_hash_handle hh;
};

static inline struct km_model_wl *mdl_owner_workload(uintptr_t owner)
{
	return (struct km_model_wl *)(owner & ~MDL_OWNER_WORKLOAD);
}

/* model_waypoint.c: the dependents naming s as their waypoint (0 when none ever did) */
static inline uint32_t mdl_n_wp_dependents(const struct km_model_svc *s)
{
	return s->wp ? s->wp->n_svcs + s->wp->n_wls : 0;
}

/* model_store.c: where objects are kept (the lowest layer; calls no other model file) */
/* Append p, which the caller knows is not in the array yet (no scan: arrays of a big service's
 * members hold millions). */
void mdl_parr_append(struct km_model *m, void ***arr, uint32_t *n, uint32_t *cap, void *p);
void mdl_parr_del(void **arr, uint32_t *n, void *p);
int mdl_str_eq(const char *a, const char *b);
void mdl_mark_dirty(struct km_model *m, struct km_model_svc *s, int count);
struct km_model_svc *mdl_svc_get(struct km_model *m, const char *name, int create);
/* The service observer (km_model_watch_services), if any, told of r coming or going. */
static inline void mdl_tell_service(struct km_model *m, const struct km_service_res *r, int add)
{
	if (m->on_service && r)
		m->on_service(m->on_service_arg, r, add);
}
struct km_model_svc *mdl_svc_find(const struct km_model *m, const char *name);
/* s leaves the model's indexes (the caller frees it). */
void mdl_svc_forget(struct km_model *m, struct km_model_svc *s);
/* The workload with this backend id, or NULL. */
struct km_model_wl *mdl_workload_by_id(const struct km_model *m, uint32_t id);
/* The workload in slot i of the id table, or NULL (free slot or a service). */
struct km_model_wl *mdl_wl_at(const struct km_model *m, size_t i);
struct km_model_wl *mdl_wl_find(const struct km_model *m, const char *uid);
/* A new workload: its id, and its displaced entry if the id is not the home one. */
int mdl_wl_add(struct km_model *m, struct km_model_wl *w, const char *uid);
void mdl_wl_del(struct km_model *m, struct km_model_wl *w);
void mdl_wl_set_version(struct km_model_wl *w, const char *version);
void mdl_wl_drop_version(struct km_model_wl *w);
/* That address for the workload with this backend id (mdl_inline4), 0 for none. */
uint32_t mdl_workload_inline4(const struct km_model *m, uint32_t backend_id);
int mdl_service_p2c(const struct km_model *m, const struct km_model_svc *s);

/* model.c: one entry put (derived: model_resolved.c's) and removed, as km_model_upsert_workload
 * and km_model_remove_workload do once a workload's addresses are settled. put returns the
 * entry, or NULL when out of memory (res consumed either way). */
struct km_model_wl *mdl_put_entry(struct km_model *m, struct km_workload_res *res, int derived);
void mdl_remove_entry(struct km_model *m, struct km_model_wl *w);

/* model_resolved.c: a workload reached by name, whose resolved addresses may be more than one
 * backend row carries (one of each family): one entry per address pair. */
void mdl_put_resolved(struct km_model *m, struct km_workload_res *res);
/* Remove w's derived entries from the (keep + 1)-th on (keep 1: all of them). */
void mdl_drop_derived(struct km_model *m, struct km_model_wl *w, size_t keep);

/* model_index.c: the telemetry address indexes, when kept (add = 0: remove r's addresses). */
/* Whether a is one of list's n addresses. */
int mdl_addr_in(const struct km_addr *list, size_t n, const struct km_addr *a);
void mdl_index_service(struct km_model *m, const struct km_model_svc *s,
		       const struct km_service_res *r, int add);
/* w's addresses go from old's (NULL: none yet) to res's (NULL: w goes): the index, w's record
 * in authorization (put or removed) and the identity rows of every address involved. Called
 * while both versions are alive. */
void mdl_index_workload(struct km_model *m, struct km_model_wl *w, const struct km_workload_res *old,
			const struct km_workload_res *res);
/* The identity rows of every workload address (after a reconnect). */
/* Every address's identity row again (fresh: none was written before, as when the first policy
 * turns identities on). */
void mdl_replay_identities(struct km_model *m, int fresh);

/* model_emit.c: rows from objects (and the waypoint as rows carry it) */
void mdl_resolve_waypoint(struct km_model *m, const struct km_waypoint *wp, struct km_op_waypoint *out);
void mdl_service_waypoint(struct km_model *m, const struct km_model_svc *s, struct km_op_waypoint *out);
/* now: ordering-sensitive (emitted after everything queued), else additive (oplist.h) */
void mdl_emit_service(struct km_model *m, const struct km_model_svc *s, int now);
void mdl_emit_endpoint(struct km_model *m, const struct km_model_svc *s, uint32_t prio, uint32_t index,
		   int del, int now);
/* A new slot (additive) holding w, whose address is read from w, not looked up by its id. */
void mdl_emit_new_endpoint(struct km_model *m, const struct km_model_svc *s, uint32_t prio,
			   uint32_t index, const struct km_model_wl *w);
void mdl_emit_override(struct km_model *m, const struct km_model_svc *s, const struct override *o,
		   int del);
void mdl_backend_row(struct km_model *m, const struct km_model_wl *w, struct km_op *op);
/* Reached through the tunnel over HBONE from this node (km_model_set_tunnel): 1 or 0. */
int mdl_wl_tunneled(const struct km_model *m, const struct km_workload_res *r);
/* The IPv4 address (network order) a backend's endpoint rows carry, from its backend row: its
 * IPv4 address when it has one and no waypoint of its own (a connection may go straight to it),
 * else 0 (BPF reads km_backend). */
uint32_t mdl_inline4(const struct km_op *backend_row);
/* A checksum of a row as built by the functions above (zeroed padding): FNV-1a-64 of its bytes. */
uint64_t mdl_row_sum(const struct km_op *op);
/* Emit the workload's backend row (row, or built now if NULL) and remember its checksum. */
void mdl_emit_backend(struct km_model *m, struct km_model_wl *w, const struct km_op *row);
void mdl_emit_backend_delete(struct km_model *m, const struct km_model_wl *w);

/* model_frontends.c: an upsert holds the key and writes the row if its holder wins it; a delete
 * lets go and hands the row to the next holder (or deletes it when none is left). */
void mdl_emit_service_frontend(struct km_model *m, const struct km_model_svc *s,
			       const struct km_addr *vip, const struct km_port *port, int del);
void mdl_emit_service_frontends(struct km_model *m, const struct km_model_svc *s, int del);
void mdl_emit_workload_frontend(struct km_model *m, const struct km_model_wl *w,
				const struct km_addr *addr, int del);
void mdl_frontends_free(struct km_model *m);

/* model_endpoints.c */
/* w starts (add) or stops listing s: its place in s->members, in O(1) (a removed member's place
 * is taken by the last one). */
void mdl_member_add(struct km_model *m, struct km_model_svc *s, struct km_model_wl *w);
void mdl_member_del(struct km_model_svc *s, struct km_model_wl *w);
/* w's place in s, or NULL when w does not list s. */
struct mdl_place *mdl_place_of(const struct km_model_wl *w, const struct km_model_svc *s);
uint32_t mdl_endpoint_prio(const struct km_model *m, const struct km_model_svc *s,
		       const struct km_model_wl *w);
/* w's endpoint slot in s: 1 with it, or 0 when it has none. O(places of w). */
int mdl_find_slot(const struct km_model_svc *s, const struct km_model_wl *w, uint32_t *prio,
		  size_t *idx);
uint64_t mdl_slot_cum(const struct km_model_svc *s, uint32_t prio, size_t i);
uint64_t mdl_group_total(const struct km_model_svc *s, uint32_t prio);
void mdl_endpoint_append(struct km_model *m, struct km_model_svc *s, uint32_t prio,
			 struct km_model_wl *w);
void mdl_endpoint_remove(struct km_model *m, struct km_model_svc *s, uint32_t prio, size_t i);
void mdl_sync_overrides(struct km_model *m, struct km_model_svc *s, struct km_model_wl *w, int want);
/* After s's resource changed: remove its override rows at ports it no longer has (a member's sync
 * looks only at the ports it has). */
void mdl_drop_stale_overrides(struct km_model *m, struct km_model_svc *s);
int mdl_eligible(const struct km_model_svc *s, const struct km_model_wl *w);
/* new_member: w has just started listing s, so it holds no slot there (no search) */
void mdl_sync_endpoint(struct km_model *m, struct km_model_svc *s, struct km_model_wl *w,
		       int new_member);
void mdl_sync_all_endpoints(struct km_model *m, struct km_model_svc *s);

/* model_waypoint.c: which objects depend on which waypoint service, and rewriting them when its
 * address changes */
void mdl_register_service_waypoint(struct km_model *m, struct km_model_svc *s);
void mdl_register_workload_waypoint(struct km_model *m, struct km_model_wl *w,
				    const struct km_workload_res *old);
void mdl_publish_waypoint_address(struct km_model *m, struct km_model_svc *s);

#endif
