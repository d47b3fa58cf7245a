/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* conn_count.h — live connections per backend (km_conn_count), changed atomically; a row exists
 * only while its backend has connections. */
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
		return;
	/* A row lives while its backend has connections: the last close deletes it, so the table
	 * holds only backends in use and a deleted backend's row goes with its last connection.
	 * A connection counted on another CPU in the instant between is lost to the count, never
	 * made negative: P2C reads a transiently low count. */
	if (__sync_fetch_and_add(&v->active, delta) == 1 && delta < 0)
		bpf_map_delete_elem(&km_conn_count, &k);
}

#endif
