/* ref_close.h — the floor of a close report (bench/ref/ref_accept.bpf.c, km_ref_release) on a
 * cgroup, its ring read and dropped by the caller (ring_buffer__consume) as the map writer reads
 * the shipped one: for bench/connect_bench.c and bench/passive_bench.c. */
#ifndef KM_BENCH_REF_CLOSE_H
#define KM_BENCH_REF_CLOSE_H

struct ref_accept;
struct ring_buffer;

/* Attaches r's km_ref_release to the cgroup directory; returns the reader of its ring (dies on
 * failure, as the benchmarks do). */
struct ring_buffer *bench_ref_close_attach(struct ref_accept *r, const char *cgroup);

#endif
