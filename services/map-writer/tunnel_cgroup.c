/* tunnel_cgroup.c — see tunnel_cgroup.h. */
#include "services/map-writer/tunnel_cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/cgroup2.h"

#define WALK_DEPTH 32 /* cgroup trees are a dozen deep at most (kubepods/burstable/pod/ctr) */

/* Depth-first under dirfd (a cgroup directory) for a directory with inode id. Returns an fd of
 * it, or -ENOENT. */
static int find(int dirfd, uint64_t id, int depth)
{
	DIR *d;
	struct dirent *e;
	int found = -ENOENT;

	if (depth > WALK_DEPTH || !(d = fdopendir(dirfd))) {
		close(dirfd);
		return -ENOENT;
	}
	while (found < 0 && (e = readdir(d))) {
		struct stat st;
		int fd;

		if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		fd = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && (uint64_t)st.st_ino == id) {
			found = fd;
			break;
		}
		found = find(fd, id, depth + 1); /* closes fd unless it is the one */
	}
	closedir(d); /* closes dirfd */
	return found;
}

int km_cgroup_open_by_id(const char *within, uint64_t id)
{
	char root[PATH_MAX];
	struct stat st;
	int fd;

	if (km_cgroup2_mount(within, root, sizeof(root)) != 0)
		return -ENOENT;
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) == 0 && (uint64_t)st.st_ino == id)
		return fd; /* the root itself */
	return find(fd, id, 0);
}
