// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* connect.bpf.c — cgroup/connect4 and cgroup/connect6 entry programs: rewrite an enrolled pod's
 * TCP connect() to a Service VIP:port into a chosen backend. Logic lives in lib/. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "lib/maps.h"
#include "lib/addr.h"
#include "lib/manage.h"
#include "lib/lb.h"

#define KM_IPPROTO_TCP 6
#define KM_SOCK_ALLOW 1
#define KM_SOCK_REJECT 0
#define KM_ECONNREFUSED 111

/* Fail the connect() with ECONNREFUSED (a rejected cgroup hook otherwise reports EPERM, which
 * reads like a permission problem). */
static __always_inline int km_refuse(void)
{
	bpf_set_retval(-KM_ECONNREFUSED);
	return KM_SOCK_REJECT;
}

SEC("cgroup/connect4")
int km_connect4(struct bpf_sock_addr *ctx)
{
	struct km_target t;
	struct km_addr dst;
	int rc;

	if (ctx->protocol != KM_IPPROTO_TCP || !km_netns_managed(ctx))
		return KM_SOCK_ALLOW;
	km_addr_from_v4(&dst, ctx->user_ip4);
	rc = km_resolve(&dst, (__u16)ctx->user_port, KM_IPPROTO_TCP, 0, &t);
	if (rc == KM_RESOLVE_REFUSE)
		return km_refuse();
	if (rc == 0) {
		ctx->user_ip4 = t.addr.words[3];
		ctx->user_port = t.port;
	}
	return KM_SOCK_ALLOW;
}

SEC("cgroup/connect6")
int km_connect6(struct bpf_sock_addr *ctx)
{
	struct km_target t;
	struct km_addr dst;
	int want_v6, rc;

	if (ctx->protocol != KM_IPPROTO_TCP || !km_netns_managed(ctx))
		return KM_SOCK_ALLOW;
	dst.words[0] = ctx->user_ip6[0];
	dst.words[1] = ctx->user_ip6[1];
	dst.words[2] = ctx->user_ip6[2];
	dst.words[3] = ctx->user_ip6[3];
	/* A v4-mapped destination keeps a v4-mapped result (the backend's IPv4 address). */
	want_v6 = !km_addr_is_v4mapped(&dst);
	rc = km_resolve(&dst, (__u16)ctx->user_port, KM_IPPROTO_TCP, want_v6, &t);
	if (rc == KM_RESOLVE_REFUSE)
		return km_refuse();
	if (rc == 0) {
		ctx->user_ip6[0] = t.addr.words[0];
		ctx->user_ip6[1] = t.addr.words[1];
		ctx->user_ip6[2] = t.addr.words[2];
		ctx->user_ip6[3] = t.addr.words[3];
		ctx->user_port = t.port;
	}
	return KM_SOCK_ALLOW;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
