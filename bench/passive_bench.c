/* passive_bench.c — the cost the data plane adds to an enrolled pod's side of a connection it
 * accepts: connects from a client pod (no program) to a server in an enrolled pod (every
 * program that runs for it: the authorization at the socket lookup, sock_release at close, and
 * sockops or the cgroup_skb program when something needs them attached) against the same
 * connects to a server in a pod that is not enrolled, in a cgroup with no program (the
 * baseline), and to a third server with the floors (bench/ref/ref_accept.bpf.c: an sk_lookup
 * program allowing by one hash lookup, and the least close report), interleaved in rounds. Then
 * one bulk transfer to the first two (throughput, and the programs run per received packet),
 * and, with the kernel's BPF run-time statistics on, each program's time per connection.
 *
 * The client runs in --client-netns, pinned to one CPU; each server is a child process in its
 * pod's namespace and cgroup (--mesh-netns and --mesh-cgroup; --plain-netns and --plain-cgroup;
 * --ref-netns and --ref-cgroup), answering on port 8080 of --mesh-ip, --plain-ip and --ref-ip:
 * it reads until the client closes, then closes. Only connect() is timed. Prints one markdown
 * section. Needs root. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench/lib/bench_util.h"
#include "bench/lib/ref_close.h"
#include "bench/ref/ref_accept.h"
#include "ref_accept.skel.h"

#define SERVER_PORT 8080

struct opts {
	const char *client_netns, *mesh_netns, *plain_netns, *mesh_cgroup, *plain_cgroup, *links_dir;
	const char *mesh_ip, *plain_ip, *ref_netns, *ref_cgroup, *ref_ip, *client_ip;
	unsigned rounds, per_round, stats_connects, bulk_mb;
	int cpu;
};

static void enter_netns(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || setns(fd, CLONE_NEWNET) != 0)
		bench_die(path);
	close(fd);
}

/* A server in its pod: reads each connection to its end, then closes it. */
static pid_t start_server(const char *netns, const char *cgroup)
{
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_port = htons(SERVER_PORT) };
	int procs = bench_open_procs(cgroup), lfd, one = 1;
	pid_t pid = fork();
	static char buf[1 << 16];

	if (pid < 0)
		bench_die("fork");
	if (pid > 0) {
		close(procs);
		return pid;
	}
	bench_join_cgroup(procs);
	enter_netns(netns);
	if ((lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(lfd, (struct sockaddr *)&any, sizeof(any)) != 0 || listen(lfd, 1024) != 0)
		bench_die("listening on :8080");
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0)
			continue;
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		close(fd);
	}
}

static struct sockaddr_in addr_of(const char *ip)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(SERVER_PORT) };

	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
		errno = EINVAL;
		bench_die(ip);
	}
	return a;
}

/* connect() timed, then a normal close (the server sees its end and closes too). 0: failed. */
static uint64_t timed_connect(const struct sockaddr_in *dst)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	uint64_t t0, t1;
	int rc;

	if (fd < 0)
		bench_die("socket");
	t0 = bench_now_ns();
	rc = connect(fd, (const struct sockaddr *)dst, sizeof(*dst));
	t1 = bench_now_ns();
	close(fd);
	return rc == 0 ? t1 - t0 : 0;
}

/* mb MiB to dst over one connection; returns the ns it took (to the server's close). */
static uint64_t bulk(const struct sockaddr_in *dst, unsigned mb)
{
	static char buf[1 << 16];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	uint64_t t0 = bench_now_ns();

	if (fd < 0 || connect(fd, (const struct sockaddr *)dst, sizeof(*dst)) != 0)
		bench_die("connecting for the bulk transfer");
	for (size_t left = (size_t)mb << 20; left;) {
		ssize_t n = write(fd, buf, left < sizeof(buf) ? left : sizeof(buf));

		if (n <= 0)
			bench_die("sending");
		left -= (size_t)n;
	}
	shutdown(fd, SHUT_WR);
	while (read(fd, buf, sizeof(buf)) > 0) /* until the server has read it all and closed */
		;
	close(fd);
	return bench_now_ns() - t0;
}

/* The one link under links/lookup (the enrolled server pod's). */
static void lookup_link(const char *links_dir, char *out, size_t len)
{
	char dir[512];
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/lookup", links_dir);
	if (!(d = opendir(dir)))
		bench_die(dir);
	out[0] = '\0';
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && strlen(dir) + strlen(e->d_name) + 2 <= len)
			snprintf(out, len, "%.300s/%.200s", dir, e->d_name);
	closedir(d);
	if (!out[0]) {
		errno = ENOENT;
		bench_die("the server pod's lookup link");
	}
}

#define PROGS 6   /* the shipped programs an accepted connection can meet, then the floors */
#define SHIPPED 4
#define REF_LOOKUP 4
#define REF_CLOSE 5
static const char *const prog_names[PROGS] = { "authz_lookup", "sockops", "sock_release",
					       "authz_ingress", "ref_lookup", "ref_release" };

/* Every program's counters; a shipped one not attached (the map writer attaches sockops and
 * authz_ingress only while something needs them) reads zeros, and attached[p] 0. */
static void read_stats(const struct opts *o, const struct ref_accept *ref, struct bench_prog_stats *s,
		       int *attached)
{
	char path[1024];

	lookup_link(o->links_dir, path, sizeof(path));
	s[0] = bench_link_prog_stats(path);
	attached[0] = 1;
	for (int p = 1; p < SHIPPED; p++) {
		snprintf(path, sizeof(path), "%s/%s", o->links_dir, prog_names[p]);
		attached[p] = access(path, F_OK) == 0;
		s[p] = attached[p] ? bench_link_prog_stats(path) : (struct bench_prog_stats){ 0, 0 };
	}
	s[REF_LOOKUP] = bench_fd_prog_stats(bpf_program__fd(ref->progs.km_ref_lookup));
	s[REF_CLOSE] = bench_fd_prog_stats(bpf_program__fd(ref->progs.km_ref_release));
	attached[REF_LOOKUP] = attached[REF_CLOSE] = 1;
}

/* The floors on the third server: the lookup in its namespace (allowing the client's address),
 * the close report on its cgroup, whose ring this process reads (and drops) as the map writer
 * reads the shipped one. */
static struct ref_accept *ref_load(const struct opts *o, struct ring_buffer **ring)
{
	struct ref_accept *r = ref_accept__open_and_load();
	struct in_addr client;
	__u8 yes = 1;
	int fd;

	if (!r || inet_pton(AF_INET, o->client_ip, &client) != 1)
		bench_die("loading the reference programs");
	if (bpf_map_update_elem(bpf_map__fd(r->maps.km_ref_allowed), &client.s_addr, &yes, BPF_ANY))
		bench_die("allowing the client");
	if ((fd = open(o->ref_netns, O_RDONLY | O_CLOEXEC)) < 0 ||
	    !bpf_program__attach_netns(r->progs.km_ref_lookup, fd))
		bench_die("attaching the reference sk_lookup program");
	close(fd);
	*ring = bench_ref_close_attach(r, o->ref_cgroup);
	return r;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: passive_bench --client-netns P --mesh-netns P --plain-netns P\n"
		   "                     --mesh-cgroup DIR --plain-cgroup DIR --links-dir DIR\n"
		   "                     --mesh-ip A --plain-ip A --ref-netns P --ref-cgroup DIR\n"
		   "                     --ref-ip A --client-ip A [--rounds R] [--per-round M]\n"
		   "                     [--stats-connects K] [--bulk-mb N] [--cpu C]\n");
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "client-netns", 1, 0, 'c' }, { "mesh-netns", 1, 0, 'm' }, { "plain-netns", 1, 0, 'p' },
		{ "mesh-cgroup", 1, 0, 'M' }, { "plain-cgroup", 1, 0, 'P' }, { "links-dir", 1, 0, 'l' },
		{ "mesh-ip", 1, 0, 'i' }, { "plain-ip", 1, 0, 'j' }, { "rounds", 1, 0, 'r' },
		{ "per-round", 1, 0, 'n' }, { "stats-connects", 1, 0, 's' }, { "bulk-mb", 1, 0, 'b' },
		{ "cpu", 1, 0, 'u' }, { "help", 0, 0, 'h' }, { "ref-netns", 1, 0, 'R' },
		{ "ref-cgroup", 1, 0, 'G' }, { "ref-ip", 1, 0, 'k' }, { "client-ip", 1, 0, 'C' },
		{ 0, 0, 0, 0 }
	};
	int c;

	*o = (struct opts){ .rounds = 20, .per_round = 500, .stats_connects = 10000, .bulk_mb = 256,
			    .cpu = -1 };
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'c': o->client_netns = optarg; break;
		case 'm': o->mesh_netns = optarg; break;
		case 'p': o->plain_netns = optarg; break;
		case 'M': o->mesh_cgroup = optarg; break;
		case 'P': o->plain_cgroup = optarg; break;
		case 'l': o->links_dir = optarg; break;
		case 'i': o->mesh_ip = optarg; break;
		case 'j': o->plain_ip = optarg; break;
		case 'r': o->rounds = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'n': o->per_round = (unsigned)strtoul(optarg, NULL, 10); break;
		case 's': o->stats_connects = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'b': o->bulk_mb = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'u': o->cpu = atoi(optarg); break;
		case 'R': o->ref_netns = optarg; break;
		case 'G': o->ref_cgroup = optarg; break;
		case 'k': o->ref_ip = optarg; break;
		case 'C': o->client_ip = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (!o->client_netns || !o->mesh_netns || !o->plain_netns || !o->mesh_cgroup ||
	    !o->plain_cgroup || !o->links_dir || !o->mesh_ip || !o->plain_ip || !o->ref_netns ||
	    !o->ref_cgroup || !o->ref_ip || !o->client_ip || !o->rounds ||
	    !o->per_round || !o->stats_connects || !o->bulk_mb) {
		usage(stderr);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	static const char *const variants[3] = { "not enrolled (baseline)", "enrolled pod",
						 "the floors (reference programs)" };
	struct opts o;
	struct sockaddr_in dst[3];
	struct bench_prog_stats before[PROGS], after[PROGS];
	uint64_t *lat[3], failed = 0, bulk_ns[2], stats_failed = 0, bulk_pkts_ns = 0, bulk_pkts = 0;
	uint64_t run_ns[PROGS], runs[PROGS], shipped = 0, floor, floor_close;
	int attached[PROGS];
	pid_t servers[3];
	size_t total;
	int stats_fd, plain_procs;
	struct ref_accept *ref;
	struct ring_buffer *ring;

	bench_name = "passive_bench";
	parse(argc, argv, &o);
	dst[0] = addr_of(o.plain_ip);
	dst[1] = addr_of(o.mesh_ip);
	dst[2] = addr_of(o.ref_ip);
	ref = ref_load(&o, &ring);
	servers[0] = start_server(o.plain_netns, o.plain_cgroup);
	servers[1] = start_server(o.mesh_netns, o.mesh_cgroup);
	servers[2] = start_server(o.ref_netns, o.ref_cgroup);
	plain_procs = bench_open_procs(o.plain_cgroup);
	bench_join_cgroup(plain_procs); /* the client runs no program */
	enter_netns(o.client_netns);
	bench_pin_cpu(o.cpu);
	usleep(200000); /* the servers listen */

	total = (size_t)o.rounds * o.per_round;
	for (int v = 0; v < 3; v++)
		if (!(lat[v] = calloc(total, sizeof(uint64_t))))
			bench_die("allocating");
	for (unsigned r = 0; r <= o.rounds; r++) /* round 0 warms up */
		for (int v = 0; v < 3; v++) {
			for (unsigned i = 0; i < o.per_round; i++) {
				uint64_t ns = timed_connect(&dst[v]);

				if (r)
					lat[v][(size_t)(r - 1) * o.per_round + i] = ns;
				failed += r && !ns;
			}
			ring_buffer__consume(ring);
		}
	for (int v = 0; v < 2; v++)
		bulk_ns[v] = bulk(&dst[v], o.bulk_mb);

	if ((stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME)) < 0)
		bench_die("BPF_ENABLE_STATS");
	read_stats(&o, ref, before, attached);
	for (int v = 1; v <= 2; v++) /* the enrolled server, then the floors' */
		for (unsigned i = 0; i < o.stats_connects; i++) {
			stats_failed += !timed_connect(&dst[v]);
			if (i % 1000 == 999)
				ring_buffer__consume(ring);
		}
	usleep(100000); /* the servers' last closes */
	read_stats(&o, ref, after, attached);
	for (int p = 0; p < PROGS; p++) {
		run_ns[p] = after[p].run_ns - before[p].run_ns;
		runs[p] = after[p].runs - before[p].runs;
	}
	read_stats(&o, ref, before, attached);
	bulk(&dst[1], o.bulk_mb);
	read_stats(&o, ref, after, attached);
	for (int p = 0; p < SHIPPED; p++) { /* whatever ran per packet (the one-time ones are few) */
		bulk_pkts_ns += after[p].run_ns - before[p].run_ns;
		if (p == 3)
			bulk_pkts = after[p].runs - before[p].runs;
	}
	close(stats_fd);
	for (int v = 0; v < 3; v++) {
		kill(servers[v], SIGKILL);
		waitpid(servers[v], NULL, 0);
	}
	ring_buffer__free(ring);
	ref_accept__destroy(ref);
	if (failed) {
		fprintf(stderr, "passive_bench: %llu connects failed\n", (unsigned long long)failed);
		return 1;
	}
	for (int v = 0; v < 3; v++)
		qsort(lat[v], total, sizeof(uint64_t), bench_cmp_u64);

	printf("## The passive side: an enrolled pod accepting connections\n\n");
	printf("Command: `make bench` (runs `bench/passive.sh`). Rounds of %u connects from a client\n"
	       "pod (no program) alternate between a server in an enrolled pod (authorization at the\n"
	       "socket lookup, sock_release at close; sockops and cgroup_skb only when something\n"
	       "needs them; one ALLOW policy applies to it and matches), a server in a pod that is not\n"
	       "enrolled, in a cgroup with no program (the baseline), and a third with the floors\n"
	       "(bench/ref/ref_accept.bpf.c: an sk_lookup program allowing by one hash lookup, and\n"
	       "the least close report); %u rounds, the client pinned to one CPU, only connect()\n"
	       "timed. The pods share a bridge on one node.\n\n",
	       o.per_round, o.rounds);
	printf("| server | connects | p50 (us) | p90 (us) | p99 (us) | ratio (p50) |\n|---|---|---|---|---|---|\n");
	for (int v = 0; v < 3; v++)
		printf("| %s | %zu | %.2f | %.2f | %.2f | %.3f |\n", variants[v], total,
		       bench_pct(lat[v], total, 0.5) / 1e3, bench_pct(lat[v], total, 0.9) / 1e3,
		       bench_pct(lat[v], total, 0.99) / 1e3,
		       (double)bench_pct(lat[v], total, 0.5) / (double)bench_pct(lat[0], total, 0.5));
	printf("\n%u MiB over one connection to each:\n\n| server | MiB/s | ratio |\n|---|---|---|\n",
	       o.bulk_mb);
	for (int v = 0; v < 2; v++)
		printf("| %s | %.0f | %.3f |\n", variants[v],
		       (double)o.bulk_mb / ((double)bulk_ns[v] / 1e9),
		       (double)bulk_ns[0] / (double)bulk_ns[v]);
	printf("\nBPF run time per accepted connection (`BPF_ENABLE_STATS`, %u more connects to the\n"
	       "enrolled server and as many to the floors'%s); every program that ran:\n\n",
	       o.stats_connects, stats_failed ? ", some failed" : "");
	printf("| program | ns per connection | runs per connection | ns per run |\n|---|---|---|---|\n");
	for (int p = 0; p < PROGS; p++) {
		if (!attached[p])
			continue;
		printf("| `%s`%s | %.0f | %.2f | %.0f |\n", prog_names[p],
		       p == REF_LOOKUP ? " (the floor)" : p == REF_CLOSE ? " (a close report's floor)" : "",
		       (double)run_ns[p] / o.stats_connects, (double)runs[p] / o.stats_connects,
		       runs[p] ? (double)run_ns[p] / (double)runs[p] : 0.0);
		if (p < SHIPPED)
			shipped += run_ns[p];
	}
	floor = run_ns[REF_LOOKUP];
	floor_close = floor + run_ns[REF_CLOSE];
	printf("\n| per accepted connection | ns | the floor (`ref_lookup`) | ratio | the floor with a close report | ratio |\n"
	       "|---|---|---|---|---|---|\n"
	       "| every program, monitoring on | %.0f | %.0f | %.2f | %.0f | %.2f |\n",
	       (double)shipped / o.stats_connects, (double)floor / o.stats_connects,
	       floor ? (double)shipped / (double)floor : 0.0, (double)floor_close / o.stats_connects,
	       floor_close ? (double)shipped / (double)floor_close : 0.0);
	if (attached[3])
		printf("\nPer received packet, during one more %u MiB transfer to the enrolled server: "
		       "`authz_ingress` runs on every packet (a pod without its sk_lookup program): %llu "
		       "runs, %.1f ns per packet.\n\n",
		       o.bulk_mb, (unsigned long long)bulk_pkts,
		       bulk_pkts ? (double)bulk_pkts_ns / (double)bulk_pkts : 0.0);
	else
		printf("\nPer received packet, during one more %u MiB transfer to the enrolled server: "
		       "no program runs (`authz_ingress` is not attached: every pod has its sk_lookup "
		       "program).\n\n",
		       o.bulk_mb);
	printf("Goals (issue 50): every program per accepted connection <= 2.0x a floor that makes\n"
	       "the same decision; per received packet <= 10 ns over no program at all.\n\n");
	return 0;
}
