/* dns_link.c — the node DNS proxy's dummy interface and its addresses (see dns_link.h). */
#include "services/map-writer/dns_link.h"

#include <errno.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include "services/map-writer/rtnl.h"
#include "shared/errbuf.h"
#include "shared/log.h"

#define DNS_LINK_MAX_ADDRS 64 /* addresses read back from the interface; more are left alone */

/* What the kernel's answers to one request fill in (callbacks below). */
struct found {
	char kind[16];                         /* IFLA_INFO_KIND of the link asked */
	char alias[64];                        /* its IFLA_IFALIAS */
	int ifindex;                           /* addresses of this interface only */
	struct km_addr addrs[DNS_LINK_MAX_ADDRS];
	uint8_t prefix[DNS_LINK_MAX_ADDRS];
	size_t n;
};

/* ---- the link ------------------------------------------------------------------------------ */

static int link_info_attr(const struct nlattr *a, void *arg)
{
	struct found *f = arg;

	if (mnl_attr_get_type(a) == IFLA_INFO_KIND && mnl_attr_validate(a, MNL_TYPE_STRING) >= 0)
		snprintf(f->kind, sizeof(f->kind), "%s", mnl_attr_get_str(a));
	return MNL_CB_OK;
}

static int link_attr(const struct nlattr *a, void *arg)
{
	struct found *f = arg;

	if (mnl_attr_get_type(a) == IFLA_LINKINFO && mnl_attr_validate(a, MNL_TYPE_NESTED) >= 0)
		mnl_attr_parse_nested(a, link_info_attr, arg);
	if (mnl_attr_get_type(a) == IFLA_IFALIAS && mnl_attr_validate(a, MNL_TYPE_STRING) >= 0)
		snprintf(f->alias, sizeof(f->alias), "%s", mnl_attr_get_str(a));
	return MNL_CB_OK;
}

static int on_link(const struct nlmsghdr *h, void *arg)
{
	struct found *f = arg;
	const struct ifinfomsg *ifm = mnl_nlmsg_get_payload(h);

	f->ifindex = ifm->ifi_index;
	return mnl_attr_parse(h, sizeof(*ifm), link_attr, arg);
}

/* The link's index and kind into f; -ENODEV when there is none. */
static int get_link(struct km_rtnl *nl, const char *ifname, struct found *f)
{
	struct nlmsghdr *h = km_rtnl_start(nl, RTM_GETLINK, 0);
	struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(h, sizeof(*ifm));

	ifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(h, IFLA_IFNAME, ifname);
	memset(f, 0, sizeof(*f));
	return km_rtnl_talk(nl, h, on_link, f);
}

static int create_link(struct km_rtnl *nl, const char *ifname, const char *kind)
{
	struct nlmsghdr *h = km_rtnl_start(nl, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
	struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(h, sizeof(*ifm));
	struct nlattr *info;

	ifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(h, IFLA_IFNAME, ifname);
	info = mnl_attr_nest_start(h, IFLA_LINKINFO);
	mnl_attr_put_strz(h, IFLA_INFO_KIND, kind);
	mnl_attr_nest_end(h, info);
	return km_rtnl_talk(nl, h, NULL, NULL);
}

static int set_up(struct km_rtnl *nl, int ifindex)
{
	struct nlmsghdr *h = km_rtnl_start(nl, RTM_NEWLINK, 0);
	struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(h, sizeof(*ifm));

	ifm->ifi_family = AF_UNSPEC;
	ifm->ifi_index = ifindex;
	ifm->ifi_flags = IFF_UP;
	ifm->ifi_change = IFF_UP;
	mnl_attr_put_strz(h, IFLA_IFALIAS, KM_DNS_LINK_ALIAS); /* taken only by an existing link */
	return km_rtnl_talk(nl, h, NULL, NULL);
}

/* ---- its addresses ------------------------------------------------------------------------- */

static int on_addr(const struct nlmsghdr *h, void *arg)
{
	struct found *f = arg;
	const struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(h);
	const struct nlattr *a;

	if ((int)ifa->ifa_index != f->ifindex || f->n == DNS_LINK_MAX_ADDRS)
		return MNL_CB_OK;
	mnl_attr_for_each(a, h, sizeof(*ifa)) {
		uint16_t t = mnl_attr_get_type(a);

		/* IFA_LOCAL is the interface's own IPv4 address; IPv6 has only IFA_ADDRESS */
		if (t != (ifa->ifa_family == AF_INET ? IFA_LOCAL : IFA_ADDRESS) ||
		    km_addr_from_bytes(mnl_attr_get_payload(a), mnl_attr_get_payload_len(a),
				       &f->addrs[f->n]) != 0)
			continue;
		f->prefix[f->n++] = ifa->ifa_prefixlen;
		break;
	}
	return MNL_CB_OK;
}

/* The interface's addresses, one family at a time and asked for that interface alone: a dump
 * of a few addresses is one part, which a change elsewhere on the node cannot interrupt (a
 * dump of the whole namespace, thousands of addresses on a busy node, was split into parts and
 * marked interrupted whenever an address came or went meanwhile). */
static int list_addrs(struct km_rtnl *nl, struct found *f)
{
	static const uint8_t families[] = { AF_INET, AF_INET6 };
	int rc = 0;

	f->n = 0;
	for (size_t i = 0; i < sizeof(families) && rc == 0; i++) {
		struct nlmsghdr *h = km_rtnl_start(nl, RTM_GETADDR, NLM_F_DUMP);
		struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(h, sizeof(*ifa));

		ifa->ifa_family = families[i];
		ifa->ifa_index = (uint32_t)f->ifindex;
		rc = km_rtnl_talk(nl, h, on_addr, f);
	}
	return rc;
}

/* A dump the kernel interrupted (addresses changed meanwhile: EINTR) is asked again. */
static int list_addrs_retry(struct km_rtnl *nl, struct found *f)
{
	int rc = -EINTR;

	for (int i = 0; i < 5 && rc == -EINTR; i++) {
		if (i)
			km_info("DNS: the kernel's address dump was interrupted by a change; asking again");
		rc = list_addrs(nl, f);
	}
	return rc;
}

/* Add (or, del, remove) a as a host address (/32, /128) of the interface; an IPv6 one without
 * duplicate address detection, which would leave it unusable (tentative) for a second. */
static int change_addr(struct km_rtnl *nl, int ifindex, const struct km_addr *a, uint8_t prefix,
		       int del)
{
	struct nlmsghdr *h = km_rtnl_start(nl, del ? RTM_DELADDR : RTM_NEWADDR,
				   del ? 0 : NLM_F_CREATE | NLM_F_REPLACE);
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(h, sizeof(*ifa));
	uint8_t bytes[16];
	size_t len = km_addr_to_bytes(a, bytes);

	ifa->ifa_family = len == 4 ? AF_INET : AF_INET6;
	ifa->ifa_prefixlen = prefix;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	ifa->ifa_index = (uint32_t)ifindex;
	mnl_attr_put(h, IFA_LOCAL, len, bytes);
	mnl_attr_put(h, IFA_ADDRESS, len, bytes);
	if (len == 16) {
		ifa->ifa_flags = IFA_F_NODAD;
		mnl_attr_put_u32(h, IFA_FLAGS, IFA_F_NODAD);
	}
	return km_rtnl_talk(nl, h, NULL, NULL);
}

static int is_v6_link_local(const struct km_addr *a)
{
	uint8_t b[16];

	return km_addr_to_bytes(a, b) == 16 && b[0] == 0xfe && (b[1] & 0xc0) == 0x80;
}

static int wanted(const struct km_addr *a, const struct km_addr *addrs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (memcmp(a, &addrs[i], sizeof(*a)) == 0)
			return 1;
	return 0;
}

int km_dns_link_up(const char *ifname, const struct km_addr *addrs, size_t n, char *err,
		   size_t errlen)
{
	struct found f;
	char text[KM_ADDR_STRLEN];
	struct km_rtnl nl;
	int rc, created = 0;

	if (!*ifname || strlen(ifname) >= IFNAMSIZ || strchr(ifname, '/') || strchr(ifname, ' '))
		return km_errf(err, errlen, "--dns-interface '%s' is not an interface name", ifname);
	if (km_rtnl_open(&nl, err, errlen) != 0)
		return -1;
	rc = get_link(&nl, ifname, &f);
	if (rc == -ENODEV) {
		/* a kernel without dummy interfaces (CONFIG_DUMMY): a bridge without ports holds
		 * local addresses as well, and nothing is ever attached to it */
		if ((rc = create_link(&nl, ifname, "dummy")) == -EOPNOTSUPP)
			rc = create_link(&nl, ifname, "bridge");
		if (rc != 0) {
			km_errf(err, errlen, "cannot create the interface %s: %s", ifname, strerror(-rc));
			goto out;
		}
		rc = get_link(&nl, ifname, &f);
		created = 1;
	}
	if (rc != 0) {
		km_errf(err, errlen, "cannot read the interface %s: %s", ifname, strerror(-rc));
		goto out;
	}
	if (!created && strcmp(f.alias, KM_DNS_LINK_ALIAS) != 0) {
		rc = km_errf(err, errlen, "the interface %s exists and is not kmesh's (a %s without "
			     "the alias '%s'); give --dns-interface another name", ifname,
			     f.kind[0] ? f.kind : "device", KM_DNS_LINK_ALIAS);
		goto out;
	}
	if ((rc = set_up(&nl, f.ifindex)) != 0) {
		km_errf(err, errlen, "cannot set %s up: %s", ifname, strerror(-rc));
		goto out;
	}
	if ((rc = list_addrs_retry(&nl, &f)) != 0) {
		km_errf(err, errlen, "cannot read the addresses of %s: %s", ifname, strerror(-rc));
		goto out;
	}
	for (size_t i = 0; i < f.n; i++) /* an address given before and not now */
		if (!wanted(&f.addrs[i], addrs, n) && !is_v6_link_local(&f.addrs[i]) &&
		    (rc = change_addr(&nl, f.ifindex, &f.addrs[i], f.prefix[i], 1)) != 0) {
			km_errf(err, errlen, "cannot remove %s from %s: %s",
				km_addr_format(&f.addrs[i], text), ifname, strerror(-rc));
			goto out;
		}
	for (size_t i = 0; i < n; i++)
		if ((rc = change_addr(&nl, f.ifindex, &addrs[i], km_addr_is_v4(&addrs[i]) ? 32 : 128,
				      0)) != 0) {
			km_errf(err, errlen, "cannot add %s to %s: %s", km_addr_format(&addrs[i], text),
				ifname, strerror(-rc));
			goto out;
		}
	rc = 0;
out:
	km_rtnl_close(&nl);
	return rc ? -1 : 0;
}

int km_dns_link_remove(const char *ifname, char *err, size_t errlen)
{
	struct found f;
	struct km_rtnl nl;
	int rc;

	if (km_rtnl_open(&nl, err, errlen) != 0)
		return -1;
	rc = get_link(&nl, ifname, &f);
	if (rc == 0 && strcmp(f.alias, KM_DNS_LINK_ALIAS) == 0) {
		struct nlmsghdr *h = km_rtnl_start(&nl, RTM_DELLINK, 0);
		struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(h, sizeof(*ifm));

		ifm->ifi_family = AF_UNSPEC;
		ifm->ifi_index = f.ifindex;
		rc = km_rtnl_talk(&nl, h, NULL, NULL);
	} else if (rc == -ENODEV) {
		rc = 0;
	}
	km_rtnl_close(&nl);
	if (rc)
		return km_errf(err, errlen, "cannot remove the interface %s: %s", ifname,
			       strerror(-rc));
	return 0;
}
