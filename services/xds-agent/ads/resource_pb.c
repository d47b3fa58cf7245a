/* resource_pb.c — validate workload-API messages into resources (see resource_pb.h). */
#include "shared/errbuf.h"
#include "services/xds-agent/ads/resource_pb.h"
#include "services/xds-agent/ads/address_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/addr.h"

/* Where a resource and its parts are made: a decode's scratch block (the resource is then
 * marked scratch: the model packs it and the block is reused for the next one, no malloc per
 * string), or the heap. */
struct conv {
	ProtobufCAllocator *a; /* NULL: the heap */
};

/* n zeroed bytes (n is bounded by the callers' limits), or NULL. */
static void *conv_alloc(const struct conv *c, size_t n)
{
	void *p;

	if (!c->a)
		return calloc(1, n);
	if ((p = c->a->alloc(c->a->allocator_data, n)))
		memset(p, 0, n);
	return p;
}

/* Copy a string field, bounded. Empty strings become NULL unless required (then an error).
 * Decoding into a scratch block, the message's own string is the copy: it lives in the same
 * block as the resource, until the model has packed it (a dozen strings per workload were
 * copied twice). */
static int copy_str(const struct conv *c, const char *in, size_t max, int required,
		    const char *field, char **out, char *err, size_t errlen)
{
	size_t n = in ? strlen(in) : 0;

	*out = NULL;
	if (n == 0)
		return required ? km_errf(err, errlen, "'%s' is required", field) : 0;
	if (n > max)
		return km_errf(err, errlen, "'%s' is longer than %zu bytes", field, max);
	if (c->a) {
		*out = (char *)in;
		return 0;
	}
	if (!(*out = conv_alloc(c, n + 1)))
		return km_errf(err, errlen, "out of memory");
	memcpy(*out, in, n);
	return 0;
}

static int copy_addr(ProtobufCBinaryData b, const char *field, struct km_addr *out, char *err,
		     size_t errlen)
{
	if (km_addr_from_bytes(b.data, b.len, out) != 0)
		return km_errf(err, errlen, "%s must be 4 or 16 bytes, got %zu", field, b.len);
	if (km_addr_is_unspecified(out))
		return km_errf(err, errlen, "%s is the unspecified address", field);
	return 0;
}

/* istiod sends one Port per Kubernetes ServicePort, so a port served over both UDP and TCP
 * (kube-dns: 53/UDP and 53/TCP) is listed twice. The tables key a frontend by address and port
 * only, so the entries become one: the same target port merges; a different one replaces the
 * earlier (the last one listed wins, as in ztunnel's port map). Returns 1 if sp was listed. */
static int merge_port(struct km_port *ports, size_t n, uint32_t sp, uint32_t tp)
{
	for (size_t j = 0; j < n; j++) {
		if (ports[j].service_port != sp)
			continue;
		ports[j].target_port = tp;
		return 1;
	}
	return 0;
}

/* in's ports, checked and merged, into out (room for n): how many into *n_out. */
static int fill_ports(Kmesh__Workload__Port *const *in, size_t n, int need_service_port,
		      struct km_port *out, size_t *n_out, const char *field, char *err, size_t errlen)
{
	*n_out = 0;
	if (n > KM_RES_MAX_PORTS)
		return km_errf(err, errlen, "%s has %zu ports, at most %d", field, n, KM_RES_MAX_PORTS);
	for (size_t i = 0; i < n; i++) {
		uint32_t sp = in[i]->service_port, tp = in[i]->target_port;

		if (sp > 65535 || tp > 65535 || (need_service_port && sp == 0))
			return km_errf(err, errlen, "%s[%zu]: ports must be 1..65535 (got %u -> %u)", field,
				   i, sp, tp);
		if (!merge_port(out, *n_out, sp, tp)) {
			out[*n_out].service_port = sp;
			out[*n_out].target_port = tp;
			(*n_out)++;
		}
	}
	return 0;
}

static int copy_ports(const struct conv *c, Kmesh__Workload__Port *const *in, size_t n,
		      int need_service_port, struct km_port **out, size_t *n_out, const char *field,
		      char *err, size_t errlen)
{
	*n_out = 0;
	*out = NULL;
	if (n == 0)
		return 0;
	if (n > KM_RES_MAX_PORTS)
		return km_errf(err, errlen, "%s has %zu ports, at most %d", field, n, KM_RES_MAX_PORTS);
	*out = conv_alloc(c, n * sizeof(**out));
	if (!*out)
		return km_errf(err, errlen, "out of memory");
	return fill_ports(in, n, need_service_port, *out, n_out, field, err, errlen);
}

static int copy_waypoint(const struct conv *c, const Kmesh__Workload__GatewayAddress *g,
			 struct km_waypoint *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (!g)
		return 0;
	if (g->hbone_mtls_port == 0 || g->hbone_mtls_port > 65535)
		return km_errf(err, errlen, "waypoint needs an hbone_mtls_port in 1..65535");
	out->hbone_port = g->hbone_mtls_port;
	switch (g->destination_case) {
	case KMESH__WORKLOAD__GATEWAY_ADDRESS__DESTINATION_ADDRESS:
		out->kind = KM_WAYPOINT_ADDRESS;
		return copy_addr(g->address->address, "waypoint address", &out->addr, err, errlen);
	case KMESH__WORKLOAD__GATEWAY_ADDRESS__DESTINATION_HOSTNAME: {
		const Kmesh__Workload__NamespacedHostname *h = g->hostname;
		size_t ln = h->namespace_ ? strlen(h->namespace_) : 0;
		size_t lh = h->hostname ? strlen(h->hostname) : 0;

		if (!ln || !lh || ln > KM_RES_MAX_NAME || lh > KM_RES_MAX_NAME)
			return km_errf(err, errlen, "waypoint hostname needs a namespace and a hostname");
		out->kind = KM_WAYPOINT_HOSTNAME;
		out->service = conv_alloc(c, ln + lh + 2);
		if (!out->service)
			return km_errf(err, errlen, "out of memory");
		snprintf(out->service, ln + lh + 2, "%s/%s", h->namespace_, h->hostname);
		return 0;
	}
	default:
		return km_errf(err, errlen, "waypoint has neither an address nor a hostname");
	}
}

static int to_service(const struct conv *c, const Kmesh__Workload__Service *m,
		      struct km_service_res **out, char *err, size_t errlen)
{
	struct km_service_res *s = conv_alloc(c, sizeof(*s));
	size_t ln, lh, n_ports;

	*out = NULL;
	if (!s)
		return km_errf(err, errlen, "out of memory");
	s->scratch = c->a != NULL;
	if (copy_str(c, m->namespace_, KM_RES_MAX_NAME, 1, "namespace", &s->namespace, err, errlen) ||
	    copy_str(c, m->hostname, KM_RES_MAX_NAME, 1, "hostname", &s->hostname, err, errlen) ||
	    copy_str(c, m->name, KM_RES_MAX_NAME, 0, "name", &s->svc_name, err, errlen))
		goto fail;
	ln = strlen(s->namespace);
	lh = strlen(s->hostname);
	if (!(s->name = conv_alloc(c, ln + lh + 2))) {
		km_errf(err, errlen, "out of memory");
		goto fail;
	}
	snprintf(s->name, ln + lh + 2, "%s/%s", s->namespace, s->hostname);
	if (m->n_addresses > KM_RES_MAX_VIPS) {
		km_errf(err, errlen, "%zu addresses, at most %d", m->n_addresses, KM_RES_MAX_VIPS);
		goto fail;
	}
	s->vips = conv_alloc(c, (m->n_addresses + 1) * sizeof(*s->vips));
	if (!s->vips) {
		km_errf(err, errlen, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < m->n_addresses; i++) {
		struct km_addr vip;
		int dup = 0;

		if (copy_addr(m->addresses[i]->address, "VIP", &vip, err, errlen))
			goto fail;
		for (size_t j = 0; j < s->n_vips; j++)
			dup |= memcmp(&s->vips[j], &vip, sizeof(vip)) == 0;
		if (!dup) /* the same VIP on two networks is one frontend on this node */
			s->vips[s->n_vips++] = vip;
	}
	if (copy_ports(c, m->ports, m->n_ports, 1, &s->ports, &n_ports, "ports", err, errlen) ||
	    copy_waypoint(c, m->waypoint, &s->waypoint, err, errlen))
		goto fail;
	s->n_ports = (uint16_t)n_ports; /* at most KM_RES_MAX_PORTS */
	if (m->load_balancing) {
		const Kmesh__Workload__LoadBalancing *lb = m->load_balancing;

		if ((uint32_t)lb->mode > KM_LB_PASSTHROUGH) {
			km_errf(err, errlen, "load-balancing mode %d unknown", lb->mode);
			goto fail;
		}
		if (lb->n_routing_preference > KM_RES_MAX_SCOPES) {
			km_errf(err, errlen, "%zu routing preferences, at most %d", lb->n_routing_preference,
			    KM_RES_MAX_SCOPES);
			goto fail;
		}
		for (size_t i = 0; i < lb->n_routing_preference; i++) {
			uint32_t sc = (uint32_t)lb->routing_preference[i];

			if (sc < KM_SCOPE_REGION || sc > KM_SCOPE_NETWORK) {
				km_errf(err, errlen, "routing preference %u unknown", sc);
				goto fail;
			}
			s->scopes[s->n_scopes++] = (uint8_t)sc;
		}
		s->lb_mode = (uint8_t)lb->mode;
		s->allow_unhealthy = lb->health_policy == 1;
	}
	*out = s;
	return 0;
fail:
	km_service_res_free(s);
	return -1;
}

static int copy_locality(const struct conv *c, const Kmesh__Workload__Locality *l,
			 struct km_workload_res *w, char *err, size_t errlen)
{
	if (!l)
		return 0;
	return copy_str(c, l->region, KM_RES_MAX_NAME, 0, "locality.region", &w->where->region, err,
			errlen) ||
	       copy_str(c, l->zone, KM_RES_MAX_NAME, 0, "locality.zone", &w->where->zone, err, errlen) ||
	       copy_str(c, l->subzone, KM_RES_MAX_NAME, 0, "locality.subzone", &w->where->subzone, err,
			errlen);
}

/* Istio's WorkloadType (DEPLOYMENT 0, CRONJOB 1, POD 2, JOB 3) as baggage names it; NULL for a
 * deployment and for a type not known (told as one). */
static const char *workload_kind(uint32_t type)
{
	static const char *const kinds[] = { NULL, "cronjob", "pod", "job" };

	return type < sizeof(kinds) / sizeof(kinds[0]) ? kinds[type] : NULL;
}

static int to_workload(const struct conv *c, const Kmesh__Workload__Workload *m,
		       struct km_workload_res **out, char *err, size_t errlen)
{
	struct km_workload_res *w = c->a ? km_workload_res_new_scratch(c->a->alloc,
								       c->a->allocator_data)
					 : km_workload_res_new();
	size_t n_ports;

	*out = NULL;
	if (!w)
		return km_errf(err, errlen, "out of memory");
	if (copy_str(c, m->uid, KM_RES_MAX_STRING, 1, "uid", &w->uid_text, err, errlen) ||
	    copy_str(c, m->name, KM_RES_MAX_NAME, 0, "name", &w->name, err, errlen) ||
	    copy_str(c, m->hostname, KM_RES_MAX_NAME, 0, "hostname", &w->rare->hostname, err, errlen) ||
	    copy_str(c, m->namespace_, KM_RES_MAX_NAME, 0, "namespace", &w->who->namespace, err, errlen) ||
	    copy_str(c, m->node, KM_RES_MAX_NAME, 0, "node", &w->where->node, err, errlen) ||
	    copy_str(c, m->network, KM_RES_MAX_NAME, 0, "network", &w->who->network, err, errlen) ||
	    copy_str(c, m->cluster_id, KM_RES_MAX_NAME, 0, "cluster_id", &w->who->cluster_id, err, errlen) ||
	    copy_str(c, m->trust_domain, KM_RES_MAX_NAME, 0, "trust_domain", &w->who->trust_domain, err,
		     errlen) ||
	    copy_str(c, m->service_account, KM_RES_MAX_NAME, 0, "service_account", &w->who->service_account,
		     err, errlen) ||
	    copy_str(c, m->workload_name, KM_RES_MAX_NAME, 0, "workload_name", &w->who->workload_name, err,
		     errlen) ||
	    copy_str(c, m->canonical_name, KM_RES_MAX_NAME, 0, "canonical_name", &w->who->canonical_name,
		     err, errlen) ||
	    copy_str(c, m->canonical_revision, KM_RES_MAX_NAME, 0, "canonical_revision",
		     &w->who->canonical_revision, err, errlen) ||
	    copy_str(c, workload_kind(m->workload_type), KM_RES_MAX_NAME, 0, "workload_type",
		     &w->who->workload_kind, err, errlen) ||
	    copy_locality(c, m->locality, w, err, errlen) ||
	    copy_waypoint(c, m->waypoint, &w->rare->wp, err, errlen))
		goto fail;
	if (m->n_addresses > KM_RES_MAX_ADDRESSES) {
		km_errf(err, errlen, "%zu addresses, at most %d", m->n_addresses, KM_RES_MAX_ADDRESSES);
		goto fail;
	}
	w->addrs = conv_alloc(c, (m->n_addresses + 1) * sizeof(*w->addrs));
	if (!w->addrs) {
		km_errf(err, errlen, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < m->n_addresses; i++, w->n_addrs++)
		if (copy_addr(m->addresses[i], "address", &w->addrs[i], err, errlen))
			goto fail;
	if ((uint32_t)m->status > KM_WORKLOAD_UNHEALTHY) {
		km_errf(err, errlen, "status %d unknown", m->status);
		goto fail;
	}
	w->status = (uint32_t)m->status;
	w->host_network = m->network_mode == KMESH__WORKLOAD__NETWORK_MODE__HOST_NETWORK;
	/* HBONE: reached on podIP:15008 with a CONNECT to podIP:port; NONE and LEGACY_ISTIO_MTLS
	 * (sidecars') in plaintext (hbone.md §2) */
	w->tunnel_hbone = m->tunnel_protocol == KMESH__WORKLOAD__TUNNEL_PROTOCOL__HBONE;
	w->rare->capacity = m->capacity ? m->capacity->value : 1; /* an unpacked workload has rare */
	if (m->n_services > KM_RES_MAX_SERVICES_PER_WORKLOAD) {
		km_errf(err, errlen, "%zu services, at most %d", m->n_services,
		    KM_RES_MAX_SERVICES_PER_WORKLOAD);
		goto fail;
	}
	w->services = conv_alloc(c, (m->n_services + 1) * sizeof(*w->services));
	if (!w->services) {
		km_errf(err, errlen, "out of memory");
		goto fail;
	}
	/* every membership's ports in the workload's one array */
	n_ports = 0;
	for (size_t i = 0; i < m->n_services; i++) {
		size_t n = m->services[i]->value ? m->services[i]->value->n_ports : 0;

		if (n > KM_RES_MAX_PORTS) {
			km_errf(err, errlen, "services ports has %zu ports, at most %d", n, KM_RES_MAX_PORTS);
			goto fail;
		}
		n_ports += n;
	}
	if (n_ports && !(*km_workload_res_port_array(w) = conv_alloc(c, n_ports * sizeof(struct km_port)))) {
		km_errf(err, errlen, "out of memory");
		goto fail;
	}
	n_ports = 0;
	for (size_t i = 0; i < m->n_services; i++) {
		const Kmesh__Workload__Workload__ServicesEntry *e = m->services[i];
		struct km_membership *ms = &w->services[i];
		const char *key = e->key ? e->key : "";

		if (!strchr(key, '/') || strlen(key) > 2 * KM_RES_MAX_NAME + 1) {
			km_errf(err, errlen, "services key '%.64s' is not \"<namespace>/<hostname>\"", key);
			goto fail;
		}
		if (copy_str(c, key, 2 * KM_RES_MAX_NAME + 1, 1, "services key", &ms->service, err,
			     errlen))
			goto fail;
		w->n_services++; /* counted at once, so a failure below still frees it */
		if (e->value && e->value->n_ports) {
			size_t n;

			if (fill_ports(e->value->ports, e->value->n_ports, 1,
				       *km_workload_res_port_array(w) + n_ports, &n, "services ports", err,
				       errlen))
				goto fail;
			ms->port_at = (uint32_t)n_ports;
			ms->n_ports = (uint32_t)n;
			n_ports += n;
		}
	}
	if (km_workload_res_normalize(w) != 0) {
		km_errf(err, errlen, "a service is listed twice in 'services'");
		goto fail;
	}
	if (m->n_authorization_policies > KM_RES_MAX_POLICIES) {
		km_errf(err, errlen, "%zu authorization policies, at most %d", m->n_authorization_policies,
		    KM_RES_MAX_POLICIES);
		goto fail;
	}
	w->policies = conv_alloc(c, (m->n_authorization_policies + 1) * sizeof(*w->policies));
	if (!w->policies) {
		km_errf(err, errlen, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < m->n_authorization_policies; i++, w->n_policies++)
		if (copy_str(c, m->authorization_policies[i], KM_RES_MAX_STRING, 1,
			     "authorization_policies", &w->policies[i], err, errlen))
			goto fail;
	*out = w;
	return 0;
fail:
	km_workload_res_free(w);
	return -1;
}

int km_pb_service(const Kmesh__Workload__Service *m, struct km_service_res **out, char *err,
		  size_t errlen)
{
	const struct conv heap = { NULL };

	return to_service(&heap, m, out, err, errlen);
}

int km_pb_workload(const Kmesh__Workload__Workload *m, struct km_workload_res **out, char *err,
		   size_t errlen)
{
	const struct conv heap = { NULL };

	return to_workload(&heap, m, out, err, errlen);
}

int km_pb_address_convert(ProtobufCAllocator *alloc, const Kmesh__Workload__Address *a,
			  struct km_service_res **svc, struct km_workload_res **wl, char **name,
			  char *err, size_t errlen)
{
	const struct conv c = { alloc };

	*svc = NULL;
	*wl = NULL;
	*name = NULL;
	if (a->type_case == KMESH__WORKLOAD__ADDRESS__TYPE_SERVICE) {
		const Kmesh__Workload__Service *s = a->service;

		if (s->namespace_ && s->hostname && *s->namespace_ && *s->hostname &&
		    strlen(s->namespace_) <= KM_RES_MAX_NAME && strlen(s->hostname) <= KM_RES_MAX_NAME) {
			size_t n = strlen(s->namespace_) + strlen(s->hostname) + 2;

			if ((*name = conv_alloc(&c, n)))
				snprintf(*name, n, "%s/%s", s->namespace_, s->hostname);
		}
		return to_service(&c, s, svc, err, errlen);
	}
	if (a->type_case == KMESH__WORKLOAD__ADDRESS__TYPE_WORKLOAD) {
		const char *uid = a->workload->uid;

		if (uid && *uid && strlen(uid) <= KM_RES_MAX_STRING)
			*name = (char *)uid; /* the scratch message's own */
		return to_workload(&c, a->workload, wl, err, errlen);
	}
	return km_errf(err, errlen, "Address holds neither a workload nor a service");
}

int km_pb_address(ProtobufCAllocator *alloc, const uint8_t *data, size_t len,
		  struct km_service_res **svc, struct km_workload_res **wl, char **name, char *err,
		  size_t errlen)
{
	const Kmesh__Workload__Address *a = km_address_wire_read(alloc, data, len);

	*svc = NULL;
	*wl = NULL;
	*name = NULL;
	if (!a)
		return km_errf(err, errlen, "not a valid istio.workload.Address message");
	return km_pb_address_convert(alloc, a, svc, wl, name, err, errlen);
}
