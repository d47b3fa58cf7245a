/* kube.c — kmeshctl's Kubernetes API client (kube.h): the kubeconfig from --kubeconfig or
 * KUBECONFIG (the first file of a list), else ~/.kube/config, else the pod's service account
 * (in-cluster); and the API's answers turned into kmeshctl's errors. */
#include "tools/kmeshctl/kube.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shared/atomic_file.h"
#include "shared/kube/kubeconfig.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define KUBE_TIMEOUT_MS 10000

/* The pod's service account as a kubeconfig, or NULL (not in a pod). Its directory may be moved
 * with KMESH_SERVICE_ACCOUNT_DIR (tests, unusual mounts). */
static char *in_cluster(char *err, size_t errlen)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
	const char *dir = getenv("KMESH_SERVICE_ACCOUNT_DIR");
	char server[300], path[4096], *token = NULL, *ca = NULL, *text = NULL;
	long ca_len;

	if (!host || !*host)
		return NULL;
	if (!dir || !*dir)
		dir = SA_DIR;
	snprintf(path, sizeof(path), "%s/token", dir);
	if (km_read_file(path, 65536, &token, err, errlen) < 0)
		goto out;
	snprintf(path, sizeof(path), "%s/ca.crt", dir);
	if ((ca_len = km_read_file(path, 1u << 20, &ca, err, errlen)) < 0)
		goto out;
	token[strcspn(token, "\r\n")] = '\0';
	snprintf(server, sizeof(server), strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host,
		 port && *port ? port : "443");
	text = km_kubeconfig_render(server, ca, (size_t)ca_len, token);
	if (!text)
		snprintf(err, errlen, "out of memory");
out:
	free(token);
	free(ca);
	return text;
}

int km_ctl_kube_open(const struct km_ctl *ctl, struct km_kube_client *c)
{
	char path[4096], err[1024] = "", *text;
	const char *home = getenv("HOME");

	if (ctl->kubeconfig && *ctl->kubeconfig) {
		snprintf(path, sizeof(path), "%.*s", (int)strcspn(ctl->kubeconfig, ":"), ctl->kubeconfig);
	} else if (home && *home &&
		   (snprintf(path, sizeof(path), "%s/.kube/config", home), access(path, R_OK) == 0)) {
		/* the default file */
	} else if ((text = in_cluster(err, sizeof(err)))) {
		int rc = km_kube_open_text(c, text, strlen(text), KUBE_TIMEOUT_MS, err, sizeof(err));

		free(text);
		if (rc == 0)
			return 0;
		fprintf(stderr, "kmeshctl: the service account's credentials: %s\n", err);
		return -1;
	} else {
		fprintf(stderr, "kmeshctl: no kubeconfig: give --kubeconfig or KUBECONFIG, or write "
				"~/.kube/config%s%s\n", *err ? "; in-cluster: " : "", err);
		return -1;
	}
	if (km_kube_open(c, path, ctl->timeout_ms > KUBE_TIMEOUT_MS ? ctl->timeout_ms : KUBE_TIMEOUT_MS,
			 err, sizeof(err)) != 0) {
		fprintf(stderr, "kmeshctl: %s\n", err);
		return -1;
	}
	return 0;
}

int km_ctl_kube_call(struct km_kube_client *c, const char *method, const char *path,
		     const char *body, json_t **out, char *err, size_t errlen)
{
	const char *type = !body ? NULL : !strcmp(method, "PATCH") ? "application/merge-patch+json"
				  : !strcmp(method, "APPLY") ? "application/apply-patch+yaml"
							     : "application/json";

	if (out)
		*out = NULL;
	return km_kube_request(c, strcmp(method, "APPLY") ? method : "PATCH", path, type, body, out,
			       err, errlen);
}

int km_ctl_kube_api_missing(const char *err)
{
	return strstr(err, "404 page not found") != NULL;
}
