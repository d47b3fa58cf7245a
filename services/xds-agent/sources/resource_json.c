/* resource_json.c — the embedded-config file: proto3 JSON mapped onto the same workload-API
 * messages istiod sends, then validated by resource_pb.c (see resource_json.h). This file only
 * maps JSON shapes (names in either spelling, enums by name or number, integers as numbers or
 * strings, bytes as base64 or, for addresses, IP text); it decides nothing about validity beyond
 * types and sizes. */
#include "services/xds-agent/sources/resource_json.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "services/xds-agent/sources/json_pb.h"
#include "services/xds-agent/ads/resource_pb.h"
#include "shared/log.h"

typedef Kmesh__Workload__Service pb_service;
typedef Kmesh__Workload__Workload pb_workload;


static int j_network_address(const json_t *o, Kmesh__Workload__NetworkAddress **out,
			     const char *path, char *err)
{
	Kmesh__Workload__NetworkAddress *a = malloc(sizeof(*a));
	json_t *ip, *len;

	if (!a)
		return km_jbad(err, path, "out of memory");
	kmesh__workload__network_address__init(a);
	*out = a;
	if (!json_is_object(o) || !(ip = km_jfield(o, "address", NULL)))
		return km_jbad(err, path, "must be an object with an 'address'");
	if (km_jstring(o, "network", NULL, &a->network, path, err) || km_jip_bytes(ip, &a->address, path, err))
		return -1;
	len = km_jfield(o, "length", NULL);
	return len ? km_ju32(len, &a->length, path, "length", err) : 0;
}

static int j_ports(const json_t *arr, Kmesh__Workload__Port ***out, size_t *n, const char *path,
		   char *err)
{
	size_t i;
	json_t *p;
	char sub[192];

	if (!KM_JALLOC_ARRAY(*out, json_array_size(arr)))
		return km_jbad(err, path, "out of memory");
	json_array_foreach(arr, i, p) {
		Kmesh__Workload__Port *port = malloc(sizeof(*port));
		json_t *sp, *tp;

		snprintf(sub, sizeof(sub), "%s.ports[%zu]", path, i);
		if (!port)
			return km_jbad(err, sub, "out of memory");
		kmesh__workload__port__init(port);
		(*out)[(*n)++] = port;
		if (!json_is_object(p))
			return km_jbad(err, sub, "must be an object");
		sp = km_jfield(p, "servicePort", "service_port");
		tp = km_jfield(p, "targetPort", "target_port");
		if ((sp && km_ju32(sp, &port->service_port, sub, "servicePort", err)) ||
		    (tp && km_ju32(tp, &port->target_port, sub, "targetPort", err)))
			return -1;
	}
	return 0;
}

static int j_waypoint(const json_t *o, Kmesh__Workload__GatewayAddress **out, const char *path,
		      char *err)
{
	Kmesh__Workload__GatewayAddress *g = malloc(sizeof(*g));
	json_t *h, *a, *port;

	if (!g)
		return km_jbad(err, path, "out of memory");
	kmesh__workload__gateway_address__init(g);
	*out = g;
	if (!json_is_object(o))
		return km_jbad(err, path, "'waypoint' must be an object");
	h = km_jfield(o, "hostname", NULL);
	a = km_jfield(o, "address", NULL);
	if (h && json_is_object(h)) {
		Kmesh__Workload__NamespacedHostname *nh = malloc(sizeof(*nh));

		if (!nh)
			return km_jbad(err, path, "out of memory");
		kmesh__workload__namespaced_hostname__init(nh);
		g->destination_case = KMESH__WORKLOAD__GATEWAY_ADDRESS__DESTINATION_HOSTNAME;
		g->hostname = nh;
		if (km_jstring(h, "namespace", NULL, &nh->namespace_, path, err) ||
		    km_jstring(h, "hostname", NULL, &nh->hostname, path, err))
			return -1;
	} else if (a) {
		g->destination_case = KMESH__WORKLOAD__GATEWAY_ADDRESS__DESTINATION_ADDRESS;
		if (j_network_address(a, &g->address, path, err))
			return -1;
	}
	port = km_jfield(o, "hboneMtlsPort", "hbone_mtls_port");
	return port ? km_ju32(port, &g->hbone_mtls_port, path, "hboneMtlsPort", err) : 0;
}

static const char *const lb_modes[] = { "UNSPECIFIED_MODE", "STRICT", "FAILOVER", "PASSTHROUGH" };
static const char *const scopes[] = { "UNSPECIFIED_SCOPE", "REGION", "ZONE", "SUBZONE",
				      "NODE", "CLUSTER", "NETWORK" };
static const char *const health[] = { "ONLY_HEALTHY", "ALLOW_ALL" };

static int j_load_balancing(const json_t *o, Kmesh__Workload__LoadBalancing **out, const char *path,
			    char *err)
{
	Kmesh__Workload__LoadBalancing *lb = malloc(sizeof(*lb));
	json_t *prefs, *mode, *hp, *v;
	size_t i;

	if (!lb)
		return km_jbad(err, path, "out of memory");
	kmesh__workload__load_balancing__init(lb);
	*out = lb;
	if (!json_is_object(o))
		return km_jbad(err, path, "'loadBalancing' must be an object");
	if (km_jarray(o, "routingPreference", "routing_preference", KM_RES_MAX_SCOPES, &prefs, path, err))
		return -1;
	if (prefs) {
		if (!KM_JALLOC_ARRAY(lb->routing_preference, json_array_size(prefs)))
			return km_jbad(err, path, "out of memory");
		json_array_foreach(prefs, i, v) {
			int sc;

			if (km_jenum(v, scopes, 7, &sc, path, "routingPreference", err))
				return -1;
			lb->routing_preference[lb->n_routing_preference++] = sc;
		}
	}
	mode = km_jfield(o, "mode", NULL);
	hp = km_jfield(o, "healthPolicy", "health_policy");
	if (mode) {
		int m;

		if (km_jenum(mode, lb_modes, 4, &m, path, "mode", err))
			return -1;
		lb->mode = m;
	}
	if (hp) {
		int h;

		if (km_jenum(hp, health, 2, &h, path, "healthPolicy", err))
			return -1;
		lb->health_policy = (uint32_t)h;
	}
	return 0;
}

static int j_service(const json_t *o, pb_service *m, const char *path, char *err)
{
	json_t *addrs, *ports, *v;
	size_t i;

	if (!json_is_object(o))
		return km_jbad(err, path, "must be an object");
	if (km_jstring(o, "name", NULL, &m->name, path, err) ||
	    km_jstring(o, "namespace", NULL, &m->namespace_, path, err) ||
	    km_jstring(o, "hostname", NULL, &m->hostname, path, err) ||
	    km_jarray(o, "addresses", NULL, KM_RES_MAX_VIPS, &addrs, path, err) ||
	    km_jarray(o, "ports", NULL, KM_RES_MAX_PORTS, &ports, path, err))
		return -1;
	if (addrs) {
		if (!KM_JALLOC_ARRAY(m->addresses, json_array_size(addrs)))
			return km_jbad(err, path, "out of memory");
		json_array_foreach(addrs, i, v) {
			char sub[192];

			snprintf(sub, sizeof(sub), "%s.addresses[%zu]", path, i);
			m->n_addresses++;
			if (j_network_address(v, &m->addresses[i], sub, err))
				return -1;
		}
	}
	if (ports && j_ports(ports, &m->ports, &m->n_ports, path, err))
		return -1;
	if ((v = km_jfield(o, "waypoint", NULL)) && j_waypoint(v, &m->waypoint, path, err))
		return -1;
	if ((v = km_jfield(o, "loadBalancing", "load_balancing")) &&
	    j_load_balancing(v, &m->load_balancing, path, err))
		return -1;
	return 0;
}

static const char *const statuses[] = { "HEALTHY", "UNHEALTHY" };
static const char *const net_modes[] = { "STANDARD", "HOST_NETWORK" };
static const char *const tunnel_protocols[] = { "NONE", "HBONE", "LEGACY_ISTIO_MTLS" };

static int j_workload_services(const json_t *o, pb_workload *m, const char *path, char *err)
{
	const char *key;
	json_t *v;

	if (!json_is_object(o))
		return km_jbad(err, path, "'services' must be an object keyed by \"<namespace>/<hostname>\"");
	if (json_object_size(o) > KM_RES_MAX_SERVICES_PER_WORKLOAD)
		return km_jbad(err, path, "'services' has %zu entries, at most %d", json_object_size(o),
			   KM_RES_MAX_SERVICES_PER_WORKLOAD);
	if (!KM_JALLOC_ARRAY(m->services, json_object_size(o)))
		return km_jbad(err, path, "out of memory");
	json_object_foreach((json_t *)o, key, v) {
		Kmesh__Workload__Workload__ServicesEntry *e = malloc(sizeof(*e));
		json_t *ports;

		if (!e)
			return km_jbad(err, path, "out of memory");
		kmesh__workload__workload__services_entry__init(e);
		m->services[m->n_services++] = e;
		if (!(e->key = strdup(key)))
			return km_jbad(err, path, "out of memory");
		if (!json_is_object(v))
			return km_jbad(err, path, "services[\"%.64s\"] must be an object", key);
		if (km_jarray(v, "ports", NULL, KM_RES_MAX_PORTS, &ports, path, err))
			return -1;
		if (ports) {
			if (!(e->value = malloc(sizeof(*e->value))))
				return km_jbad(err, path, "out of memory");
			kmesh__workload__port_list__init(e->value);
			if (j_ports(ports, &e->value->ports, &e->value->n_ports, path, err))
				return -1;
		}
	}
	return 0;
}

static int j_workload(const json_t *o, pb_workload *m, const char *path, char *err)
{
	json_t *addrs, *pols, *v;
	size_t i;
	int e;

	if (!json_is_object(o))
		return km_jbad(err, path, "must be an object");
	if (km_jstring(o, "uid", NULL, &m->uid, path, err) ||
	    km_jstring(o, "name", NULL, &m->name, path, err) ||
	    km_jstring(o, "namespace", NULL, &m->namespace_, path, err) ||
	    km_jstring(o, "node", NULL, &m->node, path, err) ||
	    km_jstring(o, "hostname", NULL, &m->hostname, path, err) ||
	    km_jstring(o, "network", NULL, &m->network, path, err) ||
	    km_jstring(o, "clusterId", "cluster_id", &m->cluster_id, path, err) ||
	    km_jstring(o, "trustDomain", "trust_domain", &m->trust_domain, path, err) ||
	    km_jstring(o, "serviceAccount", "service_account", &m->service_account, path, err) ||
	    km_jstring(o, "workloadName", "workload_name", &m->workload_name, path, err) ||
	    km_jstring(o, "canonicalName", "canonical_name", &m->canonical_name, path, err) ||
	    km_jstring(o, "canonicalRevision", "canonical_revision", &m->canonical_revision, path,
		       err) ||
	    km_jarray(o, "addresses", NULL, KM_RES_MAX_ADDRESSES, &addrs, path, err) ||
	    km_jarray(o, "authorizationPolicies", "authorization_policies", KM_RES_MAX_POLICIES, &pols,
		    path, err))
		return -1;
	if (addrs) {
		if (!KM_JALLOC_ARRAY(m->addresses, json_array_size(addrs)))
			return km_jbad(err, path, "out of memory");
		json_array_foreach(addrs, i, v) {
			char sub[192];

			snprintf(sub, sizeof(sub), "%s.addresses[%zu]", path, i);
			if (km_jip_bytes(v, &m->addresses[m->n_addresses], sub, err))
				return -1;
			m->n_addresses++;
		}
	}
	if (pols) {
		if (!KM_JALLOC_ARRAY(m->authorization_policies, json_array_size(pols)))
			return km_jbad(err, path, "out of memory");
		json_array_foreach(pols, i, v) {
			if (!json_is_string(v) || json_string_length(v) > KM_RES_MAX_STRING)
				return km_jbad(err, path, "authorizationPolicies[%zu] must be a string", i);
			if (!(m->authorization_policies[m->n_authorization_policies] =
				      strdup(json_string_value(v))))
				return km_jbad(err, path, "out of memory");
			m->n_authorization_policies++;
		}
	}
	if ((v = km_jfield(o, "status", NULL))) {
		if (km_jenum(v, statuses, 2, &e, path, "status", err))
			return -1;
		m->status = e;
	}
	if ((v = km_jfield(o, "networkMode", "network_mode"))) {
		if (km_jenum(v, net_modes, 2, &e, path, "networkMode", err))
			return -1;
		m->network_mode = e;
	}
	if ((v = km_jfield(o, "tunnelProtocol", "tunnel_protocol"))) {
		if (km_jenum(v, tunnel_protocols, 3, &e, path, "tunnelProtocol", err))
			return -1;
		m->tunnel_protocol = e;
	}
	if ((v = km_jfield(o, "capacity", NULL))) {
		if (!(m->capacity = malloc(sizeof(*m->capacity))))
			return km_jbad(err, path, "out of memory");
		kmesh__workload__uint32_value__init(m->capacity);
		if (km_ju32(json_is_object(v) ? km_jfield(v, "value", NULL) : v, &m->capacity->value, path,
			  "capacity", err))
			return -1;
	}
	if ((v = km_jfield(o, "locality", NULL))) {
		if (!json_is_object(v) || !(m->locality = malloc(sizeof(*m->locality))))
			return km_jbad(err, path, "'locality' must be an object");
		kmesh__workload__locality__init(m->locality);
		if (km_jstring(v, "region", NULL, &m->locality->region, path, err) ||
		    km_jstring(v, "zone", NULL, &m->locality->zone, path, err) ||
		    km_jstring(v, "subzone", NULL, &m->locality->subzone, path, err))
			return -1;
	}
	if ((v = km_jfield(o, "waypoint", NULL)) && j_waypoint(v, &m->waypoint, path, err))
		return -1;
	if ((v = km_jfield(o, "services", NULL)) && j_workload_services(v, m, path, err))
		return -1;
	return 0;
}

/* ---- document ---------------------------------------------------------------------------------- */

static int push(void ***arr, size_t *n, size_t *cap, void *item)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		void **p = realloc(*arr, ncap * sizeof(*p));

		if (!p)
			return -1;
		*arr = p;
		*cap = ncap;
	}
	(*arr)[(*n)++] = item;
	return 0;
}

static void record_failure(struct km_resource_set *set, char *name, const char *why)
{
	km_warn("config: %s; keeping the previous version of %s", why, name ? name : "it");
	set->n_errors++;
	if (name && push((void ***)&set->failed, &set->n_failed, &set->cap_failed, name) != 0)
		free(name);
}

/* The resource's name as the converter would form it, for failure reports. */
static char *name_of(const pb_service *s, const pb_workload *w)
{
	char *n = NULL;

	if (w && w->uid && *w->uid)
		return strdup(w->uid);
	if (s && s->namespace_ && *s->namespace_ && s->hostname && *s->hostname) {
		size_t len = strlen(s->namespace_) + strlen(s->hostname) + 2;

		if ((n = malloc(len)))
			snprintf(n, len, "%s/%s", s->namespace_, s->hostname);
	}
	return n;
}

/* The two kinds of Address, as decode_one handles them: the message to map the JSON onto, the
 * converter into a resource, and where accepted resources go in the set. */
struct kind {
	const char *field; /* "service" or "workload" */
	const ProtobufCMessageDescriptor *desc;
	int (*map)(const json_t *o, void *msg, const char *path, char *err);
	int (*convert)(const void *msg, void **res, char *err, size_t errlen);
	void (*free_res)(void *res);
	char *(*name)(const void *msg);
	size_t list, count, cap; /* offsets into struct km_resource_set */
};

static int map_service(const json_t *o, void *msg, const char *path, char *err)
{
	return j_service(o, msg, path, err);
}

static int map_workload(const json_t *o, void *msg, const char *path, char *err)
{
	return j_workload(o, msg, path, err);
}

static int convert_service(const void *msg, void **res, char *err, size_t errlen)
{
	return km_pb_service(msg, (struct km_service_res **)res, err, errlen);
}

static int convert_workload(const void *msg, void **res, char *err, size_t errlen)
{
	return km_pb_workload(msg, (struct km_workload_res **)res, err, errlen);
}

static void free_service(void *res)
{
	km_service_res_free(res);
}

static void free_workload(void *res)
{
	km_workload_res_free(res);
}

static char *service_name(const void *msg)
{
	return name_of(msg, NULL);
}

static char *workload_name(const void *msg)
{
	return name_of(NULL, msg);
}

static const struct kind kinds[] = {
	{ "service", &kmesh__workload__service__descriptor, map_service, convert_service,
	  free_service, service_name, offsetof(struct km_resource_set, services),
	  offsetof(struct km_resource_set, n_services), offsetof(struct km_resource_set, cap_services) },
	{ "workload", &kmesh__workload__workload__descriptor, map_workload, convert_workload,
	  free_workload, workload_name, offsetof(struct km_resource_set, workloads),
	  offsetof(struct km_resource_set, n_workloads),
	  offsetof(struct km_resource_set, cap_workloads) },
};

static void decode_one(const json_t *item, size_t i, struct km_resource_set *out)
{
	char path[64], err[320], pb_err[256];
	json_t *svc = json_is_object(item) ? km_jfield(item, "service", NULL) : NULL;
	json_t *wl = json_is_object(item) ? km_jfield(item, "workload", NULL) : NULL;
	const struct kind *k = &kinds[svc ? 0 : 1];
	char *set = (char *)out;
	ProtobufCMessage *msg;
	void *res = NULL;
	int rc;

	snprintf(path, sizeof(path), "resources[%zu].%s", i, k->field);
	if ((!svc) == (!wl)) {
		snprintf(path, sizeof(path), "resources[%zu]", i);
		km_jbad(err, path, "must hold exactly one of 'service' or 'workload'");
		record_failure(out, NULL, err);
		return;
	}
	/* heap-allocated: protobuf-c frees the message with every field it holds */
	msg = malloc(k->desc->sizeof_message);
	if (!msg) {
		record_failure(out, NULL, "out of memory");
		return;
	}
	k->desc->message_init(msg);
	rc = k->map(svc ? svc : wl, msg, path, err);
	if (rc == 0 && (rc = k->convert(msg, &res, pb_err, sizeof(pb_err))) != 0)
		km_jbad(err, path, "%s", pb_err);
	if (rc == 0 && push((void ***)(set + k->list), (size_t *)(set + k->count),
			    (size_t *)(set + k->cap), res)) {
		k->free_res(res);
		rc = km_jbad(err, path, "out of memory");
	}
	if (rc != 0)
		record_failure(out, k->name(msg), err);
	protobuf_c_message_free_unpacked(msg, NULL);
}

int km_json_address_pb(const json_t *item, const char *path, Kmesh__Workload__Address **out,
		       char *err)
{
	json_t *svc = json_is_object(item) ? km_jfield(item, "service", NULL) : NULL;
	json_t *wl = json_is_object(item) ? km_jfield(item, "workload", NULL) : NULL;
	Kmesh__Workload__Address *a;
	char sub[96];

	*out = NULL;
	if ((!svc) == (!wl))
		return km_jbad(err, path, "must hold exactly one of 'service' or 'workload'");
	if (!(a = malloc(sizeof(*a))))
		return km_jbad(err, path, "out of memory");
	kmesh__workload__address__init(a);
	*out = a;
	snprintf(sub, sizeof(sub), "%s.%s", path, svc ? "service" : "workload");
	if (svc) {
		a->type_case = KMESH__WORKLOAD__ADDRESS__TYPE_SERVICE;
		if (!(a->service = malloc(sizeof(*a->service))))
			return km_jbad(err, path, "out of memory");
		kmesh__workload__service__init(a->service);
		return j_service(svc, a->service, sub, err);
	}
	a->type_case = KMESH__WORKLOAD__ADDRESS__TYPE_WORKLOAD;
	if (!(a->workload = malloc(sizeof(*a->workload))))
		return km_jbad(err, path, "out of memory");
	kmesh__workload__workload__init(a->workload);
	return j_workload(wl, a->workload, sub, err);
}

int km_json_decode_document(const char *text, size_t len, struct km_resource_set *out, char *err,
			    size_t errlen)
{
	json_error_t jerr;
	json_t *root, *list, *item;
	size_t i;

	memset(out, 0, sizeof(*out));
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		snprintf(err, errlen, "not valid JSON: %s at line %d column %d", jerr.text, jerr.line,
			 jerr.column);
		return -1;
	}
	list = json_is_array(root) ? root : json_object_get(root, "resources");
	if (!json_is_array(list)) {
		snprintf(err, errlen,
			 "expected a list of Address resources, or an object with a 'resources' list");
		json_decref(root);
		return -1;
	}
	if (json_array_size(list) > KM_JSON_MAX_RESOURCES) {
		snprintf(err, errlen, "%zu resources, at most %d", json_array_size(list),
			 KM_JSON_MAX_RESOURCES);
		json_decref(root);
		return -1;
	}
	json_array_foreach(list, i, item)
		decode_one(item, i, out);
	json_decref(root);
	return 0;
}

void km_resource_set_free(struct km_resource_set *set)
{
	for (size_t i = 0; i < set->n_services; i++)
		km_service_res_free(set->services[i]);
	for (size_t i = 0; i < set->n_workloads; i++)
		km_workload_res_free(set->workloads[i]);
	for (size_t i = 0; i < set->n_failed; i++)
		free(set->failed[i]);
	free(set->services);
	free(set->workloads);
	free(set->failed);
	memset(set, 0, sizeof(*set));
}
