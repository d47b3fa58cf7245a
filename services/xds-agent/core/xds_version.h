/* xds_version.h — istiod's per-resource version, kept in 8 bytes and a tag instead of a string:
 * istiod's versions are content hashes written as numbers (an Address's is xxhash64 of its
 * bytes in hex without leading zeros: model.AddressInfo), so a version that is a number in a
 * canonical form (decimal without leading zeros, or lowercase hex of a recorded width) is kept as
 * that number and written back exactly as it came; any other text is kept as a copy. A million
 * workloads hold a million versions: a 24-byte string each was a fifth of the model's entry.
 *
 * The version goes back to istiod only in a reconnect's initial_resource_versions, so it must be
 * the same text, byte for byte: km_xds_version_text gives it back. */
#ifndef KM_XDS_VERSION_H
#define KM_XDS_VERSION_H

#include <stdint.h>

enum km_xds_version_kind {
	KM_XDS_VERSION_NONE = 0, /* no version held */
	KM_XDS_VERSION_EMPTY,    /* held, empty */
	KM_XDS_VERSION_DEC,      /* num, in decimal */
	KM_XDS_VERSION_HEX,      /* num, in lowercase hex of `width` digits (leading zeros kept) */
	KM_XDS_VERSION_TEXT,     /* text, malloc'd */
};

union km_xds_version {
	uint64_t num;
	char *text;
};

/* The longest text a number gives back, with its NUL (20 decimal digits). */
#define KM_XDS_VERSION_BUF 24

/* Keep text in (*v, *kind, *width), releasing what was there. Returns 0, or -1 when out of
 * memory (the old version is kept). */
int km_xds_version_set(union km_xds_version *v, uint8_t *kind, uint8_t *width, const char *text);
void km_xds_version_clear(union km_xds_version *v, uint8_t *kind, uint8_t *width);
/* The text as it came (NULL for NONE): v's own for TEXT, else written into buf. */
const char *km_xds_version_text(const union km_xds_version *v, uint8_t kind, uint8_t width,
				char buf[KM_XDS_VERSION_BUF]);

#endif
