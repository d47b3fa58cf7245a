/* authz_bench.c — what the L4 authorization decision costs per SYN, with 0 to 10,000
 * policies, against a program that only passes the packet (what any cgroup_skb hook costs; the
 * baseline), measured in the same run with BPF_PROG_TEST_RUN's repeat on a crafted IPv4 SYN to
 * an enrolled pod.
 *
 * One world holds every case, each a destination workload in its own namespace:
 *   none        no policy applies (the enrolled pod without policies)
 *   spread-100  100 namespaces with one ALLOW each; the destination's own one matches
 *   spread-1000 100 namespaces with ten ALLOWs each; the destination's tenth matches (realistic:
 *               a mesh with 1,000 policies, ten per namespace)
 *   all-N       N ALLOWs in the destination's namespace, none matching (default deny), for N =
 *               10, 100, 1,000 and 10,000: every policy walked on every SYN, the worst case;
 *               the ladder shows how the cost grows with the number of policies (issue 24)
 * Policies go through the real compiler and the map writer's table code into the real maps.
 * Cases and the baseline are interleaved in rounds; the median per case is printed as one
 * markdown section. Runs in a network namespace of its own (a veth, so the SYN is not on
 * loopback). Needs root. */
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "kmesh.skel.h"
#include "kmesh_maps.h"
#include "ipc/message.h"
#include "services/map-writer/tables.h"
#include "services/xds-agent/authz/authz_compile.h"
#include "shared/addr.h"
#include "shared/log.h"
#include "shared/netns.h"

#define NET "net-a"
#define PORT 8080

enum { C_NONE, C_SPREAD_100, C_SPREAD_1000, C_ALL_10, C_ALL_100, C_ALL_1000, C_ALL_10000, N_CASES };
static const char *const case_name[N_CASES] = { "none",	    "spread-100", "spread-1000", "all-10",
						 "all-100", "all-1000",	  "all-10000" };
static const char *const case_what[N_CASES] = {
	"enrolled pod, no policy applies",
	"100 policies, 1 per namespace; the destination's matches",
	"1,000 policies, 10 per namespace; the destination's 10th matches",
	"10 policies all on the destination, none matches (default deny)",
	"100 policies all on the destination, none matches (default deny)",
	"1,000 policies all on the destination, none matches",
	"10,000 policies all on the destination, none matches (worst case)",
};

static struct kmesh *skel;
static struct km_tables tables;
static struct km_authz authz;
static struct km_oplist ops;
static int ifindex;

static void die(const char *what)
{
	fprintf(stderr, "authz_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* An ALLOW policy NAMESPACE-scoped to ns: from namespace `from` to port PORT. */
static void put_allow(const char *ns, const char *name, const char *from)
{
	Kmesh__Security__Authorization a = KMESH__SECURITY__AUTHORIZATION__INIT;
	Kmesh__Security__Rule rule = KMESH__SECURITY__RULE__INIT, *rules[1] = { &rule };
	Kmesh__Security__Clause clause = KMESH__SECURITY__CLAUSE__INIT, *clauses[1] = { &clause };
	Kmesh__Security__Match match = KMESH__SECURITY__MATCH__INIT, *matches[1] = { &match };
	Kmesh__Security__StringMatch sm = KMESH__SECURITY__STRING_MATCH__INIT, *sms[1] = { &sm };
	uint32_t ports[1] = { PORT };
	char full[128];

	sm.match_type_case = KMESH__SECURITY__STRING_MATCH__MATCH_TYPE_EXACT;
	sm.exact = (char *)from;
	match.namespaces = sms;
	match.n_namespaces = 1;
	match.destination_ports = ports;
	match.n_destination_ports = 1;
	clause.matches = matches;
	clause.n_matches = 1;
	rule.clauses = clauses;
	rule.n_clauses = 1;
	a.name = (char *)name;
	a.namespace_ = (char *)ns;
	a.scope = KMESH__SECURITY__SCOPE__NAMESPACE;
	a.action = KMESH__SECURITY__ACTION__ALLOW;
	a.rules = rules;
	a.n_rules = 1;
	snprintf(full, sizeof(full), "%s/%s", ns, name);
	km_authz_put_policy(&authz, full, &a);
}

static struct km_addr addr4(uint8_t c, uint8_t d)
{
	struct km_addr x = { 0 };

	x.bytes[10] = x.bytes[11] = 0xff;
	x.bytes[12] = 10;
	x.bytes[13] = 9;
	x.bytes[14] = c;
	x.bytes[15] = d;
	return x;
}

/* Each workload is put once; the compiler keeps pointing at its resource until the end. */
static void put_workload(uint32_t id, const char *ns, struct km_addr *a)
{
	struct km_workload_res *w = calloc(1, sizeof(*w) + sizeof(struct km_wl_who) +
						 sizeof(struct km_wl_where) + sizeof(*a) + 128);

	if (!w) {
		perror("calloc");
		exit(1);
	}
	w->who = (struct km_wl_who *)(w + 1);
	w->where = (struct km_wl_where *)(w->who + 1);
	w->addrs = (struct km_addr *)(w->where + 1);
	w->addrs[0] = *a;
	w->n_addrs = 1;
	w->uid_text = (char *)(w->addrs + 1);
	snprintf(w->uid_text, 64, "Kubernetes//Pod/%s/w%u", ns, id);
	w->who->namespace = w->uid_text + 64;
	snprintf(w->who->namespace, 64, "%s", ns);
	w->who->service_account = "sa";
	w->who->network = NET;
	struct km_authz_wl *h = calloc(1, sizeof(*h)); /* the model keeps it in its entry */

	if (!h) {
		perror("calloc");
		exit(1);
	}
	km_authz_put_workload(&authz, h, w, id);
	if (authz.oom) {
		fprintf(stderr, "authz: out of memory\n");
		exit(1);
	}
	km_authz_write_address(&authz, a, 0, h, id); /* as the model does for an address of its own */
}

static void apply_ops(void)
{
	km_envelope *env;
	uint32_t applied;
	uint8_t *frame;
	size_t len;
	char err[512];

	km_oplist_settle(&ops);
	if (ops.oom || authz.oom)
		die("compiler out of memory");
	frame = km_oplist_encode(ops.ops, ops.n, 1, &len);
	env = frame ? kmesh__ipc__envelope__unpack(NULL, len, frame) : NULL;
	if (!env)
		die("encoding the rows");
	if (km_tables_apply_batch(&tables, env->batch, &applied, err, sizeof(err)) !=
	    KMESH__IPC__CODE__OK) {
		fprintf(stderr, "authz_bench: the map writer refused rows: %s\n", err);
		exit(1);
	}
	kmesh__ipc__envelope__free_unpacked(env, NULL);
	free(frame);
	km_oplist_clear(&ops);
}

/* Destination i of the cases is 10.9.1.<i+1>; the client is 10.9.0.1 in namespace "clients". */
static void build_world(void)
{
	static struct km_addr dst[N_CASES], client;
	char ns[32], name[32];

	client = addr4(0, 1);
	put_workload(1, "clients", &client);
	for (int c = 0; c < N_CASES; c++)
		dst[c] = addr4(1, (uint8_t)(c + 1));
	put_workload(10, "none", &dst[C_NONE]);
	for (int n = 0; n < 100; n++) { /* spread-100: namespace s100-0 is the destination's */
		snprintf(ns, sizeof(ns), "s100-%d", n);
		put_allow(ns, "allow", n == 0 ? "clients" : "elsewhere");
	}
	put_workload(11, "s100-0", &dst[C_SPREAD_100]);
	for (int n = 0; n < 100; n++) /* spread-1000: the tenth of s1000-0 matches */
		for (int k = 0; k < 10; k++) {
			snprintf(ns, sizeof(ns), "s1000-%d", n);
			snprintf(name, sizeof(name), "allow-%d", k);
			put_allow(ns, name, n == 0 && k == 9 ? "clients" : "elsewhere");
		}
	put_workload(12, "s1000-0", &dst[C_SPREAD_1000]);
	for (int c = C_ALL_10, n = 10; c <= C_ALL_10000; c++, n *= 10) {
		snprintf(ns, sizeof(ns), "all%d", n);
		for (int k = 0; k < n; k++) {
			snprintf(name, sizeof(name), "allow-%d", k);
			put_allow(ns, name, "elsewhere");
		}
		put_workload((uint32_t)(13 + c - C_ALL_10), ns, &dst[c]);
	}
	km_authz_flush(&authz);
	apply_ops();
}

static void setup(void)
{
	struct km_manage_key mk;
	struct km_manage_value mv = { 0 };
	uint64_t cookie;
	char err[256];

	if (unshare(CLONE_NEWNET) != 0)
		die("unshare(CLONE_NEWNET)");
	if (system("ip link set lo up && ip link add kmbench0 type veth peer name kmbench1 && "
		   "ip link set kmbench0 up") != 0)
		die("creating the veth");
	ifindex = (int)if_nametoindex("kmbench0");
	skel = kmesh__open();
	if (!skel)
		die("opening the BPF object");
	bpf_map__set_max_entries(skel->maps.km_authz_ident, 1024);
	bpf_map__set_max_entries(skel->maps.km_authz_list, 16384);
	bpf_map__set_max_entries(skel->maps.km_authz_match, 16384);
	bpf_map__set_max_entries(skel->maps.km_authz_set, 16384);
	bpf_map__set_max_entries(skel->maps.km_authz_stats, 16384);
	bpf_map__set_max_entries(skel->maps.km_authz_cidr, 1024);
	bpf_map__set_max_entries(skel->maps.km_authz_index, 16384);
	bpf_map__set_max_entries(skel->maps.km_manage, 16);
	bpf_program__set_autoload(skel->progs.km_authz_recheck, false); /* not used; needs 6.5 */
	if (kmesh__load(skel) != 0)
		die("loading the BPF object");
	tables.fd_manage = bpf_map__fd(skel->maps.km_manage);
	tables.fd_pod_netns = tables.fd_frontend = tables.fd_service = tables.fd_endpoint = -1;
	tables.fd_fe_filter = -1;
	tables.fd_slot = -1;
	tables.fd_backend = tables.fd_port_override = -1;
	tables.fd_authz_ident = bpf_map__fd(skel->maps.km_authz_ident);
	tables.fd_authz_list = bpf_map__fd(skel->maps.km_authz_list);
	tables.fd_authz_match = bpf_map__fd(skel->maps.km_authz_match);
	tables.fd_authz_set = bpf_map__fd(skel->maps.km_authz_set);
	tables.fd_authz_cidr = bpf_map__fd(skel->maps.km_authz_cidr);
	tables.fd_authz_stats = bpf_map__fd(skel->maps.km_authz_stats);
	tables.fd_authz_index = bpf_map__fd(skel->maps.km_authz_index);
	if (km_netns_cookie("/proc/self/ns/net", &cookie, err, sizeof(err)) != 0) {
		fprintf(stderr, "authz_bench: %s\n", err);
		exit(1);
	}
	mk.netns_cookie = cookie;
	if (bpf_map_update_elem(tables.fd_manage, &mk, &mv, BPF_ANY) != 0)
		die("enrolling the bench namespace");
}

/* A program that passes every packet: the cost of any cgroup_skb hook, the baseline. */
static int load_pass_program(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 1 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_CGROUP_SKB, "km_bench_pass", "GPL", insns, 2, NULL);

	if (fd < 0)
		die("loading the pass-through program");
	return fd;
}

static uint8_t syn[14 + 20 + 20];

static void make_syn(int c)
{
	uint8_t *ip = syn + 14, *tcp = syn + 34;

	memset(syn, 0, sizeof(syn));
	syn[12] = 0x08;
	ip[0] = 0x45;
	ip[3] = 40;
	ip[8] = 64;
	ip[9] = 6;
	ip[12] = 10, ip[13] = 9, ip[14] = 0, ip[15] = 1;
	ip[16] = 10, ip[17] = 9, ip[18] = 1, ip[19] = (uint8_t)(c + 1);
	tcp[0] = 0x9c;
	tcp[1] = 0x40;
	tcp[2] = PORT >> 8;
	tcp[3] = PORT & 0xff;
	tcp[12] = 0x50;
	tcp[13] = 0x02;
}

/* ns per run over `repeat` runs, and the verdict. */
static double run(int prog_fd, uint32_t repeat, uint32_t *verdict)
{
	struct __sk_buff ctx = { .ifindex = (uint32_t)ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = syn, .data_size_in = sizeof(syn),
		    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = repeat);

	if (bpf_prog_test_run_opts(prog_fd, &o) != 0)
		die("BPF_PROG_TEST_RUN");
	*verdict = o.retval;
	return (double)o.duration;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const int want_allow[N_CASES] = { 1, 1, 1, 0, 0, 0, 0 };
	int rounds = argc > 1 ? atoi(argv[1]) : 15;
	double t[N_CASES + 1][64], med[N_CASES + 1];
	uint32_t repeat[N_CASES + 1], verdict;
	int authz_fd, pass_fd;

	if (argc > 1 && (!strcmp(argv[1], "--help") || rounds < 1 || rounds > 64)) {
		fprintf(stderr, "usage: authz_bench [ROUNDS (1-64, default 15)]\n");
		return argc > 1 && !strcmp(argv[1], "--help") ? 0 : 2;
	}
	km_log_init("authz_bench");
	km_log_set_level(KM_LOG_WARN);
	setup();
	km_oplist_init(&ops);
	km_authz_init(&authz, &ops, NET);
	/* this bench plays the model (it writes each address's identity row itself): with policies
	 * in force, as here, the rows are written from the start */
	authz.identities_on = 1;
	/* the agent's default against a map writer with km_authz_index; AUTHZ_INDEX=0: without */
	authz.index_min = getenv("AUTHZ_INDEX") && !strcmp(getenv("AUTHZ_INDEX"), "0") ? 0 : KM_AUTHZ_INDEX_MIN;
	build_world();
	authz_fd = bpf_program__fd(skel->progs.km_authz_ingress);
	pass_fd = load_pass_program();

	/* repeat so that one measurement takes about 50 ms; checks every case's verdict */
	for (int c = 0; c <= N_CASES; c++) {
		double ns;

		make_syn(c < N_CASES ? c : C_NONE);
		ns = run(c < N_CASES ? authz_fd : pass_fd, 1000, &verdict);
		if (c < N_CASES && (int)verdict != want_allow[c]) {
			fprintf(stderr, "authz_bench: case %s: verdict %u, expected %d\n", case_name[c],
				verdict, want_allow[c]);
			return 1;
		}
		repeat[c] = (uint32_t)(50e6 / (ns > 1 ? ns : 1));
		if (repeat[c] < 100)
			repeat[c] = 100;
	}
	for (int r = 0; r < rounds; r++)
		for (int c = 0; c <= N_CASES; c++) {
			make_syn(c < N_CASES ? c : C_NONE);
			t[c][r] = run(c < N_CASES ? authz_fd : pass_fd, repeat[c], &verdict);
		}
	for (int c = 0; c <= N_CASES; c++) {
		qsort(t[c], (size_t)rounds, sizeof(double), cmp_double);
		med[c] = t[c][rounds / 2];
	}

	printf("## L4 authorization: cost per SYN\n\n");
	printf("`bash bench/authz.sh` (`build/bench/authz_bench %d`): `BPF_PROG_TEST_RUN` of "
	       "`km_authz_ingress` on an IPv4 SYN to an enrolled pod, policies written by the real "
	       "compiler and table code; median of %d interleaved rounds of about 50 ms each. "
	       "Baseline: a `cgroup_skb` program that only passes the packet (%.0f ns per run, the "
	       "harness and hook cost any program pays).\n\n",
	       rounds, rounds, med[N_CASES]);
	printf("| case | what the destination has | ns per SYN: min / median / max | x baseline | added by the decision |\n");
	printf("|---|---|---:|---:|---:|\n");
	for (int c = 0; c < N_CASES; c++)
		printf("| %s | %s | %.0f / **%.0f** / %.0f | %.1f | %.0f ns |\n", case_name[c],
		       case_what[c], t[c][0], med[c], t[c][rounds - 1], med[c] / med[N_CASES],
		       med[c] - med[N_CASES]);
	printf("\nEvery case's verdict was checked before timing (the matching ALLOWs allow, the "
	       "non-matching ones deny).\n");
	km_authz_free(&authz);
	km_oplist_free(&ops);
	km_tables_free(&tables);
	close(pass_fd);
	kmesh__destroy(skel);
	return 0;
}
