/* kubeconfig.h — the parts of a kubeconfig file a Kubernetes API client needs: the current
 * context's server, how to trust it, and how to authenticate (bearer token or client
 * certificate). YAML or JSON. Exec and auth-provider plugins are refused with a clear error. */
#ifndef KM_SHARED_KUBE_KUBECONFIG_H
#define KM_SHARED_KUBE_KUBECONFIG_H

#include <stddef.h>

#define KM_KUBECONFIG_MAX_BYTES (1u << 20)

struct km_kubeconfig {
	char *server;            /* "https://host:port" */
	char *ca_pem;            /* certificate-authority-data, decoded; or NULL */
	size_t ca_pem_len;
	char *ca_file;           /* certificate-authority; or NULL */
	int insecure;            /* insecure-skip-tls-verify */
	char *token;             /* token, or the content of tokenFile; or NULL */
	char *cert_pem, *key_pem; /* client-certificate-data / client-key-data, decoded */
	size_t cert_pem_len, key_pem_len;
	char *cert_file, *key_file;
};

/* Parse text (len bytes). Relative file names are taken relative to base_dir (NULL: as given).
 * Returns 0, or -1 with err filled; kc is then empty (free it anyway). */
int km_kubeconfig_parse(const char *text, size_t len, const char *base_dir,
			struct km_kubeconfig *kc, char *err, size_t errlen);
/* The path that names the pod's service account instead of a file: the server from
 * KUBERNETES_SERVICE_HOST/PORT, token and ca.crt from KM_SERVICE_ACCOUNT_DIR (or the directory
 * in KMESH_SERVICE_ACCOUNT_DIR), read at each load so a rotated token is picked up. */
#define KM_KUBECONFIG_IN_CLUSTER "in-cluster"
#define KM_SERVICE_ACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* Read and parse a file (at most KM_KUBECONFIG_MAX_BYTES), or KM_KUBECONFIG_IN_CLUSTER. */
int km_kubeconfig_load(const char *path, struct km_kubeconfig *kc, char *err, size_t errlen);
void km_kubeconfig_free(struct km_kubeconfig *kc);

#endif
