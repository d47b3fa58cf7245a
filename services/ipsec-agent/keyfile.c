/* keyfile.c — see keyfile.h. */
#include "services/ipsec-agent/keyfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "shared/base64.h"
#include "shared/errbuf.h"

/* The AEADs Linux ESP offers (crypto names as XFRM takes them), with the key lengths (cipher key
 * plus salt) and ICV lengths each accepts. */
static const struct aead {
	const char *name;
	uint8_t key_lens[3];
	uint8_t icv_bits[3];
} aeads[] = {
	{ "rfc4106(gcm(aes))", { 20, 28, 36 }, { 64, 96, 128 } },
	{ "rfc4309(ccm(aes))", { 19, 27, 35 }, { 64, 96, 128 } },
	{ "rfc7539esp(chacha20,poly1305)", { 36, 0, 0 }, { 128, 0, 0 } },
};

static int in_list(const uint8_t *list, unsigned v)
{
	for (int i = 0; i < 3; i++)
		if (list[i] && list[i] == v)
			return 1;
	return 0;
}

static void list_text(const uint8_t *list, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < 3 && list[i]; i++)
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s%u", i ? ", " : "",
					list[i]);
}

int km_ipsec_key_parse(const char *text, size_t len, struct km_ipsec_key *out, char *err,
		       size_t errlen)
{
	json_error_t jerr;
	json_t *root, *spi, *name, *key, *icv;
	const struct aead *alg = NULL;
	char allowed[32];
	long n;

	memset(out, 0, sizeof(*out));
	if (len > KM_IPSEC_KEYFILE_MAX)
		return km_errf(err, errlen, "larger than %d bytes", KM_IPSEC_KEYFILE_MAX), -1;
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return km_errf(err, errlen, "not JSON (line %d): %s", jerr.line, jerr.text), -1;
	spi = json_object_get(root, "spi");
	name = json_object_get(root, "aeadKeyName");
	key = json_object_get(root, "aeadKey");
	icv = json_object_get(root, "length");
	for (size_t i = 0; json_is_string(name) && i < sizeof(aeads) / sizeof(aeads[0]); i++)
		if (!strcmp(json_string_value(name), aeads[i].name))
			alg = &aeads[i];
	if (!json_is_object(root)) {
		km_errf(err, errlen, "not a JSON object");
	} else if (!json_is_integer(spi) || json_integer_value(spi) < 1 ||
		   json_integer_value(spi) > 0xffffffffLL) {
		km_errf(err, errlen, "\"spi\" must be an integer from 1 to 4294967295");
	} else if (!alg) {
		km_errf(err, errlen, "\"aeadKeyName\" must name an AEAD that Linux ESP offers and "
			"that encrypts: rfc4106(gcm(aes)), rfc4309(ccm(aes)) or "
			"rfc7539esp(chacha20,poly1305)%s%.40s%s",
			json_is_string(name) ? " (not \"" : "",
			json_is_string(name) ? json_string_value(name) : "",
			json_is_string(name) ? "\")" : "");
	} else if (!json_is_string(key) ||
		   (n = km_base64_decode(json_string_value(key), json_string_length(key), out->key,
					 sizeof(out->key))) < 0 ||
		   !in_list(alg->key_lens, (unsigned)n)) {
		list_text(alg->key_lens, allowed, sizeof(allowed));
		km_errf(err, errlen, "\"aeadKey\" must be base64 of %s bytes for %s (key and salt)",
			allowed, alg->name);
	} else if (!json_is_integer(icv) || json_integer_value(icv) < 0 ||
		   json_integer_value(icv) > 1024 ||
		   !in_list(alg->icv_bits, (unsigned)json_integer_value(icv))) {
		list_text(alg->icv_bits, allowed, sizeof(allowed));
		km_errf(err, errlen, "\"length\" (ICV bits) must be %s for %s", allowed, alg->name);
	} else {
		out->key_len = (size_t)n;
		out->spi = (uint32_t)json_integer_value(spi);
		out->icv_bits = (uint32_t)json_integer_value(icv);
		snprintf(out->aead_name, sizeof(out->aead_name), "%s", alg->name);
		json_decref(root);
		return 0;
	}
	km_ipsec_key_wipe(out);
	json_decref(root);
	return -1;
}

int km_ipsec_key_load(const char *path, struct km_ipsec_key *out, char *err, size_t errlen)
{
	char *buf = malloc(KM_IPSEC_KEYFILE_MAX + 1);
	size_t len = 0;
	struct stat st;
	ssize_t n;
	int fd, e;

	memset(out, 0, sizeof(*out));
	if (!buf)
		return km_errf(err, errlen, "out of memory"), -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		free(buf);
		km_errf(err, errlen, "%s: cannot open it: %s", path, strerror(e));
		return -e;
	}
	/* the key encrypts every node's traffic: a file other users may read or write is refused,
	 * not used (a Secret volume: defaultMode 0400; by hand: chmod 0600) */
	if (fstat(fd, &st) == 0 && (st.st_mode & 0066)) {
		close(fd);
		free(buf);
		km_errf(err, errlen, "%s: mode %04o lets other users read or write the key: chmod "
			"0600 it (a Kubernetes Secret volume: defaultMode 0400)", path,
			(unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	while ((n = read(fd, buf + len, KM_IPSEC_KEYFILE_MAX + 1 - len)) > 0)
		if ((len += (size_t)n) > KM_IPSEC_KEYFILE_MAX)
			break;
	e = n < 0 ? errno : 0;
	close(fd);
	if (e) {
		free(buf);
		km_errf(err, errlen, "%s: cannot read it: %s", path, strerror(e));
		return -e;
	}
	if (km_ipsec_key_parse(buf, len, out, err, errlen) != 0) {
		char why[256];

		snprintf(why, sizeof(why), "%s", err);
		km_errf(err, errlen, "%s: %s", path, why);
		e = EINVAL;
	}
	explicit_bzero(buf, len < KM_IPSEC_KEYFILE_MAX + 1 ? len : KM_IPSEC_KEYFILE_MAX + 1);
	free(buf);
	return -e;
}

int km_ipsec_key_equal(const struct km_ipsec_key *a, const struct km_ipsec_key *b)
{
	return a->spi == b->spi && a->key_len == b->key_len && a->icv_bits == b->icv_bits &&
	       !strcmp(a->aead_name, b->aead_name) && !memcmp(a->key, b->key, a->key_len);
}

void km_ipsec_key_wipe(struct km_ipsec_key *k)
{
	explicit_bzero(k, sizeof(*k));
}
