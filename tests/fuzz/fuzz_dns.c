/* fuzz_dns.c — libFuzzer target for the DNS proxy's query path (services/xds-agent/dns): any
 * bytes a pod sends to port 53, decided against a model that holds a service with VIPs of both
 * families, a ServiceEntry host and a headless service, over UDP (the truncation path, limits
 * from 512 bytes up) and TCP. An answer must be a DNS message with the query's id. The same bytes
 * as an upstream's answer passing back (an agent on demand reads it for a service to demand): a
 * key it demands must be one the demand set takes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ldns/ldns.h>

#include "services/xds-agent/ads/demand.h"
#include "services/xds-agent/dns/dns_answer.h"
#include "services/xds-agent/sources/resource_json.h"
#include "services/xds-agent/sources/snapshot.h"
#include "shared/log.h"

static const char MESH[] =
	"{\"resources\": ["
	" {\"service\": {\"name\": \"web\", \"namespace\": \"t\", \"hostname\": \"web.t.svc.cluster.local\","
	"  \"addresses\": [{\"address\": \"10.96.0.1\"}, {\"address\": \"fd00::1\"}], \"ports\": [{\"servicePort\": 80}]}},"
	" {\"service\": {\"name\": \"api.ex.com\", \"namespace\": \"t\", \"hostname\": \"api.ex.com\","
	"  \"addresses\": [{\"address\": \"240.0.0.5\"}], \"ports\": [{\"servicePort\": 443}]}},"
	" {\"service\": {\"name\": \"hl\", \"namespace\": \"t\", \"hostname\": \"hl.t.svc.cluster.local\","
	"  \"ports\": [{\"servicePort\": 80}]}},"
	" {\"workload\": {\"uid\": \"a\", \"name\": \"a\", \"namespace\": \"t\", \"addresses\": [\"10.0.0.1\"],"
	"  \"services\": {\"t/hl.t.svc.cluster.local\": {}}}}]}";

static struct km_oplist ops;
static struct km_model model;
static struct km_dns_resolver resolver;
static struct km_demand demand;

static int on_unknown(void *arg, const char *key)
{
	(void)arg;
	if (km_demand_add(&demand, key) == KM_DEMAND_INVALID)
		abort(); /* the resolver made a key no demand takes */
	if (demand.n == demand.max) {
		km_demand_free(&demand);
		km_demand_init(&demand, 64);
	}
	return 1;
}

static void setup(void)
{
	struct km_resource_set set;
	struct km_snapshot_stats st;
	char err[256];

	km_log_set_level(KM_LOG_ERROR);
	km_oplist_init(&ops);
	km_model_init(&model, &ops, NULL);
	resolver.model = &model;
	resolver.ttl = 30;
	strcpy(resolver.domain, "cluster.local");
	km_model_watch_services(&model, km_dns_names_service, &resolver.names);
	if (km_json_decode_document(MESH, strlen(MESH), &set, err, sizeof(err)) != 0)
		abort();
	km_snapshot_apply(&model, &set, &st);
	km_resource_set_free(&set);
	km_oplist_clear(&ops);
	km_demand_init(&demand, 64);
	resolver.on_unknown_service = on_unknown;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	uint8_t *reply;
	size_t reply_len;
	size_t udp = size ? 512 + (size_t)data[0] * 16 : 512;

	if (!ready) {
		setup();
		ready = 1;
	}
	{
		char name[KM_DNS_MAX_NAME];

		/* a demand names a query the model does not hold */
		if (km_dns_upstream_answered(&resolver, data, size, name) &&
		    km_dns_name_held(&resolver, name))
			abort();
	}
	for (int tcp = 0; tcp < 2; tcp++) {
		if (km_dns_answer(&resolver, data, size, tcp ? 0 : udp, &reply, &reply_len) ==
		    KM_DNS_ANSWERED) {
			ldns_pkt *p = NULL;

			if (reply_len < 12 || memcmp(reply, data, 2) != 0 || (!tcp && reply_len > udp) ||
			    ldns_wire2pkt(&p, reply, reply_len) != LDNS_STATUS_OK)
				abort(); /* not a DNS answer to this query */
			ldns_pkt_free(p);
			free(reply);
		}
	}
	return 0;
}
