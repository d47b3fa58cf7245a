/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* dns.h — DNS redirect: a managed pod's DNS (any destination, port 53) goes to the node-local
 * resolver configured in km_config, and the replies' source is restored to the server the
 * application asked, so stub resolvers that check it accept them. IPv4 and IPv6. */
#ifndef KM_BPF_DNS_H
#define KM_BPF_DNS_H

#include "maps.h"
#include "addr.h"
#include "config.h"
#include "sock_state.h"

#define KM_DNS_PORT_NBO bpf_htons(53)

/* The resolver for a destination (IPv4 and v4-mapped use the IPv4 resolver), or NULL when the
 * redirect is off for that family or the destination already is the resolver. */
static __always_inline const struct km_addr *km_dns_resolver(const struct km_addr *dst,
							     __u16 port_nbo, __u16 *resolver_port)
{
	const struct km_config_value *cfg;
	const struct km_addr *r;

	if (port_nbo != KM_DNS_PORT_NBO)
		return NULL;
	cfg = km_node_config();
	if (!cfg)
		return NULL;
	r = km_addr_is_v4mapped(dst) ? &cfg->dns4 : &cfg->dns6;
	if (km_addr_is_zero(r) || (km_addr_eq(r, dst) && cfg->dns_port == port_nbo))
		return NULL;
	*resolver_port = cfg->dns_port;
	return r;
}

/* Redirect a DNS destination: fills *to and *to_port and records the original in the socket.
 * Returns 1 when redirected. */
static __always_inline int km_dns_redirect(struct bpf_sock *sk, const struct km_addr *dst,
					   __u16 port_nbo, struct km_addr *to, __u16 *to_port)
{
	const struct km_addr *r = km_dns_resolver(dst, port_nbo, to_port);

	if (!r || km_sock_record(sk, dst, port_nbo, KM_SOCK_F_DNS, 0) != 0)
		return 0;
	__builtin_memcpy(to, r, sizeof(*to));
	return 1;
}

/* A reply's source, as the application should see it: the original server when the reply comes
 * from the resolver on a socket whose DNS was redirected. Returns 1 when *src was restored. */
static __always_inline int km_dns_restore(struct bpf_sock *sk, struct km_addr *src, __u16 *port_nbo)
{
	const struct km_config_value *cfg = km_node_config();
	struct km_sock_state *st;
	const struct km_addr *r;

	if (!cfg || !sk || *port_nbo != cfg->dns_port)
		return 0;
	r = km_addr_is_v4mapped(src) ? &cfg->dns4 : &cfg->dns6;
	if (km_addr_is_zero(r) || !km_addr_eq(r, src))
		return 0;
	st = bpf_sk_storage_get(&km_sock, sk, 0, 0);
	if (!st || !(st->flags & KM_SOCK_F_DNS))
		return 0;
	__builtin_memcpy(src, &st->orig_addr, sizeof(*src));
	*port_nbo = st->orig_port;
	return 1;
}

#endif
