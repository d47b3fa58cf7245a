/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* sock_state.h — the per-socket record (km_sock socket storage): the original destination and
 * what was done to the socket, for sockops (connection counts), sk_msg (the waypoint TLV) and
 * recvmsg (DNS reply source). */
#ifndef KM_BPF_SOCK_STATE_H
#define KM_BPF_SOCK_STATE_H

#include "maps.h"

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
	/* a socket still counted (connect() again after a failure) stays counted until it closes */
	st->flags = flags | (st->flags & KM_SOCK_F_COUNTED);
	if (!(st->flags & KM_SOCK_F_COUNTED))
		st->backend_id = backend_id;
	return 0;
}

#endif
