/* admin.h — the IPsec agent's admin socket (the shared IPC server, admin role: root or the
 * agent's own uid): peers added or removed by hand (VMs, debugging), KmeshNodeInfo watch events
 * injected (kmeshctl inject), a JSON dump of keys (SPIs
 * only, never key material), peers and counters, and run-time log levels. */
#ifndef KM_IPSEC_ADMIN_H
#define KM_IPSEC_ADMIN_H

#include "ipc/server.h"
#include "services/ipsec-agent/agent.h"

/* km_ipc_server_ops; arg is a struct km_ipsec_agent. */
int km_ipsec_admin_allowed(void *arg, Kmesh__Ipc__Role role, uid_t uid, gid_t gid);
void km_ipsec_admin_request(void *arg, struct km_ipc_session *s, const km_envelope *env);

#endif
