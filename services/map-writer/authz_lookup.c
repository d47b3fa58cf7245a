/* authz_lookup.c — the per-pod sk_lookup authorization links (see authz_lookup.h). */
#include "services/map-writer/authz_lookup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "kmesh_maps.h"
#include "shared/log.h"
#include "shared/netns.h"

struct attach_ctx {
	uint64_t cookie;
	int prog_fd;
	int link_fd;
};

static void pin_path(const struct km_authz_lookup *l, uint64_t cookie, char *out, size_t len)
{
	snprintf(out, len, "%s/%" PRIu64, l->dir, cookie);
}

/* Inside the pod's namespace: it must still be the enrolled one (a path can be mounted again
 * over another namespace), then the link. */
static int attach_here(void *arg, char *err, size_t errlen)
{
	struct attach_ctx *a = arg;
	uint64_t here;
	int ns, rc = km_netns_cookie_here(&here, err, errlen);

	if (rc)
		return rc;
	if (here != a->cookie) {
		snprintf(err, errlen, "the namespace there is not the enrolled one any more");
		return -ESTALE;
	}
	ns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (ns < 0) {
		rc = -errno;
		snprintf(err, errlen, "opening the namespace: %s", strerror(-rc));
		return rc;
	}
	a->link_fd = bpf_link_create(a->prog_fd, ns, BPF_SK_LOOKUP, NULL);
	rc = a->link_fd < 0 ? -errno : 0;
	close(ns);
	if (rc)
		snprintf(err, errlen, "attaching the sk_lookup program: %s", strerror(-rc));
	return rc;
}

static int set_flag(struct km_authz_lookup *l, uint64_t cookie, int on)
{
	struct km_manage_key k = { .netns_cookie = cookie };
	struct km_manage_value v;

	if (bpf_map_lookup_elem(l->fd_manage, &k, &v) != 0)
		return -errno;
	if (!!(v.flags & KM_MANAGE_F_AUTHZ_LOOKUP) == !!on)
		return 0;
	v.flags = on ? v.flags | KM_MANAGE_F_AUTHZ_LOOKUP : v.flags & ~KM_MANAGE_F_AUTHZ_LOOKUP;
	return bpf_map_update_elem(l->fd_manage, &k, &v, BPF_EXIST) == 0 ? 0 : -errno;
}

uint32_t km_authz_lookup_attach(struct km_authz_lookup *l, uint64_t netns_cookie,
				const char *netns_path, const char *pod)
{
	struct attach_ctx a = { .cookie = netns_cookie, .prog_fd = l->prog_fd, .link_fd = -1 };
	char pin[PATH_MAX + 32], err[256] = "";
	int rc;

	if (l->prog_fd < 0 || !netns_path || !*netns_path)
		return 0;
	pin_path(l, netns_cookie, pin, sizeof(pin));
	if (access(pin, F_OK) == 0)
		return KM_MANAGE_F_AUTHZ_LOOKUP; /* enrolled again: its link stays */
	rc = netns_cookie == l->own_netns_cookie ? attach_here(&a, err, sizeof(err))
						 : km_netns_call(netns_path, attach_here, &a, err,
								 sizeof(err));
	if (rc == 0 && bpf_obj_pin(a.link_fd, pin) != 0) {
		rc = -errno;
		snprintf(err, sizeof(err), "pinning the link in %.150s: %s", l->dir, strerror(-rc));
	}
	if (a.link_fd >= 0)
		close(a.link_fd); /* the pin holds it; without one it detaches here */
	if (rc) {
		l->failed++;
		km_warn("pod %s (netns %s): no authorization at the socket lookup (%s): its denied "
			"connections are dropped and time out instead of being refused at once",
			pod && *pod ? pod : "-", netns_path, err);
		return 0;
	}
	return KM_MANAGE_F_AUTHZ_LOOKUP;
}

void km_authz_lookup_detach(struct km_authz_lookup *l, uint64_t netns_cookie)
{
	char pin[PATH_MAX + 32];

	pin_path(l, netns_cookie, pin, sizeof(pin));
	if (unlink(pin) != 0 && errno != ENOENT)
		km_warn("cannot remove %s: %s", pin, strerror(errno));
}

/* At start: a pinned link of an enrolled pod runs this build's program; the others go. */
static void adopt_pins(struct km_authz_lookup *l)
{
	DIR *d = opendir(l->dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		struct km_manage_key k;
		struct km_manage_value v;
		char pin[PATH_MAX + 300], *end;
		int fd, keep;

		if (e->d_name[0] == '.')
			continue;
		k.netns_cookie = strtoull(e->d_name, &end, 10);
		snprintf(pin, sizeof(pin), "%s/%s", l->dir, e->d_name);
		keep = *end == '\0' && bpf_map_lookup_elem(l->fd_manage, &k, &v) == 0;
		if (keep) {
			fd = bpf_obj_get(pin);
			/* a link whose namespace is gone cannot be updated: it goes too */
			keep = fd >= 0 && bpf_link_update(fd, l->prog_fd, NULL) == 0;
			if (fd >= 0)
				close(fd);
		}
		if (!keep && unlink(pin) != 0)
			km_warn("cannot remove %s: %s", pin, strerror(errno));
	}
	closedir(d);
}

int km_authz_lookup_init(struct km_authz_lookup *l, int prog_fd, const char *links_dir,
			 int fd_manage, int fd_pod_netns)
{
	struct km_manage_key key, next;
	const void *prev = NULL;
	char err[200];

	memset(l, 0, sizeof(*l));
	l->prog_fd = prog_fd;
	l->fd_manage = fd_manage;
	l->fd_pod_netns = fd_pod_netns;
	snprintf(l->dir, sizeof(l->dir), "%s/lookup", links_dir);
	if (mkdir(l->dir, 0700) != 0 && errno != EEXIST) {
		int rc = -errno;

		km_error("cannot make %s: %s", l->dir, strerror(-rc));
		return rc;
	}
	if (km_netns_cookie_here(&l->own_netns_cookie, err, sizeof(err)) != 0)
		km_warn("the map writer's own network namespace: %s", err);
	adopt_pins(l);
	/* every enrolled pod: attached if its namespace is known, and its flag saying so */
	while (bpf_map_get_next_key(fd_manage, prev, &next) == 0) {
		struct km_pod_netns_value where;
		char pin[PATH_MAX + 32];
		uint32_t flags = 0;
		int rc;

		key = next;
		prev = &key;
		pin_path(l, key.netns_cookie, pin, sizeof(pin));
		if (access(pin, F_OK) == 0)
			flags = KM_MANAGE_F_AUTHZ_LOOKUP;
		else if (bpf_map_lookup_elem(fd_pod_netns, &key, &where) == 0) {
			where.path[sizeof(where.path) - 1] = '\0';
			flags = km_authz_lookup_attach(l, key.netns_cookie, where.path, NULL);
		}
		rc = set_flag(l, key.netns_cookie, flags != 0);

		if (rc && rc != -ENOENT)
			km_warn("km_manage: cannot mark netns cookie %llu: %s",
				(unsigned long long)key.netns_cookie, strerror(-rc));
	}
	km_info("authorization at the socket lookup: %llu pods", (unsigned long long)km_authz_lookup_count(l));
	return 0;
}

uint64_t km_authz_lookup_pods_without(const struct km_authz_lookup *l)
{
	struct km_manage_key key, next;
	struct km_manage_value v;
	const void *prev = NULL;
	uint64_t n = 0;

	while (bpf_map_get_next_key(l->fd_manage, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(l->fd_manage, &key, &v) == 0 &&
		    !(v.flags & KM_MANAGE_F_AUTHZ_LOOKUP))
			n++;
	}
	return n;
}

uint64_t km_authz_lookup_count(const struct km_authz_lookup *l)
{
	DIR *d = opendir(l->dir);
	struct dirent *e;
	uint64_t n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

void km_authz_lookup_remove_all(struct km_authz_lookup *l)
{
	DIR *d = opendir(l->dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char pin[PATH_MAX + 300];

		if (e->d_name[0] == '.')
			continue;
		snprintf(pin, sizeof(pin), "%s/%s", l->dir, e->d_name);
		unlink(pin);
	}
	closedir(d);
	rmdir(l->dir);
}
