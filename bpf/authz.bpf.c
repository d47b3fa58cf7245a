// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* authz.bpf.c — L4 authorization of new inbound TCP connections to enrolled pods, decided on the
 * SYN before the kernel answers it: a denied SYN is dropped, so a denied client never reaches the
 * server (it sees a connect timeout, as behind a dropping firewall). The decision is
 * bpf/lib/authz.h. Traffic on the loopback device (a pod talking to itself) is not checked, as
 * ztunnel never sees it; nothing is checked while authorization is switched off (km_config). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "lib/maps.h"
#include "lib/config.h"
#include "lib/manage.h"
#include "lib/authz.h"

#define KM_SKB_PASS 1
#define KM_SKB_DROP 0
#define KM_ETH_P_IP 0x0800
#define KM_ETH_P_IPV6 0x86DD
#define KM_LOOPBACK_IFINDEX 1
#define KM_IPV6_EXT_MAX 8

enum syn_parse { SYN_NO, SYN_YES, SYN_UNPARSED };

static __always_inline int tcp_is_syn(struct __sk_buff *skb, __u32 off, struct km_authz_conn *c)
{
	struct tcphdr th;

	if (bpf_skb_load_bytes(skb, off, &th, sizeof(th)) != 0)
		return SYN_UNPARSED;
	if (!th.syn || th.ack)
		return SYN_NO;
	c->dport = bpf_ntohs(th.dest);
	return SYN_YES;
}

static __always_inline int parse_v4(struct __sk_buff *skb, struct km_authz_conn *c)
{
	struct iphdr ip;

	if (bpf_skb_load_bytes(skb, 0, &ip, sizeof(ip)) != 0)
		return SYN_UNPARSED;
	if (ip.protocol != IPPROTO_TCP)
		return SYN_NO;
	km_addr_from_v4(&c->src, ip.saddr);
	km_addr_from_v4(&c->dst, ip.daddr);
	return tcp_is_syn(skb, (__u32)ip.ihl * 4, c);
}

/* IPv6: the extension headers a TCP segment may carry are walked (bounded); a chain that cannot
 * be followed is SYN_UNPARSED (fail closed for enrolled pods). */
static __always_inline int parse_v6(struct __sk_buff *skb, struct km_authz_conn *c)
{
	struct ipv6hdr ip;
	__u32 off = sizeof(ip);
	__u8 nh;

	if (bpf_skb_load_bytes(skb, 0, &ip, sizeof(ip)) != 0)
		return SYN_UNPARSED;
	__builtin_memcpy(c->src.bytes, &ip.saddr, 16);
	__builtin_memcpy(c->dst.bytes, &ip.daddr, 16);
	nh = ip.nexthdr;
#pragma unroll
	for (int i = 0; i < KM_IPV6_EXT_MAX; i++) {
		__u8 ext[2];

		if (nh == IPPROTO_TCP)
			return tcp_is_syn(skb, off, c);
		if (nh == IPPROTO_UDP || nh == 58 /* ICMPv6 */ || nh == 59 /* no next header */)
			return SYN_NO;
		if (nh != 0 /* hop-by-hop */ && nh != 43 /* routing */ && nh != 60 /* dst opts */ &&
		    nh != 51 /* AH */)
			return SYN_UNPARSED; /* unknown: it could hide a TCP segment */
		if (bpf_skb_load_bytes(skb, off, ext, sizeof(ext)) != 0)
			return SYN_UNPARSED;
		off += nh == 51 ? ((__u32)ext[1] + 2) * 4 : ((__u32)ext[1] + 1) * 8;
		nh = ext[0];
	}
	return nh == IPPROTO_TCP ? tcp_is_syn(skb, off, c) : SYN_UNPARSED;
}

SEC("cgroup_skb/ingress")
int km_authz_ingress(struct __sk_buff *skb)
{
	struct km_authz_conn c = {};
	struct km_authz_result r;
	int syn;

	if (skb->ifindex == KM_LOOPBACK_IFINDEX)
		return KM_SKB_PASS;
	if (skb->protocol == bpf_htons(KM_ETH_P_IP))
		syn = parse_v4(skb, &c);
	else if (skb->protocol == bpf_htons(KM_ETH_P_IPV6))
		syn = parse_v6(skb, &c);
	else
		return KM_SKB_PASS;
	if (syn == SYN_NO || (km_config_flags() & KM_CFG_F_AUTHZ_OFF) || !km_netns_managed(skb))
		return KM_SKB_PASS;
	if (syn == SYN_UNPARSED)
		return KM_SKB_DROP; /* cannot be decided: never let it reach an enrolled pod */
	km_authz_identify(&c);
	km_authz_decide(&c, &r);
	if (r.deny)
		km_log(KM_BPF_LOG_INFO, "authz: SYN from [%pI6c] to [%pI6c]:%u denied (stat %u)",
		       (__u64)(unsigned long)c.src.bytes, (__u64)(unsigned long)c.dst.bytes, c.dport,
		       r.stat_id);
	return r.deny ? KM_SKB_DROP : KM_SKB_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
