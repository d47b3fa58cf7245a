/* lane.c — one blocking job at a time on the thread pool (see lane.h). */
#include "services/cni-agent/lane.h"

static void start_next(struct km_lane *l);

static void on_work(uv_work_t *req)
{
	struct km_lane *l = req->data;

	l->running->work(l->running);
}

static void on_done(uv_work_t *req, int status)
{
	struct km_lane *l = req->data;
	struct km_lane_job *j = l->running;

	(void)status;
	l->running = NULL;
	j->done(j);
	start_next(l);
}

static void start_next(struct km_lane *l)
{
	struct km_lane_job *j = l->head;

	if (l->running || !j || l->stopping)
		return;
	l->head = j->next;
	if (!l->head)
		l->tail = NULL;
	l->queued--;
	l->running = j;
	l->req.data = l;
	if (uv_queue_work(l->loop, &l->req, on_work, on_done) != 0) {
		l->running = NULL;
		j->work(j); /* cannot happen with a valid loop; do it inline rather than lose it */
		j->done(j);
	}
}

void km_lane_init(struct km_lane *l, uv_loop_t *loop)
{
	*l = (struct km_lane){ .loop = loop };
}

int km_lane_push(struct km_lane *l, struct km_lane_job *j)
{
	if (l->stopping || l->queued >= KM_LANE_MAX)
		return -1;
	j->next = NULL;
	j->lane = l;
	if (l->tail)
		l->tail->next = j;
	else
		l->head = j;
	l->tail = j;
	l->queued++;
	start_next(l);
	return 0;
}

void km_lane_stop(struct km_lane *l)
{
	struct km_lane_job *j = l->head;

	l->stopping = 1;
	l->head = l->tail = NULL;
	l->queued = 0;
	while (j) {
		struct km_lane_job *next = j->next;

		j->cancelled = 1;
		j->done(j);
		j = next;
	}
}
