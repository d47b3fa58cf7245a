/* kmesh-certfetch.c — one CreateCertificate call of shared/tls/ca_client.c against istiod's CA
 * (the fake one in the tests: tests/integration/ca_test.sh), until the tunnel (issue 48) makes
 * them itself:
 *   kmesh-certfetch --address HOST:PORT --ca-file PEM --server-name NAME --token-file F
 *                   --cluster-id C --identity SPIFFE-ID [--impersonate] [--ttl S]
 *                   [--chain-out FILE]
 * Prints "ok IDENTITY serial SERIAL valid NOT_BEFORE..NOT_AFTER key BYTES" (the key itself never
 * leaves the process) and writes the chain (public) to FILE; or "failed: WHY", exit 1.
 * Not a product command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/log.h"
#include "shared/tls/ca_client.h"

static int result = 2;
static const char *chain_out;

static void done(struct km_ca_call *c, int ok, const char *why)
{
	struct km_workload_cert w;

	if (!ok) {
		printf("failed: %s\n", why);
		result = 1;
		return;
	}
	km_ca_call_take(c, &w);
	printf("ok %s serial %s valid %lld..%lld key %zu\n", w.identity, w.serial,
	       (long long)w.not_before, (long long)w.not_after, w.key.key_der_len);
	if (chain_out) {
		FILE *f = fopen(chain_out, "w");

		if (!f || fwrite(w.chain, 1, w.chain_len, f) != w.chain_len) {
			perror(chain_out);
			result = 1;
		}
		if (f)
			fclose(f);
	}
	km_workload_cert_free(&w);
	result = result == 1 ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct km_ca_call_config cfg;
	static struct km_ca_call call;
	char host[256] = "";
	const char *address = NULL;
	unsigned port = 0;

	memset(&cfg, 0, sizeof(cfg));
	km_log_init("kmesh-certfetch");
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--impersonate"))
			cfg.impersonate = 1;
		else if (!v)
			break;
		else if (!strcmp(argv[i], "--address"))
			address = argv[++i];
		else if (!strcmp(argv[i], "--ca-file"))
			cfg.grpc.conn.ca_file = argv[++i];
		else if (!strcmp(argv[i], "--server-name"))
			cfg.grpc.conn.server_name = argv[++i];
		else if (!strcmp(argv[i], "--token-file"))
			cfg.grpc.token_file = argv[++i];
		else if (!strcmp(argv[i], "--cluster-id"))
			cfg.grpc.cluster_id = argv[++i];
		else if (!strcmp(argv[i], "--identity"))
			cfg.identity = argv[++i];
		else if (!strcmp(argv[i], "--ttl"))
			cfg.ttl_seconds = strtoll(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--chain-out"))
			chain_out = argv[++i];
	}
	if (!address || sscanf(address, "%255[^:]:%u", host, &port) != 2 || !port || port > 65535 ||
	    !cfg.identity) {
		fprintf(stderr, "usage: kmesh-certfetch --address HOST:PORT --ca-file PEM "
				"--server-name NAME --token-file F --cluster-id C --identity ID "
				"[--impersonate] [--ttl S] [--chain-out FILE]\n");
		return 2;
	}
	cfg.grpc.conn.host = host;
	cfg.grpc.conn.port = (uint16_t)port;
	cfg.grpc.conn.connect_timeout_ms = 5000;
	cfg.grpc.authority = cfg.grpc.conn.server_name ? cfg.grpc.conn.server_name : host;
	cfg.grpc.setup_timeout_ms = 5000;
	cfg.timeout_ms = 10000;
	if (km_ca_call_start(&call, uv_default_loop(), &cfg, done) != 0) {
		printf("failed: %s\n", call.why);
		return 1;
	}
	uv_run(uv_default_loop(), UV_RUN_DEFAULT);
	uv_loop_close(uv_default_loop());
	return result;
}
