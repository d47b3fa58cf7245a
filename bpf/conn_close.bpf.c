// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* conn_close.bpf.c — cgroup/sock_release: uncounts a connection the power-of-two-choices pick
 * counted (connect() counted it: lib/sock_state.h), and while monitoring is on, reports the close of
 * an enrolled pod's TCP connection with its byte counters (lib/conn_events.h). One run per socket
 * the application closes, instead of sockops state callbacks on every TCP state change.
 *
 * The socket is read as a kernel object, in one of two ways; the map writer loads one:
 *   - km_sock_release: bpf_rdonly_cast (Linux 6.2), plain loads;
 *   - km_sock_release_compat: bpf_probe_read_kernel per field (CAP_PERFMON, which the map writer
 *     requires), about 0.1 us more per close. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "lib/maps.h"
#include "lib/manage.h"
#include "lib/conn_count.h"
#include "lib/conn_events.h"

#define KM_SOCK_RELEASE_OK 1

/* weak: on a kernel without it the map writer loads the compat program instead */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/* Uncounts a P2C-counted connection; says whether this is a TCP socket of an enrolled pod whose
 * close monitoring reports. */
static __always_inline int km_release_reported(struct bpf_sock *sk)
{
	struct km_sock_state *st;

	if (sk->protocol != IPPROTO_TCP)
		return 0;
	st = bpf_sk_storage_get(&km_sock, sk, 0, 0);
	if (st && (st->flags & KM_SOCK_F_COUNTED)) {
		st->flags &= ~KM_SOCK_F_COUNTED;
		km_conn_count_add(st->backend_id, -1);
	}
	/* (the tunnel reports connections it carries over HBONE) */
	return km_monitoring() && km_netns_managed(sk) && !(st && (st->flags & KM_SOCK_F_VIA_TUNNEL));
}

SEC("cgroup/sock_release")
int km_sock_release(struct bpf_sock *sk)
{
	__u32 state = sk->state; /* first: a ctx field read after the branches below would be
				  * read through a moved ctx pointer, which the verifier refuses */
	struct km_tcp_counters c;
	const struct tcp_sock *tp;

	if (!km_release_reported(sk))
		return KM_SOCK_RELEASE_OK;
	tp = bpf_rdonly_cast(sk, bpf_core_type_id_kernel(struct tcp_sock));
	KM_TCP_COUNTERS(tp, &c, KM_READ_PLAIN, KM_READ_INTO_PLAIN);
	if (km_conn_was_open(state, &c, km_conn_direction(&c)))
		km_conn_close(sk, state, &c, km_conn_direction(&c));
	return KM_SOCK_RELEASE_OK;
}

SEC("cgroup/sock_release")
int km_sock_release_compat(struct bpf_sock *sk)
{
	__u32 state = sk->state; /* first, as above */
	struct km_tcp_counters c;
	const struct tcp_sock *tp = (const void *)sk;

	if (!km_release_reported(sk))
		return KM_SOCK_RELEASE_OK;
	KM_TCP_COUNTERS(tp, &c, BPF_CORE_READ, BPF_CORE_READ_INTO);
	if (km_conn_was_open(state, &c, km_conn_direction(&c)))
		km_conn_close(sk, state, &c, km_conn_direction(&c));
	return KM_SOCK_RELEASE_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
