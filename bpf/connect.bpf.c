// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* connect.bpf.c — cgroup/connect4 and cgroup/connect6: an enrolled pod's connect() to a Service
 * VIP:port goes to a chosen backend (or through a waypoint), its DNS to the node-local resolver.
 * Logic lives in lib/. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "lib/maps.h"
#include "lib/addr.h"
#include "lib/config.h"
#include "lib/manage.h"
#include "lib/resolve.h"
#include "lib/dns.h"
#include "lib/sock_state.h"
#include "lib/conn_events.h"

#define KM_IPPROTO_UDP 17
#define KM_SOCK_ALLOW 1
#define KM_SOCK_REJECT 0
#define KM_ECONNREFUSED 111

/* One more connect() refused for this reason (metrics; the refusal path only). */
static __always_inline void km_count_refusal(__u32 reason)
{
	__u64 *n = bpf_map_lookup_elem(&km_refused, &reason);

	if (n)
		(*n)++;
}

/* A connection for the tunnel: where it was for and where the tunnel must take it, which sockops
 * hands to the tunnel once it is established (kmesh_maps.h, HBONE outbound). Without storage the
 * tunnel finds no record and closes the connection at once (and counts it): no refusal here. */
static __always_inline void km_tunnel_record(struct bpf_sock *sk, const struct km_addr *dst,
					     __u16 port, const struct km_addr_port *to)
{
	struct km_addr_port *via;

	if (km_sock_record(sk, dst, port, KM_SOCK_F_VIA_TUNNEL, 0) != 0)
		return;
	via = bpf_sk_storage_get(&km_sock_tunnel, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (via)
		__builtin_memcpy(via, to, sizeof(*via));
}

/* What to do with a managed socket's connect(). */
enum km_verdict { KM_KEEP, KM_REWRITE, KM_REFUSE };

static __always_inline enum km_verdict km_connect_decide(struct bpf_sock_addr *ctx,
							 const struct km_addr *dst, int want_v6,
							 struct km_target *t)
{
	__u16 port = (__u16)ctx->user_port;
	int rc;

	if ((ctx->protocol == KM_IPPROTO_TCP || ctx->protocol == KM_IPPROTO_UDP) &&
	    km_dns_redirect(ctx->sk, dst, port, &t->addr, &t->port))
		return KM_REWRITE;
	if (ctx->protocol != KM_IPPROTO_TCP)
		return KM_KEEP;
	rc = km_resolve(dst, port, want_v6, t);
	if (rc == KM_RESOLVE_REFUSE || rc == KM_RESOLVE_REFUSE_NO_ENDPOINT) {
		km_count_refusal(rc == KM_RESOLVE_REFUSE ? KM_REFUSED_WAYPOINT : KM_REFUSED_NO_ENDPOINT);
		return KM_REFUSE;
	}
	if (rc != KM_RESOLVE_REWRITE)
		return KM_KEEP;
	if (km_addr_is_v4mapped(dst) && km_addr_is_v4mapped(&t->addr))
		km_log(KM_BPF_LOG_DEBUG, "connect: %pI4:%u to %pI4:%u",
		       (__u64)(unsigned long)&dst->words[3], bpf_ntohs(port),
		       (__u64)(unsigned long)&t->addr.words[3], bpf_ntohs(t->port));
	else
		km_log(KM_BPF_LOG_DEBUG, "connect: [%pI6c]:%u to [%pI6c]:%u",
		       (__u64)(unsigned long)dst->bytes, bpf_ntohs(port),
		       (__u64)(unsigned long)t->addr.bytes, bpf_ntohs(t->port));
	/* Socket storage only where something reads it later (an allocation per socket is the
	 * largest cost of this program): the TLV for a waypoint, the count for a P2C service. A
	 * waypoint must get the original destination: without a record it could not, so such a
	 * connection fails rather than reaching the waypoint without it. Monitoring needs none:
	 * a ring-buffer record names the original destination, which the map writer joins to the
	 * connection's first report. (The tunnel reports what it carries itself.) */
	if (t->via == KM_VIA_TUNNEL) {
		km_tunnel_record(ctx->sk, dst, port, &t->to);
		return KM_REWRITE;
	}
	if ((t->via || t->backend_id) &&
	    km_sock_record(ctx->sk, dst, port, t->via ? KM_SOCK_F_VIA_WAYPOINT : 0, t->backend_id) != 0 &&
	    t->via) {
		km_count_refusal(KM_REFUSED_WAYPOINT);
		return KM_REFUSE;
	}
	if (km_monitoring())
		km_conn_dial(ctx, dst, port);
	return KM_REWRITE;
}

/* Could dst:port need anything from us? DNS (port 53) may be redirected; anything else only if
 * dst may be a frontend. One Bloom filter test, before the enrollment lookup: most connects
 * (pod IPs, addresses outside the mesh) end here. */
static __always_inline int km_maybe_ours(const struct km_addr *dst, __u16 port_nbo)
{
	return port_nbo == KM_DNS_PORT_NBO || bpf_map_peek_elem(&km_fe_filter, (void *)dst) == 0;
}

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
	struct km_target t = {};
	struct km_addr dst;

	km_addr_from_v4(&dst, ctx->user_ip4);
	if (!km_maybe_ours(&dst, (__u16)ctx->user_port) || !km_netns_managed(ctx))
		return KM_SOCK_ALLOW;
	switch (km_connect_decide(ctx, &dst, 0, &t)) {
	case KM_REFUSE:
		return km_refuse();
	case KM_REWRITE:
		ctx->user_ip4 = t.addr.words[3];
		ctx->user_port = t.port;
		return KM_SOCK_ALLOW;
	default:
		return KM_SOCK_ALLOW;
	}
}

SEC("cgroup/connect6")
int km_connect6(struct bpf_sock_addr *ctx)
{
	struct km_target t = {};
	struct km_addr dst;

	km_addr_from_ctx6(&dst, ctx);
	if (!km_maybe_ours(&dst, (__u16)ctx->user_port) || !km_netns_managed(ctx))
		return KM_SOCK_ALLOW;
	/* A v4-mapped destination keeps a v4-mapped result (the backend's IPv4 address). */
	switch (km_connect_decide(ctx, &dst, !km_addr_is_v4mapped(&dst), &t)) {
	case KM_REFUSE:
		return km_refuse();
	case KM_REWRITE:
		km_addr_to_ctx6(ctx, &t.addr);
		ctx->user_port = t.port;
		return KM_SOCK_ALLOW;
	default:
		return KM_SOCK_ALLOW;
	}
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
