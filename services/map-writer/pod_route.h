/* pod_route.h — inside an enrolled pod's network namespace, what lets the tunnel's connections to
 * the pod's application come from the HBONE caller's address, as ztunnel's do (kmesh_maps.h,
 * KM_TUNNEL_APP_MARK): a rule sending packets with that mark to table KM_TUNNEL_APP_TABLE, whose
 * one route makes every address local on the loopback device (marked packets never leave the
 * pod; the application's replies to the caller's address come back over loopback to the tunnel's
 * transparent socket). That rule must come before the local table's, which is moved from
 * preference 0 to KM_POD_ROUTE_LOCAL_PRIORITY: a marked SYN to the pod's own address is then
 * routed by the loopback device, the interface the kernel's authorization at the socket lookup
 * sees it come in on, and leaves to the tunnel (authz.bpf.c); through the local table it would
 * look as if it came in on the pod's interface, as the pod's own unmarked traffic to its address
 * still does.
 * The pod also needs tcp_fwmark_accept and fwmark_reflect (shared/netns.h), so the application's
 * replies, and the kernel's, take the same rule: the CNI plugin sets them (a container's
 * /proc/sys is read-only), this only checks them. No iptables. Idempotent; per family. */
#ifndef KM_MW_POD_ROUTE_H
#define KM_MW_POD_ROUTE_H

#include <stddef.h>

#define KM_POD_ROUTE_RULE_PRIORITY 10    /* the mark's rule ... */
#define KM_POD_ROUTE_LOCAL_PRIORITY 100  /* ... before the local table's, moved from 0 */

/* In the calling thread's network namespace: the rule and route of each family, if the sysctl is
 * set.
 * Returns the families ready as km_manage flags (kmesh_maps.h: KM_MANAGE_F_TUNNEL_ROUTED_V4 |
 * KM_MANAGE_F_TUNNEL_ROUTED_V6), which the caller records; err says why one that is not
 * failed (a pod without IPv6 has only IPv4 ready, err empty). Needs CAP_NET_ADMIN there. */
int km_pod_route_ensure(char *err, size_t errlen);

#endif
