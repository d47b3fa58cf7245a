/* demand.h — what an on-demand node has asked istiod for (--xds-on-demand): the Address keys
 * demanded ("<network>/<ip>" for an address, "<namespace>/<hostname>" for a service), each
 * once, in the order asked, up to a bound. The ADS client sends the ones not yet sent on the
 * current stream as spontaneous subscriptions, and all of them again on every new stream (a
 * subscription lives as long as the stream that made it). Nothing is unsubscribed: what a node
 * has used it keeps, as ztunnel's on-demand mode does.
 *
 * Where demands come from: kmeshctl demand (the admin socket) and the DNS proxy (a query for a
 * service name the node does not hold). They are kept in a file (--xds-on-demand-file), so a
 * restarted agent asks for them again before any pod has to. */
#ifndef KM_XDS_DEMAND_H
#define KM_XDS_DEMAND_H

#include <stddef.h>
#include <stdint.h>

#include "services/xds-agent/core/name_map.h"

/* The longest key: a namespace (63) + '/' + a hostname (253), or a network + '/' + an IPv6. */
#define KM_DEMAND_KEY_MAX 320
/* Keys held by default (--xds-on-demand-max): each costs ~100 bytes here and a subscription in
 * istiod. */
#define KM_DEMAND_MAX_DEFAULT 65536u
/* Keys per subscription request: 4096 of the longest are 1.3 MiB, under the 4 MiB that istiod
 * accepts in one request. */
#define KM_DEMAND_PER_REQUEST 4096u

struct km_demand {
	struct km_name_map index; /* key -> its copy in keys[] */
	char **keys;              /* in the order demanded */
	size_t n, cap;
	size_t sent; /* keys[0..sent) were sent on the current stream */
	size_t max;
	uint64_t refused_full;    /* demands past max */
	uint64_t refused_invalid; /* demands that are no key istiod knows how to look up */
};

void km_demand_init(struct km_demand *d, size_t max);
void km_demand_free(struct km_demand *d);

/* The answers of km_demand_add. */
enum km_demand_rc {
	KM_DEMAND_NEW = 0,     /* held, to be sent */
	KM_DEMAND_KNOWN = 1,   /* already demanded: nothing to do */
	KM_DEMAND_FULL = -1,   /* max keys held already (counted) */
	KM_DEMAND_INVALID = -2 /* not "<network>/<ip>" nor "<namespace>/<hostname>" (counted) */
};
enum km_demand_rc km_demand_add(struct km_demand *d, const char *key);
/* Is key well formed? "<network>/<ip>": any network name without '/' (empty = the default
 * network) and an IPv4 or IPv6 address in text; "<namespace>/<hostname>": a DNS label and a DNS
 * name. At most KM_DEMAND_KEY_MAX bytes. */
int km_demand_key_valid(const char *key);

/* The keys, one per line, into path (written beside it and renamed over it, so a reader sees the
 * old file or the new one). Returns 0, or -1 with errno set. */
int km_demand_save(const struct km_demand *d, const char *path);
/* Demand the keys a save wrote (a missing file is no keys). Lines that are no key are skipped and
 * counted in *bad. Returns the keys added, or -1 with errno set (a file over max keys' worth of
 * bytes: EFBIG). */
long km_demand_load(struct km_demand *d, const char *path, size_t *bad);

/* Keys not sent on this stream yet: *first and the count (at most KM_DEMAND_PER_REQUEST).
 * km_demand_mark_sent(d, count) after sending them. */
size_t km_demand_unsent(const struct km_demand *d, char *const **first);
void km_demand_mark_sent(struct km_demand *d, size_t count);
/* A new stream: every key is to be sent again. */
void km_demand_resend_all(struct km_demand *d);

#endif
