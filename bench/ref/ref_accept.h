/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* ref_accept.h — the record of the reference close report (ref_accept.bpf.c), as BPF and the
 * benchmarks see it: the size of the shipped one (struct km_conn_close, checked in bench/lib/ref_close.c), the fields any close
 * report needs. */
#ifndef KM_BENCH_REF_ACCEPT_H
#define KM_BENCH_REF_ACCEPT_H

#ifndef __KMESH_BPF__
#include <linux/types.h>
#endif

struct km_ref_close {
	__u64 cookie;
	__u32 src4, dst4;
	__u16 sport, dport;
	__u32 pad;
	__u64 bytes_acked, bytes_received;
	__u8 rest[40]; /* to the shipped record's 80 bytes (struct km_conn_close) */
};

/* The allowed sources' capacity (IPv4 addresses, network byte order). */
#define KM_REF_ALLOWED 65536
#define KM_REF_CLOSES_BYTES (256 * 1024)

#endif
