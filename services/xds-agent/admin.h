/* admin.h — the xDS agent's admin socket (the shared IPC server, admin role: root or the agent's
 * own uid): a JSON dump of the model, the policies (with each one's allow/deny counters, asked
 * of the map writer for each dump), the istiod connection (connected, nonces, ACK/NACK counts,
 * versions held) and the map-writer link; run-time log levels; injected events (inject.h); and
 * demanded Address keys (an agent on demand: demand.h). */
#ifndef KM_XDS_ADMIN_H
#define KM_XDS_ADMIN_H

#include "ipc/server.h"
#include "shared/latency.h"
#include "services/xds-agent/ads/ads_client.h"
#include "services/xds-agent/authz/authz_compile.h"
#include "services/xds-agent/telemetry/authz_metrics.h"
#include "services/xds-agent/model/model.h"
#include "services/xds-agent/authz/policy_store.h"
#include "services/xds-agent/transport/resync.h"
#include "services/xds-agent/telemetry/telemetry.h"
#include "services/xds-agent/transport/writer_link.h"
#include "services/xds-agent/tunnel_notices.h"

struct km_dns_server;
struct km_hostname_resolver;

struct km_agent_state {
	struct km_model *model;            /* changed only by inject */
	struct km_policy_store *policies;
	const struct km_authz *authz; /* the compiled policies (may be NULL) */
	struct km_ads_client *ads; /* NULL in file mode; demands go to it */
	struct km_writer_link *link; /* also asked for the policies' decision counters */
	const struct km_resync *resync; /* rewrites after refusals (may be NULL) */
	const char *source; /* "istiod host:port" or "file PATH" */
	const struct km_latency *update_latency;
	uint64_t last_synced_unix_us; /* wall clock of the last time every op was applied */
	/* After an injected event (inject.h) changed the model: send its ops. */
	void (*on_injected)(void *arg);
	void *arg;
	struct km_telemetry *telemetry; /* the access log's switch (SetConfig) */
	/* After the access log was switched: ask the map writer for open reports, or not. */
	void (*on_access_log)(void *arg);
	const struct km_authz_metrics *authz_metrics; /* decision counters for /metrics (may be NULL) */
	const struct km_dns_server *dns; /* the DNS proxy, for /metrics (NULL: off) */
	const struct km_hostname_resolver *hostnames; /* workloads named by hostname (may be NULL) */
	uid_t tunnel_uid; /* may take the role tunnel (Authorize only); (uid_t)-1: root alone */
	uint64_t authorized, denied; /* Authorize answers */
	struct km_tunnel_notices *notices; /* sessions told of the generations' changes (may be NULL) */
};

/* The map writer's per-policy decision counters, for the dump (rows sorted by stat id), or why
 * they are missing. */
struct km_authz_counters {
	const Kmesh__Ipc__AuthzStatRow **rows;
	size_t n;
	const char *missing; /* non-NULL: why there are none */
};

/* The dump, as a JSON text (malloc'd); lists hold at most max_items (0 = 1000). counters may be
 * NULL (no authz section counts). */
char *km_agent_dump_json(const struct km_agent_state *st, size_t max_items,
			 const struct km_authz_counters *counters);

/* km_ipc_server_ops for the admin socket; arg is a struct km_agent_state. Role admin: root or
 * this uid; role tunnel (Authorize, and ConnEvents: its HBONE streams' reports): root or
 * tunnel_uid. */
int km_agent_admin_allowed(void *arg, Kmesh__Ipc__Role role, uid_t uid, gid_t gid);
void km_agent_admin_request(void *arg, struct km_ipc_session *s, const km_envelope *env);
void km_agent_admin_closed(void *arg, struct km_ipc_session *s);

#endif
