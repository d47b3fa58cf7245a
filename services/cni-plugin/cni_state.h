/* cni_state.h — what kmesh-cni keeps between calls, under its state directory (default
 * /run/kmesh/cni, a tmpfs: netns cookies are only valid until reboot):
 *   containers/<CNI_CONTAINERID>  the netns cookie an ADD enrolled, so a DEL can unenroll the
 *                                 pod even when its network namespace is already gone;
 *   pending/<CNI_CONTAINERID>     an enrollment the map writer could not take when the pod started
 *                                 (fail-open): the Enroll request as a packed Envelope, which
 *                                 the map writer applies once it is back (cni_pending.c there);
 *                                 removed by it, or by DEL under the file's lock;
 *   undecided/<CNI_CONTAINERID>   an ADD the node's CNI agent did not answer (fail-open): the
 *                                 CniCall as a packed Envelope, which the agent decides and
 *                                 applies once it is back; removed by it, or by DEL under the
 *                                 file's lock;
 *   metrics.prom                  counters in Prometheus text format, updated under a lock by
 *                                 every call (kmesh_cni_requests_total{command,result},
 *                                 kmesh_cni_fail_open_total{reason}). */
#ifndef KM_CNI_STATE_H
#define KM_CNI_STATE_H

#include <stddef.h>
#include <stdint.h>

#define KM_CNI_UNDECIDED_DIR "undecided"

/* Create the state directory (mode 0700) and its containers/, pending/ and undecided/
 * subdirectories. */
int km_cni_state_init(const char *dir, char *err, size_t errlen);
int km_cni_state_save(const char *dir, const char *container_id, uint64_t cookie,
		      const char *pod, char *err, size_t errlen);
/* Returns 0, -ENOENT when nothing is saved for this container, or another -errno when the
 * file cannot be read or parsed. */
int km_cni_state_load(const char *dir, const char *container_id, uint64_t *cookie);
void km_cni_state_remove(const char *dir, const char *container_id);

/* Save the Enroll request (a packed Envelope) for the map writer to apply later. */
int km_cni_pending_save(const char *dir, const char *container_id, const uint8_t *env,
			size_t len, char *err, size_t errlen);
/* Remove it, under its lock (the map writer holds it while it applies one): after this returns,
 * the map writer either applied it already or never will. Returns 1 if there was one. */
int km_cni_pending_remove(const char *dir, const char *container_id);

/* Save the ADD the agent did not answer (a packed Envelope{cni_call}) for it to apply later. */
int km_cni_undecided_save(const char *dir, const char *container_id, const uint8_t *env,
			  size_t len, char *err, size_t errlen);
/* Remove it, under its lock, as km_cni_pending_remove. Returns 1 if there was one. */
int km_cni_undecided_remove(const char *dir, const char *container_id);

/* Add 1 to one counter series, e.g. kmesh_cni_fail_open_total{reason="map_writer"}. Failures
 * are logged, never fatal. */
void km_cni_metric_inc(const char *dir, const char *series);

#endif
