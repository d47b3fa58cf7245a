/* ca_client.c — one workload certificate from istiod's CA (see ca_client.h). */
#include "shared/tls/ca_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <wolfssl/options.h>
#include <wolfssl/ssl.h>
#include <wolfssl/wolfcrypt/asn_public.h>

#include "ca.pb-c.h"
#include "shared/msgbuf.h"

#define CA_TIMEOUT_MS 30000u

void km_workload_cert_free(struct km_workload_cert *w)
{
	km_csr_free(&w->key);
	free(w->chain);
	memset(w, 0, sizeof(*w));
}

static int64_t asn1_time(const WOLFSSL_ASN1_TIME *t)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (!t || wolfSSL_ASN1_TIME_to_tm(t, &tm) != WOLFSSL_SUCCESS)
		return 0;
	return (int64_t)timegm(&tm);
}

int km_workload_cert_check(struct km_workload_cert *w, const char *chain, size_t len,
			   const char *identity, char *why, size_t whylen)
{
	WOLFSSL_X509 *leaf = wolfSSL_X509_load_certificate_buffer((const unsigned char *)chain,
								 (int)len, WOLFSSL_FILETYPE_PEM);
	uint8_t serial[32], have[256];
	int serial_len = sizeof(serial), uris = 0, hl = sizeof(have), rc = -1;
	const char *name;

	if (!leaf) {
		snprintf(why, whylen, "the CA's answer holds no PEM certificate");
		return -1;
	}
	/* every name of the leaf: a URI must be the identity asked for, and there must be one */
	while ((name = wolfSSL_X509_get_next_altname(leaf))) {
		if (strncmp(name, "spiffe://", 9))
			continue;
		uris++;
		if (strcmp(name, identity)) {
			snprintf(why, whylen, "the certificate names %.200s, not %.200s", name, identity);
			goto out;
		}
	}
	if (uris != 1) {
		snprintf(why, whylen, "the certificate carries %d SPIFFE ids, not one (%.200s)", uris,
			 identity);
		goto out;
	}
	if (wolfSSL_X509_get_pubkey_buffer(leaf, have, &hl) != WOLFSSL_SUCCESS ||
	    (size_t)hl != w->key.spki_len || memcmp(w->key.spki, have, w->key.spki_len)) {
		snprintf(why, whylen, "the certificate's key is not the one this request sent");
		goto out;
	}
	snprintf(w->identity, sizeof(w->identity), "%s", identity);
	w->serial[0] = '\0';
	if (wolfSSL_X509_get_serial_number(leaf, serial, &serial_len) == WOLFSSL_SUCCESS)
		for (int i = 0; i < serial_len && 2 * i + 2 < (int)sizeof(w->serial); i++)
			snprintf(w->serial + 2 * i, 3, "%02x", serial[i]);
	w->not_before = asn1_time(wolfSSL_X509_get_notBefore(leaf));
	w->not_after = asn1_time(wolfSSL_X509_get_notAfter(leaf));
	if (w->not_after <= time(NULL)) {
		snprintf(why, whylen, "the certificate has expired (or carries no end)");
		goto out;
	}
	rc = 0;
out:
	wolfSSL_X509_free(leaf);
	return rc;
}

static void finish(struct km_ca_call *c, int ok, const char *why)
{
	if (c->ok || c->why[0])
		return; /* the first outcome stands */
	c->ok = ok;
	if (!ok)
		snprintf(c->why, sizeof(c->why), "%s", why && *why ? why : "failed");
}

static void on_open(struct km_grpc_stream *g)
{
	struct km_ca_call *c = g->data;
	Kmesh__Ca__IstioCertificateRequest req = KMESH__CA__ISTIO_CERTIFICATE_REQUEST__INIT;
	Kmesh__Xds__Struct meta = KMESH__XDS__STRUCT__INIT;
	Kmesh__Xds__Struct__FieldsEntry entry = KMESH__XDS__STRUCT__FIELDS_ENTRY__INIT, *entries[1];
	Kmesh__Xds__Value value = KMESH__XDS__VALUE__INIT;
	uint8_t *buf;
	size_t len;

	req.csr = c->cert.key.pem;
	req.validity_duration = c->ttl_seconds;
	if (c->impersonate) {
		value.kind_case = KMESH__XDS__VALUE__KIND_STRING_VALUE;
		value.string_value = c->identity;
		entry.key = "ImpersonatedIdentity";
		entry.value = &value;
		entries[0] = &entry;
		meta.n_fields = 1;
		meta.fields = entries;
		req.metadata = &meta;
	}
	len = kmesh__ca__istio_certificate_request__get_packed_size(&req);
	if (!(buf = malloc(len ? len : 1))) {
		finish(c, 0, "out of memory");
		km_grpc_stream_close(g);
		return;
	}
	kmesh__ca__istio_certificate_request__pack(&req, buf);
	if (km_grpc_stream_send(g, buf, len) != 0)
		finish(c, 0, "the call ended before its request was sent");
	else
		km_grpc_stream_finish(g);
	free(buf);
}

static void on_message(struct km_grpc_stream *g, uint8_t *msg, size_t len)
{
	struct km_ca_call *c = g->data;
	Kmesh__Ca__IstioCertificateResponse *r;
	size_t total = 0;
	char why[512];

	r = kmesh__ca__istio_certificate_response__unpack(NULL, len, msg);
	km_msgbuf_free(msg, len);
	if (!r || r->n_cert_chain == 0) {
		finish(c, 0, r ? "the CA answered with no certificate" : "the CA's answer is not an "
									 "IstioCertificateResponse");
		goto out;
	}
	for (size_t i = 0; i < r->n_cert_chain; i++)
		total += strlen(r->cert_chain[i]) + 1;
	if (total > KM_CA_MAX_CHAIN || c->cert.chain) {
		finish(c, 0, c->cert.chain ? "the CA answered twice" : "the CA's chain is too large");
		goto out;
	}
	if (!(c->cert.chain = malloc(total + 1))) {
		finish(c, 0, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < r->n_cert_chain; i++) {
		size_t n = strlen(r->cert_chain[i]);

		memcpy(c->cert.chain + c->cert.chain_len, r->cert_chain[i], n);
		c->cert.chain_len += n;
		if (n && r->cert_chain[i][n - 1] != '\n')
			c->cert.chain[c->cert.chain_len++] = '\n';
	}
	c->cert.chain[c->cert.chain_len] = '\0';
	if (km_workload_cert_check(&c->cert, c->cert.chain, c->cert.chain_len, c->identity, why,
				   sizeof(why)) != 0)
		finish(c, 0, why);
out:
	if (r)
		kmesh__ca__istio_certificate_response__free_unpacked(r, NULL);
}

static void call_closed(struct km_ca_call *c)
{
	if (--c->handles > 0)
		return;
	if (!c->ok)
		km_workload_cert_free(&c->cert); /* nothing to take: the key goes now */
	c->done(c, c->ok, c->why);
}

static void on_stream_closed(struct km_grpc_stream *g)
{
	call_closed(g->data);
}

static void on_timer_closed(uv_handle_t *h)
{
	call_closed(h->data);
}

static void on_end(struct km_grpc_stream *g, int status, const char *message, int goaway)
{
	struct km_ca_call *c = g->data;
	char why[400];

	(void)goaway;
	if (status != KM_GRPC_OK) {
		snprintf(why, sizeof(why), "CreateCertificate: grpc-status %d: %s", status,
			 message && *message ? message : "(no message)");
		finish(c, 0, why);
	} else if (!c->cert.chain) {
		finish(c, 0, "CreateCertificate ended without an answer");
	} else {
		finish(c, 1, NULL);
	}
	km_grpc_stream_close(g);
	if (!uv_is_closing((uv_handle_t *)&c->timer))
		uv_close((uv_handle_t *)&c->timer, on_timer_closed);
}

static void on_timeout(uv_timer_t *t)
{
	struct km_ca_call *c = t->data;

	finish(c, 0, "CreateCertificate: no answer in time");
	km_grpc_stream_close(&c->g);
}

int km_ca_call_start(struct km_ca_call *c, uv_loop_t *loop, const struct km_ca_call_config *cfg,
		     km_ca_done_cb done)
{
	static const struct km_grpc_stream_cbs cbs = { on_open, on_message, on_end, on_stream_closed,
						       NULL };
	struct km_grpc_stream_config g = cfg->grpc;
	void *data = c->data;

	memset(c, 0, sizeof(*c));
	c->data = data;
	c->done = done;
	c->impersonate = cfg->impersonate;
	c->ttl_seconds = cfg->ttl_seconds;
	snprintf(c->identity, sizeof(c->identity), "%s", cfg->identity ? cfg->identity : "");
	if (km_csr_make(&c->cert.key, c->identity, c->why, sizeof(c->why)) != 0)
		return -1;
	g.path = KM_CA_PATH;
	g.user_agent = "kmesh-tunnel";
	if (!g.max_message || g.max_message > KM_CA_MAX_CHAIN * 2)
		g.max_message = KM_CA_MAX_CHAIN * 2;
	if (!g.window)
		g.window = 1u << 20;
	c->g.data = c;
	uv_timer_init(loop, &c->timer);
	c->timer.data = c;
	c->handles = 2; /* the call's stream and the timer, each counted when closed */
	if (km_grpc_stream_start(&c->g, loop, &g, &cbs) != 0) {
		/* closed like any call (grpc_stream.h): on_end, then both closes, then done */
		finish(c, 0, "CreateCertificate: the call could not start");
		km_grpc_stream_close(&c->g);
		return 0;
	}
	uv_timer_start(&c->timer, on_timeout, cfg->timeout_ms ? cfg->timeout_ms : CA_TIMEOUT_MS, 0);
	return 0;
}

void km_ca_call_cancel(struct km_ca_call *c)
{
	finish(c, 0, "cancelled");
	km_grpc_stream_close(&c->g);
}

void km_ca_call_take(struct km_ca_call *c, struct km_workload_cert *out)
{
	*out = c->cert;
	memset(&c->cert, 0, sizeof(c->cert));
}
