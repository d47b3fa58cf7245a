/* access.c — role rules checked against peer credentials (see access.h). */
#include "services/map-writer/access.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Kmesh__Ipc__Role km_access_role_parse(const char *name, size_t len)
{
	if (len == 3 && strncmp(name, "xds", 3) == 0)
		return KMESH__IPC__ROLE__ROLE_XDS;
	if (len == 3 && strncmp(name, "cni", 3) == 0)
		return KMESH__IPC__ROLE__ROLE_CNI;
	if (len == 5 && strncmp(name, "admin", 5) == 0)
		return KMESH__IPC__ROLE__ROLE_ADMIN;
	if (len == 5 && strncmp(name, "ipsec", 5) == 0)
		return KMESH__IPC__ROLE__ROLE_IPSEC;
	if (len == 6 && strncmp(name, "tunnel", 6) == 0)
		return KMESH__IPC__ROLE__ROLE_TUNNEL;
	return KMESH__IPC__ROLE__ROLE_UNSPECIFIED;
}

int km_access_add(struct km_access *a, const char *spec, char *err, size_t errlen)
{
	const char *colon = strchr(spec, ':');
	const char *val;
	struct km_access_rule r;
	char *end;
	unsigned long id;

	if (!colon) {
		snprintf(err, errlen, "'%s': expected ROLE:uid=N or ROLE:gid=N", spec);
		return -1;
	}
	r.role = km_access_role_parse(spec, (size_t)(colon - spec));
	if (r.role == KMESH__IPC__ROLE__ROLE_UNSPECIFIED) {
		snprintf(err, errlen, "'%s': role must be xds, cni, admin, ipsec or tunnel", spec);
		return -1;
	}
	if (strncmp(colon + 1, "uid=", 4) == 0)
		r.is_gid = 0;
	else if (strncmp(colon + 1, "gid=", 4) == 0)
		r.is_gid = 1;
	else {
		snprintf(err, errlen, "'%s': expected uid=N or gid=N after the role", spec);
		return -1;
	}
	val = colon + 5;
	errno = 0;
	id = strtoul(val, &end, 10);
	if (end == val && *val) { /* a name: resolved now, as the socket's group is */
		struct passwd *pw = r.is_gid ? NULL : getpwnam(val);
		struct group *gr = r.is_gid ? getgrnam(val) : NULL;

		if (!pw && !gr) {
			snprintf(err, errlen, "'%s': no %s named '%s'", spec, r.is_gid ? "group" : "user",
				 val);
			return -1;
		}
		id = pw ? pw->pw_uid : gr->gr_gid;
	} else if (errno || end == val || *end || id > 0xfffffffeul) {
		snprintf(err, errlen, "'%s': '%s' is not an id or a name", spec, val);
		return -1;
	}
	if (a->n == KM_ACCESS_MAX_RULES) {
		snprintf(err, errlen, "more than %d rules", KM_ACCESS_MAX_RULES);
		return -1;
	}
	r.id = (unsigned int)id;
	a->rules[a->n++] = r;
	return 0;
}

int km_access_allowed(const struct km_access *a, Kmesh__Ipc__Role role, uid_t uid, gid_t gid)
{
	if (role == KMESH__IPC__ROLE__ROLE_UNSPECIFIED)
		return 0;
	if (uid == 0)
		return 1;
	for (size_t i = 0; i < a->n; i++) {
		const struct km_access_rule *r = &a->rules[i];

		if (r->role == role && (r->is_gid ? r->id == gid : r->id == uid))
			return 1;
	}
	return 0;
}
