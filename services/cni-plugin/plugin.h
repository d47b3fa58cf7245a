/* plugin.h — kmesh-cni's ADD, DEL and CHECK: decide from the Kubernetes API whether the pod
 * belongs in the mesh, and enroll or unenroll its network namespace through the map writer.
 *
 * The failure rule (docs/cni.md): input errors (stdin, environment, a missing prevResult) always
 * fail the call. When the mesh is unavailable (Kubernetes API or map writer unreachable or
 * refusing), failPolicy decides: "open" (default) lets the pod start without the mesh, with a
 * warning in the log and kmesh_cni_fail_open_total{reason} counted; "closed" fails the call
 * (code 100 for the API, 101 for the map writer) so the runtime retries. An ADD either enrolls
 * and annotates the pod or leaves no trace: a failure after the enroll undoes it. */
#ifndef KM_CNI_PLUGIN_H
#define KM_CNI_PLUGIN_H

#include <stdio.h>

#include "services/cni-plugin/cni_output.h"
#include "services/cni-plugin/invocation.h"
#include "services/cni-plugin/netconf.h"

/* Run ADD, DEL or CHECK. Returns 0 with the result (ADD) written to out, or -1 with e filled. */
int km_cni_run(const struct km_cni_invocation *inv, const struct km_cni_netconf *nc,
	       FILE *out, struct km_cni_error *e);

#endif
