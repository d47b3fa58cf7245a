/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* ipsec.h — the IPsec marks (kmesh_maps.h, KM_IPSEC_*) on packets seen by tc: which pod traffic
 * XFRM must encrypt (its destination is a remote node's pod CIDR), and, for ESP arriving at the
 * node, which peer's input state may take it (the peer id from the outer source). */
#ifndef KM_BPF_IPSEC_H
#define KM_BPF_IPSEC_H

#include "maps.h"
#include "addr.h"

#define KM_ETH_HLEN 14
#define KM_IPPROTO_ESP 50

struct km_ipsec_pkt {
	struct km_addr src, dst; /* v4-mapped for IPv4 */
	__u8 proto;              /* IPv4 protocol, or IPv6 next header (no extension walk) */
};

/* The IP header after the Ethernet header. Returns 0, or -1 for anything else. */
static __always_inline int km_ipsec_parse(struct __sk_buff *skb, struct km_ipsec_pkt *p)
{
	if (skb->protocol == bpf_htons(0x0800)) {
		struct iphdr ip;

		if (bpf_skb_load_bytes(skb, KM_ETH_HLEN, &ip, sizeof(ip)) != 0)
			return -1;
		km_addr_from_v4(&p->src, ip.saddr);
		km_addr_from_v4(&p->dst, ip.daddr);
		p->proto = ip.protocol;
		return 0;
	}
	if (skb->protocol == bpf_htons(0x86DD)) {
		struct ipv6hdr ip;

		if (bpf_skb_load_bytes(skb, KM_ETH_HLEN, &ip, sizeof(ip)) != 0)
			return -1;
		__builtin_memcpy(p->src.bytes, &ip.saddr, 16);
		__builtin_memcpy(p->dst.bytes, &ip.daddr, 16);
		p->proto = ip.nexthdr;
		return 0;
	}
	return -1;
}

/* Is a a remote node's pod address? */
static __always_inline int km_ipsec_remote_pod(const struct km_addr *a)
{
	struct km_ipsec_cidr_key k = { .prefixlen = 128, .addr = *a };

	return bpf_map_lookup_elem(&km_ipsec_cidr, &k) != NULL;
}

/* The mark an arriving ESP packet from src gets: its sender's peer id, or 0 (no state takes it). */
static __always_inline __u32 km_ipsec_peer_mark(const struct km_addr *src)
{
	struct km_ipsec_peer_key k = { .addr = *src };
	struct km_ipsec_peer_value *v = bpf_map_lookup_elem(&km_ipsec_peer, &k);

	if (!v || !v->peer_id || v->peer_id > KM_IPSEC_PEER_ID_MAX)
		return 0;
	return v->peer_id << KM_IPSEC_PEER_SHIFT;
}

#endif
