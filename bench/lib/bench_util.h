/* bench_util.h — what the C benchmarks share: dying with a reason, the monotonic clock,
 * percentiles, moving between cgroups, pinning to a CPU, and a BPF program's run-time
 * statistics (BPF_ENABLE_STATS) read through its pinned link or its fd. */
#ifndef KM_BENCH_UTIL_H
#define KM_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Messages start with this (the benchmark's name); set it first. */
extern const char *bench_name;

void bench_die(const char *what) __attribute__((noreturn));
uint64_t bench_now_ns(void);
/* qsort comparator, and the p-th percentile of n sorted values */
int bench_cmp_u64(const void *a, const void *b);
uint64_t bench_pct(const uint64_t *sorted, size_t n, double p);
/* The cgroup's cgroup.procs, opened for writing; writing our pid moves this process there (a
 * socket belongs to the cgroup of the process that made it). */
int bench_open_procs(const char *cgroup);
void bench_join_cgroup(int procs_fd);
/* This thread on one CPU; -1 = the last one. */
void bench_pin_cpu(int cpu);

struct bench_prog_stats {
	uint64_t run_ns, runs;
};
/* The program of the link pinned at path, or of a program fd. */
struct bench_prog_stats bench_link_prog_stats(const char *path);
struct bench_prog_stats bench_fd_prog_stats(int prog_fd);
/* A ring-buffer callback that drops the record: a reference program's ring read as the map writer
 * reads the shipped one (libbpf's ring_buffer_sample_fn). */
int bench_ring_drop(void *ctx, void *data, size_t size);

#endif
