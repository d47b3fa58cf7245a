// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* waypoint_tlv.bpf.c — sk_msg on km_sockhash: the first bytes a socket sends to its waypoint are
 * preceded, exactly once, by the original destination (Kmesh's format, read by the waypoint):
 *   0x01 | u32 BE length (6 or 18) | address (4 or 16 bytes) | port (2 bytes, BE)
 *   0xFE | u32 BE 0
 * An IPv4 or v4-mapped original destination is sent as IPv4. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "lib/maps.h"
#include "lib/addr.h"

#define KM_TLV_ORIG_DST 0x01
#define KM_TLV_END 0xfe
#define KM_TLV_LEN_V4 16 /* 1 + 4 + 4 + 2 + 1 + 4 */
#define KM_TLV_LEN_V6 28 /* 1 + 4 + 16 + 2 + 1 + 4 */

struct km_tlv_v4 {
	__u8 type;
	__u8 len[4];
	__u8 addr[4];
	__u8 port[2];
	__u8 end_type;
	__u8 end_len[4];
} __attribute__((packed));

struct km_tlv_v6 {
	__u8 type;
	__u8 len[4];
	__u8 addr[16];
	__u8 port[2];
	__u8 end_type;
	__u8 end_len[4];
} __attribute__((packed));

static __always_inline void km_put_be32(__u8 *p, __u32 v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static __always_inline int km_write_tlv(struct sk_msg_md *msg, const struct km_sock_state *st)
{
	int v4 = km_addr_is_v4mapped(&st->orig_addr);
	__u32 len = v4 ? KM_TLV_LEN_V4 : KM_TLV_LEN_V6;
	void *data, *end;

	if (bpf_msg_push_data(msg, 0, len, 0) != 0)
		return -1;
	if (bpf_msg_pull_data(msg, 0, len, 0) != 0)
		return -1;
	data = msg->data;
	end = msg->data_end;
	if (v4) {
		struct km_tlv_v4 *t = data;

		if ((void *)(t + 1) > end)
			return -1;
		t->type = KM_TLV_ORIG_DST;
		km_put_be32(t->len, 6);
		__builtin_memcpy(t->addr, &st->orig_addr.words[3], 4);
		__builtin_memcpy(t->port, &st->orig_port, 2);
		t->end_type = KM_TLV_END;
		km_put_be32(t->end_len, 0);
	} else {
		struct km_tlv_v6 *t = data;

		if ((void *)(t + 1) > end)
			return -1;
		t->type = KM_TLV_ORIG_DST;
		km_put_be32(t->len, 18);
		__builtin_memcpy(t->addr, st->orig_addr.bytes, 16);
		__builtin_memcpy(t->port, &st->orig_port, 2);
		t->end_type = KM_TLV_END;
		km_put_be32(t->end_len, 0);
	}
	return 0;
}

SEC("sk_msg")
int km_waypoint_tlv(struct sk_msg_md *msg)
{
	struct km_sock_state *st;

	if (!msg->sk)
		return SK_PASS;
	st = bpf_sk_storage_get(&km_sock, msg->sk, 0, 0);
	if (!st || !(st->flags & KM_SOCK_F_VIA_WAYPOINT) || (st->flags & KM_SOCK_F_TLV_SENT))
		return SK_PASS;
	/* Without the TLV the waypoint would not know where the bytes are for: fail this send
	 * rather than send them bare (the next one tries again). */
	if (km_write_tlv(msg, st) != 0)
		return SK_DROP;
	st->flags |= KM_SOCK_F_TLV_SENT;
	return SK_PASS;
}
