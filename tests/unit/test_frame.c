/* test_frame.c — the framing layer: partial reads, several frames per read, zero-length and
 * oversize frames, and a real libuv round trip over a socketpair. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "ipc/conn.h"
#include "ipc/frame.h"

struct got {
	size_t n;
	size_t lens[16];
	uint8_t first[16];
	int stop_after;
};

static int collect(void *arg, const uint8_t *p, size_t len)
{
	struct got *g = arg;

	g->lens[g->n] = len;
	g->first[g->n] = p[0];
	g->n++;
	return g->stop_after && g->n >= (size_t)g->stop_after;
}

static size_t put_frame(uint8_t *out, uint8_t fill, size_t len)
{
	km_frame_header(out, (uint32_t)len);
	memset(out + KM_FRAME_HEADER, fill, len);
	return KM_FRAME_HEADER + len;
}

static void test_whole_frame(void **state)
{
	struct km_frame_decoder d;
	struct got g = { 0 };
	uint8_t buf[64];
	size_t n = put_frame(buf, 0xab, 10);

	(void)state;
	km_frame_decoder_init(&d, 1024);
	assert_int_equal(km_frame_decoder_feed(&d, buf, n, collect, &g), KM_FRAME_OK);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.lens[0], 10);
	assert_int_equal(g.first[0], 0xab);
	km_frame_decoder_free(&d);
}

static void test_byte_by_byte(void **state)
{
	struct km_frame_decoder d;
	struct got g = { 0 };
	uint8_t buf[256];
	size_t n = put_frame(buf, 1, 100);

	(void)state;
	n += put_frame(buf + n, 2, 3);
	km_frame_decoder_init(&d, 1024);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(km_frame_decoder_feed(&d, buf + i, 1, collect, &g), KM_FRAME_OK);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.lens[0], 100);
	assert_int_equal(g.lens[1], 3);
	assert_int_equal(g.first[1], 2);
	km_frame_decoder_free(&d);
}

static void test_many_and_partial(void **state)
{
	struct km_frame_decoder d;
	struct got g = { 0 };
	uint8_t buf[256];
	size_t n = 0;

	(void)state;
	n += put_frame(buf + n, 1, 5);
	n += put_frame(buf + n, 2, 6);
	n += put_frame(buf + n, 3, 70);
	km_frame_decoder_init(&d, 1024);
	/* everything but the last 30 bytes: two frames out, the third pending */
	assert_int_equal(km_frame_decoder_feed(&d, buf, n - 30, collect, &g), KM_FRAME_OK);
	assert_int_equal(g.n, 2);
	assert_int_equal(km_frame_decoder_feed(&d, buf + n - 30, 30, collect, &g), KM_FRAME_OK);
	assert_int_equal(g.n, 3);
	assert_int_equal(g.lens[2], 70);
	assert_int_equal(g.first[2], 3);
	km_frame_decoder_free(&d);
}

static void test_zero_length_is_garbage(void **state)
{
	struct km_frame_decoder d;
	struct got g = { 0 };
	uint8_t buf[16] = { 0, 0, 0, 0 };

	(void)state;
	km_frame_decoder_init(&d, 1024);
	assert_int_equal(km_frame_decoder_feed(&d, buf, 4, collect, &g), KM_FRAME_EEMPTY);
	/* sticky: the stream is out of sync for good */
	put_frame(buf, 1, 1);
	assert_int_equal(km_frame_decoder_feed(&d, buf, 5, collect, &g), KM_FRAME_EEMPTY);
	assert_int_equal(g.n, 0);
	km_frame_decoder_free(&d);
}

static void test_oversize_rejected_before_allocating(void **state)
{
	struct km_frame_decoder d;
	struct got g = { 0 };
	uint8_t hdr[4];

	(void)state;
	km_frame_decoder_init(&d, 1024);
	km_frame_header(hdr, 1025);
	assert_int_equal(km_frame_decoder_feed(&d, hdr, 4, collect, &g), KM_FRAME_ETOOBIG);
	assert_null(d.body);
	km_frame_header(hdr, 0xffffffffu);
	km_frame_decoder_init(&d, 1024);
	assert_int_equal(km_frame_decoder_feed(&d, hdr, 4, collect, &g), KM_FRAME_ETOOBIG);
	assert_int_equal(g.n, 0);
	km_frame_decoder_free(&d);
}

static void test_exact_maximum_accepted(void **state)
{
	struct km_frame_decoder d;
	struct got g = { 0 };
	uint8_t *buf = malloc(KM_FRAME_HEADER + 1024);
	size_t n = put_frame(buf, 9, 1024);

	(void)state;
	km_frame_decoder_init(&d, 1024);
	assert_int_equal(km_frame_decoder_feed(&d, buf, 7, collect, &g), KM_FRAME_OK);
	assert_int_equal(km_frame_decoder_feed(&d, buf + 7, n - 7, collect, &g), KM_FRAME_OK);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.lens[0], 1024);
	km_frame_decoder_free(&d);
	free(buf);
}

static void test_receiver_can_stop(void **state)
{
	struct km_frame_decoder d;
	struct got g = { .stop_after = 1 };
	uint8_t buf[64];
	size_t n = put_frame(buf, 1, 3);

	(void)state;
	n += put_frame(buf + n, 2, 3);
	km_frame_decoder_init(&d, 1024);
	assert_int_equal(km_frame_decoder_feed(&d, buf, n, collect, &g), KM_FRAME_ESTOPPED);
	assert_int_equal(g.n, 1);
	km_frame_decoder_free(&d);
}

static void test_default_maximum_bounds(void **state)
{
	struct km_frame_decoder d;

	(void)state;
	km_frame_decoder_init(&d, 0);
	assert_int_equal(d.max_frame, KM_FRAME_MAX_DEFAULT);
	km_frame_decoder_init(&d, (size_t)KM_FRAME_MAX_LIMIT + 1);
	assert_int_equal(d.max_frame, KM_FRAME_MAX_DEFAULT);
}

/* A peer that announces a 16 MiB frame and sends 10 bytes of it holds a small buffer, not 16 MiB:
 * the buffer grows with what arrived (an announced length cost 16 MiB at once before). */
static void test_announced_length_costs_nothing_until_sent(void **state)
{
	struct km_frame_decoder d;
	struct got g = { 0 };
	static uint8_t chunk[1 << 20];
	uint8_t hdr[KM_FRAME_HEADER];

	(void)state;
	km_frame_decoder_init(&d, 16u << 20);
	km_frame_header(hdr, 16u << 20);
	assert_int_equal(km_frame_decoder_feed(&d, hdr, sizeof(hdr), collect, &g), KM_FRAME_OK);
	assert_int_equal(km_frame_decoder_feed(&d, chunk, 10, collect, &g), KM_FRAME_OK);
	assert_true(d.body_cap <= KM_FRAME_BODY_STEP);
	assert_int_equal(km_frame_decoder_feed(&d, chunk, sizeof(chunk), collect, &g), KM_FRAME_OK);
	assert_true(d.body_cap <= 2 * (sizeof(chunk) + 10));
	for (int i = 0; i < 14; i++) /* 10 bytes and 15 MiB so far */
		assert_int_equal(km_frame_decoder_feed(&d, chunk, sizeof(chunk), collect, &g), KM_FRAME_OK);
	assert_int_equal(g.n, 0);
	assert_int_equal(km_frame_decoder_feed(&d, chunk, sizeof(chunk) - 10, collect, &g), KM_FRAME_OK);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.lens[0], 16u << 20);
	assert_int_equal(d.body_cap, 0); /* released with the frame */
	km_frame_decoder_free(&d);
}

/* Decoders sharing a budget: the one that would take it past its bound fails (its connection is
 * closed); what a finished or freed frame held is given back. */
static void test_budget_shared_by_decoders(void **state)
{
	struct km_frame_budget b = { .max = 512u << 10 };
	struct km_frame_decoder d1, d2;
	struct got g = { 0 };
	static uint8_t chunk[300u << 10];
	uint8_t hdr[KM_FRAME_HEADER];

	(void)state;
	km_frame_decoder_init(&d1, 1u << 20);
	km_frame_decoder_init(&d2, 1u << 20);
	km_frame_decoder_set_budget(&d1, &b);
	km_frame_decoder_set_budget(&d2, &b);
	km_frame_header(hdr, 1u << 20);
	assert_int_equal(km_frame_decoder_feed(&d1, hdr, sizeof(hdr), collect, &g), KM_FRAME_OK);
	assert_int_equal(km_frame_decoder_feed(&d2, hdr, sizeof(hdr), collect, &g), KM_FRAME_OK);
	assert_int_equal(km_frame_decoder_feed(&d1, chunk, sizeof(chunk), collect, &g), KM_FRAME_OK);
	assert_true(b.used >= sizeof(chunk) && b.used <= b.max);
	assert_int_equal(km_frame_decoder_feed(&d2, chunk, sizeof(chunk), collect, &g), KM_FRAME_EBUDGET);
	assert_int_equal(km_frame_decoder_feed(&d2, chunk, 1, collect, &g), KM_FRAME_EBUDGET); /* sticky */
	km_frame_decoder_free(&d2);
	km_frame_decoder_free(&d1);
	assert_int_equal(b.used, 0);
	assert_int_equal(g.n, 0);
}

/* A stranger's small limit, raised once it is known. */
static void test_limit_raised_later(void **state)
{
	struct km_frame_decoder d;
	struct got g = { 0 };
	static uint8_t buf[KM_FRAME_HEADER + 8192];
	size_t n = put_frame(buf, 3, 8192);

	(void)state;
	km_frame_decoder_init(&d, 4096);
	assert_int_equal(km_frame_decoder_feed(&d, buf, n, collect, &g), KM_FRAME_ETOOBIG);
	km_frame_decoder_free(&d);
	km_frame_decoder_init(&d, 4096);
	km_frame_decoder_set_max(&d, 1u << 20);
	assert_int_equal(km_frame_decoder_feed(&d, buf, n, collect, &g), KM_FRAME_OK);
	assert_int_equal(g.n, 1);
	km_frame_decoder_free(&d);
}

/* ---- libuv round trip ------------------------------------------------------------------------ */

struct rt {
	struct km_conn a, b;
	size_t received;
	size_t lens[4];
	int errors;
	int closed;
};

static void rt_closed(struct km_conn *c)
{
	((struct rt *)c->data)->closed++;
}

static void rt_frame(struct km_conn *c, const uint8_t *p, size_t len)
{
	struct rt *r = c->data;

	for (size_t i = 0; i < len; i++)
		assert_int_equal(p[i], (uint8_t)(len + i));
	r->lens[r->received++] = len;
	if (r->received == 3) {
		km_conn_close(&r->a, rt_closed);
		km_conn_close(&r->b, rt_closed);
	}
}

static void rt_error(struct km_conn *c, int err, const char *what)
{
	(void)err;
	(void)what;
	((struct rt *)c->data)->errors++;
}

static void test_libuv_round_trip(void **state)
{
	uv_loop_t loop;
	struct rt r = { 0 };
	int fds[2];
	size_t sizes[3] = { 1, 70000, 1 << 20 };

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	uv_loop_init(&loop);
	r.a.data = r.b.data = &r;
	assert_int_equal(km_conn_init(&loop, &r.a, 2 << 20), 0);
	assert_int_equal(km_conn_init(&loop, &r.b, 2 << 20), 0);
	assert_int_equal(uv_pipe_open(&r.a.pipe, fds[0]), 0);
	assert_int_equal(uv_pipe_open(&r.b.pipe, fds[1]), 0);
	assert_int_equal(km_conn_start(&r.b, rt_frame, rt_error), 0);
	for (int i = 0; i < 3; i++) {
		uint8_t *p = malloc(sizes[i]);

		for (size_t j = 0; j < sizes[i]; j++)
			p[j] = (uint8_t)(sizes[i] + j);
		assert_int_equal(km_conn_send(&r.a, p, sizes[i]), 0);
		free(p);
	}
	/* a frame above the connection's maximum is refused at send time */
	{
		uint8_t *big = calloc(1, (2 << 20) + 1);

		assert_int_equal(km_conn_send(&r.a, big, (2 << 20) + 1), UV_E2BIG);
		free(big);
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(r.received, 3);
	assert_int_equal(r.lens[1], 70000);
	assert_int_equal(r.lens[2], 1 << 20);
	assert_int_equal(r.errors, 0);
	assert_int_equal(r.closed, 2);
	assert_int_equal(uv_loop_close(&loop), 0);
}

static int pause_first(void *arg, const uint8_t *payload, size_t len)
{
	struct got *g = arg;

	(void)payload;
	g->lens[g->n++] = len;
	return g->n == 1 ? KM_FRAME_CB_PAUSE : 0;
}

/* A pause is not a failure: the bytes after the paused frame are fed again later. */
static void test_receiver_can_pause(void **state)
{
	struct km_frame_decoder d;
	struct got g = { 0 };
	uint8_t buf[64];
	size_t n = put_frame(buf, 1, 3), first = n, used;

	(void)state;
	n += put_frame(buf + n, 2, 5);
	km_frame_decoder_init(&d, 1024);
	assert_int_equal(km_frame_decoder_feed_some(&d, buf, n, pause_first, &g, &used),
			 KM_FRAME_EPAUSED);
	assert_int_equal(used, first);
	assert_int_equal(g.n, 1);
	assert_int_equal(km_frame_decoder_feed_some(&d, buf + used, n - used, pause_first, &g, &used),
			 KM_FRAME_OK);
	assert_int_equal(used, n - first);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.lens[1], 5);
	/* the plain feed has nobody to resume: a pause there is a stop */
	g.n = 0;
	assert_int_equal(km_frame_decoder_feed(&d, buf, n, pause_first, &g), KM_FRAME_ESTOPPED);
	km_frame_decoder_free(&d);
}

/* A client (a) and a server (b) on a socket pair (fds), frames up to 1 MiB, b pausing when
 * 256 KiB of replies wait; data is both connections' owner pointer. */
static void conn_pair(uv_loop_t *loop, struct km_conn *a, struct km_conn *b, void *data, int *fds)
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	a->data = b->data = data;
	assert_int_equal(km_conn_init(loop, a, 1 << 20), 0);
	assert_int_equal(km_conn_init(loop, b, 1 << 20), 0);
	assert_int_equal(uv_pipe_open(&a->pipe, fds[0]), 0);
	assert_int_equal(uv_pipe_open(&b->pipe, fds[1]), 0);
	b->pause_above = 256 << 10;
}

/* A server (b) answering every request with 64 KiB, a client (a) that does not read: b stops
 * reading once its queue passes pause_above, and resumes, losing nothing, when a reads. */
struct bp {
	struct km_conn a, b;
	int handled, replies, closed;
};

static void bp_closed(struct km_conn *c)
{
	((struct bp *)c->data)->closed++;
}

static void bp_request(struct km_conn *c, const uint8_t *p, size_t len)
{
	struct bp *t = c->data;
	static uint8_t reply[65536];

	(void)p;
	(void)len;
	t->handled++;
	assert_int_equal(km_conn_send(&t->b, reply, sizeof(reply)), 0);
}

static void bp_reply(struct km_conn *c, const uint8_t *p, size_t len)
{
	struct bp *t = c->data;

	(void)p;
	assert_int_equal(len, 65536);
	if (++t->replies == 20) {
		km_conn_close(&t->a, bp_closed);
		km_conn_close(&t->b, bp_closed);
	}
}

static void bp_error(struct km_conn *c, int err, const char *what)
{
	(void)c;
	fail_msg("unexpected error %d: %s", err, what);
}

static void test_unread_replies_pause_reading(void **state)
{
	uv_loop_t loop;
	struct bp t = { 0 };
	uint8_t req[20 * 8];
	size_t n = 0;
	int fds[2];

	(void)state;
	uv_loop_init(&loop);
	conn_pair(&loop, &t.a, &t.b, &t, fds);
	assert_int_equal(km_conn_start(&t.b, bp_request, bp_error), 0);
	for (int i = 0; i < 20; i++) /* 20 requests in one write: one read on b's side */
		n += put_frame(req + n, (uint8_t)i, 4);
	assert_int_equal(write(fds[0], req, n), (ssize_t)n);
	for (int i = 0; i < 200; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
	assert_true(t.b.paused);
	assert_true(t.handled < 20);
	assert_true(km_conn_write_queue(&t.b) <= (256 << 10) + 65536 + KM_FRAME_HEADER);
	/* a reads: b drains, resumes with the requests it held, and answers every one */
	assert_int_equal(km_conn_start(&t.a, bp_reply, bp_error), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(t.handled, 20);
	assert_int_equal(t.replies, 20);
	assert_int_equal(t.closed, 2);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* A server (b) that answers each request later (a timer standing for work off the loop) holds
 * its connection: the requests that came in the same read wait, none is handled before the
 * previous one's answer, and every one is answered, in order; a held connection is not paused. */
struct hd {
	struct km_conn a, b;
	uv_timer_t later;
	int handled, answered, replies, closed, in_flight;
	uint8_t order[8];
};

static void hd_closed(struct km_conn *c)
{
	((struct hd *)c->data)->closed++;
}

static void hd_answer(uv_timer_t *tm)
{
	struct hd *t = tm->data;
	uint8_t reply = (uint8_t)t->answered++;

	t->in_flight = 0;
	assert_int_equal(km_conn_send(&t->b, &reply, 1), 0);
	km_conn_release(&t->b); /* may deliver the next request at once: it holds again */
}

static void hd_request(struct km_conn *c, const uint8_t *p, size_t len)
{
	struct hd *t = c->data;

	(void)len;
	assert_false(t->in_flight); /* nothing delivered while held */
	t->in_flight = 1;
	t->order[t->handled++] = p[0];
	km_conn_hold(c);
	assert_false(c->paused);
	uv_timer_start(&t->later, hd_answer, 5, 0);
}

static void hd_reply(struct km_conn *c, const uint8_t *p, size_t len)
{
	struct hd *t = c->data;

	assert_int_equal(len, 1);
	assert_int_equal(p[0], t->replies); /* in the requests' order */
	if (++t->replies == 8) {
		km_conn_close(&t->a, hd_closed);
		km_conn_close(&t->b, hd_closed);
		uv_close((uv_handle_t *)&t->later, NULL);
	}
}

static void test_held_connection_waits_for_its_owner(void **state)
{
	uv_loop_t loop;
	struct hd t = { 0 };
	uint8_t req[8 * 8];
	size_t n = 0;
	int fds[2];

	(void)state;
	uv_loop_init(&loop);
	uv_timer_init(&loop, &t.later);
	t.later.data = &t;
	conn_pair(&loop, &t.a, &t.b, &t, fds);
	assert_int_equal(km_conn_start(&t.b, hd_request, bp_error), 0);
	assert_int_equal(km_conn_start(&t.a, hd_reply, bp_error), 0);
	for (int i = 0; i < 8; i++) /* 8 requests in one write: one read on b's side */
		n += put_frame(req + n, (uint8_t)i, 4);
	assert_int_equal(write(fds[0], req, n), (ssize_t)n);
	for (int i = 0; i < 20; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
	assert_int_equal(t.handled, 1); /* the other seven wait, kept */
	assert_true(t.b.hold && !t.b.paused && !t.b.reading);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(t.handled, 8);
	assert_int_equal(t.replies, 8);
	for (int i = 0; i < 8; i++)
		assert_int_equal(t.order[i], i);
	assert_int_equal(t.closed, 2);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* Connections sharing a send budget queue at most its max bytes together. */
static void test_send_budget(void **state)
{
	uv_loop_t loop;
	struct km_conn c = { 0 };
	struct km_frame_budget budget = { .max = 100 };
	uint8_t payload[200] = { 0 };
	int fds[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	uv_loop_init(&loop);
	assert_int_equal(km_conn_init(&loop, &c, 1 << 20), 0);
	assert_int_equal(uv_pipe_open(&c.pipe, fds[0]), 0);
	c.send_budget = &budget;
	assert_int_equal(km_conn_send(&c, payload, 50), 0);
	assert_int_equal(budget.used, 54);
	assert_int_equal(km_conn_send(&c, payload, 50), UV_ENOBUFS);
	assert_true(c.send_refused);
	km_conn_close(&c, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(budget.used, 0); /* given back once written (or cancelled) */
	close(fds[1]);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_frame),
		cmocka_unit_test(test_byte_by_byte),
		cmocka_unit_test(test_many_and_partial),
		cmocka_unit_test(test_zero_length_is_garbage),
		cmocka_unit_test(test_oversize_rejected_before_allocating),
		cmocka_unit_test(test_exact_maximum_accepted),
		cmocka_unit_test(test_receiver_can_stop),
		cmocka_unit_test(test_default_maximum_bounds),
		cmocka_unit_test(test_announced_length_costs_nothing_until_sent),
		cmocka_unit_test(test_budget_shared_by_decoders),
		cmocka_unit_test(test_limit_raised_later),
		cmocka_unit_test(test_libuv_round_trip),
		cmocka_unit_test(test_receiver_can_pause),
		cmocka_unit_test(test_unread_replies_pause_reading),
		cmocka_unit_test(test_held_connection_waits_for_its_owner),
		cmocka_unit_test(test_send_budget),
	};

	return cmocka_run_group_tests_name("frame", tests, NULL, NULL);
}
