/* pair_key.c — see pair_key.h. SHA-512 by wolfCrypt. */
#include "services/ipsec-agent/pair_key.h"

#include <string.h>

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/sha512.h>

#include "shared/errbuf.h"

int km_ipsec_pair_key(const struct km_ipsec_key *base, const char *src_ip, const char *dst_ip,
		      const char *src_boot_id, const char *dst_boot_id, uint8_t *out, char *err,
		      size_t errlen)
{
	uint8_t digest[WC_SHA512_DIGEST_SIZE];
	wc_Sha512 sha;
	int rc;

	if (strlen(src_boot_id) < KM_IPSEC_BOOT_ID_LEN || strlen(dst_boot_id) < KM_IPSEC_BOOT_ID_LEN)
		return km_errf(err, errlen, "boot id '%.40s' is shorter than %d characters",
			       strlen(src_boot_id) < KM_IPSEC_BOOT_ID_LEN ? src_boot_id : dst_boot_id,
			       KM_IPSEC_BOOT_ID_LEN), -1;
	if (base->key_len == 0 || base->key_len > sizeof(digest))
		return km_errf(err, errlen, "a %zu-byte base key cannot be derived from", base->key_len), -1;
	rc = wc_InitSha512(&sha);
	if (!rc)
		rc = wc_Sha512Update(&sha, base->key, (word32)base->key_len);
	if (!rc)
		rc = wc_Sha512Update(&sha, (const byte *)src_ip, (word32)strlen(src_ip));
	if (!rc)
		rc = wc_Sha512Update(&sha, (const byte *)dst_ip, (word32)strlen(dst_ip));
	if (!rc)
		rc = wc_Sha512Update(&sha, (const byte *)src_boot_id, KM_IPSEC_BOOT_ID_LEN);
	if (!rc)
		rc = wc_Sha512Update(&sha, (const byte *)dst_boot_id, KM_IPSEC_BOOT_ID_LEN);
	if (!rc)
		rc = wc_Sha512Final(&sha, digest);
	wc_Sha512Free(&sha);
	if (rc) {
		explicit_bzero(digest, sizeof(digest));
		return km_errf(err, errlen, "SHA-512 failed (wolfCrypt error %d)", rc), -1;
	}
	memcpy(out, digest, base->key_len);
	explicit_bzero(digest, sizeof(digest));
	return 0;
}
