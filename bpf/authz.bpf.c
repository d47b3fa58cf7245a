// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* authz.bpf.c — L4 authorization of new inbound TCP connections to enrolled pods, decided before
 * the kernel answers the SYN, in one of two places:
 *   - km_authz_lookup (sk_lookup, attached to each enrolled pod's network namespace by the map
 *     writer): decided when the kernel looks for the listening socket; a denied connection is
 *     given none, so the kernel answers with a reset and the client's connect() fails at once
 *     with ECONNREFUSED, as ztunnel resets it;
 *   - km_authz_ingress (cgroup_skb/ingress), for an enrolled pod whose namespace has no such
 *     program (KM_MANAGE_F_AUTHZ_LOOKUP unset: enrolled without its namespace's path, or the
 *     attach failed): a denied SYN is dropped and the client times out, as behind a dropping
 *     firewall.
 * The decision is bpf/lib/authz.h. A pod talking to itself is not checked, as ztunnel never sees
 * it: traffic on the loopback device, and from a loopback source (127/8, ::1) to the pod's own
 * address. The tunnel's connection to the application is left to the tunnel, which decided its
 * stream: it comes from the HBONE caller's address with the mark KM_TUNNEL_APP_MARK, which the
 * pod's rule routes through the loopback device (kmesh_maps.h; the socket lookup sees that
 * device, cgroup_skb the mark), or from 127.0.0.6. A SYN to the HBONE port of a pod whose port
 * the tunnel serves (km_hbone) is the tunnel's to decide. Nothing is checked while authorization
 * is switched off (km_config). */
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

/* Decide c (both hooks alike) and log a denial. Returns 1 to deny. */
static __always_inline int km_authz_denies(struct km_authz_conn *c)
{
	struct km_authz_result r;

	km_authz_identify(c);
	km_authz_decide(c, &r);
	if (r.deny)
		km_log(KM_BPF_LOG_INFO, "authz: connection from [%pI6c] to [%pI6c]:%u denied (stat %u)",
		       (__u64)(unsigned long)c->src.bytes, (__u64)(unsigned long)c->dst.bytes,
		       c->dport, r.stat_id);
	return r.deny;
}

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

/* IPv4, read in place (every packet to an enrolled pod comes through here: a helper call per
 * header costs more than the rest); a header not in the linear part is copied instead. */
static __always_inline int parse_v4(struct __sk_buff *skb, struct km_authz_conn *c)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct iphdr *ip = data;
	struct tcphdr *th;
	__u32 off;

	if ((void *)(ip + 1) > end) {
		struct iphdr copy;

		if (bpf_skb_load_bytes(skb, 0, &copy, sizeof(copy)) != 0)
			return SYN_UNPARSED;
		if (copy.protocol != IPPROTO_TCP)
			return SYN_NO;
		km_addr_from_v4(&c->src, copy.saddr);
		km_addr_from_v4(&c->dst, copy.daddr);
		return tcp_is_syn(skb, (__u32)copy.ihl * 4, c);
	}
	if (ip->protocol != IPPROTO_TCP)
		return SYN_NO;
	off = (__u32)ip->ihl * 4;
	th = data + off;
	if (off < sizeof(*ip) || off > 60 || (void *)(th + 1) > end) {
		km_addr_from_v4(&c->src, ip->saddr);
		km_addr_from_v4(&c->dst, ip->daddr);
		return tcp_is_syn(skb, off, c);
	}
	if (!th->syn || th->ack)
		return SYN_NO;
	km_addr_from_v4(&c->src, ip->saddr);
	km_addr_from_v4(&c->dst, ip->daddr);
	c->dport = bpf_ntohs(th->dest);
	return SYN_YES;
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
	struct km_manage_value *pod;
	struct km_authz_conn c = {};
	int syn;

	if (skb->ifindex == KM_LOOPBACK_IFINDEX)
		return KM_SKB_PASS;
	if (skb->protocol == bpf_htons(KM_ETH_P_IP))
		syn = parse_v4(skb, &c);
	else if (skb->protocol == bpf_htons(KM_ETH_P_IPV6))
		syn = parse_v6(skb, &c);
	else
		return KM_SKB_PASS;
	if (syn == SYN_NO || (km_config_flags() & KM_CFG_F_AUTHZ_OFF))
		return KM_SKB_PASS;
	pod = km_netns_manage(skb);
	if (!pod || (pod->flags & KM_MANAGE_F_AUTHZ_LOOKUP))
		return KM_SKB_PASS; /* not enrolled, or decided at the socket lookup */
	if (syn == SYN_UNPARSED)
		return KM_SKB_DROP; /* cannot be decided: never let it reach an enrolled pod */
	if (skb->mark == KM_TUNNEL_APP_MARK || km_addr_is_loopback(&c.src) ||
	    (c.dport == KM_HBONE_PORT && bpf_map_lookup_elem(&km_hbone, &c.dst)))
		return KM_SKB_PASS; /* the pod itself, and the tunnel's connections to it; HBONE: the
				     * tunnel decides each stream */
	return km_authz_denies(&c) ? KM_SKB_DROP : KM_SKB_PASS;
}

#define KM_AF_INET 2

SEC("sk_lookup")
int km_authz_lookup(struct bpf_sk_lookup *ctx)
{
	struct km_authz_conn c = {};

	if (ctx->protocol != IPPROTO_TCP || ctx->ingress_ifindex == KM_LOOPBACK_IFINDEX ||
	    (km_config_flags() & KM_CFG_F_AUTHZ_OFF))
		return SK_PASS;
	if (ctx->family == KM_AF_INET) {
		km_addr_from_v4(&c.src, ctx->remote_ip4);
		km_addr_from_v4(&c.dst, ctx->local_ip4);
	} else {
		c.src.words[0] = ctx->remote_ip6[0];
		c.src.words[1] = ctx->remote_ip6[1];
		c.src.words[2] = ctx->remote_ip6[2];
		c.src.words[3] = ctx->remote_ip6[3];
		c.dst.words[0] = ctx->local_ip6[0];
		c.dst.words[1] = ctx->local_ip6[1];
		c.dst.words[2] = ctx->local_ip6[2];
		c.dst.words[3] = ctx->local_ip6[3];
	}
	c.dport = ctx->local_port;
	if (km_addr_is_loopback(&c.src) ||
	    (c.dport == KM_HBONE_PORT && bpf_map_lookup_elem(&km_hbone, &c.dst)))
		return SK_PASS; /* the pod itself; HBONE: the tunnel decides each stream */
	return km_authz_denies(&c) ? SK_DROP : SK_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
