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

/* A socket the pod made (connect()) may have a record: a P2C-counted connection is uncounted.
 * Returns 1 when the tunnel reports this connection (it carries it over HBONE), not us. An
 * accepted socket never has one (connect() made none): its record is not looked for. */
static __always_inline int km_release_record(struct bpf_sock *sk)
{
	struct km_sock_state *st = bpf_sk_storage_get(&km_sock, sk, 0, 0);

	if (!st)
		return 0;
	if (st->flags & KM_SOCK_F_COUNTED) {
		st->flags &= ~KM_SOCK_F_COUNTED;
		km_conn_count_add(st->backend_id, -1);
	}
	return !!(st->flags & KM_SOCK_F_VIA_TUNNEL);
}

/* The program's body, for a socket pointer read with READ / READ_INTO (conn_events.h). */
#define KM_SOCK_RELEASE(sk, state, tp, READ, READ_INTO)                                            \
	do {                                                                                       \
		struct km_tcp_counters c;                                                          \
                                                                                                   \
		if (!READ(tp, inet_conn.icsk_inet.sk.sk_max_ack_backlog) && km_release_record(sk)) \
			return KM_SOCK_RELEASE_OK;                                                 \
		if (!km_monitoring() || !km_netns_managed(sk))                                     \
			return KM_SOCK_RELEASE_OK;                                                 \
		KM_TCP_COUNTERS(tp, &c, READ, READ_INTO);                                          \
		if (km_conn_was_open(state, &c, km_conn_direction(&c)))                            \
			km_conn_close(sk, state, &c, km_conn_direction(&c));                       \
	} while (0)

SEC("cgroup/sock_release")
int km_sock_release(struct bpf_sock *sk)
{
	__u32 state = sk->state; /* first: a ctx field read after the branches below would be
				  * read through a moved ctx pointer, which the verifier refuses */
	const struct tcp_sock *tp;

	if (sk->protocol != IPPROTO_TCP)
		return KM_SOCK_RELEASE_OK;
	tp = bpf_rdonly_cast(sk, bpf_core_type_id_kernel(struct tcp_sock));
	KM_SOCK_RELEASE(sk, state, tp, KM_READ_PLAIN, KM_READ_INTO_PLAIN);
	return KM_SOCK_RELEASE_OK;
}

SEC("cgroup/sock_release")
int km_sock_release_compat(struct bpf_sock *sk)
{
	__u32 state = sk->state; /* first, as above */
	const struct tcp_sock *tp = (const void *)sk;

	if (sk->protocol != IPPROTO_TCP)
		return KM_SOCK_RELEASE_OK;
	KM_SOCK_RELEASE(sk, state, tp, BPF_CORE_READ, BPF_CORE_READ_INTO);
	return KM_SOCK_RELEASE_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
