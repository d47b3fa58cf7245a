/* ipsec_tc.c — see ipsec_tc.h. Attaching goes through libbpf's tc API (a clsact qdisc, then a
 * direct-action cls_bpf filter at our handle and priority, replaced in place when present). */
#include "services/map-writer/ipsec_tc.h"

#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "services/map-writer/dataplane.h"
#include "shared/addr.h"
#include "shared/log.h"

/* libbpf logs the kernel's reason for every refused tc request, and most refusals here are
 * expected (no qdisc on an interface that was never ours, a clsact qdisc already there): while
 * these calls run, this thread's libbpf messages are captured, not logged, and the kernel's last
 * reason goes into ours. */
static __thread char kernel_said[160];

static int attach(int ifindex, int prog_fd)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = KM_IPSEC_TC_HANDLE,
			    .priority = KM_IPSEC_TC_PRIORITY, .prog_fd = prog_fd,
			    .flags = BPF_TC_F_REPLACE);
	int rc;

	km_dataplane_libbpf_capture(kernel_said, sizeof(kernel_said));
	rc = bpf_tc_hook_create(&hook);
	if (rc == 0 || rc == -EEXIST) { /* EEXIST: the clsact qdisc is there already */
		kernel_said[0] = '\0';
		rc = bpf_tc_attach(&hook, &opts);
	}
	km_dataplane_libbpf_capture(NULL, 0);
	return rc;
}

static int detach(int ifindex)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = KM_IPSEC_TC_HANDLE,
			    .priority = KM_IPSEC_TC_PRIORITY);
	int rc;

	km_dataplane_libbpf_capture(kernel_said, sizeof(kernel_said));
	rc = bpf_tc_detach(&hook, &opts);
	km_dataplane_libbpf_capture(NULL, 0);
	return rc;
}

/* The id of the program at our handle and priority on ifindex's ingress, or 0. */
static uint32_t query(int ifindex)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = KM_IPSEC_TC_HANDLE,
			    .priority = KM_IPSEC_TC_PRIORITY);
	int rc;

	km_dataplane_libbpf_capture(kernel_said, sizeof(kernel_said));
	rc = bpf_tc_query(&hook, &opts);
	km_dataplane_libbpf_capture(NULL, 0);
	return rc == 0 ? opts.prog_id : 0;
}

/* strerror(-rc), with the kernel's reason when it gave one. */
static const char *why(int rc, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s", strerror(-rc), *kernel_said ? " (" : "", kernel_said,
		 *kernel_said ? ")" : "");
	return buf;
}

static int prog_name(int fd, char name[BPF_OBJ_NAME_LEN])
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0)
		return -errno;
	memcpy(name, info.name, BPF_OBJ_NAME_LEN);
	return 0;
}

static int has_nic(const struct km_ipsec_tc *t, int ifindex)
{
	for (size_t i = 0; i < t->n_nics; i++)
		if (t->nics[i] == ifindex)
			return 1;
	return 0;
}

static const char *ifname(int ifindex, char buf[IF_NAMESIZE])
{
	if (!if_indextoname((unsigned)ifindex, buf))
		snprintf(buf, IF_NAMESIZE, "#%d", ifindex);
	return buf;
}

/* The encrypt program on every enrolled pod's interface (on), or off it. Returns how many;
 * enrolled pods without a node-side interface (enrolled while IPsec was off, or by a build
 * before the field existed) are named, since their traffic stays in clear. */
static size_t walk_pods(struct km_ipsec_tc *t, int on)
{
	struct km_manage_key k, next;
	struct km_manage_value v;
	size_t n = 0;
	void *prev = NULL;
	char name[IF_NAMESIZE], reason[256];

	while (bpf_map_get_next_key(t->fd_manage, prev, &next) == 0) {
		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(t->fd_manage, &k, &v) != 0)
			continue;
		if (!v.host_ifindex) {
			if (on)
				km_warn("IPsec: the pod of netns cookie %llu has no node-side interface "
					"known (enrolled while IPsec was off, or by an older version): its "
					"traffic is not encrypted until it is created again",
					(unsigned long long)k.netns_cookie);
			continue;
		}
		if (!on) {
			n += detach((int)v.host_ifindex) == 0;
			continue;
		}
		int rc = attach((int)v.host_ifindex, t->fd_encrypt);

		if (rc == 0) {
			n++;
		} else if (rc != -ENODEV) { /* ENODEV: the pod is going, its DEL will come */
			t->failures++;
			km_error("IPsec: cannot attach the encrypt program to %s (pod netns cookie "
				 "%llu): %s", ifname((int)v.host_ifindex, name),
				 (unsigned long long)k.netns_cookie, why(rc, reason, sizeof(reason)));
		}
	}
	return n;
}

void km_ipsec_tc_init(struct km_ipsec_tc *t, int fd_encrypt, int fd_decrypt, int fd_manage)
{
	char enc[BPF_OBJ_NAME_LEN], dec[BPF_OBJ_NAME_LEN], name[IF_NAMESIZE], reason[256];
	struct if_nameindex *ifs, *i;

	memset(t, 0, sizeof(*t));
	t->fd_encrypt = fd_encrypt;
	t->fd_decrypt = fd_decrypt;
	t->fd_manage = fd_manage;
	if (prog_name(fd_encrypt, enc) || prog_name(fd_decrypt, dec) || !(ifs = if_nameindex())) {
		km_warn("IPsec: cannot look for the tc programs of an earlier run: %s", strerror(errno));
		return;
	}
	for (i = ifs; i->if_index; i++) {
		uint32_t id = query((int)i->if_index);
		char was[BPF_OBJ_NAME_LEN];
		int fd;

		if (!id || (fd = bpf_prog_get_fd_by_id(id)) < 0)
			continue;
		if (prog_name(fd, was) == 0 && !strncmp(was, dec, sizeof(was)) &&
		    t->n_nics < KM_IPSEC_TC_MAX_NICS)
			t->nics[t->n_nics++] = (int)i->if_index;
		close(fd);
	}
	if_freenameindex(ifs);
	if (!t->n_nics)
		return;
	/* IPsec was on: the new programs take the old ones' places */
	t->enabled = 1;
	for (size_t n = 0; n < t->n_nics; n++) {
		int rc = attach(t->nics[n], fd_decrypt);

		if (rc)
			km_error("IPsec: cannot replace the decrypt program on %s: %s",
				 ifname(t->nics[n], name), why(rc, reason, sizeof(reason)));
	}
	km_info("IPsec is on (found from an earlier run): decrypt on %zu interfaces, encrypt on "
		"%zu pods", t->n_nics, walk_pods(t, 1));
}

/* The interfaces (loopback aside) holding one of addrs. Returns how many, or -errno. */
static int nics_of(const struct km_addr *addrs, size_t n, int *out, size_t max)
{
	struct ifaddrs *ifa, *p;
	size_t found = 0;

	if (getifaddrs(&ifa) != 0)
		return -errno;
	for (p = ifa; p; p = p->ifa_next) {
		struct km_addr a;
		int idx, match = 0;

		if (!p->ifa_addr || (p->ifa_flags & IFF_LOOPBACK))
			continue;
		if (p->ifa_addr->sa_family == AF_INET)
			km_addr_from_bytes((const uint8_t *)&((struct sockaddr_in *)p->ifa_addr)->sin_addr,
					   4, &a);
		else if (p->ifa_addr->sa_family == AF_INET6)
			km_addr_from_bytes(
				(const uint8_t *)&((struct sockaddr_in6 *)p->ifa_addr)->sin6_addr, 16, &a);
		else
			continue;
		for (size_t i = 0; i < n; i++)
			match |= !memcmp(&a, &addrs[i], sizeof(a));
		if (!match || !(idx = (int)if_nametoindex(p->ifa_name)))
			continue;
		for (size_t i = 0; i < found; i++)
			match &= out[i] != idx;
		if (match && found < max)
			out[found++] = idx;
	}
	freeifaddrs(ifa);
	return (int)found;
}

int km_ipsec_tc_enable(struct km_ipsec_tc *t, const struct km_addr *addrs, size_t n, char *err,
		       size_t errlen)
{
	int want[KM_IPSEC_TC_MAX_NICS], found;
	char name[IF_NAMESIZE], list[256] = "", reason[256];
	size_t len = 0, pods;
	uint64_t failures;

	found = nics_of(addrs, n, want, KM_IPSEC_TC_MAX_NICS);
	if (found < 0) {
		snprintf(err, errlen, "cannot list this node's interfaces: %s", strerror(-found));
		return -1;
	}
	if (found == 0) {
		char a[KM_ADDR_STRLEN];

		snprintf(err, errlen, "no interface of the map writer's network namespace holds %s%s: "
			 "nowhere to decrypt arriving ESP", n ? km_addr_format(&addrs[0], a) : "(none)",
			 n > 1 ? " or the other node addresses" : "");
		return -1;
	}
	for (int i = 0; i < found; i++) {
		int rc = attach(want[i], t->fd_decrypt);

		if (rc) {
			t->failures++;
			snprintf(err, errlen, "cannot attach the decrypt program to %s: %s",
				 ifname(want[i], name), why(rc, reason, sizeof(reason)));
			for (int j = 0; j < i; j++) /* as it was: off the ones that were not ours */
				if (!has_nic(t, want[j]))
					detach(want[j]);
			return -1;
		}
		len += (size_t)snprintf(list + len, len < sizeof(list) ? sizeof(list) - len : 0,
					"%s%s", i ? ", " : "", ifname(want[i], name));
	}
	for (size_t i = 0; i < t->n_nics; i++) { /* no longer holding a node address */
		int keep = 0;

		for (int j = 0; j < found; j++)
			keep |= want[j] == t->nics[i];
		if (!keep && detach(t->nics[i]) == 0)
			km_info("IPsec: decrypt program taken off %s", ifname(t->nics[i], name));
	}
	memcpy(t->nics, want, (size_t)found * sizeof(*want));
	t->n_nics = (size_t)found;
	t->enabled = 1;
	failures = t->failures;
	pods = walk_pods(t, 1);
	snprintf(err, errlen, "decrypt on %s; encrypt on %zu pods%s", list, pods,
		 t->failures != failures ? " (some could not get it: see the map writer's log)" : "");
	return found + (int)pods;
}

int km_ipsec_tc_disable(struct km_ipsec_tc *t)
{
	int n = 0;

	for (size_t i = 0; i < t->n_nics; i++)
		n += detach(t->nics[i]) == 0;
	n += (int)walk_pods(t, 0);
	t->n_nics = 0;
	t->enabled = 0;
	return n;
}

size_t km_ipsec_tc_pods(const struct km_ipsec_tc *t, size_t *uncovered)
{
	struct km_manage_key k, next;
	struct km_manage_value v;
	size_t n = 0;
	void *prev = NULL;

	*uncovered = 0;
	while (t->enabled && bpf_map_get_next_key(t->fd_manage, prev, &next) == 0) {
		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(t->fd_manage, &k, &v) == 0) {
			n += v.host_ifindex != 0;
			*uncovered += v.host_ifindex == 0;
		}
	}
	return n;
}

int km_ipsec_tc_pod(struct km_ipsec_tc *t, uint32_t ifindex, char *err, size_t errlen)
{
	char name[IF_NAMESIZE], reason[256];
	int rc;

	if (!t->enabled)
		return 0;
	if (!ifindex) {
		snprintf(err, errlen, "IPsec is on and the pod's node-side interface is not given "
			 "(host_ifindex): its traffic to other nodes would leave unencrypted");
		return -1;
	}
	if (has_nic(t, (int)ifindex)) { /* would put encrypt in decrypt's place */
		snprintf(err, errlen, "IPsec is on and the pod's node-side interface %s is a node "
			 "interface (it holds a node address), not a pod's", ifname((int)ifindex, name));
		return -1;
	}
	rc = attach((int)ifindex, t->fd_encrypt);
	if (rc) {
		t->failures++;
		snprintf(err, errlen, "IPsec is on and the encrypt program cannot be attached to the "
			 "pod's interface %s: %s", ifname((int)ifindex, name),
			 why(rc, reason, sizeof(reason)));
		return -1;
	}
	return 0;
}

void km_ipsec_tc_pod_gone(struct km_ipsec_tc *t, uint32_t ifindex)
{
	if (ifindex && !has_nic(t, (int)ifindex))
		detach((int)ifindex);
}
