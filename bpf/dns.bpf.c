// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* dns.bpf.c — cgroup/sendmsg4|6 and cgroup/recvmsg4|6: an enrolled pod's unconnected UDP DNS
 * goes to the node-local resolver, and replies show the server the pod asked (lib/dns.h).
 * Connected sockets (UDP and TCP) are redirected by connect.bpf.c. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "lib/maps.h"
#include "lib/addr.h"
#include "lib/manage.h"
#include "lib/dns.h"

#define KM_SOCK_ALLOW 1

SEC("cgroup/sendmsg4")
int km_sendmsg4(struct bpf_sock_addr *ctx)
{
	struct km_addr dst, to;
	__u16 to_port;

	if (!km_netns_managed(ctx))
		return KM_SOCK_ALLOW;
	km_addr_from_v4(&dst, ctx->user_ip4);
	if (km_dns_redirect(ctx->sk, &dst, (__u16)ctx->user_port, &to, &to_port)) {
		ctx->user_ip4 = to.words[3];
		ctx->user_port = to_port;
	}
	return KM_SOCK_ALLOW;
}

SEC("cgroup/sendmsg6")
int km_sendmsg6(struct bpf_sock_addr *ctx)
{
	struct km_addr dst, to;
	__u16 to_port;

	if (!km_netns_managed(ctx))
		return KM_SOCK_ALLOW;
	km_addr_from_ctx6(&dst, ctx);
	if (km_dns_redirect(ctx->sk, &dst, (__u16)ctx->user_port, &to, &to_port)) {
		km_addr_to_ctx6(ctx, &to);
		ctx->user_port = to_port;
	}
	return KM_SOCK_ALLOW;
}

SEC("cgroup/recvmsg4")
int km_recvmsg4(struct bpf_sock_addr *ctx)
{
	struct km_addr src;
	__u16 port = (__u16)ctx->user_port;

	km_addr_from_v4(&src, ctx->user_ip4);
	if (km_dns_restore(ctx->sk, &src, &port)) {
		ctx->user_ip4 = src.words[3];
		ctx->user_port = port;
	}
	return KM_SOCK_ALLOW;
}

SEC("cgroup/recvmsg6")
int km_recvmsg6(struct bpf_sock_addr *ctx)
{
	struct km_addr src;
	__u16 port = (__u16)ctx->user_port;

	km_addr_from_ctx6(&src, ctx);
	if (km_dns_restore(ctx->sk, &src, &port)) {
		km_addr_to_ctx6(ctx, &src);
		ctx->user_port = port;
	}
	return KM_SOCK_ALLOW;
}
