/* pod_iter.c — see pod_iter.h. */
#include "services/map-writer/pod_iter.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "kmesh_maps.h"
#include "shared/netns.h"

#define REC_MAX 256

struct enter {
	uint64_t cookie; /* the enrolled one */
	int link_fd;
	int iter_fd; /* out */
};

/* Inside the pod's namespace: the same namespace still (a path can be reused), then the
 * iterator. */
static int open_iter_here(void *arg, char *err, size_t errlen)
{
	struct enter *e = arg;
	uint64_t here;
	int rc = km_netns_cookie_here(&here, err, errlen);

	if (rc)
		return rc;
	if (here != e->cookie) {
		snprintf(err, errlen, "now holds netns cookie %llu", (unsigned long long)here);
		return -ESTALE; /* the enrolled namespace is gone; the path names another */
	}
	e->iter_fd = bpf_iter_create(e->link_fd);
	if (e->iter_fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot create the TCP iterator: %s", strerror(-rc));
		return rc;
	}
	return 0;
}

/* Run the iterator to its end, a record at a time to fn. */
static int read_iter(int fd, size_t rec_size, km_pod_iter_record_fn fn, void *arg,
		     uint64_t cookie, char *err, size_t errlen)
{
	_Alignas(8) char buf[64 * REC_MAX];
	size_t room = sizeof(buf) / rec_size * rec_size, have = 0;

	for (;;) {
		ssize_t n = read(fd, buf + have, room - have);
		size_t whole;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			snprintf(err, errlen, "reading the TCP iterator: %s", strerror(e));
			return -e;
		}
		have += (size_t)n;
		whole = have / rec_size * rec_size;
		for (size_t off = 0; off < whole; off += rec_size)
			fn(arg, cookie, buf + off);
		memmove(buf, buf + whole, have - whole);
		have -= whole;
		if (n == 0)
			return 0;
	}
}

void km_pod_iter_env_init(struct km_pod_iter_env *env, int fd_manage, int fd_pod_netns)
{
	env->fd_manage = fd_manage;
	env->fd_pod_netns = fd_pod_netns;
	if (km_netns_cookie_here(&env->own_netns_cookie, NULL, 0) != 0)
		env->own_netns_cookie = 0; /* cookies start at 1: then no pod matches */
}

void km_pod_iter_walk(const struct km_pod_iter_env *env, int link_fd, size_t rec_size,
		      km_pod_iter_record_fn fn, void *arg, const int *closing,
		      struct km_pod_iter_pass *pass)
{
	struct km_manage_key key, next;
	const void *prev = NULL;

	memset(pass, 0, sizeof(*pass));
	if (!rec_size || rec_size > REC_MAX)
		return;
	while (!__atomic_load_n(closing, __ATOMIC_RELAXED) &&
	       bpf_map_get_next_key(env->fd_pod_netns, prev, &next) == 0) {
		struct km_pod_netns_value where;
		struct km_manage_value enrolled;
		struct enter e = { .cookie = next.netns_cookie, .link_fd = link_fd, .iter_fd = -1 };
		char err[200];
		int rc;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(env->fd_pod_netns, &key, &where) != 0 ||
		    bpf_map_lookup_elem(env->fd_manage, &key, &enrolled) != 0)
			continue; /* unenrolled meanwhile (or left by an older map writer) */
		where.path[sizeof(where.path) - 1] = '\0';
		pass->pods++;
		/* the map writer's own namespace (a VM enrolled as a whole): nothing to enter, and its
		 * path (/proc/1/ns/net) may not open without CAP_SYS_PTRACE */
		rc = key.netns_cookie == env->own_netns_cookie
			     ? open_iter_here(&e, err, sizeof(err))
			     : km_netns_call(where.path, open_iter_here, &e, err, sizeof(err));
		if (rc == 0) {
			rc = read_iter(e.iter_fd, rec_size, fn, arg, e.cookie, err, sizeof(err));
			close(e.iter_fd);
		}
		if (rc == -ESTALE) {
			pass->gone++; /* the pod went away; its CNI DEL removes the row */
		} else if (rc == -ENOENT) {
			pass->missing++;
		} else if (rc && !pass->errors++) {
			snprintf(pass->error, sizeof(pass->error), "pod netns %s: %s%s", where.path, err,
				 rc == -EPERM || rc == -EACCES
					 ? " (the map writer needs CAP_SYS_ADMIN to enter pod network "
					   "namespaces)" : "");
		}
	}
}
