/* dataplane.c — skeleton loading, map/link pinning and adoption (see dataplane.h). */
#include "services/map-writer/dataplane.h"

#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/capability.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kmesh.skel.h"
#include "kmesh_maps.h"
#include "services/map-writer/migrate.h"
#include "services/map-writer/probe.h"
#include "services/map-writer/tunnel_cgroup.h"
#include "shared/cgroup2.h"
#include "shared/log.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* set by km_dataplane_libbpf_capture, for this thread only */
static __thread char *capture_buf;
static __thread size_t capture_len;

void km_dataplane_libbpf_capture(char *buf, size_t len)
{
	capture_buf = buf;
	capture_len = len;
	if (buf && len)
		buf[0] = '\0';
}

/* A long message (a verifier log): its first line, then its last LONG_TAIL_LINES lines, where
 * the verifier says why it refused, one log line each. */
#define LONG_TAIL_LINES 40

static void log_long(enum km_log_level level, char *text)
{
	size_t lines = 0, skip, i = 0;
	char *line, *save = NULL;

	for (char *q = text; *q; q++) /* non-empty lines, as strtok_r will see them */
		lines += *q != '\n' && (q[1] == '\n' || q[1] == '\0');
	skip = lines > LONG_TAIL_LINES + 1 ? lines - LONG_TAIL_LINES - 1 : 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
		if (i == 0 || i > skip)
			km_log(level, "%s", line);
		else if (i == 1)
			km_log(level, "... (%zu lines left out)", skip);
	}
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	static const char kernel[] = "Kernel error message: ";
	char buf[1024], *m;
	size_t n;

	if (capture_buf) { /* expected refusals: keep the kernel's reason, log nothing */
		vsnprintf(buf, sizeof(buf), fmt, ap);
		if ((m = strstr(buf, kernel))) {
			m += sizeof(kernel) - 1;
			m[strcspn(m, "\n")] = '\0';
			snprintf(capture_buf, capture_len, "%s", m);
		}
		return 0;
	}
	if (level == LIBBPF_DEBUG && !km_log_enabled(KM_LOG_DEBUG))
		return 0;
	{
		va_list again;
		int len;
		char *all;

		va_copy(again, ap);
		len = vsnprintf(buf, sizeof(buf), fmt, ap);
		if (len >= (int)sizeof(buf) && (all = malloc((size_t)len + 1))) {
			vsnprintf(all, (size_t)len + 1, fmt, again);
			log_long(level == LIBBPF_WARN ? KM_LOG_WARN : KM_LOG_DEBUG, all);
			free(all);
			va_end(again);
			return 0;
		}
		va_end(again);
	}
	n = strlen(buf);
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	km_log(level == LIBBPF_WARN ? KM_LOG_WARN : KM_LOG_DEBUG, "%s", buf);
	return 0;
}

/* Create path and its missing parents; *created says whether path itself was made now. */
static int mkdir_p(const char *path, mode_t mode, int *created)
{
	char tmp[512];

	*created = 0;
	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, mode) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) != 0)
		return errno == EEXIST ? 0 : -errno;
	*created = 1;
	return 0;
}

/* A map pinned by an earlier run is adopted only if its layout is exactly what this build uses;
 * otherwise refuse with a message that names the difference (reading it would corrupt routing). */
static int check_pinned_map(struct bpf_map *map, const char *path, int *adopted)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);
	int fd = bpf_obj_get(path);

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	if (info.type != bpf_map__type(map) || info.key_size != bpf_map__key_size(map) ||
	    info.value_size != bpf_map__value_size(map)) {
		km_error("pinned map %s has type %u key %u B value %u B; this build needs type %u key %u B "
			 "value %u B (layout version %d). Remove the pin directory to start empty.",
			 path, info.type, info.key_size, info.value_size, bpf_map__type(map),
			 bpf_map__key_size(map), bpf_map__value_size(map), KM_LAYOUT_VERSION);
		return -EEXIST;
	}
	if ((info.map_flags ^ bpf_map__map_flags(map)) & BPF_F_NO_PREALLOC) {
		km_warn("pinned map %s is %spreallocated; keeping that (changing it needs an empty pin "
			 "directory)", path, info.map_flags & BPF_F_NO_PREALLOC ? "not " : "");
		bpf_map__set_map_flags(map, info.map_flags);
	}
	if (info.max_entries != bpf_map__max_entries(map)) {
		km_warn("pinned map %s holds up to %u entries; keeping that size (flag asks for %u; "
			 "resizing needs a migration)",
			 path, info.max_entries, bpf_map__max_entries(map));
		bpf_map__set_max_entries(map, info.max_entries);
	}
	(*adopted)++;
	return 0;
}

/* The layout the pinned maps hold: km_meta says; pins without it are layout 2 (before km_meta);
 * 0 when nothing is pinned. */
static uint32_t pinned_layout(const char *maps_dir)
{
	struct km_meta_value meta = { 0 };
	char path[640];
	__u32 key = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", maps_dir, KM_MAP_META);
	fd = bpf_obj_get(path);
	if (fd < 0) {
		snprintf(path, sizeof(path), "%s/%s", maps_dir, KM_MAP_FRONTEND);
		return access(path, F_OK) == 0 ? 2 : 0;
	}
	bpf_map_lookup_elem(fd, &key, &meta);
	close(fd);
	return meta.layout_version;
}

/* Copy the pinned entries of each migrating map, converted, into its new map. */
/* km_fe_filter is new with these programs: it gets the address of every frontend row there is
 * (adopted or migrated) before they are attached, or their connects would go unrewritten. */
static int fill_frontend_filter(struct km_dataplane *dp)
{
	struct km_frontend_key k;
	const void *prev = NULL;
	uint32_t n = 0;

	while (bpf_map_get_next_key(dp->fd_frontend, prev, &k) == 0) {
		if (bpf_map_update_elem(dp->fd_fe_filter, NULL, &k.addr, BPF_ANY) != 0) {
			km_error("cannot fill km_fe_filter: %s", strerror(errno));
			return -errno;
		}
		prev = &k;
		n++;
	}
	if (n)
		km_info("km_fe_filter: %u frontend rows' addresses", n);
	return 0;
}

static int migrate_entries(struct km_dataplane *dp)
{
	for (int i = 0; i < dp->n_migrating; i++) {
		const struct km_map_migration *mig = dp->migrating[i].mig;
		struct bpf_map_info info = { 0 };
		__u32 len = sizeof(info);
		uint8_t key[256], next[256], value[256], nkey[256], nvalue[256];
		int old = bpf_obj_get(dp->migrating[i].path), nfd = bpf_map__fd(dp->migrating[i].map);
		const void *prev = NULL;
		uint64_t n = 0;

		if (old < 0)
			continue; /* not pinned before: starts empty */
		if (bpf_obj_get_info_by_fd(old, &info, &len) != 0 || info.key_size != mig->old_key ||
		    info.value_size != mig->old_value || mig->old_key > sizeof(key) ||
		    mig->old_value > sizeof(value)) {
			km_error("pinned %s has key %u B value %u B, not the %zu/%zu B of layout %u",
				 dp->migrating[i].path, info.key_size, info.value_size, mig->old_key,
				 mig->old_value, dp->from_layout);
			close(old);
			return -EINVAL;
		}
		while (bpf_map_get_next_key(old, prev, next) == 0) {
			memcpy(key, next, mig->old_key);
			prev = key;
			if (bpf_map_lookup_elem(old, key, value) != 0)
				continue;
			memset(nkey, 0, sizeof(nkey));
			memset(nvalue, 0, sizeof(nvalue));
			mig->convert(key, value, nkey, nvalue);
			if (bpf_map_update_elem(nfd, nkey, nvalue, BPF_ANY) != 0) {
				int err = -errno;

				km_error("migrating %s: %s (is the new table smaller?)", mig->map,
					 strerror(-err));
				close(old);
				return err;
			}
			n++;
		}
		close(old);
		dp->migrated_entries += n;
		km_info("migrated %llu entries of %s from layout %u to %u", (unsigned long long)n,
			mig->map, dp->from_layout, KM_LAYOUT_VERSION);
	}
	return 0;
}

/* The new programs are in the links: the migrated maps take over the pins. */
static int repin_migrated(struct km_dataplane *dp)
{
	for (int i = 0; i < dp->n_migrating; i++) {
		int err;

		unlink(dp->migrating[i].path);
		if ((err = bpf_map__pin(dp->migrating[i].map, dp->migrating[i].path))) {
			km_error("cannot pin %s: %s", dp->migrating[i].path, strerror(-err));
			return err;
		}
	}
	return 0;
}

/* km_slot's size: twice the endpoint rows, rounded up to a power of two (the buddy allocator's
 * blocks are at most twice what they hold). 16 B a slot: 8 MiB at the default 262,144 rows. */
uint32_t km_slot_count(uint32_t endpoints)
{
	uint64_t n = 1;

	while (n < 2 * (uint64_t)endpoints && n < (1u << 30))
		n <<= 1;
	return (uint32_t)n;
}

static int setup_maps(struct km_dataplane *dp, const struct km_dataplane_config *cfg)
{
	const struct km_map_migration *migration = NULL;
	struct bpf_map *map;
	struct {
		struct bpf_map *map;
		uint32_t size;
	} sized[] = {
		{ dp->skel->maps.km_manage, dp->sizes.manage },
		{ dp->skel->maps.km_pod_netns, dp->sizes.manage },
		/* an IPv4 and an IPv6 address per pod, as a pod has (more are logged, not served) */
		{ dp->skel->maps.km_hbone, dp->sizes.manage * 2 },
		{ dp->skel->maps.km_frontend, dp->sizes.frontend },
		/* a Bloom filter of the frontends' addresses (at most one per row) */
		{ dp->skel->maps.km_fe_filter, dp->sizes.frontend },
		{ dp->skel->maps.km_service, dp->sizes.service },
		{ dp->skel->maps.km_endpoint, dp->sizes.endpoint },
		/* every endpoint row's copy, in power-of-two ranges per service and priority */
		{ dp->skel->maps.km_slot, km_slot_count(dp->sizes.endpoint) },
		{ dp->skel->maps.km_backend, dp->sizes.backend },
		{ dp->skel->maps.km_port_ovr, dp->sizes.port_override },
		/* rows stay once made (lib/conn_count.h): one per id, backends' and services' */
		{ dp->skel->maps.km_conn_count, dp->sizes.backend + dp->sizes.service },
		{ dp->skel->maps.km_sockhash, dp->sizes.waypoint_sockets },
		{ dp->skel->maps.km_tunnel_origin, KM_TUNNEL_ORIGIN_MAX },
		{ dp->skel->maps.km_authz_ident, dp->sizes.authz_idents },
		{ dp->skel->maps.km_authz_list, dp->sizes.authz_rows },
		{ dp->skel->maps.km_authz_match, dp->sizes.authz_rows },
		{ dp->skel->maps.km_authz_set, dp->sizes.authz_rows },
		{ dp->skel->maps.km_authz_stats, dp->sizes.authz_rows },
		{ dp->skel->maps.km_authz_denials, KM_AUTHZ_DENIALS_MAX },
		{ dp->skel->maps.km_authz_index, dp->sizes.authz_rows },
		{ dp->skel->maps.km_authz_cidr, dp->sizes.authz_cidrs },
		/* every peer id's addresses and pod CIDRs (plan.h: at most 4 of each per node) */
		{ dp->skel->maps.km_ipsec_peer, KM_IPSEC_PEER_ID_MAX * 4 },
		{ dp->skel->maps.km_ipsec_cidr, KM_IPSEC_PEER_ID_MAX * 4 },
	};

	for (size_t i = 0; i < sizeof(sized) / sizeof(sized[0]); i++) {
		int err = bpf_map__set_max_entries(sized[i].map, sized[i].size);

		if (err)
			return err;
		/* the routing tables; counts and sockets are made by BPF and stay on demand */
		if (cfg->preallocate && bpf_map__type(sized[i].map) == BPF_MAP_TYPE_HASH &&
		    sized[i].map != dp->skel->maps.km_conn_count &&
		    sized[i].map != dp->skel->maps.km_authz_stats &&
		    sized[i].map != dp->skel->maps.km_authz_denials &&
		    (err = bpf_map__set_map_flags(sized[i].map,
						  bpf_map__map_flags(sized[i].map) & ~BPF_F_NO_PREALLOC)))
			return err;
	}
	dp->from_layout = pinned_layout(dp->maps_dir);
	if (dp->from_layout && dp->from_layout != KM_LAYOUT_VERSION) {
		migration = km_migration_from(dp->from_layout);
		if (!migration) {
			km_error("the maps pinned in %s have table layout %u; this build (layout %u) "
				 "cannot migrate them. Remove the directory to start empty.",
				 dp->maps_dir, dp->from_layout, KM_LAYOUT_VERSION);
			return -EEXIST;
		}
		km_info("upgrading the tables from layout %u to %u", dp->from_layout,
			KM_LAYOUT_VERSION);
	}
	bpf_object__for_each_map(map, dp->skel->obj) {
		const struct km_map_migration *mig = km_migration_for(migration, bpf_map__name(map));
		char path[640];
		int err;

		if (bpf_map__is_internal(map) || map == dp->skel->maps.km_authz_scratch ||
		    map == dp->skel->maps.km_fe_filter)
			continue; /* working space (km_authz_scratch) and what is rebuilt at start */
		snprintf(path, sizeof(path), "%s/%s", dp->maps_dir, bpf_map__name(map));
		if (mig) { /* a new map now; it takes the pin after the entries are copied */
			int i = dp->n_migrating++;

			if (i >= (int)(sizeof(dp->migrating) / sizeof(dp->migrating[0])))
				return -E2BIG;
			dp->migrating[i].map = map;
			dp->migrating[i].mig = mig;
			snprintf(dp->migrating[i].path, sizeof(dp->migrating[i].path), "%s", path);
			continue;
		}
		err = check_pinned_map(map, path, &dp->adopted_maps);
		if (err)
			return err;
		err = bpf_map__set_pin_path(map, path);
		if (err)
			return err;
	}
	return 0;
}

/* Attach prog to the cgroup, or, if a link is already pinned (earlier run), swap its program
 * atomically so there is no moment without a program attached. */
static int attach_link(struct km_dataplane *dp, struct bpf_program *prog, int cgroup_fd,
		       const char *name, struct bpf_link **out)
{
	char path[640];
	struct bpf_link *link;
	int err;

	snprintf(path, sizeof(path), "%s/%s", dp->links_dir, name);
	/* no pin is the normal first start: not worth libbpf's warning */
	link = access(path, F_OK) == 0 ? bpf_link__open(path) : NULL;
	if (link) {
		err = bpf_link__update_program(link, prog);
		if (err) {
			km_error("cannot update pinned link %s: %s", path, strerror(-err));
			bpf_link__destroy(link);
			return err;
		}
		dp->adopted_links++;
		*out = link;
		return 0;
	}
	link = bpf_program__attach_cgroup(prog, cgroup_fd);
	if (!link) {
		err = -errno;
		km_error("cannot attach %s to the cgroup: %s", name, strerror(-err));
		return err;
	}
	err = bpf_link__pin(link, path);
	if (err) {
		km_error("cannot pin link %s: %s", path, strerror(-err));
		bpf_link__destroy(link);
		return err;
	}
	*out = link;
	return 0;
}

/* The cgroup the tunnel runs in: its link there is unpinned when it is given no more (a tunnel
 * cgroup of an earlier start would keep answering otherwise). Returns 0 or -errno (logged). */
static int open_tunnel_cgroup(struct km_dataplane *dp, const char *path)
{
	struct statfs st;
	char pin[640];

	dp->tunnel_cgroup_fd = -1;
	dp->tunnel_auto = path && !strcmp(path, "auto"); /* a link of an earlier start is kept */
	if (dp->tunnel_auto)
		return 0;
	if (!path || !*path) {
		snprintf(pin, sizeof(pin), "%s/tunnel_origin", dp->links_dir);
		unlink(pin);
		return 0;
	}
	dp->tunnel_cgroup_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dp->tunnel_cgroup_fd < 0) {
		int err = -errno;

		km_error("cannot open the tunnel's cgroup %s (--tunnel-cgroup): %s", path,
			 strerror(-err));
		return err;
	}
	if (fstatfs(dp->tunnel_cgroup_fd, &st) != 0 ||
	    (unsigned long)st.f_type != CGROUP2_SUPER_MAGIC) {
		km_error("--tunnel-cgroup %s is not a cgroup-v2 directory", path);
		return -ENOTDIR;
	}
	return 0;
}

int km_dataplane_tunnel_cgroup(struct km_dataplane *dp, uint64_t id, char *err, size_t errlen)
{
	struct bpf_link **link = &dp->links[KM_HOOK_TUNNEL_ORIGIN];
	struct bpf_link_info info;
	__u32 len = sizeof(info);
	int fd, rc;

	if (!dp->tunnel_auto) {
		if (dp->tunnel_cgroup_fd >= 0)
			return 0; /* --tunnel-cgroup PATH: the operator's word */
		snprintf(err, errlen, "the map writer has no --tunnel-cgroup: HBONE outbound cannot "
			 "learn where connections were for");
		return -1;
	}
	memset(&info, 0, sizeof(info));
	if (*link && bpf_obj_get_info_by_fd(bpf_link__fd(*link), &info, &len) == 0 &&
	    info.cgroup.cgroup_id == id)
		return 0; /* there already */
	fd = km_cgroup_open_by_id(dp->cgroup_path, id);
	if (fd < 0) {
		snprintf(err, errlen, "no cgroup-v2 directory with id %llu on the filesystem of %s",
			 (unsigned long long)id, dp->cgroup_path);
		return -1;
	}
	if (*link) { /* the tunnel moved (a new container): the program follows it */
		bpf_link__unpin(*link);
		bpf_link__destroy(*link);
		*link = NULL;
	}
	rc = attach_link(dp, dp->skel->progs.km_tunnel_origin_get, fd, "tunnel_origin", link);
	close(fd);
	if (rc) {
		snprintf(err, errlen, "cannot attach the tunnel's getsockopt program: %s",
			 strerror(-rc));
		return -1;
	}
	km_info("the tunnel's getsockopt program is on its cgroup (id %llu)", (unsigned long long)id);
	return 0;
}

/* A hook's program and the name of its pinned link. */
static struct bpf_program *hook_prog(const struct km_dataplane *dp, int hook, const char **name)
{
	static const char *const names[KM_HOOK_COUNT] = {
		[KM_HOOK_CONNECT4] = "connect4", [KM_HOOK_CONNECT6] = "connect6",
		[KM_HOOK_SENDMSG4] = "sendmsg4", [KM_HOOK_SENDMSG6] = "sendmsg6",
		[KM_HOOK_RECVMSG4] = "recvmsg4", [KM_HOOK_RECVMSG6] = "recvmsg6",
		[KM_HOOK_SOCKOPS] = "sockops",   [KM_HOOK_AUTHZ_INGRESS] = "authz_ingress",
		[KM_HOOK_SOCK_RELEASE] = "sock_release", [KM_HOOK_TUNNEL_ORIGIN] = "tunnel_origin",
	};
	struct bpf_program *progs[KM_HOOK_COUNT] = {
		[KM_HOOK_CONNECT4] = dp->skel->progs.km_connect4,
		[KM_HOOK_CONNECT6] = dp->skel->progs.km_connect6,
		[KM_HOOK_SENDMSG4] = dp->skel->progs.km_sendmsg4,
		[KM_HOOK_SENDMSG6] = dp->skel->progs.km_sendmsg6,
		[KM_HOOK_RECVMSG4] = dp->skel->progs.km_recvmsg4,
		[KM_HOOK_RECVMSG6] = dp->skel->progs.km_recvmsg6,
		[KM_HOOK_SOCKOPS] = dp->skel->progs.km_sockops,
		[KM_HOOK_AUTHZ_INGRESS] = dp->skel->progs.km_authz_ingress,
		[KM_HOOK_SOCK_RELEASE] = dp->rdonly_cast ? dp->skel->progs.km_sock_release
							 : dp->skel->progs.km_sock_release_compat,
		[KM_HOOK_TUNNEL_ORIGIN] = dp->skel->progs.km_tunnel_origin_get,
	};

	*name = names[hook];
	return progs[hook];
}

static int on_demand(int hook)
{
	return hook == KM_HOOK_SOCKOPS || hook == KM_HOOK_AUTHZ_INGRESS;
}

static const char *demand_names(unsigned d, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s", d & KM_DEMAND_ADOPTED ? " adopted" : "",
		 d & KM_DEMAND_OPENS ? " open-reports" : "", d & KM_DEMAND_WAYPOINTS ? " waypoints" : "",
		 d & KM_DEMAND_NO_LOOKUP ? " pods-without-sk_lookup" : "");
	return buf;
}

int km_dataplane_demand(struct km_dataplane *dp, enum km_dp_hook hook, unsigned reason, int on)
{
	unsigned want = on ? dp->demand[hook] | reason : dp->demand[hook] & ~reason;
	struct bpf_link **link = &dp->links[hook];
	const char *name;
	struct bpf_program *prog = hook_prog(dp, hook, &name);
	char why[96];
	int err;

	if (!on_demand(hook) || dp->cgroup_fd < 0)
		return -EINVAL;
	if (want && !*link) {
		if ((err = attach_link(dp, prog, dp->cgroup_fd, name, link)))
			return err;
		dp->demand_attaches++;
		km_info("%s attached: needed by%s", name, demand_names(want, why, sizeof(why)));
	} else if (!want && *link) {
		bpf_link__unpin(*link);
		bpf_link__destroy(*link);
		*link = NULL;
		dp->demand_detaches++;
		km_info("%s detached: nothing needs it (connections no longer pay for it)", name);
	}
	dp->demand[hook] = want;
	return 0;
}

int km_dataplane_attached(const struct km_dataplane *dp, enum km_dp_hook hook)
{
	return dp->links[hook] != NULL;
}

/* Every cgroup hook as a pinned link, and the TLV program on the sockhash. The sk_msg program is
 * attached to the map itself (bpf_link for sockmaps needs kernel 6.13 and a newer libbpf); a
 * second attach replaces the program in place, the map and its sockets stay. The hooks on
 * demand are attached here only when an earlier start left their link pinned (it was needed
 * then; the first sync says whether it still is). */
static int attach_all(struct km_dataplane *dp)
{
	int err;

	for (int i = 0; i < KM_HOOK_COUNT; i++) {
		int fd = i == KM_HOOK_TUNNEL_ORIGIN ? dp->tunnel_cgroup_fd : dp->cgroup_fd;
		const char *name;
		struct bpf_program *prog = hook_prog(dp, i, &name);
		char pin[640];

		/* auto: the tunnel's cgroup comes with its link; an earlier start's link is adopted */
		snprintf(pin, sizeof(pin), "%s/%s", dp->links_dir, name);
		if (fd < 0 && !(i == KM_HOOK_TUNNEL_ORIGIN && dp->tunnel_auto && !access(pin, F_OK)))
			continue;
		if (on_demand(i) && access(pin, F_OK) != 0)
			continue;
		if ((err = attach_link(dp, prog, fd, name, &dp->links[i])))
			return err;
		if (on_demand(i))
			dp->demand[i] = KM_DEMAND_ADOPTED;
	}
	if (bpf_prog_attach(bpf_program__fd(dp->skel->progs.km_waypoint_tlv),
			    bpf_map__fd(dp->skel->maps.km_sockhash), BPF_SK_MSG_VERDICT, 0) != 0) {
		err = -errno;
		km_error("cannot attach the waypoint TLV program to km_sockhash: %s", strerror(-err));
		return err;
	}
	dp->sk_msg_attached = 1;
	/* an iterator link is not a hook: it runs only when the map writer reads it */
	if (bpf_program__autoload(dp->skel->progs.km_authz_recheck)) {
		dp->recheck_link = bpf_program__attach_iter(dp->skel->progs.km_authz_recheck, NULL);
		if (!dp->recheck_link) /* a missing extra, not a reason to stop routing */
			km_warn("cannot create the authz re-check iterator (%s): connections already "
				"open when a policy change denies them stay open", strerror(errno));
	}
	if (bpf_program__autoload(dp->skel->progs.km_conn_progress)) {
		dp->progress_link = bpf_program__attach_iter(dp->skel->progs.km_conn_progress, NULL);
		if (!dp->progress_link)
			km_warn("cannot create the open connections' iterator (%s): connections' bytes "
				"are counted when they close only", strerror(errno));
	}
	return 0;
}

/* km_config from the flags (rewritten at every start, and by kmeshctl's switches). */
static int write_node_config(struct km_dataplane *dp, const struct km_node_config *node)
{
	struct km_config_value cfg = { .dns4 = node->dns4, .dns6 = node->dns6,
				       .dns_port = htons(node->dns_port), .flags = node->flags };
	__u32 key = 0;

	if (bpf_map_update_elem(bpf_map__fd(dp->skel->maps.km_config), &key, &cfg, BPF_ANY) != 0) {
		int err = -errno;

		km_error("cannot write km_config: %s", strerror(-err));
		return err;
	}
	dp->node = *node;
	return 0;
}

int km_dataplane_set_flags(struct km_dataplane *dp, uint16_t flags)
{
	struct km_node_config node = dp->node;

	node.flags = flags;
	return write_node_config(dp, &node);
}

/* km_mesh_cgroup: the attach cgroup's id and depth below the cgroup-v2 root, for the iterators
 * (bpf/lib/mesh_cgroup.h). Not known (logged): the row stays 0 and every socket of an enrolled
 * pod's namespace counts, as before it existed. */
static void write_mesh_cgroup(struct km_dataplane *dp)
{
	struct km_mesh_cgroup_value v = { 0 };
	char real[PATH_MAX], mount[PATH_MAX];
	struct stat st;
	__u32 key = 0;

	if (fstat(dp->cgroup_fd, &st) == 0 && realpath(dp->cgroup_path, real) &&
	    km_cgroup2_mount(real, mount, sizeof(mount)) == 0) {
		size_t n = strlen(mount) == 1 ? 0 : strlen(mount); /* a mount on / */

		v.id = (__u64)st.st_ino;
		for (const char *p = real + n; *p; p++) /* one level per component below the root */
			if (*p == '/' && p[1] && p[1] != '/')
				v.level++;
		if (real[n] != '/' && real[n] != '\0')
			v.id = 0; /* not under that mount after all */
	}
	if (!v.id)
		km_warn("cannot tell the cgroup %s's id and depth: the open connections' reports count "
			"every socket of a pod's namespace, also other processes' there", dp->cgroup_path);
	if (bpf_map_update_elem(bpf_map__fd(dp->skel->maps.km_mesh_cgroup), &key, &v, BPF_ANY) != 0)
		km_warn("cannot write km_mesh_cgroup: %s", strerror(errno));
}

/* km_meta: this build's layout, written once every map in the pins has it. */
static int write_layout(struct km_dataplane *dp)
{
	struct km_meta_value meta = { .layout_version = KM_LAYOUT_VERSION };
	__u32 key = 0;

	if (bpf_map_update_elem(bpf_map__fd(dp->skel->maps.km_meta), &key, &meta, BPF_ANY) != 0) {
		int err = -errno;

		km_error("cannot write km_meta: %s", strerror(-err));
		return err;
	}
	return 0;
}

/* The directory, or its nearest existing parent, must be on a bpffs: checked before anything is
 * created (an unmounted /sys/fs/bpf would otherwise fail as "No such file or directory"). */
static int check_bpffs(const char *dir)
{
	char at[512];
	struct statfs st;

	snprintf(at, sizeof(at), "%s", dir);
	while (statfs(at, &st) != 0) {
		char *slash = strrchr(at, '/');

		int err = errno;

		if (err != ENOENT || !slash || slash == at) {
			km_error("cannot reach %s: %s", dir, strerror(err));
			return -err;
		}
		*slash = '\0';
	}
	if ((unsigned long)st.f_type != BPF_FS_MAGIC) {
		km_error("%s is not on a bpf filesystem (%s is not a bpffs); mount one first "
			 "(mount -t bpf bpf /sys/fs/bpf)", dir, at);
		return -ENOTSUP;
	}
	return 0;
}

int km_dataplane_open(struct km_dataplane *dp, const struct km_dataplane_config *cfg)
{
	int err;

	memset(dp, 0, sizeof(*dp));
	dp->lock_fd = dp->cgroup_fd = dp->tunnel_cgroup_fd = -1;
	dp->sizes = cfg->sizes;
	snprintf(dp->cgroup_path, sizeof(dp->cgroup_path), "%s", cfg->cgroup_path);
	libbpf_set_print(libbpf_print);
	snprintf(dp->dir, sizeof(dp->dir), "%s", cfg->bpffs_dir);
	snprintf(dp->maps_dir, sizeof(dp->maps_dir), "%s/maps", cfg->bpffs_dir);
	snprintf(dp->links_dir, sizeof(dp->links_dir), "%s/links", cfg->bpffs_dir);

	if ((err = check_bpffs(dp->dir)))
		return err;
	if ((err = mkdir_p(dp->dir, 0700, &dp->made_dir)) ||
	    (err = mkdir_p(dp->maps_dir, 0700, &dp->made_maps_dir)) ||
	    (err = mkdir_p(dp->links_dir, 0700, &dp->made_links_dir))) {
		km_error("cannot create %s: %s", cfg->bpffs_dir, strerror(-err));
		return err;
	}
	dp->lock_fd = open(dp->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dp->lock_fd < 0 || flock(dp->lock_fd, LOCK_EX | LOCK_NB) != 0) {
		err = -errno;
		km_error("%s is in use by another map writer (%s)", dp->dir, strerror(-err));
		return err;
	}
	dp->cgroup_fd = open(cfg->cgroup_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dp->cgroup_fd < 0) {
		err = -errno;
		km_error("cannot open cgroup %s: %s", cfg->cgroup_path, strerror(-err));
		return err;
	}
	{
		struct statfs st;

		if (fstatfs(dp->cgroup_fd, &st) != 0 || (unsigned long)st.f_type != CGROUP2_SUPER_MAGIC) {
			km_error("%s is not a cgroup-v2 directory (on hybrid hosts the v2 hierarchy is "
				 "often /sys/fs/cgroup/unified)", cfg->cgroup_path);
			return -ENOTDIR;
		}
	}

	if ((err = open_tunnel_cgroup(dp, cfg->tunnel_cgroup_path)))
		return err;
	if ((err = km_probe_kernel()))
		return err;
	dp->skel = kmesh__open();
	if (!dp->skel) {
		err = -errno;
		km_error("cannot open the BPF object: %s", strerror(-err));
		return err;
	}
	if ((err = setup_maps(dp, cfg)))
		return err;
	/* one of the two ways of reading a closing socket (conn_close.bpf.c) */
	dp->rdonly_cast = !cfg->compat_programs && km_probe_kfunc("bpf_rdonly_cast");
	bpf_program__set_autoload(dp->rdonly_cast ? dp->skel->progs.km_sock_release_compat
						  : dp->skel->progs.km_sock_release,
				  false);
	if (!km_probe_kfunc("bpf_sock_destroy")) {
		km_warn("this kernel lacks bpf_sock_destroy (Linux 6.5): connections already open when "
			"a policy change denies them stay open; new ones are still decided");
		bpf_program__set_autoload(dp->skel->progs.km_authz_recheck, false);
	} else if (!km_probe_has_cap(CAP_SYS_ADMIN)) {
		km_warn("no CAP_SYS_ADMIN (to load the TCP iterator and enter pod network namespaces): "
			"connections already open when a policy change denies them stay open; new ones "
			"are still decided");
		bpf_program__set_autoload(dp->skel->progs.km_authz_recheck, false);
	}
	if (!km_probe_has_cap(CAP_SYS_ADMIN)) {
		km_warn("no CAP_SYS_ADMIN (to enter pod network namespaces): connections' bytes are "
			"counted when they close only, not while they are open");
		bpf_program__set_autoload(dp->skel->progs.km_conn_progress, false);
	}
	if (!km_probe_has_cap(CAP_PERFMON) && !km_probe_has_cap(CAP_SYS_ADMIN)) {
		km_error("kmesh-map-writer needs CAP_PERFMON besides CAP_BPF and CAP_NET_ADMIN: its "
			 "programs read TCP sockets' state (connection reports) and format log lines");
		return -EPERM;
	}
	err = kmesh__load(dp->skel);
	if (err) {
		km_error("cannot load the BPF programs: %s (is this process missing CAP_BPF, CAP_PERFMON or "
			 "CAP_SYS_ADMIN?)", strerror(-err));
		return err;
	}
	dp->fd_manage = bpf_map__fd(dp->skel->maps.km_manage);
	dp->fd_pod_netns = bpf_map__fd(dp->skel->maps.km_pod_netns);
	dp->fd_hbone = bpf_map__fd(dp->skel->maps.km_hbone);
	dp->fd_ipsec_peer = bpf_map__fd(dp->skel->maps.km_ipsec_peer);
	dp->fd_ipsec_cidr = bpf_map__fd(dp->skel->maps.km_ipsec_cidr);
	dp->fd_ipsec_encrypt = bpf_program__fd(dp->skel->progs.km_ipsec_encrypt);
	dp->fd_authz_lookup = bpf_program__fd(dp->skel->progs.km_authz_lookup);
	dp->fd_conn_events = bpf_map__fd(dp->skel->maps.km_conn_events);
	dp->fd_bpf_log = bpf_map__fd(dp->skel->maps.km_bpf_log);
	dp->fd_event_drops = bpf_map__fd(dp->skel->maps.km_event_drops);
	dp->fd_refused = bpf_map__fd(dp->skel->maps.km_refused);
	dp->fd_ipsec_decrypt = bpf_program__fd(dp->skel->progs.km_ipsec_decrypt);
	dp->fd_frontend = bpf_map__fd(dp->skel->maps.km_frontend);
	dp->fd_fe_filter = bpf_map__fd(dp->skel->maps.km_fe_filter);
	dp->fd_service = bpf_map__fd(dp->skel->maps.km_service);
	dp->fd_endpoint = bpf_map__fd(dp->skel->maps.km_endpoint);
	dp->fd_slot = bpf_map__fd(dp->skel->maps.km_slot);
	dp->fd_backend = bpf_map__fd(dp->skel->maps.km_backend);
	dp->fd_port_override = bpf_map__fd(dp->skel->maps.km_port_ovr);
	dp->fd_authz_ident = bpf_map__fd(dp->skel->maps.km_authz_ident);
	dp->fd_authz_list = bpf_map__fd(dp->skel->maps.km_authz_list);
	dp->fd_authz_match = bpf_map__fd(dp->skel->maps.km_authz_match);
	dp->fd_authz_index = bpf_map__fd(dp->skel->maps.km_authz_index);
	dp->fd_authz_set = bpf_map__fd(dp->skel->maps.km_authz_set);
	dp->fd_authz_cidr = bpf_map__fd(dp->skel->maps.km_authz_cidr);
	dp->fd_authz_stats = bpf_map__fd(dp->skel->maps.km_authz_stats);
	dp->fd_authz_denials = bpf_map__fd(dp->skel->maps.km_authz_denials);
	{ /* the row denials count in once the table is full (kmesh_maps.h); kept if pinned */
		struct km_authz_denials_key other = { KM_AUTHZ_DENIALS_OTHER, KM_AUTHZ_DENIALS_OTHER };
		struct km_authz_denials_value zero = { 0 };

		if (bpf_map_update_elem(dp->fd_authz_denials, &other, &zero, BPF_NOEXIST) != 0 &&
		    errno != EEXIST)
			km_warn("cannot make the overflow row of km_authz_denials: %s (denials past its "
				"%d rows go uncounted by workload)", strerror(errno), KM_AUTHZ_DENIALS_MAX);
	}
	/* Record the sizes actually in force (adopted maps keep theirs). */
	dp->sizes.manage = bpf_map__max_entries(dp->skel->maps.km_manage);
	dp->sizes.frontend = bpf_map__max_entries(dp->skel->maps.km_frontend);
	dp->sizes.service = bpf_map__max_entries(dp->skel->maps.km_service);
	dp->sizes.endpoint = bpf_map__max_entries(dp->skel->maps.km_endpoint);
	dp->sizes.backend = bpf_map__max_entries(dp->skel->maps.km_backend);
	dp->sizes.port_override = bpf_map__max_entries(dp->skel->maps.km_port_ovr);
	dp->sizes.waypoint_sockets = bpf_map__max_entries(dp->skel->maps.km_sockhash);
	dp->sizes.authz_idents = bpf_map__max_entries(dp->skel->maps.km_authz_ident);
	dp->sizes.authz_rows = bpf_map__max_entries(dp->skel->maps.km_authz_list);
	dp->sizes.authz_cidrs = bpf_map__max_entries(dp->skel->maps.km_authz_cidr);

	if ((err = migrate_entries(dp)) || (err = fill_frontend_filter(dp)) ||
	    (err = write_node_config(dp, &cfg->node)) || (write_mesh_cgroup(dp), 0) ||
	    (err = attach_all(dp)) || (err = repin_migrated(dp)) || (err = write_layout(dp)))
		return err;
	km_info("data plane ready: %s (maps %s, links %s), attached to %s", dp->dir,
		dp->n_migrating ? "migrated" : dp->adopted_maps ? "adopted" : "new", dp->adopted_links ? "updated in place" : "new",
		cfg->cgroup_path);
	dp->opened = 1;
	return 0;
}

void km_dataplane_close(struct km_dataplane *dp, int detach)
{
	for (size_t i = 0; i < KM_HOOK_COUNT; i++) {
		if (!dp->links[i])
			continue;
		if (detach)
			bpf_link__unpin(dp->links[i]);
		bpf_link__destroy(dp->links[i]); /* detaches only if no pin holds it */
		dp->links[i] = NULL;
	}
	if (dp->skel && dp->sk_msg_attached && detach)
		bpf_prog_detach2(bpf_program__fd(dp->skel->progs.km_waypoint_tlv),
				 bpf_map__fd(dp->skel->maps.km_sockhash), BPF_SK_MSG_VERDICT);
	dp->sk_msg_attached = 0;
	bpf_link__destroy(dp->recheck_link);
	dp->recheck_link = NULL;
	bpf_link__destroy(dp->progress_link);
	dp->progress_link = NULL;
	if (dp->skel) {
		if (detach) {
			struct bpf_map *map;

			bpf_object__for_each_map(map, dp->skel->obj)
				if (!bpf_map__is_internal(map))
					bpf_map__unpin(map, NULL);
		}
		kmesh__destroy(dp->skel);
		dp->skel = NULL;
	}
	if ((detach || !dp->opened) && dp->dir[0]) {
		/* on a failed start only what this start created (rmdir keeps a non-empty one) */
		if (detach || dp->made_maps_dir)
			rmdir(dp->maps_dir);
		if (detach || dp->made_links_dir)
			rmdir(dp->links_dir);
		if (detach || dp->made_dir)
			rmdir(dp->dir);
		if (detach)
			km_info("detached and unpinned everything under %s", dp->dir);
	}
	if (dp->cgroup_fd >= 0)
		close(dp->cgroup_fd);
	if (dp->tunnel_cgroup_fd >= 0)
		close(dp->tunnel_cgroup_fd);
	if (dp->lock_fd >= 0)
		close(dp->lock_fd);
	dp->cgroup_fd = dp->lock_fd = dp->tunnel_cgroup_fd = -1;
}
