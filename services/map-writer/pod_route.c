/* pod_route.c — see pod_route.h. */
#include "services/map-writer/pod_route.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>

#include "kmesh_maps.h"
#include "services/map-writer/rtnl.h"
#include "shared/errbuf.h"
#include "shared/netns.h"

#define LOOPBACK_IFINDEX 1 /* in every namespace */

/* fwmark KM_TUNNEL_APP_MARK lookup KM_TUNNEL_APP_TABLE; an existing one is taken. */
static int add_rule(struct km_rtnl *nl, int family)
{
	struct nlmsghdr *h = km_rtnl_start(nl, RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL);
	struct fib_rule_hdr *r = mnl_nlmsg_put_extra_header(h, sizeof(*r));
	int rc;

	r->family = (unsigned char)family;
	r->action = FR_ACT_TO_TBL;
	mnl_attr_put_u32(h, FRA_PRIORITY, KM_POD_ROUTE_RULE_PRIORITY);
	mnl_attr_put_u32(h, FRA_FWMARK, KM_TUNNEL_APP_MARK);
	mnl_attr_put_u32(h, FRA_FWMASK, 0xffffffffu);
	mnl_attr_put_u32(h, FRA_TABLE, KM_TUNNEL_APP_TABLE);
	rc = km_rtnl_talk(nl, h, NULL, NULL);
	return rc == -EEXIST ? 0 : rc;
}

/* The local table's rule from preference 0 to KM_POD_ROUTE_LOCAL_PRIORITY (added there first,
 * so no packet finds no local table meanwhile): the mark's rule then comes before it. */
static int move_local_rule(struct km_rtnl *nl, int family)
{
	for (int del = 0; del < 2; del++) {
		struct nlmsghdr *h = km_rtnl_start(nl, del ? RTM_DELRULE : RTM_NEWRULE,
						   del ? 0 : NLM_F_CREATE | NLM_F_EXCL);
		struct fib_rule_hdr *r = mnl_nlmsg_put_extra_header(h, sizeof(*r));
		int rc;

		r->family = (unsigned char)family;
		r->action = FR_ACT_TO_TBL;
		r->table = RT_TABLE_LOCAL;
		mnl_attr_put_u32(h, FRA_PRIORITY, del ? 0 : KM_POD_ROUTE_LOCAL_PRIORITY);
		mnl_attr_put_u32(h, FRA_TABLE, RT_TABLE_LOCAL);
		rc = km_rtnl_talk(nl, h, NULL, NULL);
		if (rc != 0 && rc != (del ? -ENOENT : -EEXIST))
			return rc;
	}
	return 0;
}

/* local 0.0.0.0/0 (::/0) dev lo in KM_TUNNEL_APP_TABLE; an existing one is taken. */
static int add_route(struct km_rtnl *nl, int family)
{
	struct nlmsghdr *h = km_rtnl_start(nl, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL);
	struct rtmsg *rt = mnl_nlmsg_put_extra_header(h, sizeof(*rt));
	int rc;

	rt->rtm_family = (unsigned char)family;
	rt->rtm_table = RT_TABLE_UNSPEC; /* the table is the attribute: past 255 */
	rt->rtm_protocol = RTPROT_STATIC;
	rt->rtm_scope = RT_SCOPE_HOST;
	rt->rtm_type = RTN_LOCAL;
	mnl_attr_put_u32(h, RTA_TABLE, KM_TUNNEL_APP_TABLE);
	mnl_attr_put_u32(h, RTA_OIF, LOOPBACK_IFINDEX);
	rc = km_rtnl_talk(nl, h, NULL, NULL);
	return rc == -EEXIST ? 0 : rc;
}

int km_pod_route_ensure(char *err, size_t errlen)
{
	static const int families[2] = { AF_INET, AF_INET6 };
	struct km_rtnl nl;
	char why[160];
	int ready = 0, rc;

	if (err && errlen)
		err[0] = '\0';
	if (km_netns_mark_sysctls_get(why, sizeof(why)) != 1) {
		/* the CNI plugin's to set (a container's /proc/sys is read-only): a pod enrolled
		 * before it did needs a restart */
		km_errf(err, errlen, "%s in the pod (the CNI plugin sets it when it enrolls a pod: "
			"a pod enrolled by an older one needs a restart)", why);
		return 0;
	}
	if (km_rtnl_open(&nl, err, errlen) != 0)
		return 0;
	for (int i = 0; i < 2; i++) {
		if ((rc = add_route(&nl, families[i])) == 0 && (rc = add_rule(&nl, families[i])) == 0)
			rc = move_local_rule(&nl, families[i]);
		if (rc == 0)
			ready |= i ? KM_MANAGE_F_TUNNEL_ROUTED_V6 : KM_MANAGE_F_TUNNEL_ROUTED_V4;
		else if (i == 0 || (rc != -EAFNOSUPPORT && rc != -EACCES && rc != -EOPNOTSUPP))
			/* IPv6 switched off in the pod refuses its route: not an error */
			km_errf(err, errlen, "cannot route the tunnel's marked packets to the pod's "
				"loopback (IPv%d): %s", i ? 6 : 4, strerror(-rc));
	}
	km_rtnl_close(&nl);
	return ready;
}
