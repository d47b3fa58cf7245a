/* turn_queue.h — work run once at the start of the loop's next turn: an item queued any number of
 * times during a turn runs once, after every event of that turn was handled (a uv_idle, started
 * only while items wait: before the loop waits again, after only its timers). The HBONE
 * connections use it so that what one turn's events produced goes out in one write each way
 * (hbone_server.c). Items are the owner's, embedded in its objects; an owner removes its item
 * before freeing it. */
#ifndef KM_TUNNEL_TURN_QUEUE_H
#define KM_TUNNEL_TURN_QUEUE_H

#include <uv.h>

struct km_turn_item;
typedef void (*km_turn_fn)(struct km_turn_item *item);

struct km_turn_item {
	struct km_turn_item *next, **prev; /* prev set: queued */
	km_turn_fn fn;
};

struct km_turn_queue {
	uv_idle_t idle;
	struct km_turn_item *head;
};

int km_turn_queue_init(struct km_turn_queue *q, uv_loop_t *loop);
/* Run fn(item) at the next turn (already queued: nothing more). */
void km_turn_queue_add(struct km_turn_queue *q, struct km_turn_item *item, km_turn_fn fn);
/* Not to run (not queued: nothing). */
void km_turn_queue_remove(struct km_turn_item *item);
/* Forget every item and close (the owner's objects are closed already). */
void km_turn_queue_close(struct km_turn_queue *q);

#endif
