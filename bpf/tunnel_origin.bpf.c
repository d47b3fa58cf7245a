// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* tunnel_origin.bpf.c — cgroup/getsockopt on the tunnel's own cgroup: answers
 * getsockopt(SOL_IP, KM_SO_TUNNEL_ORIGIN) on a connection the tunnel accepted on its outbound
 * listener (KM_TUNNEL_OUTBOUND_PORT) with where the application meant it to go, from the record
 * sockops left under the client's address and port (kmesh_maps.h, HBONE outbound). The row is
 * deleted once read. So the tunnel, without a capability, learns what netfilter's
 * SO_ORIGINAL_DST would tell a privileged proxy, with no netfilter at all. Every other
 * getsockopt of the cgroup passes untouched after two compares. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "lib/maps.h"
#include "lib/addr.h"

#define KM_SOL_IP 0
#define KM_AF_INET 2
#define KM_AF_INET6 10
#define KM_GETSOCKOPT_OK 1

SEC("cgroup/getsockopt")
int km_tunnel_origin_get(struct bpf_sockopt *ctx)
{
	struct km_tunnel_origin *origin;
	struct km_addr_port key = {};
	struct bpf_sock *sk;
	void *optval, *end;

	if (ctx->level != KM_SOL_IP || ctx->optname != KM_SO_TUNNEL_ORIGIN)
		return KM_GETSOCKOPT_OK;
	sk = ctx->sk;
	if (!sk || sk->src_port != KM_TUNNEL_OUTBOUND_PORT)
		return KM_GETSOCKOPT_OK; /* the kernel's answer: no such option */
	if (sk->family == KM_AF_INET) {
		km_addr_from_v4(&key.addr, sk->dst_ip4);
	} else if (sk->family == KM_AF_INET6) {
		key.addr.words[0] = sk->dst_ip6[0];
		key.addr.words[1] = sk->dst_ip6[1];
		key.addr.words[2] = sk->dst_ip6[2];
		key.addr.words[3] = sk->dst_ip6[3];
	} else {
		return KM_GETSOCKOPT_OK;
	}
	key.port = (__u16)sk->dst_port; /* network byte order */
	origin = bpf_map_lookup_elem(&km_tunnel_origin, &key);
	optval = ctx->optval;
	end = ctx->optval_end;
	if (!origin || optval + sizeof(*origin) > end)
		return KM_GETSOCKOPT_OK;
	__builtin_memcpy(optval, origin, sizeof(*origin));
	ctx->optlen = sizeof(*origin);
	ctx->retval = 0;
	bpf_map_delete_elem(&km_tunnel_origin, &key);
	return KM_GETSOCKOPT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
