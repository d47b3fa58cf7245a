/* pod_sockets.h — the tunnel's sockets inside enrolled pods (PodSockets, role tunnel): the map
 * writer, which enters pods' network namespaces anyway (sk_lookup, re-checks), makes a listener
 * and unbound TCP sockets there and sends them with its reply over SCM_RIGHTS, so the tunnel,
 * which terminates mutual TLS from the network, needs no CAP_SYS_ADMIN (docs/tunnel.md).
 * Only for an enrolled pod, and only in the namespace whose cookie it was enrolled with (a path
 * reused by another pod is refused). */
#ifndef KM_MW_POD_SOCKETS_H
#define KM_MW_POD_SOCKETS_H

#include "ipc/server.h"
#include "services/map-writer/tables.h"

#define KM_POD_SOCKETS_MAX 64 /* sockets in one reply (ipc/conn.h: KM_CONN_MAX_FDS) */

/* Answer env (a PodSockets request) on s, with the sockets attached; returns the reply's code.
 * A listener on KM_HBONE_PORT also records the pod's addresses in km_hbone: the kernel's
 * authorization leaves SYNs to that port to the tunnel. */
Kmesh__Ipc__Code km_mw_pod_sockets(struct km_tables *t, struct km_ipc_session *s,
				   const km_envelope *env);
/* The pod is unenrolled: its km_hbone rows go. */
void km_mw_pod_sockets_forget(struct km_tables *t, uint64_t netns_cookie);

#endif
