/* connect_bench.c — the cost the data plane adds to connect(): TCP connects to a service VIP
 * from a cgroup with the kmesh programs attached (BPF picks one of the service's endpoints)
 * against direct connects to those same endpoint addresses from a sibling cgroup with no program
 * attached, interleaved in rounds in one process. Then, with the kernel's BPF run-time
 * statistics on, the time of every program that runs for the client's connection (whichever
 * are attached: connect4, sockops when something needs it, sock_release, authz_ingress on the
 * SYN-ACK when a pod needs it), summed per connect beside the floor, with monitoring on (the
 * default) and, given --config-map (km_config's pin), off.
 *
 * It runs in the test's network namespace (--netns), where every endpoint address is local
 * (a "local" route over lo) and one listener answers them all; it moves itself between the two
 * cgroups (--mesh-cgroup, --plain-cgroup) between rounds: a socket belongs to the cgroup of the
 * process that made it. Connections are closed with a reset (no TIME_WAIT). Only connect() is
 * timed. Prints one markdown section. Needs root.
 *
 * The floor, in the same run: a third cgroup (--ref-cgroup) gets the reference program
 * (bench/ref/ref_connect.bpf.c: a VIP hash, one random slot of an array of the same endpoints,
 * the rewrite), timed and counted the same way. The client runs pinned to one CPU (--cpu).
 *
 * A realistic mix (--services S > 1): the endpoints are split evenly over S services, VIPs
 * consecutive from --vip; each connect draws a service by Zipf popularity (s = 1: the k-th most
 * popular is drawn 1/k as often as the first) and the direct baseline one of that service's
 * endpoints, and --outside-percent of the connects go to addresses outside the mesh (10.200/16,
 * local in the netns, no frontend) in every variant. --kind waypoint: the service's waypoint is
 * this netns's own address, so a listener also answers on the waypoint data port. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench/lib/bench_util.h"
#include "bench/lib/ref_close.h"
#include "bench/ref/ref_connect.h"
#include "kmesh_maps.h"
#include "ref_accept.skel.h"
#include "ref_connect.skel.h"

#define SERVER_PORT 8080
#define WAYPOINT_DATA_PORT 15019 /* the xDS agent's --waypoint-data-port default */
#define OUTSIDE_NET 0x0ac80000u  /* 10.200.0.0/16: local in the netns, never a frontend */

struct opts {
	const char *netns, *mesh_cgroup, *plain_cgroup, *ref_cgroup, *links_dir, *vip, *kind;
	const char *config_map; /* km_config's pin: the run time with monitoring off too (NULL: not) */
	unsigned vip_port, endpoints, rounds, per_round, stats_connects, services, outside_percent;
	int cpu; /* the client's CPU; -1 = the last one */
	struct in_addr first_endpoint;
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t next_rand(void) /* xorshift64: the direct variant's destinations */
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 32);
}

static void *accept_loop(void *arg)
{
	int lfd = *(int *)arg;

	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd >= 0)
			close(fd);
	}
	return NULL;
}

/* One connect to dst, timed, then the close() that resets it, timed too (*close_ns, if given).
 * Returns the connect's ns, or 0 on failure. */
static uint64_t timed_connect_close(const struct sockaddr_in *dst, uint64_t *close_ns)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	uint64_t t0, t1, t2;
	int rc;

	if (fd < 0)
		bench_die("socket");
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	t0 = bench_now_ns();
	rc = connect(fd, (const struct sockaddr *)dst, sizeof(*dst));
	t1 = bench_now_ns();
	close(fd);
	t2 = bench_now_ns();
	if (close_ns)
		*close_ns = t2 - t1;
	return rc == 0 ? t1 - t0 : 0;
}

static uint64_t timed_connect(const struct sockaddr_in *dst)
{
	return timed_connect_close(dst, NULL);
}

/* ---- the programs' own run time (BPF_ENABLE_STATS) ------------------------------------------ */

/* ---- the reference program ------------------------------------------------------------------ */

/* Load it with one slot per endpoint (the same addresses the service has, target port 8080) and
 * the VIP naming them all, and attach it to the reference cgroup. */
static struct ref_connect *ref_load(const struct opts *o, const struct sockaddr_in *vip)
{
	struct ref_connect *r = ref_connect__open();
	unsigned per = o->endpoints / o->services;
	int cg;

	if (!r || bpf_map__set_max_entries(r->maps.km_ref_slots, o->endpoints) != 0 ||
	    /* the table keeps its compiled size (a miss in a tiny one would flatter the floor) */
	    (o->services > KM_REF_VIPS &&
	     bpf_map__set_max_entries(r->maps.km_ref_vips, o->services) != 0) ||
	    ref_connect__load(r) != 0)
		bench_die("loading the reference program");
	for (__u32 i = 0; i < o->endpoints; i++) {
		struct km_ref_slot slot = {
			.addr4 = htonl(ntohl(o->first_endpoint.s_addr) + i), .port = htons(SERVER_PORT)
		};

		if (bpf_map_update_elem(bpf_map__fd(r->maps.km_ref_slots), &i, &slot, BPF_ANY) != 0)
			bench_die("filling the reference slots");
	}
	for (__u32 i = 0; i < o->services; i++) {
		struct km_ref_vip_key k = { .addr4 = htonl(ntohl(vip->sin_addr.s_addr) + i),
					    .port = vip->sin_port };
		struct km_ref_vip v = { .base = i * per, .count = per };

		if (bpf_map_update_elem(bpf_map__fd(r->maps.km_ref_vips), &k, &v, BPF_ANY) != 0)
			bench_die("writing the reference VIPs");
	}
	if ((cg = open(o->ref_cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    !bpf_program__attach_cgroup(r->progs.km_ref_connect4, cg))
		bench_die("attaching the reference program");
	close(cg);
	return r;
}

/* The floor of monitoring: the reference close report on the reference cgroup, its ring read
 * (and dropped) by this process as the map writer reads the shipped one. */
static struct ref_accept *ref_close_load(const char *cgroup, struct ring_buffer **ring)
{
	struct ref_accept *r = ref_accept__open_and_load();

	if (!r)
		bench_die("loading the reference close report");
	*ring = bench_ref_close_attach(r, cgroup);
	return r;
}

/* ---- figures -------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: connect_bench --netns PATH --mesh-cgroup DIR --plain-cgroup DIR --ref-cgroup DIR\n"
		"                     --links-dir DIR --vip ADDR --endpoints N --first-endpoint ADDR\n"
		"                     [--vip-port P] [--rounds R] [--per-round M] [--stats-connects K]\n"
		"                     [--cpu N] [--services S] [--outside-percent P] [--kind KIND]\n"
		"                     [--config-map PATH]\n"
		"connect() through a VIP with the kmesh programs vs. direct with none, and the reference\n"
		"program (the floor) in the same run; prints markdown. --cpu: the client's CPU (default\n"
		"the last one). --services: the endpoints split over S services (VIPs from --vip on),\n"
		"drawn by Zipf popularity; --outside-percent: connects to addresses outside the mesh;\n"
		"--kind: plain, weighted, p2c or waypoint (the service's load balancing, as set up).\n"
		"--config-map: km_config's pin; the programs' run time is measured with monitoring off\n"
		"too (switched off and back, as kmeshctl monitoring does).\n");
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "netns", 1, 0, 'n' },		 { "mesh-cgroup", 1, 0, 'm' },
		{ "plain-cgroup", 1, 0, 'p' },	 { "links-dir", 1, 0, 'l' },
		{ "vip", 1, 0, 'v' },		 { "vip-port", 1, 0, 'P' },
		{ "endpoints", 1, 0, 'e' },	 { "first-endpoint", 1, 0, 'f' },
		{ "rounds", 1, 0, 'r' },	 { "per-round", 1, 0, 'c' },
		{ "stats-connects", 1, 0, 's' }, { "help", 0, 0, 'h' },
		{ "ref-cgroup", 1, 0, 'R' },	 { "cpu", 1, 0, 'C' },
		{ "services", 1, 0, 'S' },	 { "outside-percent", 1, 0, 'O' },
		{ "kind", 1, 0, 'K' },		 { "config-map", 1, 0, 'M' },
		{ 0 },
	};
	const char *first = NULL;
	int c;

	*o = (struct opts){ .vip_port = 80, .rounds = 40, .per_round = 1000, .stats_connects = 20000,
			    .cpu = -1, .services = 1, .kind = "plain" };
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'n': o->netns = optarg; break;
		case 'm': o->mesh_cgroup = optarg; break;
		case 'p': o->plain_cgroup = optarg; break;
		case 'l': o->links_dir = optarg; break;
		case 'v': o->vip = optarg; break;
		case 'P': o->vip_port = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'e': o->endpoints = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'f': first = optarg; break;
		case 'r': o->rounds = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'c': o->per_round = (unsigned)strtoul(optarg, NULL, 10); break;
		case 's': o->stats_connects = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'R': o->ref_cgroup = optarg; break;
		case 'C': o->cpu = atoi(optarg); break;
		case 'S': o->services = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'O': o->outside_percent = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'K': o->kind = optarg; break;
		case 'M': o->config_map = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (!o->netns || !o->mesh_cgroup || !o->plain_cgroup || !o->ref_cgroup || !o->links_dir || !o->vip ||
	    !first || !o->endpoints || !o->rounds || !o->per_round || !o->services ||
	    o->endpoints % o->services != 0 || o->outside_percent > 100 ||
	    inet_pton(AF_INET, first, &o->first_endpoint) != 1) {
		usage(stderr);
		exit(2);
	}
}

/* Service popularity: Zipf with s = 1 over the services, as a cumulative table drawn from by
 * binary search (one service: always the first). */
static double *zipf_cdf;

static void zipf_init(unsigned services)
{
	double sum = 0;

	if (!(zipf_cdf = malloc(services * sizeof(double))))
		bench_die("allocating");
	for (unsigned k = 0; k < services; k++)
		zipf_cdf[k] = (sum += 1.0 / (k + 1));
	for (unsigned k = 0; k < services; k++)
		zipf_cdf[k] /= sum;
}

static unsigned zipf_draw(unsigned services)
{
	double u = (double)next_rand() / 4294967296.0;
	unsigned lo = 0, hi = services - 1;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (zipf_cdf[mid] > u)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* The next destination: outside the mesh (--outside-percent of them, every variant), else a
 * service drawn by popularity: its VIP, or (direct) one of its endpoint addresses at random. */
static struct sockaddr_in destination(const struct opts *o, const struct sockaddr_in *vip, int direct)
{
	struct sockaddr_in dst = *vip;
	unsigned per = o->endpoints / o->services, k;

	if (o->outside_percent && next_rand() % 100 < o->outside_percent) {
		dst.sin_addr.s_addr = htonl(OUTSIDE_NET + 1 + next_rand() % 65000);
		dst.sin_port = htons(SERVER_PORT);
		return dst;
	}
	k = o->services > 1 ? zipf_draw(o->services) : 0;
	if (direct) {
		dst.sin_addr.s_addr = htonl(ntohl(o->first_endpoint.s_addr) + k * per + next_rand() % per);
		dst.sin_port = htons(SERVER_PORT);
	} else {
		dst.sin_addr.s_addr = htonl(ntohl(vip->sin_addr.s_addr) + k);
	}
	return dst;
}

/* A listener on every local address of the netns, accepting and closing on its own thread. */
static void listen_on(uint16_t port)
{
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_port = htons(port) };
	int *lfd = malloc(sizeof(int)), one = 1;
	pthread_t th;

	if (!lfd || (*lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    setsockopt(*lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(*lfd, (struct sockaddr *)&any, sizeof(any)) != 0 || listen(*lfd, 4096) != 0)
		bench_die("listening");
	if (pthread_create(&th, NULL, accept_loop, lfd) != 0)
		bench_die("starting an accept thread");
}

#define VARIANTS 3 /* direct from the plain cgroup, the VIP from the mesh and the reference ones */
#define PROGS 6 /* the shipped programs a client's connection can meet, then the references */
#define REF 4       /* ref_connect4: the floor */
#define REF_CLOSE 5 /* ref_release: the least a close report can be (the floor of monitoring) */
static const char *const progs[PROGS] = { "connect4", "sockops", "sock_release", "authz_ingress",
					  "ref_connect4", "ref_release" };

/* A shipped program's counters, by its pinned link; zeros (and *attached 0) when it is not
 * attached: the map writer attaches some only while something needs them. */
static struct bench_prog_stats link_stats(const char *links_dir, const char *name, int *attached)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", links_dir, name);
	if (access(path, F_OK) != 0) {
		*attached = 0;
		return (struct bench_prog_stats){ 0, 0 };
	}
	*attached = 1;
	return bench_link_prog_stats(path);
}

/* One measurement: run time and runs per program over n connects to one kind of destination. */
struct prog_costs {
	uint64_t run_ns[PROGS], runs[PROGS];
	int attached[PROGS];
	uint64_t failed;
};

/* km_config's flags: read, and written (monitoring off for a pass, then back as they were), as
 * `kmeshctl monitoring disable` writes them. */
static __u16 config_flags(const char *config_map, int write, __u16 flags)
{
	struct km_config_value cfg;
	__u32 key = 0;
	int fd = bpf_obj_get(config_map);

	if (fd < 0 || bpf_map_lookup_elem(fd, &key, &cfg) != 0)
		bench_die(config_map);
	if (write) {
		cfg.flags = flags;
		if (bpf_map_update_elem(fd, &key, &cfg, BPF_EXIST) != 0)
			bench_die("writing km_config");
	}
	close(fd);
	return cfg.flags;
}

static struct bench_prog_stats prog_stats(struct ref_connect *ref, struct ref_accept *ref_close,
					  const char *links_dir, int p, int *attached)
{
	if (p == REF)
		return bench_fd_prog_stats(bpf_program__fd(ref->progs.km_ref_connect4));
	if (p == REF_CLOSE)
		return bench_fd_prog_stats(bpf_program__fd(ref_close->progs.km_ref_release));
	return link_stats(links_dir, progs[p], attached);
}

int main(int argc, char **argv)
{
	struct opts o;
	struct sockaddr_in vip = { .sin_family = AF_INET };
	size_t total;
	uint64_t *lat[VARIANTS], *closes[VARIANTS], *round_med[VARIANTS], failed[VARIANTS] = { 0 };
	/* [monitoring on, off][destination: VIP, pod IP] */
	struct prog_costs costs[2][2];
	struct ref_accept *ref_close;
	struct ring_buffer *ref_ring;
	uint64_t stats_failed = 0;
	int monitoring = 1; /* as the first pass found it (--config-map tells; else assumed on) */
	static const char *const variant_names[VARIANTS] = {
		"direct, no program (baseline)", "through the VIP, programs attached",
		"reference program (the floor), via the VIP"
	};
	struct ref_connect *ref;
	int cg[VARIANTS], nsfd, stats_fd;

	bench_name = "connect_bench";
	parse(argc, argv, &o);
	if (inet_pton(AF_INET, o.vip, &vip.sin_addr) != 1) {
		usage(stderr);
		return 2;
	}
	vip.sin_port = htons((uint16_t)o.vip_port);
	zipf_init(o.services);
	cg[0] = bench_open_procs(o.plain_cgroup); /* before setns: the netns may hide the cgroup mount */
	cg[1] = bench_open_procs(o.mesh_cgroup);
	cg[2] = bench_open_procs(o.ref_cgroup);
	ref = ref_load(&o, &vip);
	ref_close = ref_close_load(o.ref_cgroup, &ref_ring);
	if ((nsfd = open(o.netns, O_RDONLY | O_CLOEXEC)) < 0 || setns(nsfd, CLONE_NEWNET) != 0)
		bench_die(o.netns);
	close(nsfd);

	bench_join_cgroup(cg[0]); /* the listeners (and so every accepted socket) run no program */
	listen_on(SERVER_PORT);
	if (strcmp(o.kind, "waypoint") == 0)
		listen_on(WAYPOINT_DATA_PORT);
	bench_pin_cpu(o.cpu); /* this thread only: the accept thread stays free to run elsewhere */

	total = (size_t)o.rounds * o.per_round;
	for (int v = 0; v < VARIANTS; v++) {
		lat[v] = calloc(total, sizeof(uint64_t));
		closes[v] = calloc(total, sizeof(uint64_t));
		round_med[v] = calloc(o.rounds, sizeof(uint64_t));
		if (!lat[v] || !closes[v] || !round_med[v])
			bench_die("allocating");
	}
	/* warm-up, then rounds: direct (0) from the plain cgroup, the VIP from the mesh (1) and
	 * the reference (2) cgroups */
	for (unsigned r = 0; r <= o.rounds; r++) {
		for (int v = 0; v < VARIANTS; v++) {
			uint64_t *row = lat[v] + (r ? (size_t)(r - 1) * o.per_round : 0);
			uint64_t *crow = closes[v] + (r ? (size_t)(r - 1) * o.per_round : 0);

			bench_join_cgroup(cg[v]);
			for (unsigned i = 0; i < o.per_round; i++) {
				struct sockaddr_in dst = destination(&o, &vip, v == 0);
				uint64_t cns, ns = timed_connect_close(&dst, &cns);

				if (!ns && r)
					failed[v]++;
				if (r) {
					row[i] = ns;
					crow[i] = cns;
				}
			}
			ring_buffer__consume(ref_ring);
			if (r) {
				uint64_t *copy = malloc(o.per_round * sizeof(uint64_t));

				if (!copy)
					bench_die("allocating");
				memcpy(copy, row, o.per_round * sizeof(uint64_t));
				qsort(copy, o.per_round, sizeof(uint64_t), bench_cmp_u64);
				round_med[v][r - 1] = bench_pct(copy, o.per_round, 0.5);
				free(copy);
			}
		}
	}
	if (failed[0] || failed[1] || failed[2]) {
		fprintf(stderr, "connect_bench: %llu direct, %llu VIP and %llu reference connects failed\n",
			(unsigned long long)failed[0], (unsigned long long)failed[1],
			(unsigned long long)failed[2]);
		return 1;
	}

	/* the programs' own time: run-time statistics on for separate runs of connects to the VIP
	 * (s = 0) and to endpoint addresses directly (s = 1), from the mesh cgroup (the shipped
	 * programs), then from the reference cgroup (the floor); with monitoring on (m = 0), then
	 * off (m = 1) when km_config is given */
	if ((stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME)) < 0)
		bench_die("BPF_ENABLE_STATS");
	memset(costs, 0, sizeof(costs));
	/* the second pass only when monitoring is on (the mesh's default): it measures it off */
	if (o.config_map && !(config_flags(o.config_map, 0, 0) & KM_CFG_F_MONITORING)) {
		o.config_map = NULL;
		monitoring = 0;
	}
	for (int m = 0; m < (o.config_map ? 2 : 1); m++) {
		__u16 flags = m == 1 ? config_flags(o.config_map, 0, 0) : 0;

		if (m == 1)
			config_flags(o.config_map, 1, (__u16)(flags & ~KM_CFG_F_MONITORING));
		for (int s = 0; s < 2; s++) {
			struct prog_costs *pc = &costs[m][s];

			for (int c = 1; c <= 2; c++) {
				int p0 = c == 1 ? 0 : REF, p1 = c == 1 ? REF - 1 : REF_CLOSE;
				struct bench_prog_stats before[PROGS], after[PROGS];

				bench_join_cgroup(cg[c]);
				for (int p = p0; p <= p1; p++)
					before[p] = prog_stats(ref, ref_close, o.links_dir, p, &pc->attached[p]);
				for (unsigned i = 0; i < o.stats_connects; i++) {
					struct sockaddr_in dst = destination(&o, &vip, s);

					if (!timed_connect(&dst))
						pc->failed++;
					if (i % 1000 == 999)
						ring_buffer__consume(ref_ring);
				}
				for (int p = p0; p <= p1; p++) {
					after[p] = prog_stats(ref, ref_close, o.links_dir, p, &pc->attached[p]);
					pc->run_ns[p] = after[p].run_ns - before[p].run_ns;
					pc->runs[p] = after[p].runs - before[p].runs;
				}
			}
			stats_failed += pc->failed;
		}
		if (m == 1)
			config_flags(o.config_map, 1, flags);
	}
	close(stats_fd);
	bench_join_cgroup(cg[0]);

	for (int v = 0; v < VARIANTS; v++) {
		qsort(lat[v], total, sizeof(uint64_t), bench_cmp_u64);
		qsort(closes[v], total, sizeof(uint64_t), bench_cmp_u64);
		qsort(round_med[v], o.rounds, sizeof(uint64_t), bench_cmp_u64);
	}
	if (o.services > 1)
		printf("## connect() over %u services (Zipf-popular VIPs, %u%% of connects outside the mesh), "
		       "%u endpoints\n\n", o.services, o.outside_percent, o.endpoints);
	else if (strcmp(o.kind, "plain") != 0)
		printf("## connect() through the VIP of a %s service with %u endpoints\n\n", o.kind,
		       o.endpoints);
	else
		printf("## connect() through a VIP with %u endpoints vs. direct with no program\n\n",
		       o.endpoints);
	printf("Command: `make bench` (runs `bench/connect.sh`; `ENDPOINTS=%u`, `ROUNDS=%u`,\n"
	       "`PER_ROUND=%u` override). %s (%s:%u) with %u endpoints loaded through\n"
	       "the xDS agent; a test network namespace where every endpoint address is local and\n"
	       "one listener answers. Rounds of %u connects alternate between the VIP from the\n"
	       "enrolled cgroup (programs attached: the BPF pick rewrites the destination), the\n"
	       "endpoint addresses directly, picked at random, from a sibling cgroup with no program\n"
	       "(the baseline), and the VIP from a sibling cgroup with only the reference programs\n"
	       "(`bench/ref/ref_connect.bpf.c`: a VIP hash, one random slot of an array of the same\n"
	       "endpoints, the rewrite: the floor; and `ref_release`, the least a close report can be).\n"
	       "The client is pinned to one CPU. Only the connect() call is timed; each connection is\n"
	       "then reset.\n\n",
	       o.endpoints, o.rounds, o.per_round,
	       o.services > 1 ? "Service VIPs from" : "One service VIP", o.vip, o.vip_port, o.endpoints,
	       o.per_round);
	if (o.services > 1)
		printf("Here the endpoints are split evenly over %u services (VIPs from %s on, %u endpoints\n"
		       "each; the floor has the same VIPs and ranges). Each connect draws a service by Zipf\n"
		       "popularity (s = 1), and %u%% go to addresses outside the mesh (10.200/16) in every\n"
		       "variant; the direct baseline connects to one of the drawn service's endpoints. The\n"
		       "run-time rows \"the VIP\" are this mix.\n\n",
		       o.services, o.vip, o.endpoints / o.services, o.outside_percent);
	else if (strcmp(o.kind, "plain") != 0)
		printf("The service's load balancing here: `SERVICE_KIND=%s` (bench/lib/connect_env.sh).\n\n",
		       o.kind);
	printf("| variant | connects | p50 (us) | p90 (us) | p99 (us) | round medians min / max (us) | ratio (p50) |\n");
	printf("|---|---|---|---|---|---|---|\n");
	for (int v = 0; v < VARIANTS; v++)
		printf("| %s | %zu | %.2f | %.2f | %.2f | %.2f / %.2f | %.3f |\n", variant_names[v],
		       total, bench_pct(lat[v], total, 0.5) / 1e3, bench_pct(lat[v], total, 0.9) / 1e3,
		       bench_pct(lat[v], total, 0.99) / 1e3, round_med[v][0] / 1e3,
		       round_med[v][o.rounds - 1] / 1e3,
		       (double)bench_pct(lat[v], total, 0.5) / (double)bench_pct(lat[0], total, 0.5));
	printf("\nconnect() p50 ratio through the VIP minus the floor's: %+.3f (goal, issue 50: <= +0.03).\n",
	       ((double)bench_pct(lat[1], total, 0.5) - (double)bench_pct(lat[2], total, 0.5)) /
		       (double)bench_pct(lat[0], total, 0.5));
	printf("\nThe close() that resets each of those connections, timed too (sock_release reports the\n"
	       "close of a monitored connection; the floor's, ref_release):\n\n");
	printf("| close() of a connection made | p50 (us) | p90 (us) | p99 (us) | ratio (p50) |\n");
	printf("|---|---|---|---|---|\n");
	for (int v = 0; v < VARIANTS; v++)
		printf("| %s | %.2f | %.2f | %.2f | %.3f |\n",
		       v == 0 ? "directly, no program (baseline)" : v == 1 ? "via the VIP, programs attached"
								 : "via the VIP, reference programs only",
		       bench_pct(closes[v], total, 0.5) / 1e3, bench_pct(closes[v], total, 0.9) / 1e3,
		       bench_pct(closes[v], total, 0.99) / 1e3,
		       (double)bench_pct(closes[v], total, 0.5) / (double)bench_pct(closes[0], total, 0.5));
	printf("\nBPF run time per connect (`BPF_ENABLE_STATS`, %u more connects of each kind from\n"
	       "the enrolled cgroup, and as many from the reference one%s; the statistics add their\n"
	       "own clock reads to every run). Every shipped program that ran for the client's\n"
	       "connection is listed (connect4; sockops only while something needs it: waypoints, the\n"
	       "tunnel, the access log's open reports; sock_release; authz_ingress on the SYN-ACK only\n"
	       "while a pod lacks its sk_lookup program); monitoring %s:\n\n",
	       o.stats_connects, stats_failed ? ", some failed" : "",
	       monitoring ? "on, the default" : "off");
	printf("| connect to | program | ns per connect | runs per connect | ns per run |\n"
	       "|---|---|---|---|---|\n");
	for (int s = 0; s < 2; s++)
		for (int p = 0; p < PROGS; p++) {
			const struct prog_costs *pc = &costs[0][s];

			if (p < REF && !pc->attached[p])
				continue;
			printf("| %s | `%s`%s | %.0f | %.2f | %.0f |\n",
			       s ? "an endpoint address (pod IP)" : "the VIP", progs[p],
			       p == REF ? " (the floor)" : p == REF_CLOSE ? " (a close report's floor)" : "",
			       (double)pc->run_ns[p] / o.stats_connects,
			       (double)pc->runs[p] / o.stats_connects,
			       pc->runs[p] ? (double)pc->run_ns[p] / (double)pc->runs[p] : 0.0);
		}
	printf("\nEvery program together, beside the floor (`ref_connect4`) and, with monitoring on, the\n"
	       "floor of a close report too (`ref_release`, bench/ref/ref_accept.bpf.c: the 4-tuple,\n"
	       "the cookie and two byte counters into a ring, no enrollment check, no direction):\n\n");
	printf("| connect to | monitoring | every program, ns per connect | the floor, ns | ratio | the floor with a close report, ns | ratio |\n"
	       "|---|---|---|---|---|---|---|\n");
	for (int m = 0; m < (o.config_map ? 2 : 1); m++)
		for (int s = 0; s < 2; s++) {
			const struct prog_costs *pc = &costs[m][s];
			uint64_t sum = 0, floor = pc->run_ns[REF], floor_close = floor + pc->run_ns[REF_CLOSE];

			for (int p = 0; p < REF; p++)
				sum += pc->run_ns[p];
			printf("| %s | %s | %.0f | %.0f | %.2f |", s ? "a pod IP" : "the VIP",
			       m || !monitoring ? "off" : "on",
			       (double)sum / o.stats_connects, (double)floor / o.stats_connects,
			       floor ? (double)sum / (double)floor : 0.0);
			if (m || !monitoring)
				printf(" - | - |\n");
			else
				printf(" %.0f | %.2f |\n", (double)floor_close / o.stats_connects,
				       floor_close ? (double)sum / (double)floor_close : 0.0);
		}
	for (int s = 0; s < 2; s++) {
		uint64_t sum = 0;

		for (int p = 0; p < REF; p++)
			sum += costs[0][s].run_ns[p];
		printf("\n%s: every program on the path takes %.2fx the floor's time per connect.",
		       s ? "To a pod IP" : "Through the VIP",
		       costs[0][s].run_ns[REF] ? (double)sum / (double)costs[0][s].run_ns[REF] : 0.0);
	}
	printf("\n\n");
	printf("Goals (issue 50): every program together <= 2.0x the floor through the VIP, <= 1.5x to a\n"
	       "pod IP; the pinned connect() p50 ratio within +0.03 of the floor's.\n");
	ring_buffer__free(ref_ring);
	ref_accept__destroy(ref_close);
	ref_connect__destroy(ref);
	return 0;
}
