/* latency.h — a fixed ring of recent latency samples (microseconds) with percentiles, for
 * "how long did the last N updates take" in admin dumps and benchmarks. */
#ifndef KM_SHARED_LATENCY_H
#define KM_SHARED_LATENCY_H

#include <stddef.h>
#include <stdint.h>

#define KM_LATENCY_SAMPLES 4096

/* Histogram buckets over every sample ever recorded (for Prometheus), in seconds. */
#define KM_LATENCY_BUCKETS 14
extern const double km_latency_bounds_s[KM_LATENCY_BUCKETS];

struct km_latency {
	uint32_t us[KM_LATENCY_SAMPLES];
	size_t next;
	uint64_t count; /* all samples ever recorded */
	uint64_t buckets[KM_LATENCY_BUCKETS + 1]; /* per bound, then above the last */
	uint64_t sum_us;
};

void km_latency_add(struct km_latency *l, uint64_t us);
/* p in [0, 100] over the samples held; 0 if none. */
uint32_t km_latency_percentile(const struct km_latency *l, double p);
/* Monotonic microseconds. */
uint64_t km_now_us(void);

#endif
