// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* ipsec.bpf.c — the tc programs of inter-node encryption (logic in bpf/lib/ipsec.h):
 *   km_ipsec_encrypt, on the node side of an enrolled pod's veth (packets from the pod): traffic
 *     to a remote node's pod CIDR gets mark 0xe0, which the out policies match;
 *   km_ipsec_decrypt, ingress on the node's NIC: ESP gets its sender's peer id in the mark (which
 *     selects that peer's input state), packets ESP decrypted (0xd0, their second pass) keep
 *     their mark, and any other mark is cleared, so no packet arrives looking decrypted. (The
 *     in/fwd policies check decrypted traffic; plain traffic matches no policy and is not
 *     blocked: encryption is not enforced on arrival.) */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "lib/maps.h"
#include "lib/ipsec.h"

/* Never a verdict of our own: the packet goes on to any later filter on the hook (another
 * owner's, e.g. the CNI's), and is passed when there is none. */
#define KM_TC_ACT_UNSPEC (-1)

SEC("tc")
int km_ipsec_encrypt(struct __sk_buff *skb)
{
	struct km_ipsec_pkt p;

	if (km_ipsec_parse(skb, &p) == 0 && km_ipsec_remote_pod(&p.dst))
		skb->mark = KM_IPSEC_MARK_ENCRYPT;
	return KM_TC_ACT_UNSPEC;
}

SEC("tc")
int km_ipsec_decrypt(struct __sk_buff *skb)
{
	struct km_ipsec_pkt p;
	__u32 mark = 0;

	if (skb->mark == KM_IPSEC_MARK_DECRYPTED)
		return KM_TC_ACT_UNSPEC;
	if (km_ipsec_parse(skb, &p) == 0 && p.proto == KM_IPPROTO_ESP)
		mark = km_ipsec_peer_mark(&p.src);
	/* one store, at a constant context offset (the verifier refuses a computed one) */
	asm volatile("" : "+r"(mark));
	skb->mark = mark;
	return KM_TC_ACT_UNSPEC;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
