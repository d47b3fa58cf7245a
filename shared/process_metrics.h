/* process_metrics.h — the process_* metrics Prometheus client libraries export (CPU time,
 * resident and virtual memory, open and maximum file descriptors, start time), read from
 * /proc/self for this process. Every kmesh process writes them with its component label
 * (component="map-writer", ...), since one endpoint serves all of them. */
#ifndef KM_SHARED_PROCESS_METRICS_H
#define KM_SHARED_PROCESS_METRICS_H

#include <stdint.h>

#include "shared/prom.h"

struct km_process_stat {
	uint64_t utime_ticks, stime_ticks; /* user and system CPU time, clock ticks */
	uint64_t start_ticks;              /* start time, clock ticks after boot */
	uint64_t vsize_bytes;
	uint64_t rss_pages;
};

/* Fields of a /proc/PID/stat line (the process name may hold spaces and parentheses: fields
 * are counted after the last ')'). Returns 0, or -1 when the line is not one. */
int km_process_stat_parse(const char *line, struct km_process_stat *out);
/* This process's samples, families and all, labelled component="<component>". */
void km_process_metrics(struct km_prom *p, const char *component);

#endif
