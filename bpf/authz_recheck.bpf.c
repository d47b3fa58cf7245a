// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* authz_recheck.bpf.c — closes the open connections that the current authorization policies
 * deny. A TCP socket iterator, run by the map writer inside one enrolled pod's network namespace
 * after policies change: every connection the pod accepted (a socket with its listener's accept
 * backlog: lib/conn_events.h, km_conn_direction) is decided again exactly as its SYN was (bpf/lib/authz.h), and a denied one is
 * destroyed with bpf_sock_destroy (both ends see a reset). One km_authz_closed record per closed
 * socket goes to the iterator's output, for the map writer's log. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "lib/maps.h"
#include "lib/addr.h"
#include "lib/authz.h"
#include "lib/config.h"
#include "lib/mesh_cgroup.h"

#define KM_AF_INET 2
#define KM_AF_INET6 10
#define KM_LOOPBACK_IFINDEX 1

/* weak: on a kernel without it (before 6.5) the map writer does not load this program */
extern int bpf_sock_destroy(struct sock_common *sk) __ksym __weak;

/* The connection as its SYN was seen: the client is the remote end, the pod the local one. */
static __always_inline int conn_of(const struct sock_common *skc, struct km_authz_conn *c)
{
	if (skc->skc_family == KM_AF_INET) {
		km_addr_from_v4(&c->src, skc->skc_daddr);
		km_addr_from_v4(&c->dst, skc->skc_rcv_saddr);
	} else if (skc->skc_family == KM_AF_INET6) {
		/* an IPv4 client of a dual-stack socket is already v4-mapped, as km_addr wants */
		__builtin_memcpy(c->src.bytes, skc->skc_v6_daddr.in6_u.u6_addr8, 16);
		__builtin_memcpy(c->dst.bytes, skc->skc_v6_rcv_saddr.in6_u.u6_addr8, 16);
	} else {
		return -1;
	}
	c->dport = skc->skc_num;
	return 0;
}

SEC("iter/tcp")
int km_authz_recheck(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct km_authz_conn c = { .recheck = 1 };
	struct km_authz_closed rec = {};
	struct km_authz_result r;
	struct tcp_sock *tp;

	if (!skc || (km_config_flags() & KM_CFG_F_AUTHZ_OFF))
		return 0;
	/* connections the pod can still use; one it closed already (FIN_WAIT, ...) is left to end */
	if (skc->skc_state != TCP_ESTABLISHED && skc->skc_state != TCP_CLOSE_WAIT &&
	    skc->skc_state != TCP_SYN_RECV)
		return 0;
	tp = bpf_skc_to_tcp_sock(skc); /* full sockets only: not request (or time-wait) ones */
	if (!tp)
		return 0;
	if (!tp->inet_conn.icsk_inet.sk.sk_max_ack_backlog)
		return 0; /* made by the pod (connect()), not accepted */
	if (!km_sock_in_mesh_cgroup((const struct sock *)tp))
		return 0; /* not a socket of the pod's processes (the tunnel's, on its HBONE port) */
	if (tp->inet_conn.icsk_inet.sk.sk_rx_dst_ifindex == KM_LOOPBACK_IFINDEX)
		return 0; /* the pod talking to itself: its SYN was not decided either */
	if (conn_of(skc, &c) != 0)
		return 0;
	if (c.dport == KM_HBONE_PORT && bpf_map_lookup_elem(&km_hbone, &c.dst))
		return 0; /* HBONE: the tunnel decides each stream, as at the SYN (authz.bpf.c) */
	km_authz_identify(&c);
	km_authz_decide(&c, &r);
	if (!r.deny)
		return 0;
	rec.src = c.src;
	rec.dst = c.dst;
	rec.sport = bpf_ntohs(skc->skc_dport);
	rec.dport = (__u16)c.dport;
	rec.stat_id = r.stat_id;
	rec.err = bpf_sock_destroy(skc);
	bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
