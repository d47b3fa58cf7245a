/* dns_link.h — where the node DNS proxy listens: a dummy interface of the map writer's
 * (--dns-interface) holding the --dns-resolver addresses, so the proxy (the unprivileged xDS
 * agent) serves on addresses this node's pods reach and the network does not (a link-local
 * 169.254.x address is never routed off the link; NodeLocal DNSCache does the same).
 *
 * The interface is made if missing, a dummy (or, on a kernel without them, a bridge with no
 * ports: it holds local addresses as well), marked as kmesh's by its alias; an interface of that
 * name without the alias is someone else's and refused. It is set up, given exactly the wanted
 * addresses (others it holds are removed; IPv6 link-local ones the kernel adds are left), and
 * kept across restarts: the agent's sockets stay bound to it. km_dns_link_remove takes it away
 * (uninstall). Netlink with libmnl; needs CAP_NET_ADMIN in the node's network namespace. */
#ifndef KM_MW_DNS_LINK_H
#define KM_MW_DNS_LINK_H

#include <stddef.h>

#include "shared/addr.h"

#define KM_DNS_LINK_ALIAS "kmesh: node DNS proxy addresses"

/* Returns 0, or -1 with err filled (what failed and why). n at most 2 (one per family). */
int km_dns_link_up(const char *ifname, const struct km_addr *addrs, size_t n, char *err,
		   size_t errlen);
/* 0 (also when there is none), or -1 with err filled. */
int km_dns_link_remove(const char *ifname, char *err, size_t errlen);

#endif
