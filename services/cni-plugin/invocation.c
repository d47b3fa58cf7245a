/* invocation.c — reading the CNI environment (see invocation.h). */
#include "services/cni-plugin/invocation.h"

#include <stdlib.h>
#include <string.h>

#include "shared/kube_name.h"

const char *km_cni_command_name(enum km_cni_command c)
{
	static const char *const names[] = { "ADD", "DEL", "CHECK", "VERSION" };

	return c <= KM_CNI_VERSION ? names[c] : "?";
}

int km_cni_args_parse(const char *args, struct km_cni_invocation *inv, struct km_cni_error *e)
{
	const char *p = args;

	inv->pod_name[0] = inv->pod_namespace[0] = '\0';
	if (!args || !*args)
		return 0;
	if (strlen(args) > KM_CNI_MAX_ARGS)
		return km_cni_fail(e, KM_CNI_E_ENV, "invalid CNI_ARGS", "longer than %d bytes",
				   KM_CNI_MAX_ARGS);
	while (*p) {
		const char *end = strchr(p, ';'), *eq;
		size_t len;

		if (!end)
			end = p + strlen(p);
		len = (size_t)(end - p);
		eq = memchr(p, '=', len);
		if (len > 0) {
			size_t klen, vlen;
			char *dst = NULL;

			if (!eq || eq == p)
				return km_cni_fail(e, KM_CNI_E_ENV, "invalid CNI_ARGS",
						   "'%.*s' is not KEY=VALUE", (int)(len > 64 ? 64 : len),
						   p);
			klen = (size_t)(eq - p);
			vlen = len - klen - 1;
			if (klen == 12 && !memcmp(p, "K8S_POD_NAME", 12))
				dst = inv->pod_name;
			else if (klen == 17 && !memcmp(p, "K8S_POD_NAMESPACE", 17))
				dst = inv->pod_namespace;
			if (dst) {
				if (vlen >= sizeof(inv->pod_name))
					return km_cni_fail(e, KM_CNI_E_ENV, "invalid CNI_ARGS",
							   "%.*s longer than 253 bytes", (int)klen, p);
				memcpy(dst, eq + 1, vlen);
				dst[vlen] = '\0';
				if (vlen && !km_kube_valid_name(dst))
					return km_cni_fail(e, KM_CNI_E_ENV, "invalid CNI_ARGS",
							   "%.*s '%.64s' is not a Kubernetes name",
							   (int)klen, p, dst);
			}
		}
		p = *end ? end + 1 : end;
	}
	return 0;
}

static int valid_container_id(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > KM_CNI_MAX_CONTAINER_ID)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			return 0;
	}
	return id[0] != '.'; /* it names a state file: no "." or ".." */
}

int km_cni_invocation_from_env(struct km_cni_invocation *inv, struct km_cni_error *e)
{
	const char *cmd = getenv("CNI_COMMAND"), *id = getenv("CNI_CONTAINERID");

	memset(inv, 0, sizeof(*inv));
	if (!cmd || !*cmd)
		return km_cni_fail(e, KM_CNI_E_ENV, "CNI_COMMAND is not set",
				   "kmesh-cni is run by a container runtime as a chained CNI plugin; "
				   "see kmesh-cni --help");
	if (!strcmp(cmd, "ADD"))
		inv->command = KM_CNI_ADD;
	else if (!strcmp(cmd, "DEL"))
		inv->command = KM_CNI_DEL;
	else if (!strcmp(cmd, "CHECK"))
		inv->command = KM_CNI_CHECK;
	else if (!strcmp(cmd, "VERSION"))
		inv->command = KM_CNI_VERSION;
	else
		return km_cni_fail(e, KM_CNI_E_ENV, "unknown CNI_COMMAND",
				   "'%.32s'; kmesh-cni knows ADD, DEL, CHECK and VERSION", cmd);
	if (inv->command == KM_CNI_VERSION)
		return 0;
	if (!id || !valid_container_id(id))
		return km_cni_fail(e, KM_CNI_E_ENV, "invalid CNI_CONTAINERID",
				   "'%.64s': letters, digits, '-', '_' and '.', 1 to %d characters",
				   id ? id : "", KM_CNI_MAX_CONTAINER_ID);
	strcpy(inv->container_id, id);
	inv->netns = getenv("CNI_NETNS");
	inv->ifname = getenv("CNI_IFNAME");
	if (inv->command != KM_CNI_DEL && (!inv->netns || !*inv->netns))
		return km_cni_fail(e, KM_CNI_E_ENV, "CNI_NETNS is not set",
				   "%s needs the pod's network namespace", cmd);
	return km_cni_args_parse(getenv("CNI_ARGS"), inv, e);
}
