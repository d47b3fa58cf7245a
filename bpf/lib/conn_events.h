/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* conn_events.h — connection reports for metrics and the access log, without storage per
 * connection: connect4/6 report where a rewritten connection was meant to go (a km_conn_dial,
 * keyed by the socket cookie), sockops its establishment while it is attached (KM_CONN_OPEN, the
 * 4-tuple; only while the access log wants opens), and cgroup/sock_release its close with the
 * TCP counters (KM_CONN_CLOSE). The map writer joins a dial to the connection's first report
 * by cookie. One record each in the km_conn_events ring buffer, or a counted
 * drop when the reader is behind. Only while monitoring is on, and only enrolled pods'
 * sockets. */
#ifndef KM_BPF_CONN_EVENTS_H
#define KM_BPF_CONN_EVENTS_H

#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>

#include "maps.h"
#include "addr.h"
#include "config.h"

#define KM_AF_INET 2

/* A context field read by one load at its constant offset: the verifier refuses a moved context
 * pointer, which the compiler makes when it merges the loads of two branches. */
#define KM_CTX32(ctx, type, field)                                                                 \
	({                                                                                         \
		__u32 ___v;                                                                        \
		asm volatile("%0 = *(u32 *)(%1 + %2)"                                              \
			     : "=r"(___v)                                                          \
			     : "r"(ctx), "i"(__builtin_offsetof(type, field)));                    \
		___v;                                                                              \
	})

/* The mark of a sockops program's socket, 0 without one: its sk read once (a second read of the
 * field would be a new maybe-NULL pointer to the verifier). */
static __always_inline __u32 km_sockops_mark(struct bpf_sock_ops *skops)
{
	struct bpf_sock *sk;

	asm volatile("%0 = *(u64 *)(%1 + %2)"
		     : "=r"(sk)
		     : "r"(skops), "i"(__builtin_offsetof(struct bpf_sock_ops, sk)));
	return sk ? sk->mark : 0;
}

static __always_inline int km_monitoring(void)
{
	return km_config_flags() & KM_CFG_F_MONITORING;
}

/* One record into the ring (built on the stack: one helper call, bpf_ringbuf_output, where
 * reserve and submit are two), without waking the reader: waking it costs an interrupt each time
 * (a VM exit in a VM), and the map writer reads every KM_CONN_EVENTS_POLL_MS anyway. One record
 * in 64 (by its socket cookie, which counts up) also looks at the fill and wakes the reader past
 * a quarter. A full ring counts a drop. */
static __always_inline void km_conn_emit(void *e, __u64 size, __u64 cookie)
{
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (!(cookie & 63) &&
	    bpf_ringbuf_query(&km_conn_events, BPF_RB_AVAIL_DATA) > KM_CONN_EVENTS_BYTES / 4)
		flags = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&km_conn_events, e, size, flags) != 0)
		km_count_drop(0);
}

/* Where the application asked a rewritten connection to go: connect4/6, cookie from ctx. */
static __always_inline void km_conn_dial(void *ctx, const struct km_addr *orig, __u16 orig_port_nbo)
{
	struct km_conn_dial d;

	d.cookie = bpf_get_socket_cookie(ctx);
	d.orig_dst = *orig;
	d.orig_dport = bpf_ntohs(orig_port_nbo);
	d.pad[0] = d.pad[1] = d.pad[2] = 0;
	km_conn_emit(&d, sizeof(d), d.cookie);
}

/* sockops, at establishment: the connection as connected. */
static __always_inline void km_conn_open(struct bpf_sock_ops *skops, __u8 direction)
{
	struct km_addr local, remote;
	struct km_conn_open rec, *o = &rec;
	__u16 lport, rport;

	lport = (__u16)KM_CTX32(skops, struct bpf_sock_ops, local_port);
	rport = (__u16)bpf_ntohl(KM_CTX32(skops, struct bpf_sock_ops, remote_port));
	if (KM_CTX32(skops, struct bpf_sock_ops, family) == KM_AF_INET) {
		km_addr_from_v4(&local, KM_CTX32(skops, struct bpf_sock_ops, local_ip4));
		km_addr_from_v4(&remote, KM_CTX32(skops, struct bpf_sock_ops, remote_ip4));
	} else {
		local.words[0] = KM_CTX32(skops, struct bpf_sock_ops, local_ip6[0]);
		local.words[1] = KM_CTX32(skops, struct bpf_sock_ops, local_ip6[1]);
		local.words[2] = KM_CTX32(skops, struct bpf_sock_ops, local_ip6[2]);
		local.words[3] = KM_CTX32(skops, struct bpf_sock_ops, local_ip6[3]);
		remote.words[0] = KM_CTX32(skops, struct bpf_sock_ops, remote_ip6[0]);
		remote.words[1] = KM_CTX32(skops, struct bpf_sock_ops, remote_ip6[1]);
		remote.words[2] = KM_CTX32(skops, struct bpf_sock_ops, remote_ip6[2]);
		remote.words[3] = KM_CTX32(skops, struct bpf_sock_ops, remote_ip6[3]);
	}
	if (km_addr_is_loopback(&local) || km_addr_is_loopback(&remote) ||
	    km_sockops_mark(skops) == KM_TUNNEL_APP_MARK)
		return; /* the pod's own traffic, or the tunnel's: see km_conn_was_open */
	o->cookie = bpf_get_socket_cookie(skops);
	o->ts_ns = bpf_ktime_get_ns();
	if (direction == KM_CONN_OUTBOUND) {
		o->src = local;
		o->sport = lport;
		o->dst = remote;
		o->dport = rport;
	} else {
		o->src = remote;
		o->sport = rport;
		o->dst = local;
		o->dport = lport;
	}
	o->direction = direction;
	o->pad[0] = o->pad[1] = o->pad[2] = 0;
	km_conn_emit(o, sizeof(*o), o->cookie);
}

static __always_inline __u64 km_less(__u64 v, __u64 n)
{
	return v > n ? v - n : 0;
}

/* What a close reports, read from the socket. */
struct km_tcp_counters {
	__u64 bytes_acked, bytes_sent, bytes_retrans, bytes_received;
	__u32 snd_nxt, write_seq, total_retrans, srtt_us;
	unsigned long skc_flags;
	struct km_addr local, remote;
	__u16 family, lport, rport; /* ports in host byte order */
	__u32 mark;
	__u32 accept_backlog; /* the listener's, on a socket the pod accepted (km_conn_direction) */
};

/* Did the pod accept this connection or make it? An accepted socket starts as a copy of its
 * listener and keeps the listener's accept backlog (sk_max_ack_backlog), which a socket that
 * connect()ed never has: the direction without a record per socket, so accepting costs no
 * program. (A listener made with listen(fd, 0) has no backlog: its connections read as
 * outbound.) */
static __always_inline __u8 km_conn_direction(const struct km_tcp_counters *c)
{
	return c->accept_backlog ? KM_CONN_INBOUND : KM_CONN_OUTBOUND;
}

/* READ and READ_INTO for a socket pointer the program may load from directly (a BTF pointer). */
#define KM_READ_PLAIN(p, f) ((p)->f)
#define KM_READ_INTO_PLAIN(dst, p, f) __builtin_memcpy((dst), &(p)->f, sizeof(*(dst)))

/* Fill *c from tp with READ(tp, field) and READ_INTO(dst, tp, field): a cgroup/sock program can
 * neither call bpf_skc_to_tcp_sock nor read the addresses from its context, which is the socket
 * itself, so conn_close.bpf.c reads the socket as a kernel object (see there). */
#define KM_TCP_COUNTERS(tp, c, READ, READ_INTO)                                                    \
	do {                                                                                       \
		(c)->bytes_acked = READ(tp, bytes_acked);                                          \
		(c)->bytes_sent = READ(tp, bytes_sent);                                            \
		(c)->bytes_retrans = READ(tp, bytes_retrans);                                      \
		(c)->bytes_received = READ(tp, bytes_received);                                    \
		(c)->snd_nxt = READ(tp, snd_nxt);                                                  \
		(c)->write_seq = READ(tp, write_seq);                                              \
		(c)->total_retrans = READ(tp, total_retrans);                                      \
		(c)->srtt_us = READ(tp, srtt_us);                                                  \
		(c)->skc_flags = READ(tp, inet_conn.icsk_inet.sk.__sk_common.skc_flags);           \
		(c)->family = READ(tp, inet_conn.icsk_inet.sk.__sk_common.skc_family);             \
		(c)->mark = READ(tp, inet_conn.icsk_inet.sk.sk_mark);                              \
		(c)->accept_backlog = READ(tp, inet_conn.icsk_inet.sk.sk_max_ack_backlog);         \
		if ((c)->family == KM_AF_INET) {                                                   \
			km_addr_from_v4(&(c)->local,                                               \
					READ(tp, inet_conn.icsk_inet.sk.__sk_common.skc_rcv_saddr)); \
			km_addr_from_v4(&(c)->remote,                                              \
					READ(tp, inet_conn.icsk_inet.sk.__sk_common.skc_daddr));   \
		} else { /* an IPv4 peer of a dual-stack socket is v4-mapped, as km_addr wants */ \
			READ_INTO(&(c)->local, tp,                                                 \
				  inet_conn.icsk_inet.sk.__sk_common.skc_v6_rcv_saddr);            \
			READ_INTO(&(c)->remote, tp,                                                \
				  inet_conn.icsk_inet.sk.__sk_common.skc_v6_daddr);                \
		}                                                                                  \
		(c)->lport = READ(tp, inet_conn.icsk_inet.sk.__sk_common.skc_num);                 \
		(c)->rport = bpf_ntohs(READ(tp, inet_conn.icsk_inet.sk.__sk_common.skc_dport));    \
	} while (0)

/* cgroup/sock_release runs when the application lets the socket go, before the kernel queues its
 * FIN. Is this a connection to report? Not a listening socket, nor one that never connected
 * (closed in SYN_SENT, or refused: its SYN was never acked), nor one with a loopback end: a pod's
 * traffic with itself, which ztunnel never sees either; nor the tunnel's connection to the
 * application (from the HBONE caller's address, marked KM_TUNNEL_APP_MARK, which the accepted
 * socket inherits; or from 127.0.0.6), which the tunnel reports with its client's principal. */
static __always_inline int km_conn_was_open(__u32 state, const struct km_tcp_counters *c,
					    __u8 direction)
{
	return state != BPF_TCP_LISTEN && state != BPF_TCP_SYN_SENT &&
	       (direction == KM_CONN_INBOUND || c->bytes_acked != 0) &&
	       !km_addr_is_loopback(&c->local) && !km_addr_is_loopback(&c->remote) &&
	       c->mark != KM_TUNNEL_APP_MARK;
}

/* The counters as a close reports them: what the application wrote is what went out once
 * (bytes_sent counts every transmission of data, bytes_retrans the repeated ones; neither counts a
 * SYN or a FIN) plus what is still queued unsent (write_seq - snd_nxt), less our FIN when an
 * earlier shutdown() queued it and it has not gone out yet (it is the queue's last sequence
 * number). Received data is bytes_received less the peer's FIN once received, which tcp_fin()
 * alone marks with SOCK_DONE. Also what conn_progress.bpf.c reports of an open connection, so a
 * connection's reports only ever grow. */
static __always_inline void km_conn_counted(struct km_conn_close *e, __u64 cookie, __u32 state,
					    const struct km_tcp_counters *c, __u8 direction)
{
	int fin_queued = state == BPF_TCP_FIN_WAIT1 || state == BPF_TCP_CLOSING ||
			 state == BPF_TCP_LAST_ACK;
	__u32 unsent = c->write_seq - c->snd_nxt;

	e->cookie = cookie;
	e->ts_ns = (km_config_flags() & KM_CFG_F_OPEN_REPORTS) ? bpf_ktime_get_ns() : 0;
	if (direction == KM_CONN_OUTBOUND) {
		e->src = c->local;
		e->sport = c->lport;
		e->dst = c->remote;
		e->dport = c->rport;
	} else { /* the pod is the server: the client is the remote end */
		e->src = c->remote;
		e->sport = c->rport;
		e->dst = c->local;
		e->dport = c->lport;
	}
	e->sent_bytes = km_less(c->bytes_sent, c->bytes_retrans) + km_less(unsent, fin_queued && unsent);
	e->received_bytes = km_less(c->bytes_received, !!(c->skc_flags & (1ul << SOCK_DONE)));
	e->retrans = c->total_retrans;
	e->srtt_us = c->srtt_us >> 3;
	e->direction = direction;
	e->pad[0] = e->pad[1] = e->pad[2] = 0;
}

/* The close, into the ring buffer. */
static __always_inline void km_conn_close(struct bpf_sock *sk, __u32 state,
					  const struct km_tcp_counters *c, __u8 direction)
{
	struct km_conn_close e;

	km_conn_counted(&e, bpf_get_socket_cookie(sk), state, c, direction);
	km_conn_emit(&e, sizeof(e), e.cookie);
}

#endif
