/* strpool.h — the agent's interned strings: one reference-counted copy of each string that many
 * resources repeat (namespaces, nodes, service accounts, localities, cluster ids, trust domains,
 * workload and canonical names, revisions, the service names of memberships, policy names), so
 * a kept workload holds pointers to them instead of its own copies.
 *
 * One pool per process, used from the thread that runs the model (the agent's loop; tests and
 * benchmarks are single-threaded): resources are packed and freed there. */
#ifndef KM_XDS_STRPOOL_H
#define KM_XDS_STRPOOL_H

#include <stddef.h>

/* The pool's copy of s, one more reference to it; NULL when out of memory. */
const char *km_str_intern(const char *s);
/* Drop one reference taken by km_str_intern (NULL: nothing). */
void km_str_release(const char *s);
/* Distinct strings held. */
size_t km_str_pool_count(void);

#endif
