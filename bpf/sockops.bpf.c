// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sockops.bpf.c — per-connection bookkeeping of sockets that connect.bpf.c rewrote: live
 * connection counts per backend (established .. released), for the power-of-two-choices pick, and
 * the hand-over of waypoint sockets to the sk_msg program that prepends the TLV. (The count goes
 * down in conn_close.bpf.c, when the application releases the socket.) Also marks the
 * connections an enrolled pod accepts, which authz_recheck.bpf.c re-decides on policy changes,
 * and, while monitoring is on, reports enrolled pods' connections as they are established
 * (lib/conn_events.h). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "lib/maps.h"
#include "lib/config.h"
#include "lib/conn_count.h"
#include "lib/conn_events.h"
#include "lib/manage.h"
#include "lib/addr.h"

#define KM_SOCKOPS_OK 1

/* Monitoring: report an enrolled pod's new connection. Its close is reported by
 * conn_close.bpf.c when the application lets the socket go: no state callbacks, no storage. */
static __always_inline void km_monitor_open(struct bpf_sock_ops *skops,
					    const struct km_sock_state *st, __u8 direction)
{
	if (km_monitoring() && km_netns_managed(skops))
		km_conn_open(skops, st, direction);
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
		km_monitor_open(skops, st, KM_CONN_OUTBOUND);
	if (!st)
		return;
	/* uncounted by conn_close.bpf.c when the application lets the socket go: no state
	 * callbacks */
	if (st->backend_id && !(st->flags & KM_SOCK_F_COUNTED)) {
		km_conn_count_add(st->backend_id, 1);
		st->flags |= KM_SOCK_F_COUNTED;
	}
	if (st->flags & KM_SOCK_F_VIA_TUNNEL)
		km_tunnel_hand_over(skops);
	if ((st->flags & KM_SOCK_F_VIA_WAYPOINT) && !(st->flags & KM_SOCK_F_TLV_SENT)) {
		struct km_sockhash_key key = { .cookie = bpf_get_socket_cookie(skops) };

		bpf_sock_hash_update(skops, &km_sockhash, &key, BPF_NOEXIST);
	}
}

/* A connection an enrolled pod accepted: remember its direction, which the socket itself does not
 * say, so a later policy change can find and close it if it becomes denied, and its close is
 * reported as inbound. */
static __always_inline void km_on_passive_established(struct bpf_sock_ops *skops)
{
	struct bpf_sock *sk = skops->sk;
	struct km_sock_state *st;

	if (!sk || !km_netns_managed(skops))
		return;
	st = bpf_sk_storage_get(&km_sock, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (st)
		st->flags |= KM_SOCK_F_INBOUND;
	if (km_monitoring())
		km_conn_open(skops, NULL, KM_CONN_INBOUND);
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
