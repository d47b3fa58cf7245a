/* metrics.h — the IPsec agent's metrics, for the node's metrics endpoint (the xDS agent serves
 * every *.prom file of the metrics directory): written as <dir>/ipsec-agent.prom (mode 0644) at
 * each tick when they changed, and every KM_IPSEC_METRICS_REFRESH_S in any case; removed at exit. Keys held and the current SPI, peers, ingress and egress states,
 * XFRM requests and refusals, key files refused, peers waiting for a try again and the tries,
 * leftovers removed, errors. */
#ifndef KM_IPSEC_METRICS_H
#define KM_IPSEC_METRICS_H

#include <stddef.h>

#include "services/ipsec-agent/agent.h"

#define KM_IPSEC_METRICS_REFRESH_S 15 /* unchanged metrics are written again this often */

struct km_ipsec_metrics {
	char path[4096]; /* "" : none */
	char *last;      /* the text last written */
	unsigned unchanged; /* writes skipped since (one per second) */
	uint64_t failures;
};

void km_ipsec_metrics_init(struct km_ipsec_metrics *m, const char *dir);
/* Write the file if the metrics changed since the last write. */
void km_ipsec_metrics_write(struct km_ipsec_metrics *m, const struct km_ipsec_agent *a);
void km_ipsec_metrics_free(struct km_ipsec_metrics *m);

#endif
