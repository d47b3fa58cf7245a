/* test_ipsec_keys.c — the IPsec agent's key material: the key file parser (good files and every
 * kind of bad one, each refused with a message naming the problem), the per-pair derivation
 * against vectors computed independently (Python's hashlib, both fixed below and, when
 * /usr/bin/python3 is there, for random inputs at test time), and the key history. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "services/ipsec-agent/keyfile.h"
#include "services/ipsec-agent/keyring.h"
#include "services/ipsec-agent/pair_key.h"
#include "shared/base64.h"

#define GOOD "{\"spi\": 3, \"aeadKeyName\": \"rfc4106(gcm(aes))\", \"aeadKey\": \"%s\", \"length\": 128}"

static void file_of(char *buf, size_t len, const uint8_t *key, size_t key_len)
{
	char b64[KM_BASE64_ENCODED_LEN(64)];

	km_base64_encode(key, key_len, b64);
	snprintf(buf, len, GOOD, b64);
}

static void test_parse_good(void **state)
{
	uint8_t raw[36];
	char text[512], err[256];
	struct km_ipsec_key k;

	(void)state;
	for (int i = 0; i < 36; i++)
		raw[i] = (uint8_t)(i * 7);
	file_of(text, sizeof(text), raw, sizeof(raw));
	assert_int_equal(km_ipsec_key_parse(text, strlen(text), &k, err, sizeof(err)), 0);
	assert_int_equal(k.spi, 3);
	assert_string_equal(k.aead_name, "rfc4106(gcm(aes))");
	assert_int_equal(k.key_len, 36);
	assert_memory_equal(k.key, raw, 36);
	assert_int_equal(k.icv_bits, 128);
	/* a 16-byte AES key with its salt, 96-bit ICV; unknown fields are ignored as Kmesh does */
	file_of(text, sizeof(text), raw, 20);
	memcpy(strstr(text, "128"), "96 ", 3);
	strcpy(text + strlen(text) - 1, ", \"note\": \"x\"}");
	assert_int_equal(km_ipsec_key_parse(text, strlen(text), &k, err, sizeof(err)), 0);
	assert_int_equal(k.key_len, 20);
	assert_int_equal(k.icv_bits, 96);
}

static void test_parse_bad(void **state)
{
	static const struct {
		const char *text;
		const char *says;
	} cases[] = {
		{ "", "not JSON" },
		{ "{\"spi\": 1,", "not JSON" },
		{ "[1, 2]", "not a JSON object" },
		{ "{\"spi\": 0, \"aeadKeyName\": \"rfc4106(gcm(aes))\", \"aeadKey\": \"" "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\", \"length\": 128}", "\"spi\" must be an integer from 1" },
		{ "{\"spi\": -1, \"aeadKeyName\": \"rfc4106(gcm(aes))\", \"aeadKey\": \"AAAA\", \"length\": 128}", "\"spi\"" },
		{ "{\"spi\": 4294967296, \"aeadKeyName\": \"rfc4106(gcm(aes))\", \"aeadKey\": \"AAAA\", \"length\": 128}", "\"spi\"" },
		{ "{\"spi\": \"1\", \"aeadKeyName\": \"rfc4106(gcm(aes))\", \"aeadKey\": \"AAAA\", \"length\": 128}", "\"spi\"" },
		{ "{\"spi\": 1, \"aeadKey\": \"AAAA\", \"length\": 128}", "\"aeadKeyName\" must name" },
		{ "{\"spi\": 1, \"aeadKeyName\": \"rfcX\", \"aeadKey\": \"AAAA\", \"length\": 128}", "(not \"rfcX\")" },
		{ "{\"spi\": 1, \"aeadKeyName\": \"cbc(aes)\", \"aeadKey\": \"AAAA\", \"length\": 128}", "(not \"cbc(aes)\")" },
		/* GMAC: an AEAD Linux offers, but it only authenticates; pod traffic would go in clear */
		{ "{\"spi\": 1, \"aeadKeyName\": \"rfc4543(gcm(aes))\", \"aeadKey\": \"AAAA\", \"length\": 128}", "that encrypts" },
		{ "{\"spi\": 1, \"aeadKeyName\": \"rfc4106(gcm(aes))\", \"aeadKey\": \"!!!!\", \"length\": 128}", "must be base64 of 20, 28, 36 bytes" },
		{ "{\"spi\": 1, \"aeadKeyName\": \"rfc4106(gcm(aes))\", \"aeadKey\": 7, \"length\": 128}", "\"aeadKey\"" },
		/* 35 bytes: a key without its full salt */
		{ "{\"spi\": 1, \"aeadKeyName\": \"rfc4106(gcm(aes))\", \"aeadKey\": \"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\", \"length\": 128}", "36 bytes" },
		{ "{\"spi\": 1, \"aeadKeyName\": \"rfc7539esp(chacha20,poly1305)\", \"aeadKey\": \"AAAAAAAAAAAAAAAAAAAAAAAAAAAA\", \"length\": 128}", "base64 of 36 bytes" },
		{ "{\"spi\": 1, \"aeadKeyName\": \"rfc4106(gcm(aes))\", \"aeadKey\": \"AAAAAAAAAAAAAAAAAAAAAAAAAAA=\", \"length\": 100}", "\"length\" (ICV bits) must be 64, 96, 128" },
		{ "{\"spi\": 1, \"aeadKeyName\": \"rfc4106(gcm(aes))\", \"aeadKey\": \"AAAAAAAAAAAAAAAAAAAAAAAAAAA=\"}", "\"length\"" },
		{ "{\"spi\": 1, \"spi\": 2, \"aeadKeyName\": \"rfc4106(gcm(aes))\", \"aeadKey\": \"AAAA\", \"length\": 128}", "not JSON" },
	};
	char err[256];
	struct km_ipsec_key k;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&k, 0x5a, sizeof(k));
		if (km_ipsec_key_parse(cases[i].text, strlen(cases[i].text), &k, err, sizeof(err)) != -1)
			fail_msg("case %zu accepted: %s", i, cases[i].text);
		if (!strstr(err, cases[i].says))
			fail_msg("case %zu: '%s' does not say '%s'", i, err, cases[i].says);
		for (size_t b = 0; b < sizeof(k); b++) /* nothing of a refused file is kept */
			if (((uint8_t *)&k)[b])
				fail_msg("case %zu: the key is not wiped", i);
	}
}

static void test_load(void **state)
{
	char path[] = "/tmp/km-keyfile-XXXXXX", err[512], big[KM_IPSEC_KEYFILE_MAX + 16];
	uint8_t raw[28] = { 1, 2, 3 };
	struct km_ipsec_key k;
	int fd;

	(void)state;
	assert_int_equal(km_ipsec_key_load("/nonexistent/ipSec", &k, err, sizeof(err)), -ENOENT);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	file_of(big, sizeof(big), raw, sizeof(raw));
	assert_int_equal(write(fd, big, strlen(big)), (ssize_t)strlen(big));
	assert_int_equal(km_ipsec_key_load(path, &k, err, sizeof(err)), 0);
	assert_int_equal(k.key_len, 28);
	/* readable by others: refused, saying how to fix it */
	assert_int_equal(fchmod(fd, 0644), 0);
	assert_int_equal(km_ipsec_key_load(path, &k, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "mode 0644"));
	assert_int_equal(k.key_len, 0);
	assert_int_equal(fchmod(fd, 0400), 0);
	assert_int_equal(km_ipsec_key_load(path, &k, err, sizeof(err)), 0);
	assert_int_equal(fchmod(fd, 0600), 0);
	/* too large: refused before parsing, naming the file */
	memset(big, ' ', sizeof(big));
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(pwrite(fd, big, sizeof(big), 0), (ssize_t)sizeof(big));
	close(fd);
	assert_int_equal(km_ipsec_key_load(path, &k, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "larger than"));
	unlink(path);
}

static void hex(const char *text, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		assert_int_equal(sscanf(text + 2 * i, "%2hhx", &out[i]), 1);
}

static struct km_ipsec_key key_of(const uint8_t *raw, size_t n, uint32_t spi)
{
	struct km_ipsec_key k = { .spi = spi, .key_len = n, .icv_bits = 128 };

	memcpy(k.key, raw, n);
	strcpy(k.aead_name, "rfc4106(gcm(aes))");
	return k;
}

/* Fixed vectors, from Python:
 *   hashlib.sha512(key + src.encode() + dst.encode() + sb[:36].encode() + db[:36].encode())
 *          .digest()[:len(key)] */
static void test_pair_key_vectors(void **state)
{
	static const char b1[] = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
	static const char b2[] = "11111111-2222-3333-4444-555555555555\n"; /* as read from /proc */
	uint8_t k1[36], k2[20], want[36], got[36];
	struct km_ipsec_key base;
	char err[128];

	(void)state;
	for (int i = 0; i < 36; i++)
		k1[i] = (uint8_t)i;
	for (int i = 0; i < 20; i++)
		k2[i] = (uint8_t)(0xa0 + i);
	base = key_of(k1, 36, 1);
	assert_int_equal(km_ipsec_pair_key(&base, "10.0.0.1", "10.0.0.2", b1, b2, got, err, sizeof(err)), 0);
	hex("4b4099abb3fc4db4103b4a90961ef4fc80d8ded8da0f44182ddfa1f8a85f795797c6e196", want, 36);
	assert_memory_equal(got, want, 36);
	/* the other direction is another key */
	assert_int_equal(km_ipsec_pair_key(&base, "10.0.0.2", "10.0.0.1", b2, b1, got, err, sizeof(err)), 0);
	hex("183032934f4aa76154fb8e097351f7c4cc88181ec3a402e926c5efee7577c7cab3d9f7a0", want, 36);
	assert_memory_equal(got, want, 36);
	base = key_of(k2, 20, 1);
	memset(got, 0xee, sizeof(got));
	assert_int_equal(km_ipsec_pair_key(&base, "fd00::1", "fd00::2", b1, b2, got, err, sizeof(err)), 0);
	hex("c22020914bce9a95a8d8160153c219e79204980d", want, 20);
	assert_memory_equal(got, want, 20);
	assert_int_equal(got[20], 0xee); /* exactly the base key's length */
	/* a short boot id is refused (Kmesh panics on it) */
	assert_int_equal(km_ipsec_pair_key(&base, "a", "b", "short", b2, got, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "shorter than 36"));
}

/* Random inputs against Python's hashlib, run at test time. */
static void test_pair_key_random(void **state)
{
	uint64_t rng = 0x243f6a8885a308d3ull ^ (uint64_t)getpid();
	char cmd[1024], line[256], hexkey[80], bsrc[48], bdst[48], src[48], dst[48], err[128];
	struct km_ipsec_key base;
	uint8_t raw[36], got[36], want[36];

	(void)state;
	if (access("/usr/bin/python3", X_OK) != 0)
		skip();
	for (int c = 0; c < 20; c++) {
		size_t n = c % 3 == 0 ? 20 : c % 3 == 1 ? 28 : 36;
		FILE *p;

		for (size_t i = 0; i < n; i++) {
			rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
			raw[i] = (uint8_t)rng;
			sprintf(hexkey + 2 * i, "%02x", raw[i]);
		}
		snprintf(src, sizeof(src), "10.%u.%u.%u", (unsigned)(rng >> 8 & 255), c, (unsigned)(rng & 255));
		snprintf(dst, sizeof(dst), "fd00::%x", (unsigned)(rng >> 16 & 0xffff));
		snprintf(bsrc, sizeof(bsrc), "%08x-0000-1111-2222-%012llx", c, (unsigned long long)(rng >> 20));
		snprintf(bdst, sizeof(bdst), "%08llx-aaaa-bbbb-cccc-dddddddddddd-extra", (unsigned long long)(rng >> 32));
		snprintf(cmd, sizeof(cmd),
			 "/usr/bin/python3 -c 'import hashlib,sys; a=sys.argv; "
			 "print(hashlib.sha512(bytes.fromhex(a[1])+a[2].encode()+a[3].encode()+"
			 "a[4][:36].encode()+a[5][:36].encode()).digest()[:len(bytes.fromhex(a[1]))].hex())' "
			 "%s %s %s %s %s", hexkey, src, dst, bsrc, bdst);
		p = popen(cmd, "r");
		assert_non_null(p);
		assert_non_null(fgets(line, sizeof(line), p));
		assert_int_equal(pclose(p), 0);
		hex(line, want, n);
		base = key_of(raw, n, 1);
		assert_int_equal(km_ipsec_pair_key(&base, src, dst, bsrc, bdst, got, err, sizeof(err)), 0);
		assert_memory_equal(got, want, n);
	}
}

static void test_keyring(void **state)
{
	struct km_ipsec_keyring r;
	struct km_ipsec_key k;
	uint8_t raw[36] = { 9 };
	uint32_t dropped;
	char err[256];

	(void)state;
	km_ipsec_keyring_init(&r);
	assert_null(km_ipsec_keyring_current(&r));
	k = key_of(raw, 36, 1);
	assert_int_equal(km_ipsec_keyring_add(&r, &k, &dropped, err, sizeof(err)), KM_KEYRING_CURRENT);
	assert_int_equal(km_ipsec_keyring_add(&r, &k, &dropped, err, sizeof(err)), KM_KEYRING_UNCHANGED);
	raw[0] = 10;
	k = key_of(raw, 36, 1); /* the same SPI with another key: refused, the old one stays */
	assert_int_equal(km_ipsec_keyring_add(&r, &k, &dropped, err, sizeof(err)), KM_KEYRING_REFUSED);
	assert_non_null(strstr(err, "SPI 1 already names another key"));
	assert_int_equal(km_ipsec_keyring_current(&r)->key[0], 9);
	k = key_of(raw, 36, 2);
	assert_int_equal(km_ipsec_keyring_add(&r, &k, &dropped, err, sizeof(err)), KM_KEYRING_CURRENT);
	assert_int_equal(r.current, 2);
	assert_non_null(km_ipsec_keyring_get(&r, 1)); /* kept for peers still on SPI 1 */
	assert_int_equal(km_ipsec_keyring_forget(&r, 2), 0); /* never the current one */
	assert_int_equal(km_ipsec_keyring_forget(&r, 1), 1);
	assert_null(km_ipsec_keyring_get(&r, 1));
	/* full: the oldest non-current key goes, and is named */
	for (uint32_t spi = 3; spi < 3 + KM_IPSEC_HISTORY_MAX - 1; spi++) {
		k = key_of(raw, 36, spi);
		assert_int_equal(km_ipsec_keyring_add(&r, &k, &dropped, err, sizeof(err)), KM_KEYRING_CURRENT);
		assert_int_equal(dropped, 0);
	}
	assert_int_equal(r.n, KM_IPSEC_HISTORY_MAX);
	k = key_of(raw, 36, 100);
	assert_int_equal(km_ipsec_keyring_add(&r, &k, &dropped, err, sizeof(err)), KM_KEYRING_CURRENT);
	assert_int_equal(dropped, 2);
	assert_int_equal(r.n, KM_IPSEC_HISTORY_MAX);
	/* back to an older SPI (a rolled-back Secret): current again, nothing dropped */
	k = key_of(raw, 36, 3);
	assert_int_equal(km_ipsec_keyring_add(&r, &k, &dropped, err, sizeof(err)), KM_KEYRING_CURRENT);
	assert_int_equal(dropped, 0);
	assert_int_equal(r.current, 3);
	km_ipsec_keyring_wipe(&r);
	assert_int_equal(r.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_pair_key_vectors),
		cmocka_unit_test(test_pair_key_random),
		cmocka_unit_test(test_keyring),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
