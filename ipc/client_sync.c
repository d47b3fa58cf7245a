/* client_sync.c — blocking framed client (see client_sync.h). */
#include "ipc/client_sync.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int wait_fd(int fd, short events, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	int n;

	do {
		n = poll(&p, 1, timeout_ms);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == 0 ? -ETIMEDOUT : 0;
}

static int write_all(int fd, const uint8_t *p, size_t len, int timeout_ms)
{
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				int err = wait_fd(fd, POLLOUT, timeout_ms);

				if (err)
					return err;
				continue;
			}
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The descriptors a message carried: kept for the caller (cl->fds) or closed. */
static void take_fds(struct km_sync_client *cl, struct msghdr *mh)
{
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		size_t n;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (cl->fds && cl->n_fds < cl->fds_max)
				cl->fds[cl->n_fds++] = fd;
			else
				close(fd);
		}
	}
}

static int read_all(struct km_sync_client *cl, uint8_t *p, size_t len)
{
	int fd = cl->fd;

	while (len > 0) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * 64)];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = { p, len };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
				     .msg_controllen = sizeof(ctl.buf) };
		int err = wait_fd(fd, POLLIN, cl->timeout_ms);
		ssize_t n;

		if (err)
			return err;
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
		if (n >= 0)
			take_fds(cl, &mh);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int km_sync_send(struct km_sync_client *cl, km_envelope *req)
{
	uint8_t hdr[KM_FRAME_HEADER];
	uint8_t *buf;
	size_t len;
	int err;

	req->request_id = cl->next_id++;
	buf = km_msg_pack(req, &len);
	if (!buf)
		return -ENOMEM;
	km_frame_header(hdr, (uint32_t)len);
	err = write_all(cl->fd, hdr, sizeof(hdr), cl->timeout_ms);
	if (!err)
		err = write_all(cl->fd, buf, len, cl->timeout_ms);
	free(buf);
	return err;
}

int km_sync_send_packed(struct km_sync_client *cl, const uint8_t *frame, size_t len)
{
	cl->next_id++;
	return write_all(cl->fd, frame, len, cl->timeout_ms);
}

int km_sync_recv(struct km_sync_client *cl, uint64_t request_id, km_envelope **reply)
{
	uint8_t hdr[KM_FRAME_HEADER];
	uint8_t *buf;
	size_t len;
	int err;

	*reply = NULL;
	err = read_all(cl, hdr, sizeof(hdr));
	if (err)
		return err;
	len = ((size_t)hdr[0] << 24) | ((size_t)hdr[1] << 16) | ((size_t)hdr[2] << 8) | hdr[3];
	if (len == 0 || len > cl->max_frame)
		return -EPROTO;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	err = read_all(cl, buf, len);
	if (!err) {
		*reply = km_msg_unpack(buf, len);
		/* request id 0: the server refused the connection itself (server.h), whatever
		 * was asked */
		if (*reply && (*reply)->request_id == 0 &&
		    (*reply)->body_case == KMESH__IPC__ENVELOPE__BODY_REPLY &&
		    (*reply)->reply->code != KMESH__IPC__CODE__OK) {
			free(buf);
			return 0;
		}
		if (!*reply || (*reply)->request_id != request_id ||
		    (*reply)->body_case != KMESH__IPC__ENVELOPE__BODY_REPLY) {
			km_msg_free(*reply);
			*reply = NULL;
			err = -EPROTO;
		}
	}
	free(buf);
	return err;
}

int km_sync_call(struct km_sync_client *cl, km_envelope *req, km_envelope **reply)
{
	int err = km_sync_send(cl, req);

	*reply = NULL;
	return err ? err : km_sync_recv(cl, req->request_id, reply);
}

int km_sync_connect(struct km_sync_client *cl, const char *path, Kmesh__Ipc__Role role,
		    const char *process, int timeout_ms, Kmesh__Ipc__Code *reply_code,
		    char *msg, size_t msg_len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	km_envelope req = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Hello hello = KMESH__IPC__HELLO__INIT;
	km_envelope *rep = NULL;
	int err;

	memset(cl, 0, sizeof(*cl));
	cl->fd = -1;
	cl->next_id = 1;
	cl->max_frame = KM_FRAME_MAX_DEFAULT;
	cl->timeout_ms = timeout_ms > 0 ? timeout_ms : 5000;
	if (reply_code)
		*reply_code = KMESH__IPC__CODE__OK;
	if (msg && msg_len)
		msg[0] = '\0';
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	cl->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (cl->fd < 0)
		return -errno;
	if (connect(cl->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		err = -errno;
		km_sync_close(cl);
		return err;
	}
	hello.role = role;
	hello.protocol_version = KM_IPC_PROTOCOL_VERSION;
	hello.process = (char *)process;
	req.body_case = KMESH__IPC__ENVELOPE__BODY_HELLO;
	req.hello = &hello;
	err = km_sync_call(cl, &req, &rep);
	if (err) {
		km_sync_close(cl);
		return err;
	}
	if (reply_code)
		*reply_code = rep->reply->code;
	if (msg && msg_len)
		snprintf(msg, msg_len, "%s", rep->reply->message ? rep->reply->message : "");
	if (rep->reply->body_case == KMESH__IPC__REPLY__BODY_HELLO) { /* refused ones say it too */
		const Kmesh__Ipc__HelloReply *h = rep->reply->hello;

		snprintf(cl->server, sizeof(cl->server), "%s", h->server ? h->server : "");
		snprintf(cl->version, sizeof(cl->version), "%s", h->version ? h->version : "");
		snprintf(cl->log_level, sizeof(cl->log_level), "%s", h->log_level ? h->log_level : "");
		cl->pid = h->pid;
	}
	if (rep->reply->code != KMESH__IPC__CODE__OK) {
		err = rep->reply->code == KMESH__IPC__CODE__PERMISSION_DENIED	 ? -EACCES
		      : rep->reply->code == KMESH__IPC__CODE__RESOURCE_EXHAUSTED ? -EBUSY
										 : -EPROTO;
		km_msg_free(rep);
		km_sync_close(cl);
		return err;
	}
	km_msg_free(rep);
	return 0;
}

void km_sync_close(struct km_sync_client *cl)
{
	if (cl->fd >= 0)
		close(cl->fd);
	cl->fd = -1;
}
