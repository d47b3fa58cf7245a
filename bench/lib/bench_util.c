/* bench_util.c — see bench_util.h. */
#include "bench/lib/bench_util.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

const char *bench_name = "bench";

void bench_die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", bench_name, what, strerror(errno));
	exit(1);
}

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int bench_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t bench_pct(const uint64_t *v, size_t n, double p)
{
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);

	return v[i < n ? i : n - 1];
}

int bench_open_procs(const char *cgroup)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		bench_die(path);
	return fd;
}

void bench_join_cgroup(int procs_fd)
{
	char pid[32];
	int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());

	if (pwrite(procs_fd, pid, (size_t)n, 0) != n)
		bench_die("moving into a cgroup");
}

void bench_pin_cpu(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		cpu = (int)sysconf(_SC_NPROCESSORS_ONLN) - 1;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		bench_die("pinning to a CPU");
}

struct bench_prog_stats bench_fd_prog_stats(int pfd)
{
	struct bpf_prog_info pi = { 0 };
	__u32 len = sizeof(pi);

	if (bpf_obj_get_info_by_fd(pfd, &pi, &len) != 0)
		bench_die("reading a program's statistics");
	return (struct bench_prog_stats){ pi.run_time_ns, pi.run_cnt };
}

struct bench_prog_stats bench_link_prog_stats(const char *path)
{
	struct bpf_link_info li = { 0 };
	__u32 len = sizeof(li);
	struct bench_prog_stats s;
	int lfd, pfd;

	if ((lfd = bpf_obj_get(path)) < 0)
		bench_die(path);
	if (bpf_obj_get_info_by_fd(lfd, &li, &len) != 0)
		bench_die("reading a link");
	if ((pfd = bpf_prog_get_fd_by_id(li.prog_id)) < 0)
		bench_die("opening a program");
	s = bench_fd_prog_stats(pfd);
	close(pfd);
	close(lfd);
	return s;
}

int bench_ring_drop(void *ctx, void *data, size_t size)
{
	(void)ctx;
	(void)data;
	(void)size;
	return 0;
}
