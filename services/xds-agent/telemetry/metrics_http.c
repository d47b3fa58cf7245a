/* metrics_http.c — libmicrohttpd on the libuv loop (see metrics_http.h). */
#include "services/xds-agent/telemetry/metrics_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "shared/log.h"

static const char CONTENT_TYPE[] = "text/plain; version=0.0.4; charset=utf-8";

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, char *body, size_t len,
				 enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result rc;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_TYPE);
	rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **state)
{
	struct km_metrics_http *h = cls;
	char *page;
	size_t len = 0;

	(void)version;
	(void)upload;
	if (!*state) { /* first call for this request: headers only */
		*state = h;
		return MHD_YES;
	}
	if (*upload_size) /* a body: not ours to read */
		*upload_size = 0;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return send_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET or HEAD only\n", 17,
				 MHD_RESPMEM_PERSISTENT);
	if (!strcmp(url, "/ready")) {
		if (h->ready && !h->ready(h->arg))
			return send_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready\n", 10,
					 MHD_RESPMEM_PERSISTENT);
		return send_text(c, MHD_HTTP_OK, "ready\n", 6, MHD_RESPMEM_PERSISTENT);
	}
	if (!strcmp(url, "/healthz")) /* answered on the agent's loop: the loop runs */
		return send_text(c, MHD_HTTP_OK, "ok\n", 3, MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/metrics") && strcmp(url, "/stats/prometheus"))
		return send_text(c, MHD_HTTP_NOT_FOUND, "/metrics, /stats/prometheus, /ready or /healthz\n",
				 48, MHD_RESPMEM_PERSISTENT);
	page = h->render(h->arg, &len);
	if (!page)
		return send_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n", 14,
				 MHD_RESPMEM_PERSISTENT);
	return send_text(c, MHD_HTTP_OK, page, len, MHD_RESPMEM_MUST_FREE);
}

static void run(struct km_metrics_http *h);

/* Every connection is known from its start to its end, with its fd and start time. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct km_metrics_http *h = cls;
	struct km_http_conn *k = *socket_context;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *info =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

		if (!info || !(k = calloc(1, sizeof(*k))))
			return; /* unknown: only the idle timeout applies to it */
		k->fd = info->connect_fd;
		k->since_ms = uv_now(h->loop);
		k->next = h->conns;
		k->pprev = &h->conns;
		if (h->conns)
			h->conns->pprev = &k->next;
		h->conns = k;
		*socket_context = k;
	} else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && k) {
		*k->pprev = k->next;
		if (k->next)
			k->next->pprev = k->pprev;
		free(k);
		*socket_context = NULL;
	}
}

/* A client that keeps its connection busy past the deadline (a byte at a time) is shut: the
 * server then sees it end and frees its slot. */
static void on_deadline(uv_timer_t *t)
{
	struct km_metrics_http *h = t->data;
	uint64_t now = uv_now(h->loop);
	int any = 0;

	for (struct km_http_conn *k = h->conns; k; k = k->next)
		if (k->fd >= 0 && now - k->since_ms >= KM_HTTP_DEADLINE_S * 1000ull) {
			km_debug("metrics endpoint: a connection open %u s is shut",
				 KM_HTTP_DEADLINE_S);
			shutdown(k->fd, SHUT_RDWR);
			k->fd = -1; /* once */
			any = 1;
		}
	if (any)
		run(h);
}

static void on_timer(uv_timer_t *t)
{
	run(t->data);
}

static void on_readable(uv_poll_t *p, int status, int events)
{
	(void)events;
	if (status < 0) /* libuv stopped the handle: the endpoint no longer answers */
		km_error("the metrics endpoint stopped: %s", uv_strerror(status));
	else
		run(p->data);
}

/* Let the server do its work, then wake up again when it says it must run. */
static void run(struct km_metrics_http *h)
{
	MHD_UNSIGNED_LONG_LONG ms;

	MHD_run(h->d);
	if (MHD_get_timeout(h->d, &ms) == MHD_YES)
		uv_timer_start(&h->timer, on_timer, ms, 0);
	else
		uv_timer_stop(&h->timer);
}

static int parse_address(const char *address, struct sockaddr_storage *ss, char *err, size_t errlen)
{
	const char *colon = strrchr(address, ':');
	char host[64];
	unsigned long port;
	char *end;
	size_t n;

	if (!colon)
		goto bad;
	n = (size_t)(colon - address);
	if (n >= 2 && address[0] == '[' && address[n - 1] == ']') {
		address++;
		n -= 2;
	}
	if (n >= sizeof(host))
		goto bad;
	memcpy(host, address, n);
	host[n] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || port > 65535)
		goto bad;
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		((struct sockaddr_in *)ss)->sin_family = AF_INET;
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		((struct sockaddr_in6 *)ss)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
		return 0;
	}
bad:
	snprintf(err, errlen, "'%s' is not IP:PORT or [IPv6]:PORT", address);
	return -1;
}

int km_metrics_http_start(struct km_metrics_http *h, uv_loop_t *loop, const char *address,
			  km_metrics_render_cb render, km_metrics_ready_cb ready, void *arg, char *err,
			  size_t errlen)
{
	struct sockaddr_storage ss;
	const union MHD_DaemonInfo *info;
	unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
	int rc;

	memset(h, 0, sizeof(*h));
	h->loop = loop;
	h->render = render;
	h->ready = ready;
	h->arg = arg;
	if (parse_address(address, &ss, err, errlen) != 0)
		return -1;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR,
				(struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT,
				KM_HTTP_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				KM_HTTP_PER_IP, MHD_OPTION_CONNECTION_TIMEOUT, KM_HTTP_IDLE_S,
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, h, MHD_OPTION_END);
	if (!h->d) {
		snprintf(err, errlen, "cannot serve metrics on %s: %s", address, strerror(errno));
		return -1;
	}
	info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : 0;
	info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info || (rc = uv_poll_init(loop, &h->poll, info->epoll_fd)) != 0) {
		snprintf(err, errlen, "cannot poll the metrics server");
		MHD_stop_daemon(h->d);
		h->d = NULL;
		return -1;
	}
	h->poll.data = h;
	h->handles++;
	uv_timer_init(loop, &h->timer);
	h->timer.data = h;
	h->handles++;
	uv_timer_init(loop, &h->deadline);
	h->deadline.data = h;
	h->handles++;
	uv_timer_start(&h->deadline, on_deadline, 1000, 1000);
	if ((rc = uv_poll_start(&h->poll, UV_READABLE, on_readable)) != 0) {
		snprintf(err, errlen, "cannot poll the metrics server: %s", uv_strerror(rc));
		km_metrics_http_stop(h);
		return -1;
	}
	run(h);
	return 0;
}

static void on_closed(uv_handle_t *handle)
{
	struct km_metrics_http *h = handle->data;

	if (--h->handles == 0 && h->d) {
		MHD_stop_daemon(h->d); /* after libuv let go of its epoll fd */
		h->d = NULL;
	}
}

void km_metrics_http_stop(struct km_metrics_http *h)
{
	if (!h->d || !h->handles)
		return;
	uv_close((uv_handle_t *)&h->poll, on_closed);
	uv_close((uv_handle_t *)&h->timer, on_closed);
	uv_close((uv_handle_t *)&h->deadline, on_closed);
}
