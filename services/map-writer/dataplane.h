/* dataplane.h — the map writer's BPF objects: loads the connect skeleton with table sizes from
 * flags, pins (or adopts already pinned) maps and cgroup links under a bpffs directory, and on
 * request detaches and unpins everything. The only code in the product that opens BPF objects. */
#ifndef KM_MW_DATAPLANE_H
#define KM_MW_DATAPLANE_H

#include <stddef.h>
#include <stdint.h>

#include "kmesh_maps.h"

struct kmesh;
struct bpf_link;
struct bpf_map;
struct km_map_migration;

struct km_table_sizes {
	uint32_t manage;
	uint32_t frontend;
	uint32_t service;
	uint32_t endpoint;
	uint32_t backend;
	uint32_t port_override;
	uint32_t waypoint_sockets; /* km_sockhash: sockets still owing their waypoint the TLV */
	uint32_t authz_idents;     /* km_authz_ident */
	uint32_t authz_rows;       /* km_authz_list, _match, _set, _stats and _index each */
	uint32_t authz_cidrs;      /* km_authz_cidr */
};

/* Node settings the programs read from km_config. */
struct km_node_config {
	struct km_addr dns4;  /* node-local resolver for IPv4 DNS; zero = no redirect */
	struct km_addr dns6;  /* ... for IPv6 DNS */
	uint16_t dns_port;    /* host order */
	uint16_t flags;       /* KM_CFG_F_* and the BPF log level (kmesh_maps.h) */
};

struct km_dataplane_config {
	const char *bpffs_dir;   /* e.g. /sys/fs/bpf/kmesh; must be on a bpf filesystem */
	const char *cgroup_path; /* cgroup-v2 directory the programs attach to */
	const char *tunnel_cgroup_path; /* the tunnel's, for its getsockopt program ("": none) */
	struct km_table_sizes sizes;
	int preallocate; /* routing tables without BPF_F_NO_PREALLOC (maps created from now on) */
	int compat_programs; /* the variants for older kernels even where newer features exist */
	struct km_node_config node;
};

/* The cgroup hooks, each one pinned bpf_link. */
enum km_dp_hook {
	KM_HOOK_CONNECT4,
	KM_HOOK_CONNECT6,
	KM_HOOK_SENDMSG4,
	KM_HOOK_SENDMSG6,
	KM_HOOK_RECVMSG4,
	KM_HOOK_RECVMSG6,
	KM_HOOK_SOCKOPS,
	KM_HOOK_AUTHZ_INGRESS,
	KM_HOOK_SOCK_RELEASE,
	KM_HOOK_TUNNEL_ORIGIN, /* on the tunnel's cgroup (--tunnel-cgroup), when given */
	KM_HOOK_COUNT
};

/* Programs on demand: the kernel runs a cgroup program on every socket event of its kind once it
 * is attached, whatever the program then does (sockops five times per active open, cgroup_skb on
 * every packet), so these hooks are attached only while some reason needs them. */
#define KM_DEMAND_ADOPTED 0x1  /* pinned by an earlier start: kept until the first sync ends */
#define KM_DEMAND_OPENS 0x2    /* sockops: a subscriber wants open reports (the access log) */
#define KM_DEMAND_WAYPOINTS 0x4 /* sockops: rows send connections to a waypoint or the tunnel */
#define KM_DEMAND_NO_LOOKUP 0x8 /* authz_ingress: an enrolled pod has no sk_lookup program */

struct km_dataplane {
	struct kmesh *skel;
	struct bpf_link *links[KM_HOOK_COUNT];
	unsigned demand[KM_HOOK_COUNT]; /* KM_DEMAND_* of the hooks on demand */
	uint64_t demand_attaches, demand_detaches;
	struct bpf_link *recheck_link; /* the authz re-check iterator; NULL: kernel lacks it */
	struct bpf_link *progress_link; /* open connections' counters (conn_progress.bpf.c); NULL:
					 * not loaded */
	int sk_msg_attached; /* the TLV program is attached to km_sockhash */
	int rdonly_cast;     /* the kernel has bpf_rdonly_cast: km_sock_release, not its compat twin */
	int lock_fd; /* flock on the pin directory: one map writer per directory */
	int cgroup_fd;
	int tunnel_cgroup_fd; /* -1: none */
	int tunnel_auto;      /* --tunnel-cgroup auto: the tunnel names its cgroup (TunnelCgroup) */
	char cgroup_path[512];
	/* map fds, owned by skel */
	int fd_hbone; /* km_hbone: pods whose 15008 the tunnel serves */
	int fd_manage, fd_pod_netns, fd_ipsec_peer, fd_ipsec_cidr, fd_frontend, fd_service, fd_endpoint, fd_backend, fd_port_override;
	int fd_fe_filter; /* km_fe_filter: the frontends' addresses */
	int fd_slot;      /* km_slot: the endpoint slots BPF picks from (slots.h) */
	int fd_authz_ident, fd_authz_list, fd_authz_match, fd_authz_set, fd_authz_cidr, fd_authz_stats;
	int fd_authz_denials; /* km_authz_denials: read by dumps */
	int fd_authz_index;
	/* the IPsec tc programs (owned by skel), attached by ipsec_tc.c when the agent asks */
	int fd_ipsec_encrypt, fd_ipsec_decrypt;
	/* the sk_lookup authorization program (owned by skel), attached per pod by authz_lookup.c */
	int fd_authz_lookup;
	/* the ring buffers programs report into (events.c reads them), and their drop counters */
	int fd_conn_events, fd_bpf_log, fd_event_drops;
	int fd_refused; /* km_refused: connect() calls refused, per reason */
	struct km_node_config node; /* as written to km_config */
	struct km_table_sizes sizes;
	char maps_dir[512];
	char links_dir[512];
	char dir[512];
	int made_dir, made_maps_dir, made_links_dir; /* created by this start */
	int opened; /* km_dataplane_open succeeded */
	/* an upgrade: maps whose layout changed get new maps, filled from the pinned ones, and
	 * take their pins once the new programs are in the links */
	uint32_t from_layout; /* layout of the pinned maps (0: none pinned) */
	struct {
		struct bpf_map *map;
		const struct km_map_migration *mig;
		char path[640];
	} migrating[8];
	int n_migrating;
	uint64_t migrated_entries;
	int adopted_maps;  /* maps found pinned and reused */
	int adopted_links; /* links found pinned and updated in place */
};

/* While buf is set (this thread only), libbpf's messages are not logged; the kernel's last
 * reason for a refusal ("Kernel error message: ...") goes into buf. For calls whose refusals are
 * expected and reported by the caller (ipsec_tc.c). NULL: log them again. */
void km_dataplane_libbpf_capture(char *buf, size_t len);

/* km_config's flags (kmeshctl's switches): written at once. Returns 0 or -errno (logged). */
int km_dataplane_set_flags(struct km_dataplane *dp, uint16_t flags);

/* Returns 0 or -errno, with a message logged that says what to do. */
int km_dataplane_open(struct km_dataplane *dp, const struct km_dataplane_config *cfg);
/* detach != 0: unpin and detach the links, unpin the maps and remove the directories (uninstall).
 * detach == 0: leave everything pinned and attached, so traffic keeps flowing. */
/* Set (on) or clear a reason for an on-demand hook (KM_HOOK_SOCKOPS, KM_HOOK_AUTHZ_INGRESS): the
 * hook is attached, before this returns, when its first reason comes, and detached when its last
 * goes. Returns 0, or a negative errno when it could not be attached (logged; the reason is not
 * recorded). */
int km_dataplane_demand(struct km_dataplane *dp, enum km_dp_hook hook, unsigned reason, int on);
/* Is the hook attached? */
int km_dataplane_attached(const struct km_dataplane *dp, enum km_dp_hook hook);

void km_dataplane_close(struct km_dataplane *dp, int detach);

/* --tunnel-cgroup auto: the tunnel runs in the cgroup with this id; its getsockopt program is
 * attached there (moved from where it was). Returns 0, or -1 with err filled. */
int km_dataplane_tunnel_cgroup(struct km_dataplane *dp, uint64_t id, char *err, size_t errlen);

/* The number of km_slot slots for this many km_endpoint rows. */
uint32_t km_slot_count(uint32_t endpoints);

#endif
