/* metrics_http.h — the node's metrics endpoint: an HTTP server (libmicrohttpd) run on the libuv
 * loop (its epoll fd polled by libuv, its timeouts on a libuv timer), so the render callback sees
 * the agent's state without locks. GET /metrics and /stats/prometheus: the render callback's
 * text (Prometheus format 0.0.4); GET /ready: 200 when ready() says so, else 503; GET /healthz: 200
 * (the loop answers: a liveness probe); anything else
 * 404, and methods other than GET and HEAD 405.
 *
 * Bounded against slow or many clients (docs/security.md): at most KM_HTTP_CONNECTIONS
 * connections, KM_HTTP_PER_IP of them from one address, each closed after KM_HTTP_IDLE_S idle and
 * KM_HTTP_DEADLINE_S in all (a client trickling bytes does not keep its slot). The chart's
 * probes do not depend on it: they ask the agent over its admin socket (kmeshctl ready), where
 * room is kept for them. */
#ifndef KM_XDS_METRICS_HTTP_H
#define KM_XDS_METRICS_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

struct MHD_Daemon;

#define KM_HTTP_CONNECTIONS 64u
#define KM_HTTP_PER_IP 4u
#define KM_HTTP_IDLE_S 5u
#define KM_HTTP_DEADLINE_S 10u

/* An open connection and when it was accepted: the deadline's bookkeeping. */
struct km_http_conn {
	struct km_http_conn *next, **pprev;
	int fd;
	uint64_t since_ms;
};
/* The page (malloc'd, freed by the server), or NULL when out of memory. */
typedef char *(*km_metrics_render_cb)(void *arg, size_t *len);
typedef int (*km_metrics_ready_cb)(void *arg);

struct km_metrics_http {
	uv_loop_t *loop;
	struct MHD_Daemon *d;
	uv_poll_t poll;
	uv_timer_t timer;
	uv_timer_t deadline; /* once a second: connections past KM_HTTP_DEADLINE_S are shut */
	struct km_http_conn *conns;
	int handles; /* open libuv handles */
	km_metrics_render_cb render;
	km_metrics_ready_cb ready;
	void *arg;
	uint16_t port; /* bound (also when 0 was asked) */
};

/* address: "IP:PORT" or "[IPv6]:PORT" (port 0: any free port). Returns 0, or -1 with err. */
int km_metrics_http_start(struct km_metrics_http *h, uv_loop_t *loop, const char *address,
			  km_metrics_render_cb render, km_metrics_ready_cb ready, void *arg, char *err,
			  size_t errlen);
void km_metrics_http_stop(struct km_metrics_http *h);

#endif
