/* conn.c — framed libuv Unix-stream connection (see conn.h). */
#include "ipc/conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct km_write {
	uv_write_t req;
	struct km_frame_budget *budget; /* charged len bytes, given back once written */
	size_t len;
	void *owned; /* km_conn_send_owned: the caller's buffer, freed once written */
	uint8_t bytes[]; /* header + payload (km_conn_send) */
};

static int init(uv_loop_t *loop, struct km_conn *c, size_t max_frame, int ipc)
{
	void *owner = c->data;

	memset(c, 0, sizeof(*c));
	c->data = owner;
	km_frame_decoder_init(&c->decoder, max_frame);
	c->max_send = c->decoder.max_frame;
	c->pipe.data = c;
	return uv_pipe_init(loop, &c->pipe, ipc);
}

int km_conn_init(uv_loop_t *loop, struct km_conn *c, size_t max_frame)
{
	return init(loop, c, max_frame, 0);
}

int km_conn_init_receiving(uv_loop_t *loop, struct km_conn *c, size_t max_frame)
{
	return init(loop, c, max_frame, 1);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)h;
	if (suggested < 65536)
		suggested = 65536;
	buf->base = malloc(suggested);
	buf->len = buf->base ? suggested : 0;
}

static int deliver(void *arg, const uint8_t *payload, size_t len)
{
	struct km_conn *c = arg;

	c->on_frame(c, payload, len);
	if (c->closing)
		return 1; /* stop delivering once the owner closed the connection */
	if (c->pause_above && km_conn_write_queue(c) > c->pause_above) {
		c->paused = 1;
		c->paused_ms = uv_now(c->pipe.loop);
		return KM_FRAME_CB_PAUSE;
	}
	return c->hold ? KM_FRAME_CB_PAUSE : 0;
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

/* Hand bytes to the decoder; a pause or a hold keeps what was not used (a copy) and stops
 * reading. */
static void feed(struct km_conn *c, const uint8_t *data, size_t n)
{
	size_t used;
	int err = km_frame_decoder_feed_some(&c->decoder, data, n, deliver, c, &used);

	if (err == KM_FRAME_EPAUSED) {
		if (c->reading)
			uv_read_stop((uv_stream_t *)&c->pipe);
		c->reading = 0;
		if (used < n && (c->held = malloc(n - used))) {
			memcpy(c->held, data + used, n - used);
			c->held_len = n - used;
		} else if (used < n) {
			c->on_error(c, UV_ENOMEM, "out of memory keeping a paused peer's bytes");
		}
	} else if (err != KM_FRAME_OK && err != KM_FRAME_ESTOPPED && !c->closing) {
		if (c->reading)
			uv_read_stop((uv_stream_t *)&c->pipe);
		c->reading = 0;
		c->on_error(c, err, km_frame_strerror(err));
	}
}

/* Neither paused nor held any more: handle what was kept, then read again (unless it paused
 * or was held again, or was closed meanwhile). */
static void resume(struct km_conn *c)
{
	uint8_t *held = c->held;
	size_t len = c->held_len;

	c->held = NULL;
	c->held_len = 0;
	if (held)
		feed(c, held, len);
	free(held);
	if (!c->paused && !c->hold && !c->closing && !c->reading && !c->decoder.failed &&
	    uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read) == 0)
		c->reading = 1;
}

void km_conn_hold(struct km_conn *c)
{
	c->hold = 1;
}

void km_conn_release(struct km_conn *c)
{
	c->hold = 0;
	if (!c->paused && !c->closing)
		resume(c);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct km_conn *c = s->data;

	if (n > 0 && !c->closing) {
		feed(c, (const uint8_t *)buf->base, (size_t)n);
	} else if (n < 0 && !c->closing) {
		uv_read_stop(s);
		c->reading = 0;
		c->on_error(c, (int)n, n == UV_EOF ? "peer closed the connection" : uv_strerror((int)n));
	}
	free(buf->base);
}

int km_conn_start(struct km_conn *c, km_conn_frame_cb on_frame, km_conn_error_cb on_error)
{
	int err;

	c->on_frame = on_frame;
	c->on_error = on_error;
	err = uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
	if (err == 0)
		c->reading = 1;
	return err;
}

static void on_written(uv_write_t *req, int status)
{
	struct km_write *w = (struct km_write *)req;
	struct km_conn *c = req->handle->data;

	if (w->budget)
		w->budget->used -= w->len;
	free(w->owned);
	free(w);
	if (status < 0 && status != UV_ECANCELED && !c->closing && c->on_error)
		c->on_error(c, status, uv_strerror(status));
	else if (c->paused && !c->closing && km_conn_write_queue(c) <= c->pause_above / 2) {
		c->paused = 0;
		if (!c->hold)
			resume(c);
	}
}

/* May c take a frame of len payload bytes? 0, or the uv error km_conn_send returns. */
static int send_check(struct km_conn *c, size_t len)
{
	if (c->closing)
		return UV_ECANCELED;
	if (len == 0 || len > c->max_send)
		return UV_E2BIG;
	if (c->send_budget && c->send_budget->used + KM_FRAME_HEADER + len > c->send_budget->max) {
		c->send_refused = 1;
		return UV_ENOBUFS;
	}
	return 0;
}

/* Queue w (its budget, len and owned set) writing frame (header included). */
static int send_write(struct km_conn *c, struct km_write *w, uint8_t *frame)
{
	uv_buf_t buf = uv_buf_init((char *)frame, (unsigned int)w->len);
	int err = uv_write(&w->req, (uv_stream_t *)&c->pipe, &buf, 1, on_written);

	if (!err && w->budget)
		w->budget->used += w->len;
	return err;
}

int km_conn_send(struct km_conn *c, const void *payload, size_t len)
{
	struct km_write *w;
	int err = send_check(c, len);

	if (err)
		return err;
	if (!(w = malloc(sizeof(*w) + KM_FRAME_HEADER + len)))
		return UV_ENOMEM;
	w->budget = c->send_budget;
	w->len = KM_FRAME_HEADER + len;
	w->owned = NULL;
	km_frame_header(w->bytes, (uint32_t)len);
	memcpy(w->bytes + KM_FRAME_HEADER, payload, len);
	if ((err = send_write(c, w, w->bytes)))
		free(w);
	return err;
}

int km_conn_send_owned(struct km_conn *c, void *buf, uint8_t *payload, size_t len)
{
	struct km_write *w;
	int err = send_check(c, len);

	if (!err && (size_t)(payload - (uint8_t *)buf) < KM_FRAME_HEADER)
		err = UV_EINVAL;
	if (!err && !(w = malloc(sizeof(*w))))
		err = UV_ENOMEM;
	if (err) {
		free(buf);
		return err;
	}
	w->budget = c->send_budget;
	w->len = KM_FRAME_HEADER + len;
	w->owned = buf;
	km_frame_header(payload - KM_FRAME_HEADER, (uint32_t)len);
	if ((err = send_write(c, w, payload - KM_FRAME_HEADER))) {
		free(buf);
		free(w);
	}
	return err;
}

int km_conn_send_fds(struct km_conn *c, const void *payload, size_t len, const int *fds, size_t n)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * KM_CONN_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	uint8_t hdr[KM_FRAME_HEADER];
	struct iovec iov[2] = { { hdr, sizeof(hdr) }, { (void *)payload, len } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2, .msg_control = ctl.buf,
			     .msg_controllen = CMSG_SPACE(sizeof(int) * n) };
	struct cmsghdr *cm;
	uv_os_fd_t fd;
	ssize_t sent;
	int err = send_check(c, len);

	if (err)
		return err;
	if (n == 0 || n > KM_CONN_MAX_FDS)
		return UV_EINVAL;
	if (km_conn_write_queue(c))
		return UV_EAGAIN; /* the frame must not overtake what is queued */
	if ((err = uv_fileno((const uv_handle_t *)&c->pipe, &fd)))
		return err;
	km_frame_header(hdr, (uint32_t)len);
	memset(ctl.buf, 0, sizeof(ctl.buf));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
	do
		sent = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (sent < 0 && errno == EINTR);
	if (sent < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? UV_EAGAIN : -errno;
	if ((size_t)sent < sizeof(hdr) + len) { /* the rest after it, through libuv */
		size_t left = sizeof(hdr) + len - (size_t)sent;
		struct km_write *w = malloc(sizeof(*w) + left);
		uint8_t *frame = w ? w->bytes : NULL;

		if (!w)
			return UV_ENOMEM; /* the peer has half a frame: the owner closes */
		for (size_t i = (size_t)sent; i < sizeof(hdr) + len; i++)
			frame[i - (size_t)sent] = i < sizeof(hdr) ? hdr[i]
								  : ((const uint8_t *)payload)[i - sizeof(hdr)];
		w->budget = c->send_budget;
		w->len = left;
		w->owned = NULL;
		if ((err = send_write(c, w, frame)))
			free(w);
		return err;
	}
	return 0;
}

int km_conn_take_socket(struct km_conn *c, uv_tcp_t *tcp)
{
	if (!c->pipe.ipc || uv_pipe_pending_count(&c->pipe) <= 0)
		return UV_EAGAIN;
	if (uv_pipe_pending_type(&c->pipe) != UV_TCP)
		return UV_EINVAL;
	return uv_accept((uv_stream_t *)&c->pipe, (uv_stream_t *)tcp);
}

size_t km_conn_write_queue(const struct km_conn *c)
{
	return uv_stream_get_write_queue_size((const uv_stream_t *)&c->pipe);
}

static void on_closed(uv_handle_t *h)
{
	struct km_conn *c = h->data;

	km_frame_decoder_free(&c->decoder);
	free(c->held);
	c->held = NULL;
	if (c->on_close)
		c->on_close(c);
}

void km_conn_close(struct km_conn *c, km_conn_close_cb cb)
{
	if (c->closing)
		return;
	c->closing = 1;
	c->on_close = cb;
	uv_close((uv_handle_t *)&c->pipe, on_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	struct km_conn *c = req->handle->data;

	(void)status;
	uv_close((uv_handle_t *)&c->pipe, on_closed);
}

void km_conn_close_after_writes(struct km_conn *c, km_conn_close_cb cb)
{
	if (c->closing)
		return;
	c->closing = 1;
	c->on_close = cb;
	if (c->reading)
		uv_read_stop((uv_stream_t *)&c->pipe);
	c->reading = 0;
	if (uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->pipe, on_shutdown) != 0)
		uv_close((uv_handle_t *)&c->pipe, on_closed);
}

int km_conn_peer_cred(const struct km_conn *c, pid_t *pid, uid_t *uid, gid_t *gid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	uv_os_fd_t fd;

	if (uv_fileno((const uv_handle_t *)&c->pipe, &fd) != 0)
		return -EBADF;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return -errno;
	*pid = cred.pid;
	*uid = cred.uid;
	*gid = cred.gid;
	return 0;
}
