// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* conn_progress.bpf.c — the byte counters of an enrolled pod's open TCP connections, so metrics
 * move while long connections live, not only when they close. A TCP socket iterator the map
 * writer runs in each enrolled pod's network namespace every --conn-report-interval while
 * monitoring is on: one km_conn_close record (the counters so far, read exactly as the close
 * reads them: lib/conn_events.h) per connection the pod's processes still hold (sockets of the
 * cgroup the programs are attached to: lib/mesh_cgroup.h), to the iterator's output.
 * Nothing runs on the connections' path: the cost is the pass, off the data path. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>

#include "lib/maps.h"
#include "lib/config.h"
#include "lib/conn_events.h"
#include "lib/mesh_cgroup.h"

SEC("iter/tcp")
int km_conn_progress(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct km_tcp_counters c;
	struct km_sock_state *st;
	struct km_conn_close rec;
	struct tcp_sock *tp;
	__u8 direction;
	__u32 state;

	if (!skc || !km_monitoring())
		return 0;
	tp = bpf_skc_to_tcp_sock(skc); /* full sockets only: not request or time-wait ones */
	if (!tp)
		return 0;
	state = skc->skc_state;
	/* released by the application (its close was reported), or not a connection */
	if (state == BPF_TCP_LISTEN || state == BPF_TCP_CLOSE ||
	    (skc->skc_flags & (1ul << SOCK_DEAD)))
		return 0;
	st = bpf_sk_storage_get(&km_sock, tp, 0, 0);
	if (st && (st->flags & KM_SOCK_F_VIA_TUNNEL))
		return 0; /* the tunnel reports it */
	/* only what sock_release will report the close of: a socket of the pod's own processes
	 * (a connection first heard of here counts opened: one never closed would stay open) */
	if (!km_sock_in_mesh_cgroup((const struct sock *)tp))
		return 0;
	KM_TCP_COUNTERS(tp, &c, KM_READ_PLAIN, KM_READ_INTO_PLAIN);
	direction = km_conn_direction(&c);
	if (!km_conn_was_open(state, &c, direction))
		return 0;
	km_conn_counted(&rec, bpf_get_socket_cookie(tp), state, &c, direction);
	bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
