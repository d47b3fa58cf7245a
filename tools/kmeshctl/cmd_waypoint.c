/* cmd_waypoint.c — `kmeshctl waypoint generate|apply|list|status|delete`: waypoints as Gateway
 * API Gateways (class istio-waypoint, one listener "mesh" on 15008 protocol HBONE), which
 * Istio's deployer turns into waypoint pods; labels istio.io/waypoint-for (--for) and
 * istio.io/rev (--revision, added to the labels: Kmesh's replaces them); the annotation
 * sidecar.istio.io/proxyImage (--image); written by server-side apply with field manager kmeshctl
 * (so a field kmeshctl set before and no longer asks for goes; a Gateway of another class by the
 * same name is refused, not turned into a waypoint). --enroll-namespace
 * labels the namespace istio.io/use-waypoint=NAME (a different waypoint already there needs
 * --overwrite); --wait polls each second until the Gateway is Programmed. */
#include "tools/kmeshctl/commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/kmeshctl/kube.h"

#define GW_API "/apis/gateway.networking.k8s.io/v1"
#define CLASS "istio-waypoint"
#define DEFAULT_IMAGE "ghcr.io/kmesh-net/waypoint:latest"

static const char usage[] =
	"usage: kmeshctl waypoint generate|apply|list|status|delete [flags] [NAME...]\n"
	"  generate   print the Gateway (YAML; -o json for JSON)\n"
	"  apply      create it, or update it when it exists\n"
	"  list       the waypoints of a namespace (-A: of all)\n"
	"  status     each waypoint's Programmed condition\n"
	"  delete     NAME... or --all of the namespace\n"
	"flags:\n"
	"  -n, --namespace NS      default \"default\"\n"
	"  --name NAME             default \"waypoint\" (\"none\" is reserved)\n"
	"  --for service|workload|all|none   traffic the waypoint takes (label istio.io/waypoint-for)\n"
	"  -r, --revision REV      Istio revision (label istio.io/rev)\n"
	"  --image IMAGE           waypoint image (default " DEFAULT_IMAGE ")\n"
	"  --enroll-namespace      apply: label the namespace istio.io/use-waypoint=NAME\n"
	"  --overwrite             ... even when it names another waypoint\n"
	"  -w, --wait              apply, status: wait until Programmed (--timeout, default 90 s)\n"
	"  --timeout SECONDS\n"
	"  -A, --all-namespaces    list\n"
	"  --all                   delete every waypoint of the namespace\n"
	"  Credentials: --kubeconfig, KUBECONFIG, ~/.kube/config, or the pod's service account.\n";

struct wp_args {
	const char *verb, *ns, *name, *for_, *rev, *image;
	int ns_given, enroll, overwrite, wait, all_ns, all;
	long timeout_s;
	char **names;
	int n_names;
};

static int parse(int argc, char **argv, struct wp_args *a)
{
	memset(a, 0, sizeof(*a));
	a->ns = "default";
	a->name = "waypoint";
	a->image = DEFAULT_IMAGE;
	a->timeout_s = 90;
	if (argc < 1)
		return -1;
	a->verb = argv[0];
	a->names = calloc((size_t)argc, sizeof(char *));
	if (!a->names)
		return -1;
	for (int i = 1; i < argc; i++) {
		const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if ((!strcmp(f, "-n") || !strcmp(f, "--namespace")) && v)
			a->ns = v, a->ns_given = 1, i++;
		else if (!strcmp(f, "--name") && v)
			a->name = *v ? v : "waypoint", i++;
		else if (!strcmp(f, "--for") && v)
			a->for_ = v, i++;
		else if ((!strcmp(f, "-r") || !strcmp(f, "--revision")) && v)
			a->rev = v, i++;
		else if (!strcmp(f, "--image") && v)
			a->image = v, i++;
		else if (!strcmp(f, "--timeout") && v && atol(v) > 0)
			a->timeout_s = atol(v), i++;
		else if (!strcmp(f, "--enroll-namespace"))
			a->enroll = 1;
		else if (!strcmp(f, "--overwrite"))
			a->overwrite = 1;
		else if (!strcmp(f, "-w") || !strcmp(f, "--wait"))
			a->wait = 1;
		else if (!strcmp(f, "-A") || !strcmp(f, "--all-namespaces"))
			a->all_ns = 1;
		else if (!strcmp(f, "--all"))
			a->all = 1;
		else if (f[0] != '-' && !strcmp(a->verb, "delete"))
			a->names[a->n_names++] = argv[i];
		else
			return -1;
	}
	return 0;
}

/* Names the API would refuse, refused here with the reason. Returns 0, or 2 (usage). */
static int check_args(const struct wp_args *a)
{
	static const char *const fors[] = { "service", "workload", "all", "none" };
	int ok = !a->for_;

	for (int i = 0; i < 4 && !ok; i++)
		ok = !strcmp(a->for_, fors[i]);
	if (!ok) {
		fprintf(stderr, "kmeshctl: --for must be service, workload, all or none, not '%s'\n", a->for_);
		return 2;
	}
	if (!strcmp(a->name, "none")) {
		fprintf(stderr, "kmeshctl: 'none' cannot name a waypoint: istio.io/use-waypoint=none means "
				"\"use no waypoint\"\n");
		return 2;
	}
	if (!km_kube_valid_name(a->name) || !km_kube_valid_name(a->ns) || strlen(a->ns) > 63) {
		fprintf(stderr, "kmeshctl: '%s' in '%s' is not a valid Kubernetes name\n", a->name, a->ns);
		return 2;
	}
	for (int i = 0; i < a->n_names; i++) /* they go into request paths */
		if (!km_kube_valid_name(a->names[i])) {
			fprintf(stderr, "kmeshctl: '%s' is not a valid Kubernetes name\n", a->names[i]);
			return 2;
		}
	return 0;
}

/* The Gateway (new reference); namespace left out when none was given (generate). */
static json_t *gateway(const struct wp_args *a, int with_ns)
{
	json_t *labels = json_object(), *meta, *gw;

	if (a->for_)
		json_object_set_new(labels, "istio.io/waypoint-for", json_string(a->for_));
	if (a->rev)
		json_object_set_new(labels, "istio.io/rev", json_string(a->rev));
	/* in the order people write them: name, namespace, labels, annotations */
	meta = json_pack("{s:s}", "name", a->name);
	if (with_ns)
		json_object_set_new(meta, "namespace", json_string(a->ns));
	if (json_object_size(labels))
		json_object_set(meta, "labels", labels);
	json_decref(labels);
	json_object_set_new(meta, "annotations",
			    json_pack("{s:s}", "sidecar.istio.io/proxyImage", a->image));
	gw = json_pack("{s:s, s:s, s:o, s:{s:s, s:[{s:s, s:i, s:s}]}}", "apiVersion",
		       "gateway.networking.k8s.io/v1", "kind", "Gateway", "metadata", meta, "spec",
		       "gatewayClassName", CLASS, "listeners", "name", "mesh", "port", 15008,
		       "protocol", "HBONE");
	return gw;
}

static void crd_hint(const char *err)
{
	if (km_ctl_kube_api_missing(err))
		fprintf(stderr, "kmeshctl: the Kubernetes Gateway API CRDs are missing from this cluster: "
				"install them (gateway.networking.k8s.io, standard channel) first\n");
	else
		fprintf(stderr, "kmeshctl: %s\n", err);
}

/* The Programmed condition of a Gateway: status ("Unknown" when none yet), reason, message. */
static void programmed(const json_t *gw, const char **status, const char **reason,
		       const char **message)
{
	json_t *conds = json_object_get(json_object_get(gw, "status"), "conditions"), *c;
	size_t i;

	*status = "Unknown";
	*reason = *message = "";
	json_array_foreach(conds, i, c)
		if (!strcmp(json_string_value(json_object_get(c, "type")) ?: "", "Programmed")) {
			*status = json_string_value(json_object_get(c, "status")) ?: "Unknown";
			*reason = json_string_value(json_object_get(c, "reason")) ?: "";
			*message = json_string_value(json_object_get(c, "message")) ?: "";
		}
}

static int is_waypoint(const json_t *gw)
{
	const char *cls = json_string_value(json_object_get(json_object_get(gw, "spec"), "gatewayClassName"));

	return cls && !strcmp(cls, CLASS);
}

/* Poll until the Gateway is Programmed, or timeout. Returns 0, or 1 (printed). */
static int wait_programmed(struct km_kube_client *c, const struct wp_args *a, const char *ns,
			   const char *name)
{
	char path[1024], err[1024];
	time_t deadline = time(NULL) + a->timeout_s;
	const char *st = "Unknown", *reason = "", *msg = "";

	snprintf(path, sizeof(path), GW_API "/namespaces/%s/gateways/%s", ns, name);
	for (;;) {
		json_t *gw = NULL;
		int code = km_ctl_kube_call(c, "GET", path, NULL, &gw, err, sizeof(err));

		if (code == 200) {
			programmed(gw, &st, &reason, &msg);
			if (!strcmp(st, "True")) {
				json_decref(gw);
				return 0;
			}
			/* the strings belong to gw: copy what the timeout message needs */
			{
				static char r[256], m[512];

				snprintf(r, sizeof(r), "%s", reason);
				snprintf(m, sizeof(m), "%s", msg);
				reason = r;
				msg = m;
			}
		} else if (code != 404 || km_ctl_kube_api_missing(err)) {
			crd_hint(err);
			json_decref(gw);
			return 1;
		}
		json_decref(gw);
		if (time(NULL) >= deadline)
			break;
		sleep(1);
	}
	fprintf(stderr, "kmeshctl: waypoint %s/%s is not Programmed after %ld s%s%s%s%s\n", ns, name,
		a->timeout_s, *reason ? ": " : "", reason, *msg ? ": " : "", msg);
	return 1;
}

/* Before anything is written: may the namespace be enrolled into this waypoint? Returns 0, or 1
 * (printed). */
static int check_namespace(struct km_kube_client *c, const struct wp_args *a)
{
	char path[512], err[1024];
	json_t *ns = NULL, *labels;
	const char *cur, *mode;

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s", a->ns);
	if (km_ctl_kube_call(c, "GET", path, NULL, &ns, err, sizeof(err)) != 200) {
		fprintf(stderr, "kmeshctl: namespace %s: %s\n", a->ns, err);
		return 1;
	}
	labels = json_object_get(json_object_get(ns, "metadata"), "labels");
	cur = json_string_value(json_object_get(labels, "istio.io/use-waypoint"));
	mode = json_string_value(json_object_get(labels, "istio.io/dataplane-mode"));
	if (cur && strcmp(cur, a->name) && !a->overwrite) {
		fprintf(stderr, "kmeshctl: namespace %s already uses waypoint %s; --overwrite to use %s\n",
			a->ns, cur, a->name);
		json_decref(ns);
		return 1;
	}
	if (!mode || strcmp(mode, "Kmesh"))
		fprintf(stderr, "kmeshctl: warning: namespace %s is not labelled istio.io/dataplane-mode=Kmesh: "
				"its pods are not in the mesh, so the waypoint takes none of their traffic\n",
			a->ns);
	json_decref(ns);
	return 0;
}

static int enroll_namespace(struct km_kube_client *c, const struct wp_args *a)
{
	char path[512], err[1024], *body;
	json_t *patch;
	int code;

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s", a->ns);
	patch = json_pack("{s:{s:{s:s}}}", "metadata", "labels", "istio.io/use-waypoint", a->name);
	body = json_dumps(patch, JSON_COMPACT);
	json_decref(patch);
	code = body ? km_ctl_kube_call(c, "PATCH", path, body, NULL, err, sizeof(err)) : -1;
	free(body);
	if (code != 200) {
		fprintf(stderr, "kmeshctl: labelling namespace %s: %s\n", a->ns, code < 0 && !body ? "out of memory" : err);
		return 1;
	}
	printf("namespace %s labelled istio.io/use-waypoint=%s\n", a->ns, a->name);
	return 0;
}

static int apply(struct km_kube_client *c, const struct wp_args *a)
{
	char path[512], err[1024], *body;
	json_t *gw = gateway(a, 1), *cur = NULL;
	int code;

	if (a->enroll && check_namespace(c, a) != 0) {
		json_decref(gw);
		return 1;
	}
	body = gw ? json_dumps(gw, JSON_COMPACT) : NULL;
	json_decref(gw);
	if (!body) {
		fprintf(stderr, "kmeshctl: out of memory\n");
		return 1;
	}
	/* a Gateway of that name that is not a waypoint is someone else's: not turned into one */
	snprintf(path, sizeof(path), GW_API "/namespaces/%s/gateways/%s", a->ns, a->name);
	code = km_ctl_kube_call(c, "GET", path, NULL, &cur, err, sizeof(err));
	if (code == 200 && !is_waypoint(cur)) {
		fprintf(stderr, "kmeshctl: Gateway %s/%s exists and is not a waypoint (class %s); choose "
				"another --name\n", a->ns, a->name,
			json_string_value(json_object_get(json_object_get(cur, "spec"), "gatewayClassName"))
				?: "none");
		json_decref(cur);
		free(body);
		return 1;
	}
	json_decref(cur);
	if (code != 200 && (code != 404 || km_ctl_kube_api_missing(err))) {
		crd_hint(err);
		free(body);
		return 1;
	}
	snprintf(path, sizeof(path), GW_API "/namespaces/%s/gateways/%s?fieldManager=kmeshctl&force=true",
		 a->ns, a->name);
	code = km_ctl_kube_call(c, "APPLY", path, body, NULL, err, sizeof(err));
	free(body);
	if (code != 200 && code != 201) {
		crd_hint(err);
		return 1;
	}
	printf("waypoint %s/%s %s\n", a->ns, a->name, code == 201 ? "created" : "configured");
	if (a->enroll && enroll_namespace(c, a) != 0)
		return 1;
	if (a->wait && wait_programmed(c, a, a->ns, a->name) != 0)
		return 1;
	return 0;
}

/* The waypoint Gateways of the namespace (or of all): a new reference, or NULL (printed). */
static json_t *waypoints(struct km_kube_client *c, const struct wp_args *a, int all_ns)
{
	char path[512], err[1024];
	json_t *list = NULL, *out, *gw;
	size_t i;

	if (all_ns)
		snprintf(path, sizeof(path), GW_API "/gateways");
	else
		snprintf(path, sizeof(path), GW_API "/namespaces/%s/gateways", a->ns);
	if (km_ctl_kube_call(c, "GET", path, NULL, &list, err, sizeof(err)) != 200) {
		crd_hint(err);
		return NULL;
	}
	out = json_array();
	json_array_foreach(json_object_get(list, "items"), i, gw)
		if (is_waypoint(gw))
			json_array_append(out, gw);
	json_decref(list);
	return out;
}

static int list(const struct km_ctl *ctl, struct km_kube_client *c, const struct wp_args *a, int status)
{
	json_t *gws = waypoints(c, a, a->all_ns), *rows, *gw;
	size_t i;
	int rc = 0;

	if (!gws)
		return 1;
	if (status && a->wait) /* every one Programmed first, then the table */
		json_array_foreach(gws, i, gw)
			rc |= wait_programmed(
				c, a,
				json_string_value(json_object_get(json_object_get(gw, "metadata"), "namespace")),
				json_string_value(json_object_get(json_object_get(gw, "metadata"), "name")));
	if (status && a->wait) { /* read again: the conditions moved */
		json_decref(gws);
		if (!(gws = waypoints(c, a, a->all_ns)))
			return 1;
	}
	rows = json_array();
	json_array_foreach(gws, i, gw) {
		json_t *meta = json_object_get(gw, "metadata");
		const char *st, *reason, *msg, *rev;
		json_t *r = json_object();

		programmed(gw, &st, &reason, &msg);
		rev = json_string_value(json_object_get(json_object_get(meta, "labels"), "istio.io/rev"));
		if (a->all_ns || status)
			json_object_set(r, "namespace", json_object_get(meta, "namespace"));
		json_object_set(r, "name", json_object_get(meta, "name"));
		if (status) {
			json_object_set_new(r, "programmed", json_string(st));
			json_object_set_new(r, "reason", json_string(reason));
			json_object_set_new(r, "message", json_string(msg));
		} else {
			json_object_set_new(r, "revision", json_string(rev ? rev : "default"));
			json_object_set_new(r, "programmed", json_string(st));
		}
		json_array_append_new(rows, r);
	}
	if (json_array_size(rows) || ctl->format != KM_OUT_TABLE)
		km_out_print(stdout, rows, ctl->format);
	else
		fprintf(stderr, "no waypoints in %s\n", a->all_ns ? "any namespace" : a->ns);
	json_decref(rows);
	json_decref(gws);
	return rc;
}

static int delete_one(struct km_kube_client *c, const char *ns, const char *name)
{
	char path[512], err[1024];
	int code;

	snprintf(path, sizeof(path), GW_API "/namespaces/%s/gateways/%s", ns, name);
	code = km_ctl_kube_call(c, "DELETE", path, NULL, NULL, err, sizeof(err));
	if (code == 200 || code == 202) {
		printf("waypoint %s/%s deleted\n", ns, name);
		return 0;
	}
	if (code == 404 && !km_ctl_kube_api_missing(err))
		fprintf(stderr, "kmeshctl: no waypoint %s in %s\n", name, ns);
	else
		crd_hint(err);
	return 1;
}

static int delete(struct km_kube_client *c, const struct wp_args *a)
{
	json_t *gws, *gw;
	int rc = 0;
	size_t i;

	if (a->all && a->n_names) {
		fprintf(stderr, "kmeshctl: --all or names, not both\n");
		return 2;
	}
	if (!a->all) {
		if (!a->n_names) {
			fprintf(stderr, "kmeshctl: delete needs NAME... or --all\n");
			return 2;
		}
		for (int k = 0; k < a->n_names; k++)
			rc |= delete_one(c, a->ns, a->names[k]);
		return rc;
	}
	if (!(gws = waypoints(c, a, 0)))
		return 1;
	json_array_foreach(gws, i, gw)
		rc |= delete_one(c, a->ns,
				 json_string_value(json_object_get(json_object_get(gw, "metadata"), "name")));
	if (!json_array_size(gws))
		fprintf(stderr, "no waypoints in %s\n", a->ns);
	json_decref(gws);
	return rc;
}

int km_cmd_waypoint(const struct km_ctl *ctl, int argc, char **argv)
{
	struct km_kube_client c;
	struct wp_args a;
	int rc;

	if (km_cmd_wants_help(argc, argv, usage))
		return 0;
	if (parse(argc, argv, &a) != 0 ||
	    (strcmp(a.verb, "generate") && strcmp(a.verb, "apply") && strcmp(a.verb, "list") &&
	     strcmp(a.verb, "status") && strcmp(a.verb, "delete"))) {
		free(a.names);
		fputs(usage, stderr);
		return 2;
	}
	if ((rc = check_args(&a)) != 0) {
		free(a.names);
		return rc;
	}
	if (!strcmp(a.verb, "generate")) {
		json_t *gw = gateway(&a, a.ns_given);

		km_out_print(stdout, gw, ctl->format == KM_OUT_TABLE ? KM_OUT_YAML : ctl->format);
		json_decref(gw);
		free(a.names);
		return 0;
	}
	if (km_ctl_kube_open(ctl, &c) != 0) {
		free(a.names);
		return 1;
	}
	if (!strcmp(a.verb, "apply"))
		rc = apply(&c, &a);
	else if (!strcmp(a.verb, "delete"))
		rc = delete(&c, &a);
	else
		rc = list(ctl, &c, &a, !strcmp(a.verb, "status"));
	km_kube_close(&c);
	free(a.names);
	return rc;
}
