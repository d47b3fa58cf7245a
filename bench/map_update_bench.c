/* map_update_bench.c — the cost of writing rows into a BPF hash map of the frontend layout, the
 * map writer's bulk work: one bpf() call per row (the baseline), BPF_MAP_UPDATE_BATCH in runs of
 * 4096 (what the map writer does now), and both again on a preallocated map (BPF_F_NO_PREALLOC
 * off: the kernel allocates every entry up front). Needs CAP_BPF. Prints one markdown section.
 *   map_update_bench [ROWS] [REPETITIONS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "kmesh_maps.h"
#include "shared/latency.h"

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double run(const struct km_frontend_key *keys, const struct km_frontend_value *vals, int rows,
		  int batch, int prealloc)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = prealloc ? 0 : BPF_F_NO_PREALLOC);
	int fd = bpf_map_create(BPF_MAP_TYPE_HASH, NULL, sizeof(*keys), sizeof(*vals),
				(unsigned)rows * 2, &o);
	uint64_t t0;

	if (fd < 0) {
		perror("bpf_map_create");
		exit(1);
	}
	t0 = km_now_us();
	if (!batch) {
		for (int i = 0; i < rows; i++)
			bpf_map_update_elem(fd, &keys[i], &vals[i], BPF_ANY);
	} else {
		LIBBPF_OPTS(bpf_map_batch_opts, bo, .elem_flags = BPF_ANY);

		for (int i = 0; i < rows; i += 4096) {
			__u32 n = rows - i < 4096 ? (__u32)(rows - i) : 4096;

			if (bpf_map_update_batch(fd, &keys[i], &vals[i], &n, &bo) != 0) {
				perror("bpf_map_update_batch");
				exit(1);
			}
		}
	}
	t0 = km_now_us() - t0;
	close(fd);
	return (double)t0 / 1000.0;
}

int main(int argc, char **argv)
{
	int rows = argc > 1 ? atoi(argv[1]) : 100000, reps = argc > 2 ? atoi(argv[2]) : 5;
	struct km_frontend_key *keys = calloc((size_t)rows, sizeof(*keys));
	struct km_frontend_value *vals = calloc((size_t)rows, sizeof(*vals));
	static const char *const names[] = { "one bpf() per row (baseline)", "BPF_MAP_UPDATE_BATCH of 4096",
					     "one per row, preallocated map", "batch, preallocated map" };
	double t[4][64], base;

	if (!keys || !vals || rows < 1 || reps < 1 || reps > 64)
		return 2;
	for (int i = 0; i < rows; i++) {
		keys[i].addr.bytes[10] = keys[i].addr.bytes[11] = 0xff;
		memcpy(&keys[i].addr.bytes[12], &i, sizeof(i));
		keys[i].proto = 6;
		vals[i].kind = KM_FRONTEND_WORKLOAD;
		vals[i].upstream_id = (uint32_t)i + 1;
	}
	for (int r = 0; r < reps; r++) /* interleaved, so noise hits every variant alike */
		for (int v = 0; v < 4; v++)
			t[v][r] = run(keys, vals, rows, v & 1, v >> 1);
	for (int v = 0; v < 4; v++)
		qsort(t[v], (size_t)reps, sizeof(double), cmp);
	base = t[0][reps / 2];
	printf("## Writing %d frontend rows into a BPF hash map\n\n", rows);
	printf("Command: `make bench` (runs `bench/map_update.sh`: `build/bench/map_update_bench %d %d`).\n",
	       rows, reps);
	printf("Each variant %d times, interleaved; ratio = median over the baseline's median.\n\n", reps);
	printf("| variant | min (ms) | median (ms) | max (ms) | ratio |\n|---|---|---|---|---|\n");
	for (int v = 0; v < 4; v++)
		printf("| %s | %.1f | %.1f | %.1f | %.2f |\n", names[v], t[v][0], t[v][reps / 2],
		       t[v][reps - 1], t[v][reps / 2] / base);
	free(keys);
	free(vals);
	return 0;
}
