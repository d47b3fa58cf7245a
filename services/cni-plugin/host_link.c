/* host_link.c — see host_link.h. One RTM_GETLINK by name over a NETLINK_ROUTE socket, with the
 * kernel's own rtnetlink macros (linux/rtnetlink.h): the plugin is linked statically, for its
 * start-up and to run on any node's libraries, and Debian ships libmnl only as a shared
 * library. */
#include "services/cni-plugin/host_link.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

struct link_attrs {
	uint32_t link; /* IFLA_LINK */
	int has_link;
	int other_ns; /* IFLA_LINK_NETNSID: the peer is in another namespace (else IFLA_LINK is an
		       * index in this one, meaningless on the node) */
	int veth;     /* IFLA_LINKINFO / IFLA_INFO_KIND == "veth" */
};

static void parse_link(struct ifinfomsg *ifm, int len, struct link_attrs *la)
{
	for (struct rtattr *a = IFLA_RTA(ifm); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		switch (a->rta_type) {
		case IFLA_LINK:
			if (RTA_PAYLOAD(a) == sizeof(uint32_t)) {
				memcpy(&la->link, RTA_DATA(a), sizeof(uint32_t));
				la->has_link = 1;
			}
			break;
		case IFLA_LINK_NETNSID:
			la->other_ns = 1;
			break;
		case IFLA_LINKINFO: {
			int ilen = (int)RTA_PAYLOAD(a);

			for (struct rtattr *i = RTA_DATA(a); RTA_OK(i, ilen); i = RTA_NEXT(i, ilen))
				if (i->rta_type == IFLA_INFO_KIND)
					la->veth = RTA_PAYLOAD(i) >= 4 &&
						   !strncmp(RTA_DATA(i), "veth", RTA_PAYLOAD(i));
			break;
		}
		}
	}
}

int km_host_link_peer(const char *ifname, uint32_t *peer_ifindex, char *err, size_t errlen)
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifm;
		char attrs[RTA_SPACE(IFNAMSIZ)];
	} req;
	union {
		struct nlmsghdr nh;
		char buf[16384];
	} rep;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct timeval tv = { .tv_sec = 2 };
	struct link_attrs la = { 0 };
	struct rtattr *name;
	ssize_t n;
	int fd, rc = 0, left;

	*peer_ifindex = 0;
	if (!ifname || !*ifname || strlen(ifname) >= IFNAMSIZ) {
		snprintf(err, errlen, "interface name '%s' is not valid", ifname ? ifname : "");
		return -EINVAL;
	}
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_type = RTM_GETLINK;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.nh.nlmsg_seq = 1;
	req.ifm.ifi_family = AF_UNSPEC;
	name = (struct rtattr *)((char *)&req + NLMSG_ALIGN(NLMSG_LENGTH(sizeof(req.ifm))));
	name->rta_type = IFLA_IFNAME;
	name->rta_len = (unsigned short)RTA_LENGTH(strlen(ifname) + 1);
	memcpy(RTA_DATA(name), ifname, strlen(ifname) + 1);
	req.nh.nlmsg_len = NLMSG_ALIGN(NLMSG_LENGTH(sizeof(req.ifm))) + RTA_ALIGN(name->rta_len);

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0) {
		rc = -errno;
		snprintf(err, errlen, "rtnetlink: %s", strerror(errno));
		goto out;
	}
	if (sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "rtnetlink request for %s: %s", ifname, strerror(errno));
		goto out;
	}
	n = recv(fd, &rep, sizeof(rep), 0);
	if (n < 0) {
		rc = -errno;
		snprintf(err, errlen, "rtnetlink answer for %s: %s", ifname, strerror(errno));
		goto out;
	}
	left = (int)n;
	/* NLMSG_OK, without its signed/unsigned comparison */
	for (struct nlmsghdr *h = &rep.nh; left >= (int)sizeof(*h) && h->nlmsg_len >= sizeof(*h) &&
					   (int)h->nlmsg_len <= left;
	     h = NLMSG_NEXT(h, left)) {
		if (h->nlmsg_seq != req.nh.nlmsg_seq)
			continue;
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);

			rc = e->error ? e->error : -ENODEV;
			snprintf(err, errlen, "no interface %s in the pod's namespace: %s", ifname,
				 strerror(-rc));
			goto out;
		}
		if (h->nlmsg_type == RTM_NEWLINK &&
		    h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct ifinfomsg)))
			parse_link(NLMSG_DATA(h), (int)IFLA_PAYLOAD(h), &la);
	}
	if (la.veth && la.has_link && la.other_ns)
		*peer_ifindex = la.link;
out:
	if (fd >= 0)
		close(fd);
	return rc;
}
