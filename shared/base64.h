/* base64.h — decoding of standard and URL-safe base64, padded or not (proto JSON bytes fields). */
#ifndef KM_SHARED_BASE64_H
#define KM_SHARED_BASE64_H

#include <stddef.h>
#include <stdint.h>

/* Decode text[0..len) into out (capacity cap). Returns the decoded length or -1 if the text is
 * not base64 or does not fit. */
long km_base64_decode(const char *text, size_t len, uint8_t *out, size_t cap);

#endif
