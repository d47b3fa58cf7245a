/* resource_json.c — the embedded-config file: proto3 JSON mapped onto the same workload-API
 * messages istiod sends, then validated by resource_pb.c (see resource_json.h). This file only
 * maps JSON shapes (names in either spelling, enums by name or number, integers as numbers or
 * strings, bytes as base64 or, for addresses, IP text); it decides nothing about validity beyond
 * types and sizes. */
#include "services/xds-agent/resource_json.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "services/xds-agent/resource_pb.h"
#include "shared/addr.h"
#include "shared/base64.h"
#include "shared/log.h"

typedef Kmesh__Workload__Service pb_service;
typedef Kmesh__Workload__Workload pb_workload;

static int bad(char *err, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *err, const char *path, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(err, 320, "%s: %s", path, what);
	return -1;
}

/* A field by its JSON name or its proto name; JSON null counts as absent. */
static json_t *field(const json_t *obj, const char *json_name, const char *proto_name)
{
	json_t *v = json_object_get(obj, json_name);

	if (!v && proto_name)
		v = json_object_get(obj, proto_name);
	return json_is_null(v) ? NULL : v;
}

/* String field into a malloc'd copy (absent: left as the message default). */
static int j_string(const json_t *obj, const char *jn, const char *pn, char **out, const char *path,
		    char *err)
{
	json_t *v = field(obj, jn, pn);

	if (!v)
		return 0;
	if (!json_is_string(v))
		return bad(err, path, "'%s' must be a string", jn);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return bad(err, path, "'%s' contains a NUL byte", jn);
	if (json_string_length(v) > KM_RES_MAX_STRING)
		return bad(err, path, "'%s' is longer than %d bytes", jn, KM_RES_MAX_STRING);
	*out = strdup(json_string_value(v));
	return *out ? 0 : bad(err, path, "out of memory");
}

static int j_u32(const json_t *v, uint32_t *out, const char *path, const char *name, char *err)
{
	json_int_t n;

	if (json_is_integer(v)) {
		n = json_integer_value(v);
	} else if (json_is_string(v)) {
		char *end;
		const char *s = json_string_value(v);

		errno = 0;
		n = strtoll(s, &end, 10);
		if (errno || end == s || *end)
			return bad(err, path, "'%s' is not an integer", name);
	} else {
		return bad(err, path, "'%s' must be an integer", name);
	}
	if (n < 0 || n > 0xffffffffLL)
		return bad(err, path, "'%s' = %lld is out of range", name, (long long)n);
	*out = (uint32_t)n;
	return 0;
}

static int j_enum(const json_t *v, const char *const *names, int count, int *out, const char *path,
		  const char *name, char *err)
{
	if (json_is_string(v))
		for (int i = 0; i < count; i++)
			if (names[i] && strcmp(json_string_value(v), names[i]) == 0) {
				*out = i;
				return 0;
			}
	if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) < count) {
		*out = (int)json_integer_value(v);
		return 0;
	}
	return bad(err, path, "'%s' is not a known value", name);
}

/* Bytes holding an IP: IP text (convenient in hand-written files) or base64 (proto JSON). */
static int j_ip_bytes(const json_t *v, ProtobufCBinaryData *out, const char *path, char *err)
{
	struct km_addr a;
	uint8_t raw[16];
	long n;

	if (!json_is_string(v))
		return bad(err, path, "address must be a string");
	if (km_addr_parse(json_string_value(v), &a) == 0) {
		n = (long)km_addr_to_bytes(&a, raw);
	} else {
		n = km_base64_decode(json_string_value(v), json_string_length(v), raw, sizeof(raw));
		if (n < 0)
			return bad(err, path, "'%.64s' is neither an IP address nor base64 of one",
				   json_string_value(v));
	}
	out->data = malloc(n ? (size_t)n : 1);
	if (!out->data)
		return bad(err, path, "out of memory");
	memcpy(out->data, raw, (size_t)n);
	out->len = (size_t)n;
	return 0;
}

static int j_array(const json_t *obj, const char *jn, const char *pn, size_t max, json_t **out,
		   const char *path, char *err)
{
	json_t *v = field(obj, jn, pn);

	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_array(v))
		return bad(err, path, "'%s' must be an array", jn);
	if (json_array_size(v) > max)
		return bad(err, path, "'%s' has %zu entries, at most %zu", jn, json_array_size(v), max);
	*out = v;
	return 0;
}

#define ALLOC_ARRAY(ptr, n) ((ptr) = calloc((n) ? (n) : 1, sizeof(*(ptr))))

static int j_network_address(const json_t *o, Kmesh__Workload__NetworkAddress **out,
			     const char *path, char *err)
{
	Kmesh__Workload__NetworkAddress *a = malloc(sizeof(*a));
	json_t *ip, *len;

	if (!a)
		return bad(err, path, "out of memory");
	kmesh__workload__network_address__init(a);
	*out = a;
	if (!json_is_object(o) || !(ip = field(o, "address", NULL)))
		return bad(err, path, "must be an object with an 'address'");
	if (j_string(o, "network", NULL, &a->network, path, err) || j_ip_bytes(ip, &a->address, path, err))
		return -1;
	len = field(o, "length", NULL);
	return len ? j_u32(len, &a->length, path, "length", err) : 0;
}

static int j_ports(const json_t *arr, Kmesh__Workload__Port ***out, size_t *n, const char *path,
		   char *err)
{
	size_t i;
	json_t *p;
	char sub[192];

	if (!ALLOC_ARRAY(*out, json_array_size(arr)))
		return bad(err, path, "out of memory");
	json_array_foreach(arr, i, p) {
		Kmesh__Workload__Port *port = malloc(sizeof(*port));
		json_t *sp, *tp;

		snprintf(sub, sizeof(sub), "%s.ports[%zu]", path, i);
		if (!port)
			return bad(err, sub, "out of memory");
		kmesh__workload__port__init(port);
		(*out)[(*n)++] = port;
		if (!json_is_object(p))
			return bad(err, sub, "must be an object");
		sp = field(p, "servicePort", "service_port");
		tp = field(p, "targetPort", "target_port");
		if ((sp && j_u32(sp, &port->service_port, sub, "servicePort", err)) ||
		    (tp && j_u32(tp, &port->target_port, sub, "targetPort", err)))
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
		return bad(err, path, "out of memory");
	kmesh__workload__gateway_address__init(g);
	*out = g;
	if (!json_is_object(o))
		return bad(err, path, "'waypoint' must be an object");
	h = field(o, "hostname", NULL);
	a = field(o, "address", NULL);
	if (h && json_is_object(h)) {
		Kmesh__Workload__NamespacedHostname *nh = malloc(sizeof(*nh));

		if (!nh)
			return bad(err, path, "out of memory");
		kmesh__workload__namespaced_hostname__init(nh);
		g->destination_case = KMESH__WORKLOAD__GATEWAY_ADDRESS__DESTINATION_HOSTNAME;
		g->hostname = nh;
		if (j_string(h, "namespace", NULL, &nh->namespace_, path, err) ||
		    j_string(h, "hostname", NULL, &nh->hostname, path, err))
			return -1;
	} else if (a) {
		g->destination_case = KMESH__WORKLOAD__GATEWAY_ADDRESS__DESTINATION_ADDRESS;
		if (j_network_address(a, &g->address, path, err))
			return -1;
	}
	port = field(o, "hboneMtlsPort", "hbone_mtls_port");
	return port ? j_u32(port, &g->hbone_mtls_port, path, "hboneMtlsPort", err) : 0;
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
		return bad(err, path, "out of memory");
	kmesh__workload__load_balancing__init(lb);
	*out = lb;
	if (!json_is_object(o))
		return bad(err, path, "'loadBalancing' must be an object");
	if (j_array(o, "routingPreference", "routing_preference", KM_RES_MAX_SCOPES, &prefs, path, err))
		return -1;
	if (prefs) {
		if (!ALLOC_ARRAY(lb->routing_preference, json_array_size(prefs)))
			return bad(err, path, "out of memory");
		json_array_foreach(prefs, i, v) {
			int sc;

			if (j_enum(v, scopes, 7, &sc, path, "routingPreference", err))
				return -1;
			lb->routing_preference[lb->n_routing_preference++] = sc;
		}
	}
	mode = field(o, "mode", NULL);
	hp = field(o, "healthPolicy", "health_policy");
	if (mode) {
		int m;

		if (j_enum(mode, lb_modes, 4, &m, path, "mode", err))
			return -1;
		lb->mode = m;
	}
	if (hp) {
		int h;

		if (j_enum(hp, health, 2, &h, path, "healthPolicy", err))
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
		return bad(err, path, "must be an object");
	if (j_string(o, "name", NULL, &m->name, path, err) ||
	    j_string(o, "namespace", NULL, &m->namespace_, path, err) ||
	    j_string(o, "hostname", NULL, &m->hostname, path, err) ||
	    j_array(o, "addresses", NULL, KM_RES_MAX_VIPS, &addrs, path, err) ||
	    j_array(o, "ports", NULL, KM_RES_MAX_PORTS, &ports, path, err))
		return -1;
	if (addrs) {
		if (!ALLOC_ARRAY(m->addresses, json_array_size(addrs)))
			return bad(err, path, "out of memory");
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
	if ((v = field(o, "waypoint", NULL)) && j_waypoint(v, &m->waypoint, path, err))
		return -1;
	if ((v = field(o, "loadBalancing", "load_balancing")) &&
	    j_load_balancing(v, &m->load_balancing, path, err))
		return -1;
	return 0;
}

static const char *const statuses[] = { "HEALTHY", "UNHEALTHY" };
static const char *const net_modes[] = { "STANDARD", "HOST_NETWORK" };

static int j_workload_services(const json_t *o, pb_workload *m, const char *path, char *err)
{
	const char *key;
	json_t *v;

	if (!json_is_object(o))
		return bad(err, path, "'services' must be an object keyed by \"<namespace>/<hostname>\"");
	if (json_object_size(o) > KM_RES_MAX_SERVICES_PER_WORKLOAD)
		return bad(err, path, "'services' has %zu entries, at most %d", json_object_size(o),
			   KM_RES_MAX_SERVICES_PER_WORKLOAD);
	if (!ALLOC_ARRAY(m->services, json_object_size(o)))
		return bad(err, path, "out of memory");
	json_object_foreach((json_t *)o, key, v) {
		Kmesh__Workload__Workload__ServicesEntry *e = malloc(sizeof(*e));
		json_t *ports;

		if (!e)
			return bad(err, path, "out of memory");
		kmesh__workload__workload__services_entry__init(e);
		m->services[m->n_services++] = e;
		if (!(e->key = strdup(key)))
			return bad(err, path, "out of memory");
		if (!json_is_object(v))
			return bad(err, path, "services[\"%.64s\"] must be an object", key);
		if (j_array(v, "ports", NULL, KM_RES_MAX_PORTS, &ports, path, err))
			return -1;
		if (ports) {
			if (!(e->value = malloc(sizeof(*e->value))))
				return bad(err, path, "out of memory");
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
		return bad(err, path, "must be an object");
	if (j_string(o, "uid", NULL, &m->uid, path, err) ||
	    j_string(o, "name", NULL, &m->name, path, err) ||
	    j_string(o, "namespace", NULL, &m->namespace_, path, err) ||
	    j_string(o, "node", NULL, &m->node, path, err) ||
	    j_string(o, "network", NULL, &m->network, path, err) ||
	    j_string(o, "clusterId", "cluster_id", &m->cluster_id, path, err) ||
	    j_string(o, "trustDomain", "trust_domain", &m->trust_domain, path, err) ||
	    j_string(o, "serviceAccount", "service_account", &m->service_account, path, err) ||
	    j_array(o, "addresses", NULL, KM_RES_MAX_ADDRESSES, &addrs, path, err) ||
	    j_array(o, "authorizationPolicies", "authorization_policies", KM_RES_MAX_POLICIES, &pols,
		    path, err))
		return -1;
	if (addrs) {
		if (!ALLOC_ARRAY(m->addresses, json_array_size(addrs)))
			return bad(err, path, "out of memory");
		json_array_foreach(addrs, i, v) {
			char sub[192];

			snprintf(sub, sizeof(sub), "%s.addresses[%zu]", path, i);
			if (j_ip_bytes(v, &m->addresses[m->n_addresses], sub, err))
				return -1;
			m->n_addresses++;
		}
	}
	if (pols) {
		if (!ALLOC_ARRAY(m->authorization_policies, json_array_size(pols)))
			return bad(err, path, "out of memory");
		json_array_foreach(pols, i, v) {
			if (!json_is_string(v) || json_string_length(v) > KM_RES_MAX_STRING)
				return bad(err, path, "authorizationPolicies[%zu] must be a string", i);
			if (!(m->authorization_policies[m->n_authorization_policies] =
				      strdup(json_string_value(v))))
				return bad(err, path, "out of memory");
			m->n_authorization_policies++;
		}
	}
	if ((v = field(o, "status", NULL))) {
		if (j_enum(v, statuses, 2, &e, path, "status", err))
			return -1;
		m->status = e;
	}
	if ((v = field(o, "networkMode", "network_mode"))) {
		if (j_enum(v, net_modes, 2, &e, path, "networkMode", err))
			return -1;
		m->network_mode = e;
	}
	if ((v = field(o, "capacity", NULL))) {
		if (!(m->capacity = malloc(sizeof(*m->capacity))))
			return bad(err, path, "out of memory");
		kmesh__workload__uint32_value__init(m->capacity);
		if (j_u32(json_is_object(v) ? field(v, "value", NULL) : v, &m->capacity->value, path,
			  "capacity", err))
			return -1;
	}
	if ((v = field(o, "locality", NULL))) {
		if (!json_is_object(v) || !(m->locality = malloc(sizeof(*m->locality))))
			return bad(err, path, "'locality' must be an object");
		kmesh__workload__locality__init(m->locality);
		if (j_string(v, "region", NULL, &m->locality->region, path, err) ||
		    j_string(v, "zone", NULL, &m->locality->zone, path, err) ||
		    j_string(v, "subzone", NULL, &m->locality->subzone, path, err))
			return -1;
	}
	if ((v = field(o, "waypoint", NULL)) && j_waypoint(v, &m->waypoint, path, err))
		return -1;
	if ((v = field(o, "services", NULL)) && j_workload_services(v, m, path, err))
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
	json_t *svc = json_is_object(item) ? field(item, "service", NULL) : NULL;
	json_t *wl = json_is_object(item) ? field(item, "workload", NULL) : NULL;
	const struct kind *k = &kinds[svc ? 0 : 1];
	char *set = (char *)out;
	ProtobufCMessage *msg;
	void *res = NULL;
	int rc;

	snprintf(path, sizeof(path), "resources[%zu].%s", i, k->field);
	if ((!svc) == (!wl)) {
		snprintf(path, sizeof(path), "resources[%zu]", i);
		bad(err, path, "must hold exactly one of 'service' or 'workload'");
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
		bad(err, path, "%s", pb_err);
	if (rc == 0 && push((void ***)(set + k->list), (size_t *)(set + k->count),
			    (size_t *)(set + k->cap), res)) {
		k->free_res(res);
		rc = bad(err, path, "out of memory");
	}
	if (rc != 0)
		record_failure(out, k->name(msg), err);
	protobuf_c_message_free_unpacked(msg, NULL);
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
