// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* ref_accept.bpf.c — floors the benchmarks measure in the same run as the shipped programs:
 *   - km_ref_lookup (sk_lookup): the least an authorization at the socket lookup can do, allow
 *     a SYN by one hash lookup of its source address (bench/passive_bench.c's floor per accepted
 *     connection);
 *   - km_ref_release (cgroup/sock_release): the least a close report with byte counters can do,
 *     the 4-tuple, the cookie and two counters into a ring buffer without a wakeup (the floor of
 *     monitoring, in both benchmarks). No enrollment check, no direction, no exact bytes. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "ref_accept.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KM_REF_ALLOWED);
	__type(key, __u32);
	__type(value, __u8);
} km_ref_allowed SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, KM_REF_CLOSES_BYTES);
} km_ref_closes SEC(".maps");

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;

SEC("sk_lookup")
int km_ref_lookup(struct bpf_sk_lookup *ctx)
{
	__u32 src = ctx->remote_ip4;

	return bpf_map_lookup_elem(&km_ref_allowed, &src) ? SK_PASS : SK_DROP;
}

SEC("cgroup/sock_release")
int km_ref_release(struct bpf_sock *sk)
{
	struct km_ref_close r = {};
	const struct tcp_sock *tp;

	if (sk->protocol != IPPROTO_TCP)
		return 1;
	/* a cgroup/sock program cannot read the addresses from its context: the socket itself */
	tp = bpf_rdonly_cast(sk, bpf_core_type_id_kernel(struct tcp_sock));
	r.src4 = tp->inet_conn.icsk_inet.sk.__sk_common.skc_rcv_saddr;
	r.dst4 = tp->inet_conn.icsk_inet.sk.__sk_common.skc_daddr;
	r.sport = tp->inet_conn.icsk_inet.sk.__sk_common.skc_num;
	r.dport = tp->inet_conn.icsk_inet.sk.__sk_common.skc_dport;
	r.bytes_acked = tp->bytes_acked;
	r.bytes_received = tp->bytes_received;
	r.cookie = bpf_get_socket_cookie(sk);
	bpf_ringbuf_output(&km_ref_closes, &r, sizeof(r), BPF_RB_NO_WAKEUP);
	return 1;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
