/* kube_client.h — a small blocking Kubernetes API client on libcurl, for one-shot programs (the
 * CNI plugin, kmeshctl): one connection reused across requests, TLS verified against the
 * kubeconfig's CA, bearer token or client certificate, every request bounded in time and in
 * response size. */
#ifndef KM_SHARED_KUBE_CLIENT_H
#define KM_SHARED_KUBE_CLIENT_H

#include <jansson.h>
#include <stddef.h>

#include "shared/kube/kubeconfig.h"
#include "shared/kube_name.h"

#define KM_KUBE_MAX_RESPONSE (4u << 20)

struct km_kube_client {
	void *curl; /* CURL * */
	struct curl_slist *headers;
	struct km_kubeconfig kc;
	long timeout_ms;
	const volatile int *stop; /* set by the caller: a request gives up (within about a second)
				   * once *stop is non-zero, e.g. when a daemon shuts down */
};

/* Load the kubeconfig and prepare the connection (nothing is sent yet). Returns 0, or -1 with
 * err filled. */
int km_kube_open(struct km_kube_client *c, const char *kubeconfig_path, long timeout_ms,
		 char *err, size_t errlen);
/* The same from a kubeconfig's text (e.g. one made for the pod's service account). */
int km_kube_open_text(struct km_kube_client *c, const char *text, size_t len, long timeout_ms,
		      char *err, size_t errlen);
/* One request. path starts with "/" (e.g. "/api/v1/namespaces/default"); body and content_type
 * may be NULL. Returns the HTTP status, or -1 when no answer came (err says why: connection
 * refused, timeout, TLS). A 2xx JSON answer is parsed into *out (the caller decrefs); for
 * other statuses err holds the API's message. */
int km_kube_request(struct km_kube_client *c, const char *method, const char *path,
		    const char *content_type, const char *body, json_t **out, char *err,
		    size_t errlen);
/* A streaming GET (a watch): each complete line of the answer goes to on_line as it arrives
 * (at most KM_KUBE_MAX_RESPONSE bytes each). It ends when the server ends it, after max_ms, when
 * on_line returns non-zero, or when *stop becomes non-zero (looked at every second or so; set
 * from another thread). Returns the HTTP status (for a non-2xx one err holds the API's
 * message), or -1 when no answer came or the stream broke before the server ended it (err says
 * why; not an error when stopped or on_line ended it). */
int km_kube_stream(struct km_kube_client *c, const char *path, long max_ms,
		   int (*on_line)(void *arg, const char *line, size_t len), void *arg,
		   const volatile int *stop, char *err, size_t errlen);
void km_kube_close(struct km_kube_client *c);


#endif
