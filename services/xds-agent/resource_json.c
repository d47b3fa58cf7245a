/* resource_json.c — Istio workload-API resources from proto3 JSON (see resource_json.h). */
#include "services/xds-agent/resource_json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "shared/addr.h"
#include "shared/base64.h"
#include "shared/log.h"

/* A decoding error: the JSON path where it happened and what is wrong. */
struct derr {
	char msg[320];
};

static int bad(struct derr *e, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int bad(struct derr *e, const char *path, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(e->msg, sizeof(e->msg), "%s: %s", path, what);
	return -1;
}

/* A field by its JSON name or its original proto name. */
static json_t *field(const json_t *obj, const char *json_name, const char *proto_name)
{
	json_t *v = json_object_get(obj, json_name);

	if (!v && proto_name)
		v = json_object_get(obj, proto_name);
	return json_is_null(v) ? NULL : v;
}

static int get_string(const json_t *obj, const char *jn, const char *pn, int required, char **out,
		      size_t max, const char *path, struct derr *e)
{
	json_t *v = field(obj, jn, pn);
	const char *s;

	*out = NULL;
	if (!v) {
		if (required)
			return bad(e, path, "field '%s' is required", jn);
		return 0;
	}
	if (!json_is_string(v))
		return bad(e, path, "field '%s' must be a string", jn);
	s = json_string_value(v);
	if (strlen(s) != json_string_length(v))
		return bad(e, path, "field '%s' contains a NUL byte", jn);
	if (json_string_length(v) > max)
		return bad(e, path, "field '%s' is longer than %zu bytes", jn, max);
	if (required && !*s)
		return bad(e, path, "field '%s' must not be empty", jn);
	*out = strdup(s);
	if (!*out)
		return bad(e, path, "out of memory");
	return 0;
}

/* uint32 as a JSON number or a decimal string (proto3 JSON allows both). */
static int get_u32(const json_t *v, uint32_t *out, uint32_t max, const char *path, const char *name,
		   struct derr *e)
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
			return bad(e, path, "'%s' is not an integer", name);
	} else {
		return bad(e, path, "'%s' must be an integer", name);
	}
	if (n < 0 || (uint64_t)n > max)
		return bad(e, path, "'%s' = %lld is out of range 0..%u", name, (long long)n, max);
	*out = (uint32_t)n;
	return 0;
}

/* An enum as its name or its number. */
static int get_enum(const json_t *v, const char *const *names, uint32_t count, uint32_t *out,
		    const char *path, const char *name, struct derr *e)
{
	if (json_is_string(v)) {
		for (uint32_t i = 0; i < count; i++) {
			if (strcmp(json_string_value(v), names[i]) == 0) {
				*out = i;
				return 0;
			}
		}
	}
	if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) < count) {
		*out = (uint32_t)json_integer_value(v);
		return 0;
	}
	return bad(e, path, "'%s' is not a known value", name);
}

/* An IP address: text ("10.0.0.1", "fd00::1") or base64 of 4 or 16 bytes (proto bytes). */
static int get_addr(const json_t *v, struct km_addr *out, const char *path, struct derr *e)
{
	uint8_t raw[16];
	long n;

	if (!json_is_string(v))
		return bad(e, path, "address must be a string");
	if (km_addr_parse(json_string_value(v), out) == 0)
		return 0;
	n = km_base64_decode(json_string_value(v), json_string_length(v), raw, sizeof(raw));
	if ((n != 4 && n != 16) || km_addr_from_bytes(raw, (size_t)n, out) != 0)
		return bad(e, path, "'%s' is neither an IP address nor base64 of 4 or 16 bytes",
			   json_string_value(v));
	return 0;
}

static int get_array(const json_t *obj, const char *jn, const char *pn, size_t max, json_t **out,
		     const char *path, struct derr *e)
{
	json_t *v = field(obj, jn, pn);

	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_array(v))
		return bad(e, path, "field '%s' must be an array", jn);
	if (json_array_size(v) > max)
		return bad(e, path, "field '%s' has %zu entries, at most %zu", jn, json_array_size(v), max);
	*out = v;
	return 0;
}

/* ---- Service ----------------------------------------------------------------------------------- */

static const char *const lb_modes[] = { "UNSPECIFIED_MODE", "STRICT", "FAILOVER", "PASSTHROUGH" };

static int decode_ports(const json_t *arr, struct km_port **out, size_t *n, const char *path,
			struct derr *e)
{
	size_t i;
	json_t *p;
	char sub[160];

	*n = 0;
	*out = calloc(json_array_size(arr) ? json_array_size(arr) : 1, sizeof(**out));
	if (!*out)
		return bad(e, path, "out of memory");
	json_array_foreach(arr, i, p) {
		struct km_port port = { 0 };
		json_t *sp, *tp;

		snprintf(sub, sizeof(sub), "%s.ports[%zu]", path, i);
		if (!json_is_object(p))
			return bad(e, sub, "must be an object");
		sp = field(p, "servicePort", "service_port");
		tp = field(p, "targetPort", "target_port");
		if (!sp)
			return bad(e, sub, "'servicePort' is required");
		if (get_u32(sp, &port.service_port, 65535, sub, "servicePort", e) ||
		    (tp && get_u32(tp, &port.target_port, 65535, sub, "targetPort", e)))
			return -1;
		if (port.service_port == 0)
			return bad(e, sub, "'servicePort' must be 1..65535");
		for (size_t j = 0; j < *n; j++)
			if ((*out)[j].service_port == port.service_port)
				return bad(e, sub, "service port %u is listed twice", port.service_port);
		(*out)[(*n)++] = port;
	}
	return 0;
}

static int decode_service(const json_t *obj, const char *path, struct km_service_res **out,
			  char **name_out, struct derr *e)
{
	struct km_service_res *s = calloc(1, sizeof(*s));
	json_t *addrs, *ports, *lb, *a;
	char sub[160];
	size_t i;

	*out = NULL;
	if (!s)
		return bad(e, path, "out of memory");
	if (!json_is_object(obj)) {
		bad(e, path, "must be an object");
		goto fail;
	}
	if (get_string(obj, "namespace", NULL, 1, &s->namespace, 253, path, e) ||
	    get_string(obj, "hostname", NULL, 1, &s->hostname, 253, path, e))
		goto fail;
	s->name = malloc(strlen(s->namespace) + strlen(s->hostname) + 2);
	if (!s->name) {
		bad(e, path, "out of memory");
		goto fail;
	}
	sprintf(s->name, "%s/%s", s->namespace, s->hostname);
	*name_out = strdup(s->name);
	if (get_string(obj, "name", NULL, 0, &s->svc_name, 253, path, e) ||
	    get_array(obj, "addresses", NULL, 64, &addrs, path, e) ||
	    get_array(obj, "ports", NULL, KM_RES_MAX_PORTS, &ports, path, e))
		goto fail;
	if (addrs) {
		s->vips = calloc(json_array_size(addrs) + 1, sizeof(*s->vips));
		if (!s->vips) {
			bad(e, path, "out of memory");
			goto fail;
		}
		json_array_foreach(addrs, i, a) {
			json_t *ip;
			struct km_addr vip;
			int dup = 0;

			snprintf(sub, sizeof(sub), "%s.addresses[%zu]", path, i);
			if (!json_is_object(a) || !(ip = field(a, "address", NULL))) {
				bad(e, sub, "must be an object with an 'address'");
				goto fail;
			}
			if (get_addr(ip, &vip, sub, e))
				goto fail;
			if (km_addr_is_unspecified(&vip)) {
				bad(e, sub, "the unspecified address is not a VIP");
				goto fail;
			}
			for (size_t j = 0; j < s->n_vips; j++)
				dup |= memcmp(&s->vips[j], &vip, sizeof(vip)) == 0;
			if (!dup)
				s->vips[s->n_vips++] = vip;
		}
	}
	if (ports && decode_ports(ports, &s->ports, &s->n_ports, path, e))
		goto fail;
	lb = field(obj, "loadBalancing", "load_balancing");
	if (lb) {
		json_t *mode;

		if (!json_is_object(lb)) {
			bad(e, path, "'loadBalancing' must be an object");
			goto fail;
		}
		mode = field(lb, "mode", NULL);
		if (mode && get_enum(mode, lb_modes, 4, &s->lb_mode, path, "loadBalancing.mode", e))
			goto fail;
		if (s->lb_mode != KM_LB_RANDOM)
			km_warn("%s: load-balancing mode %s is not implemented yet; using random", path,
				lb_modes[s->lb_mode]);
		s->lb_mode = KM_LB_RANDOM;
	}
	*out = s;
	return 0;
fail:
	km_service_res_free(s);
	return -1;
}

/* ---- Workload ---------------------------------------------------------------------------------- */

static const char *const statuses[] = { "HEALTHY", "UNHEALTHY" };

static int decode_workload(const json_t *obj, const char *path, struct km_workload_res **out,
			   char **name_out, struct derr *e)
{
	struct km_workload_res *w = calloc(1, sizeof(*w));
	json_t *addrs, *svcs, *status, *a;
	const char *key;
	char sub[160];
	size_t i;

	*out = NULL;
	if (!w)
		return bad(e, path, "out of memory");
	if (!json_is_object(obj)) {
		bad(e, path, "must be an object");
		goto fail;
	}
	if (get_string(obj, "uid", NULL, 1, &w->uid, KM_RES_MAX_STRING, path, e))
		goto fail;
	*name_out = strdup(w->uid);
	if (get_string(obj, "name", NULL, 0, &w->name, 253, path, e) ||
	    get_string(obj, "namespace", NULL, 0, &w->namespace, 253, path, e) ||
	    get_string(obj, "node", NULL, 0, &w->node, 253, path, e) ||
	    get_string(obj, "network", NULL, 0, &w->network, 253, path, e) ||
	    get_array(obj, "addresses", NULL, KM_RES_MAX_ADDRESSES, &addrs, path, e))
		goto fail;
	if (addrs) {
		w->addrs = calloc(json_array_size(addrs) + 1, sizeof(*w->addrs));
		if (!w->addrs) {
			bad(e, path, "out of memory");
			goto fail;
		}
		json_array_foreach(addrs, i, a) {
			snprintf(sub, sizeof(sub), "%s.addresses[%zu]", path, i);
			if (get_addr(a, &w->addrs[w->n_addrs], sub, e))
				goto fail;
			if (km_addr_is_unspecified(&w->addrs[w->n_addrs])) {
				bad(e, sub, "the unspecified address is not a workload address");
				goto fail;
			}
			w->n_addrs++;
		}
	}
	status = field(obj, "status", NULL);
	if (status && get_enum(status, statuses, 2, &w->status, path, "status", e))
		goto fail;
	svcs = field(obj, "services", NULL);
	if (svcs) {
		json_t *v;

		if (!json_is_object(svcs)) {
			bad(e, path, "'services' must be an object keyed by \"<namespace>/<hostname>\"");
			goto fail;
		}
		if (json_object_size(svcs) > KM_RES_MAX_SERVICES_PER_WORKLOAD) {
			bad(e, path, "'services' has %zu entries, at most %d", json_object_size(svcs),
			    KM_RES_MAX_SERVICES_PER_WORKLOAD);
			goto fail;
		}
		w->services = calloc(json_object_size(svcs) + 1, sizeof(*w->services));
		if (!w->services) {
			bad(e, path, "out of memory");
			goto fail;
		}
		json_object_foreach(svcs, key, v) {
			if (!strchr(key, '/') || strlen(key) > 2 * 253 + 1) {
				bad(e, path, "services key '%.64s' is not \"<namespace>/<hostname>\"", key);
				goto fail;
			}
			(void)v; /* per-workload port lists are not used by the data plane yet */
			if (!(w->services[w->n_services] = strdup(key))) {
				bad(e, path, "out of memory");
				goto fail;
			}
			w->n_services++;
		}
		km_workload_res_normalize(w);
	}
	*out = w;
	return 0;
fail:
	km_workload_res_free(w);
	return -1;
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

static int has_name(char **names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return 1;
	return 0;
}

static void record_failure(struct km_resource_set *set, char *name, const struct derr *e)
{
	km_warn("config: %s; keeping the previous version of %s", e->msg, name ? name : "it");
	set->n_errors++;
	if (!name)
		return;
	if (push((void ***)&set->failed, &set->n_failed, &set->cap_failed, name) != 0)
		free(name);
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
	json_array_foreach(list, i, item) {
		char path[64];
		json_t *svc, *wl;
		struct derr e;
		char *name = NULL;

		snprintf(path, sizeof(path), "resources[%zu]", i);
		svc = json_is_object(item) ? field(item, "service", NULL) : NULL;
		wl = json_is_object(item) ? field(item, "workload", NULL) : NULL;
		if ((!svc) == (!wl)) {
			bad(&e, path, "must hold exactly one of 'service' or 'workload'");
			record_failure(out, NULL, &e);
			continue;
		}
		if (svc) {
			struct km_service_res *s;

			strncat(path, ".service", sizeof(path) - strlen(path) - 1);
			if (decode_service(svc, path, &s, &name, &e) != 0) {
				record_failure(out, name, &e);
				continue;
			}
			if (has_name(out->failed, out->n_failed, s->name)) {
				free(name);
				km_service_res_free(s);
				continue;
			}
			if (push((void ***)&out->services, &out->n_services, &out->cap_services, s)) {
				bad(&e, path, "out of memory");
				km_service_res_free(s);
				record_failure(out, name, &e);
				continue;
			}
		} else {
			struct km_workload_res *w;

			strncat(path, ".workload", sizeof(path) - strlen(path) - 1);
			if (decode_workload(wl, path, &w, &name, &e) != 0) {
				record_failure(out, name, &e);
				continue;
			}
			if (push((void ***)&out->workloads, &out->n_workloads, &out->cap_workloads, w)) {
				bad(&e, path, "out of memory");
				km_workload_res_free(w);
				record_failure(out, name, &e);
				continue;
			}
		}
		free(name);
	}
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
