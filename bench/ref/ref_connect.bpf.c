// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* ref_connect.bpf.c — the floor for bench/connect_bench.c: the least a connect4 program that
 * load-balances a VIP can do. One lookup in a hash of VIP:ports, one random slot of an array of
 * endpoints (the address inline), the rewrite. No enrollment check, no waypoints, no weights, no
 * monitoring: measured in the same run as the shipped programs, it shows how far above the floor
 * they are. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "ref_connect.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KM_REF_VIPS);
	__type(key, struct km_ref_vip_key);
	__type(value, struct km_ref_vip);
} km_ref_vips SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* sized to the endpoints before loading */
	__type(key, __u32);
	__type(value, struct km_ref_slot);
} km_ref_slots SEC(".maps");

SEC("cgroup/connect4")
int km_ref_connect4(struct bpf_sock_addr *ctx)
{
	struct km_ref_vip_key k = { .addr4 = ctx->user_ip4, .port = (__u16)ctx->user_port };
	struct km_ref_vip *v = bpf_map_lookup_elem(&km_ref_vips, &k);
	struct km_ref_slot *s;
	__u32 i;

	if (!v || !v->count)
		return 1;
	i = v->base + bpf_get_prandom_u32() % v->count;
	s = bpf_map_lookup_elem(&km_ref_slots, &i);
	if (!s)
		return 1;
	ctx->user_ip4 = s->addr4;
	ctx->user_port = s->port;
	return 1;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
