/* test_csr.c — a workload's key and CSR (shared/tls/csr.c) read by an independent reader,
 * openssl: the request's signature verifies with its own key, its only name is the SPIFFE URI
 * SAN (no subject), the key is P-256 and is the one the request carries; ids that are not a
 * service account's are refused; the key is wiped. And the checks of the certificate istiod's CA
 * answers (ca_client.c), on certificates openssl issues. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "shared/tls/ca_client.h"
#include "shared/tls/csr.h"

/* Run cmd (a shell line) on input, its stdout (at most cap - 1 bytes) into out. Returns its
 * exit status. */
static int run(const char *cmd, const void *input, size_t len, char *out, size_t cap)
{
	char in_path[] = "/tmp/km-test-csr-XXXXXX", line[4096];
	int fd = mkstemp(in_path), rc;
	FILE *p;
	size_t n = 0;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, input, len), (ssize_t)len);
	close(fd);
	snprintf(line, sizeof(line), "( %s ) < %s 2>&1", cmd, in_path);
	p = popen(line, "r");
	assert_non_null(p);
	while (n + 1 < cap && (rc = (int)fread(out + n, 1, cap - 1 - n, p)) > 0)
		n += (size_t)rc;
	out[n] = '\0';
	rc = pclose(p);
	unlink(in_path);
	return WEXITSTATUS(rc);
}

static void request_as_openssl_reads_it(void **state)
{
	const char *id = "spiffe://cluster.local/ns/shop/sa/client";
	struct km_csr c;
	char err[256], text[8192], pub_req[1024], pub_key[1024];

	(void)state;
	assert_int_equal(km_csr_make(&c, id, err, sizeof(err)), 0);
	assert_true(c.pem_len > 0 && c.key_der_len > 0);
	assert_non_null(strstr(c.pem, "-----BEGIN CERTIFICATE REQUEST-----"));
	/* the signature verifies with the request's own key */
	assert_int_equal(run("openssl req -noout -verify -text", c.pem, c.pem_len, text, sizeof(text)),
			 0);
	assert_non_null(strstr(text, "verify OK"));
	assert_non_null(strstr(text, "URI:spiffe://cluster.local/ns/shop/sa/client"));
	assert_non_null(strstr(text, "prime256v1"));
	assert_non_null(strstr(text, "ecdsa-with-SHA256"));
	assert_null(strstr(text, "CN =")); /* no subject: istiod writes the identity */
	assert_null(strstr(text, "CN="));
	/* the key kept is the one the request carries */
	assert_int_equal(run("openssl req -noout -pubkey", c.pem, c.pem_len, pub_req,
			     sizeof(pub_req)), 0);
	assert_int_equal(run("openssl pkey -inform DER -pubout", c.key_der, c.key_der_len, pub_key,
			     sizeof(pub_key)), 0);
	assert_string_equal(pub_req, pub_key);
	/* ... and the public key kept beside it is the request's too */
	assert_int_equal(run("openssl pkey -pubin -inform DER -pubout", c.spki, c.spki_len, pub_key,
			     sizeof(pub_key)), 0);
	assert_string_equal(pub_req, pub_key);
	/* two requests, two keys */
	{
		struct km_csr c2;

		assert_int_equal(km_csr_make(&c2, id, err, sizeof(err)), 0);
		assert_memory_not_equal(c.key_der, c2.key_der, c.key_der_len);
		km_csr_free(&c2);
	}
	km_csr_free(&c);
	for (size_t i = 0; i < sizeof(c.key_der); i++)
		assert_int_equal(c.key_der[i], 0); /* wiped */
	assert_int_equal(c.key_der_len, 0);
}

static void long_id_takes_long_der_lengths(void **state)
{
	char id[1100], text[8192], err[256];
	struct km_csr c;

	(void)state;
	/* a namespace long enough for 2-byte DER lengths (over 255 bytes in all) */
	snprintf(id, sizeof(id), "spiffe://cluster.local/ns/%0300d/sa/client", 7);
	assert_int_equal(km_csr_make(&c, id, err, sizeof(err)), 0);
	assert_int_equal(run("openssl req -noout -verify -text", c.pem, c.pem_len, text, sizeof(text)),
			 0);
	assert_non_null(strstr(text, id + 9));
	km_csr_free(&c);
}

static void not_a_service_account_refused(void **state)
{
	static const char *const bad[] = {
		"", "spiffe://", "https://cluster.local/ns/a/sa/b", "spiffe://cluster.local/ns/a",
		"spiffe://cluster.local/ns//sa/b", "spiffe://cluster.local/ns/a/sa/",
		"spiffe://cluster.local/ns/a/sa/b/c", "spiffe:///ns/a/sa/b",
		"spiffe://cluster.local/ns/a b/sa/c", "spiffe://cluster.local/ns/a/sa/b\n",
	};
	char id[1200], err[256];
	struct km_csr c;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(km_csr_make(&c, bad[i], err, sizeof(err)), -1);
		assert_non_null(strstr(err, "not a SPIFFE id"));
		assert_int_equal(c.key_der_len, 0);
	}
	memset(id, 'a', sizeof(id) - 1); /* over KM_CSR_MAX_ID */
	id[sizeof(id) - 1] = '\0';
	memcpy(id, "spiffe://td/ns/n/sa/", 20);
	assert_int_equal(km_csr_make(&c, id, err, sizeof(err)), -1);
}

/* A certificate for c's key, signed by a throwaway CA with openssl: SANs as given, validity as
 * openssl's dates say (-days 0: it ends as it begins, now). Returns its PEM in out. */
static void issue(const struct km_csr *c, const char *san, const char *dates, char *out, size_t cap)
{
	char cmd[2048], dir[] = "/tmp/km-test-ca-XXXXXX";

	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd),
		 "cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
		 "-subj /CN=ca -keyout ca.key -out ca.pem 2>/dev/null && cat > req.pem && "
		 "printf 'subjectAltName=%s\n' > ext && openssl x509 -req -in req.pem -CA ca.pem "
		 "-CAkey ca.key -CAcreateserial %s -extfile ext 2>/dev/null; rm -rf %s",
		 dir, san, dates, dir);
	assert_int_equal(run(cmd, c->pem, c->pem_len, out, cap), 0);
	assert_non_null(strstr(out, "-----BEGIN CERTIFICATE-----"));
}

/* What the CA client takes from istiod's answer (ca_client.c): the one SPIFFE id asked, the
 * request's key, not expired; anything else refused with the reason. */
static void certificate_checked(void **state)
{
	const char *id = "spiffe://cluster.local/ns/shop/sa/client";
	struct km_workload_cert w;
	struct km_csr other;
	char pem[8192], why[512], err[256];

	(void)state;
	memset(&w, 0, sizeof(w));
	assert_int_equal(km_csr_make(&w.key, id, err, sizeof(err)), 0);
	issue(&w.key, "URI:spiffe://cluster.local/ns/shop/sa/client", "-days 1", pem, sizeof(pem));
	assert_int_equal(km_workload_cert_check(&w, pem, strlen(pem), id, why, sizeof(why)), 0);
	assert_string_equal(w.identity, id);
	assert_true(w.serial[0] && w.not_after > w.not_before && w.not_after - w.not_before >= 86399);
	/* another identity, two of them, none */
	issue(&w.key, "URI:spiffe://cluster.local/ns/shop/sa/other", "-days 1", pem, sizeof(pem));
	assert_int_equal(km_workload_cert_check(&w, pem, strlen(pem), id, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "names spiffe://cluster.local/ns/shop/sa/other"));
	issue(&w.key, "URI:spiffe://cluster.local/ns/shop/sa/client,URI:spiffe://cluster.local/ns/x/sa/y",
	      "-days 1", pem, sizeof(pem));
	assert_int_equal(km_workload_cert_check(&w, pem, strlen(pem), id, why, sizeof(why)), -1);
	issue(&w.key, "DNS:client.shop", "-days 1", pem, sizeof(pem));
	assert_int_equal(km_workload_cert_check(&w, pem, strlen(pem), id, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "carries 0 SPIFFE ids"));
	/* expired */
	issue(&w.key, "URI:spiffe://cluster.local/ns/shop/sa/client",
	      "-days 0", pem, sizeof(pem)); /* it ends as it begins: now */
	assert_int_equal(km_workload_cert_check(&w, pem, strlen(pem), id, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "expired"));
	/* the right name on another key */
	assert_int_equal(km_csr_make(&other, id, err, sizeof(err)), 0);
	issue(&other, "URI:spiffe://cluster.local/ns/shop/sa/client", "-days 1", pem, sizeof(pem));
	assert_int_equal(km_workload_cert_check(&w, pem, strlen(pem), id, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "key is not the one"));
	/* not a certificate */
	assert_int_equal(km_workload_cert_check(&w, "garbage", 7, id, why, sizeof(why)), -1);
	km_csr_free(&other);
	km_workload_cert_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(request_as_openssl_reads_it),
		cmocka_unit_test(long_id_takes_long_der_lengths),
		cmocka_unit_test(not_a_service_account_refused),
		cmocka_unit_test(certificate_checked),
	};

	return cmocka_run_group_tests_name("csr", tests, NULL, NULL);
}
