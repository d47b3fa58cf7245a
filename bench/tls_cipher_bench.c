/* tls_cipher_bench.c — decryption throughput of TLS 1.3's AEAD ciphers in 16 KiB records, with
 * the wolfSSL and the OpenSSL this machine has, beside memcpy of the same bytes in the same run:
 * why the xDS agent lists ChaCha20-Poly1305 first to istiod (Debian's wolfSSL is built without
 * AES-NI), and why the tunnel's HBONE server, where ztunnel offers only AES-GCM, is OpenSSL's.
 * Prints a markdown section. Usage: tls_cipher_bench [MIB] (default 256 MiB per cipher). */
#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/aes.h>
#include <wolfssl/wolfcrypt/chacha20_poly1305.h>

#include <openssl/evp.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RECORD 16384 /* the largest TLS record */

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

struct ctx {
	Aes aes;
	byte key[32], iv[12], aad[13], tag[16];
	byte *sealed, *plain;
};

static int dec_aes(struct ctx *c)
{
	return wc_AesGcmDecrypt(&c->aes, c->plain, c->sealed, RECORD, c->iv, sizeof(c->iv), c->tag,
				sizeof(c->tag), c->aad, sizeof(c->aad));
}

static int dec_chacha(struct ctx *c)
{
	return wc_ChaCha20Poly1305_Decrypt(c->key, c->iv, c->aad, sizeof(c->aad), c->sealed, RECORD,
					   c->tag, c->plain);
}

/* OpenSSL's EVP AEAD decryption of one record (the cipher set up in evp). */
static EVP_CIPHER_CTX *evp;

static int dec_evp(struct ctx *c)
{
	int n = 0, m = 0;

	if (EVP_DecryptInit_ex(evp, NULL, NULL, NULL, c->iv) != 1 ||
	    EVP_DecryptUpdate(evp, NULL, &n, c->aad, sizeof(c->aad)) != 1 ||
	    EVP_DecryptUpdate(evp, c->plain, &n, c->sealed, RECORD) != 1 ||
	    EVP_CIPHER_CTX_ctrl(evp, EVP_CTRL_AEAD_SET_TAG, sizeof(c->tag), c->tag) != 1 ||
	    EVP_DecryptFinal_ex(evp, c->plain + n, &m) != 1)
		return -1;
	return 0;
}

static int copy(struct ctx *c)
{
	memcpy(c->plain, c->sealed, RECORD);
	__asm__ volatile("" : : "r"(c->plain) : "memory");
	return 0;
}

static double rate(struct ctx *c, int (*fn)(struct ctx *), size_t n);

/* OpenSSL's rate for cipher (the record sealed by OpenSSL first); -1 on a failure. */
static double evp_rate(struct ctx *c, const EVP_CIPHER *cipher, size_t n)
{
	int len = 0;
	double r = -1;
	EVP_CIPHER_CTX *enc = EVP_CIPHER_CTX_new();

	evp = EVP_CIPHER_CTX_new();
	if (enc && evp && EVP_EncryptInit_ex(enc, cipher, NULL, c->key, c->iv) == 1 &&
	    EVP_EncryptUpdate(enc, NULL, &len, c->aad, sizeof(c->aad)) == 1 &&
	    EVP_EncryptUpdate(enc, c->sealed, &len, c->plain, RECORD) == 1 &&
	    EVP_EncryptFinal_ex(enc, c->sealed + len, &len) == 1 &&
	    EVP_CIPHER_CTX_ctrl(enc, EVP_CTRL_AEAD_GET_TAG, sizeof(c->tag), c->tag) == 1 &&
	    EVP_DecryptInit_ex(evp, cipher, NULL, c->key, NULL) == 1)
		r = rate(c, dec_evp, n);
	EVP_CIPHER_CTX_free(enc);
	EVP_CIPHER_CTX_free(evp);
	return r;
}

/* MB/s over n records; -1 if a record did not authenticate */
static double rate(struct ctx *c, int (*fn)(struct ctx *), size_t n)
{
	double t = now_s();

	for (size_t i = 0; i < n; i++)
		if (fn(c) != 0)
			return -1;
	return (double)n * RECORD / (now_s() - t) / 1e6;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
	size_t n = mib * 1024 * 1024 / RECORD;
	struct ctx c = { .key = { 1 }, .iv = { 2 } };
	double base, aes128, aes256, chacha, o128, o256, ochacha;

	if (argc > 1 && (!mib || mib > 65536)) {
		fprintf(stderr, "usage: %s [MIB between 1 and 65536]\n", argv[0]);
		return 2;
	}
	c.sealed = calloc(1, RECORD);
	c.plain = calloc(1, RECORD);
	if (!c.sealed || !c.plain || wc_AesInit(&c.aes, NULL, INVALID_DEVID) != 0)
		return 1;
	base = rate(&c, copy, n);
	wc_AesGcmSetKey(&c.aes, c.key, 16);
	wc_AesGcmEncrypt(&c.aes, c.sealed, c.plain, RECORD, c.iv, sizeof(c.iv), c.tag, sizeof(c.tag),
			 c.aad, sizeof(c.aad));
	aes128 = rate(&c, dec_aes, n);
	wc_AesGcmSetKey(&c.aes, c.key, 32);
	wc_AesGcmEncrypt(&c.aes, c.sealed, c.plain, RECORD, c.iv, sizeof(c.iv), c.tag, sizeof(c.tag),
			 c.aad, sizeof(c.aad));
	aes256 = rate(&c, dec_aes, n);
	wc_ChaCha20Poly1305_Encrypt(c.key, c.iv, c.aad, sizeof(c.aad), c.plain, RECORD, c.sealed,
				    c.tag);
	chacha = rate(&c, dec_chacha, n);
	o128 = evp_rate(&c, EVP_aes_128_gcm(), n);
	o256 = evp_rate(&c, EVP_aes_256_gcm(), n);
	ochacha = evp_rate(&c, EVP_chacha20_poly1305(), n);
	if (aes128 < 0 || aes256 < 0 || chacha < 0 || o128 < 0 || o256 < 0 || ochacha < 0) {
		fprintf(stderr, "a record did not authenticate\n");
		return 1;
	}
	printf("## TLS decryption: wolfSSL and OpenSSL (%zu MiB each, 16 KiB records)\n\n", mib);
	printf("The libraries this machine has: Debian's wolfSSL is built without AES-NI, its OpenSSL "
	       "uses it. memcpy of the same bytes in the same run as the floor. A 100k-workload push "
	       "is ~20 MB, 1M ~207 MB (the xDS agent, wolfSSL, offers istiod ChaCha20-Poly1305 "
	       "first); HBONE carries every byte of the mesh, and ztunnel offers only AES-GCM (the "
	       "tunnel's HBONE server is OpenSSL's).\n\n");
	printf("| cipher | wolfSSL MB/s | OpenSSL MB/s | OpenSSL / wolfSSL | wolfSSL's time over "
	       "memcpy's |\n|---|---|---|---|---|\n");
	printf("| ChaCha20-Poly1305 | %.0f | %.0f | %.1fx | %.1fx |\n", chacha, ochacha,
	       ochacha / chacha, base / chacha);
	printf("| AES-128-GCM | %.0f | %.0f | %.1fx | %.1fx |\n", aes128, o128, o128 / aes128,
	       base / aes128);
	printf("| AES-256-GCM | %.0f | %.0f | %.1fx | %.1fx |\n", aes256, o256, o256 / aes256,
	       base / aes256);
	printf("| memcpy | %.0f | | | 1.0x |\n\n", base);
	return 0;
}
