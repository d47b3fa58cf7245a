/* tunnel.h — kmesh-tunnel's state: the node's enrolled pods (pods.h, fed by the CNI agent) and
 * the workload certificates they need (certs.h), its socket (the CNI agent's feed, kmeshctl's
 * admin requests) and its metrics file. The process holds workload private keys and, once HBONE
 * lands (issue 48), terminates mutual TLS from the network, so it holds no capability at all:
 * docs/tunnel.md, docs/security.md. */
#ifndef KM_TUNNEL_H
#define KM_TUNNEL_H

#include <uv.h>

#include "ipc/server.h"
#include "services/tunnel/certs.h"
#include "services/tunnel/inbound.h"
#include "services/tunnel/outbound.h"
#include "services/tunnel/pods.h"
#include "shared/prom_file.h"

struct km_tunnel {
	uv_loop_t *loop;
	struct km_tunnel_pods pods;
	struct km_certs certs;
	struct km_inbound inbound; /* HBONE on the pods' 15008 (--hbone-inbound) */
	int inbound_on;
	struct km_outbound outbound; /* HBONE out of the pods (--hbone-outbound-address) */
	int outbound_on;
	struct km_ipc_server srv;
	struct km_prom_file metrics;
	uint64_t feeds;        /* TunnelPods messages taken */
	uint64_t feeds_refused; /* ... from a peer that may not send them */
	const char *ca_address; /* for the dump */
};

/* Every pod and certificate, as kmeshctl dump certs shows them (a new reference). */
json_t *km_tunnel_dump(const struct km_tunnel *t);

/* The socket's server ops (admin.c): role cni from uid 0 (the CNI agent's feed), role admin from
 * uid 0 or this process's uid (kmeshctl). */
int km_tunnel_allowed(void *arg, Kmesh__Ipc__Role role, uid_t uid, gid_t gid);
void km_tunnel_request(void *arg, struct km_ipc_session *s, const km_envelope *env);

/* Write the metrics file now (metrics.c). */
void km_tunnel_metrics_write(struct km_tunnel *t);

#endif
