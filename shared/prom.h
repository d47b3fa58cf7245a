/* prom.h — the Prometheus text exposition format (version 0.0.4), written into a growing buffer:
 * metric families (HELP, TYPE), samples with escaped label values, and histograms. Used by the
 * xDS agent's /metrics and by the processes that write their metrics to a file for it. */
#ifndef KM_SHARED_PROM_H
#define KM_SHARED_PROM_H

#include <stddef.h>
#include <stdint.h>

struct km_prom {
	char *buf; /* NUL-terminated */
	size_t len, cap;
	int oom; /* something could not be appended: the text is incomplete */
};

void km_prom_init(struct km_prom *p);
void km_prom_free(struct km_prom *p);
void km_prom_printf(struct km_prom *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void km_prom_append(struct km_prom *p, const char *text, size_t len);
/* # HELP and # TYPE (counter, gauge, histogram). */
void km_prom_family(struct km_prom *p, const char *name, const char *type, const char *help);
/* A family of one unlabelled sample: HELP, TYPE, then name value. */
void km_prom_metric(struct km_prom *p, const char *name, const char *type, const char *help,
		    uint64_t value);
/* name{labels} value; labels as km_prom_labels made them ("" for none). */
void km_prom_sample(struct km_prom *p, const char *name, const char *labels, uint64_t value);
/* key="value",... from n (key, value) pairs, values escaped (\\ \" \n), NULL or "" values
 * written as empty_as. Returns the length, or -1 if it did not fit in out. */
int km_prom_labels(char *out, size_t len, const char *const *pairs, size_t n, const char *empty_as);
/* A histogram family's samples: counts[i] samples at most bounds[i] (not cumulative), then
 * counts[n] above the last bound; sum in the bounds' unit. */
void km_prom_histogram(struct km_prom *p, const char *name, const char *labels,
		       const double *bounds, const uint64_t *counts, size_t n, double sum);

/* Put every family's lines together, in the order families first appear: a page assembled from
 * several processes' texts (the node's endpoint serves every process's file) may name a family
 * more than once (process_*, with a label per process), and the format wants one block per
 * family with its HELP and TYPE once. A sample belongs to the family whose name it has, or
 * that name plus _bucket, _sum or _count. Returns 0, or -1 when out of memory (p unchanged). */
int km_prom_group(struct km_prom *p);

#endif
