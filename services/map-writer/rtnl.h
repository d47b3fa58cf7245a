/* rtnl.h — one route-netlink conversation (libmnl) for the map writer's own interfaces and
 * routes: the DNS proxy's link (dns_link.c) and the rule and route inside pods that bring the
 * tunnel's transparent connections back (pod_route.c). Requests are answered in order on one
 * socket; every change waits for its ack, so an error names the request that failed. */
#ifndef KM_MW_RTNL_H
#define KM_MW_RTNL_H

#include <stddef.h>
#include <stdint.h>

#include <libmnl/libmnl.h>

struct km_rtnl {
	struct mnl_socket *sock;
	unsigned int seq;
	char buf[32768]; /* MNL_SOCKET_DUMP_SIZE: a page-sized buffer may cut a dump's part */
};

/* Opens a NETLINK_ROUTE socket in the calling thread's network namespace. 0, or -1 with err. */
int km_rtnl_open(struct km_rtnl *nl, char *err, size_t errlen);
void km_rtnl_close(struct km_rtnl *nl);

/* A new request of type with flags (NLM_F_REQUEST added) in nl's buffer, for attributes. */
struct nlmsghdr *km_rtnl_start(struct km_rtnl *nl, uint16_t type, uint16_t flags);

/* Sends h and reads the answers to the end (the ack, or a dump's last part), cb for each message
 * (may be NULL). A request that is not a dump asks for its ack. 0, or -errno: the kernel's
 * refusal, or the socket's. */
int km_rtnl_talk(struct km_rtnl *nl, struct nlmsghdr *h, mnl_cb_t cb, void *arg);

#endif
