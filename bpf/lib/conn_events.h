/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* conn_events.h — connection reports for metrics and the access log: sockops calls these at
 * establishment (the socket is marked KM_SOCK_F_MONITORED and its state changes are asked for)
 * and at close; one km_conn_event each in the km_conn_events ring buffer, or a counted drop when
 * the reader is behind. Only while monitoring is on, and only enrolled pods' sockets. */
#ifndef KM_BPF_CONN_EVENTS_H
#define KM_BPF_CONN_EVENTS_H

#include <bpf/bpf_endian.h>

#include "maps.h"
#include "addr.h"
#include "config.h"

#define KM_AF_INET 2

/* A context field read by one load at its constant offset: the verifier refuses a moved context
 * pointer, which the compiler makes when it merges the loads of two branches. */
#define KM_CTX32(ctx, field)                                                                       \
	({                                                                                         \
		__u32 ___v;                                                                        \
		asm volatile("%0 = *(u32 *)(%1 + %2)"                                              \
			     : "=r"(___v)                                                          \
			     : "r"(ctx), "i"(__builtin_offsetof(struct bpf_sock_ops, field)));     \
		___v;                                                                              \
	})
#define KM_CTX64(ctx, field)                                                                       \
	({                                                                                         \
		__u64 ___v;                                                                        \
		asm volatile("%0 = *(u64 *)(%1 + %2)"                                              \
			     : "=r"(___v)                                                          \
			     : "r"(ctx), "i"(__builtin_offsetof(struct bpf_sock_ops, field)));     \
		___v;                                                                              \
	})

static __always_inline void km_sockops_addrs(const struct bpf_sock_ops *skops,
					     struct km_addr *local, struct km_addr *remote)
{
	if (KM_CTX32(skops, family) == KM_AF_INET) {
		km_addr_from_v4(local, KM_CTX32(skops, local_ip4));
		km_addr_from_v4(remote, KM_CTX32(skops, remote_ip4));
		return;
	}
	local->words[0] = KM_CTX32(skops, local_ip6[0]);
	local->words[1] = KM_CTX32(skops, local_ip6[1]);
	local->words[2] = KM_CTX32(skops, local_ip6[2]);
	local->words[3] = KM_CTX32(skops, local_ip6[3]);
	remote->words[0] = KM_CTX32(skops, remote_ip6[0]);
	remote->words[1] = KM_CTX32(skops, remote_ip6[1]);
	remote->words[2] = KM_CTX32(skops, remote_ip6[2]);
	remote->words[3] = KM_CTX32(skops, remote_ip6[3]);
}

/* The kernel's byte counters count sequence numbers: the SYN the active opener had acked, and
 * each FIN. What remains after these is data:
 *   - our FIN counts once it was queued (the state we close from is one that follows it) and
 *     acked (everything written, the FIN included, is acked: snd_una == write_seq, the kernel's
 *     own test);
 *   - the peer's FIN counts once received, which tcp_fin() alone marks with SOCK_DONE (an
 *     orphaned socket leaves FIN_WAIT2 for CLOSE without waiting for it, so the state does not
 *     say). Reading the socket's flags needs CAP_PERFMON, as the map writer requires. */
static __always_inline __u64 km_less(__u64 v, __u64 n)
{
	return v > n ? v - n : 0;
}

static __always_inline void km_conn_bytes(struct bpf_sock_ops *skops, struct bpf_sock *sk,
					  struct km_conn_event *e, __u32 old_state)
{
	struct tcp_sock *tp = sk ? bpf_skc_to_tcp_sock(sk) : NULL;
	int fin_sent = old_state == BPF_TCP_FIN_WAIT1 || old_state == BPF_TCP_FIN_WAIT2 ||
		       old_state == BPF_TCP_CLOSING || old_state == BPF_TCP_LAST_ACK;
	int our_fin = fin_sent && tp && tp->snd_una == tp->write_seq;
	int peer_fin = tp && (tp->inet_conn.icsk_inet.sk.__sk_common.skc_flags & (1ul << SOCK_DONE));

	e->sent_bytes = km_less(KM_CTX64(skops, bytes_acked),
				(e->direction == KM_CONN_OUTBOUND) + our_fin);
	e->received_bytes = km_less(KM_CTX64(skops, bytes_received), peer_fin);
}

static __always_inline void km_conn_report(struct bpf_sock_ops *skops, struct bpf_sock *sk,
					   const struct km_sock_state *st, __u8 kind,
					   __u8 direction, __u32 old_state)
{
	struct km_conn_event *e = bpf_ringbuf_reserve(&km_conn_events, sizeof(*e), 0);
	struct km_addr local = {}, remote = {};
	__u16 lport = (__u16)KM_CTX32(skops, local_port);
	__u16 rport = (__u16)bpf_ntohl(KM_CTX32(skops, remote_port));

	if (!e) {
		km_count_drop(0);
		return;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->cookie = bpf_get_socket_cookie(skops);
	e->ts_ns = bpf_ktime_get_ns();
	e->kind = kind;
	e->direction = direction;
	km_sockops_addrs(skops, &local, &remote);
	if (direction == KM_CONN_OUTBOUND) {
		e->src = local;
		e->sport = lport;
		e->dst = remote;
		e->dport = rport;
		if (st && st->orig_port) {
			e->orig_dst = st->orig_addr;
			e->orig_dport = bpf_ntohs(st->orig_port);
			e->backend_id = st->backend_id;
		}
	} else {
		e->src = remote;
		e->sport = rport;
		e->dst = local;
		e->dport = lport;
	}
	if (kind == KM_CONN_CLOSE) {
		km_conn_bytes(skops, sk, e, old_state);
		e->retrans = KM_CTX32(skops, total_retrans);
		e->srtt_us = KM_CTX32(skops, srtt_us) >> 3;
	}
	/* No wakeup per report: waking the reader costs an interrupt each time (a VM exit in a
	 * VM). The map writer reads every KM_CONN_EVENTS_POLL_MS anyway; it is woken only when the
	 * ring fills past a quarter. */
	bpf_ringbuf_submit(e, bpf_ringbuf_query(&km_conn_events, BPF_RB_AVAIL_DATA) >
				      KM_CONN_EVENTS_BYTES / 4 ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

#endif
