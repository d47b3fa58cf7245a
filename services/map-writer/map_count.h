/* map_count.h — how many rows BPF tables hold, without walking them: the map-count iterator
 * (bpf/count/map_count.bpf.c) reports every map's element count in one read, so a table fill
 * gauge costs the same at ten rows as at a million. Where the kernel cannot load it (before 6.6,
 * which added the count), km_map_count_open fails and the caller walks the rows instead. */
#ifndef KM_MW_MAP_COUNT_H
#define KM_MW_MAP_COUNT_H

#include <stddef.h>
#include <stdint.h>

struct map_count;
struct bpf_link;

struct km_map_count {
	struct map_count *skel;
	struct bpf_link *link;
};

/* Returns 0, or -1 with the reason in err. Closing is safe either way (and on a zeroed one). */
int km_map_count_open(struct km_map_count *c, char *err, size_t len);
/* counts[i] = rows in the map open as fds[i] (KM_MAP_COUNT_UNKNOWN for fd < 0 or a map the
 * iterator did not report), for n <= KM_MAP_COUNT_MAX. Returns 0, or -1 if the iterator is not
 * open or could not be read. */
#define KM_MAP_COUNT_UNKNOWN UINT64_MAX
#define KM_MAP_COUNT_MAX 16
int km_map_count_read(struct km_map_count *c, const int *fds, uint64_t *counts, size_t n);
void km_map_count_close(struct km_map_count *c);

#endif
