/* address_wire.c — istio.workload.Address read by hand from its wire bytes (see address_wire.h).
 * One reader per message type: it walks the message's fields once, decodes those the agent
 * reads (field numbers from proto/workload.proto) and checks the rest. */
#include "services/xds-agent/ads/address_wire.h"

#include <string.h>

#include "ipc/pb_wire.h"

typedef ProtobufCAllocator alloc_t;

static Kmesh__Workload__Port *port_read(alloc_t *a, const uint8_t *p, size_t n)
{
	Kmesh__Workload__Port *m = km_pbw_zalloc(a, sizeof(*m));

	if (!m)
		return NULL;
	kmesh__workload__port__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) {
		case 1: PBW_U32(m->service_port); break;
		case 2: PBW_U32(m->target_port); break;
		case 3: PBW_U32(m->app_protocol); break;
		default: PBW_OTHER(kmesh__workload__port__descriptor);
		}
	}
	PBW_END(m);
}

static Kmesh__Workload__PortList *port_list_read(alloc_t *a, const uint8_t *p, size_t n)
{
	Kmesh__Workload__PortList *m = km_pbw_zalloc(a, sizeof(*m));
	Kmesh__Workload__Port *port;

	if (!m)
		return NULL;
	kmesh__workload__port_list__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) {
		case 1: PBW_MSG(port, port_read); PBW_APPEND(m->ports, m->n_ports, port); break;
		default: PBW_OTHER(kmesh__workload__port_list__descriptor);
		}
	}
	PBW_END(m);
}

static Kmesh__Workload__NetworkAddress *network_address_read(alloc_t *a, const uint8_t *p, size_t n)
{
	Kmesh__Workload__NetworkAddress *m = km_pbw_zalloc(a, sizeof(*m));

	if (!m)
		return NULL;
	kmesh__workload__network_address__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) {
		case 1: PBW_STR(m->network); break;
		case 2: PBW_BYTES(m->address); break;
		case 3: PBW_U32(m->length); break;
		default: PBW_OTHER(kmesh__workload__network_address__descriptor);
		}
	}
	PBW_END(m);
}

static Kmesh__Workload__NamespacedHostname *namespaced_hostname_read(alloc_t *a, const uint8_t *p,
								   size_t n)
{
	Kmesh__Workload__NamespacedHostname *m = km_pbw_zalloc(a, sizeof(*m));

	if (!m)
		return NULL;
	kmesh__workload__namespaced_hostname__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) {
		case 1: PBW_STR(m->namespace_); break;
		case 2: PBW_STR(m->hostname); break;
		default: PBW_OTHER(kmesh__workload__namespaced_hostname__descriptor);
		}
	}
	PBW_END(m);
}

static Kmesh__Workload__GatewayAddress *gateway_read(alloc_t *a, const uint8_t *p, size_t n)
{
	Kmesh__Workload__GatewayAddress *m = km_pbw_zalloc(a, sizeof(*m));

	if (!m)
		return NULL;
	kmesh__workload__gateway_address__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) { /* the oneof: the last member given, whole */
		case 1:
			PBW_MSG(m->hostname, namespaced_hostname_read);
			m->destination_case = KMESH__WORKLOAD__GATEWAY_ADDRESS__DESTINATION_HOSTNAME;
			break;
		case 2:
			PBW_MSG(m->address, network_address_read);
			m->destination_case = KMESH__WORKLOAD__GATEWAY_ADDRESS__DESTINATION_ADDRESS;
			break;
		case 3: PBW_U32(m->hbone_mtls_port); break;
		default: PBW_OTHER(kmesh__workload__gateway_address__descriptor);
		}
	}
	PBW_END(m);
}

static Kmesh__Workload__Locality *locality_read(alloc_t *a, const uint8_t *p, size_t n)
{
	Kmesh__Workload__Locality *m = km_pbw_zalloc(a, sizeof(*m));

	if (!m)
		return NULL;
	kmesh__workload__locality__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) {
		case 1: PBW_STR(m->region); break;
		case 2: PBW_STR(m->zone); break;
		case 3: PBW_STR(m->subzone); break;
		default: PBW_OTHER(kmesh__workload__locality__descriptor);
		}
	}
	PBW_END(m);
}

static Kmesh__Workload__UInt32Value *u32_value_read(alloc_t *a, const uint8_t *p, size_t n)
{
	Kmesh__Workload__UInt32Value *m = km_pbw_zalloc(a, sizeof(*m));

	if (!m)
		return NULL;
	kmesh__workload__uint32_value__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) {
		case 1: PBW_U32(m->value); break;
		default: PBW_OTHER(kmesh__workload__uint32_value__descriptor);
		}
	}
	PBW_END(m);
}

static Kmesh__Workload__LoadBalancing *load_balancing_read(alloc_t *a, const uint8_t *p, size_t n)
{
	Kmesh__Workload__LoadBalancing *m = km_pbw_zalloc(a, sizeof(*m));

	if (!m)
		return NULL;
	kmesh__workload__load_balancing__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) {
		case 1: PBW_VARINTS(m->routing_preference, m->n_routing_preference); break;
		case 2: PBW_ENUM(m->mode); break;
		case 3: PBW_U32(m->health_policy); break;
		default: PBW_OTHER(kmesh__workload__load_balancing__descriptor);
		}
	}
	PBW_END(m);
}

/* protobuf-c's merge of a singular message given twice (merge_messages): the later one, with
 * the earlier's repeated fields before its own, the earlier's strings and oneof member where the
 * later has none, and the later's scalars always (protobuf-c cannot tell a proto3 scalar left
 * out from a zero). NULL where protobuf-c's merge fails: two gateways neither of which has a
 * destination (it looks the earlier's oneof member up by number 0, finds none, and refuses the
 * whole message). */
static Kmesh__Workload__GatewayAddress *gateway_merge(Kmesh__Workload__GatewayAddress *e,
						      Kmesh__Workload__GatewayAddress *l)
{
	if (e && l->destination_case == KMESH__WORKLOAD__GATEWAY_ADDRESS__DESTINATION__NOT_SET) {
		if (e->destination_case == KMESH__WORKLOAD__GATEWAY_ADDRESS__DESTINATION__NOT_SET)
			return NULL;
		l->destination_case = e->destination_case;
		l->address = e->address; /* the union, whichever member */
	}
	return l;
}

static void string_merge(char *e, char **l)
{
	if (*l == protobuf_c_empty_string)
		*l = e;
}

static Kmesh__Workload__Locality *locality_merge(Kmesh__Workload__Locality *e,
						 Kmesh__Workload__Locality *l)
{
	if (e) {
		string_merge(e->region, &l->region);
		string_merge(e->zone, &l->zone);
		string_merge(e->subzone, &l->subzone);
	}
	return l;
}

/* the earlier's elements, then the later's */
static int concat(alloc_t *a, void *earlier, size_t n_earlier, void *laterp, size_t *n_later,
		  size_t elsz)
{
	char **later = laterp;
	char *both;

	if (!n_earlier)
		return 0;
	if (!(both = a->alloc(a->allocator_data, (n_earlier + *n_later) * elsz)))
		return -1;
	memcpy(both, earlier, n_earlier * elsz);
	if (*n_later)
		memcpy(both + n_earlier * elsz, *later, *n_later * elsz);
	*later = both;
	*n_later += n_earlier;
	return 0;
}

static Kmesh__Workload__LoadBalancing *load_balancing_merge(alloc_t *a,
							    Kmesh__Workload__LoadBalancing *e,
							    Kmesh__Workload__LoadBalancing *l)
{
	if (e && concat(a, e->routing_preference, e->n_routing_preference, &l->routing_preference,
			&l->n_routing_preference, sizeof(*l->routing_preference)))
		return NULL;
	return l;
}

static Kmesh__Workload__PortList *port_list_merge(alloc_t *a, Kmesh__Workload__PortList *e,
						  Kmesh__Workload__PortList *l)
{
	if (e && concat(a, e->ports, e->n_ports, &l->ports, &l->n_ports, sizeof(*l->ports)))
		return NULL;
	return l;
}

/* A singular message field: read, then merged with an earlier occurrence. */
#define MERGED(dst, reader, merge)                                                                 \
	do {                                                                                       \
		__typeof__(dst) later_;                                                            \
		PBW_MSG(later_, reader);                                                           \
		if (!((dst) = merge))                                                              \
			return NULL;                                                               \
	} while (0)

static Kmesh__Workload__Workload__ServicesEntry *services_entry_read(alloc_t *a, const uint8_t *p,
								     size_t n)
{
	Kmesh__Workload__Workload__ServicesEntry *m = km_pbw_zalloc(a, sizeof(*m));

	if (!m)
		return NULL;
	kmesh__workload__workload__services_entry__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) {
		case 1: PBW_STR(m->key); break;
		case 2: MERGED(m->value, port_list_read, port_list_merge(a, m->value, later_)); break;
		default: PBW_OTHER(kmesh__workload__workload__services_entry__descriptor);
		}
	}
	PBW_END(m);
}

static Kmesh__Workload__Service *service_read(alloc_t *a, const uint8_t *p, size_t n)
{
	Kmesh__Workload__Service *m = km_pbw_zalloc(a, sizeof(*m));
	Kmesh__Workload__NetworkAddress *addr;
	Kmesh__Workload__Port *port;

	if (!m)
		return NULL;
	kmesh__workload__service__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) {
		case 1: PBW_STR(m->name); break;
		case 2: PBW_STR(m->namespace_); break;
		case 3: PBW_STR(m->hostname); break;
		case 4: PBW_MSG(addr, network_address_read); PBW_APPEND(m->addresses, m->n_addresses, addr); break;
		case 5: PBW_MSG(port, port_read); PBW_APPEND(m->ports, m->n_ports, port); break;
		case 7: MERGED(m->waypoint, gateway_read, gateway_merge(m->waypoint, later_)); break;
		case 8:
			MERGED(m->load_balancing, load_balancing_read,
			       load_balancing_merge(a, m->load_balancing, later_));
			break;
		default: PBW_OTHER(kmesh__workload__service__descriptor); /* 6, 9: not read */
		}
	}
	PBW_END(m);
}

static Kmesh__Workload__Workload *workload_read(alloc_t *a, const uint8_t *p, size_t n)
{
	Kmesh__Workload__Workload *m = km_pbw_zalloc(a, sizeof(*m));
	Kmesh__Workload__Workload__ServicesEntry *entry;
	ProtobufCBinaryData addr;
	char *policy;

	if (!m)
		return NULL;
	kmesh__workload__workload__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) {
		case 1: PBW_STR(m->name); break;
		case 2: PBW_STR(m->namespace_); break;
		case 3: PBW_BYTES(addr); PBW_APPEND(m->addresses, m->n_addresses, addr); break;
		case 4: PBW_STR(m->network); break;
		case 5: PBW_ENUM(m->tunnel_protocol); break;
		case 6: PBW_STR(m->trust_domain); break;
		case 7: PBW_STR(m->service_account); break;
		case 8: MERGED(m->waypoint, gateway_read, gateway_merge(m->waypoint, later_)); break;
		case 9: PBW_STR(m->node); break;
		case 10: PBW_STR(m->canonical_name); break;
		case 11: PBW_STR(m->canonical_revision); break;
		case 12: PBW_U32(m->workload_type); break;
		case 13: PBW_STR(m->workload_name); break;
		case 16:
			PBW_STR(policy);
			PBW_APPEND(m->authorization_policies, m->n_authorization_policies, policy);
			break;
		case 17: PBW_ENUM(m->status); break;
		case 18: PBW_STR(m->cluster_id); break;
		case 19: /* not read, but merged as protobuf-c would (which may refuse it) */
			MERGED(m->network_gateway, gateway_read,
			       gateway_merge(m->network_gateway, later_));
			break;
		case 20: PBW_STR(m->uid); break;
		case 21: PBW_STR(m->hostname); break;
		case 22: PBW_MSG(entry, services_entry_read); PBW_APPEND(m->services, m->n_services, entry); break;
		case 24: MERGED(m->locality, locality_read, locality_merge(m->locality, later_)); break;
		case 25: PBW_ENUM(m->network_mode); break;
		case 27: MERGED(m->capacity, u32_value_read, later_); break;
		default: PBW_OTHER(kmesh__workload__workload__descriptor); /* 5, 12, 14: not read */
		}
	}
	PBW_END(m);
}

Kmesh__Workload__Address *km_address_wire_read(alloc_t *a, const uint8_t *p, size_t n)
{
	Kmesh__Workload__Address *m = km_pbw_zalloc(a, sizeof(*m));

	if (!m)
		return NULL;
	kmesh__workload__address__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) { /* the oneof: the last member given, whole */
		case 1:
			PBW_MSG(m->workload, workload_read);
			m->type_case = KMESH__WORKLOAD__ADDRESS__TYPE_WORKLOAD;
			break;
		case 2:
			PBW_MSG(m->service, service_read);
			m->type_case = KMESH__WORKLOAD__ADDRESS__TYPE_SERVICE;
			break;
		default: PBW_OTHER(kmesh__workload__address__descriptor);
		}
	}
	PBW_END(m);
}
