/* fuzz_baggage.c — libFuzzer target for the `baggage` header an HBONE client sends (the tunnel
 * passes it to the xDS agent, whose metrics' labels it may name): arbitrary bytes parsed; what is
 * taken must be within the bounds the parser promises (names' characters, lengths), and writing
 * it back as a workload's baggage and reading that again must give the same fields. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/telemetry/baggage.h"

static void check_value(const char *v)
{
	size_t n = strlen(v);

	if (n > KM_BAGGAGE_VALUE_MAX)
		abort();
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._", v[i]))
			abort();
}

static char *or_null(char *s)
{
	return *s ? s : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct km_baggage b, again;
	struct km_wl_who who;
	char out[2048];
	int n = km_baggage_parse((const char *)data, size, &b), m;

	if (n < 0) {
		if (size <= KM_BAGGAGE_MAX)
			abort();
		return 0;
	}
	if (n > 5)
		abort();
	check_value(b.cluster);
	check_value(b.namespace);
	check_value(b.workload);
	check_value(b.service);
	check_value(b.version);
	memset(&who, 0, sizeof(who));
	who.cluster_id = or_null(b.cluster);
	who.namespace = or_null(b.namespace);
	who.workload_name = or_null(b.workload);
	who.canonical_name = or_null(b.service);
	who.canonical_revision = or_null(b.version);
	if (km_baggage_format(&who, NULL, out, sizeof(out)) < 0)
		abort(); /* five names of at most 253 characters fit */
	m = km_baggage_parse(out, strlen(out), &again);
	if (m != n || memcmp(&b, &again, sizeof(b)))
		abort();
	return 0;
}
