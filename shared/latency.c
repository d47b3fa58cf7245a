/* latency.c — latency samples and percentiles (see latency.h). */
#include "shared/latency.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

const double km_latency_bounds_s[KM_LATENCY_BUCKETS] = {
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5,
};

void km_latency_add(struct km_latency *l, uint64_t us)
{
	size_t b = 0;

	l->us[l->next] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
	l->next = (l->next + 1) % KM_LATENCY_SAMPLES;
	l->count++;
	l->sum_us += us;
	while (b < KM_LATENCY_BUCKETS && (double)us > km_latency_bounds_s[b] * 1e6)
		b++;
	l->buckets[b]++;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

uint32_t km_latency_percentile(const struct km_latency *l, double p)
{
	size_t n = l->count < KM_LATENCY_SAMPLES ? (size_t)l->count : KM_LATENCY_SAMPLES;
	uint32_t sorted[KM_LATENCY_SAMPLES];
	size_t idx;

	if (n == 0)
		return 0;
	memcpy(sorted, l->us, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_u32);
	idx = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
	return sorted[idx < n ? idx : n - 1];
}

uint64_t km_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}
