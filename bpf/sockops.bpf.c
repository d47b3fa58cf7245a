// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sockops.bpf.c — what only an established connection can be given: the hand-over of a waypoint
 * socket to the sk_msg program that prepends the TLV (a sockhash takes established sockets
 * only), the tunnel's record of a connection it carries (keyed by the client's port, picked after
 * connect()), and, while the access log wants them, reports of enrolled pods' connections as
 * they are established (lib/conn_events.h). The kernel runs a sockops program five times per
 * active open and four per accept once it is attached, whatever it does: so the map writer
 * attaches it only while one of those jobs exists (docs/map-writer.md, "Programs on demand").
 * Connection counts (connect.bpf.c, conn_close.bpf.c) and the direction of a connection
 * (lib/conn_events.h) need none of it. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "lib/maps.h"
#include "lib/config.h"
#include "lib/conn_events.h"
#include "lib/manage.h"
#include "lib/addr.h"

#define KM_SOCKOPS_OK 1

/* Monitoring, while a subscriber wants opens (KM_CFG_F_OPEN_REPORTS): report an enrolled pod's
 * new connection. Its close is reported by conn_close.bpf.c when the application lets the socket
 * go: no state callbacks, no storage. Without this report the agent counts a connection opened
 * when it first hears of it: its open connections' report or its close. */
static __always_inline void km_monitor_open(struct bpf_sock_ops *skops, __u8 direction)
{
	if ((km_config_flags() & (KM_CFG_F_MONITORING | KM_CFG_F_OPEN_REPORTS)) ==
		    (KM_CFG_F_MONITORING | KM_CFG_F_OPEN_REPORTS) &&
	    km_netns_managed(skops))
		km_conn_open(skops, direction);
}

/* A connection connect() sent to the tunnel is established: its record, under the address and
 * port the tunnel sees it come from, for the tunnel's getsockopt (tunnel_origin.bpf.c). */
static __noinline void km_tunnel_hand_over(struct bpf_sock_ops *skops)
{
	struct bpf_sock *sk = skops->sk;
	struct km_tunnel_origin origin = {};
	struct km_addr_port key = {};
	struct km_sock_state *st;
	struct km_addr_port *via;

	if (!sk)
		return;
	st = bpf_sk_storage_get(&km_sock, sk, 0, 0);
	via = bpf_sk_storage_get(&km_sock_tunnel, sk, 0, 0);
	if (!st || !via)
		return;
	if (KM_CTX32(skops, struct bpf_sock_ops, family) == KM_AF_INET) {
		km_addr_from_v4(&key.addr, KM_CTX32(skops, struct bpf_sock_ops, local_ip4));
	} else {
		key.addr.words[0] = KM_CTX32(skops, struct bpf_sock_ops, local_ip6[0]);
		key.addr.words[1] = KM_CTX32(skops, struct bpf_sock_ops, local_ip6[1]);
		key.addr.words[2] = KM_CTX32(skops, struct bpf_sock_ops, local_ip6[2]);
		key.addr.words[3] = KM_CTX32(skops, struct bpf_sock_ops, local_ip6[3]);
	}
	key.port = bpf_htons((__u16)KM_CTX32(skops, struct bpf_sock_ops, local_port));
	__builtin_memcpy(&origin.orig_addr, &st->orig_addr, sizeof(origin.orig_addr));
	origin.orig_port = st->orig_port;
	__builtin_memcpy(&origin.via_addr, &via->addr, sizeof(origin.via_addr));
	origin.via_port = via->port;
	bpf_map_update_elem(&km_tunnel_origin, &key, &origin, BPF_ANY);
}

static __always_inline void km_on_established(struct bpf_sock_ops *skops)
{
	struct bpf_sock *sk = skops->sk;
	struct km_sock_state *st;

	if (!sk)
		return;
	st = bpf_sk_storage_get(&km_sock, sk, 0, 0);
	if (!st || !(st->flags & KM_SOCK_F_VIA_TUNNEL)) /* the tunnel reports those (mutual TLS) */
		km_monitor_open(skops, KM_CONN_OUTBOUND);
	if (!st)
		return;
	if (st->flags & KM_SOCK_F_VIA_TUNNEL)
		km_tunnel_hand_over(skops);
	if ((st->flags & KM_SOCK_F_VIA_WAYPOINT) && !(st->flags & KM_SOCK_F_TLV_SENT)) {
		struct km_sockhash_key key = { .cookie = bpf_get_socket_cookie(skops) };

		bpf_sock_hash_update(skops, &km_sockhash, &key, BPF_NOEXIST);
	}
}

/* A connection an enrolled pod accepted: its open report. (Its direction needs no record: the
 * socket keeps its listener's backlog, lib/conn_events.h.) */
static __always_inline void km_on_passive_established(struct bpf_sock_ops *skops)
{
	km_monitor_open(skops, KM_CONN_INBOUND);
}

SEC("sockops")
int km_sockops(struct bpf_sock_ops *skops)
{
	switch (skops->op) {
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		km_on_established(skops);
		break;
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		km_on_passive_established(skops);
		break;
	default:
		break;
	}
	return KM_SOCKOPS_OK;
}
