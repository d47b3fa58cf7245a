/* lane.h — blocking work (a map writer request, an API request) run off the loop, one job at a
 * time in arrival order, on libuv's thread pool: the agent's calls to one peer never overtake
 * each other (an unenroll never passes the enroll before it). The caller owns each job; done runs
 * in the loop, once per job: after its work, or with cancelled set when the lane stops before
 * running it. A lane holds at most KM_LANE_MAX jobs; a job over it is refused (done is not
 * called) and the caller answers "unavailable". */
#ifndef KM_CNI_LANE_H
#define KM_CNI_LANE_H

#include <stddef.h>
#include <uv.h>

#define KM_LANE_MAX 4096

struct km_lane_job {
	void (*work)(struct km_lane_job *j); /* in a pool thread */
	void (*done)(struct km_lane_job *j); /* in the loop */
	struct km_lane_job *next;
	struct km_lane *lane;
	int cancelled; /* done without work: the lane stopped first */
};

struct km_lane {
	uv_loop_t *loop;
	uv_work_t req;
	struct km_lane_job *head, *tail, *running;
	size_t queued;
	int stopping;
};

void km_lane_init(struct km_lane *l, uv_loop_t *loop);
/* Queue a job. Returns 0, or -1 when the lane is full or stopping. */
int km_lane_push(struct km_lane *l, struct km_lane_job *j);
/* Jobs not started are done now, cancelled; the running one finishes (its done follows). */
void km_lane_stop(struct km_lane *l);

#endif
