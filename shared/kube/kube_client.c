/* kube_client.c — see kube_client.h. */
#include "shared/kube/kube_client.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/errbuf.h"

struct response {
	char *data;
	size_t len, cap;
	int too_large;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct response *r = arg;
	size_t n = size * nmemb;

	if (r->len + n > KM_KUBE_MAX_RESPONSE) {
		r->too_large = 1;
		return 0; /* aborts the transfer */
	}
	if (r->len + n + 1 > r->cap) {
		size_t cap = r->cap ? r->cap : 16384;
		char *nd;

		while (cap < r->len + n + 1)
			cap *= 2;
		nd = realloc(r->data, cap);
		if (!nd)
			return 0;
		r->data = nd;
		r->cap = cap;
	}
	memcpy(r->data + r->len, ptr, n);
	r->len += n;
	r->data[r->len] = '\0';
	return n;
}

/* The connection for the kubeconfig in c->kc (freed with c on failure); what names it in
 * errors. */
static int open_loaded(struct km_kube_client *c, const char *what, char *err, size_t errlen)
{
	CURL *h;
	char auth[8192];
	long timeout_ms = c->timeout_ms;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || !(h = curl_easy_init())) {
		km_kubeconfig_free(&c->kc);
		return km_errf(err, errlen, "libcurl cannot start");
	}
	c->curl = h;
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	/* a dead peer on a long watch is found in about a minute, not at the end of the watch */
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 10L);
	if (c->kc.ca_pem) {
		struct curl_blob blob = { c->kc.ca_pem, c->kc.ca_pem_len, CURL_BLOB_COPY };

		curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
		/* only this CA: without these, libcurl also parses the system bundle, ~3 ms */
		curl_easy_setopt(h, CURLOPT_CAINFO, NULL);
		curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
	} else if (c->kc.ca_file) {
		curl_easy_setopt(h, CURLOPT_CAINFO, c->kc.ca_file);
	}
	if (c->kc.insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (c->kc.cert_pem && c->kc.key_pem) {
		struct curl_blob cert = { c->kc.cert_pem, c->kc.cert_pem_len, CURL_BLOB_COPY };
		struct curl_blob key = { c->kc.key_pem, c->kc.key_pem_len, CURL_BLOB_COPY };

		curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert);
		curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key);
	} else if (c->kc.cert_file && c->kc.key_file) {
		curl_easy_setopt(h, CURLOPT_SSLCERT, c->kc.cert_file);
		curl_easy_setopt(h, CURLOPT_SSLKEY, c->kc.key_file);
	}
	c->headers = curl_slist_append(NULL, "Accept: application/json");
	if (c->kc.token) {
		if (strlen(c->kc.token) > sizeof(auth) - 32 || strpbrk(c->kc.token, "\r\n")) {
			km_kube_close(c);
			return km_errf(err, errlen, "kubeconfig %s: the token is not a single line "
				       "under 8 KiB", what);
		}
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", c->kc.token);
		c->headers = curl_slist_append(c->headers, auth);
	}
	return 0;
}

int km_kube_open(struct km_kube_client *c, const char *kubeconfig_path, long timeout_ms,
		 char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->timeout_ms = timeout_ms;
	if (km_kubeconfig_load(kubeconfig_path, &c->kc, err, errlen) != 0)
		return -1;
	return open_loaded(c, kubeconfig_path, err, errlen);
}

int km_kube_open_text(struct km_kube_client *c, const char *text, size_t len, long timeout_ms,
		      char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->timeout_ms = timeout_ms;
	if (km_kubeconfig_parse(text, len, NULL, &c->kc, err, errlen) != 0)
		return -1;
	return open_loaded(c, "(in-cluster)", err, errlen);
}

/* The "message" of a Kubernetes Status answer, or the start of the body. */
static void api_message(const struct response *r, long status, char *err, size_t errlen)
{
	json_t *j = r->data ? json_loadb(r->data, r->len, 0, NULL) : NULL;
	const char *msg = json_string_value(json_object_get(j, "message"));

	if (msg)
		snprintf(err, errlen, "HTTP %ld: %s", status, msg);
	else
		snprintf(err, errlen, "HTTP %ld: %.200s", status, r->data ? r->data : "");
	json_decref(j);
}

/* Aborts a transfer once *arg (a stop flag) is set; libcurl calls it about once a second. */
static int stop_requested(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
			  curl_off_t ulnow)
{
	const volatile int *stop = arg;

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	return stop && *stop;
}

int km_kube_request(struct km_kube_client *c, const char *method, const char *path,
		    const char *content_type, const char *body, json_t **out, char *err,
		    size_t errlen)
{
	struct response r = { 0 };
	struct curl_slist *headers = c->headers, *extra = NULL;
	char url[2048], ct[128], cerr[CURL_ERROR_SIZE] = "";
	CURL *h = c->curl;
	json_error_t jerr;
	CURLcode rc;
	long status = 0;

	if (out)
		*out = NULL;
	if (snprintf(url, sizeof(url), "%s%s", c->kc.server, path) >= (int)sizeof(url))
		return km_errf(err, errlen, "URL too long");
	if (content_type) {
		/* one more header for this request only: a copy of the list, freed below */
		for (struct curl_slist *s = c->headers; s; s = s->next)
			extra = curl_slist_append(extra, s->data);
		snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
		extra = curl_slist_append(extra, ct);
		headers = extra;
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	if (c->stop) {
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, stop_requested);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, c->stop);
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	}
	if (body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	} else {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L); /* no body left from an earlier request */
	}
	rc = curl_easy_perform(h);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->headers);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, NULL);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 1L);
	curl_slist_free_all(extra);
	if (rc != CURLE_OK) {
		if (r.too_large)
			km_errf(err, errlen, "%s %s: the answer is larger than %u bytes", method, url,
				KM_KUBE_MAX_RESPONSE);
		else
			km_errf(err, errlen, "%s %s: %s", method, url,
				*cerr ? cerr : curl_easy_strerror(rc));
		free(r.data);
		return -1;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status > 299) {
		api_message(&r, status, err, errlen);
	} else if (out) {
		*out = r.data ? json_loadb(r.data, r.len, 0, &jerr) : NULL;
		if (!*out || !json_is_object(*out)) {
			json_decref(*out);
			*out = NULL;
			km_errf(err, errlen, "%s %s: the answer is not a JSON object", method, url);
			status = -1;
		}
	}
	free(r.data);
	return (int)status;
}

struct stream {
	struct response buf; /* the line being read */
	int (*on_line)(void *arg, const char *line, size_t len);
	void *arg;
	int ended;  /* on_line asked to stop */
	long status;
	CURL *h;
};

static size_t on_stream(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct stream *s = arg;
	size_t n = size * nmemb, start = 0;

	if (!s->status)
		curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &s->status);
	if (s->status < 200 || s->status > 299) /* an error: its whole body, for the message */
		return on_data(ptr, size, nmemb, &s->buf);
	for (size_t i = 0; i < n; i++) {
		if (ptr[i] != '\n')
			continue;
		if (on_data(ptr + start, 1, i - start, &s->buf) != i - start)
			return 0;
		if (s->buf.len && s->on_line(s->arg, s->buf.data, s->buf.len)) {
			s->ended = 1;
			return 0;
		}
		s->buf.len = 0;
		start = i + 1;
	}
	if (start < n && on_data(ptr + start, 1, n - start, &s->buf) != n - start)
		return 0;
	return n;
}

int km_kube_stream(struct km_kube_client *c, const char *path, long max_ms,
		   int (*on_line)(void *arg, const char *line, size_t len), void *arg,
		   const volatile int *stop, char *err, size_t errlen)
{
	struct stream s = { .on_line = on_line, .arg = arg, .h = c->curl };
	char url[2048], cerr[CURL_ERROR_SIZE] = "";
	CURL *h = c->curl;
	CURLcode rc;

	err[0] = '\0';
	if (snprintf(url, sizeof(url), "%s%s", c->kc.server, path) >= (int)sizeof(url))
		return km_errf(err, errlen, "URL too long");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
	curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_stream);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->headers);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, stop_requested);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, stop ? stop : c->stop);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, max_ms);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	rc = curl_easy_perform(h);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, NULL);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 1L);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, NULL);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
	if (!s.status)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &s.status);
	if (s.status && (s.status < 200 || s.status > 299)) {
		api_message(&s.buf, s.status, err, errlen);
	} else if (rc != CURLE_OK && !s.ended && !(stop && *stop) &&
		   !(rc == CURLE_OPERATION_TIMEDOUT && s.status)) { /* a timeout: it ran its time */
		if (s.buf.too_large)
			km_errf(err, errlen, "GET %s: a line longer than %u bytes", url,
				KM_KUBE_MAX_RESPONSE);
		else
			km_errf(err, errlen, "GET %s: %s", url, *cerr ? cerr : curl_easy_strerror(rc));
		s.status = -1;
	}
	free(s.buf.data);
	return (int)s.status;
}

void km_kube_close(struct km_kube_client *c)
{
	if (c->curl) {
		curl_easy_cleanup(c->curl);
		curl_global_cleanup();
	}
	curl_slist_free_all(c->headers);
	km_kubeconfig_free(&c->kc);
	memset(c, 0, sizeof(*c));
}
