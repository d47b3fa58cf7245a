/* plugin.c — the CNI commands (see plugin.h). */
#include "services/cni-plugin/plugin.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/client_sync.h"
#include "kmesh_maps.h"
#include "services/cni-plugin/cni_state.h"
#include "services/cni-plugin/enroll_rule.h"
#include "services/cni-plugin/host_link.h"
#include "shared/kube/kube_client.h"
#include "shared/log.h"
#include "shared/netns.h"

#define ANNOTATION "kmesh.net/redirection"

struct call {
	const struct km_cni_invocation *inv;
	const struct km_cni_netconf *nc;
	FILE *out;
	struct km_cni_error *e;
	char pod[520]; /* "namespace/name" */
	struct km_kube_client kube;
	int kube_open;
	uint32_t host_ifindex; /* the node side of the pod's interface (0: none found) */
	uint8_t *enroll_env;   /* the Enroll sent, packed: kept as pending if the map writer is away */
	size_t enroll_env_len;
};

static void count(const struct call *c, const char *result)
{
	char series[160];

	snprintf(series, sizeof(series), "kmesh_cni_requests_total{command=\"%s\",result=\"%s\"}",
		 km_cni_command_name(c->inv->command), result);
	km_cni_metric_inc(c->nc->state_dir, series);
}

static int pass_through(struct call *c)
{
	if (c->inv->command != KM_CNI_ADD)
		return 0;
	if (km_cni_print_result(c->out, c->nc->prev_result) != 0)
		return km_cni_fail(c->e, KM_CNI_E_IO, "cannot write the result", "stdout: %s",
				   strerror(errno));
	return 0;
}

/* The mesh is unavailable (reason "kube_api" or "map_writer"): the fail policy decides. */
static int unavailable(struct call *c, const char *reason, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int unavailable(struct call *c, const char *reason, int code, const char *fmt, ...)
{
	char details[600], series[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(details, sizeof(details), fmt, ap);
	va_end(ap);
	if (c->nc->fail_policy == KM_CNI_FAIL_CLOSED) {
		km_error("%s %s: failed (failPolicy closed): %s", km_cni_command_name(c->inv->command),
			 c->pod, details);
		count(c, "failed");
		return km_cni_fail(c->e, code,
				   code == KM_CNI_E_KUBE_API ? "the Kubernetes API is unavailable"
							     : "the kmesh map writer is unavailable",
				   "%s", details);
	}
	km_warn("%s %s: fail-open, the pod runs without the mesh: %s",
		km_cni_command_name(c->inv->command), c->pod, details);
	snprintf(series, sizeof(series), "kmesh_cni_fail_open_total{reason=\"%s\"}", reason);
	km_cni_metric_inc(c->nc->state_dir, series);
	count(c, "fail_open");
	return pass_through(c);
}

#define MW_UNREACHED (-1) /* not connected: the request was never sent */
#define MW_UNKNOWN (-2)   /* sent, but no reply: it may or may not have been applied */

/* One request to the map writer as the CNI role. Returns the reply code, or MW_UNREACHED /
 * MW_UNKNOWN (why says how). */
static int map_writer_call(struct call *c, km_envelope *req, char *why, size_t whylen)
{
	struct km_sync_client cl;
	Kmesh__Ipc__Code code = KMESH__IPC__CODE__OK;
	km_envelope *rep;
	char msg[256] = "";
	int rc;

	rc = km_sync_connect(&cl, c->nc->map_writer_socket, KMESH__IPC__ROLE__ROLE_CNI, "kmesh-cni",
			     (int)c->nc->timeout_ms, &code, msg, sizeof(msg));
	if (rc) {
		snprintf(why, whylen, "map writer at %s: %s%s%s", c->nc->map_writer_socket,
			 strerror(-rc), *msg ? ": " : "", msg);
		return MW_UNREACHED;
	}
	rc = km_sync_call(&cl, req, &rep);
	km_sync_close(&cl);
	if (rc) {
		snprintf(why, whylen, "map writer at %s: %s (the request may have been applied)",
			 c->nc->map_writer_socket, strerror(-rc));
		return MW_UNKNOWN;
	}
	code = rep->reply->code;
	snprintf(why, whylen, "map writer: %s%s%s", km_msg_code_name(code),
		 rep->reply->message && *rep->reply->message ? ": " : "",
		 rep->reply->message ? rep->reply->message : "");
	km_msg_free(rep);
	return (int)code;
}

static int peer_of_ifname(void *arg, char *err, size_t errlen)
{
	struct call *c = arg;

	return km_host_link_peer(c->inv->ifname, &c->host_ifindex, err, errlen);
}

static int enroll(struct call *c, uint64_t cookie, char *why, size_t whylen)
{
	km_envelope req = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Enroll en = KMESH__IPC__ENROLL__INIT;
	ProtobufCBinaryData bytes[KM_CNI_MAX_POD_IPS];
	uint8_t raw[KM_CNI_MAX_POD_IPS][16];

	for (size_t i = 0; i < c->nc->n_pod_ips; i++) {
		bytes[i].len = km_addr_to_bytes(&c->nc->pod_ips[i], raw[i]);
		bytes[i].data = raw[i];
	}
	en.netns_cookie = cookie;
	en.n_addresses = c->nc->n_pod_ips;
	en.addresses = bytes;
	en.pod = c->pod;
	/* lets the map writer close this pod's connections that a policy change denies */
	if (c->inv->netns[0] == '/' && strlen(c->inv->netns) < KM_NETNS_PATH_MAX)
		en.netns_path = (char *)c->inv->netns;
	else /* optional: never a reason to fail the pod */
		km_warn("ADD %s: the netns path is not absolute or longer than %d bytes; its open "
			"connections will not be closed when policies deny them", c->pod,
			KM_NETNS_PATH_MAX - 1);
	/* where IPsec's encrypt program goes; without it the map writer refuses the pod when
	 * IPsec is on, and says why */
	if (km_netns_call(c->inv->netns, peer_of_ifname, c, why, whylen) != 0)
		km_warn("ADD %s: cannot find the node side of %s: %s", c->pod,
			c->inv->ifname ? c->inv->ifname : "(no CNI_IFNAME)", why);
	else if (!c->host_ifindex)
		km_info("ADD %s: %s is not a veth: no node-side interface", c->pod, c->inv->ifname);
	en.host_ifindex = c->host_ifindex;
	req.body_case = KMESH__IPC__ENVELOPE__BODY_ENROLL;
	req.enroll = &en;
	free(c->enroll_env);
	c->enroll_env = km_msg_pack(&req, &c->enroll_env_len);
	return map_writer_call(c, &req, why, whylen);
}

static int unenroll(struct call *c, uint64_t cookie, char *why, size_t whylen)
{
	km_envelope req = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Unenroll un = KMESH__IPC__UNENROLL__INIT;

	un.netns_cookie = cookie;
	un.pod = c->pod;
	req.body_case = KMESH__IPC__ENVELOPE__BODY_UNENROLL;
	req.unenroll = &un;
	return map_writer_call(c, &req, why, whylen);
}

/* Fetch the pod (and its namespace when the pod alone does not decide). Returns 0 with *d set,
 * or -1 with why filled (the API is unavailable); *pod_out keeps the pod for the annotation. */
static int decide(struct call *c, struct km_enroll_decision *d, json_t **pod_out, char *why,
		  size_t whylen)
{
	char path[600];
	json_t *pod = NULL, *ns = NULL;
	int status, needs_ns;

	*pod_out = NULL;
	if (!c->kube_open) {
		if (km_kube_open(&c->kube, c->nc->kubeconfig, c->nc->timeout_ms, why, whylen) != 0)
			return -1;
		c->kube_open = 1;
	}
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", c->inv->pod_namespace,
		 c->inv->pod_name);
	status = km_kube_request(&c->kube, "GET", path, NULL, NULL, &pod, why, whylen);
	if (status != 200)
		return -1;
	*d = km_enroll_decide(pod, NULL, &needs_ns);
	if (needs_ns) {
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s", c->inv->pod_namespace);
		status = km_kube_request(&c->kube, "GET", path, NULL, NULL, &ns, why, whylen);
		if (status != 200) {
			json_decref(pod);
			return -1;
		}
		*d = km_enroll_decide(pod, ns, &needs_ns);
		json_decref(ns);
	}
	*pod_out = pod;
	return 0;
}

static int annotate(struct call *c, const json_t *pod, char *why, size_t whylen)
{
	const char *have = json_string_value(json_object_get(
		json_object_get(json_object_get(pod, "metadata"), "annotations"), ANNOTATION));
	char path[600];

	if (have && !strcmp(have, "enabled"))
		return 0;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", c->inv->pod_namespace,
		 c->inv->pod_name);
	return km_kube_request(&c->kube, "PATCH", path, "application/merge-patch+json",
			       "{\"metadata\":{\"annotations\":{\"" ANNOTATION "\":\"enabled\"}}}",
			       NULL, why, whylen) == 200
		       ? 0
		       : -1;
}

static int cmd_add(struct call *c)
{
	struct km_enroll_decision d;
	char why[768], undo[400];
	json_t *pod;
	uint64_t cookie;
	int rc;

	if (decide(c, &d, &pod, why, sizeof(why)) != 0)
		return unavailable(c, "kube_api", KM_CNI_E_KUBE_API, "%s", why);
	if (!d.enroll) {
		km_info("ADD %s: not enrolled: %s", c->pod, d.why);
		json_decref(pod);
		count(c, "not_enrolled");
		return pass_through(c);
	}
	rc = km_netns_cookie(c->inv->netns, &cookie, why, sizeof(why));
	if (rc) {
		json_decref(pod);
		count(c, "failed");
		return km_cni_fail(c->e, rc == -ENOENT ? KM_CNI_E_CONTAINER : KM_CNI_E_IO,
				   "cannot read the pod's network namespace", "%s", why);
	}
	/* state first: whatever happens next, a DEL finds the cookie to undo */
	if (km_cni_state_init(c->nc->state_dir, why, sizeof(why)) ||
	    km_cni_state_save(c->nc->state_dir, c->inv->container_id, cookie, c->pod, why,
			      sizeof(why))) {
		json_decref(pod);
		count(c, "failed");
		return km_cni_fail(c->e, KM_CNI_E_IO, "cannot save the enrollment state", "%s", why);
	}
	rc = enroll(c, cookie, why, sizeof(why));
	if (rc == MW_UNKNOWN && unenroll(c, cookie, undo, sizeof(undo)) != KMESH__IPC__CODE__OK) {
		/* the enroll may have been applied and cannot be undone now: fail, keeping the
		 * state, so the runtime's DEL removes whatever is there */
		json_decref(pod);
		count(c, "failed");
		return km_cni_fail(c->e, KM_CNI_E_MAP_WRITER, "the kmesh map writer did not answer",
				   "enroll netns cookie %" PRIu64 ": %s; undoing it failed: %s",
				   cookie, why, undo);
	}
	if (rc == KMESH__IPC__CODE__ENCRYPTION_UNAVAILABLE) {
		/* not an unavailable mesh: started anyway, the pod would talk to other nodes in
		 * clear, so no fail policy lets it through */
		json_decref(pod);
		km_cni_state_remove(c->nc->state_dir, c->inv->container_id);
		km_error("ADD %s: refused: %s", c->pod, why);
		count(c, "failed");
		return km_cni_fail(c->e, KM_CNI_E_ENCRYPTION,
				   "IPsec is on and the pod's traffic cannot be encrypted", "%s", why);
	}
	if (rc != KMESH__IPC__CODE__OK) {
		json_decref(pod);
		/* fail-open: the map writer enrolls it once it is back (a reconcile, cni_state.h);
		 * the saved cookie stays so a DEL undoes whichever came first */
		if (c->nc->fail_policy == KM_CNI_FAIL_OPEN && c->enroll_env &&
		    km_cni_pending_save(c->nc->state_dir, c->inv->container_id, c->enroll_env,
					c->enroll_env_len, undo, sizeof(undo)) == 0) {
			km_cni_metric_inc(c->nc->state_dir, "kmesh_cni_pending_total");
			return unavailable(c, "map_writer", KM_CNI_E_MAP_WRITER,
					   "enroll netns cookie %" PRIu64 ": %s; the map writer will "
					   "enroll it once it is back", cookie, why);
		}
		km_cni_state_remove(c->nc->state_dir, c->inv->container_id);
		return unavailable(c, "map_writer", KM_CNI_E_MAP_WRITER, "enroll netns cookie %" PRIu64
				   ": %s", cookie, why);
	}
	if (annotate(c, pod, why, sizeof(why)) != 0) {
		json_decref(pod);
		if (unenroll(c, cookie, undo, sizeof(undo)) != KMESH__IPC__CODE__OK) {
			/* enrolled without its annotation and the undo failed: fail whatever the
			 * policy, keeping the state, so the runtime's DEL removes it */
			km_error("ADD %s: annotating failed and undoing the enroll failed too (%s); "
				 "the pod's netns cookie %" PRIu64 " stays in km_manage until DEL",
				 c->pod, undo, cookie);
			count(c, "failed");
			return km_cni_fail(c->e, KM_CNI_E_MAP_WRITER, "cannot annotate the pod",
					   "%s; undoing the enroll failed: %s", why, undo);
		}
		km_cni_state_remove(c->nc->state_dir, c->inv->container_id);
		return unavailable(c, "kube_api", KM_CNI_E_KUBE_API,
				   "annotating the pod %s=enabled: %s (enroll undone)", ANNOTATION,
				   why);
	}
	json_decref(pod);
	km_info("ADD %s: enrolled, netns cookie %" PRIu64 ", %zu address(es): %s", c->pod, cookie,
		c->nc->n_pod_ips, d.why);
	count(c, "enrolled");
	return pass_through(c);
}

/* Unenrolls exactly what the ADD enrolled, by the saved cookie: no API call and no netns
 * needed, so it works after either is gone, and twice. */
static int cmd_del(struct call *c)
{
	uint64_t saved = 0;
	char why[768];
	int rc;

	/* an enrollment left pending goes first: after this the map writer cannot apply it */
	if (km_cni_pending_remove(c->nc->state_dir, c->inv->container_id))
		km_info("DEL %s: its pending enrollment is withdrawn", c->pod);
	rc = km_cni_state_load(c->nc->state_dir, c->inv->container_id, &saved);
	if (rc == -ENOENT) {
		km_debug("DEL %s (%s): nothing enrolled", c->pod, c->inv->container_id);
		count(c, "not_enrolled");
		return 0;
	}
	if (rc) {
		count(c, "failed");
		return km_cni_fail(c->e, KM_CNI_E_IO, "cannot read the enrollment state",
				   "container %s: %s", c->inv->container_id, strerror(-rc));
	}
	rc = unenroll(c, saved, why, sizeof(why));
	if (rc != KMESH__IPC__CODE__OK)
		return unavailable(c, "map_writer", KM_CNI_E_MAP_WRITER,
				   "unenroll netns cookie %" PRIu64 ": %s (its row stays; DEL again "
				   "removes it)", saved, why);
	km_cni_state_remove(c->nc->state_dir, c->inv->container_id);
	km_info("DEL %s: unenrolled netns cookie %" PRIu64, c->pod, saved);
	count(c, "unenrolled");
	return 0;
}

static int cmd_check(struct call *c)
{
	struct km_enroll_decision d;
	km_envelope req = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__EnrollQuery q = KMESH__IPC__ENROLL_QUERY__INIT;
	char why[768];
	json_t *pod;
	uint64_t cookie;
	int rc;

	if (decide(c, &d, &pod, why, sizeof(why)) != 0)
		return unavailable(c, "kube_api", KM_CNI_E_KUBE_API, "%s", why);
	json_decref(pod);
	rc = km_netns_cookie(c->inv->netns, &cookie, why, sizeof(why));
	if (rc) {
		count(c, "failed");
		return km_cni_fail(c->e, rc == -ENOENT ? KM_CNI_E_CONTAINER : KM_CNI_E_IO,
				   "cannot read the pod's network namespace", "%s", why);
	}
	q.netns_cookie = cookie;
	req.body_case = KMESH__IPC__ENVELOPE__BODY_ENROLL_QUERY;
	req.enroll_query = &q;
	rc = map_writer_call(c, &req, why, sizeof(why));
	if (rc != KMESH__IPC__CODE__OK && rc != KMESH__IPC__CODE__NOT_FOUND)
		return unavailable(c, "map_writer", KM_CNI_E_MAP_WRITER, "%s", why);
	if ((rc == KMESH__IPC__CODE__OK) != d.enroll) {
		count(c, "failed");
		return km_cni_fail(c->e, KM_CNI_E_NOT_ENROLLED,
				   d.enroll ? "the pod should be enrolled but is not"
					    : "the pod is enrolled but should not be",
				   "pod %s, netns cookie %" PRIu64 ": %s", c->pod, cookie, d.why);
	}
	count(c, "ok");
	return 0;
}

int km_cni_run(const struct km_cni_invocation *inv, const struct km_cni_netconf *nc,
	       FILE *out, struct km_cni_error *e)
{
	struct call c = { .inv = inv, .nc = nc, .out = out, .e = e };
	int rc;

	if (inv->pod_name[0] && inv->pod_namespace[0])
		snprintf(c.pod, sizeof(c.pod), "%s/%s", inv->pod_namespace, inv->pod_name);
	else
		snprintf(c.pod, sizeof(c.pod), "container %.300s", inv->container_id);
	if (inv->command != KM_CNI_DEL && !nc->prev_result)
		return km_cni_fail(e, KM_CNI_E_CONFIG, "kmesh-cni cannot be used on its own",
				   "no prevResult: kmesh-cni is a chained plugin and must come "
				   "after the cluster's primary CNI plugin in a .conflist");
	if (inv->command == KM_CNI_CHECK && nc->cni_version[0] == '0' &&
	    strcmp(nc->cni_version, "0.4.0") < 0)
		return km_cni_fail(e, KM_CNI_E_VERSION, "CHECK needs cniVersion 0.4.0 or later",
				   "cniVersion %s", nc->cni_version);
	if (nc->ips_dropped)
		km_warn("%s %s: prevResult has more than %d IPs; %zu ignored",
			km_cni_command_name(inv->command), c.pod, KM_CNI_MAX_POD_IPS,
			nc->ips_dropped);
	if (inv->command != KM_CNI_DEL && (!inv->pod_name[0] || !inv->pod_namespace[0])) {
		km_info("%s %s: CNI_ARGS names no Kubernetes pod; passed through",
			km_cni_command_name(inv->command), c.pod);
		count(&c, "not_a_pod");
		return pass_through(&c);
	}
	switch (inv->command) {
	case KM_CNI_ADD:
		rc = cmd_add(&c);
		break;
	case KM_CNI_DEL:
		rc = cmd_del(&c);
		break;
	case KM_CNI_CHECK:
		rc = cmd_check(&c);
		break;
	default:
		rc = km_cni_fail(e, KM_CNI_E_ENV, "unexpected command", "%d", (int)inv->command);
		break;
	}
	if (c.kube_open)
		km_kube_close(&c.kube);
	free(c.enroll_env);
	return rc;
}
