/* invocation.h — the environment of one CNI call (CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS,
 * CNI_IFNAME, CNI_ARGS), validated and bounded. The pod comes from CNI_ARGS (K8S_POD_NAME,
 * K8S_POD_NAMESPACE), checked to be Kubernetes names so they can go into API paths. */
#ifndef KM_CNI_INVOCATION_H
#define KM_CNI_INVOCATION_H

#include "services/cni-plugin/cni_output.h"

#define KM_CNI_MAX_ARGS 4096
#define KM_CNI_MAX_CONTAINER_ID 256

enum km_cni_command {
	KM_CNI_ADD,
	KM_CNI_DEL,
	KM_CNI_CHECK,
	KM_CNI_VERSION,
};

struct km_cni_invocation {
	enum km_cni_command command;
	char container_id[KM_CNI_MAX_CONTAINER_ID + 1];
	const char *netns;  /* NULL or "" when not given (allowed on DEL) */
	const char *ifname; /* NULL when not given */
	char pod_name[254], pod_namespace[254]; /* "" when CNI_ARGS does not name a pod */
};

/* Parse CNI_ARGS ("K=V;K=V"): K8S_POD_NAME and K8S_POD_NAMESPACE into inv. Returns 0, or -1
 * with e filled (code 4). */
int km_cni_args_parse(const char *args, struct km_cni_invocation *inv, struct km_cni_error *e);
/* Everything from the process environment. Returns 0 or -1 with e filled. */
int km_cni_invocation_from_env(struct km_cni_invocation *inv, struct km_cni_error *e);
const char *km_cni_command_name(enum km_cni_command c);

#endif
