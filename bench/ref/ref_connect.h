/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* ref_connect.h — the maps of the reference connect4 program (ref_connect.bpf.c), as BPF and
 * bench/connect_bench.c both see them. */
#ifndef KM_BENCH_REF_CONNECT_H
#define KM_BENCH_REF_CONNECT_H

#ifndef __KMESH_BPF__
#include <linux/types.h>
#endif

/* A VIP:port, both in network byte order. */
struct km_ref_vip_key {
	__u32 addr4;
	__u16 port;
	__u16 pad;
};

/* Its endpoints: slots base .. base + count - 1 of the slot array. */
struct km_ref_vip {
	__u32 base;
	__u32 count;
};

/* One endpoint, inline: the pick touches this one slot. */
struct km_ref_slot {
	__u32 addr4;
	__u16 port;
	__u16 pad;
};

/* The VIP hash's capacity: the rows of a cluster's Service VIP:ports, not of its endpoints. */
#define KM_REF_VIPS 65536

#endif
