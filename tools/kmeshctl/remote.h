/* remote.h — kmeshctl for other nodes, from a workstation: `--node NAME` (repeatable) or
 * `--all-nodes` runs the command on those nodes' kmesh pods through the Kubernetes API. The pods
 * are found with kmeshctl's own API client (the DaemonSet's pods: label
 * app.kubernetes.io/name=kmesh in --kmesh-namespace, on the node by spec.nodeName); the command
 * runs in each pod's map-writer container as `kubectl exec` (the user's kubeconfig and RBAC:
 * pods/exec on the kmesh pods, which the cluster already guards; no port is opened on the nodes).
 * One node: its output as it prints it, exit code included. Several: each answers in JSON, and
 * the answers are merged into one document, every row led by its "node"; a node that failed is
 * named on stderr with its error, and the exit code is 1. At most KM_REMOTE_PARALLEL execs run at
 * once, each at most KM_REMOTE_TIMEOUT_S, reading at most KM_REMOTE_OUTPUT_MAX bytes. */
#ifndef KM_KMESHCTL_REMOTE_H
#define KM_KMESHCTL_REMOTE_H

#include <stddef.h>

#include "tools/kmeshctl/procs.h"

#define KM_REMOTE_NODES_MAX 256   /* --node given at most this often */
#define KM_REMOTE_PARALLEL 16
#define KM_REMOTE_TIMEOUT_S 60
#define KM_REMOTE_OUTPUT_MAX (64u << 20)
#define KM_REMOTE_CONTAINER "map-writer"

struct km_remote {
	const char *nodes[KM_REMOTE_NODES_MAX];
	size_t n_nodes;
	int all_nodes;
	const char *namespace; /* the DaemonSet's, default kmesh-system */
	const char *kubectl;   /* the program run for exec, default "kubectl" on PATH */
	int format_given;      /* -o was given: passed to a single node as given */
};

/* Is any node addressed? */
int km_remote_wanted(const struct km_remote *r);
/* --node's parser (KM_OPT_FUNC): appends; "a,b" names two. */
int km_remote_parse_node(const char *arg, void *target, char *err, size_t errlen);
/* The answers docs[i] of nodes[i] (NULL: that node failed, left out) as one document, a new
 * reference (remote_merge.c). */
json_t *km_remote_merge(const char *const *nodes, json_t *const *docs, size_t n);
/* Run command cmd with its arguments on the addressed nodes. Returns the exit code. */
int km_remote_run(const struct km_ctl *ctl, const struct km_remote *r, const char *cmd, int argc,
		  char **argv);

#endif
