/* metrics.h — the IPsec agent's metrics, for the node's metrics endpoint (the xDS agent serves
 * every *.prom file of the metrics directory): written as <dir>/ipsec-agent.prom (mode 0644) at
 * each tick when they changed, and every KM_PROM_FILE_REFRESH s in any case (prom_file.h);
 * removed at exit. Keys held and the current SPI, peers, ingress and egress states,
 * XFRM requests and refusals, key files refused, peers waiting for a try again and the tries,
 * leftovers removed, errors. */
#ifndef KM_IPSEC_METRICS_H
#define KM_IPSEC_METRICS_H

#include <stddef.h>

#include "services/ipsec-agent/agent.h"
#include "shared/prom_file.h"

struct km_ipsec_metrics {
	struct km_prom_file file;
};

void km_ipsec_metrics_init(struct km_ipsec_metrics *m, const char *dir);
/* Write the file if the metrics changed since the last write. */
void km_ipsec_metrics_write(struct km_ipsec_metrics *m, const struct km_ipsec_agent *a);
void km_ipsec_metrics_free(struct km_ipsec_metrics *m);

#endif
