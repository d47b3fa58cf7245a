/* cmd_secret.c — `kmeshctl secret create [--key-file PATH|-] | get | delete`: the IPsec key, as the
 * Secret kmesh-ipsec in kmesh-system (data ipSec: the key file the IPsec agents read, JSON spi,
 * aeadKeyName rfc4106(gcm(aes)), aeadKey base64, length 128). create makes a new 36-byte key
 * (32 of AES-256, 4 of salt; random, or --key-file) with the next SPI: 1 for a new Secret, else the
 * current SPI + 1, the update carrying the resourceVersion read (a concurrent change is read
 * again, not overwritten). */
#include "tools/kmeshctl/commands.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "shared/base64.h"
#include "tools/kmeshctl/kube.h"

#define NS "kmesh-system"
#define NAME "kmesh-ipsec"
#define ITEM_PATH "/api/v1/namespaces/" NS "/secrets/" NAME
#define COLLECTION_PATH "/api/v1/namespaces/" NS "/secrets?fieldManager=kmeshctl"
#define KEY_BYTES 36
#define AEAD "rfc4106(gcm(aes))"
#define CONFLICT_RETRIES 3

static const char usage[] =
	"usage: kmeshctl secret create [--key-file PATH|-] | get | delete\n"
	"  the IPsec key: the Secret " NAME " in " NS ", which every node's IPsec agent reads\n"
	"  create  a new key (random, or read from --key-file, '-' for stdin: 72 hex digits, 32\n"
	"          bytes of AES-256 key then 4 of salt) with the next SPI (1 for a new Secret);\n"
	"          agents rotate to it. Never on the command line: argv is visible to every user\n"
	"  get     the Secret: SPI, algorithm, key (hex), creation time\n"
	"  delete  remove it (agents keep the keys they hold)\n"
	"  Credentials: --kubeconfig, KUBECONFIG, ~/.kube/config, or the pod's service account.\n";

static int hex_key(const char *hex, uint8_t *out)
{
	if (strlen(hex) != 2 * KEY_BYTES)
		return -1;
	for (size_t i = 0; i < KEY_BYTES; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1 || !strchr("0123456789abcdefABCDEF", hex[2 * i]) ||
		    !strchr("0123456789abcdefABCDEF", hex[2 * i + 1]))
			return -1;
		out[i] = (uint8_t)v;
	}
	return 0;
}

/* The key file in a Secret (data.ipSec, base64 of JSON), or NULL. */
static json_t *key_file_of(const json_t *secret)
{
	const char *b64 = json_string_value(json_object_get(json_object_get(secret, "data"), "ipSec"));
	uint8_t buf[4096];
	long n;

	if (!b64 || (n = km_base64_decode(b64, strlen(b64), buf, sizeof(buf))) < 0)
		return NULL;
	return json_loadb((const char *)buf, (size_t)n, 0, NULL);
}

/* The Secret holding key with spi; resource_version "" for a new one. New reference. */
static json_t *secret_of(const uint8_t *key, uint32_t spi, const char *resource_version)
{
	char key64[KM_BASE64_ENCODED_LEN(KEY_BYTES)], *file, *file64;
	json_t *s, *kf;

	km_base64_encode(key, KEY_BYTES, key64);
	kf = json_pack("{s:I, s:s, s:s, s:i}", "spi", (json_int_t)spi, "aeadKeyName", AEAD, "aeadKey",
		       key64, "length", 128);
	file = kf ? json_dumps(kf, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(kf);
	if (!file)
		return NULL;
	file64 = malloc(KM_BASE64_ENCODED_LEN(strlen(file)));
	if (!file64) {
		free(file);
		return NULL;
	}
	km_base64_encode((const uint8_t *)file, strlen(file), file64);
	s = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:s, s:{s:s}}", "apiVersion", "v1", "kind",
		      "Secret", "metadata", "name", NAME, "namespace", NS, "labels",
		      "app.kubernetes.io/managed-by", "kmeshctl", "type", "Opaque", "data", "ipSec",
		      file64);
	if (s && *resource_version)
		json_object_set_new(json_object_get(s, "metadata"), "resourceVersion",
				    json_string(resource_version));
	free(file);
	free(file64);
	return s;
}

static int print_created(const struct km_ctl *ctl, uint32_t spi, int updated)
{
	json_t *rows = json_pack("[{s:s, s:s, s:I, s:s, s:s}]", "name", NAME, "namespace", NS, "spi",
				 (json_int_t)spi, "aead", AEAD, "result",
				 updated ? "rotated" : "created");

	km_out_print(stdout, rows, ctl->format);
	json_decref(rows);
	return 0;
}

static int create(const struct km_ctl *ctl, struct km_kube_client *c, const char *hex)
{
	uint8_t key[KEY_BYTES];
	char err[1024];

	if (hex && hex_key(hex, key) != 0) {
		fprintf(stderr, "kmeshctl: the key must be %d hex digits (32 bytes of key, 4 of salt)\n",
			2 * KEY_BYTES);
		return 2;
	}
	if (!hex && getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key)) {
		fprintf(stderr, "kmeshctl: no random bytes: %s\n", strerror(errno));
		return 1;
	}
	for (int attempt = 0; attempt < CONFLICT_RETRIES; attempt++) {
		json_t *cur = NULL, *file, *next;
		const char *rv = "";
		uint32_t spi = 1;
		char *body;
		int st = km_ctl_kube_call(c, "GET", ITEM_PATH, NULL, &cur, err, sizeof(err));

		if (st != 200 && st != 404) {
			fprintf(stderr, "kmeshctl: reading Secret %s/%s: %s\n", NS, NAME, err);
			return 1;
		}
		if (st == 200) {
			json_int_t old;

			file = key_file_of(cur);
			old = json_integer_value(json_object_get(file, "spi"));
			json_decref(file);
			if (old < 1 || old >= 0xffffffffLL) {
				fprintf(stderr, "kmeshctl: Secret %s/%s holds no usable SPI (data.ipSec); "
						"delete it first\n", NS, NAME);
				json_decref(cur);
				return 1;
			}
			spi = (uint32_t)old + 1;
			rv = json_string_value(json_object_get(json_object_get(cur, "metadata"),
							       "resourceVersion"));
		}
		next = secret_of(key, spi, rv ? rv : "");
		body = next ? json_dumps(next, JSON_COMPACT) : NULL;
		json_decref(next);
		json_decref(cur);
		if (!body) {
			fprintf(stderr, "kmeshctl: out of memory\n");
			return 1;
		}
		st = st == 404 ? km_ctl_kube_call(c, "POST", COLLECTION_PATH, body, NULL, err, sizeof(err))
			       : km_ctl_kube_call(c, "PUT", ITEM_PATH "?fieldManager=kmeshctl", body, NULL,
						  err, sizeof(err));
		free(body);
		if (st == 200 || st == 201)
			return print_created(ctl, spi, spi > 1);
		if (st != 409) { /* 409: created or changed meanwhile; read it again */
			fprintf(stderr, "kmeshctl: writing Secret %s/%s: %s\n", NS, NAME, err);
			return 1;
		}
	}
	fprintf(stderr, "kmeshctl: Secret %s/%s kept changing under us; try again\n", NS, NAME);
	return 1;
}

static int get(const struct km_ctl *ctl, struct km_kube_client *c)
{
	json_t *s = NULL, *file, *row;
	char err[1024], hex[2 * 64 + 1] = "";
	uint8_t key[64];
	const char *key64;
	long n;
	int st = km_ctl_kube_call(c, "GET", ITEM_PATH, NULL, &s, err, sizeof(err));

	if (st != 200) {
		fprintf(stderr, st == 404 ? "kmeshctl: no Secret %s in %s (kmeshctl secret create)\n"
					  : "kmeshctl: reading Secret %s/%s: %s\n",
			st == 404 ? NAME : NS, st == 404 ? NS : NAME, err);
		return 1;
	}
	file = key_file_of(s);
	if (!file || !json_integer_value(json_object_get(file, "spi"))) {
		fprintf(stderr, "kmeshctl: Secret %s/%s holds no key file (data.ipSec); kmeshctl secret "
				"create writes one\n", NS, NAME);
		json_decref(file);
		json_decref(s);
		return 1;
	}
	key64 = json_string_value(json_object_get(file, "aeadKey"));
	n = key64 ? km_base64_decode(key64, strlen(key64), key, sizeof(key)) : -1;
	for (long i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", key[i]);
	row = json_pack("{s:s, s:s, s:s, s:I, s:s, s:I, s:s}", "name", NAME, "namespace", NS,
			"created",
			json_string_value(json_object_get(json_object_get(s, "metadata"),
							  "creationTimestamp")) ?: "-",
			"spi", (json_int_t)json_integer_value(json_object_get(file, "spi")), "aead",
			json_string_value(json_object_get(file, "aeadKeyName")) ?: "-", "length",
			(json_int_t)json_integer_value(json_object_get(file, "length")), "key",
			n > 0 ? hex : "-");
	{
		json_t *rows = json_array();

		json_array_append_new(rows, row);
		km_out_print(stdout, rows, ctl->format);
		json_decref(rows);
	}
	json_decref(file);
	json_decref(s);
	return 0;
}

static int delete(struct km_kube_client *c)
{
	char err[1024];
	int st = km_ctl_kube_call(c, "DELETE", ITEM_PATH, NULL, NULL, err, sizeof(err));

	if (st == 200 || st == 202) {
		printf("Secret %s/%s deleted\n", NS, NAME);
		return 0;
	}
	fprintf(stderr, st == 404 ? "kmeshctl: no Secret %s in %s\n" : "kmeshctl: deleting Secret %s/%s: %s\n",
		st == 404 ? NAME : NS, st == 404 ? NS : NAME, err);
	return 1;
}

/* The key's hex digits from path ("-": stdin), surrounding whitespace dropped. Returns 0, or
 * -1 with the reason printed. */
static int read_key_file(const char *path, char *hex, size_t len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "re") : stdin;
	size_t n, a = 0;

	if (!f) {
		fprintf(stderr, "kmeshctl: --key-file %s: %s\n", path, strerror(errno));
		return -1;
	}
	n = fread(hex, 1, len - 1, f);
	if (f != stdin)
		fclose(f);
	hex[n] = '\0';
	while (n && isspace((unsigned char)hex[n - 1]))
		hex[--n] = '\0';
	while (hex[a] && isspace((unsigned char)hex[a]))
		a++;
	memmove(hex, hex + a, n - a + 1);
	return 0;
}

int km_cmd_secret(const struct km_ctl *ctl, int argc, char **argv)
{
	struct km_kube_client c;
	const char *hex = NULL;
	char from_file[256];
	int rc;

	if (km_cmd_wants_help(argc, argv, usage))
		return 0;
	if (argc < 1 || (strcmp(argv[0], "create") && strcmp(argv[0], "get") && strcmp(argv[0], "delete"))) {
		fputs(usage, stderr);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[0], "create") && !strcmp(argv[i], "--key-file") && i + 1 < argc) {
			if (read_key_file(argv[++i], from_file, sizeof(from_file)) != 0)
				return 1;
			hex = from_file;
			continue;
		}
		if (!strcmp(argv[i], "--key") || !strcmp(argv[i], "-k")) {
			fprintf(stderr, "kmeshctl: --key is gone: a key on the command line is visible to "
					"every user (ps, /proc); use --key-file PATH, or --key-file - to "
					"read it from stdin\n");
			return 2;
		}
		fputs(usage, stderr);
		return 2;
	}
	if (km_ctl_kube_open(ctl, &c) != 0)
		return 1;
	rc = !strcmp(argv[0], "create") ? create(ctl, &c, hex) : !strcmp(argv[0], "get") ? get(ctl, &c)
											    : delete(&c);
	km_kube_close(&c);
	explicit_bzero(from_file, sizeof(from_file));
	return rc;
}
