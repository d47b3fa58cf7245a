/* node_spec.h — a node's IPsec description (KmeshNodeInfo spec) from outside input, validated:
 * a name, 1-4 unicast addresses (kept as the texts given, which the key derivation uses), a boot
 * id of at least 36 characters, 0-4 pod CIDRs with no host bits set and no wider than /8 (IPv4)
 * or /16 (IPv6). From the admin socket's IpsecNode message here; the
 * Kubernetes object's JSON comes to the same struct. */
#ifndef KM_IPSEC_NODE_SPEC_H
#define KM_IPSEC_NODE_SPEC_H

#include <stddef.h>

#include "ipc/message.h"
#include "services/ipsec-agent/plan.h"

#define KM_IPSEC_CIDR4_MIN 8  /* the widest pod CIDRs taken */
#define KM_IPSEC_CIDR6_MIN 16

/* "10.244.1.0/24" or "fd10::/64". Returns 0, or -1 with err filled. */
int km_ipsec_cidr_parse(const char *text, struct km_addr *net, uint8_t *len, char *err,
			size_t errlen);
/* Returns 0, or -1 with err filled. */
int km_ipsec_node_from_msg(const Kmesh__Ipc__IpsecNode *m, struct km_ipsec_node *out, char *err,
			   size_t errlen);

#endif
