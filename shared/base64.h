/* base64.h — decoding of standard and URL-safe base64, padded or not (proto JSON bytes fields),
 * and standard padded encoding (kubeconfig certificate data). */
#ifndef KM_SHARED_BASE64_H
#define KM_SHARED_BASE64_H

#include <stddef.h>
#include <stdint.h>

/* Decode text[0..len) into out (capacity cap). Returns the decoded length or -1 if the text is
 * not base64 or does not fit. */
long km_base64_decode(const char *text, size_t len, uint8_t *out, size_t cap);

/* Encode data[0..len) as standard padded base64 into out, which must hold
 * KM_BASE64_ENCODED_LEN(len) bytes (the terminating NUL included). Returns the text length. */
#define KM_BASE64_ENCODED_LEN(len) ((((len) + 2) / 3) * 4 + 1)
size_t km_base64_encode(const uint8_t *data, size_t len, char *out);

#endif
