/* host_link.h — the node side of a pod's interface: the peer of the veth that the earlier
 * plugins (bridge, ptp, ...) put into the pod, found from inside the pod's network namespace by
 * rtnetlink (IFLA_LINK of a link of kind veth). The map writer puts IPsec's encrypt-mark program
 * there. */
#ifndef KM_CNI_HOST_LINK_H
#define KM_CNI_HOST_LINK_H

#include <stddef.h>
#include <stdint.h>

/* In the current thread's network namespace: *peer_ifindex = the ifindex (in the peer's own
 * namespace) of the veth peer of the interface named ifname, or 0 when that interface is not a
 * veth (macvlan, ipvlan: no node-side interface) or its peer is in this same namespace. Returns
 * 0, or -errno with err filled (no such interface, netlink failure). */
int km_host_link_peer(const char *ifname, uint32_t *peer_ifindex, char *err, size_t errlen);

#endif
