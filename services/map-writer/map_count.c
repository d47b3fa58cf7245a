/* map_count.c — table row counts from the map-count iterator (see map_count.h). */
#include "services/map-writer/map_count.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/count/map_count.h"
#include "map_count.skel.h"

int km_map_count_open(struct km_map_count *c, char *err, size_t len)
{
	int rc;

	memset(c, 0, sizeof(*c));
	if (!(c->skel = map_count__open_and_load())) {
		snprintf(err, len, "cannot load the map-count iterator (kernel 6.6 or later): %s",
			 strerror(errno));
		return -1;
	}
	c->link = bpf_program__attach_iter(c->skel->progs.km_map_count, NULL);
	if (!c->link) {
		rc = errno;
		map_count__destroy(c->skel);
		c->skel = NULL;
		snprintf(err, len, "cannot attach the map-count iterator: %s", strerror(rc));
		return -1;
	}
	return 0;
}

int km_map_count_read(struct km_map_count *c, const int *fds, uint64_t *counts, size_t n)
{
	uint32_t ids[KM_MAP_COUNT_MAX];
	struct km_map_count_rec recs[64];
	ssize_t got;
	int fd;

	if (n > KM_MAP_COUNT_MAX || !c->link)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct bpf_map_info info;
		uint32_t info_len = sizeof(info);

		memset(&info, 0, sizeof(info));
		ids[i] = fds[i] >= 0 && bpf_obj_get_info_by_fd(fds[i], &info, &info_len) == 0 ?
				 info.id : 0;
		counts[i] = KM_MAP_COUNT_UNKNOWN;
	}
	if ((fd = bpf_iter_create(bpf_link__fd(c->link))) < 0)
		return -1;
	/* records are 16 bytes and the buffer a multiple of them, so reads end on a record */
	while ((got = read(fd, recs, sizeof(recs))) > 0)
		for (size_t r = 0; r < (size_t)got / sizeof(recs[0]); r++)
			for (size_t i = 0; i < n; i++)
				if (ids[i] && recs[r].id == ids[i])
					counts[i] = recs[r].count < 0 ? 0 : (uint64_t)recs[r].count;
	close(fd);
	return got < 0 ? -1 : 0;
}

void km_map_count_close(struct km_map_count *c)
{
	bpf_link__destroy(c->link);
	map_count__destroy(c->skel);
	memset(c, 0, sizeof(*c));
}
