/* plugin.c — the CNI commands (see plugin.h): a thin client of the node's CNI agent. The plugin
 * reads what only it can (the pod's network namespace: its cookie and the node side of its
 * interface), keeps the cookie for DEL, and asks the agent, which decides from its cache of the
 * node's pods and enrolls through the map writer. */
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
#include "services/cni-plugin/host_link.h"
#include "shared/log.h"
#include "shared/netns.h"

typedef Kmesh__Ipc__CniOutcome__Result cni_result;
#define R(x) KMESH__IPC__CNI_OUTCOME__RESULT__##x

struct call {
	const struct km_cni_invocation *inv;
	const struct km_cni_netconf *nc;
	FILE *out;
	struct km_cni_error *e;
	char pod[520]; /* "namespace/name" */
	uint32_t host_ifindex; /* the node side of the pod's interface (0: none found) */
	uint8_t *call_env;     /* the ADD sent, packed: kept as undecided if the agent is away */
	size_t call_env_len;
};

/* What became of a call to the agent. */
enum agent_reach {
	AGENT_ANSWERED = 0,
	AGENT_UNREACHED,  /* nothing was sent */
	AGENT_NO_ANSWER,  /* sent, no answer: it may have acted */
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

/* The mesh is unavailable (reason "kube_api", "map_writer" or "node_agent"): the fail policy
 * decides. */
static int unavailable(struct call *c, const char *reason, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int unavailable(struct call *c, const char *reason, int code, const char *fmt, ...)
{
	char details[800], series[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(details, sizeof(details), fmt, ap);
	va_end(ap);
	if (c->nc->fail_policy == KM_CNI_FAIL_CLOSED) {
		count(c, "failed");
		return km_cni_fail(c->e, code, "the mesh is unavailable (failPolicy closed)", "%s",
				   details);
	}
	km_warn("%s %s: fail-open, the pod runs without the mesh: %s",
		km_cni_command_name(c->inv->command), c->pod, details);
	snprintf(series, sizeof(series), "kmesh_cni_fail_open_total{reason=\"%s\"}", reason);
	km_cni_metric_inc(c->nc->state_dir, series);
	count(c, "fail_open");
	return pass_through(c);
}

/* One call to the agent: *res and why from its answer. */
static enum agent_reach agent_call(struct call *c, Kmesh__Ipc__CniCall *cc, cni_result *res,
				   int *pending, char *why, size_t whylen)
{
	struct km_sync_client cl;
	km_envelope req = KMESH__IPC__ENVELOPE__INIT, *rep = NULL;
	Kmesh__Ipc__Code code = KMESH__IPC__CODE__OK;
	char msg[256] = "";
	int rc;

	req.body_case = KMESH__IPC__ENVELOPE__BODY_CNI_CALL;
	req.cni_call = cc;
	if (cc->command == KMESH__IPC__CNI_CALL__COMMAND__ADD) {
		free(c->call_env);
		c->call_env = km_msg_pack(&req, &c->call_env_len);
	}
	rc = km_sync_connect(&cl, c->nc->agent_socket, KMESH__IPC__ROLE__ROLE_CNI, "kmesh-cni",
			     (int)c->nc->timeout_ms, &code, msg, sizeof(msg));
	if (rc) {
		snprintf(why, whylen, "the node's CNI agent at %s: %s%s%s", c->nc->agent_socket,
			 strerror(-rc), *msg ? ": " : "", msg);
		return AGENT_UNREACHED;
	}
	rc = km_sync_call(&cl, &req, &rep);
	km_sync_close(&cl);
	if (rc) {
		snprintf(why, whylen, "the node's CNI agent at %s: %s (the request may have been "
			 "applied)", c->nc->agent_socket, strerror(-rc));
		return AGENT_NO_ANSWER;
	}
	if (rep->reply->code != KMESH__IPC__CODE__OK ||
	    rep->reply->body_case != KMESH__IPC__REPLY__BODY_CNI) {
		snprintf(why, whylen, "the node's CNI agent refused the call: %s%s%s",
			 km_msg_code_name(rep->reply->code), rep->reply->message ? ": " : "",
			 rep->reply->message ? rep->reply->message : "");
		km_msg_free(rep);
		return AGENT_UNREACHED; /* nothing applied: as if it were away */
	}
	*res = rep->reply->cni->result;
	*pending = rep->reply->cni->pending;
	snprintf(why, whylen, "%s", rep->reply->cni->why ? rep->reply->cni->why : "");
	km_msg_free(rep);
	return AGENT_ANSWERED;
}

static int peer_of_ifname(void *arg, char *err, size_t errlen)
{
	struct call *c = arg;

	return km_host_link_peer(c->inv->ifname, &c->host_ifindex, err, errlen);
}

/* In an enrolled pod: an accepted socket takes its SYN's mark, and the kernel's own replies their
 * packet's, so the tunnel's connections to the pod's applications can come from the HBONE
 * caller's address (shared/netns.h). The plugin sets
 * it because it can: it runs as the node's root, the map writer in a container whose /proc/sys
 * is read-only. */
static int mark_sysctls_in_pod(void *arg, char *err, size_t errlen)
{
	(void)arg;
	return km_netns_mark_sysctls_set(err, errlen);
}

static void init_call(struct call *c, Kmesh__Ipc__CniCall *cc, Kmesh__Ipc__Enroll *en,
		      Kmesh__Ipc__CniCall__Command command, uint64_t cookie)
{
	kmesh__ipc__cni_call__init(cc);
	kmesh__ipc__enroll__init(en);
	cc->command = command;
	cc->container_id = (char *)c->inv->container_id;
	cc->pod_namespace = (char *)c->inv->pod_namespace;
	cc->pod_name = (char *)c->inv->pod_name;
	en->netns_cookie = cookie;
	en->pod = c->pod;
	cc->enroll = en;
}

static int cmd_add(struct call *c)
{
	Kmesh__Ipc__CniCall cc;
	Kmesh__Ipc__Enroll en;
	ProtobufCBinaryData bytes[KM_CNI_MAX_POD_IPS];
	uint8_t raw[KM_CNI_MAX_POD_IPS][16];
	char why[768], err[400];
	cni_result res = R(RESULT_UNSPECIFIED);
	uint64_t cookie;
	int rc, pending = 0;
	enum agent_reach reach;

	rc = km_netns_cookie(c->inv->netns, &cookie, why, sizeof(why));
	if (rc) {
		count(c, "failed");
		return km_cni_fail(c->e, rc == -ENOENT ? KM_CNI_E_CONTAINER : KM_CNI_E_IO,
				   "cannot read the pod's network namespace", "%s", why);
	}
	/* state first: whatever happens next, a DEL finds the cookie to undo */
	if (km_cni_state_init(c->nc->state_dir, why, sizeof(why)) ||
	    km_cni_state_save(c->nc->state_dir, c->inv->container_id, cookie, c->pod, why,
			      sizeof(why))) {
		count(c, "failed");
		return km_cni_fail(c->e, KM_CNI_E_IO, "cannot save the enrollment state", "%s", why);
	}
	init_call(c, &cc, &en, KMESH__IPC__CNI_CALL__COMMAND__ADD, cookie);
	for (size_t i = 0; i < c->nc->n_pod_ips; i++) {
		bytes[i].len = km_addr_to_bytes(&c->nc->pod_ips[i], raw[i]);
		bytes[i].data = raw[i];
	}
	en.n_addresses = c->nc->n_pod_ips;
	en.addresses = bytes;
	/* lets the map writer close this pod's connections that a policy change denies */
	if (c->inv->netns[0] == '/' && strlen(c->inv->netns) < KM_NETNS_PATH_MAX)
		en.netns_path = (char *)c->inv->netns;
	else /* optional: never a reason to fail the pod */
		km_warn("ADD %s: the netns path is not absolute or longer than %d bytes; its open "
			"connections will not be closed when policies deny them", c->pod,
			KM_NETNS_PATH_MAX - 1);
	/* where IPsec's encrypt program goes; without it the map writer refuses the pod when
	 * IPsec is on, and says why */
	if (km_netns_call(c->inv->netns, peer_of_ifname, c, err, sizeof(err)) != 0)
		km_warn("ADD %s: cannot find the node side of %s: %s", c->pod,
			c->inv->ifname ? c->inv->ifname : "(no CNI_IFNAME)", err);
	else if (!c->host_ifindex)
		km_info("ADD %s: %s is not a veth: no node-side interface", c->pod, c->inv->ifname);
	en.host_ifindex = c->host_ifindex;

	reach = agent_call(c, &cc, &res, &pending, why, sizeof(why));
	if (reach != AGENT_ANSWERED) {
		/* the agent decides it once it is back (its reconcile); a DEL withdraws it first */
		if (c->nc->fail_policy == KM_CNI_FAIL_OPEN && c->call_env &&
		    km_cni_undecided_save(c->nc->state_dir, c->inv->container_id, c->call_env,
					  c->call_env_len, err, sizeof(err)) == 0)
			return unavailable(c, "node_agent", KM_CNI_E_MAP_WRITER,
					   "%s; the agent decides the pod once it is back", why);
		if (reach == AGENT_NO_ANSWER) { /* it may have enrolled: DEL must find the cookie */
			count(c, "failed");
			return km_cni_fail(c->e, KM_CNI_E_MAP_WRITER,
					   "the node's CNI agent did not answer", "%s", why);
		}
		km_cni_state_remove(c->nc->state_dir, c->inv->container_id);
		return unavailable(c, "node_agent", KM_CNI_E_MAP_WRITER, "%s", why);
	}
	switch (res) {
	case R(ENROLLED):
		km_info("ADD %s: enrolled, netns cookie %" PRIu64 ", %zu address(es): %s", c->pod,
			cookie, c->nc->n_pod_ips, why);
		if (km_netns_call(c->inv->netns, mark_sysctls_in_pod, NULL, err, sizeof(err)) != 0)
			km_warn("ADD %s: HBONE streams to it will reach its applications from "
				"127.0.0.6, not the caller's address: %s", c->pod, err);
		count(c, "enrolled");
		return pass_through(c);
	case R(NOT_ENROLLED):
		km_cni_state_remove(c->nc->state_dir, c->inv->container_id);
		km_info("ADD %s: not enrolled: %s", c->pod, why);
		count(c, "not_enrolled");
		return pass_through(c);
	case R(KUBE_UNAVAILABLE): /* the agent keeps it and decides once the API answers */
		return unavailable(c, "kube_api", KM_CNI_E_KUBE_API, "%s", why);
	case R(MAP_WRITER_UNAVAILABLE):
		return unavailable(c, "map_writer", KM_CNI_E_MAP_WRITER,
				   "enroll netns cookie %" PRIu64 ": %s%s", cookie, why,
				   pending ? "; the agent enrolls it once the map writer is back" : "");
	case R(ENCRYPTION_UNAVAILABLE):
		/* not an unavailable mesh: started anyway, the pod would talk to other nodes in
		 * clear, so no fail policy lets it through */
		km_cni_state_remove(c->nc->state_dir, c->inv->container_id);
		km_error("ADD %s: refused: %s", c->pod, why);
		count(c, "failed");
		return km_cni_fail(c->e, KM_CNI_E_ENCRYPTION,
				   "IPsec is on and the pod's traffic cannot be encrypted", "%s", why);
	case R(ENROLL_UNKNOWN):
	default: /* the state stays, so the runtime's DEL removes whatever is there */
		count(c, "failed");
		return km_cni_fail(c->e, KM_CNI_E_MAP_WRITER, "the kmesh map writer did not answer",
				   "enroll netns cookie %" PRIu64 ": %s", cookie, why);
	}
}

/* Unenrolls exactly what the ADD enrolled, by the saved cookie: no netns needed, so it works
 * after the namespace is gone, and twice. */
static int cmd_del(struct call *c)
{
	Kmesh__Ipc__CniCall cc;
	Kmesh__Ipc__Enroll en;
	cni_result res = R(RESULT_UNSPECIFIED);
	uint64_t saved = 0;
	char why[768];
	int rc, pending = 0;

	/* an ADD the agent has not decided goes first: after this it never will */
	if (km_cni_undecided_remove(c->nc->state_dir, c->inv->container_id))
		km_info("DEL %s: its undecided enrollment is withdrawn", c->pod);
	/* and one left to an earlier version's map writer reconcile */
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
	init_call(c, &cc, &en, KMESH__IPC__CNI_CALL__COMMAND__DEL, saved);
	if (agent_call(c, &cc, &res, &pending, why, sizeof(why)) != AGENT_ANSWERED)
		return unavailable(c, "node_agent", KM_CNI_E_MAP_WRITER,
				   "unenroll netns cookie %" PRIu64 ": %s (the agent removes it "
				   "once it is back and the pod is gone; DEL again removes it)",
				   saved, why);
	if (res != R(UNENROLLED) && res != R(NOT_ENROLLED))
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
	Kmesh__Ipc__CniCall cc;
	Kmesh__Ipc__Enroll en;
	cni_result res = R(RESULT_UNSPECIFIED);
	char why[768];
	uint64_t cookie;
	int rc, pending = 0;

	rc = km_netns_cookie(c->inv->netns, &cookie, why, sizeof(why));
	if (rc) {
		count(c, "failed");
		return km_cni_fail(c->e, rc == -ENOENT ? KM_CNI_E_CONTAINER : KM_CNI_E_IO,
				   "cannot read the pod's network namespace", "%s", why);
	}
	init_call(c, &cc, &en, KMESH__IPC__CNI_CALL__COMMAND__CHECK, cookie);
	if (agent_call(c, &cc, &res, &pending, why, sizeof(why)) != AGENT_ANSWERED)
		return unavailable(c, "node_agent", KM_CNI_E_MAP_WRITER, "%s", why);
	switch (res) {
	case R(CONSISTENT):
		count(c, "ok");
		return 0;
	case R(INCONSISTENT):
		count(c, "failed");
		return km_cni_fail(c->e, KM_CNI_E_NOT_ENROLLED, "enrollment differs from the rules",
				   "pod %s, netns cookie %" PRIu64 ": %s", c->pod, cookie, why);
	case R(KUBE_UNAVAILABLE):
		return unavailable(c, "kube_api", KM_CNI_E_KUBE_API, "%s", why);
	default:
		return unavailable(c, "map_writer", KM_CNI_E_MAP_WRITER, "%s", why);
	}
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
	free(c.call_env);
	return rc;
}
