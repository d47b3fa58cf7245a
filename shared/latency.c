/* latency.c — latency samples and percentiles (see latency.h). */
#include "shared/latency.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

void km_latency_add(struct km_latency *l, uint64_t us)
{
	l->us[l->next] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
	l->next = (l->next + 1) % KM_LATENCY_SAMPLES;
	l->count++;
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
