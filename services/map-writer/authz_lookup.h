/* authz_lookup.h — authorization at the socket lookup: authz.bpf.c's sk_lookup program attached
 * to each enrolled pod's network namespace, one pinned bpf_link per pod under
 * <links>/lookup/<netns cookie>. Attached at enrollment (when the enrollment names the
 * namespace's path), updated to this build's program at start (and attached then to pods
 * enrolled by an older build), detached at unenrollment. A pod with its link has
 * KM_MANAGE_F_AUTHZ_LOOKUP in its km_manage row, and the cgroup_skb program leaves its SYNs to
 * the lookup: a denied connection is refused at once (the kernel answers with a reset) instead
 * of timing out. A pod without one is decided by cgroup_skb, as before. */
#ifndef KM_MW_AUTHZ_LOOKUP_H
#define KM_MW_AUTHZ_LOOKUP_H

#include <limits.h>
#include <stdint.h>

struct km_authz_lookup {
	int prog_fd;       /* the sk_lookup program (owned by the dataplane) */
	int fd_manage;     /* km_manage, km_pod_netns (owned by the dataplane) */
	int fd_pod_netns;
	uint64_t own_netns_cookie; /* the map writer's own namespace (a VM enrolled as a whole) */
	char dir[PATH_MAX];
	uint64_t failed; /* attaches that failed since start (kmesh_authz_lookup_attach_failures_total) */
};

/* Make the pin directory, bring the pinned links to this build's program, drop the pins of pods
 * no longer enrolled, attach to enrolled pods without one, and make every km_manage row's flag
 * say whether its pod has a link. Returns 0, or -errno (logged) when the directory cannot be
 * made; a pod that cannot be attached is logged and left to cgroup_skb. */
int km_authz_lookup_init(struct km_authz_lookup *l, int prog_fd, const char *links_dir,
			 int fd_manage, int fd_pod_netns);
/* Attach to the pod's namespace at netns_path (kept if already attached). Returns
 * KM_MANAGE_F_AUTHZ_LOOKUP when the pod has its link, 0 when not (no path, or the attach failed:
 * logged): the flags for its km_manage row. */
uint32_t km_authz_lookup_attach(struct km_authz_lookup *l, uint64_t netns_cookie,
				const char *netns_path, const char *pod);
/* The pod is unenrolled (or its enrollment failed): its link goes. */
void km_authz_lookup_detach(struct km_authz_lookup *l, uint64_t netns_cookie);
/* Pods with a link now. */
/* Enrolled pods whose SYNs no sk_lookup program decides (km_manage rows without
 * KM_MANAGE_F_AUTHZ_LOOKUP): a walk of km_manage. */
uint64_t km_authz_lookup_pods_without(const struct km_authz_lookup *l);
uint64_t km_authz_lookup_count(const struct km_authz_lookup *l);
/* On a shutdown that detaches everything: every link goes, and the directory. */
void km_authz_lookup_remove_all(struct km_authz_lookup *l);

#endif
