/* procs.h — the local kmesh processes kmeshctl talks to, each over its Unix socket as the admin
 * role: the map writer, the xDS agent, the IPsec agent and the tunnel. Paths come from the global flags. */
#ifndef KM_KMESHCTL_PROCS_H
#define KM_KMESHCTL_PROCS_H

#include <jansson.h>

#include "ipc/client_sync.h"
#include "tools/kmeshctl/output.h"

enum km_proc { KM_PROC_MAP_WRITER, KM_PROC_XDS_AGENT, KM_PROC_IPSEC_AGENT, KM_PROC_TUNNEL,
	       KM_PROC_COUNT };

struct km_ctl {
	const char *socket[KM_PROC_COUNT];
	enum km_out_format format;
	int timeout_ms;
	const char *kubeconfig; /* secret, waypoint: --kubeconfig / KUBECONFIG (NULL: look further) */
};

/* "map-writer", "xds-agent", "ipsec-agent", "tunnel". */
const char *km_proc_name(enum km_proc p);
/* By that name; returns 0, or -1. */
int km_proc_parse(const char *name, enum km_proc *out);

/* Connect and say hello. Returns 0, or -1 with err saying which process could not be reached
 * where, and why. */
int km_proc_connect(const struct km_ctl *ctl, enum km_proc p, struct km_sync_client *cl, char *err,
		    size_t errlen);
/* One request on a fresh connection; *reply (free with km_msg_free) must be OK. Returns 0, or
 * -1 with err filled (the process's own message when it refused). */
int km_proc_call(const struct km_ctl *ctl, enum km_proc p, km_envelope *req, km_envelope **reply,
		 char *err, size_t errlen);
/* Say hello to every process: one object each, {process, socket, version, log_level, pid}, or
 * {process, socket, error} for one that cannot be reached (counted in *unreachable). */
json_t *km_proc_hellos(const struct km_ctl *ctl, int *unreachable);
/* Print rows (taking them) for a command over every process; when none answered (unreachable
 * == KM_PROC_COUNT) say so on stderr and return 1, else 0: a node may run no IPsec agent
 * and no tunnel. */
int km_proc_print_rows(const struct km_ctl *ctl, json_t *rows, int unreachable);
/* An agent's state as JSON (AgentDumpRequest, lists cut at max_items; 0: the agent's default), a
 * new reference; NULL with err filled. */
json_t *km_proc_agent_dump(const struct km_ctl *ctl, enum km_proc p, unsigned max_items, char *err,
			   size_t errlen);

#endif
