/* fuzz_keyfile.c — libFuzzer target for the IPsec key file (what a Secret, or anyone able to
 * write the mounted file, puts there): arbitrary bytes parsed; an accepted key must satisfy
 * what the parser promises (a nonzero SPI, a known AEAD, a key length within bounds). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "services/ipsec-agent/keyfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct km_ipsec_key k;
	char err[256];

	if (km_ipsec_key_parse((const char *)data, size, &k, err, sizeof(err)) != 0) {
		if (!err[0])
			abort(); /* a refusal always says why */
		return 0;
	}
	if (k.spi == 0 || k.key_len < 19 || k.key_len > 36 || strncmp(k.aead_name, "rfc", 3) ||
	    (k.icv_bits != 64 && k.icv_bits != 96 && k.icv_bits != 128))
		abort();
	km_ipsec_key_wipe(&k);
	return 0;
}
