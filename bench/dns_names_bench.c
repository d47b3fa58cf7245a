/* dns_names_bench.c — the DNS proxy's memory per name: a model holding N services (hostnames
 * "svc-I.bench.svc.cluster.local", one VIP each), then the proxy's name table seeded from it
 * (km_model_watch_services), the heap it adds (glibc's count of bytes in use, so the model's own
 * and the allocator's retained pages do not blur it) divided by N. Prints one JSON line.
 *   dns_names_bench [N] */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/dns/dns_names.h"
#include "services/xds-agent/model/model.h"
#include "shared/addr.h"
#include "shared/log.h"

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000, heap0;
	struct km_oplist ops;
	struct km_model m;
	struct km_dns_names names = { 0 };

	km_log_set_level(KM_LOG_ERROR);
	km_oplist_init(&ops);
	km_model_init(&m, &ops, NULL);
	for (size_t i = 0; i < n; i++) {
		struct km_service_res *s = calloc(1, sizeof(*s));
		char host[64];

		snprintf(host, sizeof(host), "svc-%zu.bench.svc.cluster.local", i);
		s->hostname = strdup(host);
		s->namespace = strdup("bench");
		s->svc_name = strdup(host);
		s->name = malloc(strlen(host) + 8);
		sprintf(s->name, "bench/%s", host);
		s->vips = calloc(1, sizeof(*s->vips));
		{
			uint8_t v4[4] = { 10, 96, (uint8_t)(i >> 8), (uint8_t)i };

			km_addr_from_bytes(v4, 4, &s->vips[0]);
		}
		s->n_vips = 1;
		km_model_upsert_service(&m, s);
		if (ops.n > 65536)
			km_oplist_clear(&ops);
	}
	heap0 = mallinfo2().uordblks;
	km_model_watch_services(&m, km_dns_names_service, &names);
	printf("{\"names\": %zu, \"bytes\": %zu, \"bytes_per_name\": %.1f, \"oom\": %d}\n", names.n,
	       mallinfo2().uordblks - heap0, (double)(mallinfo2().uordblks - heap0) / (double)n,
	       names.oom);
	km_model_watch_services(&m, NULL, NULL);
	km_dns_names_free(&names);
	km_model_free(&m);
	km_oplist_free(&ops);
	return 0;
}
