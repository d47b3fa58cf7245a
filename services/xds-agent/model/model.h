/* model.h — the workload model: services and workloads by name, their ids, and the agent's mirror
 * of the routing tables (which backend sits in which endpoint slot). Every change is turned into
 * table operations appended to an oplist, in an order that never lets BPF see a dangling row:
 *   - a backend row before any endpoint or frontend that names it;
 *   - an endpoint row before the service count that exposes it;
 *   - a service row before its frontend rows;
 *   - removals in the reverse order (frontends, then service, then endpoints, then backend).
 * Endpoint slots are dense per (service, priority); removal moves the last slot into the hole.
 * Additive upserts are grouped by table when the op list is settled (oplist.h), so a bulk load
 * reaches the map writer as long runs of one table.
 *
 * Ownership: upsert functions take ownership of the resource passed in. Changes are buffered
 * per service; km_model_flush() emits the final counts and trailing deletes. Call it after each
 * group of changes (one file reload, one xDS response). */
#ifndef KM_XDS_MODEL_H
#define KM_XDS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "services/xds-agent/core/ids.h"
#include "services/xds-agent/core/name_map.h"
#include "services/xds-agent/core/oplist.h"
#include "services/xds-agent/core/resources.h"
#include "services/xds-agent/model/addr_index.h"

struct km_model_svc;
struct km_model_wl;
struct mdl_displaced;
struct mdl_fe_slot;
struct km_authz;

/* Where this node is: the reference for locality priorities. The node name is configured; the
 * rest is learnt from the first workload seen on this node. */
struct km_model_local {
	char *node;
	char *region, *zone, *subzone, *cluster_id, *network;
	int known;
};

struct km_model {
	struct km_ids ids;
	struct km_model_local local;
	struct km_model_svc *services; /* a list (utlist.h), oldest first; includes names only
					* referenced by workloads */
	struct km_name_map svc_index;  /* the same services for lookups (name_map.h) */
	/* Workloads are found by uid through the id table (their id is the uid's home id), or,
	 * for the few displaced by an id collision, here; no per-workload index entry. */
	struct mdl_displaced *displaced;
	struct km_model_svc **dirty;   /* services whose count row must be re-emitted at flush */
	size_t n_dirty, cap_dirty;
	size_t n_services; /* with a resource */
	size_t n_workloads;
	uint64_t workload_changes;   /* workloads put changed or removed (authorization decisions
				      * read them: authz_query.h) */
	struct km_oplist *out;
	struct km_authz *authz;      /* optional: workloads' identities go to the policy compiler */
	uint16_t waypoint_data_port; /* port dialled on waypoint pods (0 = their HBONE port) */
	/* HBONE outbound (kmesh_maps.h): the tunnel's listener, given as the waypoint of every
	 * workload reached over HBONE from here (tunnel_on 0: none is) */
	struct km_addr tunnel_addr;
	int tunnel_on;
	int waypoint_hbone; /* with the tunnel: waypoints are reached over HBONE through it too */
	int hbone_over_ipsec; /* 1: a workload of a node this one exchanges IPsec with is tunneled
			       * too; 0: the kernel keeps it (KM_TUNNEL_UNLESS_IPSEC) */
	int p2c_all;                 /* every service by power of two choices ... */
	char **p2c_names;            /* ... or these (service names, namespace/hostname) */
	size_t n_p2c_names;
	struct km_addr_index wl_addrs; /* workload address -> its workloads' entries */
	struct km_addr_index vips;     /* service VIP -> its services' entries */
	/* optional (the DNS proxy): told of each service resource as it comes (add 1) and goes
	 * (add 0; before it is freed) */
	void (*on_service)(void *arg, const struct km_service_res *r, int add);
	void *on_service_arg;
	/* optional (hostname workloads): a workload put with a hostname and no address goes through
	 * put, which returns the resource to keep (it may fill in addresses; it consumes r); gone is
	 * told of every workload removed */
	struct km_workload_res *(*hostname_put)(void *arg, struct km_workload_res *r);
	void (*hostname_gone)(void *arg, const char *uid);
	void *hostname_arg;
	int index_oom;                  /* an address could not be indexed */
	/* every holder of every frontend key (model_frontends.c) */
	struct mdl_fe_slot *fe_slots;
	size_t fe_cap, fe_used;
};

void km_model_init(struct km_model *m, struct km_oplist *out, km_ids_hash_fn hash);
/* Feed workloads (identities, policy lists) to an authorization compiler writing to the same
 * oplist; flushed and replayed with the model. */
void km_model_set_authz(struct km_model *m, struct km_authz *authz);
/* This node's name (locality priorities compare workloads against it). */
void km_model_set_local_node(struct km_model *m, const char *node);
/* The port waypoint pods are dialled on (Kmesh's waypoints read the TLV on 15019). */
void km_model_set_waypoint_data_port(struct km_model *m, uint16_t port);
/* HBONE outbound: connections to a workload whose tunnel_protocol is HBONE, not on this node and
 * without a waypoint of its own go to the tunnel at addr (its KM_TUNNEL_OUTBOUND_PORT). NULL:
 * none (the default). Set before the first workload. */
void km_model_set_tunnel(struct km_model *m, const struct km_addr *addr);
/* With the tunnel: reach waypoints over HBONE through it (1), or with Kmesh's TLV on their
 * waypoint_data_port (0, the only way without the tunnel). */
void km_model_set_waypoint_hbone(struct km_model *m, int on);
/* With the tunnel: a workload reached over HBONE on a node this one exchanges IPsec with (a node
 * of this data plane; the kernel knows them by their pod CIDRs) goes through the tunnel too (1),
 * or stays on the kernel path, which IPsec protects (0, the default). Set before the first
 * workload. */
void km_model_set_hbone_over_ipsec(struct km_model *m, int on);
/* Why a connection from this node to workload w (NULL: none known at its address), through
 * service svc (NULL: by pod IP), took its road, for the access log: tunneled (HBONE through the
 * tunnel): "waypoint" or "hbone_workload"; else the kernel's path, because: "outside_mesh",
 * "same_node", "no_hbone" (its tunnel_protocol is NONE), "tunnel_off", "host_network",
 * "waypoint_tlv", "no_ipv4" (the tunnel's family), or "ipsec" (a pod of a node this one
 * exchanges IPsec with, --hbone-over-ipsec kernel). */
const char *km_model_route_why(const struct km_model *m, const struct km_workload_res *w,
			       const struct km_service_res *svc, int tunneled);
/* Which services pick endpoints by power of two choices on live connections: "none", "all", or
 * a comma-separated list of namespace/hostname. Returns -1 (model unchanged) on a bad list. */
int km_model_set_p2c(struct km_model *m, const char *spec);
void km_model_free(struct km_model *m);

void km_model_upsert_service(struct km_model *m, struct km_service_res *res);
void km_model_remove_service(struct km_model *m, const char *name);
void km_model_upsert_workload(struct km_model *m, struct km_workload_res *res);
void km_model_remove_workload(struct km_model *m, const char *uid);
void km_model_flush(struct km_model *m);

/* Emit every row of the current state as upserts, in dependency order (after a reconnect). */
void km_model_replay(struct km_model *m);

const struct km_service_res *km_model_find_service(const struct km_model *m, const char *name);
const struct km_workload_res *km_model_find_workload(const struct km_model *m, const char *uid);
/* The addresses a name for service `name` resolves to, of one family (v4 1: IPv4, else IPv6):
 * its VIPs, or for a headless service (none) its healthy members' addresses, each once, in the
 * model's order, at most max into out (km_model_service_address_bound's count takes all).
 * Returns how many, or -1 when the model holds no such service. */
int km_model_service_addresses(const struct km_model *m, const char *name, int v4,
			       struct km_addr *out, size_t max);
/* How many addresses km_model_service_addresses may give for `name`, of both families and before
 * duplicates are dropped: a buffer this large holds all of them (0 for an unknown service). */
size_t km_model_service_address_bound(const struct km_model *m, const char *name);
/* Route workloads named by hostname through put and gone (NULL: stop). */
void km_model_watch_hostnames(struct km_model *m,
			      struct km_workload_res *(*put)(void *arg, struct km_workload_res *r),
			      void (*gone)(void *arg, const char *uid), void *arg);
/* Tell f of every service the model holds and of each one that comes or goes from now on
 * (NULL: stop). */
void km_model_watch_services(struct km_model *m,
			     void (*f)(void *arg, const struct km_service_res *r, int add), void *arg);
/* The workload holding an address (the one that took it last), or NULL; the service whose VIP
 * it is, or NULL. O(1). */
const struct km_workload_res *km_model_workload_at(const struct km_model *m,
						   const struct km_addr *a);
const struct km_service_res *km_model_service_at(const struct km_model *m, const struct km_addr *a);
/* The workload with this id (the authorization tables' workload_id), or NULL. */
const struct km_workload_res *km_model_workload_by_id(const struct km_model *m, uint32_t id);

/* Iterate resource names (for diffing a new snapshot against the model, dumps); the visit stops
 * when cb returns nonzero. A name is valid until cb returns (a workload's uid may be written
 * for the call: km_workload_uid). */
typedef int (*km_model_name_cb)(void *arg, const char *name);
void km_model_each_service(const struct km_model *m, km_model_name_cb cb, void *arg);
void km_model_each_workload(const struct km_model *m, km_model_name_cb cb, void *arg);

/* istiod's version of a resource, kept on its entry for initial_resource_versions; it goes when
 * the resource goes. each_version returns how many resources have one (cb may be NULL). */
void km_model_set_version(struct km_model *m, const char *name, const char *version);
size_t km_model_each_version(const struct km_model *m, km_version_cb cb, void *arg);

/* Mark and sweep against a whole state from istiod (a stream whose first request named no
 * versions: its first response is everything istiod has). km_model_mark_unconfirmed marks every
 * service and workload held and returns how many; an upsert unmarks its resource, and
 * km_model_confirm unmarks one by name (istiod named it, but it was rejected: its previous
 * version stays); km_model_sweep_unconfirmed removes those still marked and returns how many
 * (km_model_flush follows, as after any change). */
size_t km_model_mark_unconfirmed(struct km_model *m);
void km_model_confirm(struct km_model *m, const char *name);
size_t km_model_sweep_unconfirmed(struct km_model *m);

/* The id of a service or workload by name (0 if unknown), and the name behind an id (NULL), a
 * workload's written into buf (KM_UID_BUF bytes) when it keeps its uid split. */
uint32_t km_model_id_of(const struct km_model *m, const char *name);
const char *km_model_name_of(const struct km_model *m, uint32_t id, char *buf);

/* Counters for dumps and tests. */
struct km_model_stats {
	size_t services, workloads, endpoints, port_overrides, pending_waypoints;
};
void km_model_stats(const struct km_model *m, struct km_model_stats *st);

/* Endpoints of a service at a priority, in slot order (tests, dumps). */
size_t km_model_endpoints(const struct km_model *m, const char *service, uint32_t prio,
			  const uint32_t **backend_ids);

#endif
