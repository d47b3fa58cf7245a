/* backoff.h — reconnect delays: a step that doubles from a minimum up to a cap, less random
 * jitter (up to a quarter) so that many agents do not retry together; the cap holds. */
#ifndef KM_SHARED_BACKOFF_H
#define KM_SHARED_BACKOFF_H

#include <stdint.h>

/* The delay before the next attempt from the current step *step_ms (at most max_ms), jittered
 * by rnd (any random number); the step then doubles, up to max_ms. The delay never exceeds
 * max_ms. */
uint64_t km_backoff_delay(uint64_t *step_ms, uint64_t max_ms, uint32_t rnd);

#endif
