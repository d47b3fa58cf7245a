/* cgroup2.h — where this process sees the cgroup-v2 filesystem (/proc/self/mountinfo): the
 * tunnel names its own cgroup by it, the map writer finds a cgroup by id under it. */
#ifndef KM_SHARED_CGROUP2_H
#define KM_SHARED_CGROUP2_H

#include <stddef.h>
#include <stdint.h>

/* The mount point of the cgroup2 filesystem that holds within (the longest mount point that is
 * a prefix of its real path), or, within NULL, the first cgroup2 mount, into out. Returns 0, or
 * -1 (none; within not found). */
int km_cgroup2_mount(const char *within, char *out, size_t len);
/* The id of the calling process's cgroup (the inode of its cgroup-v2 directory, which the
 * kernel's cgroup id is), or 0 when it cannot be read. */
uint64_t km_cgroup2_self_id(void);

#endif
