/* tunnel_cgroup.h — the tunnel's cgroup, found by its id (--tunnel-cgroup auto): the tunnel tells
 * the map writer the id of the cgroup it runs in (TunnelCgroup: the inode of its cgroup-v2
 * directory, which it can read without privilege, whatever its cgroup namespace), and the map
 * writer finds that directory on the cgroup-v2 filesystem it attaches the pods' programs on (a
 * walk of the tree, once per tunnel link) to attach the tunnel's getsockopt program there
 * (dataplane.c). So neither the chart nor a unit needs to know a container's cgroup path. */
#ifndef KM_MW_TUNNEL_CGROUP_H
#define KM_MW_TUNNEL_CGROUP_H

#include <stdint.h>

/* An O_DIRECTORY fd of the cgroup-v2 directory whose inode is id, on the filesystem holding the
 * directory `within`; or -errno (-ENOENT: none). */
int km_cgroup_open_by_id(const char *within, uint64_t id);

#endif
