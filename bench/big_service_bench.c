/* big_service_bench.c — the xDS agent's model with one service of N members, against the same
 * number of workloads spread over services of 10 members (the baseline, in the same run): the
 * time to load them, to flip K members' health (each leaves its endpoint slot and comes back),
 * to remove K members, and to change the service itself (every member's endpoint re-decided).
 * No kernel, no I/O: the model's own operations (issue 26: none may cost more than O(log n) per
 * changed member; a member's slot was found by a scan, so a big service was quadratic). Each
 * service's members also name one waypoint service (as a namespace's waypoint is named by every
 * workload of the namespace): removing one was a scan of that waypoint's list. Then the same again
 * with every member mapping the service's port its own way (a port-override row each): every
 * member's sync scanned the service's rows.
 * Prints markdown with a ratio per phase: per member op, big service over small ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/lib/bench_util.h"
#include "services/xds-agent/model/model.h"
#include "services/xds-agent/core/oplist.h"
#include "shared/addr.h"
#include "shared/log.h"

struct run {
	double load, flip, remove, change; /* seconds */
};

static struct km_service_res *service(const char *name, uint32_t port)
{
	struct km_service_res *s = calloc(1, sizeof(*s));
	char vip[32];
	unsigned h = 0;

	for (const char *p = name; *p; p++)
		h = h * 31 + (unsigned char)*p;
	snprintf(vip, sizeof(vip), "10.96.%u.%u", (h >> 8) & 255, h & 255);
	s->name = strdup(name);
	s->vips = calloc(1, sizeof(*s->vips));
	km_addr_parse(vip, &s->vips[0]);
	s->n_vips = 1;
	s->ports = calloc(1, sizeof(*s->ports));
	s->ports[0].service_port = port;
	s->ports[0].target_port = 8080;
	s->n_ports = 1;
	return s;
}

/* with own_port, each workload maps the service's port 80 to 9090 (the service says 8080) */
static int own_port;

/* svc's members name the waypoint "<svc>-wp" by hostname (a namespace's waypoint: every
 * workload of it names the one service, which keeps a list of them) */
static struct km_workload_res *workload(size_t i, const char *svc, uint32_t status)
{
	char wp[80];

	struct km_workload_res *w = km_workload_res_new();
	char uid[64], ip[32];

	snprintf(uid, sizeof(uid), "Kubernetes//Pod/b/w%zu", i);
	snprintf(ip, sizeof(ip), "10.%zu.%zu.%zu", 64 + (i >> 16), (i >> 8) & 255, i & 255);
	w->uid_text = strdup(uid);
	w->addrs = calloc(1, sizeof(*w->addrs));
	km_addr_parse(ip, &w->addrs[0]);
	w->n_addrs = 1;
	w->status = status;
	w->rare->capacity = 1;
	w->services = calloc(1, sizeof(*w->services));
	w->services[0].service = strdup(svc);
	w->n_services = 1;
	if (own_port) {
		*km_workload_res_port_array(w) = calloc(1, sizeof(struct km_port));
		(*km_workload_res_port_array(w))[0] = (struct km_port){ 80, 9090 };
		w->services[0].n_ports = 1;
	}
	snprintf(wp, sizeof(wp), "%s-wp", svc);
	w->rare->wp.kind = KM_WAYPOINT_HOSTNAME;
	w->rare->wp.hbone_port = 15008;
	w->rare->wp.service = strdup(wp);
	if (km_workload_res_normalize(w) != 0)
		bench_die("normalize");
	return w;
}

/* per: members per service (n for one big service, 10 for the baseline) */
static struct run run(size_t n, size_t per, size_t k)
{
	struct km_oplist ops;
	struct km_model m;
	struct run r;
	char name[64];
	uint64_t t0;

	km_oplist_init(&ops);
	km_model_init(&m, &ops, NULL);
#define SVC_OF(i) (snprintf(name, sizeof(name), "b/s%zu.b", (i) / per), name)
	for (size_t i = 0; i < n; i += per)
		km_model_upsert_service(&m, service(SVC_OF(i), 80));
	km_model_flush(&m);
	km_oplist_clear(&ops);
	t0 = bench_now_ns();
	for (size_t i = 0; i < n; i++)
		km_model_upsert_workload(&m, workload(i, SVC_OF(i), KM_WORKLOAD_HEALTHY));
	km_model_flush(&m);
	r.load = (double)(bench_now_ns() - t0) / 1e9;
	km_oplist_clear(&ops);
	/* K members spread over the service(s), each unhealthy then healthy again */
	t0 = bench_now_ns();
	for (size_t j = 0; j < k; j++) {
		size_t i = j * (n / k);

		km_model_upsert_workload(&m, workload(i, SVC_OF(i), KM_WORKLOAD_UNHEALTHY));
		km_model_upsert_workload(&m, workload(i, SVC_OF(i), KM_WORKLOAD_HEALTHY));
	}
	km_model_flush(&m);
	r.flip = (double)(bench_now_ns() - t0) / 1e9;
	km_oplist_clear(&ops);
	t0 = bench_now_ns();
	for (size_t j = 0; j < k; j++) {
		char uid[64];

		snprintf(uid, sizeof(uid), "Kubernetes//Pod/b/w%zu", j * (n / k) + 1);
		km_model_remove_workload(&m, uid);
	}
	km_model_flush(&m);
	r.remove = (double)(bench_now_ns() - t0) / 1e9;
	km_oplist_clear(&ops);
	/* every service changes its port: each member's endpoint is decided again */
	t0 = bench_now_ns();
	for (size_t i = 0; i < n; i += per)
		km_model_upsert_service(&m, service(SVC_OF(i), 81));
	km_model_flush(&m);
	r.change = (double)(bench_now_ns() - t0) / 1e9;
#undef SVC_OF
	km_model_free(&m);
	km_oplist_free(&ops);
	return r;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000, k = n / 100 ? n / 100 : 1;
	struct run big, small;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !n)) {
		printf("usage: %s [MEMBERS]\n  one service of MEMBERS members (default 100000) against "
		       "MEMBERS/10 services of 10\n", argv[0]);
		return argc > 1 && !strcmp(argv[1], "--help") ? 0 : 2;
	}
	bench_name = "big_service_bench";
	km_log_set_level(KM_LOG_ERROR);
	for (own_port = 0; own_port < 2; own_port++) {
		small = run(n, 10, k);
		big = run(n, n, k);
		if (!own_port) {
			printf("## The model with one service of %zu members (bench/big_service_bench.c)\n\n", n);
			printf("Baseline in the same run: the same %zu workloads in services of 10 members. Each "
			       "service's members name one waypoint service by hostname. "
			       "%zu members flipped (unhealthy, then healthy) and %zu removed.\n\n", n, k, k);
		} else {
			printf("\nThe same, every member mapping the service's port its own way (a port-override "
			       "row each):\n\n");
		}
		printf("| phase | one service of %zu (s) | services of 10 (s) | ratio |\n|---|---:|---:|---:|\n", n);
		printf("| load every member | %.3f | %.3f | %.1f |\n", big.load, small.load, big.load / small.load);
		printf("| flip %zu members' health | %.3f | %.3f | %.1f |\n", k, big.flip, small.flip, big.flip / small.flip);
		printf("| remove %zu members | %.3f | %.3f | %.1f |\n", k, big.remove, small.remove, big.remove / small.remove);
		printf("| change the service(s) | %.3f | %.3f | %.1f |\n", big.change, small.change, big.change / small.change);
	}
	return 0;
}
