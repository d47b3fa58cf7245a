/* metrics_file.h — the map writer's metrics, for the node's metrics endpoint (the xDS agent
 * serves every *.prom file of the metrics directory): written every interval, atomically, as
 * <dir>/map-writer.prom (mode 0644, so the unprivileged agent reads it). This process holds
 * CAP_BPF and parses no HTTP. Holds: table fill levels and capacities, operations applied and
 * refused, tables full, rows swept, IPC requests by role, kind and result, IPC connections and
 * the ones refused or cut off (server.h's bounds), enrolled pods,
 * connection reports and their losses, authorization re-checks, the IPsec programs; then the
 * CNI plugin's counter file, copied as it is (its directory is root's alone). */
#ifndef KM_MW_METRICS_FILE_H
#define KM_MW_METRICS_FILE_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "services/map-writer/cni_pending.h"
#include "services/map-writer/map_count.h"
#include "services/map-writer/requests.h"

struct km_mw_metrics {
	uv_loop_t *loop;
	uv_timer_t timer;
	char path[4096];
	char cni_path[4096];
	struct km_mw_requests *rq; /* and what it points to: tables, dataplane, events, ... */
	const struct km_ipc_server *server; /* its connection counts (NULL: none) */
	const struct km_cni_pending *pending; /* fail-open pods enrolled later (NULL: none) */
	uint64_t writes, failures;
	struct km_map_count counter; /* rows counted by the kernel, if it could be opened */
};

/* Returns 0 (a directory that cannot be made is logged, and there is no file then); dir ""
 * turns the file off. */
int km_mw_metrics_start(struct km_mw_metrics *m, uv_loop_t *loop, const char *dir,
			const char *cni_file, unsigned interval_ms, struct km_mw_requests *rq);
/* Write it now (also done by the timer). */
void km_mw_metrics_write(struct km_mw_metrics *m);
void km_mw_metrics_stop(struct km_mw_metrics *m);

#endif
