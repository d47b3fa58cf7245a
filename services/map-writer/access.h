/* access.h — which peers may take which role on the map writer's socket. A peer is identified by
 * SO_PEERCRED (uid, gid); uid 0 may take every role; everything else must be allowed by a rule
 * "ROLE:uid=N" or "ROLE:gid=N" (flag --allow, repeatable). */
#ifndef KM_MW_ACCESS_H
#define KM_MW_ACCESS_H

#include <stddef.h>
#include <sys/types.h>

#include "kmesh_ipc.pb-c.h"

#define KM_ACCESS_MAX_RULES 64

struct km_access_rule {
	Kmesh__Ipc__Role role;
	int is_gid;
	unsigned int id;
};

struct km_access {
	struct km_access_rule rules[KM_ACCESS_MAX_RULES];
	size_t n;
};

/* Parse and add one rule. Returns 0, or -1 with err filled. */
int km_access_add(struct km_access *a, const char *spec, char *err, size_t errlen);
int km_access_allowed(const struct km_access *a, Kmesh__Ipc__Role role, uid_t uid, gid_t gid);
/* Role name ("xds", "cni", "admin", "ipsec", "tunnel") to enum; ROLE_UNSPECIFIED if unknown. */
Kmesh__Ipc__Role km_access_role_parse(const char *name, size_t len);

#endif
