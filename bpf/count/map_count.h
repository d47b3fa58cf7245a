/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* map_count.h — one record of the map-count iterator (map_count.bpf.c), as BPF writes it and the
 * map writer reads it. */
#ifndef KM_MAP_COUNT_H
#define KM_MAP_COUNT_H

#ifndef __KMESH_BPF__
#include <linux/types.h>
#endif

struct km_map_count_rec {
	__u32 id;
	__u32 pad;
	__s64 count;
};

#endif
