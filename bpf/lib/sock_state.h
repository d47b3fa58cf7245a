/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* sock_state.h — the per-socket record (km_sock socket storage): the original destination and
 * what was done to the socket, for sock_release (connection counts), sockops and sk_msg (the
 * waypoint TLV, the tunnel's hand-over) and recvmsg (DNS reply source). */
#ifndef KM_BPF_SOCK_STATE_H
#define KM_BPF_SOCK_STATE_H

#include "maps.h"
#include "conn_count.h"

/* Record where the application wanted to go. Returns 0, or -1 when no storage could be had. */
static __always_inline int km_sock_record(struct bpf_sock *sk, const struct km_addr *orig,
					  __u16 orig_port, __u16 flags, __u32 backend_id)
{
	struct km_sock_state *st;

	if (!sk)
		return -1;
	st = bpf_sk_storage_get(&km_sock, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!st)
		return -1;
	__builtin_memcpy(&st->orig_addr, orig, sizeof(st->orig_addr));
	st->orig_port = orig_port;
	/* The backend's live connections count this one from its connect() until the application
	 * lets the socket go (conn_close.bpf.c): a connection being made is load too, and counting
	 * here needs no program at establishment. A socket connecting again after a failure moves
	 * its count to the new pick. */
	if ((st->flags & KM_SOCK_F_COUNTED) && st->backend_id != backend_id) {
		km_conn_count_add(st->backend_id, -1);
		st->flags &= ~KM_SOCK_F_COUNTED;
	}
	st->flags = flags | (st->flags & KM_SOCK_F_COUNTED);
	st->backend_id = backend_id;
	if (backend_id && !(st->flags & KM_SOCK_F_COUNTED)) {
		km_conn_count_add(backend_id, 1);
		st->flags |= KM_SOCK_F_COUNTED;
	}
	return 0;
}

#endif
