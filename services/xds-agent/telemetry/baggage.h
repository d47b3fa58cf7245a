/* baggage.h — the W3C `baggage` header as ztunnel writes and reads it on HBONE
 * (../reference/hbone.md §4): a workload described by the keys k8s.cluster.name,
 * k8s.namespace.name, k8s.<kind>.name (kind: deployment, cronjob, pod or job), service.name,
 * service.version, cloud.region and cloud.availability_zone.
 *
 * The header comes from a peer on the network (through the tunnel), so reading it is bounded and
 * strict: at most KM_BAGGAGE_MAX bytes, values of at most KM_BAGGAGE_VALUE_MAX characters from
 * DNS names' alphabet (letters, digits, '-', '.', '_'); a member's properties (";...") are
 * ignored, as are keys not known and values that break the rules. */
#ifndef KM_XDS_BAGGAGE_H
#define KM_XDS_BAGGAGE_H

#include <stddef.h>

#include "services/xds-agent/core/profile_pool.h"

#define KM_BAGGAGE_MAX 1024
#define KM_BAGGAGE_VALUE_MAX 253

struct km_baggage {
	char cluster[KM_BAGGAGE_VALUE_MAX + 1];
	char namespace[KM_BAGGAGE_VALUE_MAX + 1];
	char workload[KM_BAGGAGE_VALUE_MAX + 1]; /* k8s.<kind>.name */
	char service[KM_BAGGAGE_VALUE_MAX + 1];  /* service.name: the canonical service */
	char version[KM_BAGGAGE_VALUE_MAX + 1];  /* service.version: its revision */
};

/* The keys known in text[0..len) into out (the others ""). Returns how many were taken, or -1
 * when the header is longer than KM_BAGGAGE_MAX (nothing taken). */
int km_baggage_parse(const char *text, size_t len, struct km_baggage *out);

/* The workload (who, and where's region and zone: where may be NULL) as a header value, only the
 * keys whose values are set. Returns the length, or -1 when it does not fit in len. */
int km_baggage_format(const struct km_wl_who *who, const struct km_wl_where *where, char *out,
		      size_t len);

#endif
