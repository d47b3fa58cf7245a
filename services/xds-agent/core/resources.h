/* resources.h — the agent's in-memory form of Istio workload-API resources (istio.workload
 * Service and Workload: the fields the data plane and later features use), with ownership and
 * equality. Produced by resource_pb.c from decoded messages (xDS, or the JSON file mapped to the
 * same messages); consumed by the model. */
#ifndef KM_XDS_RESOURCES_H
#define KM_XDS_RESOURCES_H

#include <stddef.h>
#include <stdint.h>

#include "kmesh_maps.h"
#include "services/xds-agent/core/profile_pool.h"

/* Bounds on what one resource may carry; the converter rejects anything larger, clearly. The
 * workload's counts are 16-bit: every bound here is below 65536. */
#define KM_RES_MAX_STRING 1024
#define KM_RES_MAX_NAME 253
#define KM_RES_MAX_ADDRESSES 16
#define KM_RES_MAX_VIPS 64
#define KM_RES_MAX_PORTS 4096
#define KM_RES_MAX_SERVICES_PER_WORKLOAD 4096
#define KM_RES_MAX_POLICIES 1024
#define KM_RES_MAX_SCOPES 6

struct km_port {
	uint32_t service_port;
	uint32_t target_port; /* 0 = same as service_port */
};

enum km_waypoint_kind {
	KM_WAYPOINT_NONE = 0,
	KM_WAYPOINT_ADDRESS = 1,  /* addr is set */
	KM_WAYPOINT_HOSTNAME = 2, /* resolved through the service "<ns>/<hostname>" */
};

struct km_waypoint {
	uint32_t kind; /* enum km_waypoint_kind */
	uint32_t hbone_port;
	struct km_addr addr;
	char *service; /* hostname form: the waypoint service's resource name */
};

/* Istio LoadBalancing.Scope values (routing preference). */
enum km_scope {
	KM_SCOPE_REGION = 1,
	KM_SCOPE_ZONE = 2,
	KM_SCOPE_SUBZONE = 3,
	KM_SCOPE_NODE = 4,
	KM_SCOPE_CLUSTER = 5,
	KM_SCOPE_NETWORK = 6,
};

/* A service. Counts and flags are narrow (each bounded above by KM_RES_MAX_*): 96 bytes, not
 * 152 (one per service, 100,000 at 1M workloads). */
struct km_service_res {
	char *name; /* resource name "<namespace>/<hostname>" */
	char *svc_name;
	char *namespace;
	char *hostname;
	struct km_addr *vips;
	struct km_port *ports;
	struct km_waypoint waypoint;
	uint16_t n_vips, n_ports;
	uint8_t scopes[KM_RES_MAX_SCOPES]; /* routing preference, enum km_scope */
	uint8_t n_scopes;
	uint8_t lb_mode;         /* enum km_lb_mode */
	uint8_t allow_unhealthy; /* health_policy ALLOW_ALL */
	uint8_t packed; /* everything in this one allocation (km_service_res_pack) */
	uint8_t scratch; /* decoded into a scratch block (pb_scratch.h): see km_workload_res.scratch */
};

enum km_workload_status {
	KM_WORKLOAD_HEALTHY = 0,
	KM_WORKLOAD_UNHEALTHY = 1,
};

/* A workload's fields that few workloads set, kept apart so the others do not carry them. */
struct km_wl_rare {
	struct km_waypoint wp;
	char *hostname; /* a workload reached by name (no addresses from istiod), else NULL */
	uint32_t capacity; /* relative weight (istiod's default 1; 0 weighs as 1) */
};

/* One entry of Workload.services: the service and this workload's port mapping for it, n_ports
 * ports of the workload's one port array from port_at (km_membership_ports): 16 bytes, where a
 * pointer and a count of its own were 24 (one per membership, most workloads have one). */
struct km_membership {
	char *service; /* "<ns>/<hostname>" */
	uint32_t port_at, n_ports;
};

struct km_workload_res {
	/* Its uid (the resource name): read it with km_workload_uid or km_workload_uid_is. The text
	 * itself, except in a kept workload whose uid is "<prefix>/<name>" (istiod's Kubernetes uids
	 * are "<cluster>//Pod/<namespace>/<name>"): that one keeps only the prefix, interned and
	 * shared by the namespace's pods, and uid_split is set. */
	char *uid_text;
	char *name;
	/* never NULL; a kept (packed) workload's are shared profiles (profile_pool.h): read only */
	struct km_wl_who *who;     /* namespace, identity, metrics' labels */
	struct km_wl_where *where; /* node, locality */
	struct km_addr *addrs;
	struct km_membership *services; /* sorted by service, unique */
	char **policies; /* authorization_policies */
	/* what few workloads have, out of line: an unpacked workload's own (waypoint kind NONE,
	 * hostname NULL, capacity 1: none); a kept one's NULL when it has none of them (most).
	 * Read them with km_wl_waypoint, km_wl_hostname and km_wl_capacity. */
	struct km_wl_rare *rare;
	uint16_t n_addrs, n_services, n_policies; /* bounded by KM_RES_MAX_* (below 65536) */
	uint8_t status : 1;       /* enum km_workload_status (checked when converted) */
	uint8_t host_network : 1; /* NetworkMode HOST_NETWORK: not looked up by IP */
	uint8_t tunnel_hbone : 1; /* TunnelProtocol HBONE: reached over HBONE (issue 49) */
	uint8_t packed : 1; /* one allocation, shared strings interned (km_workload_res_pack) */
	uint8_t uid_split : 1; /* uid_text is the uid's prefix: the uid is uid_text "/" name */
	/* It and all its parts live in a decode's scratch block (pb_scratch.h), gone at the next
	 * resource: free does nothing, pack copies it out, and it is never kept as it is (a pack
	 * that fails leaves it scratch: the caller drops it). Decoding a push this way takes no
	 * malloc per string. */
	uint8_t scratch : 1;
};

/* Room for any workload's uid, its NUL included. */
#define KM_UID_BUF (KM_RES_MAX_STRING + 2)
/* w's uid: its own text, or for a kept workload that keeps it split, written into buf
 * (KM_UID_BUF bytes). Never NULL for a workload that has a uid. */
const char *km_workload_uid(const struct km_workload_res *w, char *buf);
/* Whether w's uid is uid (no copy made). */
int km_workload_uid_is(const struct km_workload_res *w, const char *uid);
/* A malloc'd copy of w's uid; NULL when out of memory (or w has none). */
char *km_workload_uid_dup(const struct km_workload_res *w);

/* Visiting (name, xDS version) pairs of the resources a store holds. The name and the version
 * text may be written for the call (km_workload_uid, xds_version.h): valid only until the
 * callback returns. */
typedef void (*km_version_cb)(void *arg, const char *name, const char *version);

void km_service_res_free(struct km_service_res *s);
/* A workload's waypoint (kind NONE when it has none), never NULL. */
const struct km_waypoint *km_wl_waypoint(const struct km_workload_res *w);
/* The hostname a workload is reached by, or NULL. */
const char *km_wl_hostname(const struct km_workload_res *w);
/* Its capacity (Workload.capacity as sent; 1 when istiod sent none). */
uint32_t km_wl_capacity(const struct km_workload_res *w);
/* An empty workload, its who, where and rare fields its own (in its allocation); NULL when out of
 * memory. */
struct km_workload_res *km_workload_res_new(void);
void km_workload_res_free(struct km_workload_res *w);
/* An empty workload as km_workload_res_new makes, in memory from alloc(data, size) (a
 * protobuf-c allocator's alloc; a scratch block's), marked scratch. NULL when out of memory. */
struct km_workload_res *km_workload_res_new_scratch(void *(*alloc)(void *data, size_t size),
						    void *data);
/* The ports of w's membership m (n_ports of them). A kept (packed) workload's port array follows
 * its memberships; an unpacked one's is km_workload_res_port_array's. */
const struct km_port *km_membership_ports(const struct km_workload_res *w,
					  const struct km_membership *m);
/* Where an unpacked workload keeps its port array: its producer sets it, allocated as the
 * workload is (malloc for km_workload_res_new, which free releases; the scratch allocator for a
 * scratch one), and each membership's port_at and n_ports within it. */
struct km_port **km_workload_res_port_array(struct km_workload_res *w);
/* An unpacked copy of w (packed or not) with these addresses instead of its own (at most
 * KM_RES_MAX_ADDRESSES); NULL when out of memory. */
struct km_workload_res *km_workload_res_with_addrs(const struct km_workload_res *w,
						   const struct km_addr *addrs, size_t n);
/* The same resource in one allocation (its strings and arrays after the struct), for keeping:
 * a resource is otherwise a dozen small allocations. A workload's who and where become shared
 * profiles (profile_pool.h), and its other strings that many workloads repeat (memberships'
 * services, policies, its waypoint's service) interned strings (strpool.h); free it with
 * km_workload_res_free, which releases them. Consumes r; on allocation failure r is returned as
 * it was. */
struct km_service_res *km_service_res_pack(struct km_service_res *r);
struct km_workload_res *km_workload_res_pack(struct km_workload_res *r);
/* Field-by-field equality of everything the model uses. */
int km_service_res_equal(const struct km_service_res *a, const struct km_service_res *b);
int km_workload_res_equal(const struct km_workload_res *a, const struct km_workload_res *b);
int km_waypoint_equal(const struct km_waypoint *a, const struct km_waypoint *b);
/* Sort w->services by name. Returns -1 if a service is listed twice. */
int km_workload_res_normalize(struct km_workload_res *w);
/* The membership of the workload in service, or NULL (binary search). */
const struct km_membership *km_workload_membership(const struct km_workload_res *w,
						   const char *service);
/* Target port of service_port on workload w: its own mapping for the service (its membership m,
 * or NULL for none) if it has one, else the service's. 0 if the service has no such port. */
uint32_t km_target_port(const struct km_service_res *s, const struct km_workload_res *w,
			const struct km_membership *m, uint32_t service_port);

#endif
