/* turn_queue.c — see turn_queue.h. */
#include "services/tunnel/turn_queue.h"

#include <string.h>

void km_turn_queue_remove(struct km_turn_item *item)
{
	if (!item->prev)
		return;
	*item->prev = item->next;
	if (item->next)
		item->next->prev = item->prev;
	item->prev = NULL;
	item->next = NULL;
}

static void on_turn(uv_idle_t *idle)
{
	struct km_turn_queue *q = idle->data;

	while (q->head) { /* an item queued again while it runs runs again before the turn ends */
		struct km_turn_item *item = q->head;

		km_turn_queue_remove(item);
		item->fn(item);
	}
	uv_idle_stop(idle);
}

void km_turn_queue_add(struct km_turn_queue *q, struct km_turn_item *item, km_turn_fn fn)
{
	if (item->prev)
		return;
	item->fn = fn;
	item->next = q->head;
	if (q->head)
		q->head->prev = &item->next;
	q->head = item;
	item->prev = &q->head;
	if (!uv_is_active((uv_handle_t *)&q->idle))
		uv_idle_start(&q->idle, on_turn);
}

int km_turn_queue_init(struct km_turn_queue *q, uv_loop_t *loop)
{
	int rc;

	memset(q, 0, sizeof(*q));
	rc = uv_idle_init(loop, &q->idle);
	q->idle.data = q;
	return rc;
}

void km_turn_queue_close(struct km_turn_queue *q)
{
	while (q->head)
		km_turn_queue_remove(q->head);
	uv_close((uv_handle_t *)&q->idle, NULL);
}
