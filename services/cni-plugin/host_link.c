/* host_link.c — see host_link.h. One RTM_GETLINK by name over a NETLINK_ROUTE socket (libmnl). */
#include "services/cni-plugin/host_link.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

struct link_attrs {
	uint32_t link; /* IFLA_LINK */
	int has_link;
	int other_ns; /* IFLA_LINK_NETNSID: the peer is in another namespace (else IFLA_LINK is an
		       * index in this one, meaningless on the node) */
	int veth;     /* IFLA_LINKINFO / IFLA_INFO_KIND == "veth" */
};

static int info_attr(const struct nlattr *a, void *data)
{
	struct link_attrs *la = data;

	if (mnl_attr_get_type(a) == IFLA_INFO_KIND && mnl_attr_validate(a, MNL_TYPE_STRING) == 0)
		la->veth = !strcmp(mnl_attr_get_str(a), "veth");
	return MNL_CB_OK;
}

static int link_attr(const struct nlattr *a, void *data)
{
	struct link_attrs *la = data;

	switch (mnl_attr_get_type(a)) {
	case IFLA_LINK:
		if (mnl_attr_validate(a, MNL_TYPE_U32) == 0) {
			la->link = mnl_attr_get_u32(a);
			la->has_link = 1;
		}
		break;
	case IFLA_LINK_NETNSID:
		la->other_ns = 1;
		break;
	case IFLA_LINKINFO:
		if (mnl_attr_validate(a, MNL_TYPE_NESTED) == 0)
			mnl_attr_parse_nested(a, info_attr, la);
		break;
	}
	return MNL_CB_OK;
}

static int on_link(const struct nlmsghdr *nlh, void *data)
{
	return mnl_attr_parse(nlh, sizeof(struct ifinfomsg), link_attr, data);
}

int km_host_link_peer(const char *ifname, uint32_t *peer_ifindex, char *err, size_t errlen)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct link_attrs la = { 0 };
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifm;
	unsigned int seq = (unsigned int)time(NULL), portid;
	ssize_t n;
	int rc = 0;

	*peer_ifindex = 0;
	if (!ifname || !*ifname || strlen(ifname) >= IFNAMSIZ) {
		snprintf(err, errlen, "interface name '%s' is not valid", ifname ? ifname : "");
		return -EINVAL;
	}
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	nlh->nlmsg_seq = seq;
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, ifname);

	nl = mnl_socket_open(NETLINK_ROUTE);
	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		rc = -errno;
		snprintf(err, errlen, "rtnetlink: %s", strerror(errno));
		goto out;
	}
	portid = mnl_socket_get_portid(nl);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		rc = -errno;
		snprintf(err, errlen, "rtnetlink request for %s: %s", ifname, strerror(errno));
		goto out;
	}
	n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
	if (n < 0 || mnl_cb_run(buf, (size_t)n, seq, portid, on_link, &la) < 0) {
		rc = -errno;
		snprintf(err, errlen, "no interface %s in the pod's namespace: %s", ifname,
			 strerror(errno));
		goto out;
	}
	if (la.veth && la.has_link && la.other_ns)
		*peer_ifindex = la.link;
out:
	if (nl)
		mnl_socket_close(nl);
	return rc;
}
