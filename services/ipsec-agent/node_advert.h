/* node_advert.h — this node's own KmeshNodeInfo (kmesh-system/<node name>), written through the
 * Kubernetes API once the agent is ready to receive with its current SPI: a JSON merge patch of
 * the object, or a create when there is none. Peers start encrypting to this node with an SPI
 * only when they see it here, which is why it is written after the ingress states are in (and
 * the agent asks for it only once the first list of peers was applied: agent.c).
 *   - Writes run on the libuv thread pool (libcurl blocks), one at a time; a newer wish waits
 *     for the write in flight.
 *   - A failed write is retried (1 s, doubling to a minute), with the API's reason logged.
 *   - A written SPI is reported to the agent: the grace of the older SPI starts then. */
#ifndef KM_IPSEC_NODE_ADVERT_H
#define KM_IPSEC_NODE_ADVERT_H

#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "services/ipsec-agent/plan.h"

struct km_node_advert {
	uv_loop_t *loop;
	uv_work_t work;
	uv_timer_t retry;
	char kubeconfig[512];
	struct km_ipsec_node want;  /* what should be in the API */
	struct km_ipsec_node doing; /* what the write in flight writes */
	int have_want, written;     /* written: want is in the API as far as we know */
	int busy;
	volatile int stopping;      /* also read by the write in flight, which then gives up */
	int again;                  /* write once more after the one in flight (changed meanwhile) */
	int w_status;               /* the write in flight's (worker thread only) */
	char w_err[256];
	int status;                 /* of the last write: HTTP status, or -1 (loop thread) */
	char err[256];
	uint64_t retry_ms;
	unsigned again_n;           /* rewrites because someone else changed it, within a minute of
				     * each other: the first at once, then 1 s doubling to a minute,
				     * so two writers for one name do not fight at API speed */
	uint64_t last_again_ms;
	uint64_t written_at_ms;     /* loop time of the last successful write */
	uint64_t writes, failures;
	void (*done)(void *arg, uint32_t spi);
	void *arg;
};

/* done(arg, spi): an object advertising spi was written. */
int km_node_advert_init(struct km_node_advert *a, uv_loop_t *loop, const char *kubeconfig,
			void (*done)(void *arg, uint32_t spi), void *arg);
/* Write self (as km_node_info_build makes it) unless it is what was last written (then done
 * is called at once: it is published). */
void km_node_advert_set(struct km_node_advert *a, const struct km_ipsec_node *self);
/* Write it again even if unchanged (our object was deleted or changed by someone else), after
 * the write in flight if any, and no sooner than the rewrite backoff allows. */
void km_node_advert_again(struct km_node_advert *a);
/* Stop retrying; a write in flight finishes on the thread pool, its result is dropped. */
void km_node_advert_stop(struct km_node_advert *a);
/* New reference. */
json_t *km_node_advert_status(const struct km_node_advert *a);

#endif
