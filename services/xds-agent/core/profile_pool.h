/* profile_pool.h — a workload's fields that many workloads share, held once: who it is (its
 * identity and its metrics' labels) and where it runs (node and locality). A kept workload points
 * at one reference-counted profile of each instead of a dozen strings of its own: 16 bytes
 * instead of 96 per workload (docs/performance-plan.md). The profiles' strings are interned
 * (strpool.h), so two profiles are the same when their string pointers are.
 *
 * One pool per process, used from the thread that runs the model, as strpool.h. */
#ifndef KM_XDS_PROFILE_POOL_H
#define KM_XDS_PROFILE_POOL_H

#include <stddef.h>

/* Who a workload is. */
struct km_wl_who {
	char *namespace;
	char *network;
	char *cluster_id;
	char *trust_domain;
	char *service_account;
	char *workload_name, *canonical_name, *canonical_revision; /* for metrics' labels */
	char *workload_kind; /* "cronjob", "pod" or "job"; NULL: a deployment (istiod's 0) */
};

/* Where it runs. */
struct km_wl_where {
	char *node;
	char *region, *zone, *subzone;
};

/* The pool's profile with the same strings as p (NULL and "" told apart), one more reference to
 * it; NULL when out of memory. */
const struct km_wl_who *km_who_intern(const struct km_wl_who *p);
const struct km_wl_where *km_where_intern(const struct km_wl_where *p);
/* Drop one reference taken by the intern (NULL: nothing). */
void km_who_release(const struct km_wl_who *p);
void km_where_release(const struct km_wl_where *p);
/* Distinct profiles held (both kinds). */
size_t km_profile_pool_count(void);

#endif
