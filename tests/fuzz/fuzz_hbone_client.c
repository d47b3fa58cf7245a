/* fuzz_hbone_client.c — libFuzzer target for the tunnel's HBONE client (services/tunnel/
 * hbone_client.c): what a server sends after the TLS handshake, fed to the HTTP/2 client session
 * in arbitrary chunks while one or more CONNECT streams are open (their :status parsed, 200 or
 * not, DATA before and after it, resets, GOAWAY, windows); then the connection closed and every
 * handle and stream freed (ASan's leak check ends each run). The TCP connection itself goes
 * nowhere (a closed loopback port): the session is driven as if the handshake were done. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <uv.h>

#include "services/tunnel/hbone_client.h"
#include "shared/log.h"

static int closed;

static void on_closed(struct km_hbone_client *c)
{
	(void)c;
	closed = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct km_hbone_client_ops ops = { .on_closed = on_closed };
	static struct km_hbone_client c;
	const char *ids[1] = { "spiffe://cluster.local/ns/a/sa/b" };
	uv_loop_t *loop = uv_default_loop();
	struct sockaddr_storage peer;
	struct sockaddr_in *p4 = (struct sockaddr_in *)&peer;
	struct km_hbone_request rq = { "10.0.0.1:8080", "k8s.namespace.name=a", "for=\"10.0.0.2:1\"",
				       NULL };
	size_t chunk, streams;

	if (size < 1)
		return 0;
	km_log_set_level(KM_LOG_ERROR);
	chunk = (size_t)(data[0] >> 2) % 64 + 1;
	streams = (size_t)(data[0] & 3) + 1;
	data++;
	size--;
	memset(&peer, 0, sizeof(peer));
	p4->sin_family = AF_INET;
	p4->sin_port = htons(1);
	inet_pton(AF_INET, "127.0.0.1", &p4->sin_addr);
	closed = 0;
	if (km_hbone_client_connect(&c, loop, NULL, &peer, ids, 1, &ops, 10000, 60000, NULL) != 0)
		return 0;
	c.ready = 1; /* as after the handshake: frames are made (their writes fail harmlessly) */
	for (size_t i = 0; i < streams && !c.closing; i++) {
		uv_tcp_t *app = malloc(sizeof(*app));

		uv_tcp_init(loop, app);
		km_hbone_client_open(&c, app, &rq, NULL);
	}
	while (size > 0 && !c.closing) {
		size_t n = size < chunk ? size : chunk;

		km_hbone_client_data(&c, data, n);
		data += n;
		size -= n;
	}
	km_hbone_client_close(&c);
	while (!closed)
		uv_run(loop, UV_RUN_ONCE);
	return 0;
}
