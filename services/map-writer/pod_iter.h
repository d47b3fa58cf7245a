/* pod_iter.h — running a TCP socket iterator in every enrolled pod's network namespace, one after
 * the other, on the calling (worker) thread: for each enrolled pod with a known netns path
 * (km_pod_netns), enter the namespace, check its cookie is still the enrolled one, create the
 * iterator there (it walks the sockets of the namespace it is created in) and hand each
 * fixed-size record it writes to a callback. Used by the authz re-check (authz_recheck.c) and the
 * open connections' reports (conn_progress.c). Needs CAP_SYS_ADMIN (setns). */
#ifndef KM_MW_POD_ITER_H
#define KM_MW_POD_ITER_H

#include <stddef.h>
#include <stdint.h>

/* Where the enrolled pods are. */
struct km_pod_iter_env {
	int fd_manage;             /* the enrolled pods */
	int fd_pod_netns;          /* cookie -> netns path */
	uint64_t own_netns_cookie; /* the map writer's own: entered without setns */
};

/* What one walk met. */
struct km_pod_iter_pass {
	uint32_t pods;    /* enrolled pods with a path */
	uint32_t gone;    /* the path names another namespace now (the pod went away) */
	uint32_t missing; /* no such path (the same, or the mounts are not visible here) */
	uint32_t errors;  /* other failures; the first one in error */
	char error[512];
};

/* Called for each record, on the walking thread, with the pod's netns cookie. */
typedef void (*km_pod_iter_record_fn)(void *arg, uint64_t netns_cookie, const void *rec);

/* The env for this process (its own namespace's cookie read once). */
void km_pod_iter_env_init(struct km_pod_iter_env *env, int fd_manage, int fd_pod_netns);
/* Walk every enrolled pod with the iterator link_fd, whose records are rec_size bytes (at most
 * 256); stops early once *closing is set. Fills *pass (zeroed first). */
void km_pod_iter_walk(const struct km_pod_iter_env *env, int link_fd, size_t rec_size,
		      km_pod_iter_record_fn fn, void *arg, const int *closing,
		      struct km_pod_iter_pass *pass);

#endif
