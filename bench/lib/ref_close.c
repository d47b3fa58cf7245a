/* ref_close.c — see ref_close.h. */
#include "bench/lib/ref_close.h"

#include <fcntl.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "bench/lib/bench_util.h"
#include "bench/ref/ref_accept.h"
#include "kmesh_maps.h"
#include "ref_accept.skel.h"

/* the floor writes as many bytes per close as the shipped report */
_Static_assert(sizeof(struct km_ref_close) == sizeof(struct km_conn_close), "close record size");

struct ring_buffer *bench_ref_close_attach(struct ref_accept *r, const char *cgroup)
{
	struct ring_buffer *ring;
	int fd = open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || !bpf_program__attach_cgroup(r->progs.km_ref_release, fd))
		bench_die("attaching the reference close report");
	close(fd);
	if (!(ring = ring_buffer__new(bpf_map__fd(r->maps.km_ref_closes), bench_ring_drop, NULL, NULL)))
		bench_die("reading the reference ring");
	return ring;
}
