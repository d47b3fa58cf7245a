/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* config.h — the node settings row (km_config) and what its flags switch: monitoring,
 * authorization, and the BPF log level with km_log(), which formats a line (bpf_snprintf) into
 * the km_bpf_log ring buffer when its level is enabled. */
#ifndef KM_BPF_CONFIG_H
#define KM_BPF_CONFIG_H

#include "maps.h"

static __always_inline const struct km_config_value *km_node_config(void)
{
	__u32 key = 0;

	return bpf_map_lookup_elem(&km_config, &key);
}

static __always_inline __u16 km_config_flags(void)
{
	const struct km_config_value *cfg = km_node_config();

	return cfg ? cfg->flags : 0;
}

static __always_inline void km_count_drop(int log)
{
	__u32 key = 0;
	struct km_event_drops_value *d = bpf_map_lookup_elem(&km_event_drops, &key);

	if (d)
		__sync_fetch_and_add(log ? &d->log_records : &d->conn_events, 1);
}

static __always_inline int km_log_enabled(__u32 level)
{
	return level <= (__u32)((km_config_flags() & KM_CFG_LOG_MASK) >> KM_CFG_LOG_SHIFT);
}

/* km_log(LEVEL, "format", args...): at least one argument (bpf_snprintf's rules: %d %u %x %s
 * %pI4 %pI6 ..., at most 12 arguments, each widened to 64 bits). */
#define km_log(_lvl, _fmt, ...)                                                                   \
	({                                                                                         \
		if (km_log_enabled(_lvl)) {                                                       \
			static const char ___fmt[] = _fmt;                                          \
			__u64 ___args[] = { __VA_ARGS__ };                                         \
			struct km_bpf_log_record *___r =                                           \
				bpf_ringbuf_reserve(&km_bpf_log, sizeof(*___r), 0);                \
			if (___r) {                                                                \
				long ___n = bpf_snprintf(___r->msg, sizeof(___r->msg), ___fmt,     \
							 ___args, sizeof(___args));                \
				___r->level = (_lvl);                                             \
				___r->len = ___n > 0 ? (__u32)___n : 0;                            \
				bpf_ringbuf_submit(___r, 0);                                       \
			} else {                                                                   \
				km_count_drop(1);                                                  \
			}                                                                          \
		}                                                                                  \
	})

#endif
