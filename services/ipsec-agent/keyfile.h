/* keyfile.h — the IPsec key file, as Kmesh writes it (Secret kmesh-ipsec, data key ipSec): a
 * JSON object {"spi": N, "aeadKeyName": "rfc4106(gcm(aes))", "aeadKey": "<base64>",
 * "length": ICV bits}. Parsed strictly, so a bad file is refused with a message naming what is
 * wrong instead of failing later in the kernel: the SPI must be 1..2^32-1, the algorithm one the
 * kernel's ESP offers as an AEAD, and the key length and ICV length ones that algorithm takes. */
#ifndef KM_IPSEC_KEYFILE_H
#define KM_IPSEC_KEYFILE_H

#include <stddef.h>
#include <stdint.h>

#define KM_IPSEC_KEY_MAX 64         /* bytes of key material (a SHA-512 digest bounds derivation) */
#define KM_IPSEC_ALG_MAX 64         /* bytes of the algorithm name, NUL included */
#define KM_IPSEC_KEYFILE_MAX 65536  /* bytes of the file */

struct km_ipsec_key {
	uint32_t spi;
	char aead_name[KM_IPSEC_ALG_MAX];
	uint8_t key[KM_IPSEC_KEY_MAX]; /* the base key, as decoded */
	size_t key_len;
	uint32_t icv_bits;
};

/* Parse the file's text. Returns 0, or -1 with err filled (out is then zeroed). */
int km_ipsec_key_parse(const char *text, size_t len, struct km_ipsec_key *out, char *err,
		       size_t errlen);
/* Read path (at most KM_IPSEC_KEYFILE_MAX bytes) and parse it. Returns 0, -ENOENT when there is
 * no file, -EPERM when its mode lets group or others read or write it, or another negative
 * errno (-EINVAL: not a valid key file), with err filled as "PATH: reason". */
int km_ipsec_key_load(const char *path, struct km_ipsec_key *out, char *err, size_t errlen);
/* Same key material and parameters? */
int km_ipsec_key_equal(const struct km_ipsec_key *a, const struct km_ipsec_key *b);
/* Forget the key material. */
void km_ipsec_key_wipe(struct km_ipsec_key *k);

#endif
