/* kubeconfig.c — reading the current context of a kubeconfig, and writing the installer's
 * (see kubeconfig.h). */
#include "shared/kube/kubeconfig.h"

#include <jansson.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/atomic_file.h"
#include "shared/base64.h"
#include "shared/errbuf.h"
#include "shared/kube/yaml_json.h"

#define KM_TOKEN_MAX_BYTES (64u << 10)

/* The entry of a named list ("clusters", "users", "contexts") with this name, its inner
 * object (key = "cluster", "user", "context"). */
static json_t *named(json_t *root, const char *list, const char *key, const char *name)
{
	json_t *arr = json_object_get(root, list), *item;
	size_t i;

	json_array_foreach(arr, i, item) {
		const char *n = json_string_value(json_object_get(item, "name"));

		if (n && !strcmp(n, name))
			return json_object_get(item, key);
	}
	return NULL;
}

static char *dup_string(json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s && *s ? strdup(s) : NULL;
}

static char *path_in(const char *base_dir, const char *name)
{
	char *out;

	if (!name || !*name)
		return NULL;
	if (name[0] == '/' || !base_dir)
		return strdup(name);
	if (asprintf(&out, "%s/%s", base_dir, name) < 0)
		return NULL;
	return out;
}

/* Decode a *-data field; NULL with *len 0 when absent; -1 when not base64. */
static int data_field(json_t *obj, const char *key, char **out, size_t *len)
{
	const char *s = json_string_value(json_object_get(obj, key));
	size_t n;
	long got;

	*out = NULL;
	*len = 0;
	if (!s || !*s)
		return 0;
	n = strlen(s);
	*out = malloc(n / 4 * 3 + 4);
	if (!*out)
		return -1;
	got = km_base64_decode(s, n, (uint8_t *)*out, n / 4 * 3 + 3);
	if (got < 0) {
		free(*out);
		*out = NULL;
		return -1;
	}
	(*out)[got] = '\0';
	*len = (size_t)got;
	return 0;
}

int km_kubeconfig_parse(const char *text, size_t len, const char *base_dir,
			struct km_kubeconfig *kc, char *err, size_t errlen)
{
	char why[256];
	json_t *root = km_yaml_load(text, len, why, sizeof(why)), *ctx, *cluster, *user;
	const char *current, *cname, *uname;
	int rc = -1;

	memset(kc, 0, sizeof(*kc));
	if (!root)
		return km_errf(err, errlen, "not YAML or JSON: %s", why);
	current = json_string_value(json_object_get(root, "current-context"));
	if (!current || !*current) {
		km_errf(err, errlen, "no current-context");
		goto out;
	}
	ctx = named(root, "contexts", "context", current);
	if (!json_is_object(ctx)) {
		km_errf(err, errlen, "current-context '%.64s' is not in contexts", current);
		goto out;
	}
	cname = json_string_value(json_object_get(ctx, "cluster"));
	uname = json_string_value(json_object_get(ctx, "user"));
	cluster = cname ? named(root, "clusters", "cluster", cname) : NULL;
	if (!json_is_object(cluster)) {
		km_errf(err, errlen, "context '%.64s' names no known cluster", current);
		goto out;
	}
	kc->server = dup_string(cluster, "server");
	if (!kc->server || strncmp(kc->server, "https://", 8) != 0) {
		km_errf(err, errlen, "cluster '%.64s': server must be an https:// URL", cname);
		goto out;
	}
	if (data_field(cluster, "certificate-authority-data", &kc->ca_pem, &kc->ca_pem_len)) {
		km_errf(err, errlen, "cluster '%.64s': certificate-authority-data is not base64", cname);
		goto out;
	}
	kc->ca_file = path_in(base_dir, json_string_value(json_object_get(cluster,
									   "certificate-authority")));
	kc->insecure = json_is_true(json_object_get(cluster, "insecure-skip-tls-verify"));
	user = uname ? named(root, "users", "user", uname) : NULL;
	if (uname && !json_is_object(user)) {
		km_errf(err, errlen, "context '%.64s' names no known user", current);
		goto out;
	}
	if (user) {
		const char *tf = json_string_value(json_object_get(user, "tokenFile"));

		if (json_object_get(user, "exec") || json_object_get(user, "auth-provider")) {
			km_errf(err, errlen, "user '%.64s': exec and auth-provider credentials are not "
				"supported; use a token, tokenFile or client certificate", uname);
			goto out;
		}
		kc->token = dup_string(user, "token");
		if (!kc->token && tf && *tf) {
			char *path = path_in(base_dir, tf), *tok = NULL;
			long n = path ? km_read_file(path, KM_TOKEN_MAX_BYTES, &tok, why, sizeof(why))
				      : -1;

			free(path);
			if (n < 0) {
				km_errf(err, errlen, "user '%.64s': tokenFile: %s", uname, why);
				goto out;
			}
			while (n > 0 && (tok[n - 1] == '\n' || tok[n - 1] == '\r'))
				tok[--n] = '\0';
			kc->token = tok;
		}
		if (data_field(user, "client-certificate-data", &kc->cert_pem, &kc->cert_pem_len) ||
		    data_field(user, "client-key-data", &kc->key_pem, &kc->key_pem_len)) {
			km_errf(err, errlen, "user '%.64s': client certificate data is not base64",
				uname);
			goto out;
		}
		kc->cert_file = path_in(base_dir, json_string_value(json_object_get(
							  user, "client-certificate")));
		kc->key_file = path_in(base_dir, json_string_value(json_object_get(user,
										    "client-key")));
	}
	rc = 0;
out:
	json_decref(root);
	if (rc)
		km_kubeconfig_free(kc);
	return rc;
}

/* The pod's service account, found as in-cluster clients find it. */
static int load_in_cluster(struct km_kubeconfig *kc, char *err, size_t errlen)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
	const char *dir = getenv("KMESH_SERVICE_ACCOUNT_DIR");
	char path[4096], why[320], server[300];
	long n;

	if (!host || !*host)
		return km_errf(err, errlen, "in-cluster: KUBERNETES_SERVICE_HOST is not set (not in a "
				"pod?)");
	if (!dir || !*dir)
		dir = KM_SERVICE_ACCOUNT_DIR;
	snprintf(server, sizeof(server), strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host,
		 port && *port ? port : "443");
	snprintf(path, sizeof(path), "%s/token", dir);
	if (km_read_file(path, KM_TOKEN_MAX_BYTES, &kc->token, why, sizeof(why)) < 0)
		goto fail;
	kc->token[strcspn(kc->token, "\r\n")] = '\0';
	snprintf(path, sizeof(path), "%s/ca.crt", dir);
	if ((n = km_read_file(path, 1u << 20, &kc->ca_pem, why, sizeof(why))) < 0)
		goto fail;
	kc->ca_pem_len = (size_t)n;
	if (!(kc->server = strdup(server))) {
		snprintf(why, sizeof(why), "out of memory");
		goto fail;
	}
	return 0;
fail:
	km_kubeconfig_free(kc);
	return km_errf(err, errlen, "in-cluster: %s", why);
}

int km_kubeconfig_load(const char *path, struct km_kubeconfig *kc, char *err, size_t errlen)
{
	char why[320], dir[4096], *text;
	long n;
	int rc;

	memset(kc, 0, sizeof(*kc));
	if (!strcmp(path, KM_KUBECONFIG_IN_CLUSTER))
		return load_in_cluster(kc, err, errlen);
	n = km_read_file(path, KM_KUBECONFIG_MAX_BYTES, &text, why, sizeof(why));
	if (n < 0)
		return km_errf(err, errlen, "kubeconfig: %s", why);
	snprintf(dir, sizeof(dir), "%s", path);
	rc = km_kubeconfig_parse(text, (size_t)n, dirname(dir), kc, why, sizeof(why));
	free(text);
	if (rc)
		return km_errf(err, errlen, "kubeconfig %s: %s", path, why);
	return 0;
}

void km_kubeconfig_free(struct km_kubeconfig *kc)
{
	free(kc->server);
	free(kc->ca_pem);
	free(kc->ca_file);
	free(kc->token);
	free(kc->cert_pem);
	free(kc->key_pem);
	free(kc->cert_file);
	free(kc->key_file);
	memset(kc, 0, sizeof(*kc));
}
