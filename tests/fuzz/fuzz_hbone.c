/* fuzz_hbone.c — libFuzzer target for the tunnel's HBONE request handling (services/tunnel/
 * hbone_server.c): the bytes a client sends after its TLS handshake, fed to the HTTP/2 server
 * session in arbitrary chunks (the client preface given), every request decided (:method,
 * :authority parsed against the address the connection came to, the tunnel's ports), the
 * authorization answered allow or deny by the input, no socket inside the pod (503); then the
 * connection closed and every handle and stream freed (ASan's leak check ends each run). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <uv.h>

#include "services/tunnel/hbone_server.h"
#include "shared/log.h"

static int allow;
static int closed;

static int authorize(struct km_hbone_conn *h, const struct sockaddr_storage *to,
		     km_hbone_authz_cb cb, void *arg)
{
	(void)h;
	(void)to;
	cb(arg, allow, allow ? "allowed" : "denied", "k8s.namespace.name=fuzz");
	return 0;
}

static int get_socket(struct km_hbone_conn *h, int family, km_hbone_socket_cb cb, void *arg)
{
	(void)h;
	(void)family;
	cb(arg, NULL, "no pod here");
	return 0;
}

static void on_closed(struct km_hbone_conn *h)
{
	(void)h;
	closed = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
	static const struct km_hbone_ops ops = { authorize, get_socket, on_closed };
	static struct km_hbone_conn h;
	uv_loop_t *loop = uv_default_loop();
	struct sockaddr_in *local = (struct sockaddr_in *)&h.local;
	size_t chunk;

	if (size < 1)
		return 0;
	km_log_set_level(KM_LOG_ERROR);
	allow = data[0] & 1;
	chunk = (size_t)(data[0] >> 1) % 64 + 1;
	data++;
	size--;
	km_hbone_conn_init(&h, loop, &ops);
	uv_tcp_init(loop, &h.tcp);
	local->sin_family = AF_INET;
	local->sin_port = htons(15008);
	inet_pton(AF_INET, "10.0.0.1", &local->sin_addr);
	snprintf(h.principal, sizeof(h.principal), "cluster.local/ns/a/sa/b");
	closed = 0;
	if (km_hbone_conn_start(&h) == 0) {
		km_hbone_conn_data(&h, (const uint8_t *)preface, sizeof(preface) - 1);
		while (size > 0 && !h.closing) {
			size_t n = size < chunk ? size : chunk;

			km_hbone_conn_data(&h, data, n);
			data += n;
			size -= n;
		}
	}
	km_hbone_conn_close(&h);
	while (!closed)
		uv_run(loop, UV_RUN_ONCE);
	return 0;
}
