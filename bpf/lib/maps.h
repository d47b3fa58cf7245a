/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* maps.h — BPF-side declarations of the tables defined in kmesh_maps.h.
 * Every entry file includes this header; the declarations are __weak so that the static linker
 * (bpftool gen object) merges them into one map each in the linked object.
 * max_entries here are placeholders: the map writer sets every size from its flags before load. */
#ifndef KM_BPF_MAPS_H
#define KM_BPF_MAPS_H

#include "kmesh_maps.h"

#define KM_DECLARE_HASH(_name, _key, _value)                                                      \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_HASH);                                                   \
		__type(key, _key);                                                                 \
		__type(value, _value);                                                             \
		__uint(max_entries, 1);                                                            \
		__uint(map_flags, BPF_F_NO_PREALLOC);                                              \
	} _name SEC(".maps") __weak

/* Longest-prefix match; the key starts with its __u32 prefixlen (an LPM trie is never
 * preallocated). */
#define KM_DECLARE_LPM(_name, _key, _value)                                                       \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_LPM_TRIE);                                               \
		__type(key, _key);                                                                 \
		__type(value, _value);                                                             \
		__uint(max_entries, 1);                                                            \
		__uint(map_flags, BPF_F_NO_PREALLOC);                                              \
	} _name SEC(".maps") __weak

#define KM_DECLARE_ONE_ROW(_name, _value)                                                         \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_ARRAY);                                                  \
		__type(key, __u32);                                                                \
		__type(value, _value);                                                             \
		__uint(max_entries, 1);                                                            \
	} _name SEC(".maps") __weak

KM_DECLARE_HASH(km_manage, struct km_manage_key, struct km_manage_value);
KM_DECLARE_HASH(km_pod_netns, struct km_manage_key, struct km_pod_netns_value);
KM_DECLARE_HASH(km_hbone, struct km_addr, struct km_hbone_value);
KM_DECLARE_HASH(km_frontend, struct km_frontend_key, struct km_frontend_value);
KM_DECLARE_HASH(km_service, struct km_service_key, struct km_service_value);
KM_DECLARE_HASH(km_endpoint, struct km_endpoint_key, struct km_endpoint_value);
KM_DECLARE_HASH(km_backend, struct km_backend_key, struct km_backend_value);

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, KM_REFUSED_REASONS);
} km_refused SEC(".maps") __weak;

/* km_endpoint's rows placed in per-service ranges (kmesh_maps.h); the map writer writes them
 * through its own mapping of the array. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct km_endpoint_value);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
} km_slot SEC(".maps") __weak;
KM_DECLARE_HASH(km_port_ovr, struct km_port_override_key, struct km_port_override_value);
KM_DECLARE_HASH(km_conn_count, struct km_conn_count_key, struct km_conn_count_value);
KM_DECLARE_HASH(km_authz_ident, struct km_authz_ident_key, struct km_authz_ident_value);
KM_DECLARE_HASH(km_authz_list, struct km_authz_list_key, struct km_authz_list_value);
KM_DECLARE_HASH(km_authz_match, struct km_authz_match_key, struct km_authz_match_value);
KM_DECLARE_HASH(km_authz_set, struct km_authz_set_key, struct km_authz_set_value);
KM_DECLARE_HASH(km_authz_stats, struct km_authz_stats_key, struct km_authz_stats_value);
KM_DECLARE_HASH(km_authz_denials, struct km_authz_denials_key, struct km_authz_denials_value);
KM_DECLARE_HASH(km_authz_index, struct km_authz_index_key, struct km_authz_index_value);
KM_DECLARE_HASH(km_ipsec_peer, struct km_ipsec_peer_key, struct km_ipsec_peer_value);
KM_DECLARE_ONE_ROW(km_config, struct km_config_value);
KM_DECLARE_ONE_ROW(km_mesh_cgroup, struct km_mesh_cgroup_value);

struct {
	__uint(type, BPF_MAP_TYPE_BLOOM_FILTER);
	__type(value, struct km_addr);
	__uint(max_entries, 1);
	__uint(map_extra, 5); /* hash functions: ~2% false positives at the designed fill */
} km_fe_filter SEC(".maps") __weak;
KM_DECLARE_ONE_ROW(km_meta, struct km_meta_value);
KM_DECLARE_ONE_ROW(km_event_drops, struct km_event_drops_value);

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, KM_CONN_EVENTS_BYTES);
} km_conn_events SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, KM_BPF_LOG_BYTES);
} km_bpf_log SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct km_sock_state);
} km_sock SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct km_addr_port);
} km_sock_tunnel SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct km_addr_port);
	__type(value, struct km_tunnel_origin);
	__uint(max_entries, KM_TUNNEL_ORIGIN_MAX);
} km_tunnel_origin SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__type(key, struct km_sockhash_key);
	__type(value, __u64);
	__uint(max_entries, 1);
} km_sockhash SEC(".maps") __weak;

KM_DECLARE_LPM(km_authz_cidr, struct km_authz_cidr_key, struct km_authz_cidr_value);
KM_DECLARE_LPM(km_ipsec_cidr, struct km_ipsec_cidr_key, struct km_ipsec_cidr_value);

#endif
