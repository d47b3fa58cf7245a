/* dataplane.h — the map writer's BPF objects: loads the connect skeleton with table sizes from
 * flags, pins (or adopts already pinned) maps and cgroup links under a bpffs directory, and on
 * request detaches and unpins everything. The only code in the product that opens BPF objects. */
#ifndef KM_MW_DATAPLANE_H
#define KM_MW_DATAPLANE_H

#include <stdint.h>

struct kmesh_connect;
struct bpf_link;

struct km_table_sizes {
	uint32_t manage;
	uint32_t frontend;
	uint32_t service;
	uint32_t endpoint;
	uint32_t backend;
	uint32_t port_override;
};

struct km_dataplane_config {
	const char *bpffs_dir;   /* e.g. /sys/fs/bpf/kmesh; must be on a bpf filesystem */
	const char *cgroup_path; /* cgroup-v2 directory the programs attach to */
	struct km_table_sizes sizes;
};

struct km_dataplane {
	struct kmesh_connect *skel;
	struct bpf_link *link_connect4;
	struct bpf_link *link_connect6;
	int lock_fd; /* flock on the pin directory: one map writer per directory */
	int cgroup_fd;
	/* map fds, owned by skel */
	int fd_manage, fd_frontend, fd_service, fd_endpoint, fd_backend, fd_port_override;
	struct km_table_sizes sizes;
	char maps_dir[512];
	char links_dir[512];
	char dir[512];
	int adopted_maps;  /* maps found pinned and reused */
	int adopted_links; /* links found pinned and updated in place */
};

/* Returns 0 or -errno, with a message logged that says what to do. */
int km_dataplane_open(struct km_dataplane *dp, const struct km_dataplane_config *cfg);
/* detach != 0: unpin and detach the links, unpin the maps and remove the directories (uninstall).
 * detach == 0: leave everything pinned and attached, so traffic keeps flowing. */
void km_dataplane_close(struct km_dataplane *dp, int detach);

#endif
