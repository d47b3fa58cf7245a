/* hbone_client_bench.c — the C client of bench/hbone.sh (nghttp2 + OpenSSL, blocking, one
 * thread): HTTP/2 CONNECT over mutual TLS 1.3 as a ztunnel sends it (ALPN h2; its settings:
 * stream window 4 MiB, connection window 16 MiB, frames up to 1 MiB), the same for both servers
 * measured. Fast enough that the servers, not the client, set the pace of the bulk rows (the
 * Python client, bench/lib/hbone_bench_client.py, tops out near 100 MB/s). Modes, each printing
 * one line of key=value like the Python client's:
 *   setup N      one pooled connection, N CONNECT streams one after another to AUTHORITY (an
 *                application that answers and closes): each stream's time from HEADERS to its
 *                END_STREAM; p50/p90/p99 in microseconds
 *   upload MB    one stream: MB MiB to a sink (after their length), its byte count back
 *   download     one stream from a source until its END_STREAM: bytes, seconds, MB/s
 * usage: hbone_client_bench ADDR PORT AUTHORITY CERT KEY CA MODE [ARG]
 * HBONE_BENCH_FRAME=BYTES: send DATA frames of at most BYTES (16384: nghttp2's default sender).
 * HBONE_BENCH_DUMP=FILE (setup): every stream's time, in order, into FILE (where the tail comes
 * from: a pattern in the slow streams' positions points at periodic work in a server). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "shared/h2_frames.h"

#define WINDOW (4 << 20)
#define CONN_WINDOW (16 << 20)
#define FRAME (1 << 20)

struct client {
	SSL *ssl;
	nghttp2_session *s;
	int32_t sid;       /* the stream being measured */
	int ended, status; /* its END_STREAM (or reset) came; its :status */
	uint64_t got;      /* DATA bytes on it */
	char body[64];     /* its first bytes (the sink's count) */
	/* upload: the bytes left to send, the length prefix first */
	uint64_t to_send, sent;
	uint8_t prefix[8];
	int prefix_sent, send_end;
};

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "hbone_client_bench: %s\n", what);
	ERR_print_errors_fp(stderr);
	exit(1);
}

static ssize_t send_cb(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *user)
{
	struct client *c = user;
	size_t done = 0;

	(void)s;
	(void)flags;
	while (done < len) {
		int n = SSL_write(c->ssl, data + done, (int)(len - done));

		if (n <= 0)
			return NGHTTP2_ERR_CALLBACK_FAILURE;
		done += (size_t)n;
	}
	return (ssize_t)len;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nlen,
		     const uint8_t *value, size_t vlen, uint8_t flags, void *user)
{
	struct client *c = user;

	(void)s;
	(void)flags;
	(void)vlen; /* value is NUL-terminated */
	if (f->hd.stream_id == c->sid && nlen == 7 && !memcmp(name, ":status", 7))
		c->status = atoi((const char *)value);
	return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
		   void *user)
{
	struct client *c = user;

	(void)s;
	(void)flags;
	if (id == c->sid) {
		if (c->got < sizeof(c->body) - 1) {
			size_t n = len < sizeof(c->body) - 1 - c->got ? len : sizeof(c->body) - 1 - c->got;

			memcpy(c->body + c->got, data, n);
		}
		c->got += len;
	}
	return 0;
}

static int on_frame(nghttp2_session *s, const nghttp2_frame *f, void *user)
{
	struct client *c = user;

	(void)s;
	if (f->hd.stream_id == c->sid && (f->hd.flags & NGHTTP2_FLAG_END_STREAM) &&
	    (f->hd.type == NGHTTP2_DATA || f->hd.type == NGHTTP2_HEADERS))
		c->ended = 1;
	return 0;
}

static int on_close(nghttp2_session *s, int32_t id, uint32_t code, void *user)
{
	struct client *c = user;

	(void)s;
	(void)code;
	if (id == c->sid)
		c->ended = 1;
	return 0;
}

/* The upload's body: the 8-byte length, then zeros, then END_STREAM (deferred until asked). */
static ssize_t provide(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
		       nghttp2_data_source *src, void *user)
{
	struct client *c = user;
	size_t n;

	(void)s;
	(void)id;
	(void)src;
	if (!c->prefix_sent && c->to_send) {
		if (len < 8)
			return NGHTTP2_ERR_DEFERRED;
		memcpy(buf, c->prefix, 8);
		c->prefix_sent = 1;
		return 8;
	}
	if (c->sent < c->to_send) {
		n = c->to_send - c->sent < len ? (size_t)(c->to_send - c->sent) : len;
		memset(buf, 0, n);
		c->sent += n;
		if (c->sent == c->to_send)
			*flags |= NGHTTP2_DATA_FLAG_EOF;
		return (ssize_t)n;
	}
	if (c->send_end) {
		*flags |= NGHTTP2_DATA_FLAG_EOF;
		return 0;
	}
	return NGHTTP2_ERR_DEFERRED;
}

/* DATA frames as large as the windows and the server's frame size allow (the Python client's
 * and a ztunnel's; nghttp2 would send 16 KiB frames), or HBONE_BENCH_FRAME bytes at most. */
static uint32_t frame_cap = FRAME;

static ssize_t frame_length(nghttp2_session *s, uint8_t type, int32_t id, int32_t session_window,
			    int32_t stream_window, uint32_t remote_max_frame, void *user)
{
	(void)s;
	(void)type;
	(void)id;
	(void)user;
	return km_h2_frame_length(session_window, stream_window, remote_max_frame, frame_cap);
}

/* Write what the session has, then read and feed one TLS read's worth. */
static void turn(struct client *c)
{
	static uint8_t buf[1 << 20];
	int n;

	if (nghttp2_session_send(c->s) != 0)
		die("cannot send");
	n = SSL_read(c->ssl, buf, sizeof(buf));
	if (n <= 0)
		die("the server closed the connection");
	if (nghttp2_session_mem_recv(c->s, buf, (size_t)n) != n)
		die("bad HTTP/2 from the server");
}

static int32_t open_stream(struct client *c, const char *authority)
{
	const nghttp2_nv nv[] = {
		{ (uint8_t *)":method", (uint8_t *)"CONNECT", 7, 7, NGHTTP2_NV_FLAG_NONE },
		{ (uint8_t *)":authority", (uint8_t *)authority, 10, strlen(authority),
		  NGHTTP2_NV_FLAG_NONE },
		{ (uint8_t *)"baggage",
		  (uint8_t *)"k8s.namespace.name=mesh,k8s.deployment.name=bench", 7, 49,
		  NGHTTP2_NV_FLAG_NONE },
		{ (uint8_t *)"forwarded", (uint8_t *)"for=\"10.0.0.1:40000\"", 9, 20,
		  NGHTTP2_NV_FLAG_NONE },
	};
	nghttp2_data_provider dp = { .read_callback = provide };
	int32_t id;

	c->ended = c->status = 0;
	c->got = 0;
	memset(c->body, 0, sizeof(c->body));
	id = nghttp2_submit_request(c->s, NULL, nv, 4, &dp, c);
	if (id < 0)
		die("cannot open a stream");
	c->sid = id;
	return id;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const unsigned char alpn[] = "\x02h2";
	struct sockaddr_storage ss = { 0 };
	struct client c = { 0 };
	nghttp2_session_callbacks *cbs;
	nghttp2_settings_entry iv[] = { { NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, WINDOW },
					{ NGHTTP2_SETTINGS_MAX_FRAME_SIZE, FRAME },
					{ NGHTTP2_SETTINGS_ENABLE_PUSH, 0 } };
	const char *mode;
	SSL_CTX *ctx;
	int fd, one = 1;

	if (argc < 8) {
		fprintf(stderr, "usage: %s ADDR PORT AUTHORITY CERT KEY CA setup N|upload MB|download\n",
			argv[0]);
		return 2;
	}
	mode = argv[7];
	if (getenv("HBONE_BENCH_FRAME") && atoi(getenv("HBONE_BENCH_FRAME")) >= 16384)
		frame_cap = (uint32_t)atoi(getenv("HBONE_BENCH_FRAME"));
	if (inet_pton(AF_INET, argv[1], &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		ss.ss_family = AF_INET;
		((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)atoi(argv[2]));
	} else if (inet_pton(AF_INET6, argv[1], &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		ss.ss_family = AF_INET6;
		((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)atoi(argv[2]));
	} else {
		die("ADDR must be an IP address");
	}
	fd = socket(ss.ss_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, sizeof(ss)) != 0)
		die("cannot connect");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) ||
	    SSL_CTX_use_certificate_chain_file(ctx, argv[4]) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, argv[5], SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_load_verify_locations(ctx, argv[6], NULL) != 1 ||
	    SSL_CTX_set_alpn_protos(ctx, alpn, 3) != 0)
		die("cannot set up TLS");
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	c.ssl = SSL_new(ctx);
	SSL_set_fd(c.ssl, fd);
	if (SSL_connect(c.ssl) != 1)
		die("TLS handshake failed");
	nghttp2_session_callbacks_new(&cbs);
	nghttp2_session_callbacks_set_send_callback(cbs, send_cb);
	nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame);
	nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_close);
	nghttp2_session_callbacks_set_data_source_read_length_callback(cbs, frame_length);
	if (nghttp2_session_client_new(&c.s, cbs, &c) != 0 ||
	    nghttp2_submit_settings(c.s, NGHTTP2_FLAG_NONE, iv, 3) != 0 ||
	    nghttp2_session_set_local_window_size(c.s, NGHTTP2_FLAG_NONE, 0, CONN_WINDOW) != 0)
		die("cannot start HTTP/2");
	nghttp2_session_callbacks_del(cbs);
	if (!strcmp(mode, "setup") && argc > 8) {
		int n = atoi(argv[8]);
		double *lat = calloc((size_t)n, sizeof(*lat));

		for (int i = 0; i < n; i++) {
			double t = now_s();

			c.send_end = 1; /* END_STREAM right after the HEADERS, as the Python client */
			open_stream(&c, argv[3]);
			while (!c.ended)
				turn(&c);
			lat[i] = (now_s() - t) * 1e6;
		}
		if (getenv("HBONE_BENCH_DUMP")) { /* every stream's time, in order (for a look) */
			FILE *f = fopen(getenv("HBONE_BENCH_DUMP"), "w");

			for (int i = 0; f && i < n; i++)
				fprintf(f, "%d %.0f\n", i, lat[i]);
			if (f)
				fclose(f);
		}
		qsort(lat, (size_t)n, sizeof(*lat), cmp);
		printf("cipher=%s streams=%d p50_us=%.0f p90_us=%.0f p99_us=%.0f\n",
		       SSL_get_cipher_name(c.ssl), n, lat[n / 2], lat[n * 9 / 10], lat[n * 99 / 100]);
	} else if (!strcmp(mode, "upload") && argc > 8) {
		uint64_t total = (uint64_t)atoll(argv[8]) << 20;
		double t;

		for (int i = 0; i < 8; i++)
			c.prefix[i] = (uint8_t)(total >> (56 - 8 * i));
		open_stream(&c, argv[3]);
		while (!c.status && !c.ended)
			turn(&c);
		t = now_s();
		c.to_send = total;
		nghttp2_session_resume_data(c.s, c.sid);
		while (!c.ended)
			turn(&c);
		t = now_s() - t;
		printf("cipher=%s bytes=%llu acked=%s seconds=%.3f mbps=%.0f\n",
		       SSL_get_cipher_name(c.ssl), (unsigned long long)c.sent,
		       strtok(c.body, "\r\n") ? c.body : "", t, (double)c.sent / t / 1e6);
	} else if (!strcmp(mode, "download")) {
		double t = now_s();

		c.send_end = 1;
		open_stream(&c, argv[3]);
		while (!c.ended)
			turn(&c);
		t = now_s() - t;
		printf("cipher=%s bytes=%llu seconds=%.3f mbps=%.0f\n", SSL_get_cipher_name(c.ssl),
		       (unsigned long long)c.got, t, (double)c.got / t / 1e6);
	} else {
		die("mode: setup N, upload MB or download");
	}
	nghttp2_session_del(c.s);
	SSL_free(c.ssl);
	SSL_CTX_free(ctx);
	close(fd);
	return 0;
}
