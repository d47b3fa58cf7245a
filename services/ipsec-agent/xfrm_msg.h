/* xfrm_msg.h — the XFRM netlink requests the IPsec agent sends, built with libnl-xfrm: ESP
 * states (tunnel mode, an AEAD, no byte or packet limits, a replay window, optionally a mark and
 * an output mark) and policies (a pod CIDR selector, a mark, one ESP tunnel template). Which
 * ones a node needs is plan.h's business (Kmesh's layout, kmesh-userspace.md 3.4, with fixes):
 *   ingress: state remote -> local, SPI = ours, output mark 0xd0; policies in and fwd to each
 *            local pod CIDR, mark 0xd0, template with any source
 *   egress:  state local -> remote, SPI = the peer's; policy out to each remote pod CIDR,
 *            mark 0xe0, template local -> remote with the peer's SPI
 * One fix: the selector's "any" source has the CIDR's family (Kmesh writes 0.0.0.0/0 even for
 * IPv6 CIDRs, which the kernel then never matches). libnl-xfrm 3.7 cannot set a state's output
 * mark, so XFRMA_SET_MARK and XFRMA_SET_MARK_MASK are appended to the message it builds. */
#ifndef KM_IPSEC_XFRM_MSG_H
#define KM_IPSEC_XFRM_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "kmesh_maps.h"

struct nl_msg;

#define KM_XFRM_REQID 1
#define KM_XFRM_REPLAY_WINDOW 32 /* anti-replay on, as IKE daemons set it */
#define KM_XFRM_MARK_DECRYPTED KM_IPSEC_MARK_DECRYPTED
#define KM_XFRM_MARK_ENCRYPT KM_IPSEC_MARK_ENCRYPT

enum km_xfrm_op { KM_XFRM_ADD, KM_XFRM_UPDATE, KM_XFRM_DELETE };

struct km_xfrm_state_spec {
	struct km_addr src, dst; /* the tunnel's outer addresses (v4-mapped for IPv4) */
	uint32_t spi;
	const char *aead_name;   /* e.g. rfc4106(gcm(aes)) */
	const uint8_t *key;      /* the derived key */
	size_t key_len;
	uint32_t icv_bits;
	uint32_t output_mark;    /* 0: none */
	uint32_t mark, mark_mask; /* which packets it takes (0/0: any); part of its identity */
};

struct km_xfrm_policy_spec {
	uint8_t dir;             /* XFRM_POLICY_IN, XFRM_POLICY_OUT or XFRM_POLICY_FWD */
	struct km_addr cidr;     /* the selector's destination: a pod CIDR's network */
	uint8_t cidr_len;        /* its prefix length, in its own family's bits */
	uint32_t mark;           /* matched with mask 0xffffffff */
	struct km_addr tmpl_src, tmpl_dst;
	uint32_t tmpl_spi;       /* 0: any */
};

/* Build the request (delete needs only the key fields: dst, spi, mark; dir, selector, mark). Returns
 * 0 with *out set (free with nlmsg_free), or -1 with err filled. */
int km_xfrm_state_msg(const struct km_xfrm_state_spec *s, enum km_xfrm_op op, struct nl_msg **out,
		      char *err, size_t errlen);
int km_xfrm_policy_msg(const struct km_xfrm_policy_spec *p, enum km_xfrm_op op,
		       struct nl_msg **out, char *err, size_t errlen);

#endif
