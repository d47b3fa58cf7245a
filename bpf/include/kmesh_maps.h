/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * kmesh_maps.h — the ONE definition of every BPF table layout.
 *
 * Compiled into the BPF objects and into the user-space C code alike, so a key or value layout is
 * never written twice. Rules:
 *   - every key and value size is a multiple of 4 bytes, with explicit padding fields that must be 0;
 *   - every address is 16 bytes; IPv4 is stored v4-mapped (::ffff:a.b.c.d), so connect4, connect6
 *     and v4-mapped IPv6 sockets all look up the same rows;
 *   - ports are 16-bit values in network byte order (as in struct bpf_sock_addr's user_port).
 * Table sizes are not fixed here: the map writer sets them at start-up from its flags.
 */
#ifndef KMESH_MAPS_H
#define KMESH_MAPS_H

#ifdef __KMESH_BPF__
/* BPF side: types come from vmlinux.h. */
#else
#include <linux/types.h>
#endif

/* Bumped whenever a layout below changes; the map writer refuses to adopt pinned maps of another
 * layout version (they would be misread), and the xDS agent checks it at hello. */
#ifndef KM_LAYOUT_TEST_NEXT
#define KM_LAYOUT_VERSION 5
#else
/* Test builds only (tests/integration/upgrade_test.sh): layout 5 with one more backend field,
 * so an upgrade that changes a value layout is exercised on every run. */
#define KM_LAYOUT_VERSION 0x10005
#endif

/* Locality priority groups 0..6 (0 = best); Istio allows at most 6 routing-preference scopes. */
#define KM_PRIO_COUNT 7

/* Istio LoadBalancing.Mode values, stored as-is in km_service_value.lb_mode. */
enum km_lb_mode {
	KM_LB_RANDOM = 0, /* UNSPECIFIED_MODE: every endpoint, uniformly */
	KM_LB_STRICT = 1,
	KM_LB_FAILOVER = 2,
	KM_LB_PASSTHROUGH = 3,
};

/* km_frontend_value.flags */
#define KM_FE_F_PORT_OVERRIDES 0x1 /* some backends use another target port: see km_port_override */
/* Set by the map writer alone (the xDS agent's rows never carry it): the row's pick_base and
 * pick_count name the range a connection picks from uniformly, so BPF reads no service row. */
#define KM_FE_F_PICK 0x8000

/* What a frontend row points at. */
enum km_frontend_kind {
	KM_FRONTEND_SERVICE = 1,  /* a Service VIP:port; upstream_id is a service id */
	KM_FRONTEND_WORKLOAD = 2, /* a pod IP (port 0 = any port); upstream_id is a workload id */
};

/* An IP address: 16 bytes, IPv4 v4-mapped. */
struct km_addr {
	union {
		__u8 bytes[16];
		__u32 words[4]; /* network byte order words, as in bpf_sock_addr.user_ip6 */
	};
};

/* km_manage: netns cookies of enrolled pods. Written only by the map writer (enroll request). */
struct km_manage_key {
	__u64 netns_cookie;
};
#define KM_MANAGE_F_AUTHZ_LOOKUP 0x1 /* the pod's network namespace has the sk_lookup
					* authorization program: cgroup_skb leaves its SYNs alone */
#define KM_MANAGE_F_TUNNEL_ROUTED_V4 0x2 /* the pod has the rule and route that keep the tunnel's
					  * marked packets in it (KM_TUNNEL_APP_MARK), IPv4 ... */
#define KM_MANAGE_F_TUNNEL_ROUTED_V6 0x4 /* ... and IPv6: set by the map writer once made, so
					  * each refill of the tunnel's sockets need not ask the
					  * kernel again; read by no program */
struct km_manage_value {
	__u32 flags;        /* KM_MANAGE_F_*; 0 in layouts <= 3 before it was used: same layout */
	__u32 host_ifindex; /* the pod's node-side interface (IPsec's encrypt mark goes there);
			     * 0: none. Padding, always 0, in earlier builds: same layout. */
};

/* km_hbone: the addresses of enrolled pods whose port KM_HBONE_PORT the tunnel serves (the map
 * writer made the listener there for it: PodSockets) -> the pod's netns cookie. The kernel's
 * authorization leaves a SYN to that port of such an address to the tunnel, which decides each
 * HBONE stream with the client's principal and the port inside it (docs/tunnel.md): a policy
 * allowing 8080 must not deny 15008, which carries 8080. Looked up only for that port. */
#define KM_HBONE_PORT 15008
struct km_hbone_value {
	__u64 netns_cookie;
};

/* The tunnel's connections to a pod's application come from the HBONE caller's address, as
 * ztunnel's do: the map writer makes those sockets inside the pod with IP_TRANSPARENT and this
 * mark (the tunnel, holding no capability, can change neither), and gives the pod a rule sending
 * marked packets to a table whose one route makes every address local (so they never leave the
 * pod: replies come back over loopback to the tunnel's socket); with tcp_fwmark_accept the
 * application's accepted socket carries the mark too. The kernel's authorization leaves a marked
 * SYN to the tunnel's decision and the connection reports skip marked sockets (the tunnel reports
 * the stream with its client's principal). docs/tunnel.md. */
#define KM_TUNNEL_APP_MARK 0x3aa0u   /* 15008 */
#define KM_TUNNEL_APP_TABLE 15008u

/* km_pod_netns: where each enrolled pod's network namespace is mounted (CNI_NETNS), by the same
 * key as km_manage; read only by the map writer, which enters the namespace to re-check the open
 * connections there when policies change. Pinned so a restarted map writer still knows. */
#define KM_NETNS_PATH_MAX 128 /* with the terminating NUL */
struct km_pod_netns_value {
	char path[KM_NETNS_PATH_MAX];
};

/* km_frontend: (address, port, protocol) -> service or workload. A service has one row per
 * (VIP, service port); the port mapping lives in the row, so there is no per-service port cap. */
struct km_frontend_key {
	struct km_addr addr;
	__u16 port;  /* network byte order; 0 = any port (workload rows) */
	__u8 proto;  /* IPPROTO_TCP */
	__u8 pad;
};
struct km_frontend_value {
	__u32 kind;        /* enum km_frontend_kind */
	__u32 upstream_id; /* service id or workload id */
	__u16 target_port; /* network byte order; service rows only */
	__u16 flags;       /* KM_FE_F_* */
	/* With KM_FE_F_PICK (since layout 5): the service's pick copied here by the map writer when
	 * it is a uniform one (no waypoint, not P2C, every weight 1, a range in km_slot): the range
	 * of the group it picks from (group 0; FAILOVER's first non-empty group), its first slot and
	 * count (> 0). The map writer rewrites a service's frontend rows whenever that changes,
	 * right after the service row, so both name a range the quarantine keeps (slots.h). */
	__u32 pick_base;
	__u32 pick_count;
};

/* km_fe_filter (a Bloom filter of struct km_addr): every address that has had a km_frontend row
 * since the map writer started, so connect() to any other address (most traffic: pod IPs without
 * a waypoint, addresses outside the mesh) is left alone after one filter test, without the
 * enrollment lookup or the frontend misses. Never removed from (a superset; a stale address only
 * costs the full path), rebuilt from km_frontend by each map writer at start (not pinned). */

/* A waypoint (L7 proxy) that traffic must traverse. (addr, port) is the waypoint as xDS names it
 * (its service VIP or its own address, and the HBONE port); a VIP is resolved to a waypoint pod in
 * the same connect(). data_port is the port dialled on that pod (Kmesh's waypoint listens for the
 * original-destination TLV on 15019). port != 0 with an all-zero address means "named but not
 * resolved yet": such traffic is refused, never sent around the waypoint. */
struct km_waypoint_ref {
	struct km_addr addr;
	__u16 port;      /* network byte order; 0 = no waypoint */
	__u16 data_port; /* network byte order */
};

/* km_service_value.flags */
#define KM_SVC_F_P2C 0x1 /* pick the less loaded of two endpoints (live connections per weight) */

/* km_service: per-service load-balancing state. */
struct km_service_key {
	__u32 service_id;
};
struct km_service_value {
	__u32 endpoint_count[KM_PRIO_COUNT]; /* endpoints per priority, indices 0..count-1 */
	__u32 lb_mode;                        /* enum km_lb_mode */
	struct km_waypoint_ref waypoint;      /* service-level waypoint */
	__u32 flags;                          /* KM_SVC_F_* */
	/* Sum of the endpoints' weights per priority. Equal to the count when every weight is 1 (the
	 * pick is then uniform, one lookup); otherwise a binary search over cum_weight. */
	__u64 weight_total[KM_PRIO_COUNT];
	/* Where each priority's endpoints are in km_slot: slot_base + index, in a range of
	 * 1 << slot_order slots. Set by the map writer, which owns the ranges (the xDS agent never
	 * sees them); KM_SLOT_NONE: read km_endpoint by key instead (migrated rows, a range that
	 * could not be had). Since layout 4. */
	__u32 slot_base[KM_PRIO_COUNT];
	__u8 slot_order[KM_PRIO_COUNT];
	__u8 pad;
};

#define KM_SLOT_NONE 0xffffffffu

/* km_endpoint: (service, priority, dense 0-based index) -> backend. The rows' record: dumps, the
 * sync sweep and reference checks read it. km_slot (an mmap-able array of the same values) holds
 * a copy of each service's rows in the service's ranges, which is what BPF picks from: one array
 * element instead of a hash bucket and element. backend_id and addr4 are read and written as one
 * 8-byte word, so a slot rewritten in place is never seen half old, half new. */
struct km_endpoint_key {
	__u32 service_id;
	__u32 prio;
	__u32 index;
};
struct km_endpoint_value {
	__u32 backend_id;
	__u32 addr4;      /* the backend's IPv4 address (network order) when an IPv4 connection may
			   * go straight to it (the backend has no waypoint of its own), so the pick
			   * needs no km_backend lookup; 0 = read km_backend. Padding, always 0, in
			   * earlier builds of layout 3: the same layout, read the old way. */
	__u64 cum_weight; /* weights of the slots 0..index, inclusive (index + 1 when all are 1) */
};

/* km_refused: connect() calls an enrolled pod's connect program refused (ECONNREFUSED), per
 * reason, per CPU; read for metrics. A fixed-size array, not part of the table layout. */
#define KM_REFUSED_NO_ENDPOINT 0 /* a STRICT service with no endpoint in its best locality */
#define KM_REFUSED_WAYPOINT 1    /* a waypoint named but pending, unknown or unreachable */
#define KM_REFUSED_REASONS 2

/* km_backend: a workload's addresses, one per family (all-zero = none of that family). */
struct km_backend_key {
	__u32 backend_id;
};
struct km_backend_value {
	struct km_addr addr4; /* v4-mapped */
	struct km_addr addr6;
	struct km_waypoint_ref waypoint; /* workload-level waypoint */
	__u32 weight;                    /* Workload.capacity, 1 by default */
#ifdef KM_LAYOUT_TEST_NEXT
	__u32 test_next; /* the field the test's next layout adds */
#endif
};

/* km_port_override: a backend whose target port for a service port differs from the service's
 * (Workload.services port lists). Looked up only when the frontend has KM_FE_F_PORT_OVERRIDES. */
struct km_port_override_key {
	__u32 service_id;
	__u32 backend_id;
	__u16 port; /* the service port, network byte order */
	__u16 pad;
};
struct km_port_override_value {
	__u16 target_port; /* network byte order */
	__u16 pad;
};

/* km_sock: socket storage of a socket in an enrolled pod whose destination was rewritten and
 * that something reads later (a waypoint's TLV, a P2C count, the tunnel, a DNS reply): accepted
 * sockets and plain connections have none. */
#define KM_SOCK_F_VIA_WAYPOINT 0x1 /* sent to a waypoint: the TLV goes first */
#define KM_SOCK_F_TLV_SENT 0x2     /* the TLV was prepended (exactly once) */
#define KM_SOCK_F_COUNTED 0x4      /* counted in km_conn_count[backend_id] until it closes */
#define KM_SOCK_F_DNS 0x8          /* DNS sent to the node-local resolver: replies get orig_addr */
/* 0x10 was KM_SOCK_F_INBOUND (accepted: sockops marked it; the socket says so itself now) */
/* 0x20 was KM_SOCK_F_MONITORED (layouts <= 3 kept monitoring state per socket): not reused */
#define KM_SOCK_F_VIA_TUNNEL 0x40  /* sent to the tunnel's outbound listener: km_sock_tunnel says
				    * where the tunnel must take it (HBONE) */
struct km_sock_state {
	struct km_addr orig_addr; /* the destination the application asked for (v4-mapped for IPv4) */
	__u16 orig_port;          /* network byte order */
	__u16 flags;              /* KM_SOCK_F_* */
	__u32 backend_id;         /* the backend (workload) chosen, 0 = none */
};

/* HBONE outbound (issue 49; docs/tunnel.md, "HBONE outbound"). A connection that must leave
 * over HBONE (a workload the xDS agent marks: its tunnel_protocol is HBONE and it is not on this
 * node) is sent by connect() to the tunnel's outbound listener: the agent gives such a backend a
 * waypoint reference whose data_port is KM_TUNNEL_OUTBOUND_PORT and whose address is the
 * listener's (a link-local address of the node, like the DNS proxy's), so the choice costs the
 * other connections nothing. The tunnel, holding no capability, reads where the connection was
 * for with getsockopt(SOL_IP, KM_SO_TUNNEL_ORIGIN) on the socket it accepted, which the map
 * writer's cgroup/getsockopt program answers from km_tunnel_origin:
 *   - connect() records the original destination (km_sock, KM_SOCK_F_VIA_TUNNEL) and the one the
 *     tunnel must reach (km_sock_tunnel: the picked backend's address and target port);
 *   - sockops copies both, once the connection is established, into km_tunnel_origin under the
 *     client's address and port, which is the peer the tunnel sees;
 *   - the getsockopt program answers on the tunnel's accepted sockets of that port only, and
 *     deletes the row it read (an LRU drops rows nobody read). */
#define KM_TUNNEL_OUTBOUND_PORT 15001
/* The tunnel reference's `port` says whether the kernel may still keep the connection: a
 * workload reached over HBONE whose address is a pod of a node this one exchanges IPsec with
 * (km_ipsec_cidr: a node of this data plane, the wire between the two already protected, the
 * identities known from addresses) stays on the kernel path when the agent writes
 * KM_TUNNEL_UNLESS_IPSEC there (--hbone-over-ipsec kernel, the default); a waypoint, and every
 * workload under --hbone-over-ipsec hbone, has KM_TUNNEL_OUTBOUND_PORT: always the tunnel. */
#define KM_TUNNEL_UNLESS_IPSEC 15002
#define KM_SO_TUNNEL_ORIGIN 0x4b4d /* an option no kernel level SOL_IP knows ("KM") */
#define KM_TUNNEL_ORIGIN_MAX 65536 /* connections accepted by the tunnel, not yet read */
struct km_addr_port {
	struct km_addr addr;
	__u16 port; /* network byte order */
	__u16 pad;
};
/* What getsockopt(SOL_IP, KM_SO_TUNNEL_ORIGIN) returns: km_tunnel_origin's value. */
struct km_tunnel_origin {
	struct km_addr orig_addr; /* what the application asked (VIP or pod IP; v4-mapped for IPv4) */
	struct km_addr via_addr;  /* the workload the kernel picked (the CONNECT target) */
	__u16 orig_port;          /* network byte order */
	__u16 via_port;           /* the target port on it, network byte order */
	__u32 pad;
};

/* km_conn_count: live (established, not yet closed) connections per backend, kept by sockops;
 * read by the power-of-two-choices pick. Rows are created by BPF. */
struct km_conn_count_key {
	__u32 backend_id;
};
struct km_conn_count_value {
	__u64 active;
};

/* km_sockhash: sockets that still owe their waypoint the TLV, keyed by socket cookie; the sk_msg
 * program is attached to it. */
struct km_sockhash_key {
	__u64 cookie;
};

/* km_mesh_cgroup: one row (key 0), written by the map writer at start: the cgroup its programs are
 * attached to (--cgroup), by id (the inode of its cgroup-v2 directory) and depth below the
 * cgroup-v2 root. The periodic iterators walk every socket of an enrolled pod's network
 * namespace; this tells them the ones those programs see: a socket of a process outside that
 * cgroup (the tunnel's HBONE connections into the pod, made on sockets the map writer gives it)
 * has no close report and is not the pod's own. id 0: unknown, every socket counts. */
struct km_mesh_cgroup_value {
	__u64 id;
	__u32 level;
	__u32 pad;
};

/* km_config: one row (key 0) of node settings, written by the map writer from its flags at
 * start and changed at run time by kmeshctl (monitoring, authz, BPF log level). */
struct km_config_value {
	struct km_addr dns4; /* node-local resolver for IPv4 DNS (v4-mapped); zero = no redirect */
	struct km_addr dns6; /* ... for IPv6 DNS; zero = no redirect */
	__u16 dns_port;      /* the resolver's port, network byte order */
	__u16 flags;         /* KM_CFG_F_* and the BPF log level (padding, always 0, before) */
};
/* km_config_value.flags; 0 (and no row) means monitoring off, authz on, BPF log level error. */
#define KM_CFG_F_MONITORING 0x1 /* enrolled pods' connections are reported (km_conn_events) */
#define KM_CFG_F_AUTHZ_OFF 0x2  /* authorization is not enforced: every SYN passes */
#define KM_CFG_LOG_SHIFT 2      /* bits 2-3: the BPF log level (km_bpf_log) */
#define KM_CFG_LOG_MASK 0xc
/* A subscriber wants open reports (the access log: its open lines and durations), set by the map
 * writer: sockops (attached for them) reports establishments, and a close carries the kernel's
 * time (bpf_ktime_get_ns). Otherwise no open is reported and the reader stamps a close when it
 * reads the ring, at most KM_CONN_EVENTS_POLL_MS later: the close pays no clock read. */
#define KM_CFG_F_OPEN_REPORTS 0x10
enum km_bpf_log_level {
	KM_BPF_LOG_ERROR = 0,
	KM_BPF_LOG_WARN = 1,
	KM_BPF_LOG_INFO = 2,
	KM_BPF_LOG_DEBUG = 3,
};

/* km_conn_events: a ring buffer of the TCP connections enrolled pods open (outbound) and accept
 * (inbound), written while monitoring is on, three kinds of record told apart by their sizes
 * (each as small as it can be: writing the ring's cache lines is most of a report's cost):
 *   - km_conn_dial, from connect4/6: a rewritten connection's original destination;
 *   - km_conn_open, from sockops: its establishment;
 *   - km_conn_close, from cgroup/sock_release: its close, with the byte counters.
 * The same km_conn_close record, written by conn_progress.bpf.c (a TCP iterator the map writer runs
 * in each enrolled pod's network namespace every --conn-report-interval), reports a connection
 * still open (KM_CONN_PROGRESS), so byte counts move while long connections live.
 * The map writer adds each dial to its open (by cookie) and streams the reports to subscribers
 * (metrics, access log). */
#define KM_CONN_EVENTS_BYTES (256 * 1024)
#define KM_CONN_EVENTS_POLL_MS 50 /* the map writer reads at least this often (no wakeup per report) */
enum km_conn_kind {
	KM_CONN_OPEN = 1,
	KM_CONN_CLOSE = 2,
	KM_CONN_PROGRESS = 3, /* an open connection's counters so far (conn_progress.bpf.c) */
};
enum km_conn_direction {
	KM_CONN_INBOUND = 1,  /* the pod accepted it (reporter: destination) */
	KM_CONN_OUTBOUND = 2, /* the pod connected (reporter: source) */
};
struct km_conn_dial {
	__u64 cookie;            /* the socket's cookie */
	struct km_addr orig_dst; /* what the application asked (v4-mapped for IPv4) */
	__u16 orig_dport;        /* host byte order */
	__u16 pad[3];
};
struct km_conn_open {
	__u64 cookie;            /* the socket's cookie: pairs a close with its open */
	__u64 ts_ns;             /* bpf_ktime_get_ns() (CLOCK_MONOTONIC) */
	struct km_addr src, dst; /* client and server (v4-mapped for IPv4), as connected */
	__u16 sport, dport;      /* host byte order */
	__u8 direction;          /* enum km_conn_direction */
	__u8 pad[3];
};
struct km_conn_close {
	__u64 cookie;
	__u64 ts_ns;
	struct km_addr src, dst;
	__u64 sent_bytes;     /* data bytes the pod wrote (sent once, or still queued) */
	__u64 received_bytes; /* data bytes the pod received */
	__u16 sport, dport;
	__u32 retrans;        /* segments retransmitted */
	__u32 srtt_us;        /* smoothed round-trip time */
	__u8 direction;
	__u8 pad[3];
};

/* km_bpf_log: a ring buffer of the programs' log lines at or above the BPF log level (bits 2-3
 * of km_config_value.flags); the map writer logs them as "bpf". */
#define KM_BPF_LOG_BYTES (64 * 1024)
#define KM_BPF_LOG_MSG 116
struct km_bpf_log_record {
	__u32 level;              /* enum km_bpf_log_level */
	__u32 len;                /* of msg, with its NUL */
	char msg[KM_BPF_LOG_MSG];
};

/* km_event_drops: records that found their ring buffer full (the reader is behind). */
struct km_event_drops_value {
	__u64 conn_events;
	__u64 log_records;
};

/* km_meta: one row (key 0) saying which layout the pinned maps hold, so an upgraded map writer
 * knows what to migrate from. This value's layout never changes. */
struct km_meta_value {
	__u32 layout_version;
	__u32 pad;
};

/* ---- IPsec marks (the IPsec agent's XFRM objects; the tc programs to come set them) ----------
 * 0xd0: decrypted by ESP (the ingress states' output mark; the in/fwd policies match it).
 * 0xe0: pod traffic to encrypt (the out policies match it).
 * Bits 16-27: on an ESP packet arriving at the node, which peer sent it (a per-node id, from the
 * outer source address). Every peer encrypts to this node with the one SPI it advertises, and
 * XFRM finds an input state by (destination, SPI, mark) only, so without the peer id in the mark
 * two peers' states (each with its own pair key) would collide: Kmesh keeps the first and the
 * other peers' traffic fails to decrypt on clusters of more than two nodes. */
#define KM_IPSEC_MARK_DECRYPTED 0xd0
#define KM_IPSEC_MARK_ENCRYPT 0xe0
#define KM_IPSEC_PEER_SHIFT 16
#define KM_IPSEC_PEER_MASK 0x0fff0000u
#define KM_IPSEC_PEER_ID_MAX 4095

/* km_ipsec_cidr: the pod CIDRs of the other nodes that encrypt (LPM): pod traffic to them gets
 * mark 0xe0. One trie for both families: IPv4 as v4-mapped, prefixlen 96 + its length. */
struct km_ipsec_cidr_key {
	__u32 prefixlen;
	struct km_addr addr;
};
struct km_ipsec_cidr_value {
	__u32 peer_id; /* for dumps */
	__u32 pad;
};

/* km_ipsec_peer: the other nodes' addresses, and the id this node gives each (the mark bits an
 * arriving ESP packet gets from its outer source, which selects that peer's input state). */
struct km_ipsec_peer_key {
	struct km_addr addr;
};
struct km_ipsec_peer_value {
	__u32 peer_id; /* 1..KM_IPSEC_PEER_ID_MAX */
	__u32 pad;
};

/* ---- L4 authorization (authz.bpf.c, bpf/lib/authz.h; compiled by the xDS agent's authz_compile.c)
 * A new inbound TCP connection to an enrolled pod is decided on its SYN. Names are interned as u32
 * ids by the agent; string matches (exact, prefix, suffix, presence) are expanded into the ids of
 * the identities the agent knows, so BPF only ever tests set membership. */

/* The twelve lists of an istio.security.Match, in this order in km_authz_match_value.set. */
enum km_authz_field {
	KM_AF_NAMESPACES,
	KM_AF_NOT_NAMESPACES,
	KM_AF_PRINCIPALS,
	KM_AF_NOT_PRINCIPALS,
	KM_AF_SERVICE_ACCOUNTS,
	KM_AF_NOT_SERVICE_ACCOUNTS,
	KM_AF_SOURCE_IPS,
	KM_AF_NOT_SOURCE_IPS,
	KM_AF_DESTINATION_IPS,
	KM_AF_NOT_DESTINATION_IPS,
	KM_AF_DESTINATION_PORTS,
	KM_AF_NOT_DESTINATION_PORTS,
	KM_AF_COUNT
};

/* km_authz_ident: address -> identity of the workload holding it in this node's network (the
 * source of a connection, and its destination). An address not here is "no identity": its
 * namespace is "" (id 0) and no principal or service account matches it. */
struct km_authz_ident_key {
	struct km_addr addr;
};
struct km_authz_ident_value {
	__u32 workload_id;  /* owner of the workload's own policy list (KM_AUTHZ_OWNER_WORKLOAD) */
	__u32 ns_id;        /* namespace; 0 = "" */
	__u32 sa_id;        /* (namespace, service account) pair */
	__u32 principal_id; /* "<trust domain>/ns/<ns>/sa/<sa>" (the SPIFFE id without spiffe://) */
};

/* km_authz_list: the policies that apply to a destination, per scope owner. Each list has a head
 * row (index KM_AUTHZ_HEAD) naming its generation, and entries at (generation bit | position):
 * enforced DENY policies first, then enforced ALLOW, then dry-run. A list is replaced by writing
 * the other generation's entries and then the head, so BPF never sees half of an update. */
enum km_authz_owner_kind {
	KM_AUTHZ_OWNER_GLOBAL = 1,    /* owner 0: Scope GLOBAL */
	KM_AUTHZ_OWNER_NAMESPACE = 2, /* owner = ns_id: Scope NAMESPACE */
	KM_AUTHZ_OWNER_WORKLOAD = 3,  /* owner = workload_id: Workload.authorization_policies */
};
#define KM_AUTHZ_HEAD 0xffffffffu
#define KM_AUTHZ_GEN_BIT 0x80000000u
#define KM_AUTHZ_LIST_MAX 0x10000 /* entries per list */
struct km_authz_list_key {
	__u32 kind;  /* enum km_authz_owner_kind */
	__u32 owner;
	__u32 index; /* KM_AUTHZ_HEAD, or position | (generation ? KM_AUTHZ_GEN_BIT : 0) */
};
#define KM_AUTHZ_P_DENY 0x1    /* action DENY (else ALLOW) */
#define KM_AUTHZ_P_DRY_RUN 0x2 /* counted, never enforced */
struct km_authz_list_value {
	union {
		struct { /* an entry */
			__u32 policy_id; /* rows (policy_id, 0..n_matches-1) in km_authz_match */
			__u32 stat_id;   /* its counters in km_authz_stats (stable across versions) */
			__u32 flags;     /* KM_AUTHZ_P_* */
			__u32 n_matches; /* 0: the policy matches nothing */
		};
		struct { /* the head */
			__u32 n_deny;
			__u32 n_allow;
			__u32 n_dry_run;
			__u32 gen; /* 0 or 1: which generation's entries are live */
		};
	};
};

/* km_authz_match: a policy compiled to a sequence of matches. The policy matches when, for some
 * rule, every clause has a matching match (istio-wire.md 2.2); rows carry where clauses and rules
 * end. Empty matches, clauses and rules are resolved by the compiler: a rule that always holds is
 * one row with every set 0. */
#define KM_AUTHZ_M_END_CLAUSE 0x1
#define KM_AUTHZ_M_END_RULE 0x2
#define KM_AUTHZ_MATCHES_MAX 0x10000 /* rows per policy */
struct km_authz_match_key {
	__u32 policy_id;
	__u32 index;
};
struct km_authz_match_value {
	__u32 flags;             /* KM_AUTHZ_M_* */
	__u32 set[KM_AF_COUNT];  /* per field: 0 = the list is empty, else the set that holds it */
};

/* km_authz_set: membership of an id (namespace, principal or service-account id) or a port (host
 * order) in a set. */
struct km_authz_set_key {
	__u32 set_id;
	__u32 value;
};
struct km_authz_set_value {
	__u32 pad; /* 0 */
};

/* km_authz_cidr (LPM trie): the CIDRs of a set. prefixlen = 64 + CIDR length; family 4 holds the
 * IPv4 address in addr[0..3], family 6 the IPv6 address. An IPv4 connection (or a v4-mapped
 * address) is looked up as family 4, so a v6 CIDR never matches it (as ztunnel). */
struct km_authz_cidr_key {
	__u32 prefixlen;
	__u32 set_id;
	__u32 family; /* 4 or 6 */
	__u8 addr[16];
};
struct km_authz_cidr_value {
	__u32 pad; /* 0 */
};

/* km_authz_index: which policies of a list may match a connection, so a SYN evaluates only those
 * (cost bounded by the candidates, not by the policies that apply). Per list generation and per
 * connection field (source namespace, source (namespace, service account), source principal,
 * destination port), a row per value that some policy of the list names exactly in a positive
 * list, plus a default row for every other value. A row is a bitset over the list's positions:
 * bit p is set when the policy at p has a match whose list for that field is empty, not exact
 * (prefix, suffix, presence), or names the value; not_ lists are ignored. The bits are a superset
 * of the policies that can match, so the exact walk of the candidates decides as a walk of all.
 * Bitsets are split in chunks of 512 positions; a summary row (chunk KM_AZX_SUMMARY) has bit c set
 * when chunk c has any bit set, and only nonzero chunks have rows. Missing rows read as all ones
 * (no filtering): a list without rows is walked whole, as an older compiler's lists. Written with
 * the generation's entries, before the head switches to it; written only for lists of at least
 * KM_AZX_MIN_POLICIES policies (authz_index.c). */
#define KM_AZX_MIN_POLICIES 4 /* shorter lists are walked whole: BPF does not look for rows */
#define KM_AZX_CHUNK_BITS 512
#define KM_AZX_CHUNKS (KM_AUTHZ_LIST_MAX / KM_AZX_CHUNK_BITS) /* 128 */
#define KM_AZX_SUMMARY 0xff
enum km_azx_field {
	KM_AZX_NAMESPACE = 0,       /* source namespace id (0: "" and no identity) */
	KM_AZX_SERVICE_ACCOUNT = 1, /* source (namespace, service account) id */
	KM_AZX_PRINCIPAL = 2,       /* source principal id */
	KM_AZX_PORT = 3,            /* destination port */
	KM_AZX_FIELDS = 4
};
#define KM_AZX_F_DEFAULT 0x80 /* field flag: the row for values that have no row (value 0) */
struct km_authz_index_key {
	__u32 kind;  /* the list's, as km_authz_list_key */
	__u32 owner;
	__u8 gen;    /* 0 or 1: the list generation these rows belong to */
	__u8 field;  /* enum km_azx_field, | KM_AZX_F_DEFAULT */
	__u8 chunk;  /* 0..KM_AZX_CHUNKS-1, or KM_AZX_SUMMARY */
	__u8 pad;    /* 0 */
	__u32 value; /* the id or port; 0 in default rows */
};
struct km_authz_index_value {
	__u64 bits[KM_AZX_CHUNK_BITS / 64]; /* position chunk * 512 + i is bit i % 64 of bits[i / 64];
					     * the summary uses bits[0..1] for chunks 0..127 */
};

/* km_authz_stats: connections decided, per policy (stat_id), written by BPF. For a dry-run
 * policy the counts are what it would have decided. stat_id KM_AUTHZ_STAT_DEFAULT counts the
 * connections decided by no policy: allowed (no ALLOW policy applies) or denied (none matched). */
#define KM_AUTHZ_STAT_DEFAULT 0
struct km_authz_stats_key {
	__u32 stat_id;
};
struct km_authz_stats_value {
	__u64 allowed;
	__u64 denied;
};

/* km_authz_denials: connections denied, per destination workload (its km_authz_ident
 * workload_id; 0: a destination no workload describes) and deciding policy (stat_id), written by
 * BPF on a denial only: an allowed connection pays nothing for it. At most KM_AUTHZ_DENIALS_MAX
 * rows; a denial that finds the table full counts in the row {KM_AUTHZ_DENIALS_OTHER,
 * KM_AUTHZ_DENIALS_OTHER}, which the map writer makes at start. The map writer removes the rows
 * of workloads no address names any more once the table is three-quarters full. */
#define KM_AUTHZ_DENIALS_MAX 4096
#define KM_AUTHZ_DENIALS_OTHER 0xffffffffu
struct km_authz_denials_key {
	__u32 workload_id;
	__u32 stat_id;
};
struct km_authz_denials_value {
	__u64 denied;
};

/* What authz_recheck.bpf.c (iter/tcp) reports for each open connection a policy change denies:
 * one record per socket it closed, written to the iterator's output. */
struct km_authz_closed {
	struct km_addr src, dst; /* the client and the pod's own address (v4-mapped for IPv4) */
	__u16 sport, dport;      /* host byte order */
	__u32 stat_id;           /* the policy that denies it (KM_AUTHZ_STAT_DEFAULT: none allows) */
	__s32 err;               /* bpf_sock_destroy's result: 0 when closed */
	__u32 pad;
};

/* Pinned names (BPF object names are limited to 15 characters). */
#define KM_MAP_MANAGE "km_manage"
#define KM_MAP_IPSEC_CIDR "km_ipsec_cidr"
#define KM_MAP_IPSEC_PEER "km_ipsec_peer"
#define KM_MAP_POD_NETNS "km_pod_netns"
#define KM_MAP_FRONTEND "km_frontend"
#define KM_MAP_SERVICE "km_service"
#define KM_MAP_ENDPOINT "km_endpoint"
#define KM_MAP_SLOT "km_slot"
#define KM_MAP_REFUSED "km_refused"
#define KM_MAP_BACKEND "km_backend"
#define KM_MAP_PORT_OVERRIDE "km_port_ovr"
#define KM_MAP_SOCK "km_sock"
#define KM_MAP_CONN_COUNT "km_conn_count"
#define KM_MAP_SOCKHASH "km_sockhash"
#define KM_MAP_CONFIG "km_config"
#define KM_MAP_META "km_meta"
#define KM_MAP_CONN_EVENTS "km_conn_events"
#define KM_MAP_BPF_LOG "km_bpf_log"
#define KM_MAP_EVENT_DROPS "km_event_drops"
#define KM_MAP_AUTHZ_IDENT "km_authz_ident"
#define KM_MAP_AUTHZ_LIST "km_authz_list"
#define KM_MAP_AUTHZ_MATCH "km_authz_match"
#define KM_MAP_AUTHZ_SET "km_authz_set"
#define KM_MAP_AUTHZ_CIDR "km_authz_cidr"
#define KM_MAP_AUTHZ_STATS "km_authz_stats"
#define KM_MAP_AUTHZ_DENIALS "km_authz_denials"
#define KM_MAP_AUTHZ_INDEX "km_authz_index"

#endif /* KMESH_MAPS_H */
