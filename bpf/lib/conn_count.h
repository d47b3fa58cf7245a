/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* conn_count.h — live connections per backend (km_conn_count), changed atomically. A backend's
 * row is made by its first connection and stays (at 0 when none is open): deleting it at each
 * last close and making it again at the next connection cost a hash delete and insert per short
 * connection. The table is sized for every backend and service id (ids are dense and reused, so
 * a reused id finds its row at the count its earlier holder left, 0 once those closed). */
#ifndef KM_BPF_CONN_COUNT_H
#define KM_BPF_CONN_COUNT_H

#include "maps.h"

static __always_inline void km_conn_count_add(__u32 backend_id, __s64 delta)
{
	struct km_conn_count_key k = { .backend_id = backend_id };
	struct km_conn_count_value *v = bpf_map_lookup_elem(&km_conn_count, &k);

	if (!v) {
		struct km_conn_count_value zero = {};

		if (delta < 0)
			return; /* the row went with its backend */
		bpf_map_update_elem(&km_conn_count, &k, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&km_conn_count, &k);
		if (!v)
			return; /* table full: this backend is not counted */
	}
	if (delta < 0 && v->active == 0)
		return; /* never negative: a close racing on another CPU reads a transiently low count */
	__sync_fetch_and_add(&v->active, delta);
}

#endif
