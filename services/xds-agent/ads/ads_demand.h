/* ads_demand.h — the ADS client's on-demand half (ads_demand.c), for ads_client.c: the public
 * calls (km_ads_client_set_on_demand, km_ads_client_demand) are in ads_client.h. */
#ifndef KM_XDS_ADS_DEMAND_H
#define KM_XDS_ADS_DEMAND_H

#include "services/xds-agent/ads/ads_client.h"

/* A stream opened and its first requests went out: send the keys they could not carry. */
void km_ads_demand_opened(struct km_ads_client *c);
/* The client stops: the keys written if a write was pending, the handles closed. */
void km_ads_demand_stop(struct km_ads_client *c);

#endif
