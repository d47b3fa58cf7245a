/* xds_version.c — istiod's versions as numbers where they are (see xds_version.h). */
#include "services/xds-agent/core/xds_version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Decimal without leading zeros (but "0"), at most UINT64_MAX: 1 with *out. */
static int parse_dec(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0 || n > 20 || (n > 1 && s[0] == '0'))
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return 0;
		v = v * 10 + d;
	}
	*out = v;
	return 1;
}

/* Lowercase hex, 1 to 16 digits: 1 with *out. */
static int parse_hex(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0 || n > 16)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else
			return 0;
		v = v << 4 | d;
	}
	*out = v;
	return 1;
}

void km_xds_version_clear(union km_xds_version *v, uint8_t *kind, uint8_t *width)
{
	if (*kind == KM_XDS_VERSION_TEXT)
		free(v->text);
	v->num = 0;
	*kind = KM_XDS_VERSION_NONE;
	*width = 0;
}

int km_xds_version_set(union km_xds_version *v, uint8_t *kind, uint8_t *width, const char *text)
{
	size_t n = strlen(text);
	union km_xds_version nv = { 0 };
	uint8_t nk, nw = 0;

	if (n == 0) {
		nk = KM_XDS_VERSION_EMPTY;
	} else if (parse_dec(text, n, &nv.num)) {
		nk = KM_XDS_VERSION_DEC;
	} else if (parse_hex(text, n, &nv.num)) {
		nk = KM_XDS_VERSION_HEX;
		nw = (uint8_t)n;
	} else {
		if (!(nv.text = strdup(text)))
			return -1;
		nk = KM_XDS_VERSION_TEXT;
	}
	km_xds_version_clear(v, kind, width);
	*v = nv;
	*kind = nk;
	*width = nw;
	return 0;
}

const char *km_xds_version_text(const union km_xds_version *v, uint8_t kind, uint8_t width,
				char buf[KM_XDS_VERSION_BUF])
{
	switch (kind) {
	case KM_XDS_VERSION_EMPTY:
		return "";
	case KM_XDS_VERSION_DEC:
		snprintf(buf, KM_XDS_VERSION_BUF, "%llu", (unsigned long long)v->num);
		return buf;
	case KM_XDS_VERSION_HEX:
		snprintf(buf, KM_XDS_VERSION_BUF, "%0*llx", (int)width, (unsigned long long)v->num);
		return buf;
	case KM_XDS_VERSION_TEXT:
		return v->text;
	default:
		return NULL;
	}
}
