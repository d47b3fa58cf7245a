/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* addr.h — building and testing struct km_addr values from socket-address hook fields. */
#ifndef KM_BPF_ADDR_H
#define KM_BPF_ADDR_H

#include "kmesh_maps.h"

/* ::ffff:0:0/96 prefix word, network byte order. */
#define KM_V4MAPPED_WORD bpf_htonl(0x0000ffff)

static __always_inline void km_addr_from_v4(struct km_addr *a, __u32 ip4_nbo)
{
	a->words[0] = 0;
	a->words[1] = 0;
	a->words[2] = KM_V4MAPPED_WORD;
	a->words[3] = ip4_nbo;
}

static __always_inline int km_addr_is_v4mapped(const struct km_addr *a)
{
	return a->words[0] == 0 && a->words[1] == 0 && a->words[2] == KM_V4MAPPED_WORD;
}

/* 127.0.0.0/8 or ::1: a source only the namespace itself can have (the kernel drops such
 * sources arriving from outside as martians). */
static __always_inline int km_addr_is_loopback(const struct km_addr *a)
{
	if (km_addr_is_v4mapped(a))
		return (a->words[3] & bpf_htonl(0xff000000)) == bpf_htonl(0x7f000000);
	return a->words[0] == 0 && a->words[1] == 0 && a->words[2] == 0 &&
	       a->words[3] == bpf_htonl(1);
}

static __always_inline int km_addr_is_zero(const struct km_addr *a)
{
	return (a->words[0] | a->words[1] | a->words[2] | a->words[3]) == 0;
}

static __always_inline int km_addr_eq(const struct km_addr *a, const struct km_addr *b)
{
	return a->words[0] == b->words[0] && a->words[1] == b->words[1] &&
	       a->words[2] == b->words[2] && a->words[3] == b->words[3];
}

/* The IPv6 address of a socket-address hook (user_ip6), and writing one back. Inlined, so every
 * context access keeps the constant offset the verifier requires. */
static __always_inline void km_addr_from_ctx6(struct km_addr *a, const struct bpf_sock_addr *ctx)
{
	a->words[0] = ctx->user_ip6[0];
	a->words[1] = ctx->user_ip6[1];
	a->words[2] = ctx->user_ip6[2];
	a->words[3] = ctx->user_ip6[3];
}

static __always_inline void km_addr_to_ctx6(struct bpf_sock_addr *ctx, const struct km_addr *a)
{
	ctx->user_ip6[0] = a->words[0];
	ctx->user_ip6[1] = a->words[1];
	ctx->user_ip6[2] = a->words[2];
	ctx->user_ip6[3] = a->words[3];
}

#endif
