/* dns_names.h — the DNS proxy's name table: every service hostname the model holds (Kubernetes
 * services, ServiceEntry hosts, headless services), lowercased, to the services that carry it.
 * It follows the model as services come and go (km_model_watch_services), one entry per name,
 * never rebuilt; the addresses are read from the model when a query is answered. */
#ifndef KM_XDS_DNS_NAMES_H
#define KM_XDS_DNS_NAMES_H

#include <stddef.h>

#include "services/xds-agent/core/resources.h"

struct dns_name;

struct km_dns_names {
	struct dns_name *by_host;
	size_t n;  /* names */
	int oom;   /* a name could not be added (counted in the metrics) */
};

/* A service resource comes (add 1) or goes (add 0): the model's observer. */
void km_dns_names_service(void *names, const struct km_service_res *r, int add);
/* The service (resource name) that host (lowercase, no trailing dot) names, or NULL. */
const char *km_dns_names_find(const struct km_dns_names *t, const char *host);
void km_dns_names_free(struct km_dns_names *t);

#endif
