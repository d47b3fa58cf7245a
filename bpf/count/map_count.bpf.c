// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* map_count.bpf.c — an iterator over the kernel's BPF maps that writes, for each, its id and the
 * number of elements the kernel keeps count of (bpf_map_sum_elem_count, kernel 6.6+). The map
 * writer reads it for its table fill gauges: O(maps) per read, where walking the rows was
 * O(rows) (about 0.6 s for a million-row table, with the event loop held). A separate object
 * from kmesh.o, so an older kernel that cannot load it still loads the data plane. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "count/map_count.h"

extern __s64 bpf_map_sum_elem_count(const struct bpf_map *map) __ksym;

SEC("iter/bpf_map")
int km_map_count(struct bpf_iter__bpf_map *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct bpf_map *map = ctx->map;
	struct km_map_count_rec rec = {};

	if (!map)
		return 0;
	rec.id = map->id;
	rec.count = bpf_map_sum_elem_count(map);
	bpf_seq_write(seq, &rec, sizeof(rec));
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
