/* ads_client.h — the Delta ADS session with istiod: one gRPC stream subscribed (wildcard) to
 * istio.workload.Address and istio.security.Authorization — or, on demand (--xds-on-demand), to
 * Authorization and only the Addresses this node asks for (demand.h); every response applied and ACKed, or
 * NACKed with error_detail naming the rejected resources while the rest still apply; versions of
 * accepted resources remembered and sent back as initial_resource_versions on every new stream —
 * unless they would make that first request larger than istiod accepts: then it names none,
 * takes istiod's whole state from the first response and removes what that did not name;
 * reconnection with exponential backoff and jitter, immediately after a GOAWAY (connection-age
 * rotation). Its state is what the admin socket shows. */
#ifndef KM_XDS_ADS_CLIENT_H
#define KM_XDS_ADS_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "shared/tls/grpc_stream.h"
#include "services/xds-agent/model/model.h"
#include "services/xds-agent/authz/policy_store.h"
#include "services/xds-agent/ads/xds_apply.h"
#include "services/xds-agent/ads/demand.h"

/* The largest first request of a type sent by default: istiod refuses requests over 4 MiB
 * (ISTIO_GPRC_MAXRECVMSGSIZE) with grpc-status 8; 64 KiB are left for the gRPC framing and for
 * an estimate that is an upper bound. */
#define KM_ADS_MAX_INITIAL_DEFAULT ((4u << 20) - (64u << 10))
/* Bytes of received responses waiting behind the one being applied (istiod does not wait for
 * ACKs): past it, what waits is applied at once, and nothing more is read meanwhile. */
#define KM_ADS_MAX_QUEUED_DEFAULT (64u << 20)

/* What istiod needs to know about this node (istio-wire §4.1-4.2). */
struct km_ads_node {
	const char *instance_ip;
	const char *pod_name;
	const char *pod_namespace;
	const char *node_name;
	const char *cluster_id;
	const char *mesh_id;
	const char *network;
	const char *service_account;
};

struct km_ads_type {
	const char *type_url;
	/* where the versions of accepted resources are kept: on the entries holding them */
	void (*set_version)(void *store, const char *name, const char *version);
	size_t (*each_version)(const void *store, km_version_cb cb, void *arg);
	/* mark and sweep against a whole state (model.h, policy_store.h); sweep also flushes */
	size_t (*mark)(void *store);
	size_t (*sweep)(void *store);
	void *store;
	char last_nonce[128];
	uint64_t responses, acks, nacks;
	char last_nack[1024];
	int synced; /* a response was received on the current stream */
	/* the current stream's first request named no versions: its first response is the whole
	 * state, and what it does not name is swept after it */
	int withheld;
	uint64_t withholds; /* streams begun so */
	uint64_t swept;     /* resources removed by those sweeps */
	uint64_t streamed;  /* responses whose applying began while they were still arriving */
};

/* A received response waiting to be applied (responses apply one after another, in order). */
struct km_ads_pending {
	struct km_ads_pending *next;
	uint8_t *msg;
	size_t len;
	uint64_t received_us;
	int borrowed; /* msg is still the stream's: the response is arriving (a streamed job) */
};

/* The Address response being applied, a slice of resources per loop iteration, so a push of the
 * whole mesh neither holds the event loop (pings, the map writer's replies, the admin socket)
 * nor keeps the map writer waiting until the last resource is decoded. */
struct km_ads_job {
	int active;
	int streaming; /* begun while the response was arriving (p->borrowed until it is whole) */
	struct km_ads_pending *p;
	struct km_response_view v;
	struct km_xds_result res;
};

struct km_ads_client {
	uv_loop_t *loop;
	struct km_grpc_stream_config grpc_cfg;
	struct km_ads_node node;
	char node_id[512];
	struct km_grpc_stream stream;
	int stream_open; /* the stream struct is in use (until its on_closed) */
	int connected;   /* the call is open */
	uv_timer_t retry;
	uint64_t backoff_ms;
	size_t max_initial; /* the largest first request of a type (KM_ADS_MAX_INITIAL_DEFAULT) */
	int fast_reconnect;
	int stopping;
	struct km_ads_type address, authz;
	struct km_model *model;
	struct km_policy_store *policies;
	void (*on_applied)(void *arg); /* model changed: submit its ops */
	void *arg;
	uint64_t connects, disconnects;
	uint64_t last_response_us; /* monotonic time the last response was complete */
	struct km_ads_pending *queue_head, *queue_tail;
	size_t queued_bytes;
	size_t max_queued; /* KM_ADS_MAX_QUEUED_DEFAULT */
	struct km_ads_job job;
	const uint8_t *declined; /* the response arriving is not to be streamed (not Address) */
	uv_idle_t work; /* runs the job's slices */
	size_t slice; /* resources per slice */
	/* Optional: while it returns 1 (ops waiting for the map writer pile up), slices wait, so a
	 * bulk push holds its ops as a bounded queue rather than all of them at once. Call
	 * km_ads_client_resume when the backlog shrinks; a timer re-checks in any case. */
	int (*backlogged)(void *arg);
	uv_timer_t recheck;
	char last_error[256];
	/* On demand (km_ads_client_set_on_demand): the Address stream subscribes to nothing at its
	 * start (subscribe and unsubscribe "*"), then to each demanded key, sent by demand_flush. */
	int on_demand;
	struct km_demand demand;
	uv_timer_t demand_flush;
	uint64_t demand_requests; /* subscription requests sent */
	size_t demand_initial;    /* keys[0..) sent in the stream's first request (as many as fit) */
	int warned_policies;      /* policies in force were warned about (on demand) */
	const char *demand_file;  /* where the keys are kept (NULL: not kept) */
	uv_timer_t demand_save;   /* writes them a moment after they change */
	int demand_save_failing;  /* the last write failed (said once until one succeeds) */
	/* istiod pushes changes only of the names it sent (and of this node's workloads): a
	 * workload that joins a demanded service later is not pushed. So every refresh period the
	 * keys are unsubscribed and subscribed again, which istiod answers with what they name now
	 * (subscribing a name held already would change nothing, which istiod refuses). */
	uv_timer_t demand_refresh;
	uint64_t demand_refreshes;
};

int km_ads_client_start(struct km_ads_client *c, uv_loop_t *loop,
			const struct km_grpc_stream_config *grpc, const struct km_ads_node *node,
			struct km_model *model, struct km_policy_store *policies,
			void (*on_applied)(void *arg), void *arg);
void km_ads_client_stop(struct km_ads_client *c);
/* Ask istiod only for what this node demands, holding at most max keys (0: the default), kept
 * in file (NULL: not kept; the keys a previous run kept there are demanded now), every key
 * asked again each refresh_s seconds (0: never; see demand_refresh). Call after
 * km_ads_client_start and before the loop runs (the stream opens on the loop). */
void km_ads_client_set_on_demand(struct km_ads_client *c, size_t max, const char *file,
				 unsigned refresh_s);
/* Demand an Address key (demand.h): sent at once on an open stream (coalesced with the demands
 * of the same loop iteration), else when the stream opens. Returns km_demand_add's answer;
 * KM_DEMAND_INVALID also when the client is not on demand. */
enum km_demand_rc km_ads_client_demand(struct km_ads_client *c, const char *key);
/* A spontaneous request subscribing n_sub names and unsubscribing n_unsub (exposed for tests). */
uint8_t *km_ads_build_subscription(struct km_ads_client *c, struct km_ads_type *t,
				   char *const *sub, size_t n_sub, char *const *unsub,
				   size_t n_unsub, size_t *len);
/* Continue applying after a backlog pause (see backlogged). */
void km_ads_client_resume(struct km_ads_client *c);
/* The node id sent to istiod: ztunnel~<ip>~<pod>.<ns>~<ns>.svc.cluster.local */
void km_ads_node_id(const struct km_ads_node *n, char *out, size_t len);
/* How many resources of the type are held with a version. */
size_t km_ads_versions_held(const struct km_ads_type *t);
/* Build a request (the initial one of a type when initial != 0: with every version held unless
 * t->withheld) — exposed for tests. */
uint8_t *km_ads_build_request(struct km_ads_client *c, struct km_ads_type *t, int initial,
			      const char *nonce, const char *error, size_t *len);
/* The first request of a type on a new stream: with every version held if that fits in
 * c->max_initial, else with none (t->withheld set, and the store marked for the sweep that
 * follows istiod's first response). */
uint8_t *km_ads_initial_request(struct km_ads_client *c, struct km_ads_type *t, size_t *len);
/* After the type's first response on a stream that withheld its versions: remove what it did
 * not name (nothing if a rejected resource could not be named). Returns how many went. */
size_t km_ads_sweep_after_whole_state(struct km_ads_client *c, struct km_ads_type *t,
				      const struct km_xds_result *res);

#endif
