/* backoff.c — reconnect delays with jitter under a cap (see backoff.h). */
#include "shared/backoff.h"

/* The jitter is taken off the step, not added to it: added, it took the istiod reconnect to
 * 18-22 s against a documented 15 s. Up to a quarter keeps agents that lost istiod together
 * from retrying together, at the cap as below it. */
uint64_t km_backoff_delay(uint64_t *step_ms, uint64_t max_ms, uint32_t rnd)
{
	uint64_t step = *step_ms < max_ms ? *step_ms : max_ms;
	uint64_t delay = step - (uint64_t)rnd % (step / 4 + 1);

	*step_ms = step * 2 > max_ms ? max_ms : step * 2;
	return delay;
}
