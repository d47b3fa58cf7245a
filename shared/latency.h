/* latency.h — a fixed ring of recent latency samples (microseconds) with percentiles, for
 * "how long did the last N updates take" in admin dumps and benchmarks. */
#ifndef KM_SHARED_LATENCY_H
#define KM_SHARED_LATENCY_H

#include <stddef.h>
#include <stdint.h>

#define KM_LATENCY_SAMPLES 4096

struct km_latency {
	uint32_t us[KM_LATENCY_SAMPLES];
	size_t next;
	uint64_t count; /* all samples ever recorded */
};

void km_latency_add(struct km_latency *l, uint64_t us);
/* p in [0, 100] over the samples held; 0 if none. */
uint32_t km_latency_percentile(const struct km_latency *l, double p);
/* Monotonic microseconds. */
uint64_t km_now_us(void);

#endif
